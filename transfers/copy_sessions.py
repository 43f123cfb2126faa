"""Copy sessions: small files of one job and link copied one after another by one worker process.

FTS3's url-copy runs a "session reuse" job's files in one process (its AutoSessionReuse does so for jobs of
small files): the process, its connections and its credentials are set up once, not once per file. Here a
session is one task message for up to ``SESSION_FILES`` files: one claim, one storage registry, one gfal2
context and one record of their outcomes. It holds one copy slot, as one copy does, so a link's limit counts
the copies running on it at once, whether files or sessions. A file qualifies when its copy is short: at
most ``SESSION_MAX_BYTES`` (known in advance), or between mock endpoints (which move no bytes); and only in
a job whose files are independent (multi-hop and multi-source files wait for one another's outcome)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topology.services.storage_urls import MOCK_SCHEME

from .choices import JobType


@dataclass(frozen=True)
class SessionRules:
    files: int  # at most this many files in a session (1: none)
    max_bytes: int  # each of at most this size

    @classmethod
    def from_settings(cls, config: dict[str, Any]) -> SessionRules:
        return cls(
            files=int(config.get("SESSION_FILES", 1)), max_bytes=int(config.get("SESSION_MAX_BYTES", 0))
        )

    def qualifies(self, row: Any) -> bool:
        """Whether the TransferFile ``row`` (its job loaded) may share a session."""
        if self.files < 2 or row.job.job_type != JobType.NORMAL:
            return False
        if row.source_se.startswith(f"{MOCK_SCHEME}://"):
            return True
        return row.filesize is not None and row.filesize <= self.max_bytes

    def files_to_read(self, link: tuple[str, str], slots: int, largest: int | None) -> int:
        """How many waiting files of ``link`` the dispatcher reads to fill ``slots`` copy slots: a slot's
        session's worth each where the link's files may qualify (``largest``: the largest size waiting
        there, None when none is known), else one each."""
        if self.files < 2:
            return slots
        if link[0].startswith(f"{MOCK_SCHEME}://") or (largest is not None and largest <= self.max_bytes):
            return slots * self.files
        return slots


@dataclass
class Packing:
    """The copies admitted on one link, in order: each a list of files (a session, or one file alone).

    Every free slot is used before files share one: ``waiting`` files for ``slots`` slots make sessions of
    at most ceil(waiting / slots) files (and of at most ``rules.files``), so a few small files still copy
    side by side, and only a backlog larger than the slots is copied in sessions."""

    rules: SessionRules
    waiting: int
    slots: int
    copies: list[list[Any]] = field(default_factory=list)
    _open: dict[int, list[Any]] = field(default_factory=dict)  # job id -> its session with room

    @property
    def session_files(self) -> int:
        return max(1, min(self.rules.files, -(-self.waiting // max(self.slots, 1))))

    def joins_open_session(self, row: Any) -> bool:
        """Add ``row`` to its job's session with room, if any (it needs no slot of its own then)."""
        session = self._open.get(row.job_id)
        if session is None or not self.rules.qualifies(row):
            return False
        session.append(row)
        if len(session) >= self.session_files:
            del self._open[row.job_id]
        return True

    def start_copy(self, row: Any) -> None:
        """``row`` takes a slot: alone, or as the first file of its job's next session."""
        copy = [row]
        self.copies.append(copy)
        self._open.pop(row.job_id, None)
        if self.session_files > 1 and self.rules.qualifies(row):
            self._open[row.job_id] = copy

"""The transfertool interface the push loop submits through (after Rucio's own Transfertool).

Implementations: ``Fts3Transfertool`` (``transfertools/fts3_rest.py``) speaks the FTS3 REST protocol to any
FTS3 endpoint; ``EmbeddedTransfertool`` (``transfers/embedded_transfertool.py``) is the platform's own
transfer service called in-process. ``schedulers.transfertools.default_transfertool()`` picks one from the
settings (``SRCNET_TRANSFERTOOL``)."""

from __future__ import annotations

import abc
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FileSpan:
    """One file of a job as the transfer service reports it."""

    finished: bool
    bytes: int
    start: dt.datetime | None
    end: dt.datetime | None
    # The copy's own duration, when the service reports one (FTS3's ``tx_duration``): FTS3 times are whole
    # seconds, so a short copy's start and end can be the same second.
    duration: float | None = None


@dataclass(frozen=True)
class TransferRequest:
    source: str
    destination: str
    filesize: int | None
    checksum: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobParams:
    priority: int = 3
    activity: str = "default"
    verify_checksum: str = "both"
    overwrite: bool = False
    retry: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    streams: int | None = None  # TCP streams per copy (FTS3's nostreams)
    multihop: bool = False  # the files are hops, each after the previous (FTS3 multihop jobs)
    # Each copy's SciTags flow identifier (65-65535; None: the service's own choice, or unmarked).
    scitag: int | None = None


@dataclass(frozen=True)
class LinkConfig:
    """A link's limits as FTS3's ``/config/links`` holds them, between two storage elements as the tool's
    service names them (``Transfertool.storage_element``; ``*`` is any)."""

    source: str
    destination: str
    min_active: int
    max_active: int
    optimizer_mode: int = 0  # 0 off (fixed), 1 conservative, 2 normal, 3 aggressive
    nostreams: int | None = None  # None: leave the link's as it is (0: the protocol's default)
    symbolicname: str = ""  # "" names the link after its pair

    @property
    def name(self) -> str:
        if self.symbolicname:
            return self.symbolicname
        # One URL path segment, so that GET and DELETE /config/links/{name} reach it.
        return "srcnet-" + "--".join(re.sub(r"[^A-Za-z0-9.*_]+", "-", e).strip("-") for e in self.pair)

    @property
    def pair(self) -> tuple[str, str]:
        return (self.source, self.destination)

    def body(self) -> dict[str, Any]:
        """The ``POST /config/links`` body. FTS3 refuses nulls there, so an unset field is left out."""
        out: dict[str, Any] = {
            "symbolicname": self.name,
            "source": self.source,
            "destination": self.destination,
            "min_active": self.min_active,
            "max_active": self.max_active,
            "optimizer_mode": self.optimizer_mode,
        }
        if self.nostreams is not None:
            out["nostreams"] = self.nostreams
        return out

    @classmethod
    def from_fts3(cls, entry: dict[str, Any]) -> LinkConfig:
        """From FTS3's answer (its optional columns may be null)."""
        return cls(
            source=str(entry["source"]),
            destination=str(entry["destination"]),
            min_active=int(entry.get("min_active") or 0),
            max_active=int(entry.get("max_active") or 0),
            optimizer_mode=int(entry.get("optimizer_mode") or 0),
            nostreams=entry.get("nostreams"),
            symbolicname=str(entry.get("symbolicname") or ""),
        )


@dataclass(frozen=True)
class StorageConfig:
    """A storage element's caps as FTS3's ``/config/se`` holds them (None: unset, the ``*`` row's applies)."""

    storage: str
    inbound_max_active: int | None = None
    outbound_max_active: int | None = None

    def body(self) -> dict[str, Any]:
        """The ``POST /config/se`` body; FTS3 skips null values there, so an unset cap stays as it is."""
        caps = {
            "inbound_max_active": self.inbound_max_active,
            "outbound_max_active": self.outbound_max_active,
        }
        return {self.storage: {"se_info": caps}}

    @classmethod
    def from_fts3(cls, storage: str, entry: dict[str, Any]) -> StorageConfig:
        info = entry.get("se_info") or {}
        return cls(storage, info.get("inbound_max_active"), info.get("outbound_max_active"))


class TransfertoolError(RuntimeError):
    """The transfertool refused or failed a request."""


class Transfertool(abc.ABC):
    """Submit, query and cancel transfer jobs."""

    # Where the ends of this tool's jobs come from, as a copy request records it (replicas.CopyRequest):
    # empty, the platform's own transfer service (its job_finished signal); an external FTS3's URL, the poll.
    settles_from = ""

    @abc.abstractmethod
    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        """Submit one job; return its id."""

    @abc.abstractmethod
    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        """The state of each job (FTS3 names)."""

    @abc.abstractmethod
    def cancel(self, job_id: str) -> None:
        """Cancel a job's unfinished files."""

    @abc.abstractmethod
    def update_priority(self, job_id: str, priority: int) -> None:
        """Change the priority (1-5) of a job that is not over (FTS3's POST /jobs/{id})."""

    @abc.abstractmethod
    def failure_reasons(self, job_ids: Sequence[str]) -> dict[str, list[str]]:
        """The distinct non-empty reasons of each known job's files (empty for a job whose files say
        nothing); unknown ids are left out."""

    def file_spans(self, job_ids: Sequence[str]) -> dict[str, list[FileSpan]]:
        """Each known job's files: finished or not, bytes, start and end (the lane measurements of jobs
        the platform only polls). A tool that cannot tell returns nothing; the embedded service records its
        jobs itself through the ``job_finished`` signal."""
        return {}

    # The service's configuration, as FTS3's /config API holds it: the way a scheduler enforces its plan
    # (a real FTS3 obeys it unchanged).

    @abc.abstractmethod
    def storage_element(self, url: str) -> str:
        """The storage element ``url`` belongs to, as the service names links and storage limits."""

    @abc.abstractmethod
    def set_link_config(self, link: LinkConfig) -> LinkConfig:
        """Create or change a link's limits (``POST /config/links``); the link as the service now holds
        it. TransfertoolError, with the service's reason naming the field, if it refuses."""

    @abc.abstractmethod
    def link_configs(self) -> list[LinkConfig]:
        """Every configured link (``GET /config/links``)."""

    @abc.abstractmethod
    def delete_link_config(self, symbolicname: str) -> None:
        """Remove a link's configuration (``DELETE /config/links/{name}``; an unknown name is no error)."""

    @abc.abstractmethod
    def set_storage_config(self, storage: StorageConfig) -> None:
        """Set a storage element's caps (``POST /config/se``); TransfertoolError if the service refuses."""

    @abc.abstractmethod
    def storage_configs(self) -> list[StorageConfig]:
        """Every storage element with caps (``GET /config/se``)."""

    @abc.abstractmethod
    def delete_storage_config(self, storage: str) -> None:
        """Remove a storage element's caps (``DELETE /config/se?se=...``)."""

    @abc.abstractmethod
    def set_activity_shares(self, shares: Mapping[str, float]) -> None:
        """Replace the activity shares of the tool's VO (``POST /config/activity_shares``)."""

    @abc.abstractmethod
    def activity_shares(self) -> dict[str, float]:
        """The activity shares of the tool's VO in force (empty: none)."""

    @abc.abstractmethod
    def delete_activity_shares(self) -> None:
        """Stop sharing by activity (``DELETE /config/activity_shares/{vo}``; none is no error)."""

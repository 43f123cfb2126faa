"""One consistency check of one storage endpoint: what the platform believes against what the storage holds.

List mode walks the endpoint's tree (streamed, one directory at a time) into ``ListedFile`` and
``ListedDirectory`` rows in batches, then compares them with the catalogue in SQL: memory stays bounded
whatever the number of files, and the database does the set differences it is good at. Stat mode looks at
the replicas the platform knows, one stat each, and finds no dark files. Either then reads a sample of the
files found whole again, byte by byte, for their adler32 (``checksum_fraction``).

A file is judged **lost** only where the storage's answer proves it absent: its directory (or the nearest
existing one above it) was listed completely, or a stat answered "no such file". A listing that failed
part way, a site that timed out, a name that is not UTF-8: what lies there is counted as unchecked, the
check ends INCOMPLETE with the reasons, and no replica is marked lost for it. Dark files are only those
older than the grace period, so a copy in flight is never one; every file of any replica row the platform
has at the endpoint (whatever its state) is known, not dark.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from replicas.choices import ReplicaState

from .choices import CheckMode, CheckState, FindingKind
from .healing import act_on_findings
from .models import ConsistencyCheck, Finding, ListedDirectory, ListedFile
from .storage import StorageReader, StorageReadError, is_bad_name

log = logging.getLogger(__name__)

BATCH = 5000
# Deeper than any layout the platform writes (scope/name/file): a deeper tree is listed no further, and what
# lies below is unchecked (the directory is recorded incomplete).
MAX_DEPTH = 16


@dataclass(frozen=True)
class KnownFile:
    replica_id: int
    path: str
    size: int
    adler32: str


def run_check(check: ConsistencyCheck, *, reader: StorageReader | None = None) -> ConsistencyCheck:
    """Run ``check`` (RUNNING, saved) to its end; its findings are acted on (``healing``) as it ends."""
    try:
        reader = reader or StorageReader(check.endpoint)
        if check.mode == CheckMode.LIST:
            _walk(check, reader)
            _judge_listing(check)
            _read_checksums(check, reader, _paged(_WHOLE_SAMPLE, _params(check)))
            # Known files where the listing failed (a directory refused, an answer that could not be
            # parsed): looked at one by one, as stat mode does.
            _stat_each(check, reader, _paged(_UNLISTED, _params(check)), fallback=True)
        else:
            _judge_by_stat(check, reader)
    except StorageReadError as exc:
        # Nothing could be read at all (no token, the root unlistable): no finding is made.
        check.add_error(check.endpoint.name, str(exc))
        check.state = CheckState.FAILED
    except Exception as exc:
        log.exception("consistency check %s failed", check.pk)
        check.add_error(check.endpoint.name, f"{type(exc).__name__}: {exc}")
        check.state = CheckState.FAILED
    else:
        check.state = CheckState.COMPLETE if check.error_count == 0 else CheckState.INCOMPLETE
    finally:
        ListedFile.objects.filter(check_run=check).delete()
        ListedDirectory.objects.filter(check_run=check).delete()
    check.finished = timezone.now()
    check.save()
    if check.state != CheckState.FAILED:
        act_on_findings(check)
    return check


# -- list mode ------------------------------------------------------------------------------------------


def _walk(check: ConsistencyCheck, reader: StorageReader) -> None:
    """The endpoint's whole tree into ListedFile/ListedDirectory rows, in batches."""
    files: list[ListedFile] = []
    directories: list[ListedDirectory] = []
    pending = [("", 0)]
    root_listed = False
    while pending:
        path, depth = pending.pop()
        complete = False
        if depth > MAX_DEPTH:
            check.add_error(path, f"deeper than {MAX_DEPTH} directories: not listed")
        else:
            try:
                for entry in reader.list_directory(path):
                    if is_bad_name(entry):
                        shown = entry.name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                        check.add_error(path or "/", f"a name that is not UTF-8, not judged: {shown!r}")
                        continue
                    child = f"{path}/{entry.name}" if path else entry.name
                    if entry.is_dir:
                        pending.append((child, depth + 1))
                    else:
                        files.append(
                            ListedFile(check_run=check, path=child, size=entry.size, modified=entry.modified)
                        )
                        check.files_listed += 1
                        if len(files) >= BATCH:
                            ListedFile.objects.bulk_create(files)
                            files.clear()
                complete = True
            except StorageReadError as exc:
                if not path:
                    raise  # the prefix itself cannot be listed: nothing can be judged
                check.add_error(path, str(exc))
        root_listed = root_listed or (not path and complete)
        directories.append(ListedDirectory(check_run=check, path=path, complete=complete))
        if len(directories) >= BATCH:
            ListedDirectory.objects.bulk_create(directories)
            directories.clear()
    ListedFile.objects.bulk_create(files)
    ListedDirectory.objects.bulk_create(directories)


# The files of the endpoint's replicas, with their path below the prefix (the platform's layout:
# scope/name/file, ProductFile.relative_path). %(states)s: the replica states taken.
_KNOWN = """
    SELECT r.id AS replica_id, p.scope, p.scope || '/' || p.name AS directory,
           p.scope || '/' || p.name || '/' || f.name AS path, f.size_bytes AS size, f.adler32
    FROM replicas_replica r
    JOIN replicas_dataproduct p ON p.id = r.product_id
    JOIN replicas_productfile f ON f.product_id = p.id
    WHERE r.endpoint_id = %(endpoint)s {states}
"""
_AVAILABLE = _KNOWN.format(states="AND r.state = %(available)s")
_ANY = _KNOWN.format(states="")
# Whether a listing proves a file absent: its directory was listed whole, or it was not seen and the nearest
# directory above it that was seen was listed whole.
_PROVEN_ABSENT = """
    EXISTS (SELECT 1 FROM consistency_listeddirectory d
            WHERE d.check_run_id = %(check)s AND d.path = k.directory AND d.complete)
    OR (NOT EXISTS (SELECT 1 FROM consistency_listeddirectory d
                    WHERE d.check_run_id = %(check)s AND d.path = k.directory)
        AND (EXISTS (SELECT 1 FROM consistency_listeddirectory d
                     WHERE d.check_run_id = %(check)s AND d.path = k.scope AND d.complete)
             OR (NOT EXISTS (SELECT 1 FROM consistency_listeddirectory d
                             WHERE d.check_run_id = %(check)s AND d.path = k.scope)
                 AND EXISTS (SELECT 1 FROM consistency_listeddirectory d
                             WHERE d.check_run_id = %(check)s AND d.path = '' AND d.complete))))
"""


# The known available files the listing found whole (their size as recorded).
_WHOLE = """
    JOIN consistency_listedfile lf ON lf.check_run_id = %(check)s AND lf.path = k.path WHERE lf.size = k.size
"""
# A page of them, sampled (``_paged`` fills in where the last page ended).
_WHOLE_SAMPLE = f"""
    SELECT k.replica_id, k.path, k.size, k.adler32 FROM ({_AVAILABLE}) k {_WHOLE}
    AND k.path > %(after)s AND random() < %(fraction)s ORDER BY k.path LIMIT %(page)s
"""


# The known available files a listing neither found nor proved absent (their directory could not be read).
_UNLISTED = f"""
    SELECT k.replica_id, k.path, k.size, k.adler32 FROM ({_AVAILABLE}) k
    LEFT JOIN consistency_listedfile lf ON lf.check_run_id = %(check)s AND lf.path = k.path
    WHERE lf.id IS NULL AND NOT ({_PROVEN_ABSENT}) AND k.path > %(after)s ORDER BY k.path LIMIT %(page)s
"""


def _params(check: ConsistencyCheck) -> dict[str, Any]:
    return {
        "check": check.pk,
        "endpoint": check.endpoint_id,
        "available": ReplicaState.AVAILABLE,
        "lost": FindingKind.LOST,
        "corrupt": FindingKind.CORRUPT,
        "dark": FindingKind.DARK,
        "older": check.started - dt.timedelta(seconds=check.dark_grace_seconds),
        # random() < 1.0 holds always: every file when the operator asks for all of them
        "fraction": check.checksum_fraction if check.checksum_fraction < 1.0 else 2.0,
    }


def _paged(sql: str, params: dict[str, Any]) -> Iterator[KnownFile]:
    """The rows of ``sql`` (ordered by path, ``after`` and ``page`` its parameters) a page at a time: bounded
    memory however many there are."""
    after = ""
    while True:
        with connection.cursor() as cursor:
            cursor.execute(sql, {**params, "after": after, "page": BATCH})
            rows = cursor.fetchall()
        if not rows:
            return
        yield from (KnownFile(*row) for row in rows)
        after = rows[-1][1]


def _judge_listing(check: ConsistencyCheck) -> None:
    """Lost, corrupt (by size) and dark findings from the listing, in SQL."""
    params = _params(check)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO consistency_finding (check_run_id, kind, path, replica_id, expected_size, found_size,
                                             expected_adler32, found_adler32, action)
            SELECT %(check)s, %(lost)s, k.path, k.replica_id, k.size, NULL, k.adler32, '', ''
            FROM ({_AVAILABLE}) k
            LEFT JOIN consistency_listedfile lf ON lf.check_run_id = %(check)s AND lf.path = k.path
            WHERE lf.id IS NULL AND ({_PROVEN_ABSENT})
            """,
            params,
        )
        check.lost = cursor.rowcount
        cursor.execute(
            f"""
            INSERT INTO consistency_finding (check_run_id, kind, path, replica_id, expected_size, found_size,
                                             expected_adler32, found_adler32, action)
            SELECT %(check)s, %(corrupt)s, k.path, k.replica_id, k.size, lf.size, k.adler32, '', ''
            FROM ({_AVAILABLE}) k
            JOIN consistency_listedfile lf ON lf.check_run_id = %(check)s AND lf.path = k.path
            WHERE lf.size <> k.size
            """,
            params,
        )
        check.corrupt = cursor.rowcount
        cursor.execute(
            f"""
            INSERT INTO consistency_finding (check_run_id, kind, path, replica_id, found_size, modified,
                                             expected_adler32, found_adler32, action)
            SELECT %(check)s, %(dark)s, lf.path, NULL, lf.size, lf.modified, '', '', ''
            FROM consistency_listedfile lf
            WHERE lf.check_run_id = %(check)s AND lf.modified < %(older)s
              AND NOT EXISTS (SELECT 1 FROM ({_ANY}) k WHERE k.path = lf.path)
            """,
            params,
        )
        check.dark = cursor.rowcount
        cursor.execute(f"SELECT count(*) FROM ({_AVAILABLE}) k", params)
        known = cursor.fetchone()[0]
        cursor.execute(f"SELECT count(*) FROM ({_AVAILABLE}) k {_WHOLE}", params)
        present = cursor.fetchone()[0]
    check.files_checked = check.lost + check.corrupt + present
    check.unchecked = known - check.files_checked


# -- stat mode ------------------------------------------------------------------------------------------


_KNOWN_PAGE = f"""
    SELECT replica_id, path, size, adler32 FROM ({_AVAILABLE}) k
    WHERE path > %(after)s ORDER BY path LIMIT %(page)s
"""


def _judge_by_stat(check: ConsistencyCheck, reader: StorageReader) -> None:
    """Stat mode: every known available file looked at."""
    _stat_each(check, reader, _paged(_KNOWN_PAGE, _params(check)), fallback=False)


def _stat_each(
    check: ConsistencyCheck, reader: StorageReader, files: Iterable[KnownFile], *, fallback: bool
) -> None:
    """One stat per file: lost when the storage says it has none, corrupt when its size differs; a failed
    stat leaves the file unchecked. A sample of the files found whole has its checksum read. ``fallback``:
    the files were counted unchecked by a listing that could not reach them; those judged here no longer
    are."""
    findings: list[Finding] = []
    whole: list[KnownFile] = []
    for known in files:
        try:
            size = reader.size(known.path)
        except StorageReadError as exc:
            if not exc.absent:
                check.unchecked += 0 if fallback else 1
                check.add_error(known.path, str(exc))
                continue
            size = None
        check.files_checked += 1
        check.unchecked -= 1 if fallback else 0
        if size is None or size != known.size:
            kind = FindingKind.LOST if size is None else FindingKind.CORRUPT
            findings.append(_finding(check, known, kind, found_size=size))
            check.lost += kind == FindingKind.LOST
            check.corrupt += kind == FindingKind.CORRUPT
        elif random.random() < check.checksum_fraction or check.checksum_fraction >= 1.0:
            whole.append(known)
        if len(findings) >= BATCH:
            Finding.objects.bulk_create(findings)
            findings.clear()
        if len(whole) >= BATCH:
            _read_checksums(check, reader, whole)
            whole.clear()
    Finding.objects.bulk_create(findings)
    _read_checksums(check, reader, whole)


# -- checksums ------------------------------------------------------------------------------------------


def _read_checksums(check: ConsistencyCheck, reader: StorageReader, files: Iterable[KnownFile]) -> None:
    """Each file's adler32 read again from its bytes: corrupt when it differs from the product's."""
    findings = []
    for known in files:
        try:
            found = reader.adler32(known.path)
        except StorageReadError as exc:
            check.files_checked -= 1
            check.unchecked += 1
            check.add_error(known.path, str(exc))
            continue
        check.checksums_read += 1
        if found != known.adler32.lower():
            findings.append(
                _finding(check, known, FindingKind.CORRUPT, found_size=known.size, found_adler32=found)
            )
            check.corrupt += 1
        if len(findings) >= BATCH:
            Finding.objects.bulk_create(findings)
            findings.clear()
    Finding.objects.bulk_create(findings)


def _finding(check: ConsistencyCheck, known: KnownFile, kind: str, **found: object) -> Finding:
    return Finding(
        check_run=check,
        kind=kind,
        path=known.path,
        replica_id=known.replica_id,
        expected_size=known.size,
        expected_adler32=known.adler32,
        **found,
    )

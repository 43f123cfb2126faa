"""What a storage consistency check costs at scale: N replica files at one endpoint, checked by listing.

    .venv/bin/python bench/consistency_scale.py --files 1000000 [--state bench-consistency] [--out FILE]

On a state of its own (its own PostgreSQL: ``localnet``'s core services), with the reference topology: N
files (10 a product) whose replicas are AVAILABLE at UKSRC_DISK, and a **synthetic listing** of that
endpoint (the storage is not in the measurement; the issue allows it for the scale figure) that lacks one
file in 1 000, has one in 997 of the wrong size, and holds one dark file per 1 000 directories. The check
runs as the worker runs it (``consistency.checker``), its phases timed: the walk (listing into the database
in batches), the judgement (SQL), the healing of the lost and corrupt replicas. Reported: seconds per phase,
files per second, the process's peak memory, PostgreSQL's work (rows inserted, read, temporary bytes), and
the check's time as a ratio to a baseline measured in the same run: one SELECT of the endpoint's known files
(the least any comparison must read). The result goes to ``bench/results/consistency_scale-DATE.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FILES_PER_PRODUCT = 10
SIZE = 1_000_000
ENDPOINT = "UKSRC_DISK"
SCOPE = "bench"


def _product_name(i: int) -> str:
    return f"scale-{i:07d}"


def _file_name(j: int) -> str:
    return f"f{j}.ms"


def _fault(index: int) -> str:
    """What the synthetic storage did to the file of global ``index``: '', 'missing' or 'size'."""
    if index % 1000 == 999:
        return "missing"
    if index % 997 == 996:
        return "size"
    return ""


class SyntheticStorage:
    """A listing of the endpoint as the storage would return it, generated (no network, no disk)."""

    def __init__(self, products: int) -> None:
        self.products = products
        self.old = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)

    def list_directory(self, path: str) -> Iterator[Any]:
        from consistency.storage import Entry

        if path == "":
            yield Entry(SCOPE, True, 0, self.old)
            return
        if path == SCOPE:
            for i in range(self.products):
                yield Entry(_product_name(i), True, 0, self.old)
            return
        i = int(path.rsplit("-", 1)[1])
        for j in range(FILES_PER_PRODUCT):
            fault = _fault(i * FILES_PER_PRODUCT + j)
            if fault != "missing":
                yield Entry(_file_name(j), False, SIZE + (fault == "size"), self.old)
        if i % 1000 == 0:
            yield Entry("stray.tmp", False, 1, self.old)

    def adler32(self, path: str) -> str:  # pragma: no cover - the scale run reads no checksum
        raise AssertionError("the scale run samples no checksum")


def populate(files: int) -> int:
    """N files' products and replicas at ENDPOINT (and their SDP replicas), by bulk insert; the products."""
    from replicas.choices import ProductState, ReplicaState
    from replicas.models import DataProduct, ProductFile, Replica
    from topology.models import StorageEndpoint, Telescope

    telescope = Telescope.objects.get(name="SKA1-Low")
    sdp = StorageEndpoint.objects.get(name="SKA1-LOW_SDP")
    endpoint = StorageEndpoint.objects.get(name=ENDPOINT)
    products = files // FILES_PER_PRODUCT
    batch = 5000
    for start in range(0, products, batch):
        rows = DataProduct.objects.bulk_create(
            DataProduct(
                scope=SCOPE, name=_product_name(i), telescope=telescope, source=sdp, state=ProductState.PLACED
            )
            for i in range(start, min(products, start + batch))
        )
        ProductFile.objects.bulk_create(
            ProductFile(product=p, name=_file_name(j), size_bytes=SIZE, adler32="0000abcd")
            for p in rows
            for j in range(FILES_PER_PRODUCT)
        )
        # The bench's own rows, written as a finished push leaves them (the lifecycle makes them one by one).
        Replica.objects.bulk_create(
            Replica(product=p, endpoint=e, state=ReplicaState.AVAILABLE, reason="bench")
            for p in rows
            for e in (sdp, endpoint)
        )
    return products


def pg_counters() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tup_inserted, tup_returned, tup_fetched, temp_bytes, xact_commit FROM pg_stat_database "
            "WHERE datname = current_database()"
        )
        row = cursor.fetchone()
    return dict(
        zip(("tup_inserted", "tup_returned", "tup_fetched", "temp_bytes", "xact_commit"), row, strict=True)
    )


def measure(files: int) -> dict[str, Any]:
    """The check of ``files`` synthetic replica files (Django set up, the reference topology imported)."""
    from django.db import connection

    from consistency import checker
    from consistency.choices import CheckMode
    from consistency.healing import act_on_findings
    from consistency.models import ConsistencyCheck, ListedDirectory, ListedFile
    from topology.models import StorageEndpoint

    started = time.monotonic()
    products = populate(files)
    populate_s = time.monotonic() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    endpoint = StorageEndpoint.objects.get(name=ENDPOINT)
    check = ConsistencyCheck.objects.create(endpoint=endpoint, mode=CheckMode.LIST, checksum_fraction=0.0)
    params = checker._params(check)
    t0 = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), sum(size) FROM ({checker._AVAILABLE}) k", params)
        cursor.fetchone()
    baseline_s = time.monotonic() - t0
    storage = SyntheticStorage(products)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    before = pg_counters()
    t0 = time.monotonic()
    checker._walk(check, storage)  # type: ignore[arg-type]
    walk_s = time.monotonic() - t0
    t0 = time.monotonic()
    checker._judge_listing(check)
    judge_s = time.monotonic() - t0
    check.save()
    t0 = time.monotonic()
    act_on_findings(check)
    heal_s = time.monotonic() - t0
    ListedFile.objects.filter(check_run=check).delete()
    ListedDirectory.objects.filter(check_run=check).delete()
    after = pg_counters()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    check_s = walk_s + judge_s
    expected_lost = sum(_fault(i) == "missing" for i in range(products * FILES_PER_PRODUCT))
    expected_size = sum(_fault(i) == "size" for i in range(products * FILES_PER_PRODUCT))
    return {
        "files": products * FILES_PER_PRODUCT,
        "products": products,
        "populate_s": round(populate_s, 2),
        "walk_s": round(walk_s, 2),
        "judge_s": round(judge_s, 2),
        "heal_s": round(heal_s, 2),
        "check_files_per_s": round(products * FILES_PER_PRODUCT / check_s),
        "baseline_select_s": round(baseline_s, 3),
        "check_to_baseline": round(check_s / baseline_s, 1),
        "peak_rss_mib": round(rss_after / 1024, 1),
        "rss_growth_mib": round((rss_after - rss_before) / 1024, 1),
        "postgres": {k: after[k] - before[k] for k in after},
        "found": {
            "lost": check.lost,
            "corrupt": check.corrupt,
            "dark": check.dark,
            "unchecked": check.unchecked,
        },
        "expected": {"lost": expected_lost, "corrupt": expected_size, "dark": (products + 999) // 1000},
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument(
        "--state", default="bench-consistency", help="the state folder's name (its own services)"
    )
    parser.add_argument("--out", type=Path, help="where to write the result (default bench/results/)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    from own_state import platform_on_own_state

    with platform_on_own_state(args.state):
        result = measure(args.files)
    result["machine"] = os.uname().nodename
    result["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    out = args.out or ROOT / "bench" / "results" / f"consistency_scale-{dt.date.today()}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

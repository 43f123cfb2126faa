"""Benchmark: FTS3 REST submission and bookkeeping of the embedded service, with and without tokens.

Measures, over HTTP against the standalone FTS3 service (gunicorn, 2 workers, HTTPS) on this machine:
- accepted files per second for bulk submissions of N files (default 10 000) in one job, in three ways
  interleaved in each repeat: without storage tokens (the baseline), with per-file ``source_tokens`` /
  ``destination_tokens`` as Rucio's transfertool sends them (one token per end for the job's storage, its
  scope the storage's base path) and managed (checked, exchanged at the issuer, sealed), and the same
  unmanaged (checked and sealed, no exchange);
- the latency of a bulk status query of 100 jobs (``GET /jobs/id1,...,id100?files=...``, what Rucio's
  poller sends);
- as the baseline measured in the same run, the latency of ``GET /whoami`` (authentication plus one query).
No worker runs, so jobs stay queued: this is the bookkeeping cost alone. The issuer is the local Keycloak.

Run: .venv/bin/python bench/fts3_submission.py [--files 10000] [--repeats 3]
Result: bench/results/fts3_submission-<date>.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

POLL_FIELDS = ",".join(
    [
        "file_state",
        "dest_surl",
        "finish_time",
        "start_time",
        "staging_start",
        "staging_finished",
        "reason",
        "source_surl",
        "file_metadata",
    ]
)


SOURCE, DESTINATION = "root://sdp.example.org:1094", "davs://src.example.org:443"
AUDIENCES = {"BENCH-SDP": "sdp.example.org", "BENCH-SRC": "src.example.org"}


def _job(files: int, tag: str, tokens: tuple[str, str] | None = None, unmanaged: bool = False) -> dict:  # type: ignore[type-arg]
    entries = []
    for i in range(files):
        entry = {
            "sources": [f"{SOURCE}//ska/{tag}/f{i}"],
            "destinations": [f"{DESTINATION}/ska/{tag}/f{i}"],
            "filesize": 10**9,
            "checksum": "ADLER32:0cc737eb",
            "activity": "SKA Data Products",
            "metadata": {"request_id": f"{tag}-{i}", "scope": "ska", "name": f"f{i}"},
        }
        if tokens is not None:
            entry["source_tokens"], entry["destination_tokens"] = [tokens[0]], [tokens[1]]
        entries.append(entry)
    return {
        "files": entries,
        "params": {
            "verify_checksum": "both",
            "priority": 3,
            "overwrite": True,
            "max_time_in_queue": 168,
            "job_metadata": {"issuer": "bench"},
            "unmanaged_tokens": unmanaged,
        },
    }


def _register_storage() -> None:
    """The two storage endpoints the jobs name (the service refuses URLs on storage it does not know)."""
    from topology.models import RegionalCentre, StorageEndpoint

    centre, _ = RegionalCentre.objects.get_or_create(
        name="BenchStorage", defaults={"region": "europe", "country": "GB", "latitude": 0, "longitude": 0}
    )
    for (name, audience), ports in zip(AUDIENCES.items(), ((1094, 1095), (1443, 443)), strict=True):
        StorageEndpoint.objects.update_or_create(
            name=name,
            defaults={
                "site": centre,
                "hostname": audience,
                "root_port": ports[0],
                "http_port": ports[1],
                "prefix": "/",
                "token_audience": audience,
            },
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--state", default="bench", help="the state folder's name (its own services)")
    parser.add_argument("--out", type=Path, help="where to write the result (default bench/results/)")
    args = parser.parse_args()

    from localnet.fts3 import ensure_fts3
    from localnet.issuer import allow_audience, ensure_issuer, issuer_settings
    from localnet.stack import down, ensure_core, service_env
    from localnet.state import StateDir

    state = StateDir.named(args.state)
    ensure_core(state)
    try:
        # Before the service starts: its environment then names the issuer (SRCNET_TOKEN_*).
        issuer = ensure_issuer(state)
        for audience in AUDIENCES.values():
            allow_audience(issuer, audience)
        os.environ.update(service_env(state, args.state))
        import django

        django.setup()
        import requests
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        from identity.tokens import issue
        from transfers.models import TransferJob
        from transfers.tokens import TokenClient

        call_command("migrate", verbosity=0)
        TransferJob.objects.all().delete()
        _register_storage()
        settings = issuer_settings(state)
        assert settings is not None
        client = TokenClient(settings)
        tokens = (
            client.fetch_new(["storage.read:/ska"], AUDIENCES["BENCH-SDP"]).value,
            client.fetch_new(["storage.create:/ska", "storage.modify:/ska"], AUDIENCES["BENCH-SRC"]).value,
        )
        user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
        key = issue(user, name="fts3 submission bench", scope="fts3", days=1)[1]
        url = ensure_fts3(state, args.state)
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {key}"
        session.trust_env = False  # a CA bundle named in the environment must not replace the local CA
        session.verify = str(state.path / "pki" / "ca.pem")
        session.get(f"{url}/whoami", timeout=30).raise_for_status()
        baseline = []
        for _ in range(args.polls):
            started = time.perf_counter()
            session.get(f"{url}/whoami", timeout=30).raise_for_status()
            baseline.append(time.perf_counter() - started)
        ways: dict[str, dict[str, Any]] = {
            "plain": {},
            "tokens-managed": {"tokens": tokens},
            "tokens-unmanaged": {"tokens": tokens, "unmanaged": True},
        }
        rates: dict[str, list[float]] = {way: [] for way in ways}
        for repeat in range(args.repeats):
            for way, options in ways.items():  # interleaved: the machine's moods fall on all three
                body = _job(args.files, f"r{repeat}-{way}", **options)
                started = time.perf_counter()
                answer = session.post(f"{url}/jobs", json=body, timeout=600)
                elapsed = time.perf_counter() - started
                if answer.status_code != 200:
                    raise SystemExit(f"{way}: HTTP {answer.status_code}: {answer.text[:300]}")
                rates[way].append(args.files / elapsed)
        small_ids = [
            session.post(f"{url}/jobs", json=_job(1, f"p{i}"), timeout=60).json()["job_id"]
            for i in range(100)
        ]
        polls = []
        for _ in range(args.polls):
            started = time.perf_counter()
            answer = session.get(
                f"{url}/jobs/{','.join(small_ids)}", params={"files": POLL_FIELDS}, timeout=60
            )
            polls.append(time.perf_counter() - started)
            assert answer.status_code == 200 and len(answer.json()) == 100
    finally:
        down(state)
    medians = {way: statistics.median(values) for way, values in rates.items()}
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.node()} {os.cpu_count()} cores, {platform.platform()}",
        "command": " ".join(["bench/fts3_submission.py", *sys.argv[1:]]),
        "files_per_job": args.files,
        "submit_files_per_s": {way: {"median": medians[way], "all": rates[way]} for way in ways},
        "submit_ratio_to_plain": {way: medians[way] / medians["plain"] for way in ways},
        "poll_100_jobs_ms": {
            "median": statistics.median(polls) * 1000,
            "p90": sorted(polls)[int(0.9 * len(polls))] * 1000,
        },
        "baseline_whoami_ms": statistics.median(baseline) * 1000,
        "fts3_production_average_files_per_s": 33,
    }
    result["submit_vs_fts3_production"] = medians["plain"] / 33
    result["poll_vs_whoami"] = result["poll_100_jobs_ms"]["median"] / result["baseline_whoami_ms"]
    out = args.out or (
        Path(__file__).resolve().parent / "results" / f"fts3_submission-{datetime.now(UTC):%Y-%m-%d}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

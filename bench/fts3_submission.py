"""Benchmark: FTS3 REST submission and bookkeeping of the embedded service.

Measures, over HTTP against the standalone FTS3 service (gunicorn, 2 workers, HTTPS) on this machine:
- accepted files per second for bulk submissions of N files (default 10 000) in one job;
- the latency of a bulk status query of 100 jobs (``GET /jobs/id1,...,id100?files=...``, what Rucio's
  poller sends);
- as the baseline measured in the same run, the latency of ``GET /whoami`` (authentication plus one query).
No worker runs, so jobs stay queued: this is the bookkeeping cost alone.

Run: .venv/bin/python bench/fts3_submission.py [--files 10000] [--repeats 3]
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


def _job(files: int, tag: str) -> dict:  # type: ignore[type-arg]
    return {
        "files": [
            {
                "sources": [f"root://sdp.example.org:1094//ska/{tag}/f{i}"],
                "destinations": [f"davs://src.example.org:443/ska/{tag}/f{i}"],
                "filesize": 10**9,
                "checksum": "ADLER32:0cc737eb",
                "activity": "SKA Data Products",
                "metadata": {"request_id": f"{tag}-{i}", "scope": "ska", "name": f"f{i}"},
            }
            for i in range(files)
        ],
        "params": {
            "verify_checksum": "both",
            "priority": 3,
            "overwrite": True,
            "max_time_in_queue": 168,
            "job_metadata": {"issuer": "bench"},
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--polls", type=int, default=20)
    args = parser.parse_args()

    from localnet.fts3 import ensure_fts3
    from localnet.stack import down, ensure_core, service_env
    from localnet.state import StateDir

    state = StateDir.named("bench")
    ensure_core(state)
    os.environ.update(service_env(state, "bench"))
    import django

    django.setup()
    import requests
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from transfers.models import TransferJob

    call_command("migrate", verbosity=0)
    TransferJob.objects.all().delete()
    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    token, _ = Token.objects.get_or_create(user=user)
    url = ensure_fts3(state, "bench")
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token.key}"
    session.trust_env = False  # a CA bundle named in the environment must not replace the local CA
    session.verify = str(state.path / "pki" / "ca.pem")
    try:
        session.get(f"{url}/whoami", timeout=30).raise_for_status()
        baseline = []
        for _ in range(args.polls):
            started = time.perf_counter()
            session.get(f"{url}/whoami", timeout=30).raise_for_status()
            baseline.append(time.perf_counter() - started)
        rates = []
        for repeat in range(args.repeats):
            body = _job(args.files, f"r{repeat}")
            started = time.perf_counter()
            answer = session.post(f"{url}/jobs", json=body, timeout=600)
            elapsed = time.perf_counter() - started
            answer.raise_for_status()
            rates.append(args.files / elapsed)
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
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.node()} {os.cpu_count()} cores, {platform.platform()}",
        "files_per_job": args.files,
        "submit_files_per_s": {"median": statistics.median(rates), "all": rates},
        "poll_100_jobs_ms": {
            "median": statistics.median(polls) * 1000,
            "p90": sorted(polls)[int(0.9 * len(polls))] * 1000,
        },
        "baseline_whoami_ms": statistics.median(baseline) * 1000,
        "fts3_production_average_files_per_s": 33,
    }
    result["submit_vs_fts3_production"] = result["submit_files_per_s"]["median"] / 33
    result["poll_vs_whoami"] = result["poll_100_jobs_ms"]["median"] / result["baseline_whoami_ms"]
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

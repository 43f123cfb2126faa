"""How long-lived TCP flows of the 223 ms and the 7.5 ms path share SKA1-Low's access link (issue 17 item 7).

bench_reality.py's copies are short (16-48 MiB files, each a new connection), so what they show of how
the two paths share a full link mixes each copy's set-up and slow start with the sharing itself. This
measures the sharing alone: on the same long-haul local network (localnet/longhaul.py, the sites'
congestion control as deployed, BBR by default), ``iperf3`` flows from the SDP's namespace to UKSRC's
(223 ms) and AUSRC's (7.5 ms) for ``--seconds`` each, for every ``UK,AU`` pair of flow counts given,
paced at the sites' per-connection cap (``--fq-rate``, as the XRootD sites are). Reported per pair: each
path's mean rate after the first ``--settle`` seconds, the 223 ms path's share, and its per-flow rate
over the 7.5 ms path's.

    .venv/bin/python bench/scheduler/path_sharing.py 1,1 2,2 1,3 3,1 3,3 [--seconds 40] [--cc bbr]

Everything it starts (the network, PostgreSQL and Redis of bench_reality's state folder, the iperf3
servers) is stopped by PID at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reality_report import AU, SDP, UK  # noqa: E402  (siblings of this script)
from reality_stack import ENDPOINTS, STATE, prepare_database  # noqa: E402

PORTS = {UK: 5301, AU: 5302}


def pair(text: str) -> tuple[int, int]:
    """``UK,AU`` flow counts; argparse's type, so a bad one is a usage error naming it."""
    try:
        uk, au = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not two flow counts UK,AU (e.g. 2,1)") from None
    if uk < 0 or au < 0 or uk + au == 0 or max(uk, au) > 16:
        raise argparse.ArgumentTypeError(f"{text!r}: each count 0..16, not both 0")
    return uk, au


def measure(network: Any, counts: tuple[int, int], args: argparse.Namespace) -> dict[str, Any]:
    """Run the flows of one pair at once; each path's per-second rates (bit/s), from iperf3's own report."""
    net = network.net
    sdp = network.site_of(SDP)
    clients = {}
    for endpoint, n in zip((UK, AU), counts, strict=True):
        if n:
            argv = ["iperf3", "-c", network.address(endpoint), "-p", str(PORTS[endpoint]), "-P", str(n)]
            argv += ["-t", str(args.seconds), "-i", "1", "-J", "-C", args.cc, "--fq-rate", args.fq_rate]
            clients[endpoint] = net.popen(
                sdp, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
    rates = {}
    for endpoint, proc in clients.items():
        out, err = proc.communicate(timeout=args.seconds + 60)
        if proc.returncode != 0:
            raise RuntimeError(f"iperf3 to {endpoint} failed: {err.strip() or out[-300:]}")
        rates[endpoint] = [interval["sum"]["bits_per_second"] for interval in json.loads(out)["intervals"]]
    return {"uk_flows": counts[0], "au_flows": counts[1], "per_second_bps": rates}


def summary(row: dict[str, Any], settle: int) -> dict[str, Any]:
    means = {k: statistics.fmean(v[settle:]) for k, v in row["per_second_bps"].items()}
    out: dict[str, Any] = {"mean_bps": means, "total_bps": sum(means.values())}
    if row["uk_flows"] and row["au_flows"]:
        out["uk_share"] = means[UK] / out["total_bps"]
        out["uk_per_flow_over_au"] = (means[UK] / row["uk_flows"]) / (means[AU] / row["au_flows"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("pairs", type=pair, nargs="+", help="UK,AU flow counts, e.g. 1,1 2,2 1,3")
    parser.add_argument("--seconds", type=int, default=40, help="each pair's duration (default 40)")
    parser.add_argument("--settle", type=int, default=10, help="seconds left out at the start (default 10)")
    parser.add_argument("--cc", default="bbr", help="the sites' congestion control (default bbr)")
    parser.add_argument("--fq-rate", default="100M", help="per-connection pacing cap (default 100M)")
    parser.add_argument("--out", type=Path, default=None, help="write the per-second rates here (JSON)")
    args = parser.parse_args()
    if not 0 <= args.settle < args.seconds:
        parser.error("--settle must be at least 0 and less than --seconds")
    assert os.geteuid() == 0, "the long-haul network needs root (network namespaces, TUN, routes)"

    from localnet.longhaul import platform_settings

    os.environ.update(platform_settings(args.cc))
    from localnet.stack import down, ensure_core, service_env
    from localnet.state import StateDir

    state = StateDir.named(STATE)
    started = datetime.now(UTC)
    rows = []
    try:
        ensure_core(state)
        os.environ.update(service_env(state, STATE))
        import django

        django.setup()
        from localnet.longhaul import long_haul, plan_network

        prepare_database(state, None)  # the reference topology: the network's links, RTTs and routes
        plan = plan_network(ENDPOINTS, congestion_control=args.cc)
        with long_haul(state, plan) as network:
            servers = [
                network.net.popen(
                    network.site_of(endpoint),
                    ["iperf3", "-s", "-p", str(port)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for endpoint, port in PORTS.items()
            ]
            try:
                time.sleep(1)
                for counts in args.pairs:
                    rows.append(measure(network, counts, args))
                    time.sleep(2)  # the queue drains between pairs
            finally:
                for server in servers:
                    server.terminate()
                    server.wait(timeout=10)
    finally:
        down(state)
    print(
        f"{started:%Y-%m-%d %H:%M} UTC, {args.cc}, {args.seconds} s per pair, first {args.settle} s left out"
    )
    print("| UK (223 ms) flows | AU (7.5 ms) flows | UK Mbit/s | AU Mbit/s | UK share | UK / AU per flow |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        s = summary(row, args.settle)
        share = f"{s['uk_share']:.2f}" if "uk_share" in s else "-"
        ratio = f"{s['uk_per_flow_over_au']:.1f}" if "uk_per_flow_over_au" in s else "-"
        uk, au = (s["mean_bps"].get(endpoint, 0.0) / 1e6 for endpoint in (UK, AU))
        print(f"| {row['uk_flows']} | {row['au_flows']} | {uk:.1f} | {au:.1f} | {share} | {ratio} |")
    if args.out:
        args.out.write_text(
            json.dumps({"date": f"{started:%Y-%m-%d %H:%M} UTC", "cc": args.cc, "rows": rows})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

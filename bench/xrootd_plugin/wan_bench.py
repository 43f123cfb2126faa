#!/usr/bin/env python3
"""Stock vs wanio over an emulated long-RTT path (bench/wan, userspace emulator).

Two XRootD sites, A (10.250.1.2) and B (10.250.2.2), in the network namespaces
of one emulated path. Scenarios, each with stock and plugin servers in the same run:
  * upload A -> B with xrdcp (client in A, server in B);
  * xroot TPC pull B <- A (destination B runs `xrdcp --server` or `xrdcp-wan`).
Reports throughput and destination-server CPU s/GB (with waited-for children, i.e.
the TPC program). Usage (root):
    /usr/bin/python3 bench/xrootd_plugin/wan_bench.py --rtt-ms 300 --rate-mbit 1000 --size-mib 512
"""

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "xrootd_plugin"))
sys.path.insert(0, str(ROOT / "bench" / "wan"))
import wanio_harness as h  # noqa: E402
import wanpath  # noqa: E402

PROBE = "import socket,sys\nsocket.create_connection(('127.0.0.1', int(sys.argv[1])), 0.5).close()\n"


def cpu(server):
    f = Path(f"/proc/{server.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")


def start_in(path, side, server):
    popen = path.popen_a if side == "a" else path.popen_b
    run = path.run_a if side == "a" else path.run_b

    def ready():
        return (
            run([sys.executable, "-c", PROBE, str(server.port)], capture_output=True, timeout=10).returncode
            == 0
        )

    server.start(popen=popen, ready=ready)
    server.ip = path.ip_a if side == "a" else path.ip_b
    return server


def url(server, name):
    return f"root://{server.ip}:{server.port}//{name}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rtt-ms", type=float, default=300)
    ap.add_argument("--rate-mbit", type=float, default=1000)
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument(
        "--inflight",
        type=int,
        default=0,
        help="xrdcp-wan reads in flight (default: enough 8 MiB reads for the BDP)",
    )
    ap.add_argument("--cc", default="cubic", choices=["cubic", "bbr", "reno"])
    ap.add_argument("--only", choices=["upload", "tpc"], default=None)
    ap.add_argument(
        "--parallel-chunks",
        type=int,
        default=4,
        help="XRD_CPPARALLELCHUNKS for the uploading client and stock TPC",
    )
    args = ap.parse_args()
    h.ensure_built()
    size = args.size_mib * h.MiB
    bdp = args.rate_mbit * 1e6 / 8 * args.rtt_ms / 1e3
    if not args.inflight:
        args.inflight = max(1, -(-int(bdp) // (8 * h.MiB)))
    env = h.client_env(
        XRD_CPPARALLELCHUNKS=args.parallel_chunks, XRD_REQUESTTIMEOUT=600, XRD_STREAMTIMEOUT=600
    )
    rows = []
    with (
        h.scratch_dir("wanio-wanbench-") as scratch,
        wanpath.emulated_path(rtt_ms=args.rtt_ms, rate_mbit=args.rate_mbit, cc=args.cc) as path,
    ):
        src = h.make_file(scratch / "src.bin", size, seed=9)
        a = h.XrootdServer(scratch, "siteA", plugin=False)
        b_stock = h.XrootdServer(scratch, "siteBstock", plugin=False)
        b_wan = h.XrootdServer(
            scratch, "siteBwan", tpc_program=f"{h.TPC_PROGRAM} --server --inflight {args.inflight}"
        )
        servers = [a, b_stock, b_wan]
        try:
            for side, s in (("a", a), ("b", b_stock), ("b", b_wan)):
                start_in(path, side, s)
            os.link(src, a.data / "src.bin")
            h.chown_tree(a.data)
            scenarios = {
                "upload A->B (xrdcp, kXR_pgwrite)": lambda dst: path.run_a(
                    ["xrdcp", "-f", "-s", str(src), url(dst, "up.bin")],
                    env=env,
                    capture_output=True,
                    timeout=1800,
                ),
                "TPC pull B<-A": lambda dst: path.run_b(
                    ["xrdcp", "-f", "--tpc", "only", url(a, "src.bin"), url(dst, "tpc.bin")],
                    env=env,
                    capture_output=True,
                    timeout=1800,
                ),
            }
            if args.only:
                scenarios = {k: v for k, v in scenarios.items() if k.lower().startswith(args.only)}
            for title, action in scenarios.items():
                res = {}
                for kind, dst in (("stock", b_stock), ("plugin", b_wan)):
                    rates, cpus = [], []
                    for _ in range(args.reps):
                        c0, t0 = cpu(dst), time.monotonic()
                        r = action(dst)
                        if r.returncode != 0:
                            raise SystemExit(f"{title} {kind} failed: {r.stderr}")
                        dt = time.monotonic() - t0
                        rates.append(size / dt / 1e6)
                        cpus.append((cpu(dst) - c0) / (size / 1e9))
                    res[kind] = (statistics.median(rates), statistics.median(cpus))
                    print(
                        f"{title:36s} {kind:6s} {res[kind][0]:7.1f} MB/s {res[kind][1]:6.2f} CPU s/GB",
                        file=sys.stderr,
                        flush=True,
                    )
                rows.append((title, res))
        finally:
            for s in servers:
                s.stop()
    print(
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; emulated path "
        f"RTT {args.rtt_ms} ms, {args.rate_mbit} Mbit/s, {args.cc} (bench/wan, tuning dtn, "
        f"BDP {bdp / 1e6:.0f} MB); file "
        f"{args.size_mib} MiB; median of {args.reps}; XRD_CPPARALLELCHUNKS="
        f"{args.parallel_chunks}; xrdcp-wan --inflight {args.inflight}\n"
    )
    print(
        "| Scenario | Stock MB/s | Plugin MB/s | Throughput ratio | Stock CPU s/GB | "
        "Plugin CPU s/GB | CPU ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    for title, r in rows:
        (sr, sc), (pr, pc) = r["stock"], r["plugin"]
        print(
            f"| {title} | {sr:.1f} | {pr:.1f} | {pr / sr:.2f} | {sc:.2f} | {pc:.2f} | "
            f"{(pc / sc) if sc else float('nan'):.2f} |"
        )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Stock XRootD server vs the wanio plugin, in the same run, on 127.0.0.1.

For each scenario it reports throughput, server CPU seconds per GB (utime+stime
of the xrootd process, plus waited-for children for TPC, from /proc), the plugin's
own backpressure wait (its blocked_ms counter) and, in a separate run under
`strace -f -T -yy` (strace_stats.py), server syscalls per GB and the time the
socket thread(s) spent in disk writes (uploads, TPC) or in socket sends
(downloads). Ratios are plugin / stock.

Usage (as root; builds the plugin if needed):
    /usr/bin/python3 bench/xrootd_plugin/bench.py [--size-mib 1024] [--reps 3] [--no-strace]
Only the standard library, subprocess and the xrootd/xrdcp binaries are used.
"""

import argparse
import os
import platform
import re
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "xrootd_plugin"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import strace_stats
import wanio_harness as h

GB = 1e9


def cpu(server, children=False):
    fields = Path(f"/proc/{server.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


BLOCKED = re.compile(r"wanio: close \S+ .*?blocked_ms=(\d+)")


def blocked_s(server, log_offset):
    """The plugin's own backpressure wait (blocked_ms at close) logged after log_offset."""
    return sum(int(m.group(1)) for m in BLOCKED.finditer(server.log()[log_offset:])) / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--only", default="", help="run only scenarios whose title contains this")
    args = ap.parse_args()
    h.ensure_built()
    size = args.size_mib * h.MiB
    load0 = os.getloadavg()[0]

    with h.scratch_dir("wanio-bench-") as scratch:
        src = h.make_file(scratch / "src.bin", size, seed=5)
        stock = h.XrootdServer(scratch, "stock", plugin=False)
        plugin = h.XrootdServer(scratch, "plugin", extra=["wanio.trace info"])
        fslib = h.XrootdServer(
            scratch, "fslib", extra=["wanio.trace info", f"xrootd.fslib ++ {h.PLUGIN_REF}"]
        )
        # TPC destinations pull from the stock server, each with its own program.
        tpc_stock = h.XrootdServer(scratch, "tpcstock", plugin=False)
        tpc_wan = h.XrootdServer(scratch, "tpcwan", tpc_program=f"{h.TPC_PROGRAM} --server --inflight 16")
        servers = {"stock": stock, "plugin": plugin}
        try:
            for s in (stock, plugin, fslib, tpc_stock, tpc_wan):
                s.start()
            h.run(["xrdcp", "-f", "-s", str(src), stock.url + "/tpcsrc.bin"], timeout=600)
            for s in (stock, plugin, fslib):  # every scenario's file exists from the start
                h.run(["xrdcp", "-f", "-s", str(src), s.url + "/up.bin"], timeout=600)

            def upload(server, pgrw):
                env = h.client_env(XRD_CPUSEPGWRTRD=pgrw)
                return lambda: h.run(
                    ["xrdcp", "-f", "-s", str(src), server.url + "/up.bin"], env=env, timeout=600
                )

            def download(server, pgrw):
                env = h.client_env(XRD_CPUSEPGWRTRD=pgrw)
                return lambda: h.run(
                    ["xrdcp", "-f", "-s", server.url + "/up.bin", str(scratch / "down.bin")],
                    env=env,
                    timeout=600,
                )

            def upload_and_query(server):
                def act():
                    upload(server, "1")()
                    h.run(["xrdfs", f"127.0.0.1:{server.port}", "query", "checksum", "/up.bin"], timeout=600)

                return act

            def tpc(server):
                return lambda: h.run(
                    ["xrdcp", "-f", "--tpc", "only", stock.url + "/tpcsrc.bin", server.url + "/tpc.bin"],
                    timeout=600,
                )

            scenarios = [
                (
                    "upload, kXR_pgwrite (xrdcp default)",
                    {k: upload(s, "1") for k, s in servers.items()},
                    servers,
                    False,
                ),
                (
                    "upload, kXR_write (XRD_CPUSEPGWRTRD=0)",
                    {k: upload(s, "0") for k, s in servers.items()},
                    servers,
                    False,
                ),
                (
                    "upload + first checksum query (pgwrite)",
                    {k: upload_and_query(s) for k, s in servers.items()},
                    servers,
                    False,
                ),
                (
                    "download, kXR_pgread (xrdcp default)",
                    {k: download(s, "1") for k, s in servers.items()},
                    servers,
                    False,
                ),
                (
                    "download, kXR_read/sendfile (XRD_CPUSEPGWRTRD=0)",
                    {k: download(s, "0") for k, s in servers.items()},
                    servers,
                    False,
                ),
                (
                    "download, kXR_read/sendfile, plugin with xrootd.fslib ++ wrapper",
                    {"stock": download(stock, "0"), "plugin": download(fslib, "0")},
                    {"stock": stock, "plugin": fslib},
                    False,
                ),
                (
                    "TPC pull: xrdcp --server vs xrdcp-wan",
                    {"stock": tpc(tpc_stock), "plugin": tpc(tpc_wan)},
                    {"stock": tpc_stock, "plugin": tpc_wan},
                    True,
                ),
            ]
            rows = []
            scenarios = [sc for sc in scenarios if args.only in sc[0]]
            for title, actions, targets, children in scenarios:
                result = {}
                way = "send" if title.startswith("download") else "recv"
                for kind in ("stock", "plugin"):
                    server = targets[kind]
                    rates, cpus, waits = [], [], []
                    for _ in range(args.reps):
                        off = len(server.log())
                        c0, t0 = cpu(server, children), time.monotonic()
                        actions[kind]()
                        dt, dc = time.monotonic() - t0, cpu(server, children) - c0
                        rates.append(size / dt / 1e6)
                        cpus.append(dc / (size / GB))
                        waits.append(blocked_s(server, off) / (size / GB))
                    r = {
                        "mb_s": statistics.median(rates),
                        "cpu": statistics.median(cpus),
                        "backpressure": statistics.median(waits) if server.plugin else None,
                        "syscalls": None,
                        "blocked": None,
                    }
                    if not args.no_strace:
                        st = strace_stats.trace(
                            server.proc.pid, actions[kind], server.base / f"strace-{kind}.txt"
                        )
                        r["syscalls"] = st.calls / (size / GB)
                        what = "sock_send" if way == "send" else "disk_write"
                        r["blocked"] = st.socket_thread_seconds(way, what) / (size / GB)
                        r["disk_read"] = st.socket_thread_seconds(way, "disk_read") / (size / GB)
                        r["socket_threads"] = len(st.socket_threads(way))
                    result[kind] = r
                    print(f"{title:52s} {kind:6s} {r}", file=sys.stderr, flush=True)
                rows.append((title, result))
        finally:
            for s in (stock, plugin, fslib, tpc_stock, tpc_wan):
                s.stop()

    def ratio(a, b):
        return "n/a" if not a or not b else f"{b / a:.2f}"

    print(
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.node()}, "
        f"{os.cpu_count()} CPUs, {platform.platform()}; load average {load0:.1f} -> "
        f"{os.getloadavg()[0]:.1f}; file {args.size_mib} MiB, "
        f"median of {args.reps} runs; strace in a separate run\n"
    )
    print(
        "| Scenario | Stock MB/s | Plugin MB/s | Throughput ratio | Stock CPU s/GB | "
        "Plugin CPU s/GB | CPU ratio | Stock syscalls/GB | Plugin syscalls/GB | Syscall ratio "
        "| Socket thread blocked s/GB stock | plugin | plugin backpressure s/GB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def fmt(v, spec=".0f"):
        return "n/a" if v is None else format(v, spec)

    for title, r in rows:
        s, p = r["stock"], r["plugin"]
        print(
            f"| {title} | {s['mb_s']:.0f} | {p['mb_s']:.0f} | {ratio(s['mb_s'], p['mb_s'])} "
            f"| {s['cpu']:.3f} | {p['cpu']:.3f} | {ratio(s['cpu'], p['cpu'])} "
            f"| {fmt(s['syscalls'])} | {fmt(p['syscalls'])} | {ratio(s['syscalls'], p['syscalls'])} "
            f"| {fmt(s['blocked'], '.3f')} | {fmt(p['blocked'], '.3f')} | {fmt(p['backpressure'], '.3f')} |"
        )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Stock vs wanio over an emulated long-RTT path (bench/wan, userspace emulator).

Sites in the network namespaces of one emulated path: A (10.250.1.2, stock, the
source of TPC pulls) and, at B (10.250.2.2), a stock server and a plugin server.
Scenarios, each with the stock and the plugin server of B in the same run:
  * upload A -> B with xrdcp (client in A, server in B);
  * download B -> A with xrdcp (client in A, server in B; kXR_pgread, the default);
  * xroot TPC pull B <- A (destination B runs `xrdcp --server` or `xrdcp-wan`).
Per scenario and server: throughput (median of --reps), server CPU s/GB (with
waited-for children, i.e. the TPC program), emulator drops in the data direction
and, in one more run under `strace -f -T -yy` (see strace_stats.py), syscalls/GB
and the time the socket thread(s) spent in disk writes (uploads, TPC), disk reads
and socket sends (downloads); plus the plugin's own backpressure wait (its
`blocked_ms` counter, logged at close). Usage (root):
    /usr/bin/python3 bench/xrootd_plugin/wan_bench.py --rtt-ms 300 --rate-mbit 1000 --size-mib 512
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "xrootd_plugin"))
sys.path.insert(0, str(ROOT / "bench" / "wan"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ss_sampler  # noqa: E402
import strace_stats  # noqa: E402
import wanio_harness as h  # noqa: E402
import wanpath  # noqa: E402

PROBE = "import socket,sys\nsocket.create_connection(('127.0.0.1', int(sys.argv[1])), 0.5).close()\n"
BLOCKED = re.compile(r"wanio: close (\S+) .*?blocked_ms=(\d+)")
SCENARIOS = ("upload", "download", "tpc")


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


def blocked_ms(server, name, log_offset):
    """Sum of the plugin's backpressure wait over closes of `name` logged after log_offset."""
    return sum(
        int(m.group(2))
        for m in BLOCKED.finditer(server.log()[log_offset:])
        if m.group(1).endswith("/" + name)
    )


def emu_drops(path, direction):
    st = path.stats()
    return st[direction]["drop_queue"] + st[direction]["drop_loss"]


def set_source_cache(src, mode):
    """Before a timed run, put the source file's pages where --source-cache asks.

    With files larger than about half the RAM the page cache holds part of the source,
    depending on what the earlier runs and their adler32 checks read, so neither "from
    disk" nor "from memory" would hold without this. `cold` evicts the file (the source
    reads it from disk: disk to disk, as the goal asks), `warm` reads it all in first.
    """
    if mode == "cold":
        h.evict(src)
    elif mode == "warm":
        with open(src, "rb") as f:
            while f.read(8 * h.MiB):
                pass


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
        help="xrdcp-wan reads in flight (default: xrdcp-wan --bdp <--bdp-factor x the BDP>)",
    )
    ap.add_argument("--bdp-factor", type=float, default=1.0, help="reads in flight as a multiple of the BDP")
    ap.add_argument("--cc", default="cubic", choices=["cubic", "bbr", "reno"])
    ap.add_argument(
        "--mtu", type=int, default=1500, help="path MTU (9000: jumbo frames, the DTN best practice)"
    )
    ap.add_argument("--only", default=",".join(SCENARIOS), help="comma list of upload,download,tpc")
    ap.add_argument("--no-strace", action="store_true", help="skip the syscall / blocked-time run")
    ap.add_argument(
        "--parallel-chunks",
        type=int,
        default=4,
        help="XRD_CPPARALLELCHUNKS for the xrdcp clients and the stock TPC program",
    )
    ap.add_argument(
        "--stock-tpc-chunks",
        type=int,
        default=0,
        help="XRD_CPPARALLELCHUNKS in the stock destination server's environment (inherited by its "
        "`xrdcp --server`); 0 = the XRootD default (4)",
    )
    ap.add_argument(
        "--ss",
        action="store_true",
        help="sample the sender's TCP state (ss -tin, every 0.5 s) during each timed run and report the "
        "ramp and what limits the steady phase (see ss_sampler.py)",
    )
    ap.add_argument(
        "--ss-samples",
        type=Path,
        help="sample as --ss does and keep the raw samples of the last timed run of each scenario and "
        "server here (JSON lines; the file name gets -<scenario>-<server> before its suffix)",
    )
    ap.add_argument(
        "--servers",
        default="stock,plugin",
        help="comma list of the destination servers to run (stock,plugin); a ratio needs both",
    )
    ap.add_argument("--tpc-args", default="", help="extra xrdcp-wan arguments, e.g. '--chunk 2m'")
    ap.add_argument(
        "--tpc-trace",
        metavar="CSV",
        help="keep xrdcp-wan's per-read trace (--trace) of the last plugin TPC run here (see tpc_trace.py)",
    )
    ap.add_argument(
        "--source-cache",
        choices=["as-is", "cold", "warm"],
        default="as-is",
        help="the source file's pages before each timed run: evicted (cold: read from disk), read in "
        "(warm), or whatever earlier runs left (as-is, the default)",
    )
    ap.add_argument(
        "--plugin-source",
        action="store_true",
        help="the plugin's TPC pulls read from a plugin site at A (ofs.osslib ++ and xrootd.fslib ++: "
        "readahead threads around sendfile) instead of the stock A: site against site",
    )
    ap.add_argument(
        "--source-pacing",
        metavar="RATE",
        help="with --plugin-source: wanio.net.pacing RATE at the source site (bytes/s, e.g. 119m for "
        "1 Gbit/s): Linux paces the connection the pull reads through",
    )
    ap.add_argument(
        "--hystart",
        choices=["on", "off"],
        help="CUBIC's HyStart for the run (kernel-wide, restored afterwards); default: as the machine has it",
    )
    ap.add_argument("--json", help="also write the results as JSON to this file")
    args = ap.parse_args()
    if args.source_pacing and not args.plugin_source:
        ap.error("--source-pacing needs --plugin-source")
    args.ss = args.ss or args.ss_samples is not None
    only = [s for s in args.only.split(",") if s]
    for s in only:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s}")
    h.ensure_built()
    size = args.size_mib * h.MiB
    gb = size / 1e9
    bdp = args.rate_mbit * 1e6 / 8 * args.rtt_ms / 1e3
    # xrdcp-wan sizes its reads in flight itself from --bdp (ceil(BDP / chunk) + 1)
    reads = f"--inflight {args.inflight}" if args.inflight else f"--bdp {int(bdp * args.bdp_factor)}"
    if args.tpc_args:
        reads += f" {args.tpc_args}"
    kinds = [k for k in args.servers.split(",") if k]
    if not kinds or any(k not in ("stock", "plugin") for k in kinds):
        ap.error("--servers takes stock and/or plugin")
    env = h.client_env(
        XRD_CPPARALLELCHUNKS=args.parallel_chunks, XRD_REQUESTTIMEOUT=600, XRD_STREAMTIMEOUT=600
    )
    load0 = os.getloadavg()
    started = datetime.now(UTC)
    rows = []
    with (
        wanpath.tuning.cubic_hystart(None if args.hystart is None else args.hystart == "on"),
        h.scratch_dir("wanio-wanbench-") as scratch,
        wanpath.emulated_path(rtt_ms=args.rtt_ms, rate_mbit=args.rate_mbit, cc=args.cc, mtu=args.mtu) as path,
    ):
        src = h.make_file(scratch / "src.bin", size, seed=9)
        src_adler = h.adler32_file(src)
        a = h.XrootdServer(scratch, "siteA", plugin=False)
        b_stock = h.XrootdServer(scratch, "siteBstock", plugin=False)
        b_wan = h.XrootdServer(
            scratch,
            "siteBwan",
            tpc_program=f"{h.TPC_PROGRAM} --server {reads}"
            + (f" --trace {scratch / 'siteBwan' / 'data' / 'tpc-trace.csv'}" if args.tpc_trace else ""),
            extra=["wanio.trace info"],
        )
        sides = [("a", a), ("b", b_stock), ("b", b_wan)]
        a_wan = a  # the source of the plugin's pulls
        if args.plugin_source:
            pacing = [f"wanio.net.pacing {args.source_pacing}"] if args.source_pacing else []
            a_wan = h.XrootdServer(scratch, "siteAwan", extra=[f"xrootd.fslib ++ {h.PLUGIN_REF}", *pacing])
            sides.append(("a", a_wan))
        servers = [s for _, s in sides]
        try:
            for side, s in sides:
                saved = os.environ.get("XRD_CPPARALLELCHUNKS")
                if s is b_stock and args.stock_tpc_chunks:
                    os.environ["XRD_CPPARALLELCHUNKS"] = str(args.stock_tpc_chunks)
                try:
                    start_in(path, side, s)
                finally:
                    os.environ.pop("XRD_CPPARALLELCHUNKS", None)
                    if saved is not None:
                        os.environ["XRD_CPPARALLELCHUNKS"] = saved
            for s in servers:
                os.link(src, s.data / "src.bin")
                h.chown_tree(s.data)
            down = scratch / "down.bin"

            def do(title, dst):
                if title == "upload":
                    argv = ["xrdcp", "-f", "-s", str(src), url(dst, "up.bin")]
                    run, out = path.run_a, dst.data / "up.bin"
                elif title == "download":
                    argv = ["xrdcp", "-f", "-s", url(dst, "src.bin"), str(down)]
                    run, out = path.run_a, down
                else:
                    source = a_wan if dst is b_wan else a
                    argv = ["xrdcp", "-f", "--tpc", "only", url(source, "src.bin"), url(dst, "tpc.bin")]
                    run, out = path.run_b, dst.data / "tpc.bin"
                r = run(argv, env=env, capture_output=True, timeout=3600)
                if r.returncode != 0:
                    raise SystemExit(f"{title} to {dst.name} failed: {r.stderr}")
                return out

            for title in only:
                direction = "ba" if title == "download" else "ab"
                res = {}
                for kind, dst in (("stock", b_stock), ("plugin", b_wan)):
                    if kind not in kinds:
                        continue
                    rates, cpus, drops, blocked, tcp = [], [], [], [], []
                    for _ in range(args.reps):
                        off = len(dst.log())
                        set_source_cache(src, args.source_cache)
                        d0, c0, t0 = emu_drops(path, direction), cpu(dst), time.monotonic()
                        w0 = time.time()
                        # The sender: end A for uploads and TPC pulls (A is the source), end B otherwise.
                        sampler = ss_sampler.SsSampler(path, "b" if title == "download" else "a")
                        if args.ss:
                            with sampler:
                                out = do(title, dst)
                        else:
                            out = do(title, dst)
                        dt = time.monotonic() - t0
                        if args.ss:
                            tcp.append(ss_sampler.summarise(sampler.samples, args.rate_mbit))
                            if args.ss_samples:
                                ss_sampler.save(sampler.samples, args.ss_samples, f"{title}-{kind}")
                        cpus.append((cpu(dst) - c0) / gb)
                        drops.append(emu_drops(path, direction) - d0)
                        rates.append(size / dt / 1e6)
                        if title != "download":
                            blocked.append(blocked_ms(dst, out.name, off) / 1e3 / gb)
                        trace = dst.data / "tpc-trace.csv"
                        if args.tpc_trace and trace.exists():
                            # The program's phases are in its own clock; the client's span
                            # (wall clock) places them within the whole TPC.
                            shutil.copy(trace, args.tpc_trace)
                            shutil.copy(f"{trace}.phases", f"{args.tpc_trace}.phases")
                            Path(f"{args.tpc_trace}.client").write_text(
                                f"client_start_unix,client_end_unix\n{w0:.6f},{w0 + dt:.6f}\n"
                            )
                        if h.adler32_file(out) != src_adler:
                            raise SystemExit(f"{title} to {dst.name}: adler32 mismatch")
                        out.unlink()
                    r = {
                        "mb_s": statistics.median(rates),
                        "rates": [round(x, 1) for x in rates],
                        "fraction_of_bottleneck": statistics.median(rates) * 8 / args.rate_mbit,
                        "cpu_s_per_gb": statistics.median(cpus),
                        "emu_drops": statistics.median(drops),
                        "plugin_blocked_s_per_gb": statistics.median(blocked) if blocked else None,
                    }
                    if tcp:
                        r["tcp"] = tcp
                    if not args.no_strace:
                        outs = []

                        def traced(title=title, dst=dst, outs=outs):
                            set_source_cache(src, args.source_cache)
                            outs.append(do(title, dst))

                        stats = strace_stats.trace(
                            dst.proc.pid, traced, scratch / f"strace-{title}-{kind}.txt"
                        )
                        outs[0].unlink()
                        way = "send" if title == "download" else "recv"
                        r.update(
                            syscalls_per_gb=stats.calls / gb,
                            socket_threads=len(stats.socket_threads(way)),
                            sock_disk_write_s_per_gb=stats.socket_thread_seconds(way, "disk_write") / gb,
                            sock_disk_read_s_per_gb=stats.socket_thread_seconds(way, "disk_read") / gb,
                            sock_send_s_per_gb=stats.socket_thread_seconds(way, "sock_send") / gb,
                            all_disk_write_s_per_gb=stats.all_seconds("disk_write") / gb,
                        )
                    res[kind] = r
                    print(f"{title:9s} {kind:6s} {json.dumps(r)}", file=sys.stderr, flush=True)
                rows.append((title, res))
        finally:
            for s in servers:
                s.stop()
    load1 = os.getloadavg()
    header = (
        f"Date: {started:%Y-%m-%d %H:%M}-{datetime.now(UTC):%H:%M} UTC; machine {platform.node()}, "
        f"{os.cpu_count()} CPUs, kernel {platform.release()}; load average {load0[0]:.1f} -> "
        f"{load1[0]:.1f}; emulated path RTT {args.rtt_ms:g} ms, {args.rate_mbit:g} Mbit/s, {args.cc}, "
        f"MTU {args.mtu} "
        f"(bench/wan, tuning dtn, buffer 1 BDP = {bdp / 1e6:.1f} MB); file {args.size_mib} MiB; "
        f"median of {args.reps}; XRD_CPPARALLELCHUNKS={args.parallel_chunks}; "
        f"xrdcp-wan {reads}; stock TPC XRD_CPPARALLELCHUNKS={args.stock_tpc_chunks or 4}; "
        f"source cache {args.source_cache}; "
        f"plugin TPC source {'plugin site' if args.plugin_source else 'stock'}"
        f"{f' paced at {args.source_pacing}B/s' if args.source_pacing else ''}; "
        f"hystart {args.hystart or wanpath.tuning.HYSTART.read_text().strip()}"
    )
    print(header + "\n")
    print(
        "| Scenario | Stock MB/s | Plugin MB/s | Throughput ratio | of bottleneck stock/plugin "
        "| Stock CPU s/GB | Plugin CPU s/GB | CPU ratio | Stock syscalls/GB | Plugin syscalls/GB "
        "| Syscall ratio | Socket thread blocked s/GB stock | plugin | plugin backpressure s/GB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def fmt(v, spec=".0f"):
        return "n/a" if v is None else format(v, spec)

    def ratio(a, b):
        return "n/a" if a is None or b is None or not a else f"{b / a:.2f}"

    for title, r in rows:
        # With --servers one of the two is missing: its cells read n/a.
        s, p = r.get("stock", {}), r.get("plugin", {})
        key = "sock_send_s_per_gb" if title == "download" else "sock_disk_write_s_per_gb"
        print(
            f"| {title} | {fmt(s.get('mb_s'), '.1f')} | {fmt(p.get('mb_s'), '.1f')} "
            f"| {ratio(s.get('mb_s'), p.get('mb_s'))} "
            f"| {fmt(s.get('fraction_of_bottleneck'), '.3f')} "
            f"/ {fmt(p.get('fraction_of_bottleneck'), '.3f')} "
            f"| {fmt(s.get('cpu_s_per_gb'), '.2f')} | {fmt(p.get('cpu_s_per_gb'), '.2f')} "
            f"| {ratio(s.get('cpu_s_per_gb'), p.get('cpu_s_per_gb'))} "
            f"| {fmt(s.get('syscalls_per_gb'))} | {fmt(p.get('syscalls_per_gb'))} "
            f"| {ratio(s.get('syscalls_per_gb'), p.get('syscalls_per_gb'))} "
            f"| {fmt(s.get(key), '.3f')} | {fmt(p.get(key), '.3f')} "
            f"| {fmt(p.get('plugin_blocked_s_per_gb'), '.3f')} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "argv": sys.argv, "rows": dict(rows)}, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Transfer benchmark matrix over emulated WAN paths.

For every (RTT, rate) cell: bring up a tuned path, put an XRootD site (root://
and http://) on each side, then run iperf3 (the network ceiling) and the
transfer tools on the same path, one after another.  Writes one JSON file
(schema in docs/wan-emulator.md) and prints a Markdown table.

    python3 bench/wan/matrix.py --rtt 7.5,56,300 --rate 1000 \\
        --tools iperf3,xrdcp-up,xrdcp-down,xrd-tpc,gfal-copy,davix-put \\
        --sizes 100M,1G --batch 8x100M --out bench/wan/results/matrix.json

Many-file batches run consecutively (one xrdcp per file, one after the other),
simultaneously (one xrdcp per file, all at once) and recursively (one
``xrdcp -r`` of the directory), as in the AENEAS tables.  ``--plugin off,on``
runs every file cell against stock sites and against sites with the project's
wanio plugin (bench/wan/xrdsite.py ``plugin=True``), back to back on the same path.
The sites enforce WLCG tokens of the local network's issuer (bench/wan/wantokens.py)
and every tool carries the tokens its copy needs, asked for before its clock starts
(root:// in the URL, davix in the Authorization header); ``--tokens on,off`` runs
each file cell against sites without tokens too, for what the tokens cost.

Throughput is TCP payload (file bytes) per wall-clock second of the whole
transfer including connection set-up, as a fraction of the emulated
bottleneck (IP-layer rate).  Root required.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wanpath
from xrdsite import GFAL_ENV, XRD_ENV, XrootdSite

SCHEMA = "srcnet.wan-matrix/1"
TOOLS = ("iperf3", "xrdcp-up", "xrdcp-down", "xrd-tpc", "gfal-copy", "davix-put", "davix-get")
CLK = os.sysconf("SC_CLK_TCK")
_SUMS: dict[str, str] = {}  # source file -> adler32


# -- measurement helpers -----------------------------------------------------


def proc_cpu_s(pid: int) -> float:
    """user+sys CPU seconds of a process and its reaped children."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # after the command name: state=0 ... utime=11 stime=12 cutime=13 cstime=14
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLK


def nstat_retrans(path) -> int:
    """TcpRetransSegs summed over both end-host namespaces."""
    total = 0
    for side in ("a", "b"):
        out = subprocess.run(
            path.cmd(side, ["nstat", "-az", "--json", "TcpRetransSegs"]),
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        total += json.loads(out)["kernel"].get("TcpRetransSegs", 0)
    return total


def tun_tx_dropped(path) -> int:
    """Packets the kernel dropped in front of the emulator (TUN queue full):
    drops outside the model, must stay 0 for a faithful run."""
    out = subprocess.run(
        path.cmd("r", ["ip", "-s", "-j", "link", "show", "type", "tun"]),
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout
    return sum(d["stats64"]["tx"]["dropped"] for d in json.loads(out or "[]"))


def fidelity(st0, st1, direction, tun0, tun1) -> dict:
    """Emulator-side fidelity figures for the data direction of one cell."""
    d = {
        k: st1[direction][k] - st0[direction][k]
        for k in ("tx_pkts", "late_gt1ms", "late_gt10ms", "drop_queue", "drop_loss", "drop_ring")
    }
    return {
        "emulator_drops": d["drop_queue"] + d["drop_loss"],
        "late_gt1ms": d["late_gt1ms"],
        "late_gt10ms": d["late_gt10ms"],
        "late_frac": round(d["late_gt1ms"] / d["tx_pkts"], 5) if d["tx_pkts"] else None,
        "drop_ring": d["drop_ring"],
        "tun_tx_dropped": tun1 - tun0,
    }


class Sampler(threading.Thread):
    """Samples the emulator's delivered bytes every 0.2 s (both directions)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.samples, self.stop_ev = path, [], threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                s = self.path.stats(fresh=False)
                # the emulator's own CLOCK_MONOTONIC stamp (same clock as
                # time.monotonic()), not when we happened to read the file
                self.samples.append((s["mono_ns"] / 1e9, s["ab"]["tx_bytes"], s["ba"]["tx_bytes"]))
            except (OSError, ValueError, KeyError):
                pass
            self.stop_ev.wait(0.2)

    def finish(self):
        self.stop_ev.set()
        self.join()


def plateau(samples, t0: float, direction: str) -> tuple[float | None, float | None]:
    """(seconds from t0 until the 1 s rate first reaches 90 % of its peak,
    peak 1 s rate in Mbit/s) for the data direction, from emulator counters."""
    col = 1 if direction == "ab" else 2
    pts = sorted({(x[0], x[col]) for x in samples if x[0] >= t0 - 0.2})
    rates = []
    j = 0
    for i, (t, b) in enumerate(pts):
        while j < i and pts[j][0] < t - 1.0:
            j += 1
        if j < i and t - pts[j][0] >= 0.8:
            rates.append((t, (b - pts[j][1]) * 8 / (t - pts[j][0]) / 1e6))
    if not rates:
        return None, None
    peak = max(r for _, r in rates)
    for t, r in rates:
        if r >= 0.9 * peak:
            return round(t - t0, 2), round(peak, 1)
    return None, round(peak, 1)


def run_timed(argv, env=None, timeout=600):
    """Run argv, return (rc, wall seconds, child CPU seconds, stderr tail)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    err = []
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
    reader.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    reader.join(5)
    wall = time.monotonic() - t0
    tail = _without_tokens((err[0] if err else b"").decode(errors="replace"))[-400:]
    return p.returncode, wall, ru.ru_utime + ru.ru_stime, tail


def _without_tokens(text: str) -> str:
    """``text`` with any token it quotes (a tool's error may quote its URL) replaced by a marker."""
    wantokens = sys.modules.get("wantokens")
    return wantokens.redact(text) if wantokens is not None else text


def adler32_file(name: str) -> str:
    v = 1
    with open(name, "rb") as f:
        while chunk := f.read(1 << 22):
            v = zlib.adler32(chunk, v)
    return f"{v:08x}"


def parse_size(s: str) -> int:
    mult = {"K": 1e3, "M": 1e6, "G": 1e9}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


# -- one path --------------------------------------------------------------------


class Cell:
    """Runs the tools on one live path with two XRootD sites."""

    def __init__(self, path, sites, srcdir, args):
        # sites: {(plugin, tokens): (site_a, site_b)}, each "on" or "off"
        self.path, self.sites, self.srcdir, self.args = path, sites, srcdir, args
        self.results = []
        self.ceiling = None
        # Idle RTT as the end hosts see it, measured once per path.
        self.rtt_measured = round(wanpath.measure_rtt(path, count=20)["median_ms"], 3)

    def base(self, tool, **kw):
        c = self.path.config
        d = dict(
            rtt_ms=c.rtt_ms,
            rate_mbit=c.rate_mbit,
            loss=c.loss,
            mtu=c.mtu,
            tuning=c.tuning,
            cc=c.cc,
            queue_bytes=c.queue(),
            overhead_ms=c.overhead_ms,
            rtt_measured_ms=self.rtt_measured,
            tool=tool,
        )
        d.update(kw)
        return d

    def record(self, r):
        mbit = r.get("throughput_mbit")
        if mbit is not None:
            r["fraction_of_bottleneck"] = round(mbit / self.path.config.rate_mbit, 4)
            if self.ceiling:
                r["ratio_to_iperf3"] = round(mbit / self.ceiling, 4)
        self.results.append(r)
        print(json.dumps(r), flush=True)

    def measure(self, tool, argv_list, direction, nbytes, env, cpu_server_pids, **kw):
        """Run one or several commands (simultaneously if several), measure."""
        em = self.path.emulator_pid
        cpu0 = {pid: proc_cpu_s(pid) for pid in (*cpu_server_pids, em)}
        rtx0, st0, tun0 = nstat_retrans(self.path), self.path.stats(), tun_tx_dropped(self.path)
        sampler = Sampler(self.path)
        sampler.start()
        t0 = time.monotonic()
        if len(argv_list) == 1 or kw.get("mode") == "consecutive":
            outs = [run_timed(a, env) for a in argv_list]
        else:
            outs = [None] * len(argv_list)

            def go(i, a):
                outs[i] = run_timed(a, env)

            th = [threading.Thread(target=go, args=(i, a)) for i, a in enumerate(argv_list)]
            for t in th:
                t.start()
            for t in th:
                t.join()
        wall = time.monotonic() - t0
        sampler.finish()
        st1, rtx1, tun1 = self.path.stats(), nstat_retrans(self.path), tun_tx_dropped(self.path)
        cpu1 = {pid: proc_cpu_s(pid) for pid in cpu0}
        gb = nbytes / 1e9
        ok = all(o[0] == 0 for o in outs)
        pl, peak = plateau(sampler.samples, t0, direction)
        r = self.base(
            tool,
            direction=direction.replace("ab", "a->b").replace("ba", "b->a"),
            bytes=nbytes,
            seconds=round(wall, 3),
            throughput_mbit=round(nbytes * 8 / wall / 1e6, 1) if ok else None,
            plateau_s=pl,
            peak_1s_mbit=peak,
            retransmits=rtx1 - rtx0,
            **fidelity(st0, st1, direction, tun0, tun1),
            cpu_s_per_gb={
                "client": round(sum(o[2] for o in outs) / gb, 3),
                "server": round(sum(cpu1[p] - cpu0[p] for p in cpu_server_pids) / gb, 3),
                "emulator": round((cpu1[em] - cpu0[em]) / gb, 3),
            },
            ok=ok,
            error=None if ok else next(o[3] for o in outs if o[0] != 0),
            **kw,
        )
        return r

    # -- tools -----------------------------------------------------------------
    def iperf3(self, seconds):
        srv = self.path.popen_b(
            ["iperf3", "-s", "-J", "-p", "5301"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            time.sleep(0.5)
            rtx0, st0, tun0 = nstat_retrans(self.path), self.path.stats(), tun_tx_dropped(self.path)
            sampler = Sampler(self.path)
            sampler.start()
            t0 = time.monotonic()
            em0 = proc_cpu_s(self.path.emulator_pid)
            cpu_srv0 = proc_cpu_s(srv.pid)
            out = self.path.run_a(
                [
                    "iperf3",
                    "-c",
                    self.path.ip_b,
                    "-p",
                    "5301",
                    "-t",
                    str(seconds),
                    "-J",
                    "--get-server-output",
                ],
                capture_output=True,
                text=True,
                timeout=seconds + 60,
            )
            sampler.finish()
            em1, cpu_srv1 = proc_cpu_s(self.path.emulator_pid), proc_cpu_s(srv.pid)
            rtx1, st1, tun1 = nstat_retrans(self.path), self.path.stats(), tun_tx_dropped(self.path)
        finally:
            srv.kill()
            srv.wait()
        j = json.loads(out.stdout)
        if "error" in j:
            self.record(self.base("iperf3", ok=False, error=j["error"]))
            return
        recv = j["end"]["sum_received"]
        gb = recv["bytes"] / 1e9
        # Receiver-side intervals: the client's count bytes written into a
        # socket buffer of up to 1 GiB, not bytes delivered.
        ivals = [i["sum"] for i in j["server_output_json"]["intervals"]]
        pl, peak = plateau(sampler.samples, t0, "ab")
        # Steady state: the last 5 s of the run.
        last = [i for i in ivals if i["start"] >= ivals[-1]["end"] - 5.0 - 1e-6]
        steady = sum(i["bytes"] for i in last) * 8 / sum(i["seconds"] for i in last) / 1e6
        mbit = recv["bits_per_second"] / 1e6
        self.ceiling = steady
        self.record(
            self.base(
                "iperf3",
                direction="a->b",
                bytes=recv["bytes"],
                seconds=recv["seconds"],
                throughput_mbit=round(mbit, 1),
                steady_mbit=round(steady, 1),
                plateau_s=pl,
                peak_1s_mbit=peak,
                retransmits=rtx1 - rtx0,
                **fidelity(st0, st1, "ab", tun0, tun1),
                cpu_s_per_gb={
                    "client": round(
                        j["end"]["cpu_utilization_percent"]["host_total"] / 100 * recv["seconds"] / gb, 3
                    ),
                    "server": round((cpu_srv1 - cpu_srv0) / gb, 3),
                    "emulator": round((em1 - em0) / gb, 3),
                },
                ok=True,
                error=None,
                mode="single",
                files=1,
            )
        )

    def file_tool(self, tool, size, nfiles=1, mode="single", plugin="off", tokens="on"):
        src = [self.src_file(size, i) for i in range(nfiles)]
        p, (sa, sb) = self.path, self.sites[plugin, tokens]
        tag = f"{tool}-{size}-{mode}-{plugin}-{tokens}"
        if mode == "recursive":
            return self.recursive(tool, size, nfiles, src, tag, plugin, tokens)
        if tool == "xrdcp-up":
            argvs = [p.cmd("a", ["xrdcp", "-f", s, sb.write_url(f"{tag}-{i}")]) for i, s in enumerate(src)]
            direction, srv, env = "ab", [sb.proc.pid], XRD_ENV
            dst = [sb.local_path(f"{tag}-{i}") for i in range(nfiles)]
        elif tool == "xrdcp-down":
            for i, s in enumerate(src):  # stage on the far side first
                shutil.copyfile(s, sb.local_path(f"{tag}-{i}"))
                shutil.chown(sb.local_path(f"{tag}-{i}"), "xrootd", "xrootd")
            dst = [os.path.join(self.srcdir, f"dl-{tag}-{i}") for i in range(nfiles)]
            argvs = [p.cmd("a", ["xrdcp", "-f", sb.read_url(f"{tag}-{i}"), d]) for i, d in enumerate(dst)]
            direction, srv, env = "ba", [sb.proc.pid], XRD_ENV
        elif tool == "xrd-tpc":
            for i, s in enumerate(src):
                shutil.copyfile(s, sb.local_path(f"{tag}-{i}"))
                shutil.chown(sb.local_path(f"{tag}-{i}"), "xrootd", "xrootd")
            # destination site A pulls from source site B across the path
            argvs = [
                p.cmd(
                    "a",
                    ["xrdcp", "-f", "--tpc", "only", sb.read_url(f"{tag}-{i}"), sa.write_url(f"{tag}-{i}")],
                )
                for i in range(nfiles)
            ]
            direction, srv, env = "ba", [sa.proc.pid, sb.proc.pid], XRD_ENV
            dst = [sa.local_path(f"{tag}-{i}") for i in range(nfiles)]
        elif tool == "gfal-copy":
            argvs = [
                p.cmd("a", ["gfal-copy", "-f", "file://" + s, sb.write_url(f"{tag}-{i}")])
                for i, s in enumerate(src)
            ]
            direction, srv, env = "ab", [sb.proc.pid], GFAL_ENV
            dst = [sb.local_path(f"{tag}-{i}") for i in range(nfiles)]
        elif tool == "davix-put":
            argvs = [
                p.cmd("a", ["davix-put", *sb.bearer(f"{tag}-{i}", "write"), s, sb.http_url(f"{tag}-{i}")])
                for i, s in enumerate(src)
            ]
            direction, srv, env = "ab", [sb.proc.pid], XRD_ENV
            dst = [sb.local_path(f"{tag}-{i}") for i in range(nfiles)]
        elif tool == "davix-get":
            for i, s in enumerate(src):
                shutil.copyfile(s, sb.local_path(f"{tag}-{i}"))
                shutil.chown(sb.local_path(f"{tag}-{i}"), "xrootd", "xrootd")
            dst = [os.path.join(self.srcdir, f"dl-{tag}-{i}") for i in range(nfiles)]
            argvs = [
                p.cmd("a", ["davix-get", *sb.bearer(f"{tag}-{i}", "read"), sb.http_url(f"{tag}-{i}"), d])
                for i, d in enumerate(dst)
            ]
            direction, srv, env = "ba", [sb.proc.pid], XRD_ENV
        else:
            raise ValueError(tool)
        subprocess.run(["sync"], timeout=120)  # staged copies must not flush mid-run
        r = self.measure(
            tool,
            argvs,
            direction,
            size * nfiles,
            env,
            srv,
            mode=mode,
            files=nfiles,
            file_bytes=size,
            plugin=plugin,
            tokens=tokens,
        )
        self.verify_and_clean(r, src, dst, [sb.local_path(f"{tag}-{i}") for i in range(nfiles)])

    def recursive(self, tool, size, nfiles, src, tag, plugin, tokens):
        """One `xrdcp -r` of a directory holding the batch's files, between sites without tokens (main says
        why)."""
        p, (sa, sb) = self.path, self.sites[plugin, tokens]
        names = [f"{tag}-{i}" for i in range(nfiles)]
        top = f"dir-{tag}"  # the directory copied; xrdcp -r recreates it inside the target
        cleanup = []
        if tool == "xrdcp-up":
            local = os.path.join(self.srcdir, top)
            os.makedirs(local)
            for s, n in zip(src, names, strict=True):
                os.link(s, os.path.join(local, n))  # same inode: same page cache
            target = sb.local_path(f"to-{tag}")
            self._mkdir_xrootd(target)
            argv = p.cmd("a", ["xrdcp", "-r", "-f", local, sb.root_url(f"to-{tag}") + "/"])
            direction, srv = "ab", [sb.proc.pid]
            dst = [os.path.join(target, top, n) for n in names]
            cleanup = [local, target]
        elif tool in ("xrdcp-down", "xrd-tpc"):
            remote = sb.local_path(top)
            self._mkdir_xrootd(remote)
            for s, n in zip(src, names, strict=True):
                shutil.copyfile(s, os.path.join(remote, n))
                shutil.chown(os.path.join(remote, n), "xrootd", "xrootd")
            if tool == "xrdcp-down":
                target = os.path.join(self.srcdir, f"to-{tag}")
                os.makedirs(target)
                argv = p.cmd("a", ["xrdcp", "-r", "-f", sb.root_url(top), target])
                direction, srv = "ba", [sb.proc.pid]
            else:
                target = sa.local_path(f"to-{tag}")
                self._mkdir_xrootd(target)
                argv = p.cmd(
                    "a",
                    ["xrdcp", "-r", "-f", "--tpc", "only", sb.root_url(top), sa.root_url(f"to-{tag}") + "/"],
                )
                direction, srv = "ba", [sa.proc.pid, sb.proc.pid]
            dst = [os.path.join(target, top, n) for n in names]
            cleanup = [remote, target]
        else:
            raise ValueError(f"recursive mode is implemented for xrdcp-up, xrdcp-down, xrd-tpc, not {tool}")
        subprocess.run(["sync"], timeout=120)
        r = self.measure(
            tool,
            [argv],
            direction,
            size * nfiles,
            XRD_ENV,
            srv,
            mode="recursive",
            files=nfiles,
            file_bytes=size,
            plugin=plugin,
            tokens=tokens,
        )
        self.verify_and_clean(r, src, dst, [])
        for d in cleanup:
            shutil.rmtree(d, ignore_errors=True)

    @staticmethod
    def _mkdir_xrootd(path):
        os.makedirs(path)
        shutil.chown(path, "xrootd", "xrootd")

    def verify_and_clean(self, r, src, dst, staged):
        if r["ok"]:
            r["adler32_ok"] = all(
                os.path.exists(d) and adler32_file(d) == _SUMS[s] for s, d in zip(src, dst, strict=True)
            )
            if not r["adler32_ok"]:
                r["ok"] = False
                r["throughput_mbit"] = None
        for d in [*dst, *staged]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(d)  # keep disk use to one cell's files
        self.record(r)

    def src_file(self, size, i):
        name = os.path.join(self.srcdir, f"src-{size}-{i}.bin")
        if name not in _SUMS:
            with open(name, "wb") as f:
                left = size
                block = os.urandom(1 << 22)
                n = 0
                while left > 0:
                    # vary each block so nothing downstream can dedupe/compress
                    chunk = (n.to_bytes(8, "big") + block[8:])[:left]
                    f.write(chunk)
                    left -= len(chunk)
                    n += 1
            _SUMS[name] = adler32_file(name)
        return name


# -- driver ------------------------------------------------------------------------


def machine() -> dict:
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    try:
        with open("/proc/cpuinfo") as f:
            model = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor()
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "mem_gib": round(mem_kb / 2**20, 1),
        "os": platform.freedesktop_os_release().get("PRETTY_NAME", ""),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtt", default="7.5,56,300", help="comma list, ms")
    ap.add_argument("--rate", default="1000", help="comma list, Mbit/s (bottleneck)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--sizes", default="100M,1G", help="single-file sizes")
    ap.add_argument("--batch", default="8x100M", help="NxSIZE many-file batch ('' = none)")
    ap.add_argument("--batch-tool", default="xrdcp-up", help="comma list of tools for the batch")
    ap.add_argument(
        "--batch-modes",
        default="consecutive,simultaneous",
        help="and recursive (xrdcp -r), with --tokens off",
    )
    ap.add_argument("--plugin", default="off", help="comma list: off (stock sites), on (wanio plugin)")
    ap.add_argument(
        "--tokens",
        default="on",
        help="comma list: on (sites enforce the local issuer's tokens, copies carry them), off (sites "
        "enforce none: the baseline of what tokens cost)",
    )
    ap.add_argument(
        "--plugin-bdp-factor",
        type=float,
        default=1.0,
        help="xrdcp-wan reads in flight on plugin sites, as a multiple of the path's BDP",
    )
    ap.add_argument("--iperf-seconds", type=int, default=20)
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--tuning", default="dtn", choices=wanpath.tuning.PROFILES)
    ap.add_argument("--out", help="results JSON to write")
    ap.add_argument("--table", metavar="JSON", help="only print the Markdown table of a results file")
    a = ap.parse_args(argv)
    if a.table:
        with open(a.table) as f:
            print(table(json.load(f)))
        return 0
    if not a.out:
        ap.error("--out is required")

    rtts = [float(x) for x in a.rtt.split(",")]
    rates = [float(x) for x in a.rate.split(",")]
    tools = [t for t in a.tools.split(",") if t]
    for t in tools:
        if t not in TOOLS:
            ap.error(f"unknown tool {t}")
    sizes = [parse_size(s) for s in a.sizes.split(",") if s]
    plugins = [x for x in a.plugin.split(",") if x]
    if not plugins or any(x not in ("off", "on") for x in plugins):
        ap.error("--plugin takes off, on or off,on")
    token_modes = [x for x in a.tokens.split(",") if x]
    if not token_modes or any(x not in ("off", "on") for x in token_modes):
        ap.error("--tokens takes on, off or on,off")
    modes = [m for m in a.batch_modes.split(",") if m]
    if any(m not in ("consecutive", "simultaneous", "recursive") for m in modes):
        ap.error("--batch-modes: consecutive, simultaneous, recursive")
    if "recursive" in modes and token_modes != ["off"]:
        # Seen with XRootD 5.5: xrdcp -r stats and lists a folder without the URL's opaque part or its
        # -OS/-OD options, so a token-enforcing site refuses the copy before any file; a token on the
        # connection (ztn) would need root:// over TLS, which these sites do not have.
        ap.error(
            "--batch-modes recursive needs --tokens off: xrdcp -r cannot give the folder it lists a token"
        )
    batch = None
    if a.batch:
        n, s = a.batch.lower().split("x")
        batch = (int(n), parse_size(s))

    doc = {
        "schema": SCHEMA,
        "generated": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python3", "bench/wan/matrix.py", *(argv or sys.argv[1:])]),
        "machine": machine(),
        # the 2 vCPUs are shared: record how busy the box was
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "cells": [],
    }
    issuer = None
    if "on" in token_modes:
        import wantokens

        issuer = wantokens.WanIssuer.of_state()
    srcdir = tempfile.mkdtemp(prefix="srcnet-wan-matrix-")
    os.chmod(srcdir, 0o755)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    try:
        for rtt in rtts:
            for rate in rates:
                with (
                    wanpath.emulated_path(
                        rtt_ms=rtt, rate_mbit=rate, loss=a.loss, cc=a.cc, tuning=a.tuning
                    ) as path,
                    contextlib.ExitStack() as stack,
                ):
                    bdp = int(path.config.bdp_bytes() * a.plugin_bdp_factor)
                    sites = {}
                    kinds = [(plugin, tokens) for plugin in plugins for tokens in token_modes]
                    for k, (plugin, tokens) in enumerate(kinds):
                        # each kind of site side by side: ports 1094/8080, 1095/8081, ...
                        kw = dict(
                            port=1094 + k,
                            http_port=8080 + k,
                            plugin=plugin == "on",
                            tpc_bdp_bytes=bdp,
                            tokens=issuer if tokens == "on" else None,
                        )
                        sites[plugin, tokens] = (
                            stack.enter_context(XrootdSite(path, "a", **kw)),
                            stack.enter_context(XrootdSite(path, "b", **kw)),
                        )
                    cell = Cell(path, sites, srcdir, a)
                    if "iperf3" in tools:
                        cell.iperf3(a.iperf_seconds)
                    for tool in tools:
                        if tool == "iperf3":
                            continue
                        for size in sizes:
                            for plugin, tokens in kinds:
                                cell.file_tool(tool, size, plugin=plugin, tokens=tokens)
                    if batch:
                        for btool in a.batch_tool.split(","):
                            for mode in modes:
                                for plugin, tokens in kinds:
                                    cell.file_tool(btool, batch[1], batch[0], mode, plugin, tokens)
                    doc["cells"].extend(cell.results)
                # write after every path so a partial run still leaves data
                doc["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
                with open(a.out, "w") as f:
                    json.dump(doc, f, indent=1)
    finally:
        shutil.rmtree(srcdir, ignore_errors=True)
    print(table(doc))
    return 0


def table(doc) -> str:
    rows = [
        "| RTT ms | rate Mbit/s | tool | plugin | tokens | mode | size | files | Mbit/s | of bottleneck "
        "| vs iperf3 | plateau s | retrans / emu drops | emu late>1ms | CPU s/GB client/server/emu |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in doc["cells"]:
        cpu = c.get("cpu_s_per_gb") or {}
        size = c.get("file_bytes")
        late = c.get("late_frac")
        rows.append(
            "| {} | {:g} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} |".format(
                c["rtt_ms"],
                c["rate_mbit"],
                c["tool"],
                c.get("plugin", "off") if c["tool"] != "iperf3" else "-",
                # results from before the sites enforced tokens have no such field: they had none
                c.get("tokens", "off") if c["tool"] != "iperf3" else "-",
                c.get("mode", ""),
                f"{size / 1e6:g} MB" if size else f"{c.get('seconds', 0):.0f} s",
                c.get("files", 1),
                c.get("throughput_mbit") if c.get("ok") else "FAILED",
                f"{c['fraction_of_bottleneck']:.3f}" if c.get("fraction_of_bottleneck") else "",
                f"{c['ratio_to_iperf3']:.3f}" if c.get("ratio_to_iperf3") else "",
                c.get("plateau_s", "") if c.get("plateau_s") is not None else "-",
                c.get("retransmits", ""),
                c.get("emulator_drops", "-"),
                f"{late * 100:.1f} %" if late is not None else "-",
                "/".join(str(cpu.get(k, "")) for k in ("client", "server", "emulator")),
            )
        )
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())

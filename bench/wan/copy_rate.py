#!/usr/bin/env python3
"""What one large copy gets on a long fast path, as the platform deploys and runs it, against one iperf3 flow
over the same bytes on the same path in the same run (issue 32, item 1).

    .venv/bin/python bench/wan/copy_rate.py [--rtt-ms 300,150,56] [--rate-mbit 10000] [--size-gib 16]
        [--protocols root,davs] [--reps 1] [--streams N] [--cc bbr] [--tokens on] [--out FILE]

The two sites of copy_rtts.py (localnet's XRootD sites in their deployed configuration: the project's
plugin, HTTPS with the local CA, HTTP third-party copy, tokens of the state's issuer, the source's
connections paced at the path's rate, root:// pulls sized from it) at the two ends of an emulated path
(bench/wan/wanpath.py) with the end hosts' TCP settings of the dtn_tuning role (buffers from the path's BDP,
the role's congestion control). The file is random bytes on disk (not tmpfs), in the source's page cache as
a product just written would be; the copy writes it to disk at the destination and both checksums are
verified (the worker's copy: ``transfers.executor.copy_with_tokens`` in the destination's namespace,
bench/wan/worker_copy.py).

For each RTT and repetition: one iperf3 flow of the file's size from A to B (``-n``), then each protocol's
copy. Each is timed from the moment it is started to the moment it ends (iperf3's set-up and its closing
exchange, the copy's round trips before its first byte and its checksums after the last). Reported: the
rates, the copy's ratio to the iperf3 flow of the same repetition, the CPU seconds the emulator and each
site's server (with the pull programs it started) used in each, and how busy the whole machine was.

Runs on a state of its own (its PostgreSQL, Redis and issuer), as root (network namespaces)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import copy_rtts  # noqa: E402
import wanpath  # noqa: E402
from matrix import proc_cpu_s  # noqa: E402

sys.path.insert(0, str(ROOT / "bench" / "xrootd_plugin"))
import ss_sampler  # noqa: E402

SOURCE_ENDPOINT, DESTINATION_ENDPOINT = copy_rtts.SOURCE_ENDPOINT, copy_rtts.DESTINATION_ENDPOINT
PREFIX = copy_rtts.PREFIX
IPERF_PORT = 5311
GIB = 1 << 30


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (all CPUs: user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def emulator_counts(path: Any) -> dict[str, int]:
    """The emulator's A-to-B counters that say whether it was faithful: packets dropped at its queue (or its
    ring) and packets sent more than 10 ms late."""
    ab = path.stats()["ab"]
    return {"dropped": ab["drop_queue"] + ab["drop_ring"], "late_over_10ms": ab["late_gt10ms"]}


def counted_since(before: dict[str, int], path: Any) -> dict[str, int]:
    after = emulator_counts(path)
    return {f"emulator_{key}": after[key] - before[key] for key in after}


class CpuCount:
    """CPU seconds each process of a copy used (the emulator, each site's server with the pull programs it
    started and reaped) and the whole machine, between start and stop."""

    def __init__(self, processes: dict[str, int]) -> None:
        self.processes = processes
        self.before = {name: proc_cpu_s(pid) for name, pid in processes.items()}
        self.machine = machine_busy_s()
        self.started = time.monotonic()

    def stop(self) -> dict[str, float]:
        used = {
            f"{name}_cpu_s": round(proc_cpu_s(pid) - self.before[name], 2)
            for name, pid in self.processes.items()
        }
        seconds = time.monotonic() - self.started
        used["machine_busy_cpus"] = round((machine_busy_s() - self.machine) / seconds, 2)
        return used


def iperf3_flow(path: Any, size: int, timeout: float) -> dict[str, Any]:
    """One iperf3 flow of ``size`` bytes from A to B, timed as a copy is: from its start to its end."""
    server = path.popen_b(
        ["iperf3", "-s", "-1", "-B", path.ip_b, "-p", str(IPERF_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        emulated = emulator_counts(path)
        cpu = CpuCount({"emulator": path.emulator_pid})
        started = time.monotonic()
        with ss_sampler.SsSampler(path, "a") as sender:
            done = path.run_a(
                ["iperf3", "-c", path.ip_b, "-p", str(IPERF_PORT), "-n", str(size), "-J"],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        seconds = time.monotonic() - started
        used = cpu.stop() | counted_since(emulated, path)
    finally:
        server.wait(timeout=30)
    report = json.loads(done.stdout)
    if "error" in report:
        raise SystemExit(f"iperf3 failed: {report['error']}")
    received = report["end"]["sum_received"]
    return {
        "bytes": size,
        "seconds": round(seconds, 3),
        "gbit_s": round(size * 8 / seconds / 1e9, 3),
        # iperf3's own figure: bytes the receiver got over its own clock (no set-up, no closing exchange)
        "receiver_gbit_s": round(received["bits_per_second"] / 1e9, 3),
        "retransmits": report["end"]["sum_sent"].get("retransmits"),
        **used,
        "sender": ss_sampler.summarise(sender.samples, path.config.rate_mbit),
    }


def worker_copy(
    state: Any,
    path: Any,
    source: str,
    destination: str,
    adler32: str,
    size: int,
    streams: int | None,
    servers: dict[str, int],
) -> dict[str, Any]:
    """The worker's copy from inside end B, as a worker process (its account and environment), asking for
    ``streams`` TCP streams as a job's ``nostreams`` does (None: the tool's default)."""
    arguments = [source, destination, adler32, str(size), *([str(streams)] if streams is not None else [])]
    argv, env = copy_rtts.worker_command(state, arguments)
    emulated = emulator_counts(path)
    cpu = CpuCount({"emulator": path.emulator_pid, **servers})
    started = time.monotonic()
    with ss_sampler.SsSampler(path, "a") as sender:
        done = path.run_b(argv, capture_output=True, text=True, env=env, timeout=3600)
    seconds = time.monotonic() - started
    used = cpu.stop() | counted_since(emulated, path)
    answer = copy_rtts.worker_answer(done, source, destination)
    copied = (answer["answered_ns"] - answer["asked_ns"]) / 1e9
    return {
        "bytes": size,
        "seconds": round(copied, 3),
        "gbit_s": round(size * 8 / copied / 1e9, 3),
        "process_seconds": round(seconds, 3),  # with the worker program's own start (Django, gfal2)
        "streams_on_wire": answer["parameters"].get("streams_on_wire"),
        "checksums": [answer["source_checksum"], answer["dest_checksum"]],
        **used,
        # The source's busiest connection, from `ss -tin` every 0.5 s at end A (its ramp, its steady rate,
        # what limited it: the receiver's window, its send buffer, or the application).
        "sender": ss_sampler.summarise(sender.samples, path.config.rate_mbit),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from localnet.processes import read_pid
    from localnet.state import StateDir
    from localnet.users import chown_tree
    from localnet.xrootd import SERVICE_USER as XROOTD_ACCOUNT

    state = StateDir.named(args.state)
    size = int(args.size_gib * GIB)
    rtts = [float(x) for x in args.rtt_ms.split(",")]
    runs: list[dict[str, Any]] = []
    with ExitStack() as stack:
        path = stack.enter_context(
            wanpath.emulated_path(rtt_ms=rtts[0], rate_mbit=args.rate_mbit, cc=args.cc)
        )
        sites = copy_rtts.start_sites(state, path, args.rate_mbit * 1e6, args.tokens == "on", stack)
        copy_rtts.reach_platform(state, path, "b", stack)
        source_site, destination_site = sites[SOURCE_ENDPOINT], sites[DESTINATION_ENDPOINT]
        servers = {
            role: read_pid(state, f"xrootd-{site.name}")
            for role, site in (("source_server", source_site), ("destination_server", destination_site))
        }
        name = f"rate-{os.getpid()}.bin"
        local = source_site.local_path(PREFIX + name)
        stack.callback(local.unlink, missing_ok=True)
        written = time.monotonic()
        adler32 = copy_rtts.random_file(local, size, seed=os.getpid())
        chown_tree(local.parent, XROOTD_ACCOUNT)
        print(f"source file: {size} bytes, adler32 {adler32}, written in {time.monotonic() - written:.0f} s",
              flush=True)  # fmt: skip
        for rtt in rtts:
            wanpath.retune(path, rtt)
            for rep in range(args.reps):
                run: dict[str, Any] = {"rtt_ms": rtt, "rep": rep}
                run["iperf3"] = iperf3_flow(path, size, timeout=600)
                print(f"{rtt:g} ms #{rep} iperf3: {run['iperf3']['gbit_s']} Gbit/s", flush=True)
                for protocol in args.protocols.split(","):
                    target = destination_site.local_path(PREFIX + f"{name}.{protocol}")
                    try:
                        copy = worker_copy(
                            state, path,
                            copy_rtts.url(source_site, protocol, name),
                            copy_rtts.url(destination_site, protocol, f"{name}.{protocol}"),
                            adler32, size, args.streams, servers,
                        )  # fmt: skip
                    finally:
                        target.unlink(missing_ok=True)
                    copy["ratio_to_iperf3"] = round(copy["gbit_s"] / run["iperf3"]["gbit_s"], 3)
                    run[protocol] = copy
                    print(f"{rtt:g} ms #{rep} {protocol}: {copy['gbit_s']} Gbit/s, "
                          f"{copy['ratio_to_iperf3']} of iperf3", flush=True)  # fmt: skip
                runs.append(run)
        emulator = path.stats()
    summary = {}
    for protocol in args.protocols.split(","):
        for rtt in rtts:
            ratios = [run[protocol]["ratio_to_iperf3"] for run in runs if run["rtt_ms"] == rtt]
            summary[f"{protocol}@{rtt:g}ms"] = {"median_ratio": statistics.median(ratios), "ratios": ratios}
    return {"summary": summary, "runs": runs, "emulator": emulator}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rtt-ms", default="300,150,56", help="comma list of RTTs (default 300,150,56)")
    parser.add_argument("--rate-mbit", type=float, default=10000.0, help="the path's rate (default 10000)")
    parser.add_argument("--size-gib", type=float, default=16.0, help="the file's size (default 16 GiB)")
    parser.add_argument("--protocols", default="root,davs", help="root and/or davs (default both)")
    parser.add_argument("--reps", type=int, default=1, help="repetitions at each RTT (default 1)")
    parser.add_argument("--streams", type=int, help="TCP streams asked for each copy (a job's nostreams)")
    parser.add_argument("--cc", default="bbr", help="the end hosts' congestion control (the role's: bbr)")
    parser.add_argument("--tokens", choices=("on", "off"), default="on", help="sites enforce tokens (on)")
    parser.add_argument("--state", default="bench-copy-rate", help="the state folder's name")
    parser.add_argument("--out", help="write the result as JSON here")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("needs root (network namespaces)")
    result = copy_rtts.measured_on_own_state(args, argv, measure)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

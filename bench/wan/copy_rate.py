#!/usr/bin/env python3
"""What one large copy gets on a long fast path, as the platform deploys and runs it, against one iperf3 flow
over the same bytes on the same path in the same run (issue 32, item 1).

    .venv/bin/python bench/wan/copy_rate.py [--rtt-ms 300,150,56] [--rate-mbit 10000] [--size-gib 16]
        [--protocols root,davs] [--compare stock-tpc,xrdcp,gfal-davs] [--reps 1] [--streams N] [--cc bbr]
        [--tokens on] [--out FILE]

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

``--compare`` adds, in the same repetition, on the same path and the same file, what a site would otherwise
use (issue 32, item 5), against a second pair of sites at the same two ends that run XRootD's own server
(the same configuration without the project's plugin: localnet's SRCNET_XROOTD_PLUGIN=off, tokens of the
same issuer and audiences; the source's file is a hard link of the same bytes). Each runs at end B (the
worker's) as the worker's account, with tokens in its URLs, and verifies the adler32 of both ends:
``stock-tpc``: ``xrdcp --tpc only`` (XRootD's third-party copy, the destination's stock ``xrdcp --server``
pulling); ``xrdcp``: a plain ``xrdcp`` download to the destination's disk with its own parallel chunks
(``XRD_CPPARALLELCHUNKS``) sized as a site engineer would for the path, by the same rule as the plugin's
pull (capacity x RTT x 1.25 + one 8 MiB chunk); ``gfal-davs``: ``gfal-copy --copy-mode pull`` between the
two sites' davs:// (XRootD's own HTTP third-party copy).

Runs on a state of its own (its PostgreSQL, Redis and issuer), as root (network namespaces)."""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
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
from matrix import proc_cpu_s, tun_tx_dropped  # noqa: E402

sys.path.insert(0, str(ROOT / "bench" / "xrootd_plugin"))
import ss_sampler  # noqa: E402

SOURCE_ENDPOINT, DESTINATION_ENDPOINT = copy_rtts.SOURCE_ENDPOINT, copy_rtts.DESTINATION_ENDPOINT
PREFIX = copy_rtts.PREFIX
IPERF_PORT = 5311
GIB = 1 << 30
COMPARED = ("stock-tpc", "xrdcp", "gfal-davs")
XRDCP_CHUNK = 8 << 20  # XrdCl's default chunk (XRD_CPCHUNKSIZE), as the plugin's pull reads
QUEUE_MARGIN = 1.25  # the plugin's reads in flight: capacity x RTT x this, plus one chunk


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (all CPUs: user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def emulator_counts(path: Any) -> dict[str, int]:
    """The counters that say whether the path was faithful: the emulator's A-to-B packets dropped at its
    queue (or its ring) and sent more than 10 ms late, and the packets the kernel dropped in front of it
    (its TUN devices' queues full while it was short of CPU: losses the emulator never sees)."""
    ab = path.stats()["ab"]
    return {
        "dropped": ab["drop_queue"] + ab["drop_ring"],
        "late_over_10ms": ab["late_gt10ms"],
        "tun_dropped": tun_tx_dropped(path),
    }


def counted_since(before: dict[str, int], path: Any) -> dict[str, int]:
    after = emulator_counts(path)
    return {f"emulator_{key}": after[key] - before[key] for key in after}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CpuCount:
    """CPU seconds each process of a copy used (the emulator, each site's server with the pull programs it
    started and reaped) and the whole machine, between start and stop."""

    def __init__(self, processes: dict[str, int]) -> None:
        self.processes = processes
        self.before = {name: proc_cpu_s(pid) for name, pid in processes.items()}
        self.children = children_cpu_s()
        self.machine = machine_busy_s()
        self.started = time.monotonic()

    def stop(self) -> dict[str, float]:
        used = {
            f"{name}_cpu_s": round(proc_cpu_s(pid) - self.before[name], 2)
            for name, pid in self.processes.items()
        }
        seconds = time.monotonic() - self.started
        # The programs this process ran and reaped meanwhile: the worker's copy, or a site tool (the client).
        used["client_cpu_s"] = round(children_cpu_s() - self.children, 2)
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


def parallel_chunks(rate_mbit: float, rtt_ms: float) -> int:
    """xrdcp's chunks in flight for the path, by the plugin's own rule: capacity x RTT x 1.25, plus one."""
    in_flight = rate_mbit * 1e6 / 8 * rtt_ms / 1e3 * QUEUE_MARGIN
    return math.ceil(in_flight / XRDCP_CHUNK) + 1


class SiteTools:
    """The stock tools of ``--compare`` on the stock pair of sites (``copy_rtts.site_pair(stock=True)``), with
    the tokens the platform's own copy of the same names would get (its registered endpoints' scopes and
    audiences, which the stock pair trusts too)."""

    def __init__(self, state: Any, deployed: dict[str, Any], stock: dict[str, Any], tokens: bool) -> None:
        from localnet.issuer import issuer_settings
        from localnet.users import chown_tree, service_account
        from transfers.tokens import TokenClient

        self.state, self.deployed, self.stock = state, deployed, stock
        settings = issuer_settings(state) if tokens else None
        self.client = TokenClient(settings) if settings is not None else None
        # Where the plain download writes: the destination's disk, a folder the worker's account owns.
        self.downloads = state.sub("copy-rate-downloads")
        chown_tree(self.downloads, str(service_account()))

    def _with_tokens(self, protocol: str, source_name: str, target_name: str) -> tuple[str, str, str]:
        """The stock pair's URLs of the copy, each with its token in the authz CGI (XRootD reads it there over
        root:// and HTTP alike; a pulling destination gets the source URL with its token), and the
        destination's token ("" without an issuer)."""
        from transfers.tokens import tokens_for_copy, url_with_token

        source_site, destination_site = self.stock[SOURCE_ENDPOINT], self.stock[DESTINATION_ENDPOINT]
        source = copy_rtts.url(source_site, protocol, source_name)
        destination = copy_rtts.url(destination_site, protocol, target_name)
        if self.client is None:
            return source, destination, ""
        tokens = tokens_for_copy(
            copy_rtts.url(self.deployed[SOURCE_ENDPOINT], protocol, source_name),
            copy_rtts.url(self.deployed[DESTINATION_ENDPOINT], protocol, target_name),
            self.client,
        )
        assert tokens is not None
        written = tokens.destination.current()
        return url_with_token(source, tokens.source.current()), url_with_token(destination, written), written

    def command(self, tool: str, name: str, adler32: str, rate_mbit: float, rtt_ms: float) -> dict[str, Any]:
        """The tool's steps (argvs run one after the other as the worker's account, with its settings), the
        file it writes, what the last step prints when the checksums agree, and the settings it was given."""
        from transfers.tokens import url_with_token

        target_name = f"{name}.{tool}"
        extra: dict[str, str] = {}
        settings: dict[str, Any] = {}
        expect = ""
        if tool == "stock-tpc":
            source, destination, token = self._with_tokens("root", name, target_name)
            # xrdcp's own checksum check of a third-party copy queries the source's and the destination's
            # without their tokens ("Unable to checksum ...; permission denied" from a token-enforcing site):
            # the destination's is asked afterwards as gfal2 asks it, the token in the query's path.
            site = self.stock[DESTINATION_ENDPOINT]
            asked = url_with_token(PREFIX + target_name, token)
            steps = [
                ["xrdcp", "--tpc", "only", source, destination],
                ["xrdfs", f"root://{site.host}:{site.root_port}", "query", "checksum", asked],
            ]
            written = site.local_path(PREFIX + target_name)
            expect = f"adler32 {adler32}"
        elif tool == "xrdcp":
            source, _, _ = self._with_tokens("root", name, target_name)
            written = self.downloads / target_name
            # a local destination's adler32 is xrdcp's own, compared with the source's as the catalogue has it
            steps = [["xrdcp", "--cksum", f"adler32:{adler32}", source, str(written)]]
            chunks = parallel_chunks(rate_mbit, rtt_ms)
            extra = {"XRD_CPPARALLELCHUNKS": str(chunks), "XRD_CPCHUNKSIZE": str(XRDCP_CHUNK)}
            settings = {"parallel_chunks": chunks, "chunk_bytes": XRDCP_CHUNK}
        elif tool == "gfal-davs":
            source, destination, token = self._with_tokens("davs", name, target_name)
            argv = ["gfal-copy", "--copy-mode", "pull", "-K", f"adler32:{adler32}", "--checksum-mode", "both"]
            # A bearer credential, or davix asks the destination to take a delegated proxy ("COPY requested an
            # unsupported credential type: gridsite"); gfal-copy takes one for all URLs: the destination's.
            steps = [[*argv, "-D", f"BEARER:TOKEN={token or 'none'}", source, destination]]
            written = self.stock[DESTINATION_ENDPOINT].local_path(PREFIX + target_name)
            extra = {"GFAL_PYTHONBIN": "/usr/bin/python3"}  # gfal2-util's own interpreter (Debian's bindings)
        else:
            raise ValueError(f"unknown tool {tool!r}: one of {', '.join(COMPARED)}")
        # Each step as a worker process runs: its account and settings.
        commands = [copy_rtts.platform_command(self.state, step) for step in steps]
        steps, env = [argv for argv, _ in commands], {**commands[0][1], **extra}
        return {"steps": steps, "env": env, "written": written, "expect": expect, **settings}


def site_tool_copy(
    tools: SiteTools,
    path: Any,
    tool: str,
    name: str,
    adler32: str,
    size: int,
    rtt_ms: float,
    servers: dict[str, int],
) -> dict[str, Any]:
    """One stock tool's copy of ``name`` from inside end B, timed from its start to its end."""
    from transfers.tokens import redact

    command = tools.command(tool, name, adler32, path.config.rate_mbit, rtt_ms)
    written: Path = command["written"]
    emulated = emulator_counts(path)
    cpu = CpuCount({"emulator": path.emulator_pid, **servers})
    started = time.monotonic()
    try:
        with ss_sampler.SsSampler(path, "a") as sender:
            for step in command["steps"]:
                done = path.run_b(step, capture_output=True, text=True, env=command["env"], timeout=3600)
                if done.returncode != 0:
                    said = redact((done.stderr + done.stdout)[-3000:])
                    raise SystemExit(f"{tool} of {name} failed (rc {done.returncode}): {said}")
        seconds = time.monotonic() - started
        used = cpu.stop() | counted_since(emulated, path)
        landed = written.stat().st_size
    finally:
        written.unlink(missing_ok=True)
    if landed != size or command["expect"] not in done.stdout:
        raise SystemExit(f"{tool} of {name}: {landed} bytes of {size}, checked: {done.stdout.strip()!r}")
    return {
        "bytes": size,
        "seconds": round(seconds, 3),
        "gbit_s": round(size * 8 / seconds / 1e9, 3),
        # the destination's adler32 agreed with the source's (the tool's exit status, or the query's answer)
        "checksum_verified": adler32,
        **{key: command[key] for key in ("parallel_chunks", "chunk_bytes") if key in command},
        **used,
        "sender": ss_sampler.summarise(sender.samples, path.config.rate_mbit),
    }


def ratio_table(summary: dict[str, Any], tools: list[str], rtts: list[float]) -> str:
    """The Markdown table of the median ratios to iperf3: a row a tool, a column an RTT."""
    lines = ["| copy | " + " | ".join(f"{rtt:g} ms" for rtt in rtts) + " |"]
    lines.append("|---|" + "---:|" * len(rtts))
    for tool in tools:
        cells = [f"{summary[f'{tool}@{rtt:g}ms']['median_ratio']:.2f}" for rtt in rtts]
        lines.append(f"| {tool} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from localnet.issuer import ensure_issuer
    from localnet.processes import read_pid
    from localnet.state import StateDir
    from localnet.users import chown_tree
    from localnet.xrootd import SERVICE_USER as XROOTD_ACCOUNT

    state = StateDir.named(args.state)
    size = int(args.size_gib * GIB)
    rtts = [float(x) for x in args.rtt_ms.split(",")]
    compared = [tool for tool in args.compare.split(",") if tool]
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
        tools = None
        if compared:
            issuer = ensure_issuer(state) if args.tokens == "on" else None
            stock = copy_rtts.site_pair(state, path, args.rate_mbit * 1e6, issuer, stack, stock=True)
            shared = stock[SOURCE_ENDPOINT].local_path(PREFIX + name)
            os.link(local, shared)  # the same bytes, in the same pages of the cache
            stack.callback(shared.unlink, missing_ok=True)
            tools = SiteTools(state, sites, stock, args.tokens == "on")
            stock_servers = {
                role: read_pid(state, f"xrootd-{site.name}")
                for role, site in (("source_server", stock[SOURCE_ENDPOINT]),
                                   ("destination_server", stock[DESTINATION_ENDPOINT]))
            }  # fmt: skip
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
                for tool in compared:
                    assert tools is not None
                    copy = site_tool_copy(tools, path, tool, name, adler32, size, rtt, stock_servers)
                    copy["ratio_to_iperf3"] = round(copy["gbit_s"] / run["iperf3"]["gbit_s"], 3)
                    run[tool] = copy
                    print(f"{rtt:g} ms #{rep} {tool}: {copy['gbit_s']} Gbit/s, "
                          f"{copy['ratio_to_iperf3']} of iperf3", flush=True)  # fmt: skip
                runs.append(run)
        emulator = path.stats()
    summary = {}
    copies = [*args.protocols.split(","), *compared]
    for copy_kind in copies:
        for rtt in rtts:
            ratios = [run[copy_kind]["ratio_to_iperf3"] for run in runs if run["rtt_ms"] == rtt]
            summary[f"{copy_kind}@{rtt:g}ms"] = {"median_ratio": statistics.median(ratios), "ratios": ratios}
    table = ratio_table(summary, copies, rtts)
    return {"summary": summary, "table": table, "runs": runs, "emulator": emulator}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rtt-ms", default="300,150,56", help="comma list of RTTs (default 300,150,56)")
    parser.add_argument("--rate-mbit", type=float, default=10000.0, help="the path's rate (default 10000)")
    parser.add_argument("--size-gib", type=float, default=16.0, help="the file's size (default 16 GiB)")
    parser.add_argument("--protocols", default="root,davs", help="root and/or davs (default both)")
    parser.add_argument(
        "--compare", default="", help=f"what a site would otherwise use, same run: {','.join(COMPARED)}"
    )
    parser.add_argument("--reps", type=int, default=1, help="repetitions at each RTT (default 1)")
    parser.add_argument("--streams", type=int, help="TCP streams asked for each copy (a job's nostreams)")
    parser.add_argument("--cc", default="bbr", help="the end hosts' congestion control (the role's: bbr)")
    parser.add_argument("--tokens", choices=("on", "off"), default="on", help="sites enforce tokens (on)")
    parser.add_argument("--state", default="bench-copy-rate", help="the state folder's name")
    parser.add_argument("--out", help="write the result as JSON here")
    args = parser.parse_args(argv)
    unknown = sorted(set(filter(None, args.compare.split(","))) - set(COMPARED))
    if unknown:
        parser.error(f"--compare: unknown {', '.join(unknown)} (known: {', '.join(COMPARED)})")
    if os.geteuid() != 0:
        parser.error("needs root (network namespaces)")
    result = copy_rtts.measured_on_own_state(args, argv, measure)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(json.dumps(result["summary"], indent=1))
    print(result["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

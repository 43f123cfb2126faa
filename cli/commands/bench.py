"""``srcnet bench path FROM TO``: a topology path, emulated on this machine, with an XRootD site at each end.

The path's RTT comes from the API; its capacity is scaled down to what one machine carries (stated in the
output). A real file is copied across, by default as the platform moves data: a third-party copy between
two sites that load the project's XRootD plugin, the source pacing its connection at the emulated
bottleneck (the path's capacity, scaled). Its adler32 is compared. The emulator lives in bench/wan/ of the
checkout; it needs root and /dev/net/tun."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

from ..context import Context, add_noun, add_verb
from ..errors import NotFound, TransferFailed, UnsuitableMachine, UsageError
from ..exit_codes import ExitCode
from ..output import human_rate

WAN_DIR = Path(__file__).resolve().parents[2] / "bench" / "wan"
MACHINE_MAX_MBIT = 2000.0  # what the userspace emulator carries faithfully at 300 ms on 2 cores
SIZES = {"k": 10**3, "m": 10**6, "g": 10**9}
MIN_PACING_BYTES = 1 << 20  # the plugin's lowest wanio.net.pacing rate


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "bench", "Benchmarks on this machine (emulated long-haul paths; root only).")
    p = add_verb(
        verbs,
        "path",
        "Emulate a topology path here and copy a file across it.",
        path_cmd,
        epilog="examples:\n  srcnet bench path SKA1-Low UKSRC --once\n"
        "  srcnet bench path SKA1-Mid UKSRC --rate-mbit 500 --size 200M\n"
        "  srcnet bench path SKA1-Low UKSRC --once --mtu 9000 --size 2G\n"
        "  srcnet bench path SKA1-Low UKSRC --once --server stock --mode pull\n"
        "  srcnet bench path SKA1-Low UKSRC --once --no-tokens   # what the tokens cost, by difference",
    )
    p.add_argument("source", metavar="FROM")
    p.add_argument("destination", metavar="TO")
    p.add_argument("--rate-mbit", type=float, default=1000.0, help="emulated bottleneck (default 1000)")
    p.add_argument("--size", default="100M", help="test file size (k/M/G suffix, default 100M)")
    p.add_argument(
        "--server",
        choices=("plugin", "stock"),
        default="plugin",
        help="plugin (default): both sites load the project's XRootD plugin, the source paced at the "
        "emulated bottleneck; stock: the stock XRootD server at both ends",
    )
    p.add_argument(
        "--mode",
        choices=("tpc", "pull"),
        default="tpc",
        help="tpc (default): a third-party copy, the destination site pulls; pull: xrdcp at the "
        "destination end reads from the source site",
    )
    p.add_argument("--mtu", type=int, default=1500, help="MTU of the emulated path, 576..9000 (default 1500)")
    p.add_argument(
        "--no-pacing", action="store_true", help="with --server plugin: do not pace the source's connections"
    )
    p.add_argument(
        "--no-tokens",
        action="store_true",
        help="sites that enforce no token, for comparison (by default both enforce the local network's "
        "issuer's tokens, as the platform's sites do; either way they live only inside the path's "
        "namespaces, for the measurement)",
    )
    p.add_argument("--once", action="store_true", help="copy, report and tear down (else wait for Ctrl-C)")
    p.add_argument(
        "--record",
        action="store_true",
        help="store the result as a lane measurement the push planner's tuning model reads",
    )


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, WAN_DIR / f"{name}.py")
    if spec is None or spec.loader is None:
        raise UnsuitableMachine(f"bench/wan/{name}.py not found: run from a checkout of the project")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(WAN_DIR))
    spec.loader.exec_module(module)
    return module


def _issuer() -> Any:
    """The local network's token issuer (bench/wan/wantokens.py), started if it is not running."""
    wantokens = _load("wantokens")
    try:
        return wantokens.WanIssuer.of_state()
    except (OSError, RuntimeError) as exc:
        raise UnsuitableMachine(
            f"the local token issuer did not start ({exc}): run scripts/bootstrap.sh, or use --no-tokens"
        ) from exc


def _size(text: str) -> int:
    text = text.strip().lower()
    try:
        return int(float(text[:-1]) * SIZES[text[-1]]) if text[-1] in SIZES else int(text)
    except (ValueError, IndexError) as exc:
        raise UsageError(f"--size: not a size: {text!r}") from exc


def _adler32(path: str) -> str:
    value = 1
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            value = zlib.adler32(chunk, value)
    return f"{value & 0xFFFFFFFF:08x}"


def path_cmd(ctx: Context, args: argparse.Namespace) -> int:
    rows, _ = ctx.client.paginate(
        "/api/topology/paths/",
        {"source": args.source, "destination": args.destination, "ordering": "rtt_ms"},
        limit=1,
    )
    if not rows:
        raise NotFound(f"no path from {args.source} to {args.destination} (see `srcnet paths list`)")
    topo = rows[0]
    size = _size(args.size)
    if not 576 <= args.mtu <= 9000:
        raise UsageError(f"--mtu: {args.mtu} is not between 576 and 9000")
    if args.no_pacing and args.server != "plugin":
        raise UsageError("--no-pacing: only the plugin paces (--server plugin)")
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        raise UnsuitableMachine("emulating a path needs root and /dev/net/tun")
    rate = min(args.rate_mbit, MACHINE_MAX_MBIT, topo["capacity_bps"] / 1e6)
    ctx.info(
        f"srcnet: {topo['name']}: RTT {topo['rtt_ms']} ms, bottleneck {human_rate(topo['capacity_bps'])}; "
        f"emulated at {rate:g} Mbit/s (scaled down to what this machine carries)"
    )
    wanpath, xrdsite = _load("wanpath"), _load("xrdsite")
    plugin = args.server == "plugin"
    if plugin and not xrdsite.plugin_built():
        raise UnsuitableMachine(
            f"the XRootD plugin is not built ({xrdsite.PLUGIN_BUILD}): run scripts/bootstrap.sh, "
            "or use --server stock"
        )
    # The source paces at the emulated bottleneck (the path's capacity, scaled down).
    pacing = int(rate * 1e6 / 8) if plugin and not args.no_pacing else None
    if pacing is not None and pacing < MIN_PACING_BYTES:
        ctx.info(f"srcnet: {rate:g} Mbit/s is below the plugin's lowest pacing rate: the source is not paced")
        pacing = None
    bdp = int(rate * 1e6 / 8 * float(topo["rtt_ms"]) / 1e3)
    issuer = None if args.no_tokens else _issuer()
    with wanpath.emulated_path(rtt_ms=float(topo["rtt_ms"]), rate_mbit=rate, mtu=args.mtu) as path:
        source = xrdsite.XrootdSite(path, "a", plugin=plugin, pacing_bytes_per_s=pacing, tokens=issuer)
        destination = xrdsite.XrootdSite(
            path, "b", plugin=plugin, tpc_bdp_bytes=bdp if plugin else None, tokens=issuer
        )
        try:
            source.start()
            destination.start()
            result = _copy_across(path, source, destination, size, args.mode)
            result.update(
                {
                    "path": topo["name"],
                    "rtt_ms": topo["rtt_ms"],
                    "emulated_mbit": rate,
                    "fraction_of_bottleneck": round(result["mbit_per_s"] / rate, 3),
                    "server": args.server,
                    "mode": args.mode,
                    "mtu": args.mtu,
                    "pacing_bytes_per_s": pacing,
                    "tokens": issuer is not None,
                    # Whether the source's log shows the pacing applied to the connection it served.
                    "source_paced": source.paced_opens() > 0 if pacing else False,
                    "hystart": wanpath.tuning.cubic_hystart_enabled(),
                }
            )
            if args.record:
                ctx.client.post(
                    "/api/schedulers/measurements/",
                    {
                        "source": args.source,
                        "destination": args.destination,
                        "streams": 1,
                        "files": 1,
                        "bytes": result["bytes"],
                        "seconds": result["seconds"],
                        "throughput_bps": result["mbit_per_s"] * 1e6,
                        "rtt_ms": topo["rtt_ms"],
                        "succeeded": bool(result["adler32_match"]),
                        "job_id": f"srcnet bench path ({args.mode}, {args.server}, MTU {args.mtu})",
                    },
                )
                result["recorded"] = True
            ctx.emit_object(result, list(result))
            if not args.once:
                ctx.info(
                    f"srcnet: sites up: {source.root_url('')} (namespace {path.ns_a}) and "
                    f"{destination.root_url('')} (namespace {path.ns_b}); Ctrl-C tears everything down"
                )
                while True:
                    time.sleep(3600)
        finally:
            source.stop()
            destination.stop()
    return ExitCode.OK if result["adler32_match"] else ExitCode.TRANSFER_FAILED


def _copy_across(path: Any, source: Any, destination: Any, size: int, mode: str) -> dict[str, Any]:
    name = "srcnet-bench.bin"
    with open(source.local_path(name), "wb") as fh:
        remaining = size
        block = os.urandom(1 << 20)
        while remaining > 0:
            fh.write(block[: min(remaining, len(block))])
            remaining -= len(block)
    os.chmod(source.local_path(name), 0o644)
    # The copy's tokens are asked for before the clock starts, as a worker holds them before it copies.
    target = destination.write_url(name) if mode == "tpc" else destination.local_path(name)
    tpc = ["--tpc", "only"] if mode == "tpc" else []
    origin = source.read_url(name)
    started = time.monotonic()
    copy = path.run_b(
        ["xrdcp", "-f", "-s", *tpc, origin, target],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    seconds = time.monotonic() - started
    if copy.returncode != 0:
        # Its message may quote a URL, and a URL its token.
        raise TransferFailed(f"xrdcp failed: {_load('wantokens').redact(copy.stderr.strip())[-300:]}")
    match = _adler32(source.local_path(name)) == _adler32(destination.local_path(name))
    return {
        "bytes": size,
        "seconds": round(seconds, 2),
        "mbit_per_s": round(size * 8 / seconds / 1e6, 1),
        "adler32_match": match,
    }

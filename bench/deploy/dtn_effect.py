"""The dtn_tuning role's effect, measured: one iperf3 flow across bench/wan's emulated path (a 10 Gbit/s
bottleneck with a one-BDP drop-tail queue, at 56 ms and at 300 ms RTT) between two booted Debian 12 hosts
whose network namespaces are the two ends of the path, before and after ansible-playbook applies the
dtn_tuning role to them over SSH (docs/benchmarks.md, "DTN tuning by Ansible"). With ``--tpc SIZE``, also
a root:// third-party copy of a SIZE file between two XRootD servers with the project's plugin at the path's
ends (bench/deploy/dtn_tpc.py), before and after the same role run.

    .venv/bin/python bench/deploy/dtn_effect.py [--rtt 56 --rtt 300] [--seconds 20] [--cc bbr --cc cubic]
        [--tpc 2g [--tpc-reads deployed --tpc-reads bdp]] [--loss 1e-5]

Root is needed (namespaces, nspawn, the emulator). Congestion control: the hosts' namespaces may use only
the machine's allowed algorithms (here reno and bbr) as their default, so the role sets BBR; each iperf3 flow
picks its own with ``--cc`` (iperf3 -C, TCP_CONGESTION on the socket, which root may set to any algorithm the
kernel has), so CUBIC and BBR are measured on the same path, before and after the same role run. The
role's host-global keys (net.core.*) are off: the hosts share this machine's kernel."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench" / "wan")]

import wanpath  # noqa: E402

from bench.deploy.dtn_tpc import TpcSites, parse_size  # noqa: E402
from tests.deploy.hosts import Fleet  # noqa: E402
from tests.deploy.rootfs import cached_rootfs  # noqa: E402

RATE_MBIT = 10_000


def iperf3(path: wanpath.EmulatedPath, seconds: int, cc: str) -> float:
    """Receiver-side Gbit/s of one flow from end A to end B, with congestion control ``cc``."""
    server = path.popen_b(["iperf3", "-s", "-1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        result = path.run_a(
            ["iperf3", "-c", path.ip_b, "-t", str(seconds), "-C", cc, "-J"],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=True,
        )
    finally:
        server.wait(timeout=30)
    end = json.loads(result.stdout)["end"]
    if end.get("sender_tcp_congestion") != cc:  # the kernel refused the algorithm: not this measurement
        raise RuntimeError(f"iperf3 ran {end.get('sender_tcp_congestion')}, not {cc}")
    return float(end["sum_received"]["bits_per_second"]) / 1e9


def tcp_settings(path: wanpath.EmulatedPath) -> str:
    return (
        path.run_a(
            ["sysctl", "-n", "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_congestion_control"],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.replace("\n", " | ")
        .replace("\t", " ")
    )


def measure(
    rtt_ms: float, seconds: int, ccs: list[str], tpc_bytes: int = 0, reads: list[str] | None = None,
    loss: float = 0.0, tokens: object = None,
) -> dict[str, object]:  # fmt: skip
    row: dict[str, object] = {"rtt_ms": rtt_ms, "rate_mbit": RATE_MBIT, "role_cc": "bbr", "queue": "1 BDP"}
    if loss:
        row["loss"] = loss
    reads = reads or ["deployed"]
    with wanpath.emulated_path(
        rtt_ms=rtt_ms, rate_mbit=RATE_MBIT, loss=loss, tuning="default", cc=None
    ) as path:
        workdir = Path(f"/var/tmp/srcnet-dtn-effect-{os.getpid()}")
        fleet = Fleet(workdir=workdir, rootfs=cached_rootfs(), controller_netns=path.ns_r)
        sites: TpcSites | None = None
        try:
            fleet.open()
            fleet.attach("dtn-a", path.ns_a, path.ip_a)
            fleet.attach("dtn-b", path.ns_b, path.ip_b)
            fleet.boot()
            row["before_settings"] = tcp_settings(path)
            if seconds:
                row["before_gbps"] = {cc: round(iperf3(path, seconds, cc), 3) for cc in ccs}
            if tpc_bytes:
                sites = TpcSites(path, tpc_bytes, reads, RATE_MBIT, tokens=tokens)
                row["tpc_bytes"] = tpc_bytes
                # Before the role the receiver's window (tcp_rmem max) is a few MiB, far below either
                # reads setting (128 MiB or one BDP in flight): the first setting alone is measured.
                row["tpc_before"] = {reads[0]: sites.copy(reads[0], "before")}
            inventory = workdir / "inventory.yml"
            inventory.write_text(
                json.dumps(
                    {
                        "all": {
                            "hosts": {h.name: {"ansible_host": h.address} for h in fleet.hosts.values()},
                            "vars": {
                                "ansible_user": "root",
                                "ansible_ssh_private_key_file": str(fleet.key),
                                "ansible_ssh_common_args": f"-o UserKnownHostsFile={fleet.known_hosts}",
                                "dtn_tuning_path_bandwidth_gbps": RATE_MBIT / 1000,
                                "dtn_tuning_path_rtt_ms": rtt_ms,
                                "dtn_tuning_congestion_control": "bbr",
                                "dtn_tuning_qdisc": "pfifo_fast",
                                "dtn_tuning_global_sysctls": False,
                            },
                        }
                    }
                )
            )
            playbook = workdir / "dtn.yml"
            playbook.write_text(json.dumps([{"name": "DTN tuning", "hosts": "all", "roles": ["dtn_tuning"]}]))
            env = {
                **os.environ,
                "ANSIBLE_CONFIG": str(ROOT / "ansible" / "ansible.cfg"),
                "ANSIBLE_ROLES_PATH": str(ROOT / "ansible" / "roles"),
                "ANSIBLE_HOME": str(workdir / "ansible-home"),
                "ANSIBLE_SSH_CONTROL_PATH_DIR": str(workdir / "ssh-control"),
                "ANSIBLE_NOCOLOR": "1",
            }
            run = subprocess.run(
                ["ip", "netns", "exec", path.ns_r, "ansible-playbook", "-i", str(inventory), str(playbook)],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
                check=False,
            )
            if run.returncode != 0:
                raise RuntimeError(run.stdout[-4000:] + run.stderr[-2000:])
            row["after_settings"] = tcp_settings(path)
            if seconds:
                row["after_gbps"] = {cc: round(iperf3(path, seconds, cc), 3) for cc in ccs}
            if sites is not None:
                row["tpc_after"] = {r: sites.copy(r, "after") for r in reads}
            # All runs together, iperf3 A to B: drops at the bottleneck queue, emulator errors, late releases.
            stats = path.stats()
            counters = ("drop_queue", "drop_loss", "tx_err", "late_gt1ms", "late_gt10ms")
            row["emulator_ab"] = {k: stats["ab"].get(k) for k in counters}
            if sites is not None:  # the copies' data went B to A
                row["emulator_ba"] = {k: stats["ba"].get(k) for k in counters}
        finally:
            if sites is not None:
                sites.close()
            problems = fleet.close()
            if problems:
                print("cleanup problems:", problems, file=sys.stderr)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rtt", type=float, action="append", help="RTT in ms (repeatable); 56 and 300")
    parser.add_argument("--seconds", type=int, default=20, help="length of each iperf3 run (0: none)")
    parser.add_argument("--cc", action="append", help="congestion control of the flows (repeatable); bbr")
    parser.add_argument("--tpc", default="", help="size of a plugin third-party copy (e.g. 2g); none")
    parser.add_argument(
        "--tpc-reads", action="append", choices=["deployed", "bdp"],
        help="reads in flight of xrdcp-wan (repeatable): the xrootd_site role's, or one BDP; deployed",
    )  # fmt: skip
    parser.add_argument("--loss", type=float, default=0.0, help="random loss per segment, each direction")
    parser.add_argument(
        "--tpc-no-tokens", action="store_true",
        help="the copy's sites enforce no token (by default: the local issuer's, as the role's sites do)",
    )  # fmt: skip
    args = parser.parse_args()
    tpc_bytes = parse_size(args.tpc) if args.tpc else 0
    tokens = None
    if tpc_bytes and not args.tpc_no_tokens:
        import wantokens  # bench/wan's, on the path dtn_tpc set

        tokens = wantokens.WanIssuer.of_state()
    for rtt in args.rtt or [56.0, 300.0]:
        row = measure(rtt, args.seconds, args.cc or ["bbr"], tpc_bytes, args.tpc_reads, args.loss, tokens)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

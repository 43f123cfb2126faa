"""ansible/site.yml on six booted Debian 12 hosts: bad input stops the run before any host changes; the
first run deploys the platform, the second changes nothing; the DTN tuning is applied and persistent."""

from __future__ import annotations

import pytest

from .conftest import LAYOUT, Deployment, PlaybookRun

pytestmark = pytest.mark.timeout(1500)

SYSCTL_FILE = "/etc/sysctl.d/90-srcnet-dtn.conf"
# 10 Gbit/s x 300 ms = 375 MB; buffers at twice that.
BUFFER_BYTES = 2 * 375_000_000


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("dtn_tuning_buffer_max_bytes=-1", "dtn_tuning_buffer_max_bytes"),
        ("dtn_tuning_congestion_control=vegas", "dtn_tuning_congestion_control"),
        ("xrootd_site_path_capacity_gbps=0", "xrootd_site_path_capacity_gbps"),
        ("platform_worker_concurrency=0", "platform_worker_concurrency"),
    ],
)
def test_bad_input_fails_before_any_host_changes(deployment: Deployment, override: str, named: str) -> None:
    run = deployment.playbook("-e", override, label=f"bad-{named}")
    assert run.returncode != 0
    assert named in run.output, run.output[-4000:]
    # Stopped in the preflight play: every host reached, none changed, nothing of the roles' on disk.
    assert set(run.recap) == set(LAYOUT), run.recap
    assert all(counts["changed"] == 0 for counts in run.recap.values()), run.recap
    assert "PLAY [Trust the platform CA]" not in run.output
    probe = deployment.ssh("s1", ["test", "-e", SYSCTL_FILE], check=False)
    assert probe.returncode == 1, "the sysctl file exists: the bad run changed a host"


def test_site_playbook_deploys_every_host_then_changes_nothing(
    deployed: tuple[PlaybookRun, PlaybookRun],
) -> None:
    first, second = deployed
    assert set(first.recap) == set(LAYOUT)
    assert all(counts["failed"] == 0 and counts["unreachable"] == 0 for counts in first.recap.values())
    assert all(changed > 0 for changed in first.changed().values()), first.recap
    assert set(second.recap) == set(LAYOUT)
    assert second.changed() == {name: 0 for name in LAYOUT}, second.recap


def test_dtn_tuning_is_applied_now_and_at_boot(deployment: Deployment, deployed: object) -> None:
    for name in ("s1", "s2"):
        live = deployment.ssh(
            name,
            ["sysctl", "-n", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control",
             "net.ipv4.tcp_no_metrics_save"],
        ).stdout.split()  # fmt: skip
        assert live == ["4096", "131072", str(BUFFER_BYTES), "4096", "16384", str(BUFFER_BYTES), "bbr", "1"]
        persistent = deployment.ssh(name, ["cat", SYSCTL_FILE]).stdout
        assert f"net.ipv4.tcp_rmem=4096 131072 {BUFFER_BYTES}" in persistent.replace(" = ", "=")
        link = deployment.ssh(name, ["cat", "/sys/class/net/eth0/mtu", "/sys/class/net/eth0/tx_queue_len"])
        assert link.stdout.split() == ["9000", "10000"]
        assert (
            "qdisc pfifo_fast" in deployment.ssh(name, ["tc", "qdisc", "show", "dev", "eth0", "root"]).stdout
        )
        unit = deployment.ssh(name, ["systemctl", "is-enabled", "srcnet-dtn-links.service"])
        assert unit.stdout.strip() == "enabled"
    # Hosts without the dtn role keep the defaults they booted with.
    assert deployment.ssh("w1", ["test", "-e", SYSCTL_FILE], check=False).returncode == 1

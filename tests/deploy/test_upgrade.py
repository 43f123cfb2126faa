"""Upgrade and rollback as docs/deployment.md describes them: a new srcnet_app_release is installed next to
the current one and becomes current on every platform host with its units restarted; setting the old name
again rolls back without reinstalling it; a run after that changes nothing."""

from __future__ import annotations

import json

from .conftest import DEPLOY_TIMEOUT, Deployment

pytestmark = DEPLOY_TIMEOUT

PLATFORM = {"cp", "w1", "w2"}
UNITS = {"cp": ["srcnet-web", "srcnet-beat"], "w1": ["srcnet-worker"], "w2": ["srcnet-worker"]}


def _current(deployment: Deployment, host: str) -> str:
    return deployment.ssh(host, ["readlink", "/opt/srcnet/current"]).stdout.strip().rsplit("/", 1)[1]


def _started(deployment: Deployment, host: str) -> dict[str, str]:
    """Each unit's ActiveState and when it last started (a restart changes the second)."""
    states = {}
    for unit in UNITS[host]:
        shown = deployment.ssh(
            host, ["systemctl", "show", unit, "--property=ActiveState,ActiveEnterTimestampMonotonic"]
        ).stdout
        states[unit] = json.dumps(sorted(shown.split()))
    return states


def test_upgrade_then_rollback(deployment: Deployment, deployed: object) -> None:
    old, new = deployment.release, deployment.release + "-next"
    before = {host: _started(deployment, host) for host in PLATFORM}

    upgrade = deployment.playbook("-e", f"srcnet_app_release={new}", "--limit", "platform", label="upgrade")
    assert upgrade.returncode == 0, upgrade.output[-4000:]
    assert set(upgrade.recap) == PLATFORM
    after_upgrade = {host: _started(deployment, host) for host in PLATFORM}
    for host in PLATFORM:
        assert _current(deployment, host) == new
        assert upgrade.recap[host]["changed"] > 0
        assert after_upgrade[host] != before[host], f"{host}: units not restarted"
        assert all("ActiveState=active" in state for state in after_upgrade[host].values())
        releases = deployment.ssh(host, ["ls", "/opt/srcnet/releases"]).stdout.split()
        assert sorted(releases) == sorted([old, new])

    rollback = deployment.playbook("-e", f"srcnet_app_release={old}", "--limit", "platform", label="rollback")
    assert rollback.returncode == 0, rollback.output[-4000:]
    for host in PLATFORM:
        assert _current(deployment, host) == old
        assert all("ActiveState=active" in s for s in _started(deployment, host).values())
    # The old release was still installed: only the link moved and the units restarted.
    install = rollback.output.split(
        "TASK [srcnet_app : Install the release into its own virtual environment"
    )[1:]
    assert install and all("changed:" not in section.split("TASK [")[0] for section in install)

    again = deployment.playbook("--limit", "platform", label="after-rollback")
    assert again.returncode == 0
    assert again.changed() == {host: 0 for host in PLATFORM}, again.recap


def test_a_migration_is_reversed_then_applied_again(deployment: Deployment, deployed: object) -> None:
    """The first step of rolling back a release that migrated (docs/deployment.md, "Rolling back"): its
    migration reversed with srcnet-manage on the deployed host, then applied again."""

    def applied() -> list[str]:
        shown = deployment.ssh("cp", ["srcnet-manage", "showmigrations", "rules"]).stdout
        return [line.split()[-1] for line in shown.splitlines() if line.strip().startswith("[X]")]

    *_, previous, latest = applied()
    reverse = deployment.ssh("cp", ["srcnet-manage", "migrate", "--noinput", "rules", previous])
    assert f"Unapplying rules.{latest}... OK" in reverse.stdout, reverse.stdout
    assert latest not in applied()
    forward = deployment.ssh("cp", ["srcnet-manage", "migrate", "--noinput"])
    assert f"Applying rules.{latest}... OK" in forward.stdout, forward.stdout
    assert applied()[-1] == latest

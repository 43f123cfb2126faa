"""A host that fails after the preflight leaves the others as they were (issue 14, "Bad input"), on the
booted hosts of the session, once site.yml has converged.

The failure: on ``w2`` an administrator edited the platform's configuration by hand (``/etc/srcnet/
srcnet.env``) and pinned it with ``chattr +i`` so that "nothing overwrites it", a common way to freeze a
file on a Linux host. The variables are all right, so the preflight passes; the next site.yml then finds
the file different from the inventory's, and the template task of the Workers play cannot replace it
("Operation not permitted"). That is a failure in the middle of the run, on one host, from the host's own
state, as production meets it (not an unreachable host, which Ansible reports apart from failures)."""

from __future__ import annotations

import time

from .conftest import DEPLOY_TIMEOUT, LAYOUT, Deployment, PlaybookRun

pytestmark = DEPLOY_TIMEOUT

BROKEN = "w2"
PINNED = "/etc/srcnet/srcnet.env"
BACKUP = "/root/srcnet.env.before-pin"
DRIFT = "# edited by hand on this host and pinned with chattr +i"
# The long-running services of each host (their state and start time must not move on the others).
UNITS = {
    "db": ["postgresql@15-main", "redis-server"],
    "cp": ["srcnet-web", "srcnet-beat", "srcnet-xrootd-exporter", "prometheus", "prometheus-alertmanager"],
    "w1": ["srcnet-worker"],
    "w2": ["srcnet-worker"],
    "s1": ["srcnet-xrootd"],
    "s2": ["srcnet-xrootd"],
}


def _units(deployment: Deployment, host: str) -> dict[str, str]:
    """Each service's ActiveState and the monotonic time it last became active (a restart moves it)."""
    states = {}
    for unit in [*UNITS[host], "prometheus-node-exporter"]:
        shown = deployment.ssh(
            host, ["systemctl", "show", unit, "--property=ActiveState,ActiveEnterTimestampMonotonic"]
        ).stdout.split()
        states[unit] = " ".join(sorted(shown))
    return states


def _workers_answering(deployment: Deployment, *, expected: set[str], within: float = 60) -> set[str]:
    """The Celery workers that answer a ping through the deployed broker, asked from the control plane."""
    code = (
        "from srcnet.celery import app; "
        "print('WORKERS', *sorted(k for r in app.control.ping(timeout=5) for k in r))"
    )
    deadline = time.monotonic() + within
    while True:
        out = deployment.ssh("cp", ["srcnet-manage", "shell", "-c", code]).stdout
        answering = set(out.split("WORKERS", 1)[1].split()) if "WORKERS" in out else set()
        if answering >= expected or time.monotonic() > deadline:
            return answering
        time.sleep(3)


def _portal_answers(deployment: Deployment) -> str:
    url = f"{deployment.web}/static/srcnet/portal.css"
    argv = ["--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", url]
    return deployment.curl(*argv, timeout=30, check=False).stdout.strip()


def _failed_hosts(run: PlaybookRun) -> set[str]:
    return {h for h, c in run.recap.items() if c["failed"] or c["unreachable"]}


def test_a_host_failing_mid_run_leaves_the_others_as_they_were(
    deployment: Deployment, deployed: object
) -> None:
    others = set(LAYOUT) - {BROKEN}
    workers = {"srcnet@w1", "srcnet@w2"}
    assert _workers_answering(deployment, expected=workers) == workers
    before = {host: _units(deployment, host) for host in LAYOUT}
    assert all("ActiveState=active" in s for states in before.values() for s in states.values()), before

    deployment.ssh(BROKEN, ["cp", "-p", PINNED, BACKUP])
    try:
        deployment.ssh(BROKEN, ["sh", "-c", f"echo '{DRIFT}' >> {PINNED} && chattr +i {PINNED}"])
        assert "i" in deployment.ssh(BROKEN, ["lsattr", PINNED]).stdout.split()[0]

        broken = deployment.playbook(label="one-host-fails")
        assert broken.returncode != 0, broken.output[-4000:]
        assert set(broken.recap) == set(LAYOUT), broken.recap
        # Only w2 failed, and after the preflight: in the Workers play, writing the pinned file.
        assert _failed_hosts(broken) == {BROKEN}, broken.recap
        assert broken.recap[BROKEN]["failed"] == 1, broken.recap
        fatal = [line for line in broken.output.splitlines() if line.startswith("fatal: [")]
        assert fatal and all(line.startswith(f"fatal: [{BROKEN}]") for line in fatal), fatal
        assert PINNED in fatal[0] and "Operation not permitted" in fatal[0], fatal
        # (failures go to stderr, display_failed_stderr: the play's own lines are read from stdout's part)
        played = broken.output.split("PLAY RECAP")[0]
        workers_play = played.split("PLAY [Workers]")[1]
        before_task, task, *_ = workers_play.split("TASK [srcnet_app : Write the configuration]")
        assert f"ok: [{BROKEN}]" in before_task, workers_play[:3000]
        section = task.split("TASK [")[0]
        assert "ok: [w1]" in section and f"[{BROKEN}]" not in section, section
        assert f"[{BROKEN}]" not in task, "w2 went on after its failed task"
        # The others finished their plays (the monitoring play after the failure too) and changed nothing.
        assert {h: broken.recap[h]["changed"] for h in others} == {h: 0 for h in others}, broken.recap
        assert "PLAY RECAP" in broken.output and "PLAY [Monitoring]" in broken.output
        # Their services run as before: same state, not restarted; the portal and both workers answer
        # (w2's worker too: it failed before any restart, with the configuration it started with).
        after = {host: _units(deployment, host) for host in LAYOUT}
        assert after == before, {h: (before[h], after[h]) for h in LAYOUT if after[h] != before[h]}
        assert _portal_answers(deployment) == "200"
        assert _workers_answering(deployment, expected=workers) == workers
        # The failed host stopped there: its hand edit is still in place.
        assert DRIFT in deployment.ssh(BROKEN, ["cat", PINNED]).stdout

        # Repaired (the pin removed), the next run puts the inventory's configuration back on w2 alone...
        deployment.ssh(BROKEN, ["chattr", "-i", PINNED])
        repaired = deployment.playbook(label="repaired-host")
        assert repaired.returncode == 0, repaired.output[-4000:]
        assert not _failed_hosts(repaired), repaired.recap
        assert repaired.recap[BROKEN]["changed"] > 0, repaired.recap
        assert {h: repaired.recap[h]["changed"] for h in others} == {h: 0 for h in others}, repaired.recap
        assert DRIFT not in deployment.ssh(BROKEN, ["cat", PINNED]).stdout
        # ... whose worker restarts with it (the configuration changed), and answers again.
        assert _units(deployment, BROKEN)["srcnet-worker"] != before[BROKEN]["srcnet-worker"]
        assert "ActiveState=active" in _units(deployment, BROKEN)["srcnet-worker"]
        assert _workers_answering(deployment, expected=workers) == workers
        assert {h: _units(deployment, h) for h in others} == {h: before[h] for h in others}

        # ... and the run after that changes nothing on it (the repaired run changed nothing on the
        # others, above; site.yml's own idempotence on every host is test_site.py's).
        again = deployment.playbook("--limit", BROKEN, label="after-repair")
        assert again.returncode == 0, again.output[-4000:]
        assert again.changed() == {BROKEN: 0}, again.recap
    finally:
        # Whatever happened above, w2 is left unpinned with the configuration it had before the test.
        deployment.ssh(BROKEN, ["chattr", "-i", PINNED], check=False)
        deployment.ssh(BROKEN, ["sh", "-c", f"cp -p {BACKUP} {PINNED} && rm -f {BACKUP}"], check=False)

"""Nothing of a long-haul network outlives it: after its context ends (normally or by an exception), and
after `python -m localnet down` for one whose owner was killed, no namespace, host interface, TUN device,
emulator or XRootD process of it remains. Each test uses a state folder of its own, so the module's
network (tests/longhaul/conftest.py) is not touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from localnet import longhaul as lh
from localnet.processes import is_alive
from localnet.state import PROJECT_ROOT, StateDir
from localnet.xrootd import SiteTokens

# The database only for the plan (long_haul_plan reads the reference topology in a rolled-back transaction).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(150), pytest.mark.django_db]


@pytest.fixture
def other_state(test_state: StateDir) -> Iterator[StateDir]:
    state = StateDir.named(f"{test_state.path.name}-lh-cleanup")
    yield state
    lh.stop_network(state)  # only if a test failed half-way


# The sites enforce tokens of an issuer on the host's loopback that nobody runs: no request is made of them
# here, but each site's forwarder to it (localnet/forwarder.py) is started, and must go with the network too.
NOBODYS_PORT = 45999  # unprivileged (the forwarder binds it as the service account), in the namespaces only
NOBODYS = SiteTokens(
    issuers=(f"https://127.0.0.1:{NOBODYS_PORT}/realms/srcnet",), audience="nobody", base_path="/srcnet/"
)


def _tun_devices_on_host() -> set[str]:
    out = subprocess.run(
        ["ip", "-o", "link", "show", "type", "tun"], capture_output=True, text=True, check=True
    )
    return {line.split(":")[1].strip() for line in out.stdout.splitlines()}


def _assert_gone(network: lh.LongHaul, pids: list[int], tuns_before: set[str]) -> None:
    wannet = lh.wannet()
    assert wannet.leftovers(network.net) == []
    assert not [pid for pid in pids if is_alive(pid)], pids
    assert _tun_devices_on_host() <= tuns_before
    assert lh.current_network(network.state) is None


def test_the_context_removes_everything_also_after_an_exception(other_state, long_haul_plan):
    tuns = _tun_devices_on_host()
    with pytest.raises(RuntimeError, match="boom"), lh.long_haul(other_state, long_haul_plan) as network:
        sites = network.start_sites(
            names={e: f"LHC-{e}" for e in long_haul_plan.endpoints},
            tokens=dict.fromkeys(long_haul_plan.endpoints, NOBODYS),
        )
        pid_files = [other_state.path / "pids" / f"xrootd-{site.name}.pid" for site in sites.values()]
        forwarders = [f"issuer-path-{e}-{NOBODYS_PORT}" for e in long_haul_plan.endpoints]
        pid_files += [other_state.path / "pids" / f"{name}.pid" for name in forwarders]
        pids = [network.net.emulator_pid, *(int(f.read_text()) for f in pid_files)]
        router = network.net.ns_router
        links = subprocess.run(
            ["ip", "-n", router, "-o", "link", "show", "type", "tun"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "wan" in links
        # A stray process in a site's namespace (a copy under way) goes with the network too.
        sleeper = network.net.popen(network.site_of("UKSRC_DISK"), ["sleep", "300"])
        pids.append(sleeper.pid)
        assert all(is_alive(pid) for pid in pids)
        raise RuntimeError("boom")
    sleeper.wait(5)
    _assert_gone(network, pids, tuns)


def test_localnet_down_removes_a_network_whose_owner_was_killed(other_state, long_haul_plan, tmp_path):
    """The owner (a process holding the network) is SIGKILLed: nothing ran its clean-up; `python -m localnet
    down` for its state removes the network from the record the state keeps."""
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(__import__("json").dumps(long_haul_plan.to_json()))
    ready = tmp_path / "ready"
    code = textwrap.dedent(
        f"""
        import json, pathlib, time
        from localnet import longhaul as lh
        from localnet.state import StateDir
        state = StateDir.named({other_state.path.name!r})
        plan = lh.Plan.from_json(json.loads(pathlib.Path({str(plan_file)!r}).read_text()))
        network = lh.start_network(state, plan)
        pathlib.Path({str(ready)!r}).write_text(str(network.net.emulator_pid))
        time.sleep(120)
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert owner.poll() is None, "the owner died while bringing the network up"
            assert time.monotonic() < deadline, "the network did not come up within 60 s"
            time.sleep(0.1)
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(10)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
    network = lh.current_network(other_state)
    assert network is not None and is_alive(int(ready.read_text()))
    tuns = _tun_devices_on_host()
    down = subprocess.run(
        [sys.executable, "-m", "localnet", "down", "--state", other_state.path.name],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert down.returncode == 0, down.stderr
    assert "long-haul network" in down.stdout
    _assert_gone(network, [int(ready.read_text())], tuns)

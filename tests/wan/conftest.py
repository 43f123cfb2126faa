"""Fixtures for the WAN emulator tests (standard library + pytest).

The tests need root (network namespaces, TUN): they fail, never skip, when
that is missing, because a skipped fidelity test proves nothing.
"""

import os
import signal
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WAN = os.path.join(REPO, "bench", "wan")
sys.path.insert(0, WAN)

import wanpath  # noqa: E402

# Every test is bounded: SIGALRM raises inside the test, so context managers
# still tear their paths down.  Generous compared with the expected run time.
# (Under pytest-timeout's signal method this takes over the same ITIMER_REAL
# for the duration of the test, with the shorter limit.)
TEST_TIMEOUT_S = 90


class WanTestTimeout(Exception):
    pass


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "wan_timeout(seconds): a longer bound than TEST_TIMEOUT_S (a benchmark's smoke run)"
    )


@pytest.fixture(autouse=True)
def _bounded(request):
    marker = request.node.get_closest_marker("wan_timeout")
    limit = int(marker.args[0]) if marker else TEST_TIMEOUT_S

    def on_alarm(signum, frame):
        raise WanTestTimeout(f"test exceeded {limit} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(limit)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="session", autouse=True)
def _prerequisites():
    assert os.geteuid() == 0, "tests/wan needs root (netns, TUN, sysctls)"
    assert os.path.exists("/dev/net/tun"), "/dev/net/tun missing"
    wanpath.build_emulator()


@pytest.fixture(autouse=True)
def _no_leftovers():
    """After each test nothing of this process's paths may remain."""
    yield
    mine = f"{wanpath.PREFIX}{os.getpid()}-"
    left = [ns for ns in wanpath.list_namespaces() if ns.startswith(mine)]
    assert not left, f"namespaces left behind: {left}"


@pytest.fixture(scope="session")
def wan_issuer(test_state, token_issuer):
    """The session's token issuer (tests/conftest.py), as the harness's sites trust it (wantokens.py)."""
    from wantokens import WanIssuer

    from localnet.xrootd import trust_bundle

    return WanIssuer(token_issuer, trust_bundle(test_state))

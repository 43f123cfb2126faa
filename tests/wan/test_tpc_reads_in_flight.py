"""A root:// pull sizes its reads in flight from the path it runs on (issue 32, item 2): the site's path rate
(`xrdcp-wan --rate`, as the xrootd_site role and localnet's sites set it) times the round trip the pull
measures to the source itself, with a quarter more for the queue, at least `--inflight`, within
`--max-memory`, which a longer path than the memory covers runs at, saying so. The pull program runs as the
destination's server runs it, in end B of an emulated path, against a token-enforcing site at end A."""

import math
import os
import re

import pytest
from wanpath import emulated_path, retune
from xrdsite import PLUGIN_BUILD, XRD_ENV, XrootdSite, plugin_built

CHUNK = 8 << 20
RATE = 125 << 20  # --rate 125m: bytes/s
PLAN = re.compile(r"reads in flight: (\d+) x 8 MiB \(rate 125 MiB/s, rtt ([\d.]+) ms\)")


def _pull(path, site, name: str, dest: str, *options: str):
    argv = [os.path.join(PLUGIN_BUILD, "xrdcp-wan"), "-v", "--rate", "125m", "--inflight", "2", *options]
    return path.run_b(
        [*argv, site.read_url(name), dest], capture_output=True, text=True, env=XRD_ENV, timeout=120
    )


def _expected(rtt_ms: float) -> int:
    return max(2, math.ceil(RATE * rtt_ms / 1e3 * 1.25 / CHUNK) + 1)


@pytest.mark.wan_timeout(300)
def test_a_pulls_reads_in_flight_follow_the_round_trip_it_measures(tmp_path, wan_issuer):
    assert plugin_built(), "xrootd-plugins/build lacks the plugin: run xrootd-plugins/build.sh"
    data = os.urandom(48 << 20)
    with emulated_path(rtt_ms=200, rate_mbit=1000) as path, XrootdSite(path, "a", tokens=wan_issuer) as site:
        with open(site.local_path("product.bin"), "wb") as f:
            f.write(data)
        os.chmod(site.local_path("product.bin"), 0o644)
        seen = {}
        for rtt in (200.0, 20.0):
            retune(path, rtt)
            dest = str(tmp_path / f"pulled-{rtt:g}.bin")
            run = _pull(path, site, "product.bin", dest)
            assert run.returncode == 0, run.stdout + run.stderr + site.log_tail()
            plan = PLAN.search(run.stdout)
            assert plan, run.stdout
            reads, measured = int(plan.group(1)), float(plan.group(2))
            # The stat is one round trip on the open connection: the path's, and not much more.
            assert rtt * 0.95 <= measured <= rtt * 1.3 + 5, (rtt, measured)
            assert reads == _expected(measured), (rtt, measured, reads)
            with open(dest, "rb") as f:
                assert f.read() == data
            seen[rtt] = reads
        # 200 ms: 125 MiB/s x 0.2 s x 1.25 = 3.9 chunks, 4 + 1 or more; at 20 ms the floor (--inflight 2).
        assert seen[200.0] >= 5 and seen[20.0] == 2, seen

        # Memory for one read only: the pull runs on it, complete, and says why it is slower than the path.
        retune(path, 200.0)
        dest = str(tmp_path / "capped.bin")
        run = _pull(path, site, "product.bin", dest, "--max-memory", "8m")
        assert run.returncode == 0, run.stdout + run.stderr
        assert "reads in flight: 1 x 8 MiB" in run.stdout, run.stdout
        assert "the memory cap allows 8 MiB: the copy runs slower than the path" in run.stderr, run.stderr
        with open(dest, "rb") as f:
            assert f.read() == data

"""A small star topology for planner and simulator tests: telescopes and centres around one exchange."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from schedulers.planning.types import LinkSpec, PathSpec, SiteSpec, TelescopeSpec, Topology

HUB = "X"


def star(
    *,
    telescopes: tuple[str, ...] = ("T1", "T2"),
    srcs: Mapping[str, float] | None = None,
    centre: str | None = "Z",
    capacity: Mapping[str, float] | None = None,
    rtt_ms: float = 50.0,
    budget_bps: float = 20e9,
    peak_bps: float = 70e9,
    window_bytes: float = 2**30,
    buffer_bytes: float = 2e15,
) -> Topology:
    """Each site hangs off hub X by one link named ``x-<site>``; paths go site -> X -> site.

    ``capacity`` overrides a link's capacity (default 100 Gbit/s) by link name."""
    srcs = dict(srcs if srcs is not None else {"A": 2.0, "B": 1.0, "C": 1.0, "D": 0.5})
    capacity = capacity or {}
    ends = [*telescopes, *srcs, *([centre] if centre else [])]
    links = tuple(
        LinkSpec(f"x-{s}", capacity.get(f"x-{s}", 100e9), rtt_ms / 2, 0.0, 1e6, s, HUB) for s in ends
    )
    sites = [SiteSpec(name, w, budget_bps, peak_bps) for name, w in srcs.items()]
    if centre:
        sites.append(SiteSpec(centre, 0.0, 100e9, 100e9, is_distribution_centre=True))
    storage = [s.name for s in sites]
    paths = [PathSpec(a, b, (f"x-{a}", f"x-{b}")) for a in [*telescopes, *storage] for b in storage if a != b]
    tels = tuple(TelescopeSpec(t, f"x-{t}", 1e15, buffer_bytes) for t in telescopes)
    return Topology(tels, tuple(sites), links, tuple(paths), window_bytes)


def one_path(*, capacity_bps: float, rtt_ms: float, window_bytes: float) -> Topology:
    """One telescope, one SRC, one link: for finish times checked by hand."""
    link = LinkSpec("t-a", capacity_bps, rtt_ms, 0.0, 0.0, "T", "A")
    return Topology(
        (TelescopeSpec("T", "t-a", 1e15, 2e15),),
        (SiteSpec("A", 1.0, capacity_bps, capacity_bps),),
        (link,),
        (PathSpec("T", "A", ("t-a",)),),
        window_bytes,
    )


def setup_with(setting: str, value: str) -> subprocess.CompletedProcess[str]:
    """``django.setup()`` in a process of its own with ``SRCNET_<setting>=value``: how a bad setting stops
    the process before anything runs."""
    from localnet.state import PROJECT_ROOT

    env = {**os.environ, f"SRCNET_{setting}": value, "DJANGO_SETTINGS_MODULE": "srcnet.settings"}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

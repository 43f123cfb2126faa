"""A copy runs no more streams than its destination's third-party copy can open for its file: HTTP-TPC
pulls in 16 MiB blocks, one stream per block in flight (docs/transfers.md, "What runs on the wire"). The
plan asks no copy for streams it cannot run; streams a product's files cannot take go to more copies at
once; and a job's metadata says the streams that ran, which is what its lane's measurement divides by."""

from __future__ import annotations

from dataclasses import replace

from schedulers.leg_submission import wire_streams
from schedulers.planning import PlanConfig, Product, ReplicaPolicy, plan
from schedulers.planning.dispatch import JobHints, job_hints
from schedulers.planning.tuning import streams_and_files, streams_per_copy, streams_per_copy_cap
from schedulers.planning.types import LiveState, Measurement
from topology.tpc_streams import HTTP_TPC_BLOCK_BYTES

from .helpers import one_path

MIB = 2**20
BLOCK = float(HTTP_TPC_BLOCK_BYTES)
CONFIG = PlanConfig()


def test_a_copy_runs_one_stream_per_block_and_never_more_than_the_configured_per_file() -> None:
    assert streams_per_copy(32 * MIB, BLOCK, CONFIG) == 2
    assert streams_per_copy(33 * MIB, BLOCK, CONFIG) == 3  # a partial block is a block
    assert streams_per_copy(1 * MIB, BLOCK, CONFIG) == 1
    assert streams_per_copy(2**30, BLOCK, CONFIG) == CONFIG.max_streams_per_file
    assert streams_per_copy(32 * MIB, 0.0, CONFIG) == CONFIG.max_streams_per_file  # root://: any file
    # Files follow the streams a copy can run: 6 streams take 3 copies of 32 MiB by HTTP-TPC, 2 by root://.
    assert streams_and_files(60e6, 10e6, 8, CONFIG, per_copy=2) == (6, 3)
    assert streams_and_files(60e6, 10e6, 8, CONFIG) == (6, 2)


def far_lane(block_bytes: float):  # type: ignore[no-untyped-def]
    topology = one_path(capacity_bps=100e6, rtt_ms=223.0, window_bytes=2**30)
    (site,) = topology.sites
    return replace(topology, sites=(replace(site, tpc_block_bytes=block_bytes),))


def stream_limited() -> LiveState:
    """A lane whose streams deliver 5 Mbit/s each against their 38 Gbit/s window ceiling: the plan wants
    many streams for its rate (the 223 ms lane of the long-haul local network, docs/benchmarks.md)."""
    return LiveState(measurements=(Measurement("T", "A", 2, 10e6, paced_bps=50e6),) * 3)


def test_streams_a_products_small_files_cannot_run_go_to_more_copies_at_once() -> None:
    products = [Product(f"p{i}", "T", 64 * MIB, 0.0, files=2) for i in range(4)]
    davs = plan(products, far_lane(BLOCK), ReplicaPolicy(), state=stream_limited())
    root = plan(products, far_lane(0.0), ReplicaPolicy(), state=stream_limited())
    wanted = root.legs[0].streams  # by root:// each 32 MiB copy runs up to max_streams_per_file (4)
    assert wanted >= 10
    leg = davs.legs[0]
    # By HTTP-TPC a 32 MiB copy runs 2: the lane keeps ceil(wanted / 2) copies in flight (at most
    # max_files), and counts no stream its copies cannot run.
    assert leg.lane_copies == min(CONFIG.max_files, -(-wanted // 2)) > root.legs[0].lane_copies
    assert leg.streams <= leg.lane_copies * 2
    hints = job_hints(leg)
    assert hints.streams_per_file <= 2
    assert job_hints(root.legs[0]).streams_per_file > 2


def test_without_copies_in_flight_the_lane_still_counts_only_the_streams_its_files_run() -> None:
    products = [Product(f"p{i}", "T", 64 * MIB, 0.0, files=2) for i in range(2)]
    config = PlanConfig(copies_in_flight=False)
    leg = plan(products, far_lane(BLOCK), ReplicaPolicy(), state=stream_limited(), config=config).legs[0]
    assert (leg.files, leg.streams) == (2, 4)  # two 32 MiB copies, two blocks each


def hints(per_file: int, files: int) -> JobHints:
    return JobHints(
        priority=3,
        streams=per_file * files,
        concurrent_files=files,
        max_rate_bps=50e6,
        activity="test",
        streams_per_file=per_file,
        lane_files=files,
    )


def test_a_jobs_metadata_counts_the_streams_its_files_run() -> None:
    # Three streams asked per copy: a 16 MiB file runs one, a 48 MiB file three; two at once run 4.
    assert wire_streams("davs", hints(3, 2), [16 * MIB, 48 * MIB]) == 4
    assert wire_streams("davs", hints(3, 2), [2**30, 2**30]) == 6
    assert (
        wire_streams("root", hints(3, 2), [16 * MIB, 48 * MIB]) == 6
    )  # XRootD TPC: N sub-streams on any file
    assert wire_streams("davs", hints(3, 2), []) == 6  # no file known: what was asked


def _runs(per_copy: int, per_copy_bps: float, count: int = 3, files: int = 2) -> tuple[Measurement, ...]:
    """``count`` jobs of ``files`` copies at once, each copy over ``per_copy`` streams at ``per_copy_bps``."""
    job = Measurement("T", "A", per_copy * files, per_copy_bps * files, files=files)
    return (job,) * count


def test_more_streams_per_copy_are_capped_where_the_lanes_copies_showed_they_did_not_pay() -> None:
    # The 223 ms davs:// lane of the long-haul network: 45 Mbit/s per copy with one stream, 30 with two.
    worse = (*_runs(1, 45e6), *_runs(2, 30e6))
    assert streams_per_copy_cap(worse, "T", "A") == 1
    # Two that paid: nothing to cap (the plan's physics may go higher still).
    assert streams_per_copy_cap((*_runs(1, 30e6), *_runs(2, 45e6)), "T", "A") is None
    # Too few of a count to judge it, another lane's, or one count only: nothing says.
    assert streams_per_copy_cap((*_runs(1, 45e6), *_runs(2, 30e6, count=2)), "T", "A") is None
    assert streams_per_copy_cap(worse, "T", "B") is None
    assert streams_per_copy_cap(_runs(2, 30e6, count=6), "T", "A") is None
    # The best of three, where a count above it did worse: 2.
    assert streams_per_copy_cap((*_runs(1, 30e6), *_runs(2, 45e6), *_runs(3, 40e6)), "T", "A") == 2


def test_the_plan_asks_a_copy_for_no_more_streams_than_its_lanes_copies_showed_pay() -> None:
    products = [Product(f"p{i}", "T", 64 * MIB, 0.0, files=2) for i in range(4)]
    tried = LiveState(measurements=(*_runs(1, 45e6), *_runs(2, 30e6)))
    untried = LiveState(measurements=_runs(2, 30e6, count=6))  # as slow per stream, no 1-stream copies
    capped = plan(products, far_lane(BLOCK), ReplicaPolicy(), state=tried).legs[0]
    free = plan(products, far_lane(BLOCK), ReplicaPolicy(), state=untried).legs[0]
    assert job_hints(free).streams_per_file == 2  # the stream model wants more than a copy can run
    assert job_hints(capped).streams_per_file == 1
    # The streams the cap takes from each copy go to more copies at once, as block limits do.
    assert capped.lane_copies >= free.lane_copies

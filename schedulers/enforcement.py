"""The plan's limits, enforced through the transfertool's configuration calls (FTS3's ``/config/links``), so
that the platform's own service and a real FTS3 obey the same plan and nothing in ``schedulers/`` writes the
transfer service's rows.

A reserved path wants a fixed concurrency: each hop's link gets the plan's concurrent files as both
``min_active`` and ``max_active`` with the optimizer off. FTS3 treats a range with min = max as fixed
whatever its optimizer mode, so a real FTS3 holds the link at exactly that value too."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from transfertools.interface import LinkConfig, Transfertool, TransfertoolError

# A file name for a storage URL when only the storage element of an endpoint is wanted.
_PROBE = "probe"


def hop_links(
    tool: Transfertool,
    hops: Sequence[tuple[Any, Any]],
    scheme: str,
    files: int,
    *,
    nostreams: int | None = None,
) -> list[LinkConfig]:
    """The link limits of one job's hops (pairs of storage endpoints): ``files`` copies at once, fixed;
    with ``nostreams``, also the TCP streams of each copy on the link that asks none of its own (FTS3's
    link ``nostreams``: how the plan's streams reach the jobs Rucio's conveyor submits, which carry none);
    None leaves the link's as it is."""
    return [
        LinkConfig(
            source=tool.storage_element(source.url(scheme, _PROBE)),
            destination=tool.storage_element(target.url(scheme, _PROBE)),
            min_active=files,
            max_active=files,
            optimizer_mode=0,
            nostreams=nostreams,
        )
        for source, target in hops
    ]


# Where a push cycle keeps, on its transfertool, the link limits it has set (``links_set_once``).
_SET_THIS_CYCLE = "_srcnet_links_set_this_cycle"


@contextmanager
def links_set_once(tool: Transfertool) -> Iterator[None]:
    """Within the block (one push cycle), a link limit already set to the same values is not set again: a
    cycle submitting 50 products on one lane set it 50 times (a request each to an FTS3; 25 ms of each
    submission to the embedded service, bench/control_plane, 2026-11-29)."""
    setattr(tool, _SET_THIS_CYCLE, {})
    try:
        yield
    finally:
        delattr(tool, _SET_THIS_CYCLE)


def enforce_links(tool: Transfertool, links: Sequence[LinkConfig]) -> None:
    """Set every link's limits, or none of them: a request to an FTS3 is its own transaction, so when one
    is refused those already set are put back as they were (or removed, if they were new) and the refusal
    is raised. Inside ``links_set_once``, links already set so are left alone."""
    remembered: dict[tuple[str, str], LinkConfig] | None = getattr(tool, _SET_THIS_CYCLE, None)
    if remembered is not None:
        links = [link for link in links if remembered.get(link.pair) != link]
        if not links:
            return
    _set_all(tool, links)
    if remembered is not None:
        remembered.update((link.pair, link) for link in links)


def _set_all(tool: Transfertool, links: Sequence[LinkConfig]) -> None:
    before = {c.pair: c for c in tool.link_configs()} if len(links) > 1 else {}
    done: list[LinkConfig] = []
    try:
        for link in links:
            tool.set_link_config(link)
            done.append(link)
    except TransfertoolError as refused:
        try:
            for link in reversed(done):
                previous = before.get(link.pair)
                if previous is None:
                    tool.delete_link_config(link.name)
                else:
                    tool.set_link_config(previous)
        except TransfertoolError as exc:
            message = f"{refused}; and putting back the links set before it failed: {exc}"
            raise TransfertoolError(message) from exc
        raise

"""Pure scheduling rules of the transfer service (no Django): strict priority, activity shares, caps.

These mirror FTS3's scheduler: within one link queue only the highest waiting priority is served; the
free slots of a link are shared among the activities present by weight (activities without a weight fall
under ``default``); a copy also needs a free slot at its source's outbound and destination's inbound cap.
FTS3 throws a weighted die per slot; we pick the activity furthest below its weighted share of what the
link admitted recently, which gives the same ratios without randomness (tests can check them exactly).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def share_key(activity: str, weights: Mapping[str, float]) -> str:
    """The share an activity counts under: its own if it has a weight, else ``default``."""
    return activity if activity in weights else "default"


def share_weight(activity: str, weights: Mapping[str, float]) -> float:
    """The weight of ``activity``: its own, else the ``default`` weight, else 1."""
    if activity in weights:
        return weights[activity]
    return weights.get("default", 1.0)


def pick_activity(
    present: Iterable[str], weights: Mapping[str, float], admitted: Mapping[str, int]
) -> str | None:
    """The activity that gets the next slot of a link.

    ``present``: activities with a file waiting; ``admitted``: files each activity got on this link recently
    (including earlier slots of this round). None if every present activity has weight 0."""
    candidates = sorted({a for a in present if share_weight(a, weights) > 0})
    if not candidates:
        return None
    total_weight = sum(share_weight(a, weights) for a in candidates)
    total_admitted = sum(admitted.get(a, 0) for a in candidates) + 1

    def deficit(activity: str) -> float:
        return share_weight(activity, weights) / total_weight * total_admitted - admitted.get(activity, 0)

    return max(candidates, key=deficit)


def most_specific(source_se: str, dest_se: str, rows: Mapping[tuple[str, str], object]) -> object | None:
    """The configuration row for a link: exact pair, then source to any, any to destination, any to any."""
    for key in ((source_se, dest_se), (source_se, "*"), ("*", dest_se), ("*", "*")):
        if key in rows:
            return rows[key]
    return None

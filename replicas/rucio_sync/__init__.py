"""Pure helpers of the Rucio adapter (no Rucio client, no database): naming, distances, state mapping.

``replicas.rucio`` is the only module that talks to Rucio; what can be decided without it lives here so
it can be tested alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Rucio 41 generic schema (rucio.common.schema.generic): SCOPE, NAME, RSE.
SCOPE_RE = re.compile(r"^[a-zA-Z_\-.0-9]+$")
SCOPE_MAX = 25
NAME_RE = re.compile(r"^[/A-Za-z0-9][/A-Za-z0-9\.\-_]*$")
NAME_MAX = 250
RSE_RE = re.compile(r"^([A-Z0-9]+([_-][A-Z0-9]+)*)$")

# What the platform's own rules carry in their comment, to tell them from rules others created.
RULE_COMMENT_PREFIX = "srcnet:"
# How a replica's reason starts when a Rucio rule put it there (the push loop leaves those to Rucio).
RUCIO_RULE_REASON = "rucio rule"

DEFAULT_ACTIVITY = "SKA Data Products"
# The SKA activities the local server's policy package (rucio/policy/ska_rucio_policy) accepts in addition
# to Rucio's generic ones; a production server needs the same names in its policy package.
SKA_ACTIVITIES = (
    "SKA Data Products",
    "SKA Data Challenge",
    "SKA Calibration",
    "SKA Reprocessing",
    "SKA User Request",
)

# Rule/lock states of Rucio -> the project's replica states (values of replicas.choices.ReplicaState).
RULE_STATE_TO_REPLICA = {
    "OK": "available",
    "REPLICATING": "copying",
    "STUCK": "failed",
    "SUSPENDED": "failed",
    "WAITING_APPROVAL": "planned",
    "INJECT": "planned",
}


class NamingError(ValueError):
    """A scope, DID name or RSE name Rucio would refuse."""


def check_scope(scope: str) -> None:
    if not scope or len(scope) > SCOPE_MAX or not SCOPE_RE.match(scope):
        raise NamingError(f"scope {scope!r} is not a valid Rucio scope (up to {SCOPE_MAX} of A-Za-z0-9._-)")


def check_did_name(name: str) -> None:
    if not name or len(name) > NAME_MAX or not NAME_RE.match(name):
        raise NamingError(
            f"DID name {name!r} is not a valid Rucio name (letters, digits, '/', '.', '-', '_'; "
            f"first a letter, digit or '/'; at most {NAME_MAX} characters)"
        )


def check_rse_name(name: str) -> None:
    if not RSE_RE.match(name or ""):
        raise NamingError(f"RSE name {name!r} is not valid (upper-case letters and digits joined by _ or -)")


def dataset_meta(product: object) -> dict[str, str]:
    """A product's metadata as Rucio's own DID columns, set when its dataset is made, so Rucio's
    subscriptions (the transmogrifier) can select new datasets by them: ``project`` (the observing project's
    code), ``datatype`` (the product type), ``stream_name`` (the telescope)."""
    meta = {"stream_name": str(product.telescope.name)}  # type: ignore[attr-defined]
    project = getattr(product, "project", None)
    if project is not None:
        meta["project"] = str(project.code)
    if getattr(product, "product_type", ""):
        meta["datatype"] = str(product.product_type)  # type: ignore[attr-defined]
    return meta


def file_did_name(product_name: str, file_name: str) -> str:
    """A product file's DID name: ``<product>/<file>``. With the RSEs' ``lfn2pfn_algorithm=identity`` the
    file's path under every storage prefix is ``<scope>/<product>/<file>``, which is exactly where the
    platform keeps it (``ProductFile.relative_path``)."""
    if "/" in file_name:
        raise NamingError(f"file name {file_name!r} must not contain '/'")
    return f"{product_name}/{file_name}"


def rse_expression(rse_names: Sequence[str]) -> str:
    """The union of the named RSEs (``A|B|C``), sorted so the same set always gives the same text."""
    names = sorted(set(rse_names))
    if not names:
        raise NamingError("a rule needs at least one destination RSE")
    for name in names:
        check_rse_name(name)
    return "|".join(names)


@dataclass(frozen=True)
class PathMetrics:
    """What the distance ranking reads of one network path between two sites."""

    rtt_ms: float
    opex_eur_per_year: float


def distance_from_path(rtt_ms: float, opex_eur_per_year: float) -> int:
    """Rucio's distance (lower is preferred) of a path: ``1 + ceil(rtt_ms / 10) + round(opex / 1e6)``.

    One rank per started 10 ms of round-trip time (London-Canberra 259 ms -> 26) plus one per
    EUR 1M a year of operating cost (a leased intercontinental lambda, EUR 1.85M -> 2), so a cheaper
    path wins over a dearer one of similar latency. Always at least 1 (0 would mean 'same RSE')."""
    if (
        rtt_ms < 0
        or opex_eur_per_year < 0
        or not (math.isfinite(rtt_ms) and math.isfinite(opex_eur_per_year))
    ):
        raise ValueError(f"bad path metrics rtt={rtt_ms!r} opex={opex_eur_per_year!r}")
    return 1 + math.ceil(rtt_ms / 10.0) + round(opex_eur_per_year / 1_000_000)


def distance_table(
    endpoint_sites: Mapping[str, int],
    paths: Iterable[tuple[int, int, PathMetrics]],
) -> dict[tuple[str, str], int]:
    """(source RSE, destination RSE) -> distance, for every pair of endpoints whose sites are joined by a
    path in that direction; with several paths between two sites the best (lowest) distance wins.
    Endpoints of the same site get no row (Rucio does not need one to copy within a site)."""
    best: dict[tuple[int, int], int] = {}
    for src_site, dst_site, metrics in paths:
        if src_site == dst_site:
            continue
        value = distance_from_path(metrics.rtt_ms, metrics.opex_eur_per_year)
        key = (src_site, dst_site)
        best[key] = min(value, best.get(key, value))
    table: dict[tuple[str, str], int] = {}
    for src, src_site in endpoint_sites.items():
        for dst, dst_site in endpoint_sites.items():
            if src != dst and (src_site, dst_site) in best:
                table[(src, dst)] = best[(src_site, dst_site)]
    return table


def replica_state_of_locks(lock_states: Iterable[str]) -> str:
    """One destination's replica state from its locks (one per file) of one rule."""
    states = set(lock_states)
    if not states:
        return "planned"
    if "STUCK" in states:
        return "failed"
    if states == {"OK"}:
        return "available"
    return "copying"


def protocol_domains(priority: int) -> dict[str, dict[str, int]]:
    """Rucio protocol domains with one priority for every operation (1 is preferred)."""
    return {
        "lan": {"read": priority, "write": priority, "delete": priority},
        "wan": {
            "read": priority,
            "write": priority,
            "delete": priority,
            "third_party_copy_read": priority,
            "third_party_copy_write": priority,
        },
    }


def domains_equal(have: Mapping[str, Any], want: Mapping[str, Mapping[str, int]]) -> bool:
    """Whether an RSE protocol's domains (as Rucio lists them) already give every operation ``want``'s
    priority: the sync leaves such a protocol alone."""
    for domain, ops in want.items():
        got = have.get(domain) or {}
        for op, prio in ops.items():
            if int(got.get(op) or 0) != prio:
                return False
    return True

"""The push planner (pure: no Django). See docs/scheduler.md."""

from .planner import plan
from .policies import DegradeStep, PolicyKind, ReplicaPolicy
from .types import (
    Lane,
    Leg,
    LegRole,
    LinkSpec,
    LiveState,
    Measurement,
    PathSpec,
    Plan,
    PlanConfig,
    PlanEvent,
    PlanInputError,
    PlanMode,
    Product,
    SiteSpec,
    TelescopeSpec,
    Topology,
)

__all__ = [
    "DegradeStep",
    "Lane",
    "Leg",
    "LegRole",
    "LinkSpec",
    "LiveState",
    "Measurement",
    "PathSpec",
    "Plan",
    "PlanConfig",
    "PlanEvent",
    "PlanInputError",
    "PlanMode",
    "PolicyKind",
    "Product",
    "ReplicaPolicy",
    "SiteSpec",
    "TelescopeSpec",
    "Topology",
    "plan",
]

"""The push plan's configuration as the deployment sets it (SRCNET_PLAN_* settings), for every caller that
plans for real: the push loop's cycles and the API's plan preview plan alike. In Rucio mode
(``SRCNET_PUSH_THROUGH=rucio``) the plans make no relay legs (``PlanConfig.relays``)."""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .planning import PlanConfig, PlanInputError
from .planning.validate import validate_config
from .rucio_placement import through_rucio

# setting -> (PlanConfig field, parser)
_FIELDS = {
    "SRCNET_PLAN_MAX_FILES": ("max_files", int),
    "SRCNET_PLAN_COPY_OVERHEAD_S": ("copy_overhead_s", float),
    "SRCNET_PLAN_COPY_SETUP_RTTS": ("copy_setup_rtts", float),
}

# setting ("0" or "1") -> PlanConfig field (its default is PlanConfig's)
_FLAGS = {
    "SRCNET_PLAN_COPIES_IN_FLIGHT": "copies_in_flight",
    "SRCNET_PLAN_DRAIN_TOGETHER": "drain_together",
}


def plan_config() -> PlanConfig:
    """PlanConfig's defaults with the deployment's SRCNET_PLAN_* settings; a bad value is an
    ImproperlyConfigured naming the setting."""
    values: dict[str, object] = {}
    for name, (field, parse) in _FIELDS.items():
        text = str(getattr(settings, name, getattr(PlanConfig, field)))
        try:
            values[field] = parse(text)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {text!r} is not a number") from None
    for name, field in _FLAGS.items():
        flag = str(getattr(settings, name, "1" if getattr(PlanConfig, field) else "0"))
        if flag not in ("0", "1"):
            raise ImproperlyConfigured(f"{name}: {flag!r} is neither 0 nor 1")
        values[field] = flag == "1"
    # Rucio mode carries no relay legs (schedulers/rucio_placement.py): its plans make none.
    values["relays"] = not through_rucio()
    config = replace(PlanConfig(), **values)  # type: ignore[arg-type]
    try:
        validate_config(config)
    except PlanInputError as exc:
        name = next((n for n, (f, _) in _FIELDS.items() if str(exc).startswith(f)), "SRCNET_PLAN_*")
        raise ImproperlyConfigured(f"{name}: {exc}") from None
    return config

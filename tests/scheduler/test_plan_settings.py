"""The deployment's SRCNET_PLAN_* settings reach the plan (the loop's cycles and the API's preview), and a
bad one is refused by name."""

from __future__ import annotations

import pytest
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from schedulers.plan_settings import plan_config
from schedulers.planning import PlanConfig


def test_the_defaults_are_the_plans_own() -> None:
    assert plan_config() == PlanConfig()


@override_settings(
    SRCNET_PLAN_MAX_FILES="32",
    SRCNET_PLAN_COPY_OVERHEAD_S="2.5",
    SRCNET_PLAN_COPY_SETUP_RTTS="6",
    SRCNET_PLAN_COPIES_IN_FLIGHT="0",
    SRCNET_PLAN_DRAIN_TOGETHER="1",
)
def test_each_setting_reaches_its_field() -> None:
    config = plan_config()
    assert (config.max_files, config.copy_overhead_s, config.copy_setup_rtts) == (32, 2.5, 6.0)
    assert config.copies_in_flight is False
    assert config.drain_together is True


@pytest.mark.parametrize(
    "setting, value, said",
    [
        ("SRCNET_PLAN_MAX_FILES", "many", "'many' is not a number"),
        ("SRCNET_PLAN_MAX_FILES", "0", "max_files must be at least 1"),
        ("SRCNET_PLAN_COPY_OVERHEAD_S", "-1", "copy_overhead_s must be a non-negative number"),
        ("SRCNET_PLAN_COPY_SETUP_RTTS", "inf", "copy_setup_rtts must be a non-negative number"),
        ("SRCNET_PLAN_COPIES_IN_FLIGHT", "yes", "'yes' is neither 0 nor 1"),
        ("SRCNET_PLAN_DRAIN_TOGETHER", "2", "'2' is neither 0 nor 1"),
    ],
)
def test_a_bad_setting_is_named(setting: str, value: str, said: str) -> None:
    with override_settings(**{setting: value}):
        with pytest.raises(ImproperlyConfigured, match=f"^{setting}: .*{said}"):
            plan_config()
        (error,) = [m for m in checks.run_checks() if m.id == "schedulers.E001"]
        assert error.msg.startswith(setting)

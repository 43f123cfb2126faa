"""RSE expressions evaluated by the platform (rules/expression.py): Rucio's syntax, alone (no database)."""

from __future__ import annotations

import pytest

from rules.expression import ExpressionError, evaluate

RSES = {
    "AUSRC_DISK": {"site": "AUSRC", "country": "AU", "region": "oceania", "role": "disk"},
    "UKSRC_DISK": {"site": "UKSRC", "country": "GB", "region": "europe", "role": "disk"},
    "FRSRC_DISK": {"site": "FRSRC", "country": "FR", "region": "europe", "role": "disk"},
    "SKA1-LOW_SDP": {"site": "SKA1-Low", "country": "AU", "region": "oceania", "role": "sdp"},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("AUSRC_DISK", {"AUSRC_DISK"}),
        ("MARS_DISK", set()),
        ("country=AU", {"AUSRC_DISK", "SKA1-LOW_SDP"}),
        ("region=europe", {"UKSRC_DISK", "FRSRC_DISK"}),
        ("region=europe\\UKSRC_DISK", {"FRSRC_DISK"}),
        ("country=AU&role=disk", {"AUSRC_DISK"}),
        ("AUSRC_DISK|UKSRC_DISK", {"AUSRC_DISK", "UKSRC_DISK"}),
        ("*\\role=sdp", {"AUSRC_DISK", "UKSRC_DISK", "FRSRC_DISK"}),
        ("(region=europe|country=AU)&role=disk", {"AUSRC_DISK", "UKSRC_DISK", "FRSRC_DISK"}),
        ("region=europe|country=AU&role=sdp", {"SKA1-LOW_SDP"}),  # left to right, as Rucio reads it
        (" AUSRC_DISK | UKSRC_DISK ", {"AUSRC_DISK", "UKSRC_DISK"}),
    ],
)
def test_expressions_select_as_rucio_does(text: str, expected: set[str]) -> None:
    assert evaluate(text, RSES) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("(AUSRC_DISK", "not closed"),
        ("AUSRC_DISK|", "ends where"),
        ("AUSRC_DISK)", "unexpected"),
        ("planet=mars", "no RSE has the attribute 'planet'"),
        ("ausrc_disk", "not an RSE name"),
        ("AUSRC_DISK;rm", "unexpected ';rm'"),
        ("|AUSRC_DISK", "not an RSE name"),
        ("A" * 501, "longer than 500"),
    ],
)
def test_unreadable_expressions_say_why(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message.replace("(", r"\(")):
        evaluate(text, RSES)

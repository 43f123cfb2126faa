"""``srcnet tokens check``: one line per problem with its fix, exit code 10 when any, 3 for an unknown name,
5 for an account that is not an operator's. (The checks themselves, against a real issuer and token-enforcing
sites: tests/tokens/test_doctor.py.)"""

from __future__ import annotations

from django.test import override_settings

from cli.exit_codes import ExitCode

NO_ISSUER = {"ISSUER": "", "CLIENT_ID": "", "CLIENT_SECRET": "", "CA_FILE": "", "AUDIENCE_STYLE": "parameter"}
# An issuer nobody answers for (a closed port): the doctor gets as far as naming the target.
DEAD_ISSUER = {**NO_ISSUER, "ISSUER": "https://127.0.0.1:9/realms/x", "CLIENT_ID": "c", "CLIENT_SECRET": "s"}


def test_without_an_issuer_the_problem_and_its_fix_are_one_line_and_the_exit_code_is_10(srcnet):  # type: ignore[no-untyped-def]
    with override_settings(SRCNET_TOKENS=NO_ISSUER):
        result = srcnet("tokens", "check")
    assert result.code == ExitCode.PROBLEMS_FOUND
    lines = result.out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("PROBLEM  SRCNET_TOKENS: no token issuer is configured")
    assert "fix: set SRCNET_TOKEN_ISSUER" in lines[0]
    assert "1 checks, 1 problem(s)" in result.err


def test_a_dead_issuer_is_one_problem_naming_the_setting(srcnet):  # type: ignore[no-untyped-def]
    with override_settings(SRCNET_TOKENS=DEAD_ISSUER):
        result = srcnet("tokens", "check", "-o", "json")
    assert result.code == ExitCode.PROBLEMS_FOUND
    assert '"check": "issuer"' in result.out and "SRCNET_TOKEN_ISSUER" in result.out


def test_an_unknown_lane_or_site_exits_3_naming_it(srcnet, transactional_db):  # type: ignore[no-untyped-def]
    with override_settings(SRCNET_TOKENS=DEAD_ISSUER):
        result = srcnet("tokens", "check", "NO-SUCH_DISK:OTHER")
    assert result.code == ExitCode.VALIDATION
    assert "NO-SUCH_DISK" in result.err


def test_a_scientist_may_not_run_the_doctor(srcnet, scientist_token):  # type: ignore[no-untyped-def]
    result = srcnet("tokens", "check", token=scientist_token)
    assert result.code == ExitCode.AUTH

"""The REST API fuzzed from its own OpenAPI schema (schemathesis, bounded): whatever is sent, no answer is a
server error, and every answer the schema documents matches it.

Requests go through the WSGI application in-process, inside the test's transaction. Two walks:
- the fixed one, as an operator (the role that reaches every write path), the same examples every run
  (derandomized), so a regression shows as the same failure;
- a fresh one each run, as each role (scientist, operator, admin), from a random seed printed in the
  failure and in the run's header (``SRCNET_FUZZ_SEED=<seed>`` replays it): inputs no fixed run ever sent.
The example counts are bounded so both walks stay near a few minutes; SRCNET_FUZZ_EXAMPLES and
SRCNET_FUZZ_ROLE_EXAMPLES raise them for a longer local run."""

from __future__ import annotations

import os
import random

import pytest
import schemathesis
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, seed
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from identity.tokens import issue
from srcnet.wsgi import application

EXAMPLES = int(os.environ.get("SRCNET_FUZZ_EXAMPLES", "15"))
ROLE_EXAMPLES = int(os.environ.get("SRCNET_FUZZ_ROLE_EXAMPLES", "5"))
# A new seed every run unless one is given to replay a run (printed in the run's output and in each failure).
SEED = int(os.environ.get("SRCNET_FUZZ_SEED") or random.SystemRandom().randrange(2**32))

schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = application


@pytest.fixture
def keep_the_test_connection():  # type: ignore[no-untyped-def]
    """Django closes the database connection at the end of each WSGI request; the test's transaction lives
    on it, so (as Django's own test client does) the closing is switched off while the test runs."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(scope="module", autouse=True)
def _say_the_seed(request) -> None:  # type: ignore[no-untyped-def]
    # To the run's own output, past pytest's capture: the one line that replays this run's walk.
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\nREST API fuzzing as each role: SRCNET_FUZZ_SEED={SEED}", flush=True)


ROLES = {
    "scientist": {},
    "operator": {"is_staff": True},
    "admin": {"is_staff": True, "is_superuser": True},
}


def _token_of(django_user_model, role: str) -> str:  # type: ignore[no-untyped-def]
    user, _ = django_user_model.objects.get_or_create(username=f"fuzz-{role}", defaults=ROLES[role])
    return issue(user, name="fuzz", scope="operate")[1]


@pytest.fixture
def operator_token(django_user_model, keep_the_test_connection) -> str:  # type: ignore[no-untyped-def]
    return _token_of(django_user_model, "operator")


@pytest.fixture
def role_tokens(django_user_model, keep_the_test_connection) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {role: _token_of(django_user_model, role) for role in sorted(ROLES)}


@pytest.mark.django_db
@schema.parametrize()
@hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_input_makes_the_api_fail_or_answer_off_schema(case, operator_token):
    case.call_and_validate(
        headers={"Authorization": f"Token {operator_token}"},
        checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
    )


@pytest.mark.django_db
@schema.parametrize()
@hypothesis_settings(
    max_examples=ROLE_EXAMPLES,
    deadline=None,
    phases=[Phase.generate],  # the schema's own examples are the fixed walk's
    suppress_health_check=list(HealthCheck),
)
@seed(SEED)
def test_no_input_from_any_role_makes_the_api_fail_or_answer_off_schema(case, role_tokens):
    """Each generated request is sent as each role in turn (one set-up per operation, three answers)."""
    for role, token in role_tokens.items():
        try:
            case.call_and_validate(
                headers={"Authorization": f"Token {token}"},
                checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
            )
        except BaseException as exc:
            exc.add_note(f"as the {role}; replay with SRCNET_FUZZ_SEED={SEED} (this run's seed)")
            raise

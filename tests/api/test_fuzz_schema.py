"""The REST API fuzzed from its own OpenAPI schema (schemathesis, bounded): whatever is sent, no answer is a
server error, and every answer the schema documents matches it.

Requests go through the WSGI application in-process as an operator (the role that reaches every write
path), inside the test's transaction. The example count is bounded so the whole walk stays near a minute;
SRCNET_FUZZ_EXAMPLES raises it for a longer local run."""

from __future__ import annotations

import os

import pytest
import schemathesis
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from srcnet.wsgi import application

EXAMPLES = int(os.environ.get("SRCNET_FUZZ_EXAMPLES", "15"))

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


@pytest.fixture
def operator_token(django_user_model, keep_the_test_connection) -> str:  # type: ignore[no-untyped-def]
    user, _ = django_user_model.objects.get_or_create(username="fuzz-operator", defaults={"is_staff": True})
    return Token.objects.get_or_create(user=user)[0].key


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

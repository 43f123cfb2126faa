"""The standalone FTS3 service over HTTPS: client-certificate identities (how Rucio authenticates) and
bearer tokens, against the test database."""

from __future__ import annotations

import pytest
import requests

from identity.tokens import issue
from localnet.pki import ensure_client_cert
from transfers.models import ClientIdentity

from .recorded import RUCIO_SUBMISSION

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_certificate_identity_and_tokens(https_fts3, test_state, operator, recorded_storage):
    ca = str(test_state.path / "pki" / "ca.pem")
    registered, dn = ensure_client_cert(test_state, "rucio-conveyor")
    stranger, _ = ensure_client_cert(test_state, "somebody-else")
    ClientIdentity.objects.create(dn=dn, user=operator)
    who = requests.get(f"{https_fts3}/whoami", cert=str(registered), verify=ca, timeout=30)
    assert who.status_code == 200
    assert who.json()["user_dn"] == dn and who.json()["method"] == "certificate"
    # Submitting as Rucio does: certificate, no token, the recorded body.
    submitted = requests.post(
        f"{https_fts3}//jobs", json=RUCIO_SUBMISSION, cert=str(registered), verify=ca, timeout=30
    )
    assert submitted.status_code == 200 and "job_id" in submitted.json()
    assert requests.get(f"{https_fts3}/whoami", cert=str(stranger), verify=ca, timeout=30).status_code == 403
    assert requests.get(f"{https_fts3}/whoami", verify=ca, timeout=30).status_code == 401
    token = issue(operator, name="test", scope="fts3")[1]
    bearer = requests.get(
        f"{https_fts3}/whoami", headers={"Authorization": f"Bearer {token}"}, verify=ca, timeout=30
    )
    assert bearer.status_code == 200 and bearer.json()["method"] == "oauth2"

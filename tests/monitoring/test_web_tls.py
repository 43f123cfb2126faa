"""The local network's web server speaks HTTPS only, as a deployment's does: its certificate verifies with the
state's own CA (and not with the system's), and a plain-HTTP request gets no answer. The same gunicorn
arguments as ``localnet``'s (``localnet.stack.web_argv``), on the test database."""

from __future__ import annotations

import pytest
import requests

from localnet.stack import web_ca
from localnet.state import StateDir

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_the_web_server_speaks_https_only_with_the_local_ca(control_plane: str, test_state: StateDir) -> None:
    assert control_plane.startswith("https://127.0.0.1:")
    ca = str(web_ca(test_state))
    # Verified against the local CA for 127.0.0.1; the API asks for credentials.
    assert requests.get(f"{control_plane}/api/", verify=ca, timeout=10).status_code in {401, 403}
    # Prometheus scrapes /metrics the same way (it answers loopback without a token).
    assert requests.get(f"{control_plane}/metrics", verify=ca, timeout=10).status_code == 200
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{control_plane}/api/", timeout=10)  # the system's CAs do not know the local one
    plain = control_plane.replace("https://", "http://", 1)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{plain}/api/", timeout=10)

"""A checkout deep in the file system: the local network's services still start.

Unix-domain socket paths are limited to 107 bytes. XRootD puts its admin sockets under
``<adminpath>/<instance name>/.xrd/`` and PostgreSQL its socket under ``-k``; both used to live in the state
folder inside the checkout, so a checkout path of some 20 characters more made a site with a long name
(SINGAPOREDC_BUFFER) exit at start-up. They now live in a short folder keyed by the state folder."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaigns.synthetic import write_file
from localnet.binding import ensure_token_site
from localnet.fireflies import stop_collector
from localnet.issuer import ensure_issuer, local_audience, stop_issuer
from localnet.postgres import ensure_postgres, stop_postgres
from localnet.processes import port_open
from localnet.state import StateDir, short_run_dir
from localnet.users import chown_tree
from localnet.xrootd import SERVICE_USER, site_folder, stop_site
from transfers.tokens import TokenClient

pytestmark = pytest.mark.integration
# Deeper than any sun_path: 4 x 60 characters below /var/tmp.
DEPTH = ["d" * 59 + str(i) for i in range(4)]


@pytest.fixture
def deep_state() -> Iterator[StateDir]:
    # Not under pytest's tmp_path: that is private to root (0700), and the services run as their own
    # accounts, which must traverse the folders (a checkout they cannot reach is handled elsewhere).
    top = Path("/var/tmp") / f"srcnet-deep-{uuid.uuid4().hex[:8]}"
    folder = top.joinpath(*DEPTH, "checkout", ".state", "deep-test")
    folder.mkdir(parents=True)
    for part in [top, *folder.relative_to(top).parents]:
        (top / part).chmod(0o755)
    folder.chmod(0o755)
    state = StateDir(folder)
    try:
        yield state
    finally:
        stop_site(state, "SINGAPOREDC_BUFFER")
        stop_collector(state)  # the firefly collector its first site started (localnet/fireflies.py)
        stop_issuer(state)
        stop_postgres(state)
        shutil.rmtree(top, ignore_errors=True)


def test_a_site_with_a_long_name_and_postgres_start_from_a_deep_state_folder(deep_state: StateDir):
    assert len(str(deep_state.path)) > 200
    # The state's token issuer (Keycloak, its database in the deep folder) and a site enforcing its tokens.
    issuer = ensure_issuer(deep_state)
    site = ensure_token_site(deep_state, issuer, "SINGAPOREDC_BUFFER")
    assert port_open(site.root_port) and port_open(site.http_port)
    site.local_path("srcnet").mkdir(parents=True, exist_ok=True)
    chown_tree(site.local_path("srcnet"), SERVICE_USER)
    # The site serves: a file written over root:// with a token lands in its data folder.
    token = TokenClient(issuer.settings()).fetch(["storage.create:/"], local_audience("SINGAPOREDC_BUFFER"))
    write_file(site.root_url("srcnet/deep.bin"), 4096, seed=7, token=token.value)
    assert site.local_path("srcnet/deep.bin").stat().st_size == 4096
    # Its sockets are in the short folder, whatever the depth.
    run_dir = short_run_dir(site_folder(deep_state, "SINGAPOREDC_BUFFER"))
    sockets = [p for p in run_dir.rglob("*") if p.is_socket()]
    assert sockets and all(len(str(p)) < 100 for p in sockets)
    port = ensure_postgres(deep_state)
    assert port_open(port)


def test_the_short_folder_does_not_depend_on_depth(tmp_path: Path):
    deep = tmp_path.joinpath(*DEPTH)
    deep.mkdir(parents=True)
    shallow, far = short_run_dir(tmp_path), short_run_dir(deep)
    assert shallow != far and len(str(far)) == len(str(shallow)) < 40
    assert short_run_dir(deep) == far  # stable: the same state folder finds its sockets again

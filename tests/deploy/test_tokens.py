"""The attack matrix of the token issue against the Ansible-deployed storage sites (tests/tokens/
test_site_enforcement.py runs it against the local ones): with no token, a token for another path, a read
token for a write, another site's audience, an issuer the sites do not trust, an expired token and forged
ones, both protocols are refused, nothing changes on disk, and the site's journal says why. The tokens come
from the issuer the token_issuer role deployed on cp, asked for as a worker asks (client credentials of
the transfer service's client); a token that fits is accepted, and an HTTP third-party copy passes the
source's token on to the pulling site.

Every request is made from the hosts' network (the test machine's side of it), as an attacker on the
network would."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from tests.forgeries import KINDS, WHY, claims, forge, stranger_token

from .conftest import DEPLOY_TIMEOUT, SITES, STORAGE_PREFIX, TRANSFER_CLIENT, Deployment

pytestmark = DEPLOY_TIMEOUT

DATA_DIR = "/srv/xrootd/data"
KEPT = "kept/product.fits"
CONTENT = "a product the platform placed\n" * 64
REFUSED = ("401", "403")


class Sites:
    """The deployed sites as seen from the network, and as seen on their disks (over SSH)."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment

    def address(self, host: str) -> str:
        return self.deployment.host(host).address

    def davs(self, host: str, path: str) -> str:
        return f"https://{self.address(host)}:8443{STORAGE_PREFIX}{path}"

    def root(self, host: str, path: str = "", token: str = "") -> str:
        url = f"root://{self.address(host)}:1094/{STORAGE_PREFIX}{path}"
        return f"{url}?authz=Bearer%20{token}" if token else url

    def http(self, method: str, url: str, token: str = "", *, headers: dict[str, str] | None = None,
             data: str | None = None) -> str:  # fmt: skip
        """The HTTP status of ``method url``, with ``token`` as the bearer."""
        argv = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "-X", method]
        argv += ["--cacert", str(self.deployment.ca_file)]
        if token:
            argv += ["-H", f"Authorization: Bearer {token}"]
        for name, value in (headers or {}).items():
            argv += ["-H", f"{name}: {value}"]
        if data is not None:
            argv += ["--data-binary", data]
        return self.deployment.fleet.lan_exec([*argv, url], timeout=60, check=False).stdout.strip()

    def get(self, url: str, token: str) -> str:
        argv = ["curl", "-sS", "--fail", "--max-time", "30", "--cacert", str(self.deployment.ca_file)]
        argv += ["-H", f"Authorization: Bearer {token}", url]
        return self.deployment.fleet.lan_exec(argv, timeout=60, check=False).stdout

    def xrd(self, *argv: str) -> tuple[int, str]:
        result = self.deployment.fleet.lan_exec(
            ["env", "XRD_CONNECTIONRETRY=1", "XRD_REQUESTTIMEOUT=30", *argv], timeout=90, check=False
        )
        return result.returncode, result.stdout + result.stderr

    def xrdfs(self, host: str, command: str, path: str, token: str = "") -> tuple[int, str]:
        """``xrdfs <site> <command> <path>``, the token in the path's opaque part."""
        target = f"{STORAGE_PREFIX}{path}" + (f"?authz=Bearer%20{token}" if token else "")
        return self.xrd("xrdfs", self.root(host), command, target)

    def on_disk(self, host: str, path: str) -> str | None:
        """The file's content on the site's disk, or None when there is none."""
        result = self.deployment.ssh(host, ["cat", f"{DATA_DIR}{STORAGE_PREFIX}{path}"], check=False)
        return result.stdout if result.returncode == 0 else None

    def journal_since(self, host: str, since: float) -> str:
        return self.deployment.ssh(
            host, ["journalctl", "--no-pager", "-u", "srcnet-xrootd", "--since", f"@{int(since) - 1}"]
        ).stdout

    def token(self, host: str, scopes: str, *, client: str = TRANSFER_CLIENT, secret: str = "") -> str:
        """A token with ``scopes`` for ``host``'s audience, from the deployed issuer (client credentials)."""
        secret = secret or self.deployment.secrets["vault_srcnet_token_client_secret"]
        argv = [
            "curl",
            "-sS",
            "--fail-with-body",
            "--max-time",
            "30",
            "--cacert",
            str(self.deployment.ca_file),
        ]
        argv += [
            "-d",
            "grant_type=client_credentials",
            "-d",
            f"client_id={client}",
            "-d",
            f"client_secret={secret}",
        ]
        argv += ["--data-urlencode", f"scope={scopes} aud:{host}"]
        url = f"{self.deployment.issuer}/protocol/openid-connect/token"
        answer = self.deployment.fleet.lan_exec([*argv, url], timeout=60)
        return str(json.loads(answer.stdout)["access_token"])

    def admin(self, method: str, path: str, body: object | None = None) -> str:
        """Keycloak's admin API of the deployed issuer, as its bootstrap admin."""
        return self.deployment.issuer_admin(method, path, body)


@pytest.fixture(scope="module")
def sites(deployment: Deployment, deployed: object) -> Sites:
    """Both sites, each holding a file written behind its back (as the data the platform placed)."""
    view = Sites(deployment)
    for host in SITES:
        folder = f"{DATA_DIR}{STORAGE_PREFIX}kept"
        deployment.ssh(
            host,
            ["sh", "-c", f"mkdir -p {folder} && printf %s \"$0\" > {folder}/product.fits && "
             f"chown -R xrootd:xrootd {DATA_DIR}{STORAGE_PREFIX}", CONTENT],
        )  # fmt: skip
    return view


def _unchanged(sites: Sites, host: str, *created: str) -> None:
    assert sites.on_disk(host, KEPT) == CONTENT
    for path in created:
        assert sites.on_disk(host, path) is None, path


@pytest.mark.parametrize("host", sorted(SITES))
def test_anonymous_requests_are_refused_on_both_protocols_and_change_nothing(
    sites: Sites, host: str, tmp_path: Path
) -> None:
    new = f"kept/new-{uuid.uuid4().hex[:8]}.fits"
    assert sites.http("PROPFIND", sites.davs(host, "kept/"), headers={"Depth": "1"}) in REFUSED
    for method, path, data in (
        ("HEAD", KEPT, None),
        ("GET", KEPT, None),
        ("PUT", new, "planted"),
        ("PUT", KEPT, "overwritten"),
        ("DELETE", KEPT, None),
        ("MKCOL", "newdir/", None),
    ):
        assert sites.http(method, sites.davs(host, path), data=data) in REFUSED, (method, path)
    server = sites.root(host)
    for argv in (
        ["xrdfs", server, "ls", f"{STORAGE_PREFIX}kept"],
        ["xrdfs", server, "stat", f"{STORAGE_PREFIX}{KEPT}"],
        ["xrdfs", server, "rm", f"{STORAGE_PREFIX}{KEPT}"],
        ["xrdfs", server, "mkdir", f"{STORAGE_PREFIX}newdir"],
        ["xrdcp", "-f", sites.root(host, KEPT), str(tmp_path / "read")],
    ):
        code, said = sites.xrd(*argv)
        assert code != 0 and "permission denied" in said.lower(), (argv, said)
    upload = tmp_path / "upload"
    upload.write_text("planted")
    assert sites.xrd("xrdcp", "-f", str(upload), sites.root(host, KEPT))[0] != 0
    assert sites.xrd("xrdcp", str(upload), sites.root(host, new))[0] != 0
    _unchanged(sites, host, new, "newdir")
    assert not (tmp_path / "read").exists() or (tmp_path / "read").read_text() != CONTENT


def test_an_anonymous_third_party_pull_is_refused_on_both_protocols(sites: Sites) -> None:
    pulled = f"kept/pulled-{uuid.uuid4().hex[:8]}.fits"
    status = sites.http("COPY", sites.davs("s2", pulled), headers={"Source": sites.davs("s1", KEPT)})
    assert status in REFUSED
    code, _ = sites.xrd("xrdcp", "--tpc", "only", sites.root("s1", KEPT), sites.root("s2", pulled))
    assert code != 0
    _unchanged(sites, "s2", pulled)


def test_a_token_that_fits_is_accepted_and_one_for_another_path_is_not(sites: Sites) -> None:
    right = sites.token("s1", "storage.read:/kept")
    assert claims(right)["iss"] == sites.deployment.issuer and claims(right)["aud"] in ("s1", ["s1"])
    assert sites.get(sites.davs("s1", KEPT), right) == CONTENT
    code, said = sites.xrdfs("s1", "stat", KEPT, right)
    assert code == 0, said
    elsewhere = sites.token("s1", "storage.read:/elsewhere")
    assert sites.http("GET", sites.davs("s1", KEPT), elsewhere) == "403"
    code, _ = sites.xrdfs("s1", "stat", KEPT, elsewhere)
    assert code != 0


def test_a_read_token_cannot_write_or_delete(sites: Sites, tmp_path: Path) -> None:
    token = sites.token("s1", "storage.read:/kept")
    new = f"kept/new-{uuid.uuid4().hex[:8]}.fits"
    assert sites.http("PUT", sites.davs("s1", KEPT), token, data="overwritten") == "403"
    assert sites.http("PUT", sites.davs("s1", new), token, data="x") == "403"
    assert sites.http("DELETE", sites.davs("s1", KEPT), token) == "403"
    upload = tmp_path / "upload"
    upload.write_text("planted")
    assert sites.xrd("xrdcp", "-f", str(upload), sites.root("s1", KEPT, token))[0] != 0
    assert sites.xrdfs("s1", "rm", KEPT, token)[0] != 0
    _unchanged(sites, "s1", new)


def test_a_token_for_the_other_sites_audience_is_refused(sites: Sites) -> None:
    token = sites.token("s2", "storage.read:/kept storage.modify:/kept")
    since = time.time()
    assert sites.http("GET", sites.davs("s1", KEPT), token) == "403"
    assert sites.http("DELETE", sites.davs("s1", KEPT), token) == "403"
    assert sites.xrdfs("s1", "stat", KEPT, token)[0] != 0
    _unchanged(sites, "s1")
    said = sites.journal_since("s1", since)
    assert said.count("'aud' claim verification failed") >= 2, said[-3000:]


@pytest.mark.parametrize("forgery", [*KINDS, "stranger-issuer"])
def test_forged_tokens_and_strangers_tokens_are_refused_and_the_site_says_why(
    sites: Sites, forgery: str
) -> None:
    real = sites.token("s1", "storage.read:/kept storage.modify:/kept")
    forged = stranger_token(real) if forgery == "stranger-issuer" else forge(real, forgery)
    since = time.time()
    assert sites.http("GET", sites.davs("s1", KEPT), forged) in REFUSED
    assert sites.http("DELETE", sites.davs("s1", KEPT), forged) in REFUSED
    assert sites.xrdfs("s1", "stat", KEPT, forged)[0] != 0
    _unchanged(sites, "s1")
    said = sites.journal_since("s1", since)
    assert WHY[forgery] in said, said[-3000:]


def test_an_expired_token_is_refused(sites: Sites) -> None:
    """From a client of the deployed realm whose tokens live 2 s (made through the issuer's admin API)."""
    client = f"short-lived-{uuid.uuid4().hex[:6]}"
    secret = uuid.uuid4().hex
    sites.admin(
        "POST",
        "/clients",
        {
            "clientId": client,
            "secret": secret,
            "publicClient": False,
            "serviceAccountsEnabled": True,
            "standardFlowEnabled": False,
            "attributes": {"access.token.lifespan": "2"},
            "defaultClientScopes": ["wlcg"],
            "optionalClientScopes": ["storage.read", "aud:s1"],
        },
    )
    token = sites.token("s1", "storage.read:/kept", client=client, secret=secret)
    assert int(claims(token)["exp"]) - int(claims(token)["iat"]) <= 2  # type: ignore[call-overload]
    time.sleep(max(0.0, int(claims(token)["exp"]) - time.time()) + 1.5)  # type: ignore[call-overload]
    since = time.time()
    assert sites.http("GET", sites.davs("s1", KEPT), token) == "403"
    assert sites.xrdfs("s1", "stat", KEPT, token)[0] != 0
    assert "expired" in sites.journal_since("s1", since).lower()


def test_rucios_client_gets_a_token_for_the_audience_it_names_and_the_site_takes_it(sites: Sites) -> None:
    """Rucio's client of the deployed issuer (token_issuer_rucio_client_secret) asks as Rucio does: the
    audience a parameter naming the site's host, offline_access beside the storage rights. Deployed sites
    have host names of their own, so the token Rucio gets opens its site as it is."""
    secret = sites.deployment.secrets["vault_srcnet_rucio_client_secret"]
    argv = ["curl", "-sS", "--fail-with-body", "--max-time", "30", "--cacert", str(sites.deployment.ca_file)]
    argv += ["-d", "grant_type=client_credentials", "-d", "client_id=rucio", "-d", f"client_secret={secret}"]
    argv += ["-d", "audience=s1", "--data-urlencode", "scope=storage.read:/kept offline_access"]
    answer = sites.deployment.fleet.lan_exec(
        [*argv, f"{sites.deployment.issuer}/protocol/openid-connect/token"], timeout=60
    )
    token = str(json.loads(answer.stdout)["access_token"])
    assert claims(token)["aud"] == [TRANSFER_CLIENT, "s1"] and claims(token)["azp"] == "rucio"
    assert sites.get(sites.davs("s1", KEPT), token) == CONTENT
    assert sites.http("GET", sites.davs("s2", KEPT), token) == "403"


def test_an_http_third_party_copy_passes_the_sources_token_on(sites: Sites) -> None:
    """The pulling site (s2) gets the source's token in TransferHeaderAuthorization and presents it to s1;
    without it s1 refuses the same pull and no byte of the source reaches s2 (XRootD 5.5 leaves the empty
    file it opened for the pull: the destination's token allowed that much)."""
    refused, pulled = (f"kept/pulled-{uuid.uuid4().hex[:8]}.fits" for _ in range(2))
    destination = sites.token("s2", "storage.create:/kept storage.modify:/kept")
    source = sites.token("s1", "storage.read:/kept")
    sites.http("COPY", sites.davs("s2", refused), destination, headers={"Source": sites.davs("s1", KEPT)})
    assert sites.on_disk("s2", refused) in (None, "")
    status = sites.http(
        "COPY",
        sites.davs("s2", pulled),
        destination,
        headers={"Source": sites.davs("s1", KEPT), "TransferHeaderAuthorization": f"Bearer {source}"},
    )
    assert status in ("201", "202"), status
    assert sites.on_disk("s2", pulled) == CONTENT

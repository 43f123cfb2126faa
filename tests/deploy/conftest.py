"""The booted-host deployment: six Debian 12 machines (database+broker, control plane, two workers, two
storage sites), booted once per session from the cached root file system, with an inventory, a
vault-encrypted secrets file, a CA and host certificates the fixture makes; ansible-playbook runs from
the hosts' network, over SSH. Everything is stopped and removed at the end, also when a test fails."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from localnet.issuer import KEYCLOAK_VERSION, keycloak_root
from localnet.scitags import EXPERIMENT as SCITAGS_EXPERIMENT
from localnet.scitags import REGISTRY as SCITAGS_REGISTRY
from localnet.state import PROJECT_ROOT

from .hosts import SUBNET, BootedHost, Fleet
from .rootfs import cached_rootfs
from .wheelhouse import release_archive

ANSIBLE = PROJECT_ROOT / "ansible"
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "deploy"
PLUGIN_BUILD = PROJECT_ROOT / "xrootd-plugins" / "build"
# Each test's own body gets 30 minutes (an upgrade test runs site.yml three times: 788 s on 2026-11-29's slow
# machine). func_only: the session's fleet and its two site.yml runs are set up inside whichever test asks for
# them first, and a 900 s limit on that test cut the second run short in CI (boot and first run took 760 s);
# their own time is bounded by each command's timeout instead (a playbook's 1 500 s, a boot's 120 s).
DEPLOY_TIMEOUT = pytest.mark.timeout(1800, func_only=True)
# name -> the inventory groups it is in
LAYOUT = {
    "db": ["database", "broker"],
    "cp": ["control_plane", "monitoring", "issuer"],
    "w1": ["workers"],
    "w2": ["workers"],
    "s1": ["storage"],
    "s2": ["storage"],
}
SITES = {"s1": "DEPLOY_SDP", "s2": "SITEB_DISK"}
TELESCOPE = "SKA1-Deploy"
CENTRE = "SITEB"
STORAGE_PREFIX = "/srcnet/"
# The token issuer the token_issuer role runs on cp (the realm and port are the role's defaults).
ISSUER_HOST = "cp"
ISSUER_PORT = 9443
# The control plane's web server (role control_plane): HTTPS only, on the role's default port.
CONTROL_PLANE_HOST = "cp"
WEB_PORT = 8000
TRANSFER_CLIENT = "srcnet-transfers"
# Single sign-on's clients at the issuer (the roles' defaults) and the name the portal shows.
SSO_CLI_CLIENT = "srcnet-cli"
SSO_NAME = "the deployed issuer"
RECAP = re.compile(
    r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M
)


class DeploymentError(RuntimeError):
    """The booted hosts cannot be set up here (a missing tool or build), or were not all removed."""


@dataclass
class PlaybookRun:
    returncode: int
    output: str
    seconds: float
    recap: dict[str, dict[str, int]] = field(default_factory=dict)

    def changed(self) -> dict[str, int]:
        return {host: counts["changed"] for host, counts in self.recap.items()}


@dataclass
class Deployment:
    """The booted hosts and how to run Ansible against them."""

    fleet: Fleet
    inventory: Path
    vault_password: Path
    release: str = ""
    runs: int = 0
    # The vault's values (the tests mint tokens with the transfer client's secret, as a worker does).
    secrets: dict[str, str] = field(default_factory=dict)
    ca_file: Path = Path()

    @property
    def issuer(self) -> str:
        return f"https://{self.host(ISSUER_HOST).address}:{ISSUER_PORT}/realms/srcnet"

    @property
    def web(self) -> str:
        """The control plane's base URL (its certificate, of the test's CA, names this address)."""
        return f"https://{self.host(CONTROL_PLANE_HOST).address}:{WEB_PORT}"

    def curl(self, *argv: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
        """curl from the hosts' network, trusting the deployment's CA only (the certificate is verified)."""
        return self.fleet.lan_exec(
            ["curl", "-sS", "--max-time", "30", "--cacert", str(self.ca_file), *argv],
            timeout=timeout,
            check=check,
        )

    def issuer_admin(self, method: str, path: str, body: object | None = None) -> str:
        """Keycloak's admin API of the deployed issuer's realm, as its bootstrap admin (from the hosts'
        network); the answer's body."""
        base = self.issuer.rsplit("/realms/", 1)[0]
        login = self.curl(
            "--fail", "-d", "grant_type=password", "-d", "client_id=admin-cli", "-d", "username=admin",
            "-d", f"password={self.secrets['vault_srcnet_issuer_admin_password']}",
            f"{base}/realms/master/protocol/openid-connect/token",
        )  # fmt: skip
        argv = [
            "--fail-with-body",
            "-X",
            method,
            "-H",
            f"Authorization: Bearer {json.loads(login.stdout)['access_token']}",
        ]
        if body is not None:
            argv += ["-H", "Content-Type: application/json", "--data", json.dumps(body)]
        return self.curl(*argv, f"{base}/admin/realms/srcnet{path}").stdout

    def host(self, name: str) -> BootedHost:
        return self.fleet.hosts[name]

    def ssh(self, name: str, argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return self.fleet.ssh(self.host(name), argv, **kwargs)  # type: ignore[arg-type]

    def variant(self, label: str, *, without: str, on_hosts: dict[str, object] | None = None) -> Path:
        """A copy of the inventory without the group variable ``without``, set again on each host of
        ``on_hosts`` (so the others lack it): a missing variable as an operator leaves one out."""
        folder = self.fleet.workdir / f"inventory-{label}"
        shutil.copytree(self.inventory, folder)
        common = folder / "group_vars" / "all" / "main.yml"
        values = yaml.safe_load(common.read_text())
        values.pop(without)
        common.write_text("---\n" + yaml.safe_dump(values, sort_keys=False))
        hosts = yaml.safe_load((folder / "hosts.yml").read_text())
        for group in hosts["all"]["children"].values():
            for name, host_vars in ((group or {}).get("hosts") or {}).items():
                if name in (on_hosts or {}):
                    host_vars[without] = on_hosts[name]  # type: ignore[index]
        (folder / "hosts.yml").write_text("---\n" + yaml.safe_dump(hosts, sort_keys=False))
        return folder

    def playbook(
        self, *extra: str, label: str, timeout: float = 1500, inventory: Path | None = None
    ) -> PlaybookRun:
        """ansible-playbook site.yml against every host, from the hosts' network."""
        self.runs += 1
        env = dict(os.environ)
        env.update(
            {
                "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"),
                "ANSIBLE_HOME": str(self.fleet.workdir / "ansible-home"),
                "ANSIBLE_SSH_CONTROL_PATH_DIR": str(self.fleet.workdir / "ssh-control"),
                "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_FORCE_COLOR": "0",
                # Each task's time in the run's log, and the slowest at its end (test-artifacts/deploy/):
                # the deployment tests are the longest suite, and a slower run says where.
                "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks",
                "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "40",
            }
        )
        argv = [
            "ip",
            "netns",
            "exec",
            self.fleet.lan,
            "ansible-playbook",
            "-i",
            str((inventory or self.inventory) / "hosts.yml"),
            "--vault-password-file",
            str(self.vault_password),
            str(ANSIBLE / "site.yml"),
            *extra,
        ]
        started = time.monotonic()
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=ANSIBLE, check=False
        )
        run = PlaybookRun(result.returncode, result.stdout + result.stderr, time.monotonic() - started)
        for match in RECAP.finditer(result.stdout):
            host, ok, changed, unreachable, failed, skipped = match.groups()
            run.recap[host] = {
                "ok": int(ok),
                "changed": int(changed),
                "unreachable": int(unreachable),
                "failed": int(failed),
                "skipped": int(skipped),
            }
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / f"{self.runs:02d}-{label}.log").write_text(
            f"$ {' '.join(argv)}\n# {run.seconds:.1f} s, exit {run.returncode}\n{run.output}"
            + self._failed_units_journal(run)
        )
        return run

    def _failed_units_journal(self, run: PlaybookRun) -> str:
        """For each host the run failed on, its failed units and their last journal lines: the service's own
        log, which Ansible's "see systemctl status" does not bring back (read once the fleet is gone)."""
        text = ""
        if "systemctl status" not in run.output:  # no service failed to start (a preflight stop, a bad value)
            return text
        for name, counts in sorted(run.recap.items()):
            if not counts["failed"] or name not in self.fleet.hosts:
                continue
            failed = self.ssh(name, ["systemctl", "--failed", "--no-legend", "--plain"], check=False)
            units = [line.split()[0] for line in failed.stdout.splitlines() if line.strip()]
            # A unit that restarts itself is not "failed" while it waits to start again: the ones the run
            # could not start, by the name Ansible gives.
            units += [u for u in re.findall(r"Unable to start service (\S+?):", run.output) if u not in units]
            text += f"\n==== {name}: units that failed or did not start: {' '.join(units) or 'none'}\n"
            for unit in units[:5]:
                journal = self.ssh(
                    name, ["journalctl", "--no-pager", "-n", "60", "-u", unit], check=False, timeout=30
                )
                status = self.ssh(name, ["systemctl", "status", "--no-pager", unit], check=False, timeout=30)
                text += f"---- systemctl status {unit}\n{status.stdout}"
                text += f"---- journalctl -u {unit}\n{journal.stdout}{journal.stderr}"
        return text


def _pki(folder: Path, hosts: dict[str, BootedHost]) -> None:
    """A throw-away CA and a host certificate per storage site, the issuer and the control plane, naming its
    address (and its name)."""
    folder.mkdir(parents=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder, timeout=60)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=SRCNet deploy test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    )
    for name, host in hosts.items():
        (folder / f"{name}.ext").write_text(
            f"subjectAltName=IP:{host.address},DNS:{name}\nextendedKeyUsage=serverAuth,clientAuth\n"
        )
        openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            f"/CN={name}",
            "-keyout",
            f"{name}.key.pem",
            "-out",
            f"{name}.csr",
        )
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            f"{name}.ext",
            "-out",
            f"{name}.cert.pem",
        )


def _inventory(
    folder: Path,
    fleet: Fleet,
    pki: Path,
    wheelhouse: Path,
    release: str,
    secrets_: dict[str, str],
    layout: dict[str, list[str]],
) -> Path:
    """hosts.yml and group_vars as an operator writes them, the secrets in a vault-encrypted file."""
    hosts = fleet.hosts
    groups: dict[str, dict[str, dict[str, object]]] = {}
    for name, member_of in layout.items():
        for group in member_of:
            host_vars: dict[str, object] = {"ansible_host": hosts[name].address}
            if group == "storage":
                host_vars["xrootd_site_name"] = SITES[name]
            groups.setdefault(group, {})[name] = host_vars
    document = {
        "all": {
            "children": {
                **{group: {"hosts": members} for group, members in groups.items()},
                "platform": {"children": {"control_plane": None, "workers": None}},
                "dtn": {"children": {"storage": None}},
            }
        }
    }
    (folder / "group_vars" / "all").mkdir(parents=True)
    (folder / "hosts.yml").write_text("---\n" + yaml.safe_dump(document, sort_keys=False))
    db, cp = hosts["db"].address, hosts["cp"].address
    common = {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(fleet.key),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={fleet.known_hosts} -o StrictHostKeyChecking=yes",
        "platform_ca_cert": str(pki / "ca.pem"),
        "platform_database_password": "{{ vault_srcnet_db_password }}",
        "platform_database_clients": [f"{SUBNET}.0/24"],
        "platform_broker_password": "{{ vault_srcnet_broker_password }}",
        "platform_broker_bind": ["127.0.0.1", db],
        "srcnet_app_release": release,
        "srcnet_app_wheelhouse": str(wheelhouse),
        "srcnet_app_db_host": db,
        "srcnet_app_db_password": "{{ vault_srcnet_db_password }}",
        "srcnet_app_broker_host": db,
        "srcnet_app_broker_password": "{{ vault_srcnet_broker_password }}",
        "srcnet_app_secret_key": "{{ vault_srcnet_secret_key }}",
        "srcnet_app_allowed_hosts": [cp],
        # The longest path of the test's sites: 10 Gbit/s at 300 ms (BDP 375 MB, buffers 750 MB).
        "dtn_tuning_path_bandwidth_gbps": 10,
        "dtn_tuning_path_rtt_ms": 300,
        "dtn_tuning_congestion_control": "bbr",
        # This kernel has no sch_fq (wan-emulation.md); production keeps the role's default, fq.
        "dtn_tuning_qdisc": "pfifo_fast",
        "dtn_tuning_interfaces": [{"name": "eth0", "mtu": 9000, "txqueuelen": 10000}],
        # Containers share the machine's kernel: its net.core.* keys are the host's business.
        "dtn_tuning_global_sysctls": False,
        "xrootd_site_path_capacity_gbps": 10,
        "xrootd_site_tls_cert": str(pki) + "/{{ inventory_hostname }}.cert.pem",
        "xrootd_site_tls_key": str(pki) + "/{{ inventory_hostname }}.key.pem",
        "xrootd_site_plugin_library": str(PLUGIN_BUILD / "libXrdWanIO-5.so"),
        "xrootd_site_plugin_tpc_program": str(PLUGIN_BUILD / "xrdcp-wan"),
        "xrootd_site_plugin_fast_open_preload": str(PLUGIN_BUILD / "libwanio_fastopen.so"),
        "control_plane_bind_address": cp,
        "control_plane_tls_cert": str(pki) + "/{{ inventory_hostname }}.cert.pem",
        "control_plane_tls_key": str(pki) + "/{{ inventory_hostname }}.key.pem",
        "control_plane_topology_file": str(_topology(folder.parent / "topology.yaml", fleet)),
        # Two copies at once (COPY_SLOTS below) and two processes for the control tasks (srcnet/workers.py).
        "platform_worker_concurrency": 4,
        # Prometheus on cp scrapes the control plane's /metrics from its own address, and every host's node
        # exporter; the sites report to the XRootD exporter beside it. 5 s so the test sees targets up soon.
        # A push cycle every 5 s (production: 30 s), so the pushed products do not wait long for one.
        "srcnet_app_settings": {
            "METRICS_ALLOWED_NETWORKS": f"127.0.0.0/8,{cp}/32",
            "PUSH_INTERVAL": "5",
            "COPY_SLOTS": "2",
            "FIREFLIES_ACCOUNT_INTERVAL": "5",
        },
        "monitoring_scrape_interval": "5s",
        "xrootd_site_summary_report": f"{cp}:9931",
        "xrootd_site_summary_interval": 5,
        # SciTags (docs/network.md): the sites' fireflies to the control plane's collector (the example
        # inventory's wiring), the local network's example registry; one token for its readers.
        "xrootd_site_fireflies_dest": f"{cp}:10514",
        "xrootd_site_scitags_registry": str(SCITAGS_REGISTRY),
        "xrootd_site_scitags_experiment": SCITAGS_EXPERIMENT,
        "control_plane_fireflies_token": "{{ vault_srcnet_fireflies_token }}",
        "srcnet_app_fireflies_token": "{{ vault_srcnet_fireflies_token }}",
        "monitoring_fireflies_token": "{{ vault_srcnet_fireflies_token }}",
        # Tokens: the token_issuer role on cp; every site trusts it (audience: the site's inventory name, the
        # role's default), the transfer service asks it for its copies' tokens.
        "srcnet_token_issuer": f"https://{cp}:{ISSUER_PORT}/realms/srcnet",
        "xrootd_site_token_issuers": ["{{ srcnet_token_issuer }}"],
        "srcnet_app_token_issuer": "{{ srcnet_token_issuer }}",
        "srcnet_app_token_client_secret": "{{ vault_srcnet_token_client_secret }}",
        "srcnet_app_token_audience_style": "scope",
        "token_issuer_client_secret": "{{ vault_srcnet_token_client_secret }}",
        "token_issuer_admin_password": "{{ vault_srcnet_issuer_admin_password }}",
        "token_issuer_rucio_client_secret": "{{ vault_srcnet_rucio_client_secret }}",
        "token_issuer_audiences": list(SITES),
        "token_issuer_tls_cert": str(pki) + "/{{ inventory_hostname }}.cert.pem",
        "token_issuer_tls_key": str(pki) + "/{{ inventory_hostname }}.key.pem",
        # The hosts have no internet: the distribution scripts/install-keycloak.sh downloaded and checked.
        "token_issuer_archive": str(keycloak_root() / f"keycloak-quarkus-dist-{KEYCLOAK_VERSION}.tar.gz"),
        "token_issuer_heap_mb": 512,
        # Single sign-on through the same issuer (its portal and CLI clients made by the token_issuer role),
        # as the example inventory has it; the control plane's origin is the REST API's audience.
        "srcnet_app_sso_issuer": "{{ srcnet_token_issuer }}",
        "srcnet_app_sso_client_secret": "{{ vault_srcnet_sso_client_secret }}",
        "srcnet_app_sso_scopes": "openid",
        "srcnet_app_sso_name": SSO_NAME,
        "token_issuer_sso_portal_client_secret": "{{ vault_srcnet_sso_client_secret }}",
        "token_issuer_sso_redirect_uris": [f"https://{cp}:{WEB_PORT}/sso/callback/"],
        "token_issuer_sso_api_audience": f"https://{cp}:{WEB_PORT}",
    }
    (folder / "group_vars" / "all" / "main.yml").write_text("---\n" + yaml.safe_dump(common, sort_keys=False))
    vault = folder / "group_vars" / "all" / "vault.yml"
    secrets_.update(
        {
            "vault_srcnet_db_password": secrets.token_urlsafe(18),
            "vault_srcnet_broker_password": secrets.token_hex(16),
            "vault_srcnet_secret_key": secrets.token_urlsafe(48),
            "vault_srcnet_token_client_secret": secrets.token_hex(20),
            "vault_srcnet_issuer_admin_password": secrets.token_hex(16),
            "vault_srcnet_rucio_client_secret": secrets.token_hex(20),
            "vault_srcnet_sso_client_secret": secrets.token_hex(20),
            "vault_srcnet_fireflies_token": secrets.token_hex(20),
        }
    )
    vault.write_text("---\n" + yaml.safe_dump(secrets_))
    password = folder.parent / "vault-password"
    password.write_text(secrets.token_hex(16) + "\n")
    password.chmod(0o600)
    subprocess.run(
        ["ansible-vault", "encrypt", "--vault-password-file", str(password), str(vault)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return folder


def _topology(path: Path, fleet: Fleet) -> Path:
    """A telescope whose SDP storage is s1 and a regional centre whose disk is s2, joined by a 10 Gbit/s
    300 ms link: the push loop pushes the telescope's products to the centre (the control plane copies only
    between storage it knows, topology/services/storage_urls.py)."""
    document = {
        "version": 1,
        "telescopes": [
            {
                "name": TELESCOPE,
                "region": "oceania",
                "country": "AU",
                "latitude": -26.7,
                "longitude": 116.6,
                "daily_volume": "10TB",
                "sdp_buffer": "20TB",
            }
        ],
        "regional_centres": [
            {"name": CENTRE, "region": "europe", "country": "GB", "latitude": 53.2, "longitude": -2.3}
        ],
        "storage_endpoints": [
            {
                "name": SITES[host],
                "site": site,
                "hostname": fleet.hosts[host].address,
                "role": role,
                "root_port": 1094,
                "http_port": 8443,
                "prefix": STORAGE_PREFIX,
                # The audience the site accepts (the xrootd_site role's default: its inventory name).
                "token_audience": host,
            }
            for host, site, role in (("s1", TELESCOPE, "sdp"), ("s2", CENTRE, "disk"))
        ],
        # The telescope's access link (the planner plans a telescope's pushes on its access links).
        "links": [
            {
                "name": "deploy-wan",
                "a": TELESCOPE,
                "b": CENTRE,
                "kind": "access",
                "capacity": "10G",
                "rtt_ms": 300,
            }
        ],
        "paths": {"compute": [{"from": ["telescope"], "to": ["src"]}], "declared": []},
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def deployed(deployment: Deployment) -> tuple[PlaybookRun, PlaybookRun]:
    """site.yml run twice over the booted hosts; the second run is the idempotence check."""
    first = deployment.playbook(label="first-run")
    assert first.returncode == 0, first.output[-6000:]
    second = deployment.playbook(label="second-run")
    assert second.returncode == 0, second.output[-6000:]
    return first, second


@contextmanager
def booted_deployment(workdir: Path, layout: dict[str, list[str]] = LAYOUT) -> Iterator[Deployment]:
    """The hosts of ``layout`` (``LAYOUT``'s and any more workers) booted, with the inventory, vault, CA and
    release that site.yml needs; every host stopped and removed on leaving, also after a failure (a leftover
    raises). Also the control-plane benchmark's fleet (bench/control_plane/on_hosts.py)."""
    if os.geteuid() != 0:
        raise DeploymentError(
            "the booted hosts need root (network namespaces, overlay mounts, systemd-nspawn)"
        )
    for tool in ("systemd-nspawn", "debootstrap", "ansible-playbook"):
        if shutil.which(tool) is None:
            raise DeploymentError(f"{tool} is missing: run scripts/bootstrap.sh")
    for built in ("libXrdWanIO-5.so", "xrdcp-wan", "libwanio_fastopen.so"):
        if not (PLUGIN_BUILD / built).exists():
            raise DeploymentError(
                f"the XRootD plugin is not built ({PLUGIN_BUILD / built}): run xrootd-plugins/build.sh"
            )
    keycloak = keycloak_root() / f"keycloak-quarkus-dist-{KEYCLOAK_VERSION}.tar.gz"
    if not keycloak.exists():
        raise DeploymentError(f"the Keycloak distribution is missing ({keycloak}): run scripts/bootstrap.sh")
    fleet = Fleet(workdir=workdir, rootfs=cached_rootfs())
    try:
        fleet.open()
        for name in layout:
            # The monitoring host receives the DTNs' UDP summary reports (1.7 kB): on a segment where the
            # DTNs send jumbo frames it must take them too (at 1500 bytes it drops them, as a real one would).
            fleet.add(name, mtu=9000 if "monitoring" in layout[name] else 1500)
        archive = release_archive(workdir / "wheelhouse")
        digest = subprocess.run(["sha256sum", str(archive)], capture_output=True, text=True, check=True)
        release = "0.1.0-" + digest.stdout[:12]
        _pki(workdir / "pki", {n: fleet.hosts[n] for n in sorted({*SITES, ISSUER_HOST, CONTROL_PLANE_HOST})})
        vault: dict[str, str] = {}
        inventory = _inventory(workdir / "inventory", fleet, workdir / "pki", archive, release, vault, layout)
        fleet.boot()
        yield Deployment(
            fleet=fleet,
            inventory=inventory,
            vault_password=workdir / "vault-password",
            release=release,
            secrets=vault,
            ca_file=workdir / "pki" / "ca.pem",
        )
    finally:
        problems = fleet.close()
        if problems:
            raise DeploymentError(f"the hosts were not all removed: {problems}")


@pytest.fixture(scope="session")
def deployment() -> Iterator[Deployment]:
    try:
        with booted_deployment(Path(f"/var/tmp/srcnet-deploy-{os.getpid()}")) as booted:
            yield booted
    except DeploymentError as error:
        pytest.fail(str(error))

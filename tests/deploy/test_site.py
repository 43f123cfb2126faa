"""ansible/site.yml on six booted Debian 12 hosts: bad input stops the run before any host changes; the
first run deploys the platform, the second changes nothing; the DTN tuning is applied and persistent; the
deployed Prometheus scrapes every target, with the platform's alert rules loaded; the control plane speaks
HTTPS only, with the deployment's settings (check --deploy clean, HSTS, secure cookies)."""

from __future__ import annotations

import json
import re
import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    CENTRE,
    CONTROL_PLANE_HOST,
    DEPLOY_TIMEOUT,
    LAYOUT,
    SITES,
    TELESCOPE,
    WEB_PORT,
    Deployment,
    PlaybookRun,
)

pytestmark = DEPLOY_TIMEOUT

SYSCTL_FILE = "/etc/sysctl.d/90-srcnet-dtn.conf"
# 10 Gbit/s x 300 ms = 375 MB; buffers at twice that.
BUFFER_BYTES = 2 * 375_000_000


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("dtn_tuning_buffer_max_bytes=-1", "dtn_tuning_buffer_max_bytes"),
        ("dtn_tuning_congestion_control=vegas", "dtn_tuning_congestion_control"),
        ("xrootd_site_path_capacity_gbps=0", "xrootd_site_path_capacity_gbps"),
        # Less than one 8 MiB read for a root:// pull.
        ("xrootd_site_plugin_tpc_max_memory_mib=4", "xrootd_site_plugin_tpc_max_memory_mib"),
        ("platform_worker_concurrency=0", "platform_worker_concurrency"),
        ("monitoring_scrape_interval=often", "monitoring_scrape_interval"),
        # A site trusting a plain-HTTP issuer (scitokens-cpp would refuse it, and so would every copy).
        ("xrootd_site_token_issuers=http://issuer.example.org/realms/srcnet", "xrootd_site_token_issuers"),
        ("token_issuer_token_lifetime=5", "token_issuer_token_lifetime"),
        # Shorter than the 50 characters Django's check --deploy asks of a secret key (security.W009).
        ("srcnet_app_secret_key=" + "k" * 49, "srcnet_app_secret_key"),
        # The example vault's placeholder, long enough for every other rule.
        (
            "srcnet_app_secret_key=change-me-a-long-random-string-of-50-characters-or-more",
            "srcnet_app_secret_key",
        ),
        # The example vault's portal client secret (single sign-on is on in the test inventory).
        (
            "srcnet_app_sso_client_secret=change-me-the-portal-clients-secret-at-the-issuer",
            "srcnet_app_sso_client_secret",
        ),
    ],
)
def test_bad_input_fails_before_any_host_changes(deployment: Deployment, override: str, named: str) -> None:
    before = _dtn_tuning_on_disk(deployment)
    run = deployment.playbook("-e", override, label=f"bad-{named}")
    _stopped_in_preflight(deployment, run, named, before)
    if "change-me" in override:
        assert f"{named} is still the example vault's placeholder" in run.output, run.output[-4000:]


@pytest.mark.parametrize(
    ("missing", "only_on", "message", "failing"),
    [
        # Left out of the inventory, with no topology export to take it from instead.
        ("dtn_tuning_path_rtt_ms", {}, "dtn_tuning_path_rtt_ms must both be given", {"s1", "s2"}),
        # No issuer for the platform's copies (the sites would refuse every one): on every platform host.
        (
            "srcnet_app_token_issuer",
            {},
            "missing required arguments: srcnet_app_token_issuer",
            {"cp", "w1", "w2"},
        ),
        # A site without a path capacity: s1 has its own, s2 none; s1 is not deployed either.
        (
            "xrootd_site_path_capacity_gbps",
            {"s1": 10},
            "missing required arguments: xrootd_site_path_capacity_gbps",
            {"s2"},
        ),
    ],
)
def test_missing_variable_fails_before_any_host_changes(
    deployment: Deployment, missing: str, only_on: dict[str, object], message: str, failing: set[str]
) -> None:
    inventory = deployment.variant(f"missing-{missing}", without=missing, on_hosts=only_on)
    before = _dtn_tuning_on_disk(deployment)
    run = deployment.playbook(label=f"missing-{missing}", inventory=inventory)
    _stopped_in_preflight(deployment, run, missing, before)
    assert message in run.output, run.output[-4000:]
    failed = {host for host, counts in run.recap.items() if counts["failed"]}
    assert failed == failing, run.recap


def _dtn_tuning_on_disk(deployment: Deployment) -> str:
    """What the DTN role wrote on s1 (its sysctl file's content and modification time), or "" before any
    deployment: a bad run must leave it as it was, whether the session's deployment came first or not
    (tests/deploy/test_sign_on.py, which deploys, sorts before this module)."""
    probe = deployment.ssh("s1", ["sh", "-c", f"stat -c %Y {SYSCTL_FILE} && cat {SYSCTL_FILE}"], check=False)
    return probe.stdout if probe.returncode == 0 else ""


def _stopped_in_preflight(deployment: Deployment, run: PlaybookRun, named: str, before: str) -> None:
    assert run.returncode != 0
    assert named in run.output, run.output[-4000:]
    # Stopped in the preflight play: every host reached, none changed, nothing of the roles' on disk.
    assert set(run.recap) == set(LAYOUT), run.recap
    assert all(counts["changed"] == 0 for counts in run.recap.values()), run.recap
    assert "PLAY [Trust the platform CA]" not in run.output
    assert _dtn_tuning_on_disk(deployment) == before, (
        "the DTN's sysctl file changed: the bad run changed a host"
    )


def test_site_playbook_deploys_every_host_then_changes_nothing(
    deployed: tuple[PlaybookRun, PlaybookRun],
) -> None:
    first, second = deployed
    assert set(first.recap) == set(LAYOUT)
    assert all(counts["failed"] == 0 and counts["unreachable"] == 0 for counts in first.recap.values())
    assert all(changed > 0 for changed in first.changed().values()), first.recap
    assert set(second.recap) == set(LAYOUT)
    assert second.changed() == {name: 0 for name in LAYOUT}, second.recap


def test_dtn_buffers_from_the_platforms_topology_export(deployment: Deployment, deployed: object) -> None:
    """The DTNs sized from the deployed control plane's paths (GET /api/topology/paths/) instead of the
    inventory's figures: the same 10 Gbit/s 300 ms path, so the same buffers, now recorded as taken from
    the export's path; a site the export has no path for fails before any change, naming the variable."""
    token = deployment.ssh(
        "cp",
        ["srcnet-manage", "shell", "-c",
         "from django.contrib.auth import get_user_model; from identity.tokens import issue; "
         "u, _ = get_user_model().objects.get_or_create(username='dtn-export'); "
         "print(issue(u, name='dtn export', scope='read', days=1)[1])"],
    ).stdout.split()[-1]  # fmt: skip
    export = deployment.curl(
        "--fail", "-H", f"Authorization: Bearer {token}", f"{deployment.web}/api/topology/paths/?limit=1000"
    ).stdout  # fmt: skip
    paths_file = deployment.fleet.workdir / "paths.json"
    paths_file.write_text(export)
    from_export = {
        "dtn_tuning_path_bandwidth_gbps": 0,
        "dtn_tuning_path_rtt_ms": 0,
        "dtn_tuning_topology_paths": str(paths_file),
        "dtn_tuning_topology_site": "{{ {'s1': '"
        + TELESCOPE
        + "', 's2': '"
        + CENTRE
        + "'}[inventory_hostname] }}",
    }
    lost = deployment.playbook(
        "--limit", "dtn", "-e", json.dumps({**from_export, "dtn_tuning_topology_site": "NOWHERE"}),
        label="dtn-site-without-path",
    )  # fmt: skip
    assert lost.returncode != 0 and "dtn_tuning_topology_site: 'NOWHERE' has no path" in lost.output
    assert all(counts["changed"] == 0 for counts in lost.recap.values()), lost.recap

    run = deployment.playbook("--limit", "dtn", "-e", json.dumps(from_export), label="dtn-from-export")
    assert run.returncode == 0, run.output[-4000:]
    for name in ("s1", "s2"):
        record = json.loads(deployment.ssh(name, ["cat", "/etc/ansible/facts.d/srcnet_dtn.fact"]).stdout)
        assert record["source"].startswith("topology export paths.json, path "), record
        assert (record["path_bandwidth_gbps"], record["path_rtt_ms"]) == (10.0, 300.0), record
        assert record["buffer_bytes"] == BUFFER_BYTES, record
        live = deployment.ssh(name, ["sysctl", "-n", "net.ipv4.tcp_rmem"]).stdout.split()
        assert live == ["4096", "131072", str(BUFFER_BYTES)]
    # The paths in the export the platform computed: SKA1-Deploy -> SITEB, 10 Gbit/s, 300 ms.
    assert TELESCOPE in export and CENTRE in export
    back = deployment.playbook("--limit", "dtn", label="dtn-from-inventory")
    assert back.returncode == 0, back.output[-4000:]
    assert (
        json.loads(deployment.ssh("s1", ["cat", "/etc/ansible/facts.d/srcnet_dtn.fact"]).stdout)["source"]
        == "inventory"
    )


def test_dtn_tuning_is_applied_now_and_at_boot(deployment: Deployment, deployed: object) -> None:
    for name in ("s1", "s2"):
        live = deployment.ssh(
            name,
            ["sysctl", "-n", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control",
             "net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_fastopen"],
        ).stdout.split()  # fmt: skip
        assert live == [
            "4096", "131072", str(BUFFER_BYTES), "4096", "16384", str(BUFFER_BYTES), "bbr", "1", "1027"
        ]  # fmt: skip
        persistent = deployment.ssh(name, ["cat", SYSCTL_FILE]).stdout
        assert f"net.ipv4.tcp_rmem=4096 131072 {BUFFER_BYTES}" in persistent.replace(" = ", "=")
        link = deployment.ssh(name, ["cat", "/sys/class/net/eth0/mtu", "/sys/class/net/eth0/tx_queue_len"])
        assert link.stdout.split() == ["9000", "10000"]
        assert (
            "qdisc pfifo_fast" in deployment.ssh(name, ["tc", "qdisc", "show", "dev", "eth0", "root"]).stdout
        )
        unit = deployment.ssh(name, ["systemctl", "is-enabled", "srcnet-dtn-links.service"])
        assert unit.stdout.strip() == "enabled"
    # Hosts without the dtn role keep the defaults they booted with.
    assert deployment.ssh("w1", ["test", "-e", SYSCTL_FILE], check=False).returncode == 1


def test_the_sites_xrootd_runs_with_the_fast_open_preload(deployment: Deployment, deployed: object) -> None:
    """The unit preloads libwanio_fastopen.so into the server (its HTTP third-party pulls then ask for TCP
    Fast Open; tests/xrootd_plugin/test_fast_open_preload.py, tests/wan/test_copy_rtts.py)."""
    for name in ("s1", "s2"):
        maps = deployment.ssh(
            name, ["sh", "-c", "cat /proc/$(systemctl show -p MainPID --value srcnet-xrootd)/maps"]
        ).stdout
        assert "/usr/local/lib/srcnet-xrootd/libwanio_fastopen.so" in maps


def test_the_sites_pulls_size_their_reads_from_the_path_and_write_direct(
    deployment: Deployment, deployed: object
) -> None:
    """The pull program is told the site's path capacity (10 Gbit/s: 1192 MiB/s) and its memory cap, so its
    reads in flight cover that rate times the round trip it measures (xrootd-plugins README, "TPC pull"); it
    and the server write whole chunks with O_DIRECT."""
    wanted = "xrdcp-wan --server --inflight 16 --max-streams 15 --rate 1192m --max-memory 1024m"
    for name in ("s1", "s2"):
        config = deployment.ssh(name, ["cat", "/etc/xrootd/srcnet/xrootd.cfg"]).stdout.splitlines()
        pull = next(line for line in config if line.startswith("ofs.tpc autorm pgm "))
        assert pull.endswith(wanted), pull
        # What lands over HTTP (the server's own writes) goes past the page cache too.
        assert "wanio.wb.odirect on" in config


def _prometheus(deployment: Deployment, path: str) -> Any:
    url = f"http://{deployment.host('cp').address}:9090{path}"
    argv = ["curl", "-sS", "--globoff", "--fail-with-body", "--max-time", "10", url]
    answer = deployment.fleet.lan_exec(argv, timeout=30)
    document = json.loads(answer.stdout)
    assert document["status"] == "success", document
    return document["data"]


def test_prometheus_scrapes_every_target_and_loads_the_alert_rules(
    deployment: Deployment, deployed: object
) -> None:
    # Scrapes every 5 s (the test inventory): every target has been scraped within a few intervals.
    deadline = time.monotonic() + 60
    while True:
        targets = _prometheus(deployment, "/api/v1/targets?state=active")["activeTargets"]
        health = {(t["labels"]["job"], t["labels"].get("host", t["labels"]["instance"])): t for t in targets}
        if all(t["health"] == "up" for t in targets) or time.monotonic() > deadline:
            break
        time.sleep(2)
    down = {key: (t["health"], t["lastError"]) for key, t in health.items() if t["health"] != "up"}
    assert not down, down
    assert {host for job, host in health if job == "srcnet-node"} == set(LAYOUT)
    cp = deployment.host("cp").address
    assert ("srcnet-control-plane", f"{cp}:8000") in health
    assert ("srcnet-xrootd", "127.0.0.1:9932") in health
    # The firefly collector, over HTTPS with its own bearer token.
    assert ("srcnet-fireflies", f"{cp}:9105") in health

    groups = {group["name"]: group for group in _prometheus(deployment, "/api/v1/rules")["groups"]}
    assert {"srcnet-data-path", "srcnet-storage"} <= set(groups), sorted(groups)
    alerts = {rule["name"] for rule in groups["srcnet-data-path"]["rules"]}
    assert "SRCNetAccessLinkBelowTarget" in alerts, alerts
    assert all(rule["health"] == "ok" for group in groups.values() for rule in group["rules"])
    managers = _prometheus(deployment, "/api/v1/alertmanagers")["activeAlertmanagers"]
    assert [m["url"] for m in managers] == ["http://127.0.0.1:9093/api/v2/alerts"], managers

    # The platform's own series arrive: the control plane's and the sites' summary reports.
    def series(query: str) -> list[Any]:
        return _prometheus(deployment, f"/api/v1/query?query={query}")["result"]  # type: ignore[no-any-return]

    # ... and each site's plugin counters, through its metrics file and the node exporter's textfile folder.
    deadline = time.monotonic() + 60
    while True:
        reporting = {s["metric"]["site"] for s in series("srcnet_xrootd_last_report_timestamp_seconds")}
        plugins = {s["metric"]["site"] for s in series("srcnet_plugin_start_time_seconds")}
        if {frozenset(reporting), frozenset(plugins)} == {frozenset(SITES.values())}:
            break
        if time.monotonic() > deadline:
            break
        time.sleep(2)
    assert reporting == set(SITES.values()), _site_reports(deployment, set(SITES.values()) - reporting)
    assert plugins == set(SITES.values()), _site_reports(deployment, set(SITES.values()) - plugins)
    assert series("up{job=%22srcnet-control-plane%22}")[0]["value"][1] == "1"


def _site_reports(deployment: Deployment, missing: set[str]) -> str:
    """What the hosts of sites whose reports did not arrive say: their server's state, its report line and
    the end of its journal (the hosts are gone once the session ends)."""
    said = []
    for host, site in SITES.items():
        if site not in missing:
            continue
        for argv in (
            ["systemctl", "show", "-p", "ActiveState,ActiveEnterTimestamp,NRestarts", "srcnet-xrootd"],
            ["grep", "-h", "xrd.report", "-r", "/etc/xrootd"],
            ["journalctl", "-u", "srcnet-xrootd", "-n", "40", "--no-pager"],
        ):
            done = deployment.ssh(host, argv, check=False)
            said.append(f"{host} ({site}) $ {' '.join(argv)}:\n{done.stdout}{done.stderr}")
    return "\n".join(said)


def test_the_portal_serves_its_static_files(deployment: Deployment, deployed: object) -> None:
    url = f"{deployment.web}/static/srcnet/portal.css"
    answer = deployment.curl("--fail", "-o", "/dev/null", "-w", "%{http_code} %{content_type}", url)
    assert answer.stdout.split()[0] == "200" and answer.stdout.split()[1].startswith("text/css"), (
        answer.stdout
    )
    # Collected into the current release's own folder, which a rollback brings back with the release.
    collected = deployment.ssh(
        "cp", ["readlink", "-f", "/opt/srcnet/current/static/srcnet/portal.css"]
    ).stdout
    assert collected.startswith(f"/opt/srcnet/releases/{deployment.release}/static/"), collected


def test_the_control_plane_speaks_https_only(deployment: Deployment, deployed: object) -> None:
    """The portal, the REST API and the FTS3 endpoint over HTTPS only (issue 31; docs/security.md): Django's
    check --deploy is clean on the deployed settings; the web port answers no plain HTTP and is gunicorn's
    only port; its certificate verifies with the platform CA for the host's name and address (and not for
    another name, nor without that CA); an answer carries HSTS, and a portal sign-in's session and CSRF
    cookies are Secure; the FTS3 endpoint still reads a client certificate from the connection."""
    check = deployment.ssh(
        CONTROL_PLANE_HOST, ["srcnet-manage", "check", "--deploy", "--fail-level", "WARNING"], check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "System check identified no issues" in check.stdout, check.stdout + check.stderr

    cp = deployment.host(CONTROL_PLANE_HOST).address
    plain = deployment.fleet.lan_exec(
        ["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", f"http://{cp}:{WEB_PORT}/api/"],
        timeout=30, check=False,
    )  # fmt: skip
    # No HTTP answer at all (gunicorn takes the request for a TLS handshake and drops it), not a redirect.
    assert plain.returncode != 0 and plain.stdout.strip() == "000", (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )
    listening = deployment.ssh(CONTROL_PLANE_HOST, ["ss", "-Hltnp"]).stdout
    web_ports = {line.split()[3] for line in listening.splitlines() if '"gunicorn"' in line}
    assert web_ports == {f"{cp}:{WEB_PORT}"}, listening

    # The certificate names the host (cp) and its address; curl trusts the deployment's CA only.
    by_name = deployment.curl(
        "--resolve", f"{CONTROL_PLANE_HOST}:{WEB_PORT}:{cp}", "-o", "/dev/null", "-w", "%{http_code}",
        f"https://{CONTROL_PLANE_HOST}:{WEB_PORT}/api/", check=False,
    )  # fmt: skip
    assert by_name.returncode == 0 and by_name.stdout in {"200", "401", "403"}, (
        by_name.stdout,
        by_name.stderr,
    )
    other_name = deployment.curl(
        "--resolve", f"elsewhere.example.org:{WEB_PORT}:{cp}", f"https://elsewhere.example.org:{WEB_PORT}/api/",
        check=False,
    )  # fmt: skip
    assert other_name.returncode == 60, (
        other_name.returncode,
        other_name.stderr,
    )  # CURLE_PEER_FAILED_VERIFICATION
    without_ca = deployment.fleet.lan_exec(
        ["curl", "-sS", "--max-time", "10", f"{deployment.web}/api/"], timeout=30, check=False
    )
    assert without_ca.returncode == 60, (without_ca.returncode, without_ca.stderr)

    # A portal sign-in: HSTS on every answer, the CSRF cookie and the session cookie Secure (and HttpOnly).
    # With single sign-on on (the test inventory), a local password signs an admin in only.
    password = secrets.token_urlsafe(18)
    deployment.ssh(
        CONTROL_PLANE_HOST,
        ["srcnet-manage", "shell", "-c",
         "from django.contrib.auth import get_user_model; "
         "u, _ = get_user_model().objects.get_or_create(username='tls-check'); "
         f"u.is_staff = u.is_superuser = True; u.set_password('{password}'); u.save()"],
    )  # fmt: skip
    jar = deployment.fleet.workdir / "tls-check-cookies"
    login = f"{deployment.web}/login/"
    form = deployment.curl("--fail", "-c", str(jar), "-D", "-", "-o", "/dev/null", login).stdout
    signed_in = deployment.curl(
        "-b", str(jar), "-c", str(jar), "-D", "-", "-o", "/dev/null", "--referer", login,
        "--data-urlencode", f"csrfmiddlewaretoken={_cookie(jar, 'csrftoken')}",
        "--data-urlencode", "username=tls-check", "--data-urlencode", f"password={password}", login,
    ).stdout  # fmt: skip
    assert signed_in.split()[1] == "302", signed_in  # to the portal: the password was taken
    for answer in (form, signed_in):
        assert re.search(
            r"^strict-transport-security: max-age=31536000; includeSubDomains; preload\r?$",
            answer,
            re.I | re.M,
        ), answer
    cookies = {
        line.split("=", 1)[0].split(":", 1)[1].strip(): line
        for line in (form + signed_in).splitlines()
        if line.lower().startswith("set-cookie:")
    }
    assert {"csrftoken", "sessionid"} <= set(cookies), cookies
    assert all(re.search(r";\s*Secure\b", line, re.I) for line in cookies.values()), cookies
    assert re.search(r";\s*HttpOnly\b", cookies["sessionid"], re.I), cookies

    # The FTS3 endpoint on the same port asks for a client certificate and reads the verified one: a
    # certificate of the platform CA is named (403 until registered), then taken as its user's.
    pki = deployment.ca_file.parent
    client = (
        "--cert",
        str(pki / f"{CONTROL_PLANE_HOST}.cert.pem"),
        "--key",
        str(pki / f"{CONTROL_PLANE_HOST}.key.pem"),
    )
    whoami = f"{deployment.web}/fts3/whoami"
    refused = deployment.curl(*client, "-w", "\n%{http_code}", whoami, check=False).stdout
    assert refused.endswith("\n403") and f"/CN={CONTROL_PLANE_HOST} is not registered" in refused, refused
    deployment.ssh(
        CONTROL_PLANE_HOST,
        ["srcnet-manage", "shell", "-c",
         "from django.contrib.auth import get_user_model; from transfers.models import ClientIdentity; "
         "u = get_user_model().objects.get(username='tls-check'); "
         f"ClientIdentity.objects.get_or_create(dn='/CN={CONTROL_PLANE_HOST}', defaults={{'user': u}})"],
    )  # fmt: skip
    me = json.loads(deployment.curl(*client, "--fail", whoami).stdout)
    assert (me["user_dn"], me["method"]) == (f"/CN={CONTROL_PLANE_HOST}", "certificate"), me


def _cookie(jar: Path, name: str) -> str:
    """A cookie's value from curl's cookie jar (Netscape format: the name and value are the last fields)."""
    for line in jar.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) == 7 and fields[5] == name:
            return fields[6]
    raise AssertionError(f"no {name} cookie in {jar}")

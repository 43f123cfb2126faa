"""The demo: the whole SRC network on this machine, and a push of synthetic products through it.

Brings up PostgreSQL, Redis, one XRootD server per storage endpoint of the reference topology, Celery
workers and the web server; writes synthetic products at both telescopes' SDP storage; lets the default
policy place them and the transfer service move them by third-party copy; prints what moved."""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .processes import ServiceError, account_of, read_pid
from .state import StateDir

SUMMARY_TIMEOUT_S = float(os.environ.get("SRCNET_DEMO_TIMEOUT", "600"))
# The name of the operator token each demo prints for the CLI (the previous one is revoked).
DEMO_TOKEN_NAME = "demo CLI"


def _say(message: str) -> None:
    print(f"[{datetime.now(UTC).strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _prepare_environment(state: StateDir, name: str) -> None:
    from .stack import service_env

    os.environ.update(service_env(state, name))


def run_demo(
    *,
    state_name: str,
    once: bool,
    products_per_telescope: int,
    rucio: bool = False,
    fail_one: bool = False,
    long_haul: bool = False,
) -> int:
    from .stack import down, ensure_core, ensure_web, ensure_workers, web_ca, web_url

    state = StateDir.named(state_name)
    interrupted = False

    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        started = time.monotonic()
        _say(f"state folder {state.path}")
        ports = ensure_core(state)
        _say(f"postgres on 127.0.0.1:{ports['postgres']}, redis on 127.0.0.1:{ports['redis']}")
        _prepare_environment(state, state_name)
        if long_haul:
            from .longhaul import platform_settings

            # Before settings load and workers start: the push loop plans on the capacities the emulator
            # carries (SRCNET_NETWORK_SCALE), so its rates and arrival times are the wire's, and simulated
            # campaigns model its sites' congestion control and MTU.
            os.environ.update(platform_settings())
        import django

        django.setup()
        token = _prepare_database(state, long_haul=long_haul)
        _use_the_issuer(state)
        person = _offer_sign_on(state)
        rucio_context = None
        if rucio:
            # Before the worker starts: it follows this Rucio server's rules (prepare sets its environment).
            from . import demo_rucio

            rucio_context = demo_rucio.prepare(state, state_name)
        worker_pid = ensure_workers(state, state_name)
        web_port = ensure_web(state, state_name)
        _say_where_to_sign_on(web_url(state), web_ca(state))
        ready_in = time.monotonic() - started
        web_pid = read_pid(state, "web")
        _say(
            f"celery worker pid {worker_pid} (as {account_of(worker_pid)}); web on 127.0.0.1:{web_port} "
            f"pid {web_pid} (as {account_of(web_pid)}); ready in {ready_in:.1f} s"
        )
        rows, failed = _push(
            products_per_telescope, rucio_context, fail_one=fail_one, tokens=_sdp_tokens(state)
        )
        _print_summary(rows)
        # HTTPS only, with the local network's own CA (a browser asks once; curl --cacert; requests verify=).
        base, ca = web_url(state), web_ca(state)
        print(
            f"\nportal:  {base}/  (sign on at the local issuer as '{person[0]}', password '{person[1]}'; ",
            end="",
        )
        print("the local admin: user 'operator', password 'operator')")
        print(f"API:     {base}/api/   schema {base}/api/schema/   docs {base}/api/docs/")
        print(f"map:     {base}/topology/map/   campaigns: {base}/campaigns/ (start a data challenge)")
        print(f"CA:      {ca}  (the local network's: the web server's certificate is signed by it)")
        print(f"CLI:     REQUESTS_CA_BUNDLE={ca} SRCNET_URL={base} SRCNET_TOKEN={token} srcnet products list")
        print(f"         or SRCNET_CA_BUNDLE={ca} SRCNET_URL={base} srcnet auth login  (as '{person[0]}')")
        if failed:
            print(f"\n{failed} product(s) FAILED", file=sys.stderr)
        if once:
            return 1 if failed else 0
        _start_monitoring(state, state_name, base)
        _say("running; Ctrl-C stops every process this demo started")
        while True:
            signal.pause()
    except KeyboardInterrupt:
        interrupted = True
        return 130 if not once else 1
    finally:
        stopped = down(state)
        _say(("interrupted; " if interrupted else "") + "stopped " + ", ".join(stopped))


def _start_monitoring(state: StateDir, state_name: str, base: str) -> None:
    """Prometheus (scraping the web server's /metrics), Alertmanager and the node exporter; the demo goes
    on without them if they cannot start (docs/monitoring.md)."""
    from .monitoring import ensure_monitoring
    from .processes import ServiceError

    try:
        monitoring = ensure_monitoring(state, state_name, control_plane=base, fts3=None)
    except (FileNotFoundError, ServiceError) as exc:
        _say(f"monitoring not started: {exc}")
        return
    print(f"metrics: {base}/metrics   Prometheus {monitoring.prometheus_url}/alerts", end="")
    print(f"   Alertmanager {monitoring.alertmanager_url}/")


def _prepare_database(state: StateDir, *, long_haul: bool = False) -> str:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from identity.models import ApiToken
    from identity.tokens import issue, revoke
    from topology.management.commands.import_topology import REFERENCE
    from topology.services.importer import import_topology

    from .binding import bind_local_sites

    call_command("migrate", verbosity=0)
    summary = import_topology(text=REFERENCE.read_text())
    _say(f"reference topology loaded: {summary.paths_computed} paths computed")
    sites = bind_local_sites(state, long_haul=long_haul)
    _say(f"{len(sites)} XRootD sites up (root:// and davs:// with third-party copy)")
    if long_haul:
        from .longhaul import describe_network

        _say(describe_network(state))
    users = get_user_model()
    operator, created = users.objects.get_or_create(
        username="operator", defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        operator.set_password("operator")
        operator.save()
    scientist, created = users.objects.get_or_create(username="scientist")
    if created:
        scientist.set_password("scientist")
        scientist.save()
    # The CLI's token for this demo (a week); the one an earlier demo printed is revoked.
    for earlier in ApiToken.objects.filter(user=operator, name=DEMO_TOKEN_NAME, revoked__isnull=True):
        revoke(earlier, operator)
    return issue(operator, name=DEMO_TOKEN_NAME, scope="operate", days=7)[1]


def _offer_sign_on(state: StateDir) -> tuple[str, str]:
    """Single sign-on at the state's issuer for its web server (started after this), a scientist to sign on
    as, and the admin's first mappings (the VO's members scientists, its operators operators)."""
    from identity.models import GroupMapping

    from .issuer import ensure_issuer, issuer_address
    from .issuer_sso import DEMO_MAPPINGS, DEMO_PERSON, ensure_person, offer_sign_on
    from .stack import web_url

    issuer = ensure_issuer(state, address=issuer_address(state))
    offer_sign_on(state, issuer, web_url(state))
    ensure_person(issuer, *DEMO_PERSON, groups=["/ska"])
    for group, role in DEMO_MAPPINGS:
        GroupMapping.objects.get_or_create(group=group, role=role, project=None)
    _say(f"single sign-on at {issuer.url} for the portal and the CLI (as {DEMO_PERSON[0]!r})")
    return DEMO_PERSON


def _say_where_to_sign_on(base: str, ca: Path) -> None:
    """What the web server itself says of its sign-on (so the demo shows it was configured, not assumed)."""
    import requests

    answer = requests.get(f"{base}/api/identity/sign-on/", verify=str(ca), timeout=30)
    if answer.status_code == 200:
        _say(f"the portal and the CLI sign on at {answer.json()['issuer']} (web server's own answer)")
    else:
        _say(f"the web server offers no single sign-on ({answer.status_code}): local passwords only")


def _use_the_issuer(state: StateDir) -> None:
    """This process's settings name the issuer the sites just started with (its settings were read before):
    what it does itself as the platform (the RSEs' ``oidc_support`` in Rucio mode) sees tokens enforced."""
    from django.conf import settings

    from .issuer import issuer_settings

    issuer = issuer_settings(state)
    if issuer is not None:
        settings.SRCNET_TOKENS = {**settings.SRCNET_TOKENS, **issuer.as_setting()}


def _sdp_tokens(state: StateDir) -> Any:
    """The token client the telescopes' data writer uses at their SDP storage (the state's issuer), or None
    when the state has none."""
    from transfers.tokens import TokenClient

    from .issuer import issuer_settings

    settings = issuer_settings(state)
    return TokenClient(settings) if settings is not None else None


def _push(
    per_telescope: int,
    rucio: dict[str, Any] | None = None,
    *,
    fail_one: bool = False,
    tokens: Any = None,
) -> tuple[list[dict[str, object]], int]:
    """Write, register and push the products; wait for them; return the summary rows and how many failed.

    With ``fail_one``, the first product's last file is deleted from the SDP storage after the product is
    registered and before it is pushed: its copy fails for real (missing source, after the retries), so the
    product ends FAILED."""
    from campaigns.synthetic import remove_file, write_file
    from replicas.choices import ProductState
    from replicas.models import DataProduct
    from replicas.services import FileSpec, register_product
    from schedulers.loop import push_cycle
    from topology.choices import StorageRole
    from topology.models import StorageEndpoint, Telescope

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    rng = random.Random(stamp)
    products: list[int] = []
    for telescope in Telescope.objects.order_by("name"):
        sdp = StorageEndpoint.objects.get(site=telescope, role=StorageRole.SDP)
        for index in range(per_telescope):
            name = f"{telescope.name.lower()}-obs-{stamp}-{index:03d}"
            # The product's folder at the SDP: the writer may create files there and nothing else.
            write_token = tokens.fetch([f"storage.create:/ska/{name}"], sdp.audience).value if tokens else ""
            files = []
            for part in range(2):
                size = rng.randint(4, 24) * 1024 * 1024
                file_name = f"{name}.part{part}.ms"
                path = f"ska/{name}/{file_name}"
                adler = write_file(
                    f"root://{sdp.hostname}:{sdp.root_port}/{sdp.prefix}{path}",
                    size,
                    seed=rng.randint(0, 2**31),
                    token=write_token,
                )
                files.append(FileSpec(name=file_name, size_bytes=size, adler32=adler))
            product = register_product(scope="ska", name=name, telescope=telescope, files=files, priority=3)
            if fail_one and not products:
                url = f"root://{sdp.hostname}:{sdp.root_port}/{sdp.prefix}{path}"
                remove_token = (
                    tokens.fetch([f"storage.modify:/ska/{name}"], sdp.audience).value if tokens else ""
                )
                remove_file(url, token=remove_token)
                _say(f"--fail-one: removed {file_name} from {sdp.name}; {name} must fail")
            products.append(product.pk)
    # The push loop plans the queue and submits what is due (as rules in Rucio mode); each push job that
    # ends asks the worker for the next cycle (its lane is free), and the beat runs one every PUSH_INTERVAL.
    cycle = push_cycle()
    if cycle.error:
        raise ServiceError(f"the push loop could not plan the products: {cycle.error}")
    for entry in cycle.submitted:
        what = "rule" if rucio is not None else "job"
        _say(
            f"push plan: {entry['product']} {' -> '.join(entry['lane'])}, {entry['streams']} streams x "
            f"{entry['files']} files, priority {entry['priority']}; {what} {entry['job_id']}"
        )
    _say(f"{len(products)} products written at the SDPs and queued for the push loop; waiting for them")
    deadline = time.monotonic() + SUMMARY_TIMEOUT_S
    done_states = (ProductState.PLACED, ProductState.FAILED)
    tty = sys.stderr.isatty()
    shown = -1
    while time.monotonic() < deadline:
        states = list(DataProduct.objects.filter(pk__in=products).values_list("state", flat=True))
        finished = sum(s in done_states for s in states)
        if finished != shown:
            # In place on a terminal; one line per change in a log.
            prefix, end = ("\r", "") if tty else ("", "\n")
            message = f"{prefix}  {finished}/{len(products)} products ended (placed or failed)"
            print(message, end=end, file=sys.stderr, flush=True)
            shown = finished
        if finished == len(products):
            break
        time.sleep(0.5)
    if tty:
        print(file=sys.stderr)
    return _summary_rows(products), DataProduct.objects.filter(pk__in=products).exclude(
        state=ProductState.PLACED
    ).count()


def _summary_rows(product_ids: list[int]) -> list[dict[str, object]]:
    from replicas.models import DataProduct
    from replicas.selectors import product_files
    from transfers.models import TransferFile

    rows = []
    for product in DataProduct.objects.filter(pk__in=product_ids).order_by("telescope__name", "name"):
        # The jobs its copy requests name, and the files Rucio submitted for its DIDs.
        transfers = TransferFile.objects.filter(product_files(product))
        for transfer in transfers.order_by("id"):
            seconds = transfer.duration_seconds or 0.0
            verified = bool(transfer.source_checksum) and transfer.source_checksum == transfer.dest_checksum
            rows.append(
                {
                    "product": product.name,
                    "file": transfer.metadata.get("file")
                    or str(transfer.metadata.get("name", "")).rsplit("/")[-1],
                    "source": product.source.name,
                    "destination": _endpoint_of(transfer.dest_surl),
                    "bytes": transfer.transferred_bytes or transfer.filesize or 0,
                    "seconds": seconds,
                    "MB/s": (transfer.transferred_bytes / 1e6 / seconds)
                    if seconds and transfer.transferred_bytes
                    else 0.0,
                    "adler32": (
                        f"{transfer.dest_checksum} ok"
                        if verified
                        else f"{transfer.state}: {transfer.reason[:60]}"
                    ),
                }
            )
    return rows


def _endpoint_of(url: str) -> str:
    from topology.models import StorageEndpoint

    for endpoint in StorageEndpoint.objects.all():
        if f":{endpoint.root_port}/" in url or f":{endpoint.http_port}/" in url:
            return endpoint.name
    return url


def _print_summary(rows: list[dict[str, object]]) -> None:
    from cli.output import render_table

    columns = ["product", "file", "source", "destination", "bytes", "seconds", "MB/s", "adler32"]
    formatted = [{**r, "seconds": f"{r['seconds']:.2f}", "MB/s": f"{r['MB/s']:.1f}"} for r in rows]
    print(render_table(formatted, columns))

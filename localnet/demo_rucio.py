"""The demo's Rucio mode: a real Rucio server on the same PostgreSQL with its daemons running; the push loop
plans the products as always and hands each due leg on as a Rucio rule (``SRCNET_PUSH_THROUGH=rucio``,
``schedulers/rucio_placement.py``), with the plan's link limits set on the FTS3 endpoint the RSEs name;
Rucio's conveyor daemons hand the copies to the
embedded FTS3 service (HTTPS; the conveyor's token from the local issuer, with a storage token per end
of each copy, as with SKA-IAM in production), and the Celery beat's ``replicas.follow_rucio_rules``
bringing the replicas into the portal. Needs Django set up; :func:`prepare` runs before the Celery worker
starts, so that the worker follows this Rucio server."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import Any

from .issuer_rucio import RucioClient
from .state import StateDir

CONVEYOR_IDENTITY = "rucio-conveyor"
# How often the demo's worker follows Rucio's rules into replicas (seconds; settings' default is 60).
FOLLOW_INTERVAL = "2"


def _say(message: str) -> None:
    print(f"[{datetime.now(UTC).strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def prepare(
    state: StateDir, name: str, *, fresh: bool = False, mock_storage: bool = False, pooled: bool = False
) -> dict[str, Any]:
    """The FTS3 endpoint, the conveyor's identity, the Rucio server and its daemons, every endpoint as an
    RSE; and the environment (``os.environ``) that makes the worker started next follow this server.
    ``fresh``: Rucio's catalogue emptied first (a benchmark's run starts from none, as its platform does);
    ``mock_storage``: the conveyor submits mock:// copies too, ``pooled``: Rucio pools its database
    connections (both for the control plane's load benchmark; ``ensure_rucio``)."""
    from django.conf import settings

    from replicas.rucio import RucioAdapter, RucioConfig
    from topology.models import StorageEndpoint

    from .fts3 import ensure_fts3
    from .issuer import ensure_issuer, issuer_address
    from .issuer_rucio import ensure_rucio_client
    from .pki import ensure_client_cert
    from .rucio import PacketMarking, ensure_rucio
    from .scitags import EXPERIMENT

    fts_url = ensure_fts3(state, name)
    cert, dn = ensure_client_cert(state, CONVEYOR_IDENTITY)
    issuer = ensure_issuer(state, address=issuer_address(state))
    token_client = ensure_rucio_client(state, issuer)
    register_conveyor(dn, token_client)
    # Rucio's conveyor marks its copies as the platform does: the marks the FTS3 endpoint publishes.
    marking = PacketMarking(
        fetch_url=f"{fts_url}/api/scitags/",
        exp_name=EXPERIMENT,
        fetch_interval=600,
        ca_file=str(state.path / "pki" / "ca.pem"),
    )
    server = ensure_rucio(
        state,
        usercert=cert,
        token_client=token_client,
        packet_marking=marking,
        fresh=fresh,
        mock_storage=mock_storage,
        pooled=pooled,
    )
    os.environ.update(server.platform_env())
    os.environ.setdefault("SRCNET_RUCIO_FOLLOW_INTERVAL", FOLLOW_INTERVAL)
    # The push loop places through Rucio, in this process (settings are loaded) and in the worker (its env).
    os.environ["SRCNET_PUSH_THROUGH"] = "rucio"
    settings.SRCNET_PUSH_THROUGH = "rucio"
    adapter = RucioAdapter(RucioConfig(**server.client_kwargs()))
    endpoints = list(StorageEndpoint.objects.filter(is_active=True).select_related("site"))
    rses, _ = adapter.sync_endpoints(endpoints, fts_url=fts_url)
    _say(
        f"Rucio {adapter.ping()} at {server.url}: {len(rses)} RSEs with fts={fts_url}; "
        f"its conveyor, judge-evaluator and judge-repairer daemons run; the conveyor authenticates with"
        f" its token from {token_client.issuer} (or as {dn} where an RSE takes no tokens)"
    )
    return {"server": server, "adapter": adapter, "cert": cert, "fts_url": fts_url, "issuer": issuer}


def register_conveyor(dn: str, token_client: RucioClient) -> Any:
    """The conveyor's account on the FTS3 endpoint, allowed to submit: reached by its certificate's DN and
    by its issuer tokens' subject (as ``manage.py fts3_identity`` registers them in a deployment)."""
    from django.contrib.auth import get_user_model

    from srcnet.roles import grant_submit_transfers
    from transfers.models import ClientIdentity, TokenIdentity

    user, _ = get_user_model().objects.get_or_create(username=CONVEYOR_IDENTITY)
    grant_submit_transfers(user)
    ClientIdentity.objects.update_or_create(dn=dn, defaults={"user": user})
    TokenIdentity.objects.update_or_create(
        issuer=token_client.issuer.rstrip("/"), subject=token_client.subject, defaults={"user": user}
    )
    return user

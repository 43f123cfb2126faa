"""``/metrics``: the Prometheus text exposition, for the scrapers the deployment allows.

Access (``SRCNET_METRICS``): with a token set (``SRCNET_METRICS_TOKEN``), a request must carry
``Authorization: Bearer <token>``, from anywhere; without one, only clients in
``SRCNET_METRICS_ALLOWED_NETWORKS`` (loopback by default) are answered."""

from __future__ import annotations

import hmac
import ipaddress
import os

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

from .collectors import StateCollector, metrics_setting


def allowed(request: HttpRequest) -> tuple[bool, int]:
    """Whether the request may read the metrics, and the status to answer if not."""
    token = str(metrics_setting("TOKEN"))
    if token:
        header = request.headers.get("Authorization", "")
        given = header[len("Bearer ") :] if header.startswith("Bearer ") else ""
        return (hmac.compare_digest(given.encode(), token.encode()), 401)
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return (False, 403)
    networks = [ipaddress.ip_network(n.strip()) for n in metrics_setting("ALLOWED_NETWORKS") if n.strip()]
    return (any(address in network for network in networks), 403)


def process_metrics() -> bytes:
    """This server's own counters and histograms: summed over its worker processes when they share a
    multiprocess folder, else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)


@require_GET
def metrics(request: HttpRequest, *, with_state: bool = True) -> HttpResponse:
    """The exposition; ``with_state`` adds the platform's state from the database (the control plane's
    /metrics; the standalone FTS3 service exports its own request metrics only)."""
    ok, status = allowed(request)
    if not ok:
        response = HttpResponse("metrics: not allowed\n", status=status, content_type="text/plain")
        if status == 401:
            response["WWW-Authenticate"] = "Bearer"
        return response
    body = process_metrics()
    if with_state:
        state = CollectorRegistry(auto_describe=False)
        state.register(StateCollector())
        body += generate_latest(state)
    # The 0.0.4 text format: what every Prometheus 2 (Debian 12 ships 2.42) reads.
    return HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)

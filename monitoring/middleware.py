"""Request count and latency of the FTS3 REST endpoints, per endpoint, method and status.

These are owned by the process that serves the request, so they are real counters and histograms. Under
gunicorn (several worker processes) ``PROMETHEUS_MULTIPROC_DIR`` makes every worker write its values to
files there and ``/metrics`` sums them (localnet sets it for every web server it starts); without it each
process counts its own requests (a single-process server, the tests)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter, Histogram

FTS3_VIEWS_MODULES = ("transfers.fts3.views", "transfers.fts3.config.views")

REQUESTS = Counter(
    "srcnet_fts3_requests",
    "Requests to the FTS3 REST endpoints",
    ["endpoint", "method", "status"],
)
LATENCY = Histogram(
    "srcnet_fts3_request_duration_seconds",
    "Time to answer a request to an FTS3 REST endpoint",
    ["endpoint", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)


def fts3_endpoint(request: HttpRequest) -> str | None:
    """The FTS3 view that answered (``jobs``, ``job_detail``, ``link_collection``...), None for others."""
    match = request.resolver_match
    if match is None or match.func.__module__ not in FTS3_VIEWS_MODULES:
        return None
    return str(match.func.__name__)


class Fts3MetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        endpoint = fts3_endpoint(request)
        if endpoint is not None:
            LATENCY.labels(endpoint, request.method or "").observe(time.perf_counter() - started)
            REQUESTS.labels(endpoint, request.method or "", str(response.status_code)).inc()
        return response

"""History the portal reads back from Prometheus (``SRCNET_PROMETHEUS_URL``): the access links' achieved
rate over the last hour, against their target, for the flows page.

The platform computes these figures at scrape time and keeps no history itself; Prometheus does. When it
is not configured the portal shows what it shows without it; when it does not answer, the page says so and
shows the rest (``HistoryUnavailable``)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

ACHIEVED = "srcnet_access_link_achieved_bits_per_second"
TARGET = "srcnet_access_link_target_bits_per_second"
HISTORY_SECONDS = 3600.0
STEP_SECONDS = 60.0
# The sparkline's box, in SVG user units.
CHART_WIDTH, CHART_HEIGHT = 240.0, 40.0


class HistoryUnavailable(Exception):
    """Prometheus is configured and could not be read (down, unreachable, slow, or it refused the query)."""


@dataclass
class LinkHistory:
    """One access link's achieved rate over the window (``points``: unix time, bit/s) and its target."""

    telescope: str
    link: str
    points: list[tuple[float, float]] = field(default_factory=list)
    target_bps: float | None = None

    @property
    def latest_bps(self) -> float:
        return self.points[-1][1] if self.points else 0.0

    @property
    def mean_bps(self) -> float:
        return sum(v for _, v in self.points) / len(self.points) if self.points else 0.0

    @property
    def max_bps(self) -> float:
        return max((v for _, v in self.points), default=0.0)

    @property
    def below_target(self) -> bool:
        return self.target_bps is not None and self.latest_bps < self.target_bps

    def polyline(self, start: float, end: float) -> str:
        """The achieved rate as SVG polyline points in the chart's box (time across, rate up; the scale's
        top is the larger of the peak and the target)."""
        top = max(self.max_bps, self.target_bps or 0.0) or 1.0
        span = (end - start) or 1.0
        return " ".join(
            f"{(t - start) / span * CHART_WIDTH:.1f},{CHART_HEIGHT - v / top * CHART_HEIGHT:.1f}"
            for t, v in self.points
        )

    def target_y(self) -> float | None:
        if not self.target_bps:
            return None
        top = max(self.max_bps, self.target_bps)
        return CHART_HEIGHT - self.target_bps / top * CHART_HEIGHT


@dataclass
class AccessLinkHistory:
    source: str  # the Prometheus it came from
    start: float
    end: float
    links: list[LinkHistory]


def configured_url() -> str:
    return str(settings.SRCNET_PROMETHEUS["URL"]).rstrip("/")


def query_range(base: str, promql: str, start: float, end: float, step: float) -> list[dict]:  # type: ignore[type-arg]
    """Prometheus's ``/api/v1/query_range`` answer's series; ``HistoryUnavailable`` if it cannot be had."""
    query = urllib.parse.urlencode(
        {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    )
    config: dict[str, Any] = settings.SRCNET_PROMETHEUS
    timeout = float(config["TIMEOUT_SECONDS"])
    try:
        with urllib.request.urlopen(f"{base}/api/v1/query_range?{query}", timeout=timeout) as answer:
            body = json.loads(answer.read())
    except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts are OSErrors; bad JSON a ValueError
        raise HistoryUnavailable(f"{base}: {exc}") from exc
    if body.get("status") != "success":
        raise HistoryUnavailable(
            f"{base}: {body.get('errorType', '')} {body.get('error', 'no answer')}".strip()
        )
    return list(body["data"]["result"])


def access_link_history(*, now: float | None = None) -> AccessLinkHistory | None:
    """The access links' achieved rate over the last hour and their targets, from the configured
    Prometheus (one range query); None when none is configured."""
    base = configured_url()
    if not base:
        return None
    end = time.time() if now is None else now
    start = end - HISTORY_SECONDS
    series = query_range(base, f'{{__name__=~"{ACHIEVED}|{TARGET}"}}', start, end, STEP_SECONDS)
    links: dict[tuple[str, str], LinkHistory] = {}
    for one in series:
        labels = one.get("metric", {})
        key = (str(labels.get("telescope", "")), str(labels.get("link", "")))
        history = links.setdefault(key, LinkHistory(*key))
        values = [(float(t), float(v)) for t, v in one.get("values", [])]
        if labels.get("__name__") == TARGET:
            history.target_bps = values[-1][1] if values else None
        else:
            # Several targets (e.g. two control planes) may export the same link: keep one value per time.
            merged = dict(history.points)
            merged.update(values)
            history.points = sorted(merged.items())
    return AccessLinkHistory(base, start, end, [links[k] for k in sorted(links)])


def rate_text(bps: float | None) -> str:
    """Bit/s as the portal writes them (srcnet/static/srcnet/format.js, ``rate``)."""
    if bps is None:
        return ""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.{0 if bps / scale >= 100 else 1}f} {unit}bit/s"
    return f"{round(bps)} bit/s"

"""The state collector: the platform's gauges and counters, read from the database at scrape time.

A custom collector rather than module-level metrics: the state lives in PostgreSQL and is changed by
many processes (Celery workers, web servers, the FTS3 service), so the only value that is right across
all of them is the one read at the moment Prometheus asks. Counters here (``*_total``) are counts of
rows that only grow (finished copies, push cycles); Prometheus treats a drop (rows deleted) as a reset."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from . import selectors

log = logging.getLogger(__name__)


def metrics_setting(name: str) -> Any:
    return settings.SRCNET_METRICS[name]


class StateCollector(Collector):
    """Every metric derived from the database (and the workers' ping); docs/monitoring.md lists them."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "srcnet_state_collector_up", "1 if the last scrape read the platform's database, else 0"
        )
        try:
            families = list(self._database_families())
        except DatabaseError:
            log.exception("metrics: the database could not be read")
            families = []
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
        yield up
        yield from families
        yield from self._workers()
        yield from self._task_runs()

    def _database_families(self) -> Iterator[Metric]:
        yield from self._access_links()
        yield from self._lanes()
        yield from self._sdp()
        yield from self._transfers()
        yield from self._paths()
        yield from self._push_cycles()
        yield from self._network_traffic()
        yield from self._consistency()

    def _access_links(self) -> Iterator[Metric]:
        window = float(metrics_setting("RATE_WINDOW_SECONDS"))
        labels = ["telescope", "link"]
        capacity = GaugeMetricFamily(
            "srcnet_access_link_capacity_bits_per_second",
            "Capacity of a telescope's access link",
            labels=labels,
        )
        target = GaugeMetricFamily(
            "srcnet_access_link_target_bits_per_second",
            "The rate the telescope's daily volume needs (daily bytes x 8 / 86400)",
            labels=labels,
        )
        planned = GaugeMetricFamily(
            "srcnet_access_link_planned_bits_per_second",
            "Sum of the plan's rates of the push jobs in flight from the telescope",
            labels=labels,
        )
        achieved = GaugeMetricFamily(
            "srcnet_access_link_achieved_bits_per_second",
            f"Bits of the copies from the telescope that finished in the last {window:g} s, over the window",
            labels=labels,
        )
        utilisation = GaugeMetricFamily(
            "srcnet_access_link_utilisation_ratio",
            "Achieved bit/s over the access link's capacity",
            labels=labels,
        )
        achieved_by_site = selectors.achieved_bps_from_sites(window)
        planned_by_site = selectors.planned_bps_from_sites(selectors.lanes_in_flight())
        for access in selectors.access_links():
            values = [access.telescope, access.link]
            rate = achieved_by_site.get(access.telescope, 0.0)
            capacity.add_metric(values, access.capacity_bps)
            target.add_metric(values, access.target_bps)
            planned.add_metric(values, planned_by_site.get(access.telescope, 0.0))
            achieved.add_metric(values, rate)
            utilisation.add_metric(values, rate / access.capacity_bps if access.capacity_bps else 0.0)
        yield from (capacity, target, planned, achieved, utilisation)

    def _lanes(self) -> Iterator[Metric]:
        labels = ["source_site", "destination_site"]
        window = float(metrics_setting("RATE_WINDOW_SECONDS"))
        jobs = GaugeMetricFamily("srcnet_lane_push_jobs", "Push jobs in flight on a lane", labels=labels)
        streams = GaugeMetricFamily(
            "srcnet_lane_planned_streams",
            "TCP streams the plan gave the push jobs in flight on a lane",
            labels=labels,
        )
        planned = GaugeMetricFamily(
            "srcnet_lane_planned_bits_per_second",
            "The plan's rate of the push jobs in flight on a lane",
            labels=labels,
        )
        for (source, destination), lane in sorted(selectors.lanes_in_flight().items()):
            jobs.add_metric([source, destination], lane.jobs)
            streams.add_metric([source, destination], lane.streams)
            planned.add_metric([source, destination], lane.planned_bps)
        delay = GaugeMetricFamily(
            "srcnet_push_arrival_delay_seconds",
            f"Mean finish time minus the plan's predicted arrival, push jobs of the last {window:g} s",
            labels=labels,
        )
        worst = GaugeMetricFamily(
            "srcnet_push_arrival_delay_max_seconds",
            f"Largest finish time minus predicted arrival over the push jobs of the last {window:g} s",
            labels=labels,
        )
        arrived = GaugeMetricFamily(
            "srcnet_push_arrivals",
            f"Push jobs with a predicted arrival that finished in the last {window:g} s",
            labels=labels,
        )
        for (source, destination), delays in sorted(selectors.arrival_delays(window).items()):
            delay.add_metric([source, destination], delays.mean_seconds)
            worst.add_metric([source, destination], delays.max_seconds)
            arrived.add_metric([source, destination], delays.jobs)
        yield from (jobs, streams, planned, delay, worst, arrived)

    def _sdp(self) -> Iterator[Metric]:
        labels = ["telescope"]
        waiting = GaugeMetricFamily(
            "srcnet_products_waiting", "Products registered at the SDP and not yet handed on", labels=labels
        )
        waiting_bytes = GaugeMetricFamily(
            "srcnet_products_waiting_bytes", "Bytes of the products waiting at the SDP", labels=labels
        )
        occupancy = GaugeMetricFamily(
            "srcnet_sdp_buffer_occupancy_ratio",
            "Bytes of the products at the SDP not yet placed (waiting or on their way) over its buffer",
            labels=labels,
        )
        slack = GaugeMetricFamily(
            "srcnet_deadline_slack_seconds",
            "Seconds to the earliest deadline of the products at the SDP not yet placed (negative: missed)",
            labels=labels,
        )
        now = timezone.now()
        for telescope, queue in sorted(selectors.sdp_queues().items()):
            waiting.add_metric([telescope], queue.waiting)
            waiting_bytes.add_metric([telescope], queue.waiting_bytes)
            occupancy.add_metric([telescope], queue.held_bytes / queue.buffer_bytes)
            if queue.earliest_deadline is not None:
                slack.add_metric([telescope], (queue.earliest_deadline - now).total_seconds())
        yield from (waiting, waiting_bytes, occupancy, slack)

    def _transfers(self) -> Iterator[Metric]:
        by_state = GaugeMetricFamily(
            "srcnet_transfers",
            "Transfer files the transfer service holds, by state and activity",
            labels=["state", "activity"],
        )
        for state, activity, files in selectors.transfers_by_state():
            by_state.add_metric([state, activity], files)
        yield by_state
        pair = ["source_site", "destination_site"]
        outcomes = CounterMetricFamily(
            "srcnet_transfer_outcomes",
            "Copies that ended, by site pair and outcome",
            labels=[*pair, "outcome"],
        )
        moved = CounterMetricFamily("srcnet_bytes_moved", "Bytes of the copies that finished", labels=pair)
        for row in selectors.outcomes_by_site_pair():
            values = [row.source_site, row.destination_site]
            outcomes.add_metric([*values, "finished"], row.finished)
            outcomes.add_metric([*values, "failed"], row.failed)
            moved.add_metric(values, row.bytes_moved)
        yield from (outcomes, moved)

    def _paths(self) -> Iterator[Metric]:
        from operations.selectors import path_loads
        from topology.models import NetworkPath

        labels = ["path"]
        load = GaugeMetricFamily(
            "srcnet_path_load_bits_per_second",
            "A path's live load: its active copies at their measured rates (the portal's load rule)",
            labels=labels,
        )
        active = GaugeMetricFamily("srcnet_path_active_transfers", "Copies running on a path", labels=labels)
        queued = GaugeMetricFamily("srcnet_path_queued_transfers", "Copies queued for a path", labels=labels)
        loads = path_loads()
        names = dict(NetworkPath.objects.filter(pk__in=loads).values_list("pk", "name"))
        for pk, path_load in loads.items():
            values = [names[pk]]
            load.add_metric(values, path_load.load_bps)
            active.add_metric(values, path_load.active)
            queued.add_metric(values, path_load.queued)
        yield from (load, active, queued)

    def _push_cycles(self) -> Iterator[Metric]:
        cycles = selectors.push_cycles()
        yield CounterMetricFamily("srcnet_push_cycles", "Push cycles recorded", value=cycles.total)
        yield CounterMetricFamily(
            "srcnet_push_cycle_errors", "Push cycles that recorded an error", value=cycles.with_errors
        )
        duration = GaugeMetricFamily(
            "srcnet_push_cycle_duration_seconds", "How long the last push cycle took"
        )
        if cycles.last_duration_seconds is not None:
            duration.add_metric([], cycles.last_duration_seconds)
        yield duration
        last = GaugeMetricFamily(
            "srcnet_push_cycle_last_timestamp_seconds", "Unix time the last push cycle ended"
        )
        if cycles.last_time is not None:
            last.add_metric([], cycles.last_time.timestamp())
        yield last

    def _network_traffic(self) -> Iterator[Metric]:
        labels = ["source", "destination", "activity", "owner"]
        traffic = CounterMetricFamily(
            "srcnet_network_traffic_bytes",
            "Bytes the sites' fireflies reported, attributed to copies (monitoring/network_accounting.py): "
            "by lane, the copy's activity and what asked for it (rule, policy, other; unattributed: flows "
            "no copy explains, by the endpoint's site as source)",
            labels=labels,
        )
        flows = CounterMetricFamily(
            "srcnet_network_traffic_flows", "Flows counted in srcnet_network_traffic_bytes", labels=labels
        )
        for row in selectors.network_traffic():
            values = [row.source, row.destination, row.activity, row.owner]
            traffic.add_metric(values, row.bytes)
            flows.add_metric(values, row.flows)
        yield from (traffic, flows)
        not_accounted = selectors.firefly_flows_not_accounted()
        if not_accounted is not None:
            missed, unmatched = not_accounted
            yield CounterMetricFamily(
                "srcnet_network_traffic_missed_flows",
                "Flows that left a collector's journal before the control plane read them",
                value=missed,
            )
            yield CounterMetricFamily(
                "srcnet_network_traffic_unmatched_flows",
                "Flows reported by a host and port that is no registered storage endpoint",
                value=unmatched,
            )

    def _consistency(self) -> Iterator[Metric]:
        from consistency.selectors import endpoint_consistency, products_without_good_replica

        labels = ["endpoint"]
        checked = GaugeMetricFamily(
            "srcnet_consistency_files_checked",
            "Known replica files the endpoint's last ended consistency check judged",
            labels=labels,
        )
        found = GaugeMetricFamily(
            "srcnet_consistency_findings",
            "What the endpoint's last ended consistency check found: lost, corrupt, dark, unchecked files",
            labels=["endpoint", "kind"],
        )
        last = GaugeMetricFamily(
            "srcnet_consistency_last_complete_timestamp_seconds",
            "Unix time a consistency check of the endpoint last completed (read all of its storage)",
            labels=labels,
        )
        overdue = GaugeMetricFamily(
            "srcnet_consistency_check_overdue",
            "1 when no consistency check of the endpoint completed in twice its period",
            labels=labels,
        )
        for row in endpoint_consistency():
            if row.last is not None:
                checked.add_metric([row.endpoint], row.last.files_checked)
                for kind in ("lost", "corrupt", "dark", "unchecked"):
                    found.add_metric([row.endpoint, kind], getattr(row.last, kind))
            if row.last_complete is not None:
                last.add_metric([row.endpoint], row.last_complete.timestamp())
            overdue.add_metric([row.endpoint], 1 if row.overdue else 0)
        yield from (checked, found, last, overdue)
        yield GaugeMetricFamily(
            "srcnet_products_without_good_replica",
            "Products with no replica available, planned or being copied (all lost or corrupt, none healing)",
            value=products_without_good_replica(),
        )

    def _workers(self) -> Iterator[Metric]:
        workers = GaugeMetricFamily(
            "srcnet_celery_workers_up", "Celery workers that answered a ping on the platform's broker"
        )
        queue = GaugeMetricFamily(
            "srcnet_celery_queued_tasks", "Task messages waiting in the platform's queue on the broker"
        )
        try:
            workers.add_metric([], selectors.live_workers(float(metrics_setting("WORKER_PING_TIMEOUT"))))
            queue.add_metric([], selectors.queued_tasks())
        except Exception:  # the broker is down: no worker can be reached, which is what the gauge says
            log.exception("metrics: the broker could not be reached")
            workers.add_metric([], 0)
        yield workers
        yield queue

    def _task_runs(self) -> Iterator[Metric]:
        """What the workers recorded of their task runs on the broker's Redis (monitoring/worker_metrics)."""
        from . import worker_metrics

        started = CounterMetricFamily(
            "srcnet_celery_tasks_started", "Task runs the Celery workers started", labels=["task"]
        )
        runs = CounterMetricFamily(
            "srcnet_celery_task_runs",
            "Task runs the Celery workers ended, by outcome (succeeded, failed, retried...)",
            labels=["task", "outcome"],
        )
        duration = HistogramMetricFamily(
            "srcnet_celery_task_duration_seconds",
            "Run time of the Celery workers' tasks, by outcome",
            labels=["task", "outcome"],
        )
        try:
            tasks = worker_metrics.read()
        except Exception:  # Redis is down: srcnet_celery_workers_up says so too
            log.exception("metrics: the workers' task figures could not be read")
            tasks = {}
        for task, figures in sorted(tasks.items()):
            started.add_metric([task], figures.started)
            for outcome in sorted(figures.runs):
                runs.add_metric([task, outcome], figures.runs[outcome])
                duration.add_metric(
                    [task, outcome], figures.cumulative(outcome), figures.sums.get(outcome, 0.0)
                )
        yield from (started, runs, duration)

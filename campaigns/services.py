"""Running campaigns: create, start, tick (generate, push, score), stop, resume, finish."""

from __future__ import annotations

import json
from datetime import datetime
from itertools import islice
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from .models import PARAMETER_FIELDS, Campaign, CampaignProduct, CampaignSample
from .queueing import enqueue_advance, enqueue_cleanup
from .scoring import percentile
from .synthetic import UploadError, with_token, write_file
from .workload import Workload

TICK_SECONDS = 2.0
# One tick generates at most this many products; a backlog is caught up by the next ticks.
MAX_PRODUCTS_PER_TICK = 50
SCOPE = "campaign"


class CampaignError(ValueError):
    """The campaign cannot do what was asked in its present state."""


def create_campaign(*, user: Any, **fields: Any) -> Campaign:
    """Validate and store a campaign; it starts (now or at ``start_at``) once the transaction commits.

    A recurring campaign (``every_seconds`` or ``cron``) is a template instead: it gets a periodic task
    in django-celery-beat's schedule, and each firing creates a run (see ``fire``)."""
    campaign = Campaign(created_by=user, **fields)
    campaign.full_clean()
    if campaign.is_recurring:
        campaign.state = Campaign.State.RECURRING
        campaign.save()
        campaign.periodic_task = _periodic_task(campaign)
        campaign.save(update_fields=["periodic_task"])
        return campaign
    campaign.save()
    generation = campaign.generation
    transaction.on_commit(lambda: enqueue_advance(campaign.pk, generation, eta=campaign.start_at))
    return campaign


def advance(campaign_id: int, generation: int) -> str:
    """The worker's entry point: run a simulated campaign, or one tick of a real one."""
    mode = Campaign.objects.filter(pk=campaign_id).values_list("mode", flat=True).first()
    if mode is None:
        return "gone"
    if Campaign.objects.filter(pk=campaign_id, state=Campaign.State.RECURRING).exists():
        return "recurring"  # a template never runs itself: its runs do
    if mode == Campaign.Mode.SIMULATED:
        from .simulated import run_simulated

        return run_simulated(campaign_id)
    return tick(campaign_id, generation)


# --- recurring campaigns ---------------------------------------------------------------------------------

# What a run copies from its template (the schedule, the state and the score are the run's own).
RUN_FIELDS = (*PARAMETER_FIELDS, "cleanup")
FIRE_TASK = "campaigns.fire"


def _periodic_task(c: Campaign) -> Any:
    """The template's entry in django-celery-beat's schedule: ``campaigns.fire(id)`` on its interval or cron.

    An interval fires first at the start (now or ``start_at``), then every interval; a cron fires at
    its times only (from ``start_at`` on, when given)."""
    from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

    from .models import cron_fields

    kind: dict[str, Any]
    if c.every_seconds is not None:
        interval = IntervalSchedule.objects.filter(
            every=c.every_seconds, period=IntervalSchedule.SECONDS
        ).first() or IntervalSchedule.objects.create(every=c.every_seconds, period=IntervalSchedule.SECONDS)
        # No last run and a start time: beat fires at the start time, then every interval.
        kind = {"interval": interval, "start_time": c.start_at or timezone.now(), "last_run_at": None}
    else:
        fields = {**cron_fields(c.cron), "timezone": "UTC"}
        crontab = CrontabSchedule.objects.filter(**fields).first() or CrontabSchedule.objects.create(**fields)
        # A last run at the start: the first firing is the cron's first time after it.
        start = c.start_at or timezone.now()
        kind = {"crontab": crontab, "start_time": c.start_at, "last_run_at": start}
    return PeriodicTask.objects.create(
        name=f"campaign {c.pk}",
        task=FIRE_TASK,
        args=json.dumps([c.pk]),
        description=f"Recurring campaign {c.name!r}: a new run {c.schedule_text()}",
        **kind,
    )


def _set_enabled(c: Campaign, enabled: bool) -> None:
    from django_celery_beat.models import PeriodicTask

    task = PeriodicTask.objects.filter(pk=c.periodic_task_id).first()
    if task is not None and task.enabled != enabled:
        task.enabled = enabled
        if enabled and task.crontab_id is not None:
            task.last_run_at = timezone.now()  # the cron's next time, not a catch-up firing at once
        task.save()  # save(), not update(): it is what tells the beat scheduler the schedule changed


def fire(template_id: int) -> str:
    """One firing of a recurring campaign: a new run with the template's parameters, started now.

    Nothing happens if the template is disabled or gone, or if its previous run is still scheduled or
    running (runs never overlap: a firing that finds one is skipped and the next firing tries again)."""
    with transaction.atomic():
        t = Campaign.objects.select_for_update().filter(pk=template_id).first()
        if t is None:
            return "gone"
        if t.state != Campaign.State.RECURRING:
            return f"not recurring ({t.state})"
        active = t.runs.filter(state__in=[Campaign.State.SCHEDULED, Campaign.State.RUNNING]).first()
        if active is not None:
            return f"skipped: run {active.pk} is {active.state}"
        number = t.runs.count() + 1
        try:
            with transaction.atomic():
                run = create_campaign(
                    user=t.created_by,
                    template=t,
                    name=f"{t.name} #{number}"[:120],
                    **{f: getattr(t, f) for f in RUN_FIELDS},
                )
        except ValidationError as exc:
            # The topology changed under the template: say so on the template, try again next time.
            t.error = f"run {number} not started: {'; '.join(exc.messages)}"
            t.save(update_fields=["error"])
            return "invalid"
        if t.error:
            t.error = ""
            t.save(update_fields=["error"])
    return f"run {run.pk}"


def delete_template(campaign: Campaign) -> None:
    """Delete a recurring campaign and its periodic task; its runs stay (their ``template`` is cleared)."""
    if not campaign.is_recurring:
        raise CampaignError("state: only a recurring campaign (a template) can be deleted")
    campaign.delete()  # the post_delete signal removes the periodic task


def stop(campaign: Campaign) -> Campaign:
    """No more generation; the products already pushed keep moving and keep being scored on resume.

    For a recurring campaign: disable its periodic task (no new runs; a run under way goes on)."""
    with transaction.atomic():
        c = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if c.state == Campaign.State.RECURRING:
            c.state = Campaign.State.STOPPED
            c.save(update_fields=["state"])
            _set_enabled(c, False)
            return c
        if c.mode != Campaign.Mode.REAL or c.state not in (Campaign.State.SCHEDULED, Campaign.State.RUNNING):
            raise CampaignError(f"state: a {c.mode} campaign that is {c.state} cannot be stopped")
        if c.state == Campaign.State.RUNNING and c.last_tick:
            # Bank the active time up to now: the stopped time must not count towards the duration.
            now = timezone.now()
            c.active_seconds = min(c.duration_seconds, c.active_seconds + (now - c.last_tick).total_seconds())
            c.last_tick = now
        c.state = Campaign.State.STOPPED
        c.save(update_fields=["state", "active_seconds", "last_tick"])
    return c


def resume(campaign: Campaign) -> Campaign:
    with transaction.atomic():
        c = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if c.state != Campaign.State.STOPPED:
            raise CampaignError(f"state: only a stopped campaign resumes (this one is {c.state})")
        if c.is_recurring:
            c.state = Campaign.State.RECURRING
            c.save(update_fields=["state"])
            _set_enabled(c, True)
            return c
        c.state = Campaign.State.RUNNING if c.started else Campaign.State.SCHEDULED
        c.last_tick = timezone.now()
        c.generation += 1  # the old tick chain, if one is still queued, ends when it sees this
        c.save(update_fields=["state", "last_tick", "generation"])
        generation = c.generation
        transaction.on_commit(lambda: enqueue_advance(c.pk, generation))
    return c


# --- real campaigns -------------------------------------------------------------------------------------


def tick(campaign_id: int, generation: int) -> str:
    """Generate what the target asks for since the last tick, push it, record a sample; schedule the next.

    Idempotent: the row lock serialises ticks and the amount generated follows the clock, so a
    redelivered or duplicate tick only produces what is still owed (usually nothing)."""
    from transfers.tokens import TokenError
    from transfertools.interface import TransfertoolError

    with transaction.atomic():
        c = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if c is None or c.generation != generation:
            return "stale"
        now = timezone.now()
        if c.state == Campaign.State.SCHEDULED:
            if c.start_at and c.start_at > now:
                transaction.on_commit(lambda: enqueue_advance(campaign_id, generation, eta=c.start_at))
                return "scheduled"
            c.state, c.started, c.last_tick = Campaign.State.RUNNING, now, now
        if c.state != Campaign.State.RUNNING:
            return str(c.state)
        c.active_seconds = min(
            c.duration_seconds, c.active_seconds + (now - (c.last_tick or now)).total_seconds()
        )
        c.last_tick = now
        counters = (c.generated_bytes, c.products_created)
        try:
            # A savepoint: a failed product leaves no half-registered rows and the campaign row can
            # still record the failure (instead of a dead tick chain and a campaign "running" forever).
            with transaction.atomic():
                _generate(c)
        except (UploadError, ValidationError, OSError, TransfertoolError, TokenError) as exc:
            c.generated_bytes, c.products_created = counters
            c.state, c.error, c.finished = Campaign.State.FAILED, f"generating products: {exc}", now
            c.save()
            return "failed"
        c.save()
        sample = record_sample(c, now=now)
        if c.active_seconds >= c.duration_seconds:
            drain_started = c.summary.get("drain_started") or now.isoformat()
            c.summary = {**c.summary, "drain_started": drain_started}
            c.save(update_fields=["summary"])
            drained = sample.complete + sample.failed >= sample.products
            waited = (now - datetime.fromisoformat(drain_started)).total_seconds()
            if drained or waited > c.drain_seconds():
                finish(c, sample)
                return "finished"
        transaction.on_commit(lambda: enqueue_advance(campaign_id, generation, countdown=TICK_SECONDS))
    return "running"


def product_prefix(c: Campaign) -> str:
    """The campaign's tag in its product names. The creation time keeps names unique when ids are
    reused (a test database recreated while the storage keeps its files)."""
    return f"c{c.pk}-{c.created:%Y%m%d%H%M%S}"


def _source_endpoint(name: str) -> Any:
    from topology.choices import StorageRole
    from topology.models import StorageEndpoint

    endpoint = StorageEndpoint.objects.filter(name=name, role=StorageRole.SDP).first()
    if endpoint is None:
        endpoint = StorageEndpoint.objects.filter(
            site__name=name, role=StorageRole.SDP, is_active=True
        ).first()
    if endpoint is None:
        raise ValidationError({"sources": f"{name} has no active SDP storage endpoint."})
    return endpoint


def _generate(c: Campaign) -> None:
    """Write, register and push products until the bytes offered reach the target curve.

    Which products, from where, to where and of what sizes is ``campaigns.workload``'s, the same for a
    simulated campaign."""
    from replicas import lifecycle
    from replicas.choices import ProductState, ReplicaState
    from replicas.services import FileSpec, register_product
    from schedulers.services import request_push_cycle
    from topology.models import StorageEndpoint, Telescope

    due = Workload.of(c).due(c.generated_bytes, c.products_created, c.active_seconds)
    made = 0
    for planned in islice(due, MAX_PRODUCTS_PER_TICK):
        source = _source_endpoint(planned.source)
        destination = StorageEndpoint.objects.get(name=planned.destination)
        name = f"{product_prefix(c)}-{planned.index:06d}"
        # The campaign's data writer at the source storage may create files in the product's folder only.
        token = storage_token(source, f"storage.create:/{SCOPE}/{name}")
        specs = []
        for part, f in enumerate(planned.files):
            file_name = f"{name}.part{part}.dat"
            url = source.url("root", f"{SCOPE}/{name}/{file_name}")
            specs.append(
                FileSpec(file_name, f.size_bytes, write_file(url, f.size_bytes, seed=f.seed, token=token))
            )
        product = register_product(
            scope=SCOPE,
            name=name,
            telescope=Telescope.objects.get(pk=source.site_id),
            files=specs,
            source=source,
        )
        CampaignProduct.objects.create(
            campaign=c,
            product=product,
            destination=destination.name,
            index=planned.index,
            size_bytes=planned.size_bytes,
        )
        # The campaign chooses the destination, not the telescope's policy: a PLANNED first copy pins
        # it, and the push loop plans the product onto that lane (streams, files, slot) like any other.
        lifecycle.new_replica(
            product=product, endpoint=destination, state=ReplicaState.PLANNED, reason=f"campaign {c.name}"
        )
        c.generated_bytes += planned.size_bytes
        c.products_created += 1
        made += 1
    # The loop plans them (and what else waits) once they are committed; and while any of the campaign's
    # products still waits at the SDP, each tick asks again, as the beat would (the lane it waits for may
    # have freed without a cycle: a job of another tool, a worker without SRCNET_PUSH_ON_SETTLE).
    if made or c.products.filter(product__state=ProductState.REGISTERED).exists():
        request_push_cycle()


def score(c: Campaign) -> dict[str, Any]:
    """Planned vs achieved bytes per destination and overall, success rate, latency of finished products.

    A product whose pinned destination was given up for another SRC (its lane broke: the destination's
    replica is kept as FAILED history, ``rerouted``) is not a failure at that destination: it counts
    as ``rerouted`` there, and as complete overall, with its bytes achieved, once it is placed elsewhere;
    it fails only if the product does."""
    from replicas.choices import ProductState, ReplicaState
    from replicas.models import Replica

    links = {
        row["product_id"]: row
        for row in CampaignProduct.objects.filter(campaign=c).values(
            "product_id", "destination", "size_bytes", "product__state"
        )
    }
    per: dict[str, dict[str, Any]] = {d: _destination_tally() for d in c.destinations}
    latencies: list[float] = []
    for link in links.values():
        per.setdefault(link["destination"], _destination_tally())
        per[link["destination"]]["offered"] += link["size_bytes"]
    replicas = Replica.objects.filter(product_id__in=list(links)).values(
        "product_id", "endpoint__name", "state", "rerouted", "updated", "product__created"
    )
    created: dict[int, Any] = {}
    arrived_elsewhere: dict[int, Any] = {}  # the last of its replicas at another SRC, once available
    gone_elsewhere: set[int] = set()
    for r in replicas:
        product_id, link = r["product_id"], links[r["product_id"]]
        created[product_id] = r["product__created"]
        if r["endpoint__name"] != link["destination"]:
            if r["state"] == ReplicaState.AVAILABLE:
                previous = arrived_elsewhere.get(product_id, r["updated"])
                arrived_elsewhere[product_id] = max(r["updated"], previous)
            continue
        entry = per[link["destination"]]
        if r["state"] == ReplicaState.AVAILABLE:
            entry["achieved"] += link["size_bytes"]
            entry["complete"] += 1
            latencies.append((r["updated"] - r["product__created"]).total_seconds())
        elif r["state"] == ReplicaState.FAILED and r["rerouted"]:
            gone_elsewhere.add(r["product_id"])
        elif r["state"] == ReplicaState.FAILED:
            entry["failed"] += 1
    rerouted_bytes = 0
    for product_id in gone_elsewhere:
        link = links[product_id]
        entry = per[link["destination"]]
        if link["product__state"] == ProductState.PLACED:
            entry["rerouted"] += 1
            rerouted_bytes += link["size_bytes"]
            start = created[product_id]
            latencies.append((arrived_elsewhere.get(product_id, start) - start).total_seconds())
        elif link["product__state"] == ProductState.FAILED:
            entry["failed"] += 1
    complete = sum(e["complete"] + e["rerouted"] for e in per.values())
    failed = sum(e["failed"] for e in per.values())
    return {
        "products": len(links),
        "complete": complete,
        "rerouted": sum(e["rerouted"] for e in per.values()),
        "failed": failed,
        "achieved_bytes": sum(e["achieved"] for e in per.values()) + rerouted_bytes,
        "offered_bytes": sum(e["offered"] for e in per.values()),
        "success_rate": complete / (complete + failed) if complete + failed else None,
        "latency_seconds": {
            "p50": percentile(latencies, 0.5),
            "p90": percentile(latencies, 0.9),
            "max": max(latencies, default=None),
        },
        "per_destination": per,
    }


def _destination_tally() -> dict[str, Any]:
    return {"offered": 0, "achieved": 0, "complete": 0, "rerouted": 0, "failed": 0}


def record_sample(c: Campaign, *, now: Any = None) -> CampaignSample:
    now = now or timezone.now()
    s = score(c)
    wall = (now - c.started).total_seconds() if c.started else 0.0
    previous = c.samples.order_by("-elapsed_seconds", "-id").first()
    if previous is not None and wall > previous.wall_seconds:
        rate = (s["achieved_bytes"] - previous.achieved_bytes) * 8 / (wall - previous.wall_seconds)
    else:
        rate = 0.0
    planned = c.planned_bytes_at(c.active_seconds)
    shares = Workload.of(c).destination_shares()
    per = {d: {**e, "planned": int(planned * shares.get(d, 0.0))} for d, e in s["per_destination"].items()}
    return CampaignSample.objects.create(
        campaign=c,
        elapsed_seconds=c.active_seconds,
        wall_seconds=wall,
        target_rate_bps=c.target_rate_at(c.active_seconds) if c.active_seconds < c.duration_seconds else 0.0,
        planned_bytes=int(planned),
        achieved_bytes=s["achieved_bytes"],
        achieved_rate_bps=rate,
        products=s["products"],
        complete=s["complete"],
        failed=s["failed"],
        per_destination=per,
    )


def finish(c: Campaign, sample: CampaignSample) -> None:
    from .report import write_real_report

    s = score(c)
    wall = sample.wall_seconds or 1.0
    c.summary = {
        **c.summary,
        **s,
        "planned_bytes": int(c.planned_bytes_at(c.duration_seconds)),
        "target_rate_bps": c.target_rate_bps,
        # Achieved over the whole wall time, draining included: what the network sustained end to end.
        "achieved_rate_bps": s["achieved_bytes"] * 8 / wall,
        "wall_seconds": wall,
    }
    # The report is whole before anyone sees the campaign end (a client downloads it then).
    write_real_report(c)
    c.state = Campaign.State.FINISHED if not s["failed"] else Campaign.State.FAILED
    if s["failed"]:
        c.error = f"{s['failed']} of {s['products']} products failed to reach their destination"
    c.finished = timezone.now()
    c.save()
    if c.cleanup:
        transaction.on_commit(lambda: enqueue_cleanup(c.pk))


def storage_token(endpoint: Any, scope: str) -> str:
    """A token with ``scope`` for ``endpoint``'s storage from the platform's issuer, or "" without one."""
    from transfers.tokens import client_for, settings_from_django

    issuer = settings_from_django()
    if issuer is None:
        return ""
    return client_for(issuer).fetch([scope], endpoint.audience).value


def clean_up(campaign_id: int) -> int:
    """Delete a finished campaign's synthetic files (every replica, over XRootD) and its products."""
    from XRootD import client

    from replicas.models import DataProduct

    removed = 0
    products = DataProduct.objects.filter(campaign_link__campaign_id=campaign_id).prefetch_related(
        "files", "replicas__endpoint"
    )
    for product in products:
        for replica in product.replicas.all():
            endpoint = replica.endpoint
            fs = client.FileSystem(f"root://{endpoint.hostname}:{endpoint.root_port}")
            token = storage_token(endpoint, f"storage.modify:/{product.scope}/{product.name}")
            for f in product.files.all():
                status, _ = fs.rm(
                    with_token(f"/{endpoint.prefix}{f.relative_path}".replace("//", "/"), token)
                )
                removed += int(status.ok)
        product.delete()
    return removed

"""Operator actions: an operator acts and the audit event is written with the change; a scientist gets
403 and nothing changes; bad input shows a form error and nothing changes."""

import re

import pytest
from django.urls import reverse

from operations.models import AuditEvent
from replicas.choices import ProductState, ReplicaState
from replicas.models import Replica
from topology.models import NetworkPath, StorageEndpoint
from transfers.choices import JobState
from transfers.models import LinkPause, TransferJob

from .helpers import job_of, pushed_product, start

pytestmark = pytest.mark.django_db


@pytest.fixture
def path(reference_topology):
    return NetworkPath.objects.get(source__name="SKA1-Mid", destination__name="UKSRC", is_computed=True)


def action_links(page: str) -> list[str]:
    """Links to operator actions in a page's content (the navigation links to read-only pages)."""
    return re.findall(r'href="(/operations/(?:paths|jobs|products)/[^"]*)"', page)


def _post(client, user, url, data):
    client.force_login(user)
    return client.post(url, data)


# pause / resume a path


def test_operator_pauses_a_path_after_confirming(client, operator, path):
    url = reverse("operations:pause-path", args=[path.pk])
    client.force_login(operator)
    page = client.get(url)
    assert page.status_code == 200 and b"Pause path" in page.content and b"I confirm" in page.content
    response = client.post(url, {"confirm": "on", "reason": "fibre work"})
    assert response.status_code == 302 and response["Location"] == reverse("transfers:flows")
    pauses = set(LinkPause.objects.values_list("source_se", "dest_se"))
    assert len(pauses) == 2 and {s.split(":")[0] for s, _ in pauses} == {"root", "davs"}
    assert all(p.created_by == operator for p in LinkPause.objects.all())
    event = AuditEvent.objects.get()
    assert (event.username, event.action, event.target) == ("op", "pause_path", path.name)
    assert event.details["reason"] == "fibre work" and len(event.details["links"]) == 2


def test_pausing_without_confirmation_is_a_form_error(client, operator, path):
    response = _post(client, operator, reverse("operations:pause-path", args=[path.pk]), {"reason": "x"})
    assert response.status_code == 400 and b"This field is required" in response.content
    assert not LinkPause.objects.exists() and not AuditEvent.objects.exists()


def test_a_scientist_cannot_pause(client, scientist, path):
    url = reverse("operations:pause-path", args=[path.pk])
    assert _post(client, scientist, url, {"confirm": "on"}).status_code == 403
    assert client.get(url).status_code == 403
    assert not LinkPause.objects.exists() and not AuditEvent.objects.exists()


def test_anonymous_users_log_in_before_acting(client, path):
    response = client.post(reverse("operations:pause-path", args=[path.pk]), {"confirm": "on"})
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert not LinkPause.objects.exists()


def test_operator_resumes_a_paused_path(client, operator, path):
    _post(client, operator, reverse("operations:pause-path", args=[path.pk]), {"confirm": "on"})
    response = client.post(reverse("operations:resume-path", args=[path.pk]), {"confirm": "on"})
    assert response.status_code == 302 and not LinkPause.objects.exists()
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["resume_path", "pause_path"]


def test_resuming_a_path_that_is_not_paused_is_a_form_error(client, operator, path):
    response = _post(client, operator, reverse("operations:resume-path", args=[path.pk]), {"confirm": "on"})
    assert response.status_code == 400 and b"is not paused" in response.content
    assert not AuditEvent.objects.exists()


def test_flows_page_shows_pause_buttons_to_operators_only(client, operator, scientist, path):
    product = pushed_product("obs-buttons")
    client.force_login(operator)
    page = client.get(reverse("transfers:flows")).content.decode()
    assert reverse("operations:job-cancel", args=[job_of(product).job_id]) in page
    assert "/operations/paths/" in page
    client.force_login(scientist)
    page = client.get(reverse("transfers:flows")).content.decode()
    assert product.did in page and action_links(page) == []


# jobs


def test_operator_changes_a_jobs_priority(client, operator, reference_topology):
    job = job_of(pushed_product("obs-prio"))
    response = _post(
        client,
        operator,
        reverse("operations:job-priority", args=[job.job_id]),
        {"priority": "5", "confirm": "on"},
    )
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.priority == 5
    event = AuditEvent.objects.get()
    assert event.action == "job_priority" and event.details["from"] == 3 and event.details["to"] == 5


def test_a_bad_priority_is_a_form_error(client, operator, reference_topology):
    job = job_of(pushed_product("obs-badprio"))
    url = reverse("operations:job-priority", args=[job.job_id])
    response = _post(client, operator, url, {"priority": "9", "confirm": "on"})
    assert response.status_code == 400 and b"Select a valid choice" in response.content
    job.refresh_from_db()
    assert job.priority == 3 and not AuditEvent.objects.exists()


def test_operator_cancels_a_job(client, operator, reference_topology):
    product = pushed_product("obs-cancel")
    job = job_of(product)
    start(job)
    response = _post(client, operator, reverse("operations:job-cancel", args=[job.job_id]), {"confirm": "on"})
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == JobState.CANCELED and job.reason == "Canceled by op"
    assert AuditEvent.objects.get().details["state"] == JobState.CANCELED


def test_cancelling_an_ended_job_is_a_form_error(client, operator, reference_topology):
    job = job_of(pushed_product("obs-ended"))
    TransferJob.objects.filter(pk=job.pk).update(state=JobState.FINISHED)
    response = _post(client, operator, reverse("operations:job-cancel", args=[job.job_id]), {"confirm": "on"})
    assert response.status_code == 400 and b"has ended" in response.content
    assert not AuditEvent.objects.exists()


def test_a_scientist_cannot_cancel_or_reprioritise(client, scientist, reference_topology):
    job = job_of(pushed_product("obs-sci"))
    assert (
        _post(
            client, scientist, reverse("operations:job-cancel", args=[job.job_id]), {"confirm": "on"}
        ).status_code
        == 403
    )
    url = reverse("operations:job-priority", args=[job.job_id])
    assert client.post(url, {"priority": "5", "confirm": "on"}).status_code == 403
    job.refresh_from_db()
    assert (job.state, job.priority) == (JobState.SUBMITTED, 3) and not AuditEvent.objects.exists()


# products


def test_operator_changes_a_products_priority_and_its_jobs_follow(client, operator, reference_topology):
    product = pushed_product("obs-pprio")
    response = _post(
        client,
        operator,
        reverse("operations:product-priority", args=[product.pk]),
        {"priority": "1", "confirm": "on"},
    )
    assert response.status_code == 302
    product.refresh_from_db()
    assert product.priority == 1 and job_of(product).priority == 1
    assert AuditEvent.objects.get().details["jobs"] == [str(job_of(product).job_id)]


def test_operator_reroutes_a_copying_product(
    client, operator, reference_topology, django_capture_on_commit_callbacks
):
    product = pushed_product("obs-reroute")
    old = product.replicas.get(state=ReplicaState.COPYING)
    old_job = job_of(product)
    start(old_job)
    target = StorageEndpoint.objects.exclude(pk=old.endpoint_id).filter(
        name__in=["UKSRC_DISK", "FRSRC_DISK"]
    )[0]
    url = reverse("operations:product-reroute", args=[product.pk])
    client.force_login(operator)
    assert target.name in client.get(url).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"destination": target.pk, "confirm": "on", "reason": "SRC down"})
    assert response.status_code == 302
    old_job.refresh_from_db()
    assert old_job.state == JobState.CANCELED and "replica_id" not in old_job.metadata
    new = product.replicas.exclude(endpoint=product.source).get()
    assert new.endpoint == target and new.state == ReplicaState.COPYING and new.policy is None
    assert "re-routed by op" in new.reason and "SRC down" in new.reason
    new_job = TransferJob.objects.get(job_id=new.copy_requests.get().job_id)
    assert new_job.state == JobState.SUBMITTED and all(
        target.hostname in f.dest_surl for f in new_job.files.all()
    )
    # The canceled job's end (sent on commit) no longer belongs to a replica: the product is still placing.
    product.refresh_from_db()
    assert product.state == ProductState.PLACING
    event = AuditEvent.objects.get()
    assert (
        event.details["to"] == target.name and event.details["replaced"][0]["endpoint"] == old.endpoint.name
    )


def test_an_operator_may_reroute_to_where_an_earlier_copy_failed(
    client, operator, reference_topology, django_capture_on_commit_callbacks
):
    """A destination where the product's copy failed before is offered, and choosing it reuses that row
    (one replica per product and endpoint) with its history kept in the reason, not a unique-key error."""
    product = pushed_product("obs-reroute-back")
    old = product.replicas.get(state=ReplicaState.COPYING)
    target = StorageEndpoint.objects.exclude(pk=old.endpoint_id).filter(
        name__in=["UKSRC_DISK", "FRSRC_DISK"]
    )[0]
    failed = Replica.objects.create(
        product=product, endpoint=target, state=ReplicaState.FAILED, reason="TRANSFER timed out"
    )
    url = reverse("operations:product-reroute", args=[product.pk])
    client.force_login(operator)
    assert target.name in client.get(url).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"destination": target.pk, "confirm": "on", "reason": "fixed"})
    assert response.status_code == 302
    again = product.replicas.get(endpoint=target)
    assert again.pk == failed.pk and again.state == ReplicaState.COPYING and again.policy is None
    assert "re-routed by op" in again.reason and "earlier here: TRANSFER timed out" in again.reason
    assert not product.replicas.filter(pk=old.pk).exists()
    assert TransferJob.objects.get(job_id=again.copy_requests.get().job_id).state == JobState.SUBMITTED


def test_rerouting_to_where_it_already_goes_is_a_form_error(client, operator, reference_topology):
    product = pushed_product("obs-same")
    old = product.replicas.get(state=ReplicaState.COPYING)
    url = reverse("operations:product-reroute", args=[product.pk])
    response = _post(client, operator, url, {"destination": old.endpoint_id, "confirm": "on"})
    assert response.status_code == 400 and b"Select a valid choice" in response.content
    assert product.replicas.get(state=ReplicaState.COPYING) == old and not AuditEvent.objects.exists()


def test_a_placed_product_cannot_be_rerouted(client, operator, reference_topology):
    product = pushed_product("obs-placed")
    product.replicas.update(state=ReplicaState.AVAILABLE)
    target = StorageEndpoint.objects.get(name="CASRC_DISK")
    url = reverse("operations:product-reroute", args=[product.pk])
    response = _post(client, operator, url, {"destination": target.pk, "confirm": "on"})
    assert response.status_code == 400 and b"no replica being copied" in response.content
    assert not AuditEvent.objects.exists()


def test_a_scientist_cannot_reroute(client, scientist, reference_topology):
    product = pushed_product("obs-sci-reroute")
    target = StorageEndpoint.objects.get(name="CASRC_DISK")
    url = reverse("operations:product-reroute", args=[product.pk])
    assert _post(client, scientist, url, {"destination": target.pk, "confirm": "on"}).status_code == 403
    assert not product.replicas.filter(endpoint=target).exists() and not AuditEvent.objects.exists()


def test_product_page_shows_actions_to_operators_only(client, operator, scientist, reference_topology):
    product = pushed_product("obs-page-actions")
    url = reverse("replicas:product", args=[product.pk])
    client.force_login(scientist)
    page = client.get(url).content.decode()
    assert "Placed by policy" in page and "first copy; push plan: SKA1-Mid -&gt; " in page
    assert "Re-route" not in page and action_links(page) == []
    client.force_login(operator)
    page = client.get(url).content.decode()
    assert reverse("operations:product-reroute", args=[product.pk]) in page


# the trail


def test_audit_trail_page_and_api_list_events(client, operator, scientist, path):
    _post(client, operator, reverse("operations:pause-path", args=[path.pk]), {"confirm": "on"})
    client.force_login(scientist)
    page = client.get(reverse("operations:audit")).content.decode()
    assert "Pause a path" in page and path.name in page and ">op<" in page
    events = client.get("/api/operations/audit-events/", {"action": "pause_path"}).json()
    assert events["count"] == 1 and events["results"][0]["username"] == "op"
    assert client.post("/api/operations/audit-events/", {}).status_code in (403, 405)

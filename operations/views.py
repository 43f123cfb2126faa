"""Portal pages of the operator actions (each a confirmation form), the audit trail and replica policies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from replicas.models import DataProduct, ReplicaPolicy
from replicas.visibility import visible_events
from srcnet.views import Column, object_list, operator_required
from topology.models import NetworkPath
from transfers.models import TransferJob

from . import services
from .filtersets import AuditEventFilterSet
from .forms import ConfirmForm, PolicyForm, PriorityForm, RerouteForm, ShareFormSet
from .models import AuditEvent


def add_errors(form: forms.BaseForm, exc: ValidationError) -> None:
    """Show a service's ValidationError on the form: on the field it names, else above the form."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc)
        return
    for key, errors in exc.message_dict.items():
        if key in form.fields:
            form.add_error(key, errors)
        else:
            form.add_error(None, [m if key == "__all__" else f"{key}: {m}" for m in errors])


def _confirm(
    request: HttpRequest,
    *,
    form: forms.Form,
    title: str,
    summary: list[tuple[str, Any]],
    perform: Callable[[dict[str, Any]], Any],
    done: str,
    back: str,
) -> HttpResponse:
    """GET shows what will happen and asks for confirmation; a valid POST acts and goes back."""
    if request.method == "POST" and form.is_valid():
        try:
            perform(form.cleaned_data)
        except ValidationError as exc:
            add_errors(form, exc)
        else:
            messages.success(request, done)
            return redirect(back)
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "title": title, "summary": summary, "back": back}
    return render(request, "operations/confirm.html", context, status=status)


def _next(request: HttpRequest, default: str) -> str:
    """Where to go after the action: the page that linked here, if it is on this site."""
    target = request.GET.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return default


def _data(request: HttpRequest) -> Any:
    return request.POST if request.method == "POST" else None


@operator_required
def pause_path(request: HttpRequest, pk: int) -> HttpResponse:
    path = get_object_or_404(NetworkPath.objects.select_related("source", "destination"), pk=pk)
    return _confirm(
        request,
        form=ConfirmForm(_data(request)),
        title=f"Pause path {path.name}",
        summary=[
            ("Path", path.name),
            ("Effect", "no new copy starts between the storage at its two ends; running copies finish"),
        ],
        perform=lambda d: services.pause_path(path=path, user=request.user, reason=d["reason"]),
        done=f"Paused {path.name}.",
        back=_next(request, reverse("transfers:flows")),
    )


@operator_required
def resume_path(request: HttpRequest, pk: int) -> HttpResponse:
    path = get_object_or_404(NetworkPath.objects.select_related("source", "destination"), pk=pk)
    return _confirm(
        request,
        form=ConfirmForm(_data(request)),
        title=f"Resume path {path.name}",
        summary=[("Path", path.name), ("Effect", "waiting copies start again")],
        perform=lambda d: services.resume_path(path=path, user=request.user, reason=d["reason"]),
        done=f"Resumed {path.name}.",
        back=_next(request, reverse("transfers:flows")),
    )


@operator_required
def job_priority(request: HttpRequest, job_id: str) -> HttpResponse:
    job = get_object_or_404(TransferJob, job_id=job_id)
    return _confirm(
        request,
        form=PriorityForm(_data(request), initial={"priority": job.priority}),
        title=f"Change the priority of job {job.job_id}",
        summary=[("Job", job.job_id), ("State", job.state), ("Priority now", job.priority)],
        perform=lambda d: services.set_job_priority(job=job, priority=d["priority"], user=request.user),
        done=f"Job {job.job_id}: priority changed.",
        back=_next(request, reverse("transfers:flows")),
    )


@operator_required
def job_cancel(request: HttpRequest, job_id: str) -> HttpResponse:
    job = get_object_or_404(TransferJob, job_id=job_id)
    return _confirm(
        request,
        form=ConfirmForm(_data(request)),
        title=f"Cancel job {job.job_id}",
        summary=[
            ("Job", job.job_id),
            ("State", job.state),
            ("Product", (job.metadata or {}).get("product", "")),
            ("Effect", "unfinished files are canceled; running copies are stopped"),
        ],
        perform=lambda d: services.cancel_job(job=job, user=request.user, reason=d["reason"]),
        done=f"Job {job.job_id} canceled.",
        back=_next(request, reverse("transfers:flows")),
    )


@operator_required
def product_priority(request: HttpRequest, pk: int) -> HttpResponse:
    product = get_object_or_404(DataProduct, pk=pk)
    return _confirm(
        request,
        form=PriorityForm(_data(request), initial={"priority": product.priority}),
        title=f"Change the priority of {product.did}",
        summary=[
            ("Product", product.did),
            ("Priority now", product.priority),
            ("Effect", "the product and its unfinished transfer jobs take the new priority"),
        ],
        perform=lambda d: services.set_product_priority(
            product=product, priority=d["priority"], user=request.user
        ),
        done=f"{product.did}: priority changed.",
        back=reverse("replicas:product", args=[product.pk]),
    )


@operator_required
def product_reroute(request: HttpRequest, pk: int) -> HttpResponse:
    product = get_object_or_404(DataProduct, pk=pk)
    moving = product.replicas.exclude(endpoint=product.source).select_related("endpoint")
    return _confirm(
        request,
        form=RerouteForm(_data(request), product=product),
        title=f"Re-route {product.did}",
        summary=[
            ("Product", product.did),
            ("Replicas now", ", ".join(f"{r.endpoint.name} ({r.state})" for r in moving) or "none"),
            ("Effect", "the copying replica's job is canceled and the product is pushed to the destination"),
        ],
        perform=lambda d: services.reroute_product(
            product=product, destination=d["destination"], user=request.user, reason=d["reason"]
        ),
        done=f"{product.did} re-routed.",
        back=reverse("replicas:product", args=[product.pk]),
    )


@login_required
def audit(request: HttpRequest) -> HttpResponse:
    return object_list(
        request,
        title="Audit trail",
        queryset=visible_events(request.user, AuditEvent.objects.all()),
        filterset_class=AuditEventFilterSet,
        columns=[
            Column("Time", lambda e: e.time.strftime("%Y-%m-%d %H:%M:%S")),
            Column("Who", lambda e: e.username),
            Column("Action", lambda e: e.get_action_display()),
            Column("Target", lambda e: e.target),
            Column("Details", lambda e: _details(e.details)),
        ],
    )


def _details(details: dict[str, Any]) -> str:
    def text(value: Any) -> str:
        if isinstance(value, list):
            return ", ".join(text(v) for v in value)
        if isinstance(value, dict):
            return ", ".join(f"{k} {text(v)}" for k, v in value.items())
        return str(value)

    return "; ".join(f"{k}: {text(v)}" for k, v in details.items() if v not in ("", None, [], {}))


@login_required
def policies(request: HttpRequest) -> HttpResponse:
    rows = ReplicaPolicy.objects.select_related("telescope", "copy_site", "relay_centre").prefetch_related(
        "shares__destination"
    )
    return render(request, "operations/policy_list.html", {"policies": rows})


@operator_required
def policy_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Create or edit a policy and its explicit shares; the model's validation messages show on the form."""
    policy = get_object_or_404(ReplicaPolicy, pk=pk) if pk else ReplicaPolicy()
    initial = [{"destination": s.destination, "weight": s.weight} for s in policy.shares.all()] if pk else []
    form = PolicyForm(_data(request), instance=policy)
    shares = ShareFormSet(_data(request), initial=initial, prefix="shares")
    if request.method == "POST" and form.is_valid() and shares.is_valid():
        pairs = [
            (f.cleaned_data["destination"], f.cleaned_data["weight"])
            for f in shares.forms
            if f.cleaned_data.get("destination") is not None
        ]
        try:
            with transaction.atomic():
                services.save_policy(policy=form.instance, shares=pairs, user=request.user)
        except ValidationError as exc:
            _share_errors(form, shares, exc)
            if pk is None:
                form.instance.pk = None  # the rolled-back insert left an id on the instance
        else:
            messages.success(request, f"Policy {form.instance.name} saved.")
            return redirect("operations:policies")
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "shares": shares, "policy": policy if pk else None}
    return render(request, "operations/policy_form.html", context, status=status)


def _share_errors(form: forms.BaseForm, shares: Any, exc: ValidationError) -> None:
    """Put ``shares[i].field`` errors on the i-th share form of the formset, the rest on the policy form."""
    rest: dict[str, list[str]] = {}
    # Only shares with a destination were passed to the service, in form order.
    used = [f for f in shares.forms if f.cleaned_data.get("destination") is not None]
    for key, errors in exc.message_dict.items():
        if key.startswith("shares[") and "]." in key:
            index, field = key[len("shares[") :].split("].", 1)
            if index.isdigit() and int(index) < len(used) and field in used[int(index)].fields:
                used[int(index)].add_error(field, errors)
                continue
        rest[key] = errors
    if rest:
        add_errors(form, ValidationError(rest))

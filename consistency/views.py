"""Portal pages of the consistency checks, for operators: the checks, one check's findings, starting a
check, and the decision on a dark file."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from srcnet.views import Column, object_list, operator_required

from .choices import FindingKind
from .filtersets import ConsistencyCheckFilterSet
from .forms import DarkFileForm, StartCheckForm
from .models import ConsistencyCheck, Finding
from .services import act_on_dark_file, start_check

DECISIONS = {"remove": True, "keep": False}


@operator_required
def checks(request: HttpRequest) -> HttpResponse:
    return object_list(
        request,
        title="Storage consistency checks",
        queryset=ConsistencyCheck.objects.select_related("endpoint"),
        filterset_class=ConsistencyCheckFilterSet,
        columns=[
            Column("Check", lambda c: c.pk, lambda c: reverse("consistency:check", args=[c.pk])),
            Column("Endpoint", lambda c: c.endpoint.name),
            Column("Mode", lambda c: c.mode),
            Column("State", lambda c: c.state),
            Column("Started", lambda c: c.started.strftime("%Y-%m-%d %H:%M:%S")),
            Column("Checked", lambda c: c.files_checked),
            Column("Lost", lambda c: c.lost),
            Column("Corrupt", lambda c: c.corrupt),
            Column("Dark", lambda c: c.dark),
            Column("Unchecked", lambda c: c.unchecked),
        ],
    )


@operator_required
def check(request: HttpRequest, pk: int) -> HttpResponse:
    check = get_object_or_404(ConsistencyCheck.objects.select_related("endpoint"), pk=pk)
    findings = check.findings.select_related("replica__product").order_by("kind", "path")[:500]
    return render(request, "consistency/check.html", {"check": check, "findings": findings})


@operator_required
def start(request: HttpRequest) -> HttpResponse:
    form = StartCheckForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            check = start_check(
                form.cleaned_data["endpoint"].name,
                mode=form.cleaned_data["mode"],
                checksum_fraction=form.cleaned_data["checksum_fraction"],
                dark_grace_hours=form.cleaned_data["dark_grace_hours"],
                user=request.user,
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"Check {check.pk} of {check.endpoint.name} started.")
            return redirect("consistency:check", pk=check.pk)
    context = {
        "form": form,
        "title": "Start a consistency check",
        "summary": [],
        "back": reverse("consistency:checks"),
    }
    return render(
        request, "operations/confirm.html", context, status=400 if request.method == "POST" else 200
    )


@operator_required
def dark_file(request: HttpRequest, pk: int, decision: str) -> HttpResponse:
    if decision not in DECISIONS:
        raise Http404("no such decision")
    finding = get_object_or_404(
        Finding.objects.select_related("check_run__endpoint"), pk=pk, kind=FindingKind.DARK
    )
    form = DarkFileForm(request.POST if request.method == "POST" else None)
    back = reverse("consistency:check", args=[finding.check_run_id])
    if request.method == "POST" and form.is_valid():
        try:
            act_on_dark_file(finding.pk, remove=DECISIONS[decision], user=request.user)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"{finding.path}: {'removed' if DECISIONS[decision] else 'kept'}.")
            return redirect(back)
    verb = "Remove" if DECISIONS[decision] else "Keep"
    summary = [
        ("Endpoint", finding.check_run.endpoint.name),
        ("File", finding.path),
        ("Size", finding.found_size),
        ("Modified", finding.modified),
    ]
    context = {"form": form, "title": f"{verb} a dark file", "summary": summary, "back": back}
    return render(
        request, "operations/confirm.html", context, status=400 if request.method == "POST" else 200
    )

"""Portal pages: the campaigns, one campaign's live score and report, a form to start one (operators)."""

from __future__ import annotations

import mimetypes
import re

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from srcnet.views import operator_required

from . import services
from .models import INPUT_FIELDS, Campaign
from .report import report_dir, report_files

SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class CampaignForm(forms.ModelForm):
    sources = forms.CharField(help_text="Comma-separated telescope or SDP endpoint names")
    destinations = forms.CharField(help_text="Comma-separated SRC storage endpoint names")

    class Meta:
        model = Campaign
        fields = list(INPUT_FIELDS)
        labels = {"every_seconds": "Repeat every (seconds)", "cron": "Or repeat on a cron schedule"}

    def clean_sources(self) -> list[str]:
        return [n.strip() for n in self.cleaned_data["sources"].split(",") if n.strip()]

    def clean_destinations(self) -> list[str]:
        return [n.strip() for n in self.cleaned_data["destinations"].split(",") if n.strip()]


@login_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = Campaign.objects.select_related("created_by")[:200]
    return render(request, "campaigns/list.html", {"campaigns": campaigns})


@operator_required
def campaign_new(request: HttpRequest) -> HttpResponse:
    form = CampaignForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                fields = {k: v for k, v in form.cleaned_data.items()}
                campaign = services.create_campaign(user=request.user, **fields)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, messages)
        else:
            return redirect("campaigns:detail", pk=campaign.pk)
    return render(request, "campaigns/form.html", {"form": form})


@login_required
def campaign_detail(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    summary = {k: v for k, v in campaign.summary.items() if k not in ("simulator", "per_destination")}
    return render(
        request,
        "campaigns/detail.html",
        {
            "campaign": campaign,
            "samples": campaign.samples.all(),
            "summary": sorted(summary.items()),
            "per_destination": sorted((campaign.summary.get("per_destination") or {}).items()),
            "files": report_files(campaign),
            "runs": campaign.runs.order_by("-created")[:100] if campaign.is_recurring else [],
            "can_stop": campaign.state == Campaign.State.RECURRING
            or (
                campaign.mode == Campaign.Mode.REAL
                and campaign.state in (Campaign.State.SCHEDULED, Campaign.State.RUNNING)
            ),
        },
    )


@require_POST
@operator_required
def campaign_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """Stop or resume a campaign (for a recurring one: disable or enable its schedule)."""
    campaign = get_object_or_404(Campaign, pk=pk)
    fn = {"stop": services.stop, "resume": services.resume}.get(action)
    if fn is None:
        raise Http404("no such action")
    try:
        fn(campaign)
    except services.CampaignError as exc:
        messages.error(request, str(exc).partition(": ")[2])
    return redirect("campaigns:detail", pk=pk)


@login_required
def campaign_score(request: HttpRequest, pk: int) -> JsonResponse:
    """The live score for the page's chart: the state and every sample so far."""
    campaign = get_object_or_404(Campaign, pk=pk)
    samples = list(
        campaign.samples.values(
            "wall_seconds", "target_rate_bps", "achieved_rate_bps", "planned_bytes", "achieved_bytes"
        )
    )
    return JsonResponse({"state": campaign.state, "samples": samples})


@login_required
def campaign_file(request: HttpRequest, pk: int, filename: str) -> FileResponse:
    campaign = get_object_or_404(Campaign, pk=pk)
    path = report_dir(campaign.pk) / filename
    if not SAFE_NAME.match(filename) or not path.is_file():
        raise Http404("no such report file")
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return FileResponse(open(path, "rb"), content_type=content_type)

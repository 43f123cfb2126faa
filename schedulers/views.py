"""Portal pages of the scheduler: the push loop's cycles, and the simulator run for the AENEAS scenarios and
compared side by side."""

from __future__ import annotations

import re

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from replicas.visibility import hidden_did_set
from srcnet.roles import is_operator

from .models import PushCycle, Simulation
from .services import report_dir, request_simulation
from .simulation.scenarios import scenarios
from .simulations import SimulationRequestError

PLOTS_FIRST = ("utilisation.png", "sdp.png")


@login_required
def simulations(request: HttpRequest) -> HttpResponse:
    """The list of simulations, and (operators) a form to run the scenarios over one SKA day or more."""
    error = ""
    if request.method == "POST":
        if not is_operator(request.user):
            raise PermissionDenied("only operators run simulations")
        try:
            days = float(request.POST.get("days", "1"))
            simulation = request_simulation(
                user=request.user,
                scenario=request.POST.get("scenario", "all"),
                days=days,
                topology=request.POST.get("topology", "db"),
                failures=request.POST.get("failures") == "on",
                with_lp=request.POST.get("with_lp") == "on",
            )
        except (SimulationRequestError, ValueError) as exc:
            error = str(exc)
        else:
            return redirect("schedulers:simulation", pk=simulation.pk)
    return render(
        request,
        "schedulers/simulations.html",
        {
            "simulations": Simulation.objects.select_related("requested_by")[:50],
            "scenarios": list(scenarios()),
            "error": error,
        },
    )


def _rows(summary: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for entry in summary:
        utilisation = entry.get("access_utilisation") or {}
        latency = entry.get("latency_hours") or {}
        rows.append(
            {
                "name": entry.get("name"),
                "utilisation": _percentages(utilisation),
                "sdp_peak": _percentages(entry.get("sdp_peak_fraction")),
                "latency": ", ".join(f"{k} {v:.2f} h" for k, v in latency.items())
                if isinstance(latency, dict)
                else latency,
                "misses": entry.get("deadline_misses"),
                "completed": entry.get("completed"),
                "products": entry.get("products"),
                "opex": f"{_eur_per_day(entry):,.0f}",
                "lp_ratio": (
                    f"{entry['sent_bytes'] / entry['lp_bytes']:.3f}"
                    if entry.get("lp_bytes") and entry.get("sent_bytes")
                    else "-"
                ),
            }
        )
    return rows


def _total(value: object) -> float:
    if isinstance(value, dict):
        return sum(_total(v) for v in value.values())
    return float(value or 0)  # type: ignore[arg-type]


def _eur_per_day(entry: dict) -> float:  # type: ignore[type-arg]
    return _total(entry.get("link_opex_eur_per_day")) + _total(entry.get("centre_eur_per_day"))


def _percentages(value: object) -> str:
    """``{"SKA1-Low": 0.9625}`` -> ``SKA1-Low 96.25 %`` (a plain fraction works too)."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {100 * float(v):.2f} %" for k, v in sorted(value.items()))
    return f"{100 * float(value or 0):.2f} %"  # type: ignore[arg-type]


@login_required
def simulation(request: HttpRequest, pk: int) -> HttpResponse:
    """One simulation: the scenarios side by side (table) and the comparison plots."""
    item = get_object_or_404(Simulation, pk=pk)
    folder = report_dir(item.pk)
    plots = (
        sorted((p.name for p in folder.glob("*.png")), key=lambda n: (n not in PLOTS_FIRST, n))
        if folder.exists()
        else []
    )
    return render(
        request,
        "schedulers/simulation.html",
        {"simulation": item, "rows": _rows(item.summary), "plots": plots},
    )


@login_required
def simulation_file(request: HttpRequest, pk: int, filename: str) -> FileResponse:
    path = report_dir(get_object_or_404(Simulation, pk=pk).pk) / filename
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}", filename) or not path.is_file():
        raise Http404(filename)
    return FileResponse(open(path, "rb"))


@login_required
def cycles(request: HttpRequest) -> HttpResponse:
    """The push loop's latest cycles with their events (re-routes, degrading) and errors."""
    return render(request, "schedulers/cycles.html", {"cycles": PushCycle.objects.all()[:100]})


@login_required
def cycle(request: HttpRequest, pk: int) -> HttpResponse:
    """One cycle: what it submitted (without the products the account may not see) and its events."""
    item = get_object_or_404(PushCycle, pk=pk)
    hidden = hidden_did_set(request.user)
    submitted = [entry for entry in item.submitted if entry.get("product") not in hidden]
    return render(request, "schedulers/cycle.html", {"cycle": item, "submitted": submitted})

"""The portal's Rules page: an account's rules with their copies, a form to make one, a button to remove."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from schedulers.arrivals import copy_arrivals

from .forms import RuleForm
from .selectors import rule_replicas, rule_state, visible_rules
from .services import RucioUnavailable, create_rule, remove_rule


def _add_errors(form: RuleForm, exc: ValidationError) -> None:
    """The service's errors on the form field they name (``filters.project`` is the ``project`` field)."""
    for key, errors in exc.message_dict.items():
        name = key.removeprefix("filters.")
        form.add_error(name if name in form.fields else None, errors if name in form.fields else
                       [f"{key}: {m}" for m in errors])  # fmt: skip


@login_required
def rules(request: HttpRequest) -> HttpResponse:
    form = RuleForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            rule = create_rule(owner=request.user, **form.request())
        except ValidationError as exc:
            _add_errors(form, exc)
        except RucioUnavailable as exc:
            form.add_error(None, f"Rucio could not be asked; nothing was made: {exc}")
        else:
            messages.success(request, f"Rule {rule.pk} made: {rule.products.count()} product(s).")
            return redirect("rules:list")
    rows: list[dict[str, Any]] = []
    for rule in visible_rules(request.user)[:200]:
        copies = rule_replicas(rule)
        rows.append({"rule": rule, "state": rule_state(rule, copies), "copies": copies})
    # Each copy still to come with its predicted arrival and why not sooner (schedulers/arrivals.py).
    found = copy_arrivals(c for row in rows for c in row["copies"])
    for row in rows:
        row["copies"] = [{"replica": c, "arrival": found.get(c.pk)} for c in row["copies"]]
    return render(
        request, "rules/rules.html", {"form": form, "rows": rows}, status=400 if form.errors else 200
    )


@login_required
@require_POST
def remove(request: HttpRequest, pk: int) -> HttpResponse:
    rule = get_object_or_404(visible_rules(request.user), pk=pk)
    try:
        remove_rule(rule=rule)
    except RucioUnavailable as exc:
        messages.error(request, f"Rucio could not be asked; rule {pk} stays: {exc}")
    else:
        messages.success(request, f"Rule {pk} removed.")
    return redirect("rules:list")

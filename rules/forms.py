"""The portal's rule form: the API's request as form fields (filters spelled out, lifetime in days)."""

from __future__ import annotations

from typing import Any

from django import forms

from replicas.choices import ProductType

from .choices import LIMITS, USER_ACTIVITY
from .selection import FILTER_KEYS

ACTIVITIES = sorted({a for limits in LIMITS.values() for a in limits.activities})


class RuleForm(forms.Form):
    product = forms.CharField(
        required=False, max_length=300, help_text="A product id or scope:name; or filters"
    )
    telescope = forms.CharField(required=False, max_length=64)
    project = forms.CharField(required=False, max_length=40)
    product_type = forms.ChoiceField(required=False, choices=[("", "any"), *ProductType.choices])
    observation_id = forms.CharField(required=False, max_length=64)
    created_after = forms.DateTimeField(required=False)
    created_before = forms.DateTimeField(required=False)
    rse_expression = forms.CharField(
        required=False, max_length=500, help_text="e.g. AUSRC_DISK, country=AU, region=europe; or SRCs"
    )
    srcs = forms.CharField(required=False, max_length=500, help_text="SRC names, separated by commas")
    copies = forms.IntegerField(initial=1, min_value=0, max_value=100)
    lifetime = forms.IntegerField(
        required=False, label="Lifetime (days)", help_text="Empty: your role's longest"
    )
    activity = forms.ChoiceField(choices=[(a, a) for a in ACTIVITIES], initial=USER_ACTIVITY)
    priority = forms.IntegerField(initial=3, min_value=0, max_value=100)
    comment = forms.CharField(required=False, max_length=200)

    def request(self) -> dict[str, Any]:
        """The keyword arguments of ``rules.services.create_rule`` (its checks name these fields)."""
        data = self.cleaned_data
        filters = {k: data[k] for k in FILTER_KEYS if data.get(k) not in (None, "")}
        for key in ("created_after", "created_before"):
            if key in filters:
                filters[key] = filters[key].isoformat()
        srcs = [s.strip() for s in (data.get("srcs") or "").split(",") if s.strip()]
        days = data.get("lifetime")
        return {
            "product": data.get("product") or None,
            "filters": filters or None,
            "rse_expression": data.get("rse_expression") or None,
            "srcs": srcs or None,
            "copies": data["copies"],
            "activity": data["activity"],
            "priority": data["priority"],
            "lifetime": None if days is None else days * 86400,
            "comment": data.get("comment") or "",
        }

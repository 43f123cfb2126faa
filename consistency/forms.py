"""The portal's forms of the consistency checks (the services check everything again)."""

from __future__ import annotations

from typing import Any

from django import forms

from topology.models import StorageEndpoint

from .choices import CheckMode
from .services import MAX_GRACE_HOURS


class StartCheckForm(forms.Form):
    endpoint = forms.ModelChoiceField(queryset=StorageEndpoint.objects.none(), to_field_name="name")
    mode = forms.ChoiceField(choices=CheckMode.choices, initial=CheckMode.LIST)
    checksum_fraction = forms.FloatField(
        min_value=0.0, max_value=1.0, initial=0.01, help_text="Share of whole files whose adler32 is re-read"
    )
    dark_grace_hours = forms.FloatField(
        min_value=0.0, max_value=MAX_GRACE_HOURS, initial=24.0, help_text="A dark file is at least this old"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["endpoint"].queryset = StorageEndpoint.objects.filter(is_active=True).order_by("name")  # type: ignore[attr-defined]


class DarkFileForm(forms.Form):
    confirm = forms.BooleanField(
        required=True, label="I confirm", help_text="The decision is recorded in the audit trail."
    )

"""Forms of the operator actions. Each asks for an explicit confirmation; the services enforce the rules."""

from __future__ import annotations

from typing import Any

from django import forms

from replicas.models import POLICY_INPUT_FIELDS, DataProduct, ReplicaPolicy
from topology.models import StorageEndpoint

from .services import reroute_destinations

CONFIRM_HELP = "Tick to confirm: the action runs at once and is recorded in the audit trail."


class ConfirmForm(forms.Form):
    """The confirmation step every action has, with an optional reason kept in the audit trail."""

    reason = forms.CharField(max_length=200, required=False)
    confirm = forms.BooleanField(required=True, label="I confirm", help_text=CONFIRM_HELP)


class PriorityForm(ConfirmForm):
    priority = forms.TypedChoiceField(
        choices=[(n, str(n)) for n in range(1, 6)], coerce=int, help_text="1 (lowest) to 5 (highest)"
    )

    field_order = ["priority", "reason", "confirm"]


class RerouteForm(ConfirmForm):
    destination = forms.ModelChoiceField(queryset=StorageEndpoint.objects.none())

    field_order = ["destination", "reason", "confirm"]

    def __init__(self, *args: Any, product: DataProduct, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["destination"].queryset = reroute_destinations(product)  # type: ignore[attr-defined]


class PolicyForm(forms.ModelForm):
    """The policy's own fields; ModelForm validation runs the model's full_clean (and its constraints)."""

    class Meta:
        model = ReplicaPolicy
        fields = list(POLICY_INPUT_FIELDS)
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "partners": forms.Textarea(attrs={"rows": 2, "placeholder": '{"UKSRC": "AUSRC"}'}),
            "degrade_order": forms.Textarea(attrs={"rows": 1}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("degrade_at", "recover_at"):
            self.fields[name].required = False  # left empty: the model's default

    def _or_default(self, name: str) -> Any:
        value = self.cleaned_data.get(name)
        return ReplicaPolicy._meta.get_field(name).get_default() if value is None else value  # type: ignore[union-attr]

    def clean_degrade_at(self) -> Any:
        return self._or_default("degrade_at")

    def clean_recover_at(self) -> Any:
        return self._or_default("recover_at")

    def clean_partners(self) -> Any:
        # An empty box is no partners (every SRC takes the next by name), not JSON null.
        return self.cleaned_data.get("partners") or {}

    def clean_degrade_order(self) -> Any:
        value = self.cleaned_data.get("degrade_order")
        return [] if value is None else value


class ShareForm(forms.Form):
    # Every endpoint is offered: the model's own rule (no SDP destination) answers with its message.
    destination = forms.ModelChoiceField(queryset=StorageEndpoint.objects.all(), required=False)
    weight = forms.FloatField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("destination") is not None and data.get("weight") is None:
            self.add_error("weight", "Give a weight for this destination.")
        if data.get("destination") is None and data.get("weight") is not None:
            self.add_error("destination", "Choose the destination of this weight.")
        return data


ShareFormSet = forms.formset_factory(ShareForm, extra=3)

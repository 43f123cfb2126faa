"""REST endpoints of the push scheduler: plan preview, the loop's cycles, lane measurements, simulations."""

from __future__ import annotations

import mimetypes
from typing import Any

from django.http import FileResponse, Http404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action, api_view
from rest_framework.request import Request
from rest_framework.response import Response

from replicas.visibility import hidden_did_set

from ..models import PathMeasurement, PushCycle, Simulation
from ..services import report_dir, request_simulation
from ..simulations import SimulationRequestError
from . import serializers as s


@extend_schema(responses={200: dict})
@api_view(["GET"])
def plan_preview(request: Request) -> Response:
    """What the push loop would do with the products waiting at the SDPs now: every leg, when and why.
    Nothing is submitted."""
    from ..plan_settings import plan_config
    from ..planning.dispatch import job_hints
    from ..planning.types import PlanInputError
    from ..snapshot import queued_products
    from ..telescope_plans import cycle_plans

    config = plan_config()
    now = timezone.now()
    products = queued_products(now=now)
    errors: list[str] = []
    legs, events = [], []
    try:
        plans = list(cycle_plans(now=now, config=config, errors=errors))
    except PlanInputError as exc:
        errors.append(str(exc))
    if errors:
        return Response({"detail": "; ".join(errors)}, status=400)
    if not plans:
        return Response({"products_queued": 0, "legs": [], "events": []})
    hidden = hidden_did_set(request.user)
    for planned, _busy in plans:
        due = set(planned.due)
        for index, leg in enumerate(planned.result.legs):
            if leg.product_id in hidden:
                continue  # another project's proprietary product (replicas/visibility.py)
            hints = job_hints(leg)
            legs.append(
                {
                    "product": leg.product_id,
                    "telescope": planned.telescope,
                    "policy": planned.policy.name,
                    "role": str(leg.role),
                    "source": leg.source,
                    "destination": leg.destination,
                    "links": list(leg.links),
                    "start_s": leg.start_s,
                    "start_slot": leg.start_slot,
                    "finish_s": leg.finish_s,
                    "rate_bps": leg.rate_bps,
                    "streams": hints.streams,
                    "files": hints.concurrent_files,
                    "priority": leg.priority,
                    "cost_eur": leg.cost_eur,
                    "due_now": index in due,
                    "depends_on": leg.depends_on,
                    "carried": index >= planned.first_carried,
                }
            )
        events += [
            {"time_s": e.time_s, "telescope": e.telescope, "kind": e.kind, "detail": e.detail}
            for e in planned.result.events
        ]
    return Response(
        {
            "products_queued": len(products),
            "slot_seconds": config.slot_seconds,
            "legs": legs,
            "events": events,
        }
    )


class PushCycleViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = PushCycle.objects.all()
    serializer_class = s.PushCycleSerializer

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "hidden_dids": hidden_did_set(self.request.user)}


class PathMeasurementViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Lane measurements: recorded by every push job, and by benchmarks (``srcnet bench path --record``)."""

    queryset = PathMeasurement.objects.all()
    serializer_class = s.PathMeasurementSerializer
    filterset_fields = ["source", "destination", "succeeded"]


class SimulationViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Ask for a simulation (it runs on a worker) and fetch its report files when it is done."""

    queryset = Simulation.objects.select_related("requested_by")
    serializer_class = s.SimulationSerializer

    def perform_create(self, serializer):  # type: ignore[no-untyped-def]
        data = serializer.validated_data
        try:
            simulation = request_simulation(
                user=self.request.user,
                scenario=data.get("scenario", "all"),
                days=data.get("days", 1.0),
                topology=data.get("topology", "db"),
                failures=data.get("failures", False),
                with_lp=data.get("with_lp", True),
            )
        except SimulationRequestError as exc:
            field, _, message = str(exc).partition(": ")
            raise serializers.ValidationError({field: [message or str(exc)]}) from exc
        serializer.instance = simulation

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    @action(detail=True, methods=["get"], url_path=r"files/(?P<filename>[A-Za-z0-9_.-]+)")
    def files(self, request: Request, pk: str | None = None, filename: str = "") -> FileResponse:
        """One file of the report (report.md, summary.json, *.png)."""
        path = report_dir(self.get_object().pk) / filename
        if not path.is_file():
            raise Http404(f"no report file {filename}")
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return FileResponse(open(path, "rb"), content_type=content_type)

"""API root."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from srcnet.roles import is_operator, role_of


@extend_schema(responses={200: dict})
@api_view(["GET"])
def status(request: Request) -> Response:
    """Who is calling, and where the API's parts live."""
    return Response(
        {
            "user": request.user.get_username(),
            "role": role_of(request.user).name.lower(),
            "is_operator": is_operator(request.user),
            "version": settings.SPECTACULAR_SETTINGS["VERSION"],
            "endpoints": {
                name: request.build_absolute_uri(f"/api/{name}/")
                for name in ("topology", "replicas", "transfers")
            },
            "schema": request.build_absolute_uri("/api/schema/"),
        }
    )

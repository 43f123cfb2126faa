"""Personal API tokens through the REST API: an account makes, lists and revokes its own; an admin lists
and revokes anyone's. ``POST /api/token/`` makes one for a user name and password (rate limited)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from srcnet.api.permissions import AnyAccount, TokenScoped
from srcnet.roles import is_admin

from ..issuer_tokens import API_SCOPES
from ..limits import client_address, forget_failures, lock_for, refused
from ..models import ApiToken, SignInPlace
from ..sso import sso_settings
from ..tokens import Grant, TokenError, issue, revoke
from .serializers import (
    ApiTokenRequestSerializer,
    ApiTokenSerializer,
    NewApiTokenSerializer,
    PasswordTokenRequestSerializer,
    SignOnSerializer,
)


def _made(request: Request, user: Any, asked: dict[str, Any], name: str) -> Response:
    try:
        token, key = issue(
            user,
            name=name,
            scope=asked["scope"],
            days=asked.get("expires_in_days"),
            address=client_address(request._request),
        )
    except TokenError as error:
        raise ValidationError({error.field: str(error)}) from error
    body = NewApiTokenSerializer(token).data
    body["key"] = key
    # "token" as DRF's token endpoint answered, for clients written against it.
    body["token"] = key
    return Response(body, status=status.HTTP_201_CREATED)


class ApiTokenViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """``/api/tokens/``: the caller's own tokens (an admin's: everyone's, ``?user=<name>``)."""

    queryset = ApiToken.objects.all()
    serializer_class = ApiTokenSerializer
    permission_classes = [TokenScoped, AnyAccount]
    filterset_fields = ["scope"]
    ordering_fields = ["created", "expires", "last_used"]

    def get_permissions(self) -> Sequence[Any]:
        # Any token may revoke itself (a leaked read token need not wait for a broader one to be found).
        grant, pk = self.request.auth, self.kwargs.get("pk")
        if self.action == "destroy" and isinstance(grant, Grant) and str(grant.token_id) == str(pk):
            return [AnyAccount()]
        return super().get_permissions()

    def get_queryset(self) -> QuerySet[ApiToken]:
        tokens = ApiToken.objects.select_related("user", "revoked_by")
        if not is_admin(self.request.user):
            return tokens.filter(user__pk=self.request.user.pk or 0)
        wanted = self.request.query_params.get("user")
        return tokens.filter(user__username=wanted) if wanted else tokens

    @extend_schema(request=ApiTokenRequestSerializer, responses={201: NewApiTokenSerializer})
    def create(self, request: Request) -> Response:
        asked = ApiTokenRequestSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        return _made(request, request.user, asked.validated_data, asked.validated_data["name"])

    @extend_schema(request=None, responses={200: ApiTokenSerializer})
    def destroy(self, request: Request, pk: Any = None) -> Response:
        """Revoke: the token opens nothing from now on; it stays listed, for the record."""
        token = self.get_object()
        revoke(token, request.user)
        token.refresh_from_db()
        return Response(ApiTokenSerializer(token).data)


@extend_schema(responses={200: SignOnSerializer})
@api_view(["GET"])
@permission_classes([AllowAny])
@authentication_classes([])
def sign_on(request: Request) -> Response:
    """``GET /api/identity/sign-on/``: where the CLI signs on (public, as an issuer's discovery document is):
    the issuer, the CLI's client, the audience and scopes its tokens need here."""
    conf = sso_settings()
    audiences = [str(a) for a in getattr(settings, "SRCNET_API_TOKEN_AUDIENCES", [])]
    if not conf.enabled or not conf.cli_client_id or not audiences:
        return Response(
            {"detail": "Single sign-on is not configured here: use a personal API token."}, status=404
        )
    body = {
        "issuer": conf.issuer,
        "cli_client_id": conf.cli_client_id,
        "audience": audiences[0],
        "scopes": list(API_SCOPES),
    }
    return Response(body)


class PasswordTokenView(APIView):
    """``POST /api/token/``: a new personal token for a user name and password (default scope ``operate``,
    30 days), refused (429) while a sign-in limit holds (identity.limits)."""

    permission_classes = [AllowAny]
    authentication_classes: list[type] = []

    @extend_schema(request=PasswordTokenRequestSerializer, responses={201: NewApiTokenSerializer})
    def post(self, request: Request) -> Response:
        username = request.data.get("username") if hasattr(request.data, "get") else None
        lock = lock_for(client_address(request._request), username)
        if lock is not None:
            refused(request._request, SignInPlace.API_TOKEN, lock, username)
            body = {"detail": lock.message(), "retry_after": lock.seconds}
            return Response(body, status=429, headers={"Retry-After": str(lock.seconds)})
        asked = PasswordTokenRequestSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        data = asked.validated_data
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None:  # counted by the sign-in signal's receiver (identity/signals.py)
            raise ValidationError({"non_field_errors": ["Unable to log in with provided credentials."]})
        forget_failures(request._request, data["username"])
        name = data.get("name") or f"password sign-in {timezone.now():%Y-%m-%d %H:%M}"
        return _made(request, user, data, name)

"""The sign-in views, each refusing (429, with the wait) while a limit holds (``identity.limits``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.response import Response

from .limits import Lock, client_address, forget_failures, lock_for, refused
from .models import SignInPlace


def _lock(request: HttpRequest, username: object, place: str) -> Lock | None:
    lock = lock_for(client_address(request), username)
    if lock is not None:
        refused(request, place, lock, username)
    return lock


class PortalLoginView(auth_views.LoginView):
    template_name = "srcnet/login.html"

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        lock = _lock(request, request.POST.get("username"), SignInPlace.PORTAL)
        if lock is None:
            return super().post(request, *args, **kwargs)
        context = self.get_context_data(form=self.get_form_class()(request), locked=lock.message())
        response = TemplateResponse(request, self.template_name, context, status=429)
        response["Retry-After"] = str(lock.seconds)
        return response


def admin_login(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
    """The admin site's login page, with the same limits."""
    if request.method == "POST":
        lock = _lock(request, request.POST.get("username"), SignInPlace.ADMIN)
        if lock is not None:
            response = HttpResponse(lock.message(), status=429, content_type="text/plain; charset=utf-8")
            response["Retry-After"] = str(lock.seconds)
            return response
    return admin.site.login(request, extra_context)


class LimitedObtainAuthToken(ObtainAuthToken):
    """DRF's token endpoint (a user name and password for the user's API token), with the same limits."""

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        username = request.data.get("username") if hasattr(request.data, "get") else None
        lock = _lock(request._request, username, SignInPlace.API_TOKEN)
        if lock is not None:
            body = {"detail": lock.message(), "retry_after": lock.seconds}
            return Response(body, status=429, headers={"Retry-After": str(lock.seconds)})
        response = super().post(request, *args, **kwargs)
        forget_failures(request._request, username)  # it answered a token: the password matched
        return response

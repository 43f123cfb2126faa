"""The sign-in views, each refusing (429, with the wait) while a limit holds (``identity.limits``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from .limits import Lock, client_address, lock_for, refused
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

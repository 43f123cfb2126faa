"""The sign-in views, each refusing (429, with the wait) while a limit holds (``identity.limits``)."""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django.contrib import admin
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from .limits import FAILURES, Lock, client_address, lock_for, refused
from .models import SignInPlace
from .oidc import Attempt, SignOnFailed, authorization_url, new_attempt, redeem, userinfo, verified_id_token
from .sso import NoAccess, account_for, groups_of, sso_settings

log = logging.getLogger("srcnet.sign_in")


def _lock(request: HttpRequest, username: object, place: str) -> Lock | None:
    lock = lock_for(client_address(request), username)
    if lock is not None:
        refused(request, place, lock, username)
    return lock


class PortalLoginView(auth_views.LoginView):
    template_name = "srcnet/login.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        conf = sso_settings()
        context.update(sso=conf.enabled, sso_name=conf.name)
        return context

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


SSO_SESSION_KEY = "srcnet_sso_attempt"


def _redirect_uri(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("sso-callback"))


def sso_login(request: HttpRequest) -> HttpResponse:
    """Send the browser to the sign-on issuer (authorization code with PKCE)."""
    conf = sso_settings()
    if not conf.enabled:
        raise Http404("Single sign-on is not configured here")
    next_url = request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}, require_https=request.is_secure()):
        next_url = "/"
    attempt = new_attempt(next_url)
    try:
        target = authorization_url(conf, attempt, _redirect_uri(request))
    except SignOnFailed as failed:
        return _sign_on_failed(request, str(failed), status=502)
    request.session[SSO_SESSION_KEY] = attempt.as_session()
    return HttpResponseRedirect(target)


def sso_callback(request: HttpRequest) -> HttpResponse:
    """The issuer's answer: the code redeemed, the ID token checked, the account made or brought in step
    with its groups (identity.sso), and signed in."""
    conf = sso_settings()
    if not conf.enabled:
        raise Http404("Single sign-on is not configured here")
    attempt = Attempt.from_session(request.session.pop(SSO_SESSION_KEY, None))
    state = request.GET.get("state", "")
    if attempt is None or not secrets.compare_digest(state.encode(), attempt.state.encode()):
        return _sign_on_failed(request, "this sign-on was not started here, or was already used: start again")
    if request.GET.get("error"):
        detail = request.GET.get("error_description") or request.GET["error"]
        return _sign_on_failed(request, f"the issuer did not sign you on: {detail[:200]}")
    try:
        tokens = redeem(conf, attempt, request.GET.get("code", ""), _redirect_uri(request))
        claims = verified_id_token(conf, str(tokens.get("id_token", "")), attempt.nonce)
        groups = groups_of(claims, conf.groups_claim)
        if not groups and tokens.get("access_token"):
            groups = groups_of(userinfo(conf, str(tokens["access_token"])), conf.groups_claim)
        user = account_for(conf.issuer, claims, groups)
    except (SignOnFailed, NoAccess) as failed:
        return _sign_on_failed(request, str(failed))
    login(request, user, backend="identity.backends.LocalPasswordBackend")  # the session's, as a password's
    return HttpResponseRedirect(attempt.next_url)


def _sign_on_failed(request: HttpRequest, reason: str, status: int = 403) -> HttpResponse:
    FAILURES.labels("sso").inc()  # srcnet_sign_in_failures_total{place="sso"}
    log.warning("single sign-on failed from %s: %s", client_address(request), reason)
    context = {"reason": reason, "sso": sso_settings().enabled}
    return TemplateResponse(request, "srcnet/sign_on_failed.html", context, status=status)

"""The HTTP side of FTS3's configuration API: FTS3's routes, status codes and answer shapes.

Every endpoint needs FTS3's "config" role: here an admin, or an account holding
``transfers.configure_transfers`` (the push scheduler's service account, ``srcnet.roles``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import unquote

from django.http import HttpRequest, HttpResponse, JsonResponse

from srcnet.roles import may_configure_transfers

from ..auth import Caller
from ..views import _error as error
from ..views import fts_endpoint
from . import links, shares
from . import storage as se
from .fields import ConfigError

Handler = Callable[..., HttpResponse]


def config_endpoint(methods: tuple[str, ...]) -> Callable[[Handler], Handler]:
    """``fts_endpoint`` (authentication, methods), the config role, and a ConfigError as its answer."""

    def wrap(view: Handler) -> Handler:
        @fts_endpoint(methods)
        @wraps(view)
        def handler(request: HttpRequest, caller: Caller, *args: Any, **kwargs: Any) -> HttpResponse:
            if not may_configure_transfers(caller.user):
                return error(403, f"{caller.dn} may not change the service's configuration (the config role)")
            try:
                return view(request, *args, **kwargs)
            except ConfigError as exc:
                return error(exc.status, str(exc))

        return handler

    return wrap


def json_body(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        # RecursionError: arrays or objects nested thousands deep.
        raise ConfigError("body", "is not valid JSON") from exc


def no_content() -> HttpResponse:
    return HttpResponse(status=204)


@config_endpoint(("GET", "POST"))
def link_collection(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return JsonResponse(links.link_dict(links.set_link_config(json_body(request))), status=201)
    return JsonResponse([links.link_dict(row) for row in links.link_configs()], safe=False)


@config_endpoint(("GET", "DELETE"))
def link_item(request: HttpRequest, name: str) -> HttpResponse:
    name = unquote(name)
    if request.method == "DELETE":
        links.delete_link_config(name)
        return no_content()
    return JsonResponse(links.link_dict(links.get_link_config(name)))


@config_endpoint(("GET", "POST", "DELETE"))
def storage(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return JsonResponse(list(se.set_se_config(json_body(request))), safe=False)
    if request.method == "DELETE":
        se.delete_se_config(request.GET.get("se"))
        return no_content()
    return JsonResponse(se.se_configs(request.GET.get("se") or None))


@config_endpoint(("GET", "POST"))
def share_collection(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return JsonResponse(shares.set_activity_shares(json_body(request)))
    return JsonResponse(shares.activity_shares())


@config_endpoint(("GET", "DELETE"))
def share_item(request: HttpRequest, vo: str) -> HttpResponse:
    vo = unquote(vo)
    if request.method == "DELETE":
        shares.delete_activity_shares(vo)
        return no_content()
    return JsonResponse(shares.vo_shares(vo))

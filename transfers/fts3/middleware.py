"""Merge repeated slashes in request paths: the ``fts3`` client asks for ``//jobs``."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_SLASHES = re.compile(r"/{2,}")


class MergeSlashesMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "//" in request.path_info:
            request.path_info = _SLASHES.sub("/", request.path_info)
            request.path = _SLASHES.sub("/", request.path)
        return self.get_response(request)

"""A thin ``requests`` wrapper over the REST API: JSON in and out, HTTP errors as the CLI's exceptions."""

from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import Any

import requests

from . import credentials, signon
from .config import Config
from .errors import ApiError, AuthError, ConnectionFailed, NotFound, ValidationFailed, format_field_errors

Params = Mapping[str, Any] | None

PAGE_SIZE = 500  # rows asked for per page (the server caps it at 1000)
MAX_ROWS = 100_000  # the most rows a list follows `next` links for, without --limit


class Client:
    def __init__(
        self, config: Config, session: requests.Session | None = None, *, page_size: int = PAGE_SIZE
    ) -> None:
        self.config = config
        self.page_size = page_size
        self.session = session or requests.Session()
        self.session.headers["Accept"] = "application/json"
        self.session.headers["User-Agent"] = "srcnet-cli/0.1"
        if config.ca_bundle:
            self.session.verify = config.ca_bundle
        if config.token:
            self.session.headers["Authorization"] = f"Bearer {config.token}"
        self._signed_on = False

    def _use_sign_on(self) -> None:
        """Without a token: the access token of the sign-on kept for this server, renewed if need be."""
        self._signed_on = True
        kept = credentials.load(self.config.config_dir, self.config.url)
        if kept is None:
            return
        if signon.fresh(self.session, kept):
            credentials.save(self.config.config_dir, self.config.url, kept)
        self.session.headers["Authorization"] = f"Bearer {kept.access_token}"

    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.config.url}/{path.lstrip('/')}"

    # -- requests -------------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params = None,
        json: Any = None,
        data: str | bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> requests.Response:
        url = self.url(path)
        if not self.config.token and not self._signed_on:
            self._use_sign_on()
        try:
            response = self.session.request(
                method,
                url,
                params=params,
                json=json,
                data=data,
                headers=dict(headers or {}),
                timeout=self.config.http_timeout,
                # SRCNET_CA_BUNDLE outright (requests would let REQUESTS_CA_BUNDLE win over the session's).
                verify=self.session.verify,
            )
        except requests.ConnectionError as exc:
            raise ConnectionFailed(self._unreachable(url, exc)) from exc
        except requests.Timeout as exc:
            raise ConnectionFailed(
                f"cannot reach {url}: no answer within {self.config.http_timeout:g} s "
                f"(set SRCNET_HTTP_TIMEOUT)"
            ) from exc
        except requests.RequestException as exc:
            raise ConnectionFailed(f"cannot reach {url}: {exc} ({self._hint()})") from exc
        if response.status_code >= 400:
            raise self._error(method, url, response)
        return response

    def get(self, path: str, params: Params = None) -> Any:
        return self._json(self.request("GET", path, params=params))

    def get_text(self, path: str, params: Params = None) -> str:
        return self.request("GET", path, params=params, headers={"Accept": "*/*"}).text

    def post(self, path: str, payload: Any = None) -> Any:
        return self._json(self.request("POST", path, json=payload))

    def delete(self, path: str) -> None:
        self.request("DELETE", path)

    def post_text(self, path: str, text: str, content_type: str) -> Any:
        return self._json(
            self.request("POST", path, data=text.encode("utf-8"), headers={"Content-Type": content_type})
        )

    def paginate(
        self, path: str, params: Params = None, *, limit: int | None = None
    ) -> tuple[list[Any], int]:
        """Every row of a paginated list, following ``next`` links, up to ``limit`` (default MAX_ROWS).

        Returns the rows and the server's total ``count``."""
        cap = MAX_ROWS if limit is None else limit
        query = dict(params or {})
        query["limit"] = max(1, min(self.page_size, cap))
        page = self.get(path, query)
        if not isinstance(page, dict) or "results" not in page:  # an unpaginated list
            rows = list(page) if isinstance(page, list) else [page]
            return rows[:cap], len(rows)
        rows = list(page["results"])
        count = int(page.get("count", len(rows)))
        while page.get("next") and len(rows) < cap:
            page = self.get(page["next"])
            rows.extend(page["results"])
        return rows[:cap], count

    # -- errors ---------------------------------------------------------------------------------------
    def _hint(self) -> str:
        return {"--url": "check --url", "SRCNET_URL": "check SRCNET_URL"}.get(
            self.config.url_from, "set SRCNET_URL"
        )

    def _unreachable(self, url: str, exc: Exception) -> str:
        reason = _root_reason(exc)
        return f"cannot reach {url}: {reason} ({self._hint()})"

    def _error(self, method: str, url: str, response: requests.Response) -> Exception:
        status = response.status_code
        body = _body(response)
        detail = body.get("detail") if isinstance(body, dict) else None
        where = f"{method} {url}"
        if status == 400:
            lines = format_field_errors(body) if body is not None else [response.text.strip()[:200]]
            return ValidationFailed("invalid request: " + "; ".join(lines), body=body, status=status)
        if status == 401:
            return AuthError(
                f"not authenticated: {detail or 'no valid token'}"
                " (set SRCNET_TOKEN or pass --token, or run `srcnet auth login`)",
                body=body,
                status=status,
            )
        if status == 403:
            hint = " (writes need an operator's token)" if method != "GET" else ""
            return AuthError(f"permission denied: {detail or 'forbidden'}{hint}", body=body, status=status)
        if status == 404:
            return NotFound(f"not found: {where}", body=body, status=status)
        text = detail or (response.text.strip().splitlines() or [""])[0][:200]
        return ApiError(f"server error {status} on {where}: {text}", body=body, status=status)

    @staticmethod
    def _json(response: requests.Response) -> Any:
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ApiError(
                f"{response.url} did not answer with JSON (is SRCNET_URL the control plane?)"
            ) from exc


def _body(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _root_reason(exc: BaseException) -> str:
    """'connection refused', 'name or service not known', ... from the chain requests wraps."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if (
            isinstance(current, ConnectionRefusedError)
            or getattr(current, "errno", None) == errno.ECONNREFUSED
        ):
            return "connection refused"
        for nested in (current.__cause__, current.__context__, *getattr(current, "args", ())):
            if isinstance(nested, BaseException):
                stack.append(nested)
        reason = getattr(current, "reason", None)
        if isinstance(reason, BaseException):
            stack.append(reason)
    text = str(exc)
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    for marker in (
        "name or service not known",
        "nodename nor servname",
        "temporary failure in name resolution",
    ):
        if marker in lowered:
            return "host name not resolved"
    return text

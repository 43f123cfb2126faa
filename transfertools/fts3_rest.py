"""The transfertool for any FTS3 endpoint (a production FTS3 or the platform's own FTS3 endpoint), built on
the real ``fts3`` client package. Only the URL and the credential differ between the two.

It speaks the FTS3 REST protocol and nothing else: no Django, no model of the platform (what the platform
keeps of a job it submitted is its caller's, ``schedulers.transfertools.FollowedFts3Transfertool``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

from .interface import (
    FileSpan,
    JobParams,
    LinkConfig,
    StorageConfig,
    TransferRequest,
    Transfertool,
    TransfertoolError,
)
from .protocol import HTTP_NOT_MODIFIED, HTTP_OK, parse_fts_date

BULK_LIMIT = 100  # FTS3 caps the ids of one bulk request


def _multistatus_request_class():  # type: ignore[no-untyped-def]
    """The client's own ``Request`` class, except that a 207 answer is returned to the caller: the client
    raises ``ClientError`` for it, and the per-entry statuses inside are what a bulk query is for."""
    from fts3.rest.client.request import Request

    class MultiStatusRequest(Request):  # type: ignore[misc]
        def _handle_error(self, url, code, response_body=None):  # type: ignore[no-untyped-def]
            if code == 207:
                return None
            return super()._handle_error(url, code, response_body)

    return MultiStatusRequest


class Fts3Transfertool(Transfertool):
    """Submit, query, reprioritise and cancel through FTS3's REST API with a bearer token (or an X.509
    certificate). Its jobs' ends are heard of only where the endpoint is the platform's own (its
    ``job_finished`` signal): ``settles_from`` stays empty. A subclass that records each job for a poll
    says otherwise (``schedulers.transfertools.FollowedFts3Transfertool``)."""

    def __init__(
        self,
        endpoint: str,
        *,
        token: str | None = None,
        ucert: str | None = None,
        ukey: str | None = None,
        verify: bool | str = True,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._credentials: dict[str, Any] = (
            {"fts_access_token": token} if token else {"ucert": ucert, "ukey": ukey}
        )
        self._verify = verify
        self._context: Any = None

    @property
    def context(self) -> Any:
        """The client's ``Context``, made on first use (it asks the endpoint for its API version)."""
        if self._context is None:
            from fts3.rest.client.context import Context

            try:
                # The client verifies against ``capath`` (default: X509_CERT_DIR, else
                # /etc/grid-security/certificates) whenever ``verify`` is true.
                ca = {"capath": self._verify} if isinstance(self._verify, str) else {}
                self._context = Context(
                    self.endpoint,
                    verify=bool(self._verify),
                    request_class=_multistatus_request_class(),
                    **ca,
                    **self._credentials,
                )
            except Exception as exc:  # the client raises its own hierarchy and requests' errors
                raise TransfertoolError(f"cannot use the FTS3 endpoint {self.endpoint}: {exc}") from exc
        return self._context

    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        from fts3.rest.client import easy

        metadata = dict(params.metadata)
        transfers = [
            easy.new_transfer(
                f.source,
                f.destination,
                checksum=f.checksum or None,
                filesize=f.filesize,
                metadata=f.metadata,
                activity=params.activity,
                # The copy's SciTags flow identifier, as Rucio's conveyor sends it (none: unmarked).
                scitag=params.scitag,
            )
            for f in files
        ]
        job = easy.new_job(
            transfers,
            verify_checksum=params.verify_checksum,
            overwrite=params.overwrite,
            priority=params.priority,
            metadata=metadata,
            nostreams=params.streams or 1,
            multihop=params.multihop,
            # FTS3: 0 asks for the server default, a negative value for no retry.
            retry=0 if params.retry is None else (params.retry if params.retry > 0 else -1),
        )
        try:
            return str(easy.submit(self.context, job))
        except Exception as exc:
            raise TransfertoolError(f"submission refused: {exc}") from exc

    def _bulk(self, job_ids: Sequence[str], query: str = "") -> list[dict[str, Any]]:
        """The entries FTS3 returns for ``job_ids`` (found or not), ``BULK_LIMIT`` ids per request."""
        from fts3.rest.client.exceptions import NotFound

        entries: list[dict[str, Any]] = []
        ids = list(dict.fromkeys(job_ids))
        for start in range(0, len(ids), BULK_LIMIT):
            chunk = ids[start : start + BULK_LIMIT]
            try:
                answer: Any = json.loads(self.context.get(f"/jobs/{','.join(chunk)}{query}"))
            except NotFound:
                continue  # a single unknown id answers 404 with one object
            except Exception as exc:
                raise TransfertoolError(f"status query failed: {exc}") from exc
            entries.extend([answer] if isinstance(answer, dict) else answer)
        return entries

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        """One bulk ``GET /jobs/{id1,id2,...}``; unknown ids (404 entries in a 207 answer) are left out."""
        return {e["job_id"]: e["job_state"] for e in self._bulk(job_ids) if e.get("http_status") == HTTP_OK}

    def failure_reasons(self, job_ids: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for entry in self._bulk(job_ids, "?files=file_state,reason"):
            if entry.get("http_status") != HTTP_OK:
                continue
            reasons = {f.get("reason") for f in entry.get("files") or [] if f.get("reason")}
            out[entry["job_id"]] = sorted(str(r) for r in reasons)
        return out

    def file_spans(self, job_ids: Sequence[str]) -> dict[str, list[FileSpan]]:
        """From one bulk query with the file fields Rucio's poller also asks for, plus ``filesize`` (what
        a finished file moved) and ``tx_duration`` (FTS3's times are whole seconds)."""
        out: dict[str, list[FileSpan]] = {}
        for entry in self._bulk(job_ids, "?files=file_state,filesize,start_time,finish_time,tx_duration"):
            if entry.get("http_status") != HTTP_OK:
                continue
            out[entry["job_id"]] = [
                FileSpan(
                    finished=f.get("file_state") == "FINISHED",
                    bytes=int(f.get("filesize") or 0),
                    start=parse_fts_date(f.get("start_time")),
                    end=parse_fts_date(f.get("finish_time")),
                    duration=float(f["tx_duration"]) if f.get("tx_duration") else None,
                )
                for f in entry.get("files") or []
            ]
        return out

    def cancel(self, job_id: str) -> None:
        from fts3.rest.client import easy

        try:
            easy.cancel(self.context, job_id)
        except Exception as exc:
            raise TransfertoolError(f"cancel failed: {exc}") from exc

    def update_priority(self, job_id: str, priority: int) -> None:
        """FTS3's priority change as Rucio's FTS3 transfertool sends it (the ``fts3`` package has no ``easy``
        helper for it): ``POST /jobs/{id}`` with ``{"params": {"priority": N}}``, through the client's
        ``Context.post_json``."""
        try:
            answer = json.loads(self.context.post_json(f"/jobs/{job_id}", {"params": {"priority": priority}}))
        except Exception as exc:
            raise TransfertoolError(f"priority change refused for {job_id}: {exc}") from exc
        if isinstance(answer, dict) and answer.get("http_status") not in (None, HTTP_OK, HTTP_NOT_MODIFIED):
            raise TransfertoolError(f"priority change refused for {job_id}: {answer.get('http_message')}")

    def _config(self, method: str, path: str, body: Any = None) -> Any:
        """One request to FTS3's configuration API through the client's ``Context`` (the ``fts3`` package
        has no helpers for it); the decoded answer, or TransfertoolError with the service's reason."""
        try:
            if method == "POST":
                text = self.context.post_json(path, body)
            elif method == "DELETE":
                text = self.context.delete(path)
            else:
                text = self.context.get(path)
        except TransfertoolError:
            raise
        except Exception as exc:  # the client's own errors (a 400 carries the service's message), requests'
            raise TransfertoolError(f"{method} {path} refused by {self.endpoint}: {exc}") from exc
        try:
            return json.loads(text) if text.strip() else None
        except ValueError as exc:
            raise TransfertoolError(f"{method} {path}: {self.endpoint} answered no JSON") from exc

    def storage_element(self, url: str) -> str:
        """FTS3 names a storage element ``scheme://host`` (it drops the port); the platform's own service says
        in its ``GET /`` answer that it keeps the port, as its sites may differ only by port."""
        parts = urlsplit(url)
        info = self.context.get_endpoint_info() or {}
        keeps_port = (info.get("srcnet") or {}).get("storage_elements") == "scheme://host:port"
        port = f":{parts.port}" if keeps_port and parts.port else ""
        return f"{parts.scheme}://{parts.hostname or ''}{port}"

    def set_link_config(self, link: LinkConfig) -> LinkConfig:
        answer = self._config("POST", "/config/links", link.body())
        if not isinstance(answer, dict):
            raise TransfertoolError(f"POST /config/links: {self.endpoint} answered {answer!r:.80}")
        return LinkConfig.from_fts3(answer)

    def link_configs(self) -> list[LinkConfig]:
        answer = self._config("GET", "/config/links")
        return [LinkConfig.from_fts3(e) for e in answer or [] if isinstance(e, dict)]

    def delete_link_config(self, symbolicname: str) -> None:
        self._config("DELETE", f"/config/links/{quote(symbolicname, safe='')}")

    def set_storage_config(self, storage: StorageConfig) -> None:
        self._config("POST", "/config/se", storage.body())

    def storage_configs(self) -> list[StorageConfig]:
        answer = self._config("GET", "/config/se") or {}
        return [StorageConfig.from_fts3(k, v) for k, v in answer.items() if isinstance(v, dict)]

    def delete_storage_config(self, storage: str) -> None:
        self._config("DELETE", f"/config/se?se={quote(storage, safe='')}")

    def vo(self) -> str:
        """The VO the endpoint puts this credential in (``GET /whoami``'s first, as Rucio reads it)."""
        vos = (self._config("GET", "/whoami") or {}).get("vos") or []
        if not vos:
            raise TransfertoolError(f"{self.endpoint} puts this credential in no VO")
        return str(vos[0])

    def set_activity_shares(self, shares: Mapping[str, float]) -> None:
        self._config(
            "POST", "/config/activity_shares", {"vo": self.vo(), "share": dict(shares), "active": True}
        )

    def activity_shares(self) -> dict[str, float]:
        entry = (self._config("GET", "/config/activity_shares") or {}).get(self.vo()) or {}
        share = entry.get("share") or {}
        # FTS3 keeps a switched-off set; it shares nothing then.
        return dict(share) if entry.get("active", True) and isinstance(share, dict) else {}

    def delete_activity_shares(self) -> None:
        from fts3.rest.client.exceptions import NotFound

        try:
            self.context.delete(f"/config/activity_shares/{quote(self.vo(), safe='')}")
        except NotFound:
            pass  # none to delete
        except Exception as exc:
            raise TransfertoolError(
                f"DELETE /config/activity_shares refused by {self.endpoint}: {exc}"
            ) from exc

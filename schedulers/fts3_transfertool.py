"""The transfertool for any FTS3 endpoint (a production FTS3 or the platform's embedded service), built on
the real ``fts3`` client package. Only the URL and the credential differ between the two."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .transfertool import JobParams, TransferRequest, Transfertool, TransfertoolError


class Fts3Transfertool(Transfertool):
    """Submit, query and cancel through FTS3's REST API with a bearer token (or an X.509 certificate)."""

    def __init__(
        self,
        endpoint: str,
        *,
        token: str | None = None,
        ucert: str | None = None,
        ukey: str | None = None,
        verify: bool | str = True,
    ) -> None:
        from fts3.rest.client.context import Context

        try:
            if token:
                self.context = Context(endpoint, fts_access_token=token, verify=verify)
            else:
                self.context = Context(endpoint, ucert=ucert, ukey=ukey, verify=verify)
        except Exception as exc:  # the client raises its own hierarchy and requests' errors
            raise TransfertoolError(f"cannot use the FTS3 endpoint {endpoint}: {exc}") from exc

    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        from fts3.rest.client import easy

        transfers = [
            easy.new_transfer(
                f.source,
                f.destination,
                checksum=f.checksum or None,
                filesize=f.filesize,
                metadata=f.metadata,
                activity=params.activity,
            )
            for f in files
        ]
        job = easy.new_job(
            transfers,
            verify_checksum=params.verify_checksum,
            overwrite=params.overwrite,
            priority=params.priority,
            metadata=params.metadata,
            nostreams=params.streams or 1,
            multihop=params.multihop,
            # FTS3: 0 asks for the server default, a negative value for no retry.
            retry=0 if params.retry is None else (params.retry if params.retry > 0 else -1),
        )
        try:
            return str(easy.submit(self.context, job))
        except Exception as exc:
            raise TransfertoolError(f"submission refused: {exc}") from exc

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        if not job_ids:
            return {}
        try:
            answer: Any = self.context.get(f"/jobs/{','.join(job_ids)}")
        except Exception as exc:
            if len(job_ids) == 1 and "NotFound" in type(exc).__name__:
                return {}
            raise TransfertoolError(f"status query failed: {exc}") from exc
        import json

        entries = json.loads(answer) if isinstance(answer, str | bytes) else answer
        if isinstance(entries, dict):
            entries = [entries]
        return {e["job_id"]: e["job_state"] for e in entries if e.get("http_status") == "200 Ok"}

    def cancel(self, job_id: str) -> None:
        from fts3.rest.client import easy

        try:
            easy.cancel(self.context, job_id)
        except Exception as exc:
            raise TransfertoolError(f"cancel failed: {exc}") from exc

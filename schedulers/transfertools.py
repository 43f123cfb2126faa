"""Which transfertool the platform's flows use (``settings.SRCNET_TRANSFERTOOL``): the embedded service, or
any FTS3 endpoint through ``Fts3Transfertool``. The one module that knows both implementations, and what the
platform keeps of a job it hands to an FTS3 it does not run."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from transfers.embedded_transfertool import EmbeddedTransfertool
from transfertools.fts3_rest import Fts3Transfertool
from transfertools.interface import JobParams, TransferRequest, Transfertool, TransfertoolError

from .models import ExternalJob


class FollowedFts3Transfertool(Fts3Transfertool):
    """An FTS3 endpoint whose jobs the platform follows: every submitted job is recorded
    (``schedulers.models.ExternalJob``) and the periodic ``schedulers.poll_external_jobs`` task settles its
    copy requests from the endpoint's answers, since an FTS3 the platform does not run sends it no signal."""

    @property
    def settles_from(self) -> str:  # type: ignore[override]
        return self.endpoint

    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        job_id = super().submit(files, params)
        ExternalJob.objects.create(endpoint=self.endpoint, job_id=job_id, metadata=dict(params.metadata))
        return job_id


def default_transfertool() -> Transfertool:
    """The transfertool the platform's flows use, from ``settings.SRCNET_TRANSFERTOOL``: the embedded
    service (``KIND=embedded``), or an FTS3 endpoint (``KIND=fts3``, ``FTS3_URL`` with ``FTS3_TOKEN`` or
    ``FTS3_CERT``/``FTS3_KEY``) whose jobs are recorded and followed by polling."""
    config = getattr(settings, "SRCNET_TRANSFERTOOL", {}) or {}
    kind = str(config.get("KIND") or "embedded").lower()
    if kind == "embedded":
        return EmbeddedTransfertool()
    if kind == "fts3":
        return fts3_transfertool_for(str(config.get("FTS3_URL") or ""), follow=True)
    raise TransfertoolError(f"SRCNET_TRANSFERTOOL must be 'embedded' or 'fts3', not {kind!r}")


def fts3_transfertool_for(endpoint: str, *, follow: bool = True) -> Fts3Transfertool:
    """An ``Fts3Transfertool`` for ``endpoint`` with the credentials of ``settings.SRCNET_TRANSFERTOOL``
    (a ``FollowedFts3Transfertool`` when ``follow``)."""
    config = getattr(settings, "SRCNET_TRANSFERTOOL", {}) or {}
    if not endpoint:
        raise TransfertoolError("SRCNET_TRANSFERTOOL=fts3 needs SRCNET_FTS3_URL")
    ca = str(config.get("FTS3_CA") or "")
    verify: bool | str = False if ca == "0" else (ca or True)
    token = str(config.get("FTS3_TOKEN") or "") or None
    cert, key = str(config.get("FTS3_CERT") or "") or None, str(config.get("FTS3_KEY") or "") or None
    if not token and not cert:
        raise TransfertoolError("SRCNET_TRANSFERTOOL=fts3 needs SRCNET_FTS3_TOKEN or SRCNET_FTS3_CERT")
    kind = FollowedFts3Transfertool if follow else Fts3Transfertool
    return kind(endpoint, token=token, ucert=cert, ukey=key or cert, verify=verify)

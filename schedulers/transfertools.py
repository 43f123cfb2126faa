"""Which transfertool the platform's flows use (``settings.SRCNET_TRANSFERTOOL``): the embedded service, or
any FTS3 endpoint through ``Fts3Transfertool``. The one module that knows both implementations."""

from __future__ import annotations

from .embedded_transfertool import EmbeddedTransfertool
from .transfertool import Transfertool, TransfertoolError


def default_transfertool() -> Transfertool:
    """The transfertool the platform's flows use, from ``settings.SRCNET_TRANSFERTOOL``: the embedded
    service (``KIND=embedded``), or an FTS3 endpoint (``KIND=fts3``, ``FTS3_URL`` with ``FTS3_TOKEN`` or
    ``FTS3_CERT``/``FTS3_KEY``) whose jobs are recorded and followed by polling."""
    from django.conf import settings

    config = getattr(settings, "SRCNET_TRANSFERTOOL", {}) or {}
    kind = str(config.get("KIND") or "embedded").lower()
    if kind == "embedded":
        return EmbeddedTransfertool()
    if kind == "fts3":
        return fts3_transfertool_for(str(config.get("FTS3_URL") or ""), follow=True)
    raise TransfertoolError(f"SRCNET_TRANSFERTOOL must be 'embedded' or 'fts3', not {kind!r}")


def fts3_transfertool_for(endpoint: str, *, follow: bool = True) -> Transfertool:
    """An ``Fts3Transfertool`` for ``endpoint`` with the credentials of ``settings.SRCNET_TRANSFERTOOL``."""
    from django.conf import settings

    from .fts3_transfertool import Fts3Transfertool  # imports the fts3 client: only when asked for

    config = getattr(settings, "SRCNET_TRANSFERTOOL", {}) or {}
    if not endpoint:
        raise TransfertoolError("SRCNET_TRANSFERTOOL=fts3 needs SRCNET_FTS3_URL")
    ca = str(config.get("FTS3_CA") or "")
    verify: bool | str = False if ca == "0" else (ca or True)
    token = str(config.get("FTS3_TOKEN") or "") or None
    cert, key = str(config.get("FTS3_CERT") or "") or None, str(config.get("FTS3_KEY") or "") or None
    if not token and not cert:
        raise TransfertoolError("SRCNET_TRANSFERTOOL=fts3 needs SRCNET_FTS3_TOKEN or SRCNET_FTS3_CERT")
    return Fts3Transfertool(endpoint, token=token, ucert=cert, ukey=key or cert, verify=verify, follow=follow)

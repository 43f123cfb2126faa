"""The transfertool interface the scheduler submits through (after Rucio's own Transfertool).

The embedded implementation calls the platform's transfer service in-process; ``Fts3Transfertool``
(``schedulers/fts3_transfertool.py``) speaks the FTS3 REST protocol to any FTS3 endpoint.
``default_transfertool()`` picks one from the settings (``SRCNET_TRANSFERTOOL``)."""

from __future__ import annotations

import abc
import contextlib
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .measurements import FileSpan


@dataclass(frozen=True)
class TransferRequest:
    source: str
    destination: str
    filesize: int | None
    checksum: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobParams:
    priority: int = 3
    activity: str = "default"
    verify_checksum: str = "both"
    overwrite: bool = False
    retry: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    streams: int | None = None  # TCP streams per copy (FTS3's nostreams)
    multihop: bool = False  # the files are hops, each after the previous (FTS3 multihop jobs)


@dataclass(frozen=True)
class LinkConfig:
    """A link's limits as FTS3's ``/config/links`` holds them, between two storage elements as the tool's
    service names them (``Transfertool.storage_element``; ``*`` is any)."""

    source: str
    destination: str
    min_active: int
    max_active: int
    optimizer_mode: int = 0  # 0 off (fixed), 1 conservative, 2 normal, 3 aggressive
    nostreams: int | None = None  # None: leave the link's as it is (0: the protocol's default)
    symbolicname: str = ""  # "" names the link after its pair

    @property
    def name(self) -> str:
        if self.symbolicname:
            return self.symbolicname
        # One URL path segment, so that GET and DELETE /config/links/{name} reach it.
        return "srcnet-" + "--".join(re.sub(r"[^A-Za-z0-9.*_]+", "-", e).strip("-") for e in self.pair)

    @property
    def pair(self) -> tuple[str, str]:
        return (self.source, self.destination)

    def body(self) -> dict[str, Any]:
        """The ``POST /config/links`` body. FTS3 refuses nulls there, so an unset field is left out."""
        out: dict[str, Any] = {
            "symbolicname": self.name,
            "source": self.source,
            "destination": self.destination,
            "min_active": self.min_active,
            "max_active": self.max_active,
            "optimizer_mode": self.optimizer_mode,
        }
        if self.nostreams is not None:
            out["nostreams"] = self.nostreams
        return out

    @classmethod
    def from_fts3(cls, entry: dict[str, Any]) -> LinkConfig:
        """From FTS3's answer (its optional columns may be null)."""
        return cls(
            source=str(entry["source"]),
            destination=str(entry["destination"]),
            min_active=int(entry.get("min_active") or 0),
            max_active=int(entry.get("max_active") or 0),
            optimizer_mode=int(entry.get("optimizer_mode") or 0),
            nostreams=entry.get("nostreams"),
            symbolicname=str(entry.get("symbolicname") or ""),
        )


@dataclass(frozen=True)
class StorageConfig:
    """A storage element's caps as FTS3's ``/config/se`` holds them (None: unset, the ``*`` row's applies)."""

    storage: str
    inbound_max_active: int | None = None
    outbound_max_active: int | None = None

    def body(self) -> dict[str, Any]:
        """The ``POST /config/se`` body; FTS3 skips null values there, so an unset cap stays as it is."""
        caps = {
            "inbound_max_active": self.inbound_max_active,
            "outbound_max_active": self.outbound_max_active,
        }
        return {self.storage: {"se_info": caps}}

    @classmethod
    def from_fts3(cls, storage: str, entry: dict[str, Any]) -> StorageConfig:
        info = entry.get("se_info") or {}
        return cls(storage, info.get("inbound_max_active"), info.get("outbound_max_active"))


class TransfertoolError(RuntimeError):
    """The transfertool refused or failed a request."""


class Transfertool(abc.ABC):
    """Submit, query and cancel transfer jobs."""

    @abc.abstractmethod
    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        """Submit one job; return its id."""

    @abc.abstractmethod
    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        """The state of each job (FTS3 names)."""

    @abc.abstractmethod
    def cancel(self, job_id: str) -> None:
        """Cancel a job's unfinished files."""

    @abc.abstractmethod
    def update_priority(self, job_id: str, priority: int) -> None:
        """Change the priority (1-5) of a job that is not over (FTS3's POST /jobs/{id})."""

    @abc.abstractmethod
    def failure_reasons(self, job_ids: Sequence[str]) -> dict[str, list[str]]:
        """The distinct non-empty reasons of each known job's files (empty for a job whose files say
        nothing); unknown ids are left out."""

    def file_spans(self, job_ids: Sequence[str]) -> dict[str, list[FileSpan]]:
        """Each known job's files: finished or not, bytes, start and end (the lane measurements of jobs
        the platform only polls). A tool that cannot tell returns nothing; the embedded service records its
        jobs itself through the ``job_finished`` signal."""
        return {}

    # The service's configuration, as FTS3's /config API holds it: the way a scheduler enforces its plan
    # (a real FTS3 obeys it unchanged).

    @abc.abstractmethod
    def storage_element(self, url: str) -> str:
        """The storage element ``url`` belongs to, as the service names links and storage limits."""

    @abc.abstractmethod
    def set_link_config(self, link: LinkConfig) -> LinkConfig:
        """Create or change a link's limits (``POST /config/links``); the link as the service now holds
        it. TransfertoolError, with the service's reason naming the field, if it refuses."""

    @abc.abstractmethod
    def link_configs(self) -> list[LinkConfig]:
        """Every configured link (``GET /config/links``)."""

    @abc.abstractmethod
    def delete_link_config(self, symbolicname: str) -> None:
        """Remove a link's configuration (``DELETE /config/links/{name}``; an unknown name is no error)."""

    @abc.abstractmethod
    def set_storage_config(self, storage: StorageConfig) -> None:
        """Set a storage element's caps (``POST /config/se``); TransfertoolError if the service refuses."""

    @abc.abstractmethod
    def storage_configs(self) -> list[StorageConfig]:
        """Every storage element with caps (``GET /config/se``)."""

    @abc.abstractmethod
    def delete_storage_config(self, storage: str) -> None:
        """Remove a storage element's caps (``DELETE /config/se?se=...``)."""

    @abc.abstractmethod
    def set_activity_shares(self, shares: Mapping[str, float]) -> None:
        """Replace the activity shares of the tool's VO (``POST /config/activity_shares``)."""

    @abc.abstractmethod
    def activity_shares(self) -> dict[str, float]:
        """The activity shares of the tool's VO in force (empty: none)."""

    @abc.abstractmethod
    def delete_activity_shares(self) -> None:
        """Stop sharing by activity (``DELETE /config/activity_shares/{vo}``; none is no error)."""


class EmbeddedTransfertool(Transfertool):
    """The platform's own transfer service, called in-process."""

    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        from django.core.exceptions import ValidationError

        from transfers.choices import JobType
        from transfers.services import FileRequest, submit_job

        try:
            job = submit_job(
                files=[
                    FileRequest(
                        source=f.source,
                        destination=f.destination,
                        filesize=f.filesize,
                        checksum=f.checksum,
                        metadata=f.metadata,
                    )
                    for f in files
                ],
                priority=params.priority,
                activity=params.activity,
                verify_checksum=params.verify_checksum,
                overwrite=params.overwrite,
                retry=params.retry,
                metadata=params.metadata,
                internal_params={"nostreams": params.streams} if params.streams else None,
                job_type=JobType.MULTIHOP if params.multihop else JobType.NORMAL,
            )
        except ValidationError as exc:
            raise TransfertoolError(f"submission refused: {exc.message_dict}") from exc
        return str(job.job_id)

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        from transfers.models import TransferJob

        return {
            str(j): s
            for j, s in TransferJob.objects.filter(job_id__in=_uuids(job_ids)).values_list("job_id", "state")
        }

    def cancel(self, job_id: str) -> None:
        from django.core.exceptions import ValidationError

        from transfers.models import TransferJob
        from transfers.services import cancel_job

        try:
            cancel_job(TransferJob.objects.get(job_id=job_id))
        except (TransferJob.DoesNotExist, ValidationError) as exc:
            raise TransfertoolError(f"cancel failed: no job {job_id}") from exc

    def update_priority(self, job_id: str, priority: int) -> None:
        from django.core.exceptions import ValidationError

        from transfers.models import TransferJob
        from transfers.services import update_priority

        try:
            update_priority(TransferJob.objects.get(job_id=job_id), priority)
        except (TransferJob.DoesNotExist, ValidationError) as exc:
            raise TransfertoolError(f"priority change refused for {job_id}: {exc}") from exc

    def failure_reasons(self, job_ids: Sequence[str]) -> dict[str, list[str]]:
        from transfers.models import TransferFile, TransferJob

        ids = _uuids(job_ids)
        out: dict[str, set[str]] = {
            str(j): set() for j in TransferJob.objects.filter(job_id__in=ids).values_list("job_id", flat=True)
        }
        rows = TransferFile.objects.filter(job__job_id__in=ids).exclude(reason="")
        for job_id, reason in rows.values_list("job__job_id", "reason"):
            out[str(job_id)].add(reason)
        return {k: sorted(v) for k, v in out.items()}

    def storage_element(self, url: str) -> str:
        from transfers.storage_urls import storage_element

        return storage_element(url)

    def set_link_config(self, link: LinkConfig) -> LinkConfig:
        from transfers.fts3.config import links
        from transfers.fts3.config.fields import ConfigError

        try:
            return LinkConfig.from_fts3(links.link_dict(links.set_link_config(link.body())))
        except ConfigError as exc:
            raise TransfertoolError(f"link configuration refused: {exc}") from exc

    def link_configs(self) -> list[LinkConfig]:
        from transfers.fts3.config import links

        return [LinkConfig.from_fts3(links.link_dict(row)) for row in links.link_configs()]

    def delete_link_config(self, symbolicname: str) -> None:
        from transfers.fts3.config import links

        links.delete_link_config(symbolicname)

    def set_storage_config(self, storage: StorageConfig) -> None:
        from transfers.fts3.config import storage as se
        from transfers.fts3.config.fields import ConfigError

        try:
            se.set_se_config(storage.body())
        except ConfigError as exc:
            raise TransfertoolError(f"storage configuration refused: {exc}") from exc

    def storage_configs(self) -> list[StorageConfig]:
        from transfers.fts3.config import storage as se

        return [StorageConfig.from_fts3(name, entry) for name, entry in se.se_configs().items()]

    def delete_storage_config(self, storage: str) -> None:
        from transfers.fts3.config import storage as se
        from transfers.fts3.config.fields import ConfigError

        try:
            se.delete_se_config(storage)
        except ConfigError as exc:
            raise TransfertoolError(f"storage configuration refused: {exc}") from exc

    def set_activity_shares(self, shares: Mapping[str, float]) -> None:
        from transfers.fts3.config import shares as config
        from transfers.fts3.config.fields import ConfigError

        try:
            config.set_activity_shares({"vo": config.service_vo(), "share": dict(shares), "active": True})
        except ConfigError as exc:
            raise TransfertoolError(f"activity shares refused: {exc}") from exc

    def activity_shares(self) -> dict[str, float]:
        from transfers.fts3.config import shares as config

        return dict(config.shares_dict())

    def delete_activity_shares(self) -> None:
        from transfers.fts3.config import shares as config
        from transfers.fts3.config.fields import ConfigError

        with contextlib.suppress(ConfigError):  # none to delete: no error, as with the other deletions
            config.delete_activity_shares(config.service_vo())


def _uuids(job_ids: Sequence[str]) -> list[uuid.UUID]:
    """The ids that can be job ids (anything else is simply unknown, as FTS3 answers)."""
    out = []
    for text in job_ids:
        try:
            out.append(uuid.UUID(str(text)))
        except ValueError:
            continue
    return out


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

    from .fts3_transfertool import Fts3Transfertool

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

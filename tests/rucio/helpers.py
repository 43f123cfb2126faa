"""Helpers of the Rucio tests: the reference topology's endpoints pointed at loopback, products, waiting
(bounded) for what Rucio's daemons and the platform's follower do, and what their copies carried."""

from __future__ import annotations

import zlib
from pathlib import Path

from localnet.issuer import TRANSFER_CLIENT
from localnet.issuer_rucio import RucioClient
from localnet.xrootd import LocalSite
from replicas.models import DataProduct
from replicas.rucio import RucioAdapter
from replicas.services import FileSpec, register_product
from topology.models import StorageEndpoint, Telescope
from topology.services.storage_urls import StorageRegistry
from transfers.models import TransferFile
from transfers.submitted_tokens import unseal

from ..conftest import wait_until
from ..forgeries import claims
from ..integration.conftest import put_file, unique

# The three endpoints the integration tests run real XRootD servers for.
SITES = ("SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK")


def endpoints(names: tuple[str, ...] = SITES) -> list[StorageEndpoint]:
    return list(StorageEndpoint.objects.filter(name__in=names).select_related("site").order_by("name"))


def point_at_loopback(ports: dict[str, tuple[int, int]] | None = None) -> list[StorageEndpoint]:
    """Endpoints with host 127.0.0.1 (and the given root/http ports, else made-up ones)."""
    for index, name in enumerate(SITES):
        root_port, http_port = (ports or {}).get(name, (31094 + index, 38001 + index))
        StorageEndpoint.objects.filter(name=name).update(
            hostname="127.0.0.1", root_port=root_port, http_port=http_port
        )
    return endpoints()


def adler32(data: bytes) -> str:
    return f"{zlib.adler32(data) & 0xFFFFFFFF:08x}"


def make_product(scope: str, name: str = "obs-0001", files: int = 2, size: int = 1024) -> DataProduct:
    specs = [
        FileSpec(name=f"vis-{i}.ms", size_bytes=size, adler32=adler32(bytes([i]) * size))
        for i in range(files)
    ]
    return register_product(
        scope=scope, name=name, telescope=Telescope.objects.get(name="SKA1-Low"), files=specs, priority=4
    )


def product_on_disk(
    sites: dict[str, LocalSite], scope: str, files: dict[str, int], *, missing: tuple[str, ...] = ()
) -> DataProduct:
    """A product whose files (random bytes of the given sizes) lie on the local SKA1-LOW_SDP site, except
    those in ``missing``: registered with a made-up checksum, never written."""
    name = unique("obs")
    specs = []
    for fname, size in files.items():
        relative = f"{scope}/{name}/{fname}"
        if fname in missing:
            specs.append(FileSpec(fname, size, "0badc0de"))
        else:
            specs.append(FileSpec(fname, size, put_file(sites["SKA1-LOW_SDP"], relative, size)))
    return register_product(
        scope=scope, name=name, telescope=Telescope.objects.get(name="SKA1-Low"), files=specs, priority=3
    )


def rule_outcome(rucio: RucioAdapter, rule_id: str, *, timeout: float) -> str:
    """The state a rule reaches once it leaves REPLICATING (its daemons at work), within ``timeout``."""

    def settled() -> str | None:
        state = rucio.rule(rule_id).state
        return None if state == "REPLICATING" else state

    return str(
        wait_until(settled, timeout=timeout, interval=0.5, what=f"rule {rule_id} to leave REPLICATING")
    )


def followed(product: DataProduct, state: str, *, timeout: float = 60) -> DataProduct:
    """Wait until the platform's follower (the worker's beat) has brought the product to ``state``."""

    def reached() -> DataProduct | None:
        product.refresh_from_db()
        return product if product.state == state else None

    return wait_until(reached, timeout=timeout, what=f"{product.did} to be {state} in the platform")  # type: ignore[no-any-return]


def rule_diagnosis(
    rucio: RucioAdapter, rule_id: str, files: list[tuple[str, str]], rse: str, logs: Path
) -> str:
    """What a test that timed out waiting for a rule prints: the rule and its locks, each file's transfer
    request at ``rse`` (state, FTS3 job, error), and the daemons' log lines naming the files' scope, so a
    time-out says which daemon stopped short (the CI machine's state is gone by the time anyone reads it)."""
    lines = [f"rule {rule_id}: {rucio.rule(rule_id)}"]
    for scope, name in files:
        for lookup in (rucio.client.list_request_by_did, rucio.client.list_request_history_by_did):
            try:
                request = lookup(name, rse, scope=scope)
            except Exception as exc:  # a diagnosis reports what it could not read
                lines.append(f"{scope}:{name} {lookup.__name__}: {exc}")
                continue
            keys = ("state", "external_id", "external_host", "err_msg", "retry_count", "updated_at")
            lines.append(f"{scope}:{name} {lookup.__name__}: { ({k: request.get(k) for k in keys}) }")
    scopes = {scope for scope, _ in files}
    for log in sorted(logs.glob("*.log")):
        text = log.read_text(errors="replace").splitlines()
        hits = [ln for ln in text if any(s in ln for s in scopes)]
        if log.name.startswith("rucio-"):  # the daemons' own complaints, whatever they name
            hits += [ln for ln in text[-400:] if "ERROR" in ln or "WARN" in ln]
        if hits:
            lines.append(f"--- {log.name}")
            lines.extend(hits[-25:])
    return "\n".join(lines)


def assert_copied_with_rucios_tokens(scope: str, client: RucioClient, copies: int) -> None:
    """Rucio's conveyor asked its issuer for the tokens, as it does of SKA-IAM: each of its ``copies`` copies
    of ``scope`` went over davs:// in a job it submitted with its own issuer token (the FTS3 endpoint shows
    the token's subject as the job's DN), each end with a storage token of Rucio's (the subject its own),
    kept managed: exchanged (RFC 8693) for a token of the service's client, with the storage's own audience
    and the storage rights Rucio asked for."""
    files = list(
        TransferFile.objects.filter(metadata__scope=scope).select_related(
            "job", "source_token", "destination_token"
        )
    )
    assert len(files) == copies, [(f.source_surl, f.dest_surl) for f in files]
    for row in files:
        assert row.source_surl.startswith("davs://") and row.dest_surl.startswith("davs://")
        assert row.job.metadata.get("auth_method") == "oauth2", row.job.metadata
        assert row.job.user_dn == client.subject
        for role, url, rights in (
            ("source", row.source_surl, {"storage.read:/"}),
            ("destination", row.dest_surl, {"storage.modify:/", "storage.read:/"}),
        ):
            kept = getattr(row, f"{role}_token")
            assert kept is not None and kept.managed, (role, url)
            endpoint = StorageRegistry.load().resolve(url)
            assert kept.audience == endpoint.audience != endpoint.hostname
            assert set(kept.scope.split()) == rights, kept.scope
            exchanged = claims(unseal(kept.sealed_value))
            assert exchanged["sub"] == client.subject and exchanged["azp"] == TRANSFER_CLIENT

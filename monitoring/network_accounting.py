"""Network accounting: the flows the sites' fireflies report, read from the firefly collector's journal
(``GET /flows``), matched to the copies that made them, and so to their lanes, policies and rules.

XRootD marks each connection at the storage (Debian's 5.5.3 with the experiment only: activity 0), so a
flow says which storage endpoint served it (its address and port), when, and how many bytes; not which
file. The copies of the platform's transfer service say which endpoints they used and when. A flow is
matched to the copies whose attempts used its endpoint while it was open (a few seconds' slack for the
two clocks); the peer's address narrows them where it is another known endpoint (not on loopback, where
every site shares 127.0.0.1). A flow that more than one copy could have carried is shared among them by
their sizes, and counted as shared: its split is an estimate. A flow no copy explains is kept against its
endpoint. docs/network.md, "Network accounting"."""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import requests
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from replicas.models import CopyRequest, Replica
from rules.models import Rule
from topology.models import StorageEndpoint
from topology.services.storage_urls import storage_elements
from transfers.models import TransferAttempt, TransferFile

from .models import FireflyCursor, FlowTraffic

log = logging.getLogger(__name__)

CLOCK_SLACK = dt.timedelta(seconds=5)
PAGE = 1000
MOST_PAGES = 50  # per run: a backlog drains over several runs, each bounded


class CollectorUnreachable(RuntimeError):
    """The collector did not answer as a journal does."""


@dataclass(frozen=True)
class EndedFlow:
    """One journal record, as the accounting reads it."""

    src_ip: str
    src_port: int
    dst_ip: str
    dst_port: int
    experiment: int
    bytes: int
    start: dt.datetime
    end: dt.datetime

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> EndedFlow:
        start = dt.datetime.fromisoformat(str(doc["start_time"]))
        end = dt.datetime.fromisoformat(str(doc.get("end_time") or doc["start_time"]))
        return cls(
            src_ip=str(ipaddress.ip_address(doc["src_ip"])),
            src_port=int(doc["src_port"]),
            dst_ip=str(ipaddress.ip_address(doc["dst_ip"])),
            dst_port=int(doc["dst_port"]),
            experiment=int(doc["experiment"]),
            bytes=max(0, int(doc.get("received_bytes") or 0)) + max(0, int(doc.get("sent_bytes") or 0)),
            start=start,
            end=max(end, start),
        )


@dataclass
class EndpointIndex:
    """The platform's storage endpoints by (address, port) and by storage element."""

    by_address: dict[tuple[str, int], StorageEndpoint] = field(default_factory=dict)
    by_element: dict[str, StorageEndpoint] = field(default_factory=dict)
    hosts: dict[str, set[int]] = field(default_factory=dict)  # address -> endpoint ids there

    @classmethod
    def build(cls, endpoints: Iterable[StorageEndpoint]) -> EndpointIndex:
        index = cls()
        resolved: dict[str, list[str]] = {}
        for endpoint in endpoints:
            host = endpoint.hostname
            if host not in resolved:
                resolved[host] = _addresses(host)
            for element in storage_elements(endpoint):
                index.by_element.setdefault(element, endpoint)
            for address in resolved[host]:
                index.hosts.setdefault(address, set()).add(endpoint.pk)
                for port in (endpoint.root_port, endpoint.http_port):
                    index.by_address.setdefault((address, port), endpoint)
        return index

    def server_of(self, flow: EndedFlow) -> tuple[StorageEndpoint, str] | None:
        """The endpoint that served the flow and the peer's address (either side may be the server)."""
        served = self.by_address.get((flow.src_ip, flow.src_port))
        if served is not None:
            return served, flow.dst_ip
        served = self.by_address.get((flow.dst_ip, flow.dst_port))
        if served is not None:
            return served, flow.src_ip
        return None


def _addresses(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return []
    return sorted({str(ipaddress.ip_address(str(info[4][0]).split("%")[0])) for info in infos})


@dataclass
class Share:
    """What one flow gives one copy (or its endpoint)."""

    key: str
    bytes: int
    shared: bool
    file: TransferFile | None = None
    endpoint: StorageEndpoint | None = None


def candidates(
    flow: EndedFlow, served: StorageEndpoint, peer: str, index: EndpointIndex
) -> list[TransferFile]:
    """The copies whose attempts used ``served`` while the flow was open (narrowed by the peer's address
    when that is another known endpoint's and some candidate's other end is there)."""
    elements = storage_elements(served)
    attempts = (
        TransferAttempt.objects.filter(
            Q(file__source_se__in=elements) | Q(file__dest_se__in=elements),
            started__lte=flow.end + CLOCK_SLACK,
        )
        .filter(Q(finished__isnull=True) | Q(finished__gte=flow.start - CLOCK_SLACK))
        .select_related("file__job")
    )
    files = {a.file_id: a.file for a in attempts}
    found = sorted(files.values(), key=lambda f: f.pk)
    peer_endpoints = index.hosts.get(peer, set()) - {served.pk}
    if peer_endpoints and len(found) > 1:

        def other_end(f: TransferFile) -> StorageEndpoint | None:
            element = f.dest_se if index.by_element.get(f.source_se) == served else f.source_se
            return index.by_element.get(element)

        narrowed = [f for f in found if (e := other_end(f)) is not None and e.pk in peer_endpoints]
        if narrowed:
            return narrowed
    return found


def shares(flow: EndedFlow, index: EndpointIndex) -> list[Share] | None:
    """How the flow's bytes divide among the copies it served; None when no known endpoint reported it."""
    served = index.server_of(flow)
    if served is None:
        return None
    endpoint, peer = served
    files = candidates(flow, endpoint, peer, index)
    if not files:
        return [Share(f"endpoint:{endpoint.name}", flow.bytes, False, endpoint=endpoint)]
    weights = [max(1, f.filesize or 0) for f in files]
    total = sum(weights)
    out = []
    given = 0
    for position, (f, weight) in enumerate(zip(files, weights, strict=True)):
        part = flow.bytes - given if position == len(files) - 1 else flow.bytes * weight // total
        given += part
        out.append(Share(f"file:{f.pk}", part, len(files) > 1, file=f))
    return out


def _owner(f: TransferFile, index: EndpointIndex) -> dict[str, Any]:
    """The lane, activity, policy and rule of a copy."""
    source = index.by_element.get(f.source_se)
    destination = index.by_element.get(f.dest_se)
    owner: dict[str, Any] = {
        "source_site": source.site.name if source else "",
        "destination_site": destination.site.name if destination else "",
        "activity": f.activity,
        "rule": None,
        "policy": None,
    }
    replica, did = _replica_of(f)
    if replica is not None:
        owner["policy"] = replica.policy
        owner["rule"] = replica.rules.order_by("created", "pk").first()
    if owner["rule"] is None and did and destination is not None:
        # Rucio mode: the scientist's rule whose Rucio rules placed this product there.
        owner["rule"] = (
            Rule.objects.filter(rucio_rules__has_key=did, destinations__contains=[destination.name])
            .order_by("created", "pk")
            .first()
        )
    return owner


def _replica_of(f: TransferFile) -> tuple[Replica | None, str]:
    """The replica a copy makes, and its product's DID: from the push loop's copy request for the job, or
    from the file metadata Rucio's conveyor sends (``scope``, ``name`` ``<product>/<file>``, ``dst_rse``)."""
    request = (
        CopyRequest.objects.filter(job_id=str(f.job.job_id))
        .select_related("replica__policy", "product")
        .first()
    )
    if request is not None:
        return request.replica, request.product.did
    meta = f.metadata or {}
    scope, name, rse = meta.get("scope"), meta.get("name"), meta.get("dst_rse")
    if not (isinstance(scope, str) and isinstance(name, str) and "/" in name and isinstance(rse, str)):
        return None, ""
    product = name.split("/", 1)[0]
    replica = (
        Replica.objects.filter(product__scope=scope, product__name=product, endpoint__name=rse)
        .select_related("policy")
        .first()
    )
    return replica, f"{scope}:{product}"


def record(flow: EndedFlow, parts: list[Share], index: EndpointIndex) -> None:
    """Add the flow's shares to their rows (inside the caller's transaction)."""
    for part in parts:
        updated = FlowTraffic.objects.filter(key=part.key).update(
            flows=F("flows") + 1,
            shared_flows=F("shared_flows") + int(part.shared),
            bytes=F("bytes") + part.bytes,
            last_seen=flow.end,
        )
        if updated:
            continue
        fields: dict[str, Any] = {"experiment": flow.experiment}
        if part.file is not None:
            fields.update(_owner(part.file, index), file=part.file)
        elif part.endpoint is not None:
            fields.update(endpoint=part.endpoint, source_site=part.endpoint.site.name)
        FlowTraffic.objects.create(
            key=part.key,
            flows=1,
            shared_flows=int(part.shared),
            bytes=part.bytes,
            first_seen=flow.start,
            last_seen=flow.end,
            **fields,
        )


def collector_url() -> str:
    return str(settings.SRCNET_FIREFLIES["URL"] or "").rstrip("/")


@dataclass
class AccountingRun:
    read: int = 0
    matched: int = 0
    unmatched: int = 0
    missed: int = 0
    malformed: int = 0


def account_flows(url: str | None = None, *, timeout: float = 10.0) -> AccountingRun:
    """Read what the collector's journal holds past this platform's cursor and attribute it. A collector
    that restarted (a new epoch) is read from its start. Each page is one transaction with the cursor, so
    a flow is counted once even when two runs overlap (the cursor row is locked)."""
    url = (url or collector_url()).rstrip("/")
    if not url:
        raise CollectorUnreachable("no collector configured (SRCNET_FIREFLIES_URL)")
    run = AccountingRun()
    index = EndpointIndex.build(StorageEndpoint.objects.select_related("site"))
    for _ in range(MOST_PAGES):
        with transaction.atomic():
            cursor, _ = FireflyCursor.objects.select_for_update().get_or_create(url=url)
            page = _fetch(url, cursor.after, timeout)
            if page["epoch"] != cursor.epoch:
                if cursor.epoch:
                    log.info("the firefly collector at %s restarted: reading its journal from the start", url)
                cursor.epoch, cursor.after = page["epoch"], 0
                page = _fetch(url, 0, timeout)
            flows = page["flows"]
            unmatched = 0
            for doc in flows:
                try:
                    flow = EndedFlow.from_document(doc)
                except (KeyError, TypeError, ValueError):
                    run.malformed += 1
                    continue
                parts = shares(flow, index)
                if parts is None:
                    unmatched += 1
                    continue
                record(flow, parts, index)
                run.matched += 1
            run.read += len(flows)
            run.unmatched += unmatched
            run.missed += int(page["missed"])
            cursor.after = int(page["next_after"])
            cursor.missed += int(page["missed"])
            cursor.unmatched += unmatched
            cursor.save()
        if len(flows) < PAGE:
            break
    return run


def _fetch(url: str, after: int, timeout: float) -> dict[str, Any]:
    token = settings.SRCNET_FIREFLIES["TOKEN"]
    try:
        response = requests.get(
            f"{url}/flows",
            params={"after": after, "limit": PAGE},
            headers={"Authorization": f"Bearer {token}"} if token else {},
            verify=settings.SRCNET_FIREFLIES["CA_FILE"] or True,
            timeout=timeout,
        )
        response.raise_for_status()
        page = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise CollectorUnreachable(f"the firefly collector at {url}: {exc}") from exc
    if not isinstance(page, dict) or not {"epoch", "flows", "next_after", "missed"} <= page.keys():
        raise CollectorUnreachable(f"the firefly collector at {url} answered something that is not a journal")
    return page

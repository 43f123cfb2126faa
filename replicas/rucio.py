"""The platform's adapter to Rucio: the only module that imports the Rucio client.

It speaks the project's own types (``StorageEndpoint``, ``DataProduct``, ``Replica``) and raises only
:class:`RucioAdapterError`. The mapping (see docs/rucio.md):

* a storage endpoint is a deterministic DISK RSE of the same name, with a ``root`` and a ``davs`` protocol
  (the endpoint's host, ports and prefix; its TPC scheme preferred), attributes ``fts`` (the FTS3 endpoint),
  ``supported_checksums=adler32``, ``verify_checksum=True``, ``lfn2pfn_algorithm=identity`` and the site's
  ``site``/``country``/``region``/``role``, with a token issuer also ``oidc_support`` and
  ``oidc_base_path`` (the endpoint's prefix), and an account limit (its capacity, unlimited when unset);
* a VRF path (a network path with a ``vrf``) between two endpoints' sites is a Rucio distance in the path's
  direction (``replicas.rucio_sync.distance_from_path``); no VRF path, no distance row;
* a data product is a dataset ``<scope>:<product>`` with one file DID ``<scope>:<product>/<file>`` per file
  (bytes, adler32), registered with a replica at the product's SDP RSE in one server-side transaction;
* a placement is one replication rule on the dataset: copies, RSE expression, activity, priority,
  lifetime, source expression; its per-RSE lock states give the replicas' states;
* rules others created on a product's dataset are picked up as replicas too, with a reason naming the rule;
  ``follow_rules`` does that for every product whose rules changed (the periodic
  ``replicas.follow_rucio_rules`` task and ``manage.py rucio_sync``).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rucio.client import Client
from rucio.common import exception as rucio_exc

from topology.models import NetworkPath, StorageEndpoint
from topology.services.storage_urls import MOCK_SCHEME

from . import lifecycle
from .choices import ProductState, ReplicaState
from .models import DataProduct, Replica, ReplicaPolicy
from .rucio_access import dataset_access_meta
from .rucio_metadata import ensure_datatype
from .rucio_mirrored import already_mirrored
from .rucio_record import record_rules
from .rucio_sync import (
    DEFAULT_ACTIVITY,
    RULE_COMMENT_PREFIX,
    NamingError,
    PathMetrics,
    check_did_name,
    check_rse_name,
    check_scope,
    dataset_meta,
    distance_table,
    domains_equal,
    file_did_name,
    protocol_domains,
    rse_expression,
)
from .rucio_types import (
    DistanceSync,
    FollowReport,
    ProductDids,
    RseSync,
    RucioAdapterError,
    RucioConfig,
    RuleInfo,
)

log = logging.getLogger(__name__)

ROOT_IMPL = "rucio.rse.protocols.xrootd.Default"
DAVS_IMPL = "rucio.rse.protocols.gfal.Default"
# A mock endpoint's one protocol (the load benchmark's, transfers/mock_storage.py): Rucio's conveyor hands
# its mock:// URLs to the FTS3 endpoint as any other (Rucio's FTS3 transfertool supports the scheme).
MOCK_IMPL = "rucio.rse.protocols.mock.Default"


# The RSE attributes by which Rucio's conveyor hands the copies of an RSE tokens (rucio.core.rse).
TOKEN_ATTRIBUTES = ("oidc_support", "oidc_base_path")


def token_attributes(endpoint: StorageEndpoint) -> dict[str, Any]:
    """``oidc_support`` and ``oidc_base_path`` when the platform's storage takes tokens (a token issuer is
    configured): Rucio then asks its issuer, for each copy over davs://, a token per end for the RSE's
    whole prefix below the base path (the endpoint's prefix, the path the site's token configuration
    maps to ``/``), with the RSE's host name as audience. None otherwise: Rucio sends no tokens."""
    from django.conf import settings

    if not (getattr(settings, "SRCNET_TOKENS", {}) or {}).get("ISSUER"):
        return {}
    base = endpoint.prefix.rstrip("/")
    return {"oidc_support": True, **({"oidc_base_path": base} if base else {})}


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    # Rucio's messages start with a generic class sentence; keep the detail.
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class RucioAdapter:
    """Talks to one Rucio server for the platform."""

    def __init__(self, config: RucioConfig, *, client: Client | None = None) -> None:
        self.config = config
        self._client = client

    @classmethod
    def from_env(cls) -> RucioAdapter:
        return cls(RucioConfig.from_env())

    # -- plumbing -------------------------------------------------------------------------------------

    @property
    def client(self) -> Client:
        if self._client is None:
            cfg = self.config
            creds: dict[str, Any] = {}
            if cfg.auth_type == "userpass":
                creds = {"username": cfg.username, "password": cfg.password}
            elif cfg.auth_type == "x509":
                creds = {"client_cert": cfg.client_cert, "client_key": cfg.client_key}
            with self._errors(f"cannot log in to Rucio at {cfg.url} as {cfg.account}"):
                self._client = Client(
                    rucio_host=cfg.url,
                    auth_host=cfg.auth_url or cfg.url,
                    account=cfg.account,
                    auth_type=cfg.auth_type,
                    creds=creds,
                    ca_cert=cfg.ca_cert,
                    vo=cfg.vo,
                    timeout=60,
                )
        return self._client

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except RucioAdapterError:
            raise
        except NamingError as exc:
            raise RucioAdapterError(f"{doing}: {exc}") from exc
        except rucio_exc.RucioException as exc:
            raise RucioAdapterError(f"{doing}: {_describe(exc)}") from exc
        except OSError as exc:
            raise RucioAdapterError(f"{doing}: {exc}") from exc

    def ping(self) -> str:
        with self._errors(f"Rucio at {self.config.url} does not answer"):
            return str(self.client.ping()["version"])

    def account_exists(self, name: str) -> bool:
        try:
            self.client.get_account(name)
        except rucio_exc.AccountNotFound:
            return False
        return True

    def rse_exists(self, name: str) -> bool:
        try:
            self.client.get_rse(name)
        except rucio_exc.RSENotFound:
            return False
        except rucio_exc.RucioException as exc:
            raise RucioAdapterError(f"cannot look up RSE {name}: {_describe(exc)}") from exc
        return True

    def _require_rse(self, name: str) -> None:
        if not self.rse_exists(name):
            raise RucioAdapterError(
                f"RSE {name!r} is unknown to Rucio at {self.config.url}: sync the storage endpoints first"
            )

    # -- storage endpoints -> RSEs --------------------------------------------------------------------

    def sync_endpoint(
        self, endpoint: StorageEndpoint, *, fts_url: str, account_limit_accounts: Sequence[str] = ()
    ) -> RseSync:
        """Create or update the RSE of ``endpoint`` so that it matches the endpoint exactly."""
        name = endpoint.name
        with self._errors(f"cannot sync RSE {name}"):
            check_rse_name(name)
            if not fts_url:
                raise RucioAdapterError(f"cannot sync RSE {name}: no FTS3 endpoint URL given")
            site = endpoint.site
            created = not self.rse_exists(name)
            if created:
                self.client.add_rse(
                    name,
                    deterministic=True,
                    volatile=False,
                    rse_type="DISK",
                    country_name=site.country,
                    latitude=site.latitude,
                    longitude=site.longitude,
                )
            self._sync_protocols(endpoint)
            attributes = {
                "fts": fts_url,
                "supported_checksums": "adler32",
                "verify_checksum": True,
                "lfn2pfn_algorithm": "identity",
                "site": site.name,
                "country": site.country,
                "region": site.region,
                "role": endpoint.role,
            }
            attributes.update(token_attributes(endpoint))
            current = self.client.list_rse_attributes(name)
            for key, value in attributes.items():
                if str(current.get(key)) != str(value):
                    self.client.add_rse_attribute(name, key, value)
            for key in TOKEN_ATTRIBUTES:
                if key in current and key not in attributes:
                    self.client.delete_rse_attribute(name, key)
            limit = int(endpoint.capacity_bytes) if endpoint.capacity_bytes else -1
            for account in {self.config.account, *account_limit_accounts}:
                self.client.set_local_account_limit(account, name, limit)
        return RseSync(
            name=name,
            created=created,
            protocols=tuple(self._wanted_protocols(endpoint)),
            attributes={k: str(v) for k, v in attributes.items()},
        )

    @staticmethod
    def _wanted_protocols(endpoint: StorageEndpoint) -> dict[str, dict[str, Any]]:
        """The RSE's protocols: root and davs, the endpoint's own scheme first; a mock endpoint's alone."""
        prefix = "/" + endpoint.prefix.strip("/") + "/"
        preferred = endpoint.tpc_scheme
        if preferred == MOCK_SCHEME:
            return {
                MOCK_SCHEME: {
                    "scheme": MOCK_SCHEME,
                    "hostname": endpoint.hostname,
                    "port": endpoint.http_port,
                    "prefix": prefix,
                    "impl": MOCK_IMPL,
                    "domains": protocol_domains(1),
                }
            }
        return {
            "root": {
                "scheme": "root",
                "hostname": endpoint.hostname,
                "port": endpoint.root_port,
                # root://host:port//srcnet/...: XRootD's absolute-path form, as StorageEndpoint.url builds
                "prefix": "/" + prefix,
                "impl": ROOT_IMPL,
                "domains": protocol_domains(1 if preferred == "root" else 2),
            },
            "davs": {
                "scheme": "davs",
                "hostname": endpoint.hostname,
                "port": endpoint.http_port,
                "prefix": prefix,
                "impl": DAVS_IMPL,
                "domains": protocol_domains(1 if preferred == "davs" else 2),
            },
        }

    def _sync_protocols(self, endpoint: StorageEndpoint) -> None:
        wanted = self._wanted_protocols(endpoint)
        existing = list(self.client.get_rse(endpoint.name).get("protocols") or [])
        for scheme, want in wanted.items():
            have = [p for p in existing if p["scheme"] == scheme]
            same = (
                len(have) == 1
                and all(have[0].get(k) == want[k] for k in ("hostname", "port", "prefix", "impl"))
                and domains_equal(have[0].get("domains", {}), want["domains"])
            )
            if same:
                continue
            if have:
                self.client.delete_protocols(endpoint.name, scheme)
            self.client.add_protocol(endpoint.name, want)
        for proto in existing:
            if proto["scheme"] not in wanted:
                self.client.delete_protocols(endpoint.name, proto["scheme"])

    def sync_endpoints(
        self,
        endpoints: Iterable[StorageEndpoint],
        *,
        fts_url: str,
        account_limit_accounts: Sequence[str] = (),
    ) -> tuple[list[RseSync], DistanceSync]:
        """Sync every endpoint's RSE, then the distances among them from the topology's paths."""
        endpoints = list(endpoints)
        rses = [
            self.sync_endpoint(e, fts_url=fts_url, account_limit_accounts=account_limit_accounts)
            for e in endpoints
        ]
        return rses, self.sync_distances(endpoints)

    def sync_distances(self, endpoints: Iterable[StorageEndpoint]) -> DistanceSync:
        """Make the distances among ``endpoints``' RSEs exactly those the VRF paths give: add or update a
        row for each pair whose sites a network path with a VRF joins (in that direction), delete every
        other row. A path outside any VRF (no routing domain carries it) gives no distance."""
        endpoints = list(endpoints)
        sites = {e.name: e.site_id for e in endpoints}
        site_ids = set(sites.values())
        paths = NetworkPath.objects.filter(
            source_id__in=site_ids, destination_id__in=site_ids, vrf__isnull=False
        )
        wanted = distance_table(
            sites,
            ((p.source_id, p.destination_id, PathMetrics(p.rtt_ms, p.opex_eur_per_year)) for p in paths),
        )
        added, updated, removed = [], [], []
        with self._errors("cannot sync RSE distances"):
            for src in sites:
                for dst in sites:
                    if src == dst:
                        continue
                    rows = self.client.get_distance(src, dst)
                    have = int(rows[0]["distance"]) if rows else None
                    want = wanted.get((src, dst))
                    if want is None and have is not None:
                        self.client.delete_distance(src, dst)
                        removed.append((src, dst))
                    elif want is not None and have is None:
                        self.client.add_distance(src, dst, {"distance": want})
                        added.append((src, dst))
                    elif want is not None and have != want:
                        self.client.update_distance(src, dst, {"distance": want})
                        updated.append((src, dst))
        return DistanceSync(
            distances=wanted, added=tuple(added), updated=tuple(updated), removed=tuple(removed)
        )

    def distance(self, source: str, destination: str) -> int | None:
        with self._errors(f"cannot read the distance {source} -> {destination}"):
            rows = self.client.get_distance(source, destination)
        return int(rows[0]["distance"]) if rows else None

    def rse_protocols(self, name: str) -> list[dict[str, Any]]:
        with self._errors(f"cannot read the protocols of {name}"):
            return list(self.client.get_rse(name).get("protocols") or [])

    def rse_attributes(self, name: str) -> dict[str, Any]:
        with self._errors(f"cannot read the attributes of {name}"):
            return dict(self.client.list_rse_attributes(name))

    def pfn(self, rse: str, scope: str, name: str, scheme: str = "root") -> str:
        """Where Rucio thinks a file DID is on ``rse`` (for checks and for writing the SDP's files)."""
        with self._errors(f"cannot compute the PFN of {scope}:{name} at {rse}"):
            pfns = self.client.lfns2pfns(rse, [f"{scope}:{name}"], scheme=scheme, operation="read")
        return str(next(iter(pfns.values())))

    # -- data products -> DIDs ------------------------------------------------------------------------

    def register_product(self, product: DataProduct) -> ProductDids:
        """The product's dataset and files, with their replicas at its SDP RSE (idempotent).

        Everything is checked first (names, checksums, the SDP RSE); the dataset, its files and their
        replicas are then created by one call, which the server does in one transaction: either all
        exist afterwards or none."""
        scope, dataset = product.scope, product.name
        files = list(product.files.all())
        source = product.source.name
        doing = f"cannot register {scope}:{dataset} in Rucio"
        with self._errors(doing):
            check_scope(scope)
            check_did_name(dataset)
            if not files:
                raise RucioAdapterError(f"{doing}: the product has no files")
            specs: list[dict[str, Any]] = []
            for f in files:
                did = file_did_name(dataset, f.name)
                check_did_name(did)
                if len(f.adler32) != 8 or any(c not in "0123456789abcdef" for c in f.adler32):
                    raise RucioAdapterError(f"{doing}: file {f.name!r} has a bad adler32 {f.adler32!r}")
                specs.append({"scope": scope, "name": did, "bytes": int(f.size_bytes), "adler32": f.adler32})
            self._require_rse(source)
            if self._did_exists(scope, dataset):
                return self._check_registered(product, specs, source)
            self._ensure_scope(scope)
            meta = dataset_meta(product)
            if "datatype" in meta:
                ensure_datatype(self.client, meta["datatype"])
            # Until when the dataset is its project's alone: Rucio's server reads it (the policy package).
            meta.update(dataset_access_meta(product))
            self.client.add_dataset(scope, dataset, files=specs, rse=source, meta=meta)
        return ProductDids(
            scope=scope,
            dataset=dataset,
            files=tuple(str(s["name"]) for s in specs),
            source_rse=source,
            created=True,
        )

    def _did_exists(self, scope: str, name: str) -> bool:
        try:
            self.client.get_did(scope, name)
        except (rucio_exc.DataIdentifierNotFound, rucio_exc.ScopeNotFound):
            return False
        return True

    def _ensure_scope(self, scope: str) -> None:
        with contextlib.suppress(rucio_exc.Duplicate):
            self.client.add_scope(self.config.account, scope)

    def _check_registered(
        self, product: DataProduct, specs: list[dict[str, Any]], source: str
    ) -> ProductDids:
        have = {
            (f["name"], int(f["bytes"]), f["adler32"])
            for f in self.client.list_files(product.scope, product.name)
        }
        want = {(s["name"], s["bytes"], s["adler32"]) for s in specs}
        if have != want:
            missing = sorted(n for n, *_ in want - have)
            unexpected = sorted(n for n, *_ in have - want)
            raise RucioAdapterError(
                f"{product.did} is already registered in Rucio with different files: "
                f"missing {missing}, unexpected {unexpected}"
            )
        self.sync_access(product)
        return ProductDids(
            scope=product.scope,
            dataset=product.name,
            files=tuple(s["name"] for s in specs),
            source_rse=source,
            created=False,
        )

    def sync_access(self, product: DataProduct) -> None:
        """Bring the dataset's proprietary end in Rucio in step with the product's (an operator may have
        changed it, or the dataset was registered before the platform wrote it)."""
        from .rucio_access import access

        want = dataset_access_meta(product).get(access.PROPRIETARY_UNTIL)
        with self._errors(f"cannot keep the proprietary period of {product.did} in Rucio"):
            have = self.client.get_metadata(product.scope, product.name, plugin="JSON").get(
                access.PROPRIETARY_UNTIL
            )
            if want and have != want:
                self.client.set_metadata(product.scope, product.name, access.PROPRIETARY_UNTIL, want)
            elif not want and have:
                self.client.delete_metadata(product.scope, product.name, access.PROPRIETARY_UNTIL)

    def product_replicas(self, product: DataProduct) -> dict[str, dict[str, str]]:
        """File DID -> {RSE: replica state} for every file of the product's dataset."""
        with self._errors(f"cannot list the replicas of {product.did}"):
            dids = [{"scope": product.scope, "name": product.name}]
            out: dict[str, dict[str, str]] = {}
            for rep in self.client.list_replicas(dids, all_states=True):
                out[rep["name"]] = {rse: str(state) for rse, state in rep.get("states", {}).items()}
        return out

    # -- placements -> rules --------------------------------------------------------------------------

    def place_product(
        self,
        product: DataProduct,
        destinations: Sequence[StorageEndpoint],
        *,
        copies: int | None = None,
        activity: str = DEFAULT_ACTIVITY,
        lifetime: int | None = None,
        policy: ReplicaPolicy | None = None,
        source_expression: str | None = None,
    ) -> RuleInfo:
        """One rule placing ``copies`` (default: one per destination) of the product's dataset on the
        destinations, at the product's priority, taking sources from its SDP RSE unless told otherwise.

        The rule is created first; only then are the replicas recorded (COPYING, or what the locks say),
        so a refused rule leaves no replica behind."""
        names = [d.name for d in destinations]
        copies = len(set(names)) if copies is None else copies
        doing = f"cannot place {product.did} on {', '.join(names) or 'nothing'}"
        with self._errors(doing):
            expression = rse_expression(names)
            if not 1 <= copies <= len(set(names)):
                raise RucioAdapterError(f"{doing}: {copies} copies asked of {len(set(names))} destinations")
            if not 1 <= product.priority <= 5:
                raise RucioAdapterError(f"{doing}: priority {product.priority} is outside 1..5")
            for name in sorted(set(names)):
                self._require_rse(name)
            if not self._did_exists(product.scope, product.name):
                raise RucioAdapterError(f"{doing}: {product.did} is not registered in Rucio")
            comment = (
                f"{RULE_COMMENT_PREFIX} policy {policy.name}"
                if policy
                else f"{RULE_COMMENT_PREFIX} placement"
            )
            rule_ids = self.client.add_replication_rule(
                dids=[{"scope": product.scope, "name": product.name}],
                copies=copies,
                rse_expression=expression,
                priority=int(product.priority),
                lifetime=lifetime,
                grouping="DATASET",
                source_replica_expression=source_expression or product.source.name,
                activity=activity,
                comment=comment,
            )
            rule = self.rule(rule_ids[0])
        self._record(product, [rule], policy=policy)
        return rule

    def place_planned(
        self,
        product: DataProduct,
        *,
        activity: str = DEFAULT_ACTIVITY,
        lifetime: int | None = None,
    ) -> RuleInfo:
        """The product's PLANNED first copies (what the platform's policy decided,
        ``services.place_product``) as one rule from its SDP: one copy on each planned destination, under
        the policy that planned them. Copies the policy makes from an SRC (a second or full copy, planned
        with an ``upstream`` replica) are not in it: ``place_waiting_copies`` makes each its own rule
        from the upstream SRC once the upstream replica is there."""
        planned = list(
            product.replicas.filter(state=ReplicaState.PLANNED, upstream__isnull=True)
            .exclude(endpoint_id=product.source_id)
            .select_related("endpoint", "policy")
        )
        if not planned:
            raise RucioAdapterError(f"{product.did} has no planned replica to turn into a rule")
        policies = {r.policy for r in planned}
        policy = policies.pop() if len(policies) == 1 else None
        return self.place_product(
            product, [r.endpoint for r in planned], activity=activity, lifetime=lifetime, policy=policy
        )

    def place_waiting_copies(self, product: DataProduct, *, activity: str = DEFAULT_ACTIVITY) -> int:
        """A rule for each PLANNED copy whose upstream replica is now AVAILABLE, with the upstream RSE as
        its only source (the redistribution the policy asks for: SRC to partner SRC, or to the full-copy
        site, never the SDP again); a copy whose upstream failed fails with it. Returns how many waiting
        copies it settled either way."""
        waiting = list(
            product.replicas.filter(state=ReplicaState.PLANNED, upstream__isnull=False).select_related(
                "endpoint", "policy", "upstream__endpoint"
            )
        )
        settled = 0
        for copy in waiting:
            upstream = copy.upstream
            assert upstream is not None  # the filter's
            if upstream.state == ReplicaState.FAILED:
                settled += lifecycle.fail_if_planned(
                    copy.pk, f"{copy.reason}; not made: its source copy at {upstream.endpoint.name} failed"
                )
            elif upstream.state == ReplicaState.AVAILABLE:
                self.place_product(
                    product,
                    [copy.endpoint],
                    activity=activity,
                    policy=copy.policy,
                    source_expression=upstream.endpoint.name,
                )
                settled += 1
        return settled

    def rule(self, rule_id: str) -> RuleInfo:
        with self._errors(f"cannot read rule {rule_id}"):
            raw = self.client.get_replication_rule(rule_id)
            return self._rule_info(raw)

    def _rule_info(self, raw: dict[str, Any]) -> RuleInfo:
        locks: dict[str, list[str]] = {}
        for lock in self.client.list_replica_locks(raw["id"]):
            locks.setdefault(lock["rse"], []).append(str(lock["state"]))
        return RuleInfo(
            rule_id=raw["id"],
            account=raw["account"],
            rse_expression=raw["rse_expression"],
            copies=int(raw["copies"]),
            activity=raw.get("activity") or "",
            priority=int(raw.get("priority") or 3),
            state=str(raw["state"]),
            comment=raw.get("comments") or raw.get("comment") or "",
            source_replica_expression=raw.get("source_replica_expression"),
            expires_at=raw.get("expires_at"),
            error=raw.get("error"),
            locks=locks,
        )

    def product_rules(self, product: DataProduct) -> list[RuleInfo]:
        """Every rule on the product's dataset, whoever created it (oldest first)."""
        with self._errors(f"cannot list the rules of {product.did}"):
            raws = list(self.client.list_did_rules(product.scope, product.name))
            raws.sort(key=lambda r: (str(r.get("created_at")), r["id"]))
            return [self._rule_info(raw) for raw in raws]

    def transfer_errors(self, rule_id: str) -> dict[str, str]:
        """RSE -> the last transfer error Rucio recorded for the rule's files there (the request's
        ``err_msg``, e.g. the FTS3 reason), else the last request state."""
        with self._errors(f"cannot examine rule {rule_id}"):
            analysis = self.client.examine_replication_rule(rule_id)
            out: dict[str, str] = {}
            for transfer in analysis.get("transfers", []) or []:
                rse = transfer.get("rse", "?")
                if rse in out or not transfer.get("last_error"):
                    continue
                detail = self._request_error(transfer["scope"], transfer["name"], rse)
                out[rse] = f"{transfer['name']}: {detail or transfer['last_error']}"
        if not out and analysis.get("rule_error"):
            out["*"] = str(analysis["rule_error"])
        return out

    def _request_error(self, scope: str, name: str, rse: str) -> str | None:
        for lookup in (self.client.list_request_by_did, self.client.list_request_history_by_did):
            try:
                request = lookup(name, rse, scope=scope)
            except rucio_exc.RucioException:
                continue
            if request and request.get("err_msg"):
                return str(request["err_msg"])
        return None

    def declare_bad(
        self, product: DataProduct, rse: str, file_names: Sequence[str], reason: str
    ) -> list[str]:
        """Declare the product's files ``file_names`` at ``rse`` bad (lost or corrupt there), as Rucio's own
        consistency tools do: its necromancer then marks the replicas and, where another copy exists, its
        rules copy them again. Returns what Rucio refused to declare (``"<did>: <why>"``)."""
        replicas = [
            {"scope": product.scope, "name": file_did_name(product.name, n), "rse": rse} for n in file_names
        ]
        with self._errors(f"cannot declare bad replicas of {product.did} at {rse}"):
            refused = self.client.declare_bad_file_replicas(replicas, reason) or {}
        return [str(entry) for entries in refused.values() for entry in entries]

    def remade_since(self, product: DataProduct, rse: str, since: datetime.datetime) -> bool:
        """Whether Rucio holds every file of the product at ``rse`` AVAILABLE again, at least one of them
        written after ``since`` (when a consistency check marked the platform's replica damaged). Until
        then a rule that still says OK is not evidence: Rucio's necromancer may not yet have seen the
        declaration, or it was refused."""
        # Rucio compares naive UTC to the second; rounding up never counts a write from before ``since``.
        stamp = since.astimezone(datetime.UTC).replace(tzinfo=None, microsecond=0)
        stamp += datetime.timedelta(seconds=1)
        dids = [{"scope": product.scope, "name": product.name}]
        with self._errors(f"cannot list the replicas of {product.did} at {rse}"):
            states = [
                rep.get("states", {}).get(rse)
                for rep in self.client.list_replicas(dids, all_states=True, rse_expression=rse)
            ]
            # Every file listed there (a file whose bad replica Rucio has not yet made again may be missing
            # from the listing), and every one available.
            if len(states) < product.files.count() or any(str(state) != "AVAILABLE" for state in states):
                return False
            fresh = self.client.list_replicas(dids, all_states=True, rse_expression=rse, updated_after=stamp)
            return any(rep.get("states", {}).get(rse) for rep in fresh)

    def sync_product(self, product: DataProduct) -> list[Replica]:
        """Follow every rule on the product (ours and others') into its replicas; returns the replicas
        touched. Rules the platform did not create are picked up with a reason naming the rule."""
        rules = self.product_rules(product)
        touched = self._record(product, rules, policy=None)
        if self.place_waiting_copies(product):
            touched = self._record(product, self.product_rules(product), policy=None)
        return touched

    def rules_changed_since(self, since: datetime.datetime | None) -> list[dict[str, Any]]:
        """Every rule created or changed at or after ``since`` (a rule's ``updated_at`` moves with its state
        and lock counts), as Rucio lists them; every rule when ``since`` is None."""
        filters: dict[str, Any] = {}
        if since is not None:
            stamp = since.astimezone(datetime.UTC).strftime("%a, %d %b %Y %H:%M:%S UTC")  # Rucio's format
            filters["updated_after"] = stamp
        with self._errors("cannot list the rules that changed"):
            return list(self.client.list_replication_rules(filters))

    def follow_rules(
        self, *, since: datetime.datetime | None, products: Iterable[DataProduct] = ()
    ) -> FollowReport:
        """Sync (``sync_product``) every product whose dataset has a rule that changed since ``since``
        (every product with a rule when None) unless its replicas already show what those rules say
        (replicas/rucio_mirrored.py), every product still PLACING that Rucio knows and no listed rule
        names, and ``products``. Rules that scientists created are picked up the same way. A product that
        cannot be synced is reported and the others go on."""
        changed: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for raw in self.rules_changed_since(since):
            changed.setdefault((str(raw["scope"]), str(raw["name"])), []).append(raw)
        by_scope: dict[str, set[str]] = {}
        for scope, name in changed:
            by_scope.setdefault(scope, set()).add(name)
        wanted: dict[int, DataProduct] = {p.pk: p for p in products}
        listed = {
            product.pk: product
            for scope, names in by_scope.items()
            for product in DataProduct.objects.filter(scope=scope, name__in=sorted(names))
        }
        recorded: dict[int, list[tuple[str, str]]] = {}  # product -> (rule id, state) of its rules' replicas
        for product_id, rule_id, state in (
            Replica.objects.filter(product_id__in=list(listed))
            .exclude(rucio_rule="")
            .values_list("product_id", "rucio_rule", "state")
        ):
            recorded.setdefault(product_id, []).append((rule_id, state))
        for pk, product in listed.items():
            rules = changed[(product.scope, product.name)]
            if pk not in wanted and not already_mirrored(rules, recorded.get(pk, [])):
                wanted[pk] = product
        # A catch-up for changes older than ``since`` (e.g. while the workers were down): products still
        # being placed, when Rucio knows them (the embedded push flow places products without Rucio).
        catch_up = DataProduct.objects.filter(state=ProductState.PLACING).exclude(pk__in=[*wanted, *listed])
        for product in catch_up:
            with self._errors(f"cannot look up {product.did}"):
                if self._did_exists(product.scope, product.name):
                    wanted[product.pk] = product
        report = FollowReport()
        for product in sorted(wanted.values(), key=lambda p: p.pk):
            try:
                report.replicas += len(self.sync_product(product))
            except RucioAdapterError as exc:
                report.errors.append(f"{product.did}: {exc}")
                continue
            report.products.append(product.did)
        return report

    def _record(
        self, product: DataProduct, rules: Sequence[RuleInfo], *, policy: ReplicaPolicy | None
    ) -> list[Replica]:
        return record_rules(
            product,
            rules,
            policy=policy,
            transfer_errors=self.transfer_errors,
            remade_since=self.remade_since,
        )

"""The Rucio adapter's own types (replicas/rucio.py): how to reach a server, and what a sync, a
registration and a rule look like to the platform. No Rucio import here."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .choices import ReplicaState
from .rucio_sync import RULE_COMMENT_PREFIX, RULE_STATE_TO_REPLICA


class RucioAdapterError(Exception):
    """Rucio refused or could not do what the platform asked; the message says what and why."""


@dataclass(frozen=True)
class RucioConfig:
    """How to reach a Rucio server. Userpass for the local server; ``x509`` (``client_cert``/``client_key``)
    or any other Rucio auth type with ``creds`` for a production one."""

    url: str
    account: str = "root"
    auth_type: str = "userpass"
    username: str | None = None
    password: str | None = None
    auth_url: str | None = None
    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    vo: str | None = None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> RucioConfig:
        """From ``SRCNET_RUCIO_URL``, ``_ACCOUNT``, ``_AUTH_TYPE``, ``_USERNAME``, ``_PASSWORD``,
        ``_AUTH_URL``, ``_CA_CERT``, ``_CLIENT_CERT``, ``_CLIENT_KEY``, ``_VO``."""
        env = os.environ if environ is None else environ
        url = env.get("SRCNET_RUCIO_URL")
        if not url:
            raise RucioAdapterError("SRCNET_RUCIO_URL is not set: no Rucio server is configured")

        def get(name: str) -> str | None:
            return env.get(f"SRCNET_RUCIO_{name}") or None

        return cls(
            url=url,
            account=get("ACCOUNT") or "root",
            auth_type=get("AUTH_TYPE") or "userpass",
            username=get("USERNAME"),
            password=get("PASSWORD"),
            auth_url=get("AUTH_URL"),
            ca_cert=get("CA_CERT"),
            client_cert=get("CLIENT_CERT"),
            client_key=get("CLIENT_KEY"),
            vo=get("VO"),
        )


@dataclass(frozen=True)
class RseSync:
    """What a sync did to one RSE."""

    name: str
    created: bool
    protocols: tuple[str, ...]
    attributes: dict[str, str]


@dataclass(frozen=True)
class DistanceSync:
    """Distances after a sync: every row that now exists among the synced RSEs, and what changed."""

    distances: dict[tuple[str, str], int]
    added: tuple[tuple[str, str], ...]
    updated: tuple[tuple[str, str], ...]
    removed: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ProductDids:
    """A product as Rucio knows it."""

    scope: str
    dataset: str
    files: tuple[str, ...]
    source_rse: str
    created: bool


@dataclass
class FollowReport:
    """What one ``follow_rules`` round did."""

    products: list[str] = field(default_factory=list)  # DIDs synced
    replicas: int = 0  # replica rows touched
    errors: list[str] = field(default_factory=list)  # one per product that could not be synced


@dataclass(frozen=True)
class RuleInfo:
    """One replication rule on a product's dataset."""

    rule_id: str
    account: str
    rse_expression: str
    copies: int
    activity: str
    priority: int
    state: str
    comment: str
    source_replica_expression: str | None
    expires_at: Any
    error: str | None
    # destination RSE -> states of its locks (one per file)
    locks: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ours(self) -> bool:
        return self.comment.startswith(RULE_COMMENT_PREFIX)

    @property
    def replica_state(self) -> str:
        return RULE_STATE_TO_REPLICA.get(self.state, ReplicaState.PLANNED.value)

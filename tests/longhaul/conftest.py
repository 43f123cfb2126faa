"""The long-haul network as fixtures: three sites of the reference topology (SKA1-Low's SDP, UKSRC, AUSRC),
each in its own namespace behind the packet-level emulator, with the topology's RTTs and loss and the
capacities divided by localnet.longhaul.CAPACITY_SCALE.

- ``long_haul_plan`` (module): what to emulate, computed from the reference topology in a transaction that
  is rolled back (the database stays empty for the tests).
- ``long_haul`` (module): the network with one XRootD server per endpoint in it (``LH-<endpoint>``, so the
  loopback sites of other tests in the same run are left alone); torn down after the module, also when it
  fails.
- ``long_haul_topology`` (function): the reference topology with those three endpoints pointing at the
  sites in the namespaces (as ``bound_topology`` does on loopback), and ``SRCNET_NETWORK_SCALE`` set to
  CAPACITY_SCALE so that the push loop plans on the emulated capacities. Other tests take it to run on
  the long-haul network.

Every test here is bounded (``pytest.mark.timeout``: pytest-timeout raises inside the test, so context
managers and fixtures still clean up)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from localnet import longhaul as lh
from localnet.binding import site_tokens
from localnet.issuer import LocalIssuer
from localnet.longhaul import LongHaul, Plan, plan_network
from localnet.state import StateDir
from localnet.users import chown_tree
from localnet.xrootd import SERVICE_USER
from tests.conftest import REFERENCE_TOPOLOGY

ENDPOINTS = ("SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK")


@pytest.fixture(scope="module")
def long_haul_plan(django_db_setup, django_db_blocker) -> Plan:  # type: ignore[no-untyped-def]
    assert os.geteuid() == 0, "the long-haul network needs root (network namespaces, TUN, routes)"
    from django.db import transaction

    from topology.services.importer import import_topology

    with django_db_blocker.unblock(), transaction.atomic():
        import_topology(text=REFERENCE_TOPOLOGY.read_text())
        plan = plan_network(ENDPOINTS)
        transaction.set_rollback(True)
    return plan


@pytest.fixture(scope="module")
def long_haul(test_state: StateDir, long_haul_plan: Plan, token_issuer: LocalIssuer) -> Iterator[LongHaul]:
    """The network, its three sites enforcing the session's tokens (tests/conftest.py token_issuer), each
    with its endpoint's audience; they reach the issuer through a forwarder in their namespace
    (localnet/forwarder.py)."""
    tokens = {endpoint: site_tokens(token_issuer, endpoint) for endpoint in ENDPOINTS}
    with lh.long_haul(test_state, long_haul_plan) as network:
        network.start_sites(names={endpoint: f"LH-{endpoint}" for endpoint in ENDPOINTS}, tokens=tokens)
        for site in network.sites.values():
            base = site.local_path("/srcnet/")
            base.mkdir(parents=True, exist_ok=True)
            chown_tree(base, SERVICE_USER)  # the server makes the copies' folders below it
        yield network


@pytest.fixture
def long_haul_topology(
    transactional_db, reference_topology, long_haul: LongHaul, settings, token_issuer
) -> LongHaul:  # type: ignore[no-untyped-def]
    from localnet.binding import bind_endpoints

    bind_endpoints(long_haul.sites)  # host, ports and token audience
    # The platform's settings for this network, as the long-haul demo sets them: the push loop plans on
    # the capacities the emulator carries; simulated campaigns model its congestion control and MTU.
    for name, value in lh.platform_settings().items():
        setattr(settings, name, float(value) if name == "SRCNET_NETWORK_SCALE" else value)
    return long_haul

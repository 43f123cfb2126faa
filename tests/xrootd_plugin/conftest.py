"""Shared fixtures: a built plugin and scratch space, cleaned up on any outcome."""

import os

import pytest
import wanio_harness as h


def pytest_configure(config):
    if os.geteuid() != 0:
        raise pytest.UsageError("these tests start xrootd as user 'xrootd' and mount tmpfs: run them as root")


@pytest.fixture(scope="session", autouse=True)
def built_plugin():
    h.ensure_built()


@pytest.fixture(scope="module")
def scratch():
    with h.scratch_dir() as path:
        yield path


@pytest.fixture(scope="module")
def plugin_server(scratch):
    with h.XrootdServer(scratch, "wanio") as server:
        yield server


@pytest.fixture
def files(tmp_path):
    """Client-side scratch files (pytest removes tmp_path)."""
    return tmp_path

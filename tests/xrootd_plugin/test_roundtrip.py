"""Uploads and downloads through a real xrootd with the wanio plugin loaded."""

import filecmp
import os

import pytest
import wanio_harness as h

SIZES = [0, 1, 4097, 8 * h.MiB, 8 * h.MiB + 1, 37 * h.MiB + 5]


def test_plugin_is_loaded_and_echoes_settings(plugin_server):
    log = plugin_server.log()
    assert "Plugin loaded wanio v5.5.3" in log
    assert "wanio OSS wrapper initialization completed" in log
    assert "=====> wanio.wb on" in log


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("pgrw", ["1", "0"], ids=["pgwrite", "write"])
def test_upload_download_roundtrip(plugin_server, files, size, pgrw):
    src = h.make_file(files / "src.bin", size, seed=size + 3)
    name = f"/rt_{size}_{pgrw}.bin"
    env = h.client_env(XRD_CPUSEPGWRTRD=pgrw)
    h.run(["xrdcp", "-f", "-s", str(src), plugin_server.url + name], env=env)

    stored = plugin_server.data / name.lstrip("/")
    assert filecmp.cmp(src, stored, shallow=False)
    expected = h.adler32_file(src)
    # The plugin computed the value while writing and stored it for the stock manager.
    assert h.stored_xattr(stored) == (expected, int(os.stat(stored).st_mtime))
    assert plugin_server.query_checksum(name) == expected
    log = plugin_server.log()
    assert f"close {name} bytes={size} " in log and f"cks={expected} rc=0" in log

    back = files / "back.bin"
    h.run(["xrdcp", "-f", "-s", plugin_server.url + name, str(back)], env=env)
    assert filecmp.cmp(src, back, shallow=False)

"""The checksum query is answered from the value stored at upload time."""

import os
import subprocess

import wanio_harness as h


def test_checksum_query_uses_stored_value_without_rereading(plugin_server, files):
    src = h.make_file(files / "c.bin", 5 * h.MiB + 7, seed=21)
    original = h.adler32_file(src)
    h.run(["xrdcp", "-f", "-s", str(src), plugin_server.url + "/cks.bin"])
    stored = plugin_server.data / "cks.bin"

    # Change the bytes behind the server's back, keeping the mtime: a server that
    # re-read the file would now report a different checksum.
    st = os.stat(stored)
    with open(stored, "r+b") as f:
        f.write(b"\xff" * 4096)
    os.utime(stored, ns=(st.st_atime_ns, st.st_mtime_ns))
    changed = h.adler32_file(stored)
    assert changed != original
    assert plugin_server.query_checksum("/cks.bin") == original

    # Control: without the stored value the stock manager re-reads and finds the change.
    os.removexattr(stored, "user.XrdCks.adler32")
    assert plugin_server.query_checksum("/cks.bin") == changed


def test_overwrite_replaces_the_stored_value(plugin_server, files):
    first = h.make_file(files / "a.bin", 3 * h.MiB, seed=31)
    second = h.make_file(files / "b.bin", 2 * h.MiB + 1, seed=32)
    h.run(["xrdcp", "-f", "-s", str(first), plugin_server.url + "/over.bin"])
    assert plugin_server.query_checksum("/over.bin") == h.adler32_file(first)
    h.run(["xrdcp", "-f", "-s", str(second), plugin_server.url + "/over.bin"])
    assert plugin_server.query_checksum("/over.bin") == h.adler32_file(second)
    assert h.stored_xattr(plugin_server.data / "over.bin")[0] == h.adler32_file(second)


def test_stale_value_is_removed_at_first_write(plugin_server, files):
    """While an overwrite is in progress no checksum of the old content survives."""
    old = h.make_file(files / "old.bin", 1 * h.MiB, seed=33)
    new = h.make_file(files / "new.bin", 48 * h.MiB, seed=34)
    h.run(["xrdcp", "-f", "-s", str(old), plugin_server.url + "/stale.bin"])
    stored = plugin_server.data / "stale.bin"
    assert h.stored_xattr(stored) is not None
    slow = subprocess.Popen(
        ["xrdcp", "-f", "-s", "--xrate", "16m", str(new), plugin_server.url + "/stale.bin"],
        env=h.client_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert h.wait_for(lambda: stored.exists() and os.stat(stored).st_size >= 8 * h.MiB, 30)
        assert slow.poll() is None, "upload finished before it could be observed"
        assert h.stored_xattr(stored) is None
        assert slow.wait(timeout=60) == 0
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()
    assert h.stored_xattr(stored)[0] == h.adler32_file(new)
    assert plugin_server.query_checksum("/stale.bin") == h.adler32_file(new)

"""Failure handling: no half-written file may look like a finished upload."""

import os
import signal
import subprocess

import pytest
import wanio_harness as h


def upload_proc(src, url, rate="20m"):
    return subprocess.Popen(
        ["xrdcp", "-f", "-s", "--xrate", rate, str(src), url],
        env=h.client_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def reap(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


@pytest.mark.parametrize("prealloc", ["on", "off"])
def test_full_filesystem_gives_client_error_and_no_file(scratch, files, prealloc):
    src = h.make_file(files / "big.bin", 64 * h.MiB, seed=41)
    mount_point = scratch / f"tmpfs-{prealloc}"
    with h.small_tmpfs(mount_point, "24m") as data:
        server = h.XrootdServer(
            scratch, f"full{prealloc}", data_dir=data, extra=[f"wanio.wb.prealloc {prealloc}"]
        )
        with server:
            proc = h.run(["xrdcp", "-f", "-s", str(src), server.url + "/full.bin"], check=False, timeout=120)
            assert proc.returncode != 0
            assert "space" in proc.stderr.lower(), proc.stderr
            # The failed upload is gone, and its space is free again.
            assert h.wait_for(lambda: not (data / "full.bin").exists(), 15)

            def space_free():
                st = os.statvfs(data)
                return st.f_bfree * st.f_frsize > 20 * h.MiB

            assert h.wait_for(space_free, 15)
            # The trace line is written just after the removal.
            assert h.wait_for(lambda: "close /full.bin" in server.log(), 10)
            assert " removed" in server.log()
            # The server still works once space is available.
            small = h.make_file(files / "small.bin", 1 * h.MiB, seed=42)
            h.run(["xrdcp", "-f", "-s", str(small), server.url + "/small.bin"])
            assert server.query_checksum("/small.bin") == h.adler32_file(small)


def test_disk_error_reaches_the_client_at_the_next_write_not_at_close(scratch, files):
    """The first failed disk write is sticky and fails the next write() the client sends,
    so the upload stops about one queue of chunks past the point of failure instead of
    streaming the whole file to learn of it at close. Without preallocation a 512 MiB
    upload into a 24 MiB filesystem must stop having been accepted far less than the
    file: the filesystem, the file's write-behind queue (16 chunks of 8 MiB) and the
    client's 4 chunks in flight."""
    size = 512 * h.MiB
    src = h.make_file(files / "err.bin", size, seed=44)
    with h.small_tmpfs(scratch / "tmpfs-sticky", "24m") as data:
        server = h.XrootdServer(scratch, "sticky", data_dir=data, extra=["wanio.wb.prealloc off"])
        with server:
            proc = h.run(["xrdcp", "-f", "-s", str(src), server.url + "/err.bin"], check=False, timeout=120)
            assert proc.returncode != 0
            assert "space" in proc.stderr.lower(), proc.stderr
            assert h.wait_for(lambda: "close /err.bin" in server.log(), 15)
            line = [x for x in server.log().splitlines() if "close /err.bin" in x][-1]
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            accepted = int(fields["bytes"])
            assert 20 * h.MiB <= accepted <= (24 + 16 * 8 + 4 * 8) * h.MiB, line
            assert line.endswith(" removed") and int(fields["rc"]) != 0, line
            assert not (data / "err.bin").exists()


def test_client_killed_mid_upload_leaves_no_file(plugin_server, files):
    src = h.make_file(files / "k.bin", 256 * h.MiB, seed=43)
    target = plugin_server.data / "killed.bin"
    proc = upload_proc(src, plugin_server.url + "/killed.bin")
    try:
        assert h.wait_for(lambda: target.exists() and os.stat(target).st_size >= 16 * h.MiB, 30)
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
    finally:
        reap(proc)
    # The server notices the disconnect, closes the file short of oss.asize and removes it.
    assert h.wait_for(lambda: not target.exists(), 30), os.stat(target)
    assert h.wait_for(lambda: "close /killed.bin" in plugin_server.log(), 10)
    closing = [line for line in plugin_server.log().splitlines() if "close /killed.bin" in line]
    assert f"expected={256 * h.MiB}" in closing[0] and closing[0].endswith(" removed")


def test_incomplete_keep_policy_keeps_partial_file_without_checksum(scratch, files):
    """The documented opt-out: wanio.wb.incomplete keep leaves the partial file, but
    never a checksum that could make it look complete."""
    src = h.make_file(files / "k2.bin", 256 * h.MiB, seed=44)
    with h.XrootdServer(scratch, "keep", extra=["wanio.wb.incomplete keep"]) as server:
        target = server.data / "kept.bin"
        proc = upload_proc(src, server.url + "/kept.bin")
        try:
            assert h.wait_for(lambda: target.exists() and os.stat(target).st_size >= 16 * h.MiB, 30)
            proc.send_signal(signal.SIGKILL)
        finally:
            reap(proc)
        assert h.wait_for(lambda: "close /kept.bin" in server.log(), 30)
        assert target.exists() and os.stat(target).st_size < 256 * h.MiB
        assert h.stored_xattr(target) is None
        assert " kept" in server.log()


def test_server_killed_mid_upload_with_posc_leaves_no_file(scratch, files):
    """A crash loses buffered data; with `ofs.persist auto hold 0` (recommended in the
    README) the restarted server removes the unfinished file."""
    src = h.make_file(files / "s.bin", 256 * h.MiB, seed=45)
    server = h.XrootdServer(scratch, "posc", extra=["ofs.persist auto hold 0"])
    target = server.data / "crash.bin"
    try:
        server.start()
        # Normal uploads still persist under POSC with the plugin loaded.
        ok = h.make_file(files / "ok.bin", 3 * h.MiB, seed=46)
        h.run(["xrdcp", "-f", "-s", str(ok), server.url + "/ok.bin"])
        assert server.query_checksum("/ok.bin") == h.adler32_file(ok)

        proc = upload_proc(src, server.url + "/crash.bin")
        try:
            assert h.wait_for(lambda: target.exists() and os.stat(target).st_size >= 16 * h.MiB, 30)
            server.kill()
            assert proc.wait(timeout=60) != 0
        finally:
            reap(proc)
        # Crashed mid-write: whatever is on disk carries no checksum.
        if target.exists():
            assert h.stored_xattr(target) is None
        server.start()
        assert h.wait_for(lambda: not target.exists(), 30)
        assert (server.data / "ok.bin").exists()
    finally:
        server.stop()

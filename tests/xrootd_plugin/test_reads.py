"""Reads: the plugin keeps the real file descriptor, so the stock server still
serves plain kXR_read downloads with sendfile()."""

import filecmp
import os
import signal
import subprocess
import time

import wanio_harness as h


def count_syscalls(server, action, syscalls):
    """Runs action() with strace attached to every thread of the server."""
    out = server.base / "strace.txt"
    tids = os.listdir(f"/proc/{server.proc.pid}/task")
    cmd = ["strace", "-f", "-c", "-e", "trace=" + ",".join(syscalls), "-o", str(out)]
    for tid in tids:
        cmd += ["-p", tid]
    tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # let strace attach to all threads
        action()
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=30)
    counts = {}
    for line in out.read_text().splitlines():
        parts = line.split()
        if parts and parts[-1] in syscalls and len(parts) >= 5:
            counts[parts[-1]] = int(parts[3])
    return counts


def test_plain_read_download_uses_sendfile(plugin_server, files):
    src = h.make_file(files / "sf.bin", 64 * h.MiB, seed=71)
    h.run(["xrdcp", "-f", "-s", str(src), plugin_server.url + "/sf.bin"])
    back = files / "sf.back"
    env = h.client_env(XRD_CPUSEPGWRTRD="0")
    counts = count_syscalls(
        plugin_server,
        lambda: h.run(["xrdcp", "-f", "-s", plugin_server.url + "/sf.bin", str(back)], env=env),
        ["sendfile", "pread64"],
    )
    assert filecmp.cmp(src, back, shallow=False)
    assert counts.get("sendfile", 0) >= 8, counts  # 64 MiB in <= 8 MiB sendfile()s
    assert counts.get("pread64", 0) == 0, counts


def test_pgread_download_reads_through_plugin(plugin_server, files):
    src = h.make_file(files / "pg.bin", 32 * h.MiB + 9, seed=72)
    h.run(["xrdcp", "-f", "-s", str(src), plugin_server.url + "/pg.bin"])
    back = files / "pg.back"
    h.run(["xrdcp", "-f", "-s", plugin_server.url + "/pg.bin", str(back)])
    assert filecmp.cmp(src, back, shallow=False)


def test_fslib_layer_prefetches_around_sendfile(scratch, files):
    """With `xrootd.fslib ++` the plugin also wraps the file-system layer: sendfile()
    reads pass through its SendData(), which prefetches ahead and still sendfile()s."""
    server = h.XrootdServer(scratch, "fslib", extra=[f"xrootd.fslib ++ {h.PLUGIN_REF}"])
    with server:
        assert "wanio file system wrapper initialization completed" in server.log()
        src = h.make_file(files / "fs.bin", 96 * h.MiB + 3, seed=73)
        h.run(["xrdcp", "-f", "-s", str(src), server.url + "/fs.bin"])
        assert server.query_checksum("/fs.bin") == h.adler32_file(src)
        back = files / "fs.back"
        env = h.client_env(XRD_CPUSEPGWRTRD="0")
        counts = count_syscalls(
            server,
            lambda: h.run(["xrdcp", "-f", "-s", server.url + "/fs.bin", str(back)], env=env),
            ["sendfile", "pread64"],
        )
        assert filecmp.cmp(src, back, shallow=False)
        assert counts.get("sendfile", 0) >= 12, counts
        # Only the 3-byte tail (below xrootd's 8 KiB sendfile minimum) is read().
        assert counts.get("pread64", 0) <= 1, counts
        assert h.wait_for(lambda: "wanio: sendfile /fs.bin senddata=" in server.log(), 10)
        line = [x for x in server.log().splitlines() if "wanio: sendfile /fs.bin" in x][-1]
        fields = dict(f.split("=") for f in line.split()[3:])
        assert int(fields["senddata"]) >= 12 and int(fields["prefetches"]) >= 1, line
        # pgread downloads (xrdcp default) are unaffected by the wrapper.
        h.run(["xrdcp", "-f", "-s", server.url + "/fs.bin", str(back)])
        assert filecmp.cmp(src, back, shallow=False)

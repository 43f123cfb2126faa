"""Reads: the plugin keeps the real file descriptor, so the stock server still
serves plain kXR_read downloads with sendfile()."""

import filecmp
import re
import subprocess

import pytest
import wanio_harness as h

pytestmark = pytest.mark.usefixtures("strace_alone")


@pytest.mark.parametrize(
    "mode,threads", [("sendfile", 4), ("pgread", 4), ("sendfile", 0)], ids=["sendfile", "pgread", "off"]
)
def test_readahead_threads_read_ahead_of_a_cold_download(scratch, files, mode, threads):
    """Reads of a file not in the page cache: the plugin's readahead threads bring the
    next window in (mmap + MADV_POPULATE_READ) while the thread serving the client sends,
    for sendfile() downloads through the file-system layer and pgread downloads through
    the storage layer; with `wanio.rd.threads 0` the serving thread only hints the kernel."""
    server = h.XrootdServer(
        scratch,
        f"rdpool-{mode}-{threads}",
        extra=[f"xrootd.fslib ++ {h.PLUGIN_REF}", f"wanio.rd.threads {threads}"],
    )
    with server:
        src = h.make_file(files / "cold.bin", 64 * h.MiB + 5, seed=74)
        h.run(["xrdcp", "-f", "-s", str(src), server.url + "/cold.bin"])
        h.evict(server.data / "cold.bin")
        back = files / "cold.back"
        env = h.client_env(XRD_CPUSEPGWRTRD="0" if mode == "sendfile" else "1")
        calls = h.trace_syscalls(
            server,
            lambda: h.run(["xrdcp", "-f", "-s", server.url + "/cold.bin", str(back)], env=env),
            ["madvise", "sendfile", "pread64", "fadvise64"],
        )
        assert filecmp.cmp(src, back, shallow=False)
        serving = {tid for tid, name, _ in calls if name == ("sendfile" if mode == "sendfile" else "pread64")}
        populating = {tid for tid, name, args in calls if name == "madvise" and "MADV_POPULATE_READ" in args}
        assert serving, calls
        if threads:
            assert populating, calls
            assert not serving & populating, "the serving thread read ahead itself"
        else:
            assert not populating, calls
            hinted = {tid for tid, name, args in calls if name == "fadvise64" and "FADV_WILLNEED" in args}
            assert hinted & serving, calls
        if mode == "sendfile":
            assert h.wait_for(lambda: "wanio: sendfile /cold.bin senddata=" in server.log(), 10)
            line = [x for x in server.log().splitlines() if "wanio: sendfile /cold.bin" in x][-1]
            fields = dict(f.split("=") for f in line.split()[3:])
            assert int(fields["prefetches"]) >= 1, line
            if threads:
                assert int(fields["pooled"]) >= 1 and int(fields["pool_bytes"]) > 0, line
            else:
                assert int(fields["pooled"]) == 0, line


def test_plain_read_download_uses_sendfile(plugin_server, files):
    src = h.make_file(files / "sf.bin", 64 * h.MiB, seed=71)
    h.run(["xrdcp", "-f", "-s", str(src), plugin_server.url + "/sf.bin"])
    back = files / "sf.back"
    env = h.client_env(XRD_CPUSEPGWRTRD="0")
    counts = h.count_syscalls(
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
        counts = h.count_syscalls(
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


def _paced_download(server, url, files, scheme):
    """Downloads ``url`` at 8 MiB/s (so that it is still running when it is looked at); returns the
    server's pacing line for it and the maximum pacing rates ``ss`` shows on the server's sockets."""
    if scheme == "root":
        cmd = ["xrdcp", "-f", "--xrate", "8m", url, str(files / "paced.back")]
    else:
        cmd = ["curl", "-sS", "-f", "--limit-rate", "8M", "-o", str(files / "paced.back"), url]
    download = subprocess.Popen(
        cmd, env=h.client_env(XRD_CPUSEPGWRTRD="0"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    port = server.port if scheme == "root" else server.http_port
    try:
        assert h.wait_for(lambda: "pacing /paced.bin" in server.log() or download.poll() is not None, 20)
        sockets = subprocess.run(
            ["ss", "-tin", "state", "established", f"( sport = :{port} )"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
    finally:
        download.wait(timeout=60)
    assert download.returncode == 0
    lines = [x for x in server.log().splitlines() if "pacing /paced.bin" in x]
    return (lines[-1] if lines else ""), re.findall(r"pacing_rate \S+/(\d+)bps", sockets)


@pytest.mark.parametrize(
    "scheme,pacing,query,expected",
    [
        ("root", "100m", "", 100 * h.MiB),
        ("root", None, "", None),
        ("root", "100m", "?wanio.pace=2m", 2 * h.MiB),
        ("root", "100m", "?wanio.pace=1g", 100 * h.MiB),
        ("root", "100m", "?wanio.pace=fast", 100 * h.MiB),
        ("http", "100m", "?wanio.pace=4m", 4 * h.MiB),
        ("http", None, "?authz=x&wanio.pace=6000000", 6000000),
    ],
    ids=["site", "unpaced", "asked", "asked-more", "asked-junk", "http-asked", "http-asked-unpaced-site"],
)
def test_pacing_caps_the_connection_a_client_reads_through(scratch, files, pacing, query, expected, scheme):
    """`wanio.net.pacing` makes Linux pace the TCP connection of a client that opens a
    file for reading (SO_MAX_PACING_RATE on the link's own socket, found from the trace
    identifier and checked against the client's address); without it the socket is left
    alone. A read may ask for a lower pace in its URL (`wanio.pace`, as the push loop asks for
    a copy's share of its lane), never a higher one; a malformed ask is refused and named in
    the log. The same over root:// and over HTTP (the third-party pulls of the push)."""
    http_port = h.free_port() if scheme == "http" else None
    extra = [f"xrootd.fslib ++ {h.PLUGIN_REF}"] + ([f"wanio.net.pacing {pacing}"] if pacing else [])
    if http_port:
        extra.append(f"xrd.protocol XrdHttp:{http_port} libXrdHttp.so")
    name = f"pacing-{scheme}-{pacing}-{len(query)}"
    with h.XrootdServer(scratch, name, extra=extra, http_port=http_port) as server:
        h.make_file(server.data / "paced.bin", 32 * h.MiB, seed=75)
        h.chown_tree(server.data)
        base = server.url if scheme == "root" else f"http://127.0.0.1:{http_port}"
        line, maxima = _paced_download(server, f"{base}/paced.bin{query}", files, scheme)
        if expected:
            assert f"max_pacing_rate={expected} fd=" in line, line
            assert maxima == [str(expected * 8)], maxima
            assert ("refused wanio.pace" in line) == query.endswith("fast"), line
        else:
            assert not line, server.log()
            assert not maxima

"""xroot third-party-copy pulls through the xrdcp-wan program."""

import filecmp
import os
import re
import subprocess

import pytest
import wanio_harness as h

TPC_PGM = f"{h.TPC_PROGRAM} --server --inflight 8 -v"


@pytest.fixture(scope="module")
def source(scratch):
    with h.XrootdServer(scratch, "tpcsrc", plugin=False) as server:
        yield server


@pytest.fixture(scope="module")
def destination(scratch):
    with h.XrootdServer(scratch, "tpcdst", tpc_program=TPC_PGM) as server:
        yield server


@pytest.mark.parametrize("size", [0, 1 * h.MiB + 3, 50 * h.MiB + 1])
def test_tpc_pull_copies_and_verifies_adler32(source, destination, size):
    name = f"tpc_{size}.bin"
    src = h.make_file(source.data / name, size, seed=size + 7)
    h.chown_tree(source.data)
    expected = h.adler32_file(src)
    h.run(
        [
            "xrdcp",
            "-f",
            "--tpc",
            "only",
            "--cksum",
            "adler32:source",
            source.url + "/" + name,
            destination.url + "/" + name,
        ],
        timeout=120,
    )
    dst = destination.data / name
    assert filecmp.cmp(src, dst, shallow=False)
    # xrdcp-wan (not the stock xrdcp) did the copy, and stored the verified value.
    assert h.wait_for(lambda: f"xrdcp-wan pulled {size} bytes" in destination.log(), 10)
    assert h.stored_xattr(dst) == (expected, int(os.stat(dst).st_mtime))
    assert destination.query_checksum("/" + name) == expected


def test_tpc_of_missing_source_fails_and_leaves_nothing(source, destination):
    proc = h.run(
        [
            "xrdcp",
            "-f",
            "--tpc",
            "only",
            source.url + "/nonexistent.bin",
            destination.url + "/nonexistent.bin",
        ],
        check=False,
        timeout=120,
    )
    assert proc.returncode != 0
    assert not (destination.data / "nonexistent.bin").exists()


def test_tpc_checksum_mismatch_fails_and_removes_copy(scratch, destination, files):
    """The pull compares its streamed adler32 with the source's value: give the source a
    wrong stored value and the copy must be rejected."""
    with h.XrootdServer(scratch, "badsrc") as bad:
        src = h.make_file(files / "m.bin", 4 * h.MiB, seed=51)
        h.run(["xrdcp", "-f", "-s", str(src), bad.url + "/m.bin"])
        stored = bad.data / "m.bin"
        raw = bytearray(os.getxattr(stored, "user.XrdCks.adler32"))
        raw[32:36] = bytes.fromhex("deadbeef")
        os.setxattr(stored, "user.XrdCks.adler32", bytes(raw))
        assert bad.query_checksum("/m.bin") == "deadbeef"
        proc = h.run(
            ["xrdcp", "-f", "--tpc", "only", bad.url + "/m.bin", destination.url + "/m.bin"],
            check=False,
            timeout=120,
        )
        assert proc.returncode != 0
        assert "checksum mismatch" in proc.stderr + destination.log()
        assert not (destination.data / "m.bin").exists()


def test_large_file_upload_tpc_download_over_1gib(scratch, destination, files):
    """One >1 GiB file through all three paths: upload to a plugin server, TPC pull
    to another plugin server, download; adler32 verified at every step."""
    size = h.GiB + 12345
    src = h.make_file(files / "big.bin", size, seed=61)
    expected = h.adler32_file(src)
    with h.XrootdServer(scratch, "bigsrc") as first:
        h.run(
            ["xrdcp", "-f", "-s", "--cksum", f"adler32:{expected}", str(src), first.url + "/big.bin"],
            timeout=300,
        )
        os.unlink(src)
        assert h.stored_xattr(first.data / "big.bin")[0] == expected
        assert first.query_checksum("/big.bin") == expected

        h.run(
            [
                "xrdcp",
                "-f",
                "--tpc",
                "only",
                "--cksum",
                "adler32:source",
                first.url + "/big.bin",
                destination.url + "/big.bin",
            ],
            timeout=300,
        )
        os.unlink(first.data / "big.bin")
    dst = destination.data / "big.bin"
    assert os.stat(dst).st_size == size
    assert destination.query_checksum("/big.bin") == expected

    back = files / "big.back"
    h.run(
        ["xrdcp", "-f", "-s", "--cksum", "adler32:source", destination.url + "/big.bin", str(back)],
        timeout=300,
    )
    assert h.adler32_file(back) == expected
    os.unlink(dst)


def test_source_checksum_is_asked_on_a_connection_of_its_own(source, files):
    """The program asks the source for its adler32 when the pull starts, on a second
    connection, so a source computing it (reading the whole file in the thread that serves
    the connection) does not hold up the reads: the source sees two logins from the
    program, and the copy is still verified."""
    name = "own_channel.bin"
    src = h.make_file(source.data / name, 20 * h.MiB + 5, seed=83)
    h.chown_tree(source.data)
    expected = h.adler32_file(src)
    dst = files / name
    proc = subprocess.Popen(
        [str(h.TPC_PROGRAM), "-v", "-C", "adler32:print", f"{source.url}/{name}", str(dst)],
        stdout=subprocess.PIPE,
        text=True,
        env=h.client_env(),
    )
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert f"adler32: {expected}" in out
    assert h.adler32_file(dst) == expected
    logins = re.findall(rf"XrootdXeq: \S+\.{proc.pid}:(\d+)@\S+ .*login", source.log())
    assert len(set(logins)) == 2, source.log()
    os.unlink(dst)


def test_source_checksum_mismatch_found_by_the_early_query(source, files):
    """The early answer is the one compared: a copy of a file whose stored source value is
    wrong is refused and removed."""
    name = "early_bad.bin"
    src = h.make_file(source.data / name, 3 * h.MiB, seed=84)
    h.chown_tree(source.data)
    assert source.query_checksum("/" + name) == h.adler32_file(src)  # stores the xattr
    raw = bytearray(os.getxattr(src, "user.XrdCks.adler32"))
    raw[32:36] = bytes.fromhex("0badc0de")
    os.setxattr(src, "user.XrdCks.adler32", bytes(raw))
    dst = files / name
    proc = subprocess.run(
        [str(h.TPC_PROGRAM), "-C", "adler32", f"{source.url}/{name}", str(dst)],
        capture_output=True,
        text=True,
        timeout=120,
        env=h.client_env(),
    )
    assert proc.returncode != 0
    assert "checksum mismatch: source adler32 0badc0de" in proc.stdout
    assert not dst.exists()


def test_source_is_closed_without_the_pull_waiting_for_it(source, files):
    """The program sends the source's close as soon as the last byte has arrived and does
    not wait for its answer (one round trip less per pull): the close is sent before the
    writers are drained, the copy is complete and verified, and the source server is left
    with no descriptor of the file open."""
    name = "unawaited_close.bin"
    src = h.make_file(source.data / name, 24 * h.MiB + 11, seed=85)
    h.chown_tree(source.data)
    expected = h.adler32_file(src)
    dst = files / name
    trace = files / "trace.csv"
    proc = h.run(
        [str(h.TPC_PROGRAM), "-C", "adler32:source", "--trace", str(trace), f"{source.url}/{name}", str(dst)],
        timeout=120,
    )
    assert proc.returncode == 0
    assert h.adler32_file(dst) == expected
    phases = dict(line.split(",") for line in (files / "trace.csv.phases").read_text().split()[1:])
    assert "source_closed" not in phases
    assert float(phases["reads_done"]) <= float(phases["source_close_sent"]) <= float(phases["drained"])

    def source_holds_file():
        fd_dir = f"/proc/{source.proc.pid}/fd"
        target = os.path.realpath(src)
        return any(os.path.realpath(os.path.join(fd_dir, fd)) == target for fd in os.listdir(fd_dir))

    assert h.wait_for(lambda: not source_holds_file(), 10), "the source still has the file open"

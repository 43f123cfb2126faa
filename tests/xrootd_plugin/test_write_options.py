"""The optional write paths (O_DIRECT, periodic writeback, fdatasync at close) with a real
server: each is seen doing its syscalls, and the upload still lands whole with its adler32."""

import filecmp

import pytest
import wanio_harness as h

pytestmark = pytest.mark.usefixtures("strace_alone")

SIZE = 40 * h.MiB + 123  # five whole 8 MiB chunks and an unaligned tail
WRITE_CALLS = ["pwrite64", "sync_file_range", "fdatasync", "fsync"]


def upload_traced(scratch, files, name, directives):
    """Uploads SIZE bytes to a plugin server configured with `directives`, under strace;
    returns (syscall counts, the plugin's close line as a dict)."""
    server = h.XrootdServer(scratch, name, extra=directives)
    with server:
        src = h.make_file(files / f"{name}.bin", SIZE, seed=len(name))
        counts = h.count_syscalls(
            server, lambda: h.run(["xrdcp", "-f", "-s", str(src), server.url + "/up.bin"]), WRITE_CALLS
        )
        assert filecmp.cmp(src, server.data / "up.bin", shallow=False)
        assert server.query_checksum("/up.bin") == h.adler32_file(src)
        assert h.wait_for(lambda: "close /up.bin" in server.log(), 10)
        line = [x for x in server.log().splitlines() if "close /up.bin" in x][-1]
        return counts, dict(f.split("=", 1) for f in line.split() if "=" in f)


def test_odirect_writes_whole_chunks_directly(scratch, files):
    counts, close = upload_traced(scratch, files, "odirect", ["wanio.wb.odirect on"])
    # Every whole aligned chunk went through the O_DIRECT descriptor; the tail cannot.
    assert int(close["direct"]) >= 4, close
    assert int(close["direct"]) < int(close["chunks"]), close
    assert counts.get("pwrite64", 0) >= int(close["chunks"]), counts


@pytest.mark.parametrize("writeback", ["on", "off"])
def test_writeback_starts_each_chunk_to_disk_only_when_on(scratch, files, writeback):
    counts, close = upload_traced(scratch, files, f"wb{writeback}", [f"wanio.wb.writeback {writeback}"])
    if writeback == "on":
        assert counts.get("sync_file_range", 0) >= int(close["chunks"]) - 1, counts
    else:
        assert counts.get("sync_file_range", 0) == 0, counts


@pytest.mark.parametrize("fsync", ["close", "none"])
def test_fsync_at_close_only_when_asked(scratch, files, fsync):
    counts, _ = upload_traced(scratch, files, f"fs{fsync}", [f"wanio.wb.fsync {fsync}"])
    synced = counts.get("fdatasync", 0) + counts.get("fsync", 0)
    if fsync == "close":
        assert synced >= 1, counts
    else:
        assert synced == 0, counts

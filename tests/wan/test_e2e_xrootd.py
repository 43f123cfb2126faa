"""End to end: a token-enforcing XRootD server behind an emulated 300 ms path, xrdcp on the other side with
the tokens a copy needs, adler32 checked on both ends (server's xrdadler32 vs zlib); without a token nothing
is read or written."""

import os
import zlib

from wanpath import emulated_path
from xrdsite import XRD_ENV, XrootdSite


def _adler32_file(name: str) -> str:
    value = 1
    with open(name, "rb") as f:
        while chunk := f.read(1 << 20):
            value = zlib.adler32(chunk, value)
    return f"{value:08x}"


def test_xrdcp_over_300ms_path_preserves_adler32(tmp_path, wan_issuer):
    src = tmp_path / "product.bin"
    src.write_bytes(os.urandom(16 * 1024 * 1024))
    want = _adler32_file(src)
    with emulated_path(rtt_ms=300, rate_mbit=200) as path, XrootdSite(path, "b", tokens=wan_issuer) as site:

        def xrd(*argv: str):
            return path.run_a(list(argv), capture_output=True, text=True, env=XRD_ENV, timeout=60)

        # Without a token, or with one that only reads: nothing is stored.
        for url in (site.root_url("product.bin"), site.read_url("product.bin")):
            refused = xrd("xrdcp", "-f", str(src), url)
            assert refused.returncode != 0 and not os.path.exists(site.local_path("product.bin"))
        up = xrd("xrdcp", "-f", str(src), site.write_url("product.bin"))
        assert up.returncode == 0, up.stderr + site.log_tail()
        # Server-side checksum, computed by xrootd from the stored file.
        remote = xrd("xrdadler32", site.read_url("product.bin"))
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout.split()[0] == want
        assert _adler32_file(site.local_path("product.bin")) == want
        # And back across the path in the other direction; anonymously: refused.
        back = tmp_path / "back.bin"
        anonymous = xrd("xrdcp", "-f", site.root_url("product.bin"), str(back))
        assert anonymous.returncode != 0 and not back.exists()
        down = xrd("xrdcp", "-f", site.read_url("product.bin"), str(back))
        assert down.returncode == 0, down.stderr
        assert _adler32_file(back) == want
        stats = path.stats()
    # The bytes really crossed the emulator (16 MiB each way plus headers).
    assert stats["ab"]["tx_bytes"] > 16 * 1024 * 1024
    assert stats["ba"]["tx_bytes"] > 16 * 1024 * 1024
    # one-way delay = (300 ms - calibrated path cost, at most 1 ms) / 2
    assert stats["ab"]["delay_ns"] >= 149_500_000

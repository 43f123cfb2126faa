"""The plugin loaded into the project's exact site configuration (xroot + HTTPS with
a throwaway CA), exercised with xrdcp, curl and gfal-copy."""

import filecmp
import os
import subprocess

import pytest
import wanio_harness as h


def make_ca(base):
    """A throwaway CA and a host certificate for localhost/127.0.0.1."""
    ca_dir = base / "ca"
    ca_dir.mkdir()

    def ssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60, cwd=str(base))

    ssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=wanio-test-ca",
    )
    ssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "hostkey.pem",
        "-out",
        "host.csr",
        "-subj",
        "/CN=localhost",
    )
    (base / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    ssl(
        "x509",
        "-req",
        "-in",
        "host.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "hostcert.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    )
    (ca_dir / "ca.pem").write_bytes((base / "ca.pem").read_bytes())
    ssl("rehash", str(ca_dir))
    os.chmod(base / "hostkey.pem", 0o400)
    return ca_dir


def site(scratch, name, ca_base, ca_dir):
    http_port = h.free_port()
    # The project's site configuration, verbatim in shape ...
    shape = [
        f"xrd.protocol XrdHttp:{http_port} libXrdHttp.so",
        "http.exthandler xrdtpc libXrdHttpTPC.so",
        "http.listingdeny false",
        "http.desthttps false",
        f"xrd.tls {ca_base}/hostcert.pem {ca_base}/hostkey.pem",
        f"xrd.tlsca certdir {ca_dir}",
        # ... plus the lines README.md "Loading the plugin" tells sites to append.
        f"ofs.osslib ++ {h.PLUGIN_REF}",
        f"ofs.tpc autorm echo pgm {h.TPC_PROGRAM} --server -v",
    ]
    server = h.XrootdServer(
        scratch, name, plugin=False, tpc_program="/usr/bin/xrdcp --server", extra=shape, http_port=http_port
    )
    return server


@pytest.fixture(scope="module")
def sites(scratch):
    ca_base = scratch / "pki"
    ca_base.mkdir()
    ca_dir = make_ca(ca_base)
    h.chown_tree(ca_base)
    a = site(scratch, "SITEA", ca_base, ca_dir)
    b = site(scratch, "SITEB", ca_base, ca_dir)
    try:
        a.start()
        b.start()
        yield a, b, ca_base, ca_dir
    finally:
        a.stop()
        b.stop()


def https(server, path):
    return f"https://localhost:{server.http_port}/{path.lstrip('/')}"


def digest(server, path, ca_base):
    out = h.run(
        [
            "curl",
            "-sS",
            "--cacert",
            str(ca_base / "ca.pem"),
            "-I",
            "-H",
            "Want-Digest: adler32",
            https(server, path),
        ],
        timeout=60,
    ).stdout
    for line in out.splitlines():
        if line.lower().startswith("digest:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(out)


def test_gfal_https_upload_stores_checksum_served_as_digest(sites, files):
    a, _, ca_base, ca_dir = sites
    src = h.make_file(files / "g.bin", 20 * h.MiB + 3, seed=81)
    expected = h.adler32_file(src)
    env = h.client_env(X509_CERT_DIR=str(ca_dir))
    h.run(["gfal-copy", "-f", f"file://{src}", https(a, "/gfal.bin")], env=env, timeout=120)
    stored = a.data / "gfal.bin"
    assert filecmp.cmp(src, stored, shallow=False)
    # HTTP PUT went through the plugin, which stored the value ...
    assert h.stored_xattr(stored)[0] == expected
    assert f"close /gfal.bin bytes={20 * h.MiB + 3} " in a.log()
    # ... and the HTTP Want-Digest answer comes from it, not from the bytes.
    st = os.stat(stored)
    with open(stored, "r+b") as f:
        f.write(b"\0" * 100)
    os.utime(stored, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert digest(a, "/gfal.bin", ca_base) == f"adler32={expected}"
    assert a.query_checksum("/gfal.bin") == expected


def test_xroot_tpc_between_sites_uses_xrdcp_wan(sites):
    a, b, _, _ = sites
    src = h.make_file(a.data / "x.bin", 30 * h.MiB + 1, seed=82)
    h.chown_tree(a.data)
    expected = h.adler32_file(src)
    h.run(
        ["xrdcp", "-f", "--tpc", "only", "--cksum", "adler32:source", a.url + "/x.bin", b.url + "/x.bin"],
        timeout=120,
    )
    assert filecmp.cmp(src, b.data / "x.bin", shallow=False)
    assert h.wait_for(lambda: f"xrdcp-wan pulled {30 * h.MiB + 1} bytes" in b.log(), 10)
    assert b.query_checksum("/x.bin") == expected


def test_https_tpc_pull_goes_through_plugin(sites, files):
    a, b, ca_base, _ca_dir = sites
    src = h.make_file(a.data / "h.bin", 12 * h.MiB + 5, seed=83)
    h.chown_tree(a.data)
    expected = h.adler32_file(src)
    # A WLCG HTTP-TPC pull request (as FTS sends it) without delegated credentials.
    out = h.run(
        [
            "curl",
            "-sS",
            "--fail",
            "--cacert",
            str(ca_base / "ca.pem"),
            "-X",
            "COPY",
            "-H",
            "Source: " + https(a, "/h.bin"),
            "-H",
            "Credential: none",
            https(b, "/h.bin"),
        ],
        timeout=120,
    ).stdout
    assert "success" in out, out
    dst = b.data / "h.bin"
    assert filecmp.cmp(src, dst, shallow=False)
    assert h.wait_for(lambda: f"close /h.bin bytes={12 * h.MiB + 5} " in b.log(), 10)
    assert h.stored_xattr(dst)[0] == expected
    assert digest(b, "/h.bin", ca_base) == f"adler32={expected}"


def test_interrupted_https_put_with_posc_leaves_no_file(scratch, sites, files):
    """XrdHttp sends no oss.asize for a PUT, so the plugin cannot tell a cut-off PUT
    from a short file; the README therefore recommends `ofs.persist auto hold 0`,
    which removes it."""
    _, _, ca_base, ca_dir = sites
    server = site(scratch, "POSC", ca_base, ca_dir)
    server.config.write_text(server.config.read_text() + "ofs.persist auto hold 0\n")
    src = h.make_file(files / "p.bin", 200 * h.MiB, seed=84)
    target = server.data / "put.bin"
    with server:
        put = subprocess.Popen(
            [
                "curl",
                "-sS",
                "--cacert",
                str(ca_base / "ca.pem"),
                "--limit-rate",
                "20M",
                "-T",
                str(src),
                https(server, "/put.bin"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert h.wait_for(lambda: target.exists() and os.stat(target).st_size >= 16 * h.MiB, 30)
            assert put.poll() is None
        finally:
            put.kill()
            put.wait(timeout=30)
        assert h.wait_for(lambda: not target.exists(), 30)
        assert h.wait_for(lambda: "Unpersisting" in server.log(), 10)


def test_https_get_through_fslib_layer(scratch, sites, files):
    """HTTPS GETs still return the right bytes with the file-system wrapper loaded
    (over TLS xrootd never uses sendfile, so reads take the forwarded read() path)."""
    _, _, ca_base, ca_dir = sites
    server = site(scratch, "FSLIB", ca_base, ca_dir)
    server.config.write_text(server.config.read_text() + f"xrootd.fslib ++ {h.PLUGIN_REF}\n")
    src = h.make_file(files / "get.bin", 40 * h.MiB + 11, seed=85)
    with server:
        h.run(["xrdcp", "-f", "-s", str(src), server.url + "/get.bin"])
        back = files / "get.back"
        h.run(
            [
                "curl",
                "-sS",
                "--fail",
                "--cacert",
                str(ca_base / "ca.pem"),
                "-o",
                str(back),
                https(server, "/get.bin"),
            ],
            timeout=120,
        )
        assert filecmp.cmp(src, back, shallow=False)
        assert "wanio file system wrapper initialization completed" in server.log()

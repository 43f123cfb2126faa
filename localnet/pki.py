"""A throw-away certificate authority and host certificate for the local sites, the token issuer, the FTS3
service and the web server.

XRootD 5.5 loads its HTTP third-party-copy handler only when TLS is configured, so even a loopback
network needs certificates. Clients trust the CA through ``X509_CERT_DIR`` (or its ``ca.pem``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .processes import run
from .state import StateDir
from .users import chown_tree


def ensure_pki(state: StateDir) -> Path:
    """Create the CA and a host certificate for localhost/127.0.0.1 once; return the CA folder."""
    folder = state.sub("pki")
    certs = folder / "certs"
    certs.mkdir(exist_ok=True)
    ca_key, ca_pem = folder / "ca.key", folder / "ca.pem"
    host_key, host_pem = folder / "hostkey.pem", folder / "hostcert.pem"
    if not host_pem.exists():
        run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "3650",
                "-subj",
                "/O=srcnet-local/CN=srcnet local test CA",
                "-keyout",
                str(ca_key),
                "-out",
                str(ca_pem),
            ]
        )
        csr = folder / "host.csr"
        ext = folder / "host.ext"
        ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
        _request("/O=srcnet-local/CN=localhost", host_key, csr)
        _sign(folder, csr, ext, host_pem)
        (certs / "ca.pem").write_bytes(ca_pem.read_bytes())
        run(["openssl", "rehash", str(certs)])
        for path in (ca_pem, host_pem, certs / "ca.pem"):
            path.chmod(0o644)
    return certs


def _sign(pki: Path, csr: Path, ext: Path, out: Path) -> None:
    """Sign ``csr`` with the local CA in ``pki``. OpenSSL refuses file names past 255 characters ("File name
    too long" for the serial file it derives from the CA's path), so it runs inside ``pki`` with paths
    relative to it: a deep checkout changes nothing."""
    run(
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            str(csr.relative_to(pki)),
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAserial",
            "ca.srl",
            "-CAcreateserial",
            "-days",
            "3650",
            "-extfile",
            str(ext.relative_to(pki)),
            "-out",
            str(out.relative_to(pki)),
        ],
        cwd=pki,
    )


def host_credentials(state: StateDir) -> tuple[Path, Path]:
    folder = state.path / "pki"
    return folder / "hostcert.pem", folder / "hostkey.pem"


def ca_certificate(state: StateDir) -> Path:
    """The local CA's certificate: what an HTTPS client of the local network verifies against."""
    return state.path / "pki" / "ca.pem"


def service_key(state: StateDir, account: str | None, service: str) -> Path:
    """The host key as ``service``'s account may read it: a copy of its own (0600) in the service's folder,
    as a production host gives each service its own copy of the host key."""
    _, key = host_credentials(state)
    copy = state.sub(service) / "hostkey.pem"
    shutil.copyfile(key, copy)
    copy.chmod(0o600)
    if account is not None:
        chown_tree(copy, account)
    return copy


def _request(subject: str, key: Path, csr: Path) -> None:
    """A new RSA key and a certificate signing request for ``subject``, for ``_sign`` to sign with the CA."""
    run(
        [
            "openssl",
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            subject,
            "-keyout",
            str(key),
            "-out",
            str(csr),
        ]
    )


def address_credentials(state: StateDir, address: str) -> tuple[Path, Path]:
    """A host certificate (and key) for a site reached at the IPv4 ``address`` (its namespace's in the
    long-haul network) as well as at localhost, signed by the local CA once; HTTPS clients and the HTTP
    third-party copy verify the address they connect to."""
    ensure_pki(state)
    folder = state.sub("pki", "hosts")
    cert, key = folder / f"{address}.pem", folder / f"{address}.key"
    if not cert.exists():
        csr, ext = folder / f"{address}.csr", folder / f"{address}.ext"
        ext.write_text(
            f"subjectAltName=DNS:localhost,IP:127.0.0.1,IP:{address}\nextendedKeyUsage=serverAuth,clientAuth\n"
        )
        subject = f"/O=srcnet-local/CN={address}"
        _request(subject, key, csr)
        _sign(state.path / "pki", csr, ext, cert)
        cert.chmod(0o644)
    return cert, key


def ensure_client_cert(state: StateDir, name: str) -> tuple[Path, str]:
    """A client certificate for ``name`` signed by the local CA, as one PEM holding certificate and key
    (what Rucio's ``[conveyor] usercert`` expects); returns the PEM path and the subject DN."""
    ensure_pki(state)
    folder = state.sub("pki", "clients")
    pem = folder / f"{name}.pem"
    dn = f"/O=srcnet-local/CN={name}"
    if not pem.exists():
        key, csr, cert = folder / f"{name}.key", folder / f"{name}.csr", folder / f"{name}.crt"
        ext = folder / "client.ext"
        ext.write_text("extendedKeyUsage=clientAuth\n")
        _request(dn, key, csr)
        _sign(state.path / "pki", csr, ext, cert)
        pem.write_bytes(cert.read_bytes() + key.read_bytes())
        pem.chmod(0o600)
    return pem, dn

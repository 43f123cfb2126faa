"""One real XRootD server per site on loopback: root:// and HTTP(S)/WebDAV on one port each, third-party
copy on both protocols, adler32 checksums."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .pki import ensure_pki, host_credentials
from .processes import ServiceError, is_alive, port_open, running, start_daemon, stop_daemon, wait_for_port
from .state import PROJECT_ROOT, StateDir
from .users import as_root, chown_tree, require_binary

SERVICE_USER = "xrootd"


@dataclass(frozen=True)
class LocalSite:
    """An XRootD server standing in for one storage endpoint."""

    name: str
    root_port: int
    http_port: int
    data_dir: Path

    def root_url(self, path: str) -> str:
        return f"root://127.0.0.1:{self.root_port}//{path.lstrip('/')}"

    def davs_url(self, path: str) -> str:
        return f"davs://127.0.0.1:{self.http_port}/{path.lstrip('/')}"

    def local_path(self, path: str) -> Path:
        return self.data_dir / path.lstrip("/")


def site_folder(state: StateDir, name: str) -> Path:
    return state.sub("xrootd", name)


def render_config(
    *,
    name: str,
    folder: Path,
    root_port: int,
    http_port: int,
    ca_dir: Path,
    extra_lines: list[str] | None = None,
) -> str:
    """The xrootd configuration of one site (pure: text out, tested alone)."""
    lines = [
        "all.export /",
        f"oss.localroot {folder / 'data'}",
        f"all.adminpath {folder / 'admin'}",
        f"all.pidpath {folder / 'run'}",
        f"all.sitename {name}",
        f"xrd.port {root_port}",
        "xrd.network nodnr",
        "xrootd.chksum adler32",
        # The destination pulls (third-party copy, root://).
        "ofs.tpc autorm pgm /usr/bin/xrdcp --server",
        f"xrd.protocol XrdHttp:{http_port} libXrdHttp.so",
        # HTTP-TPC (COPY); XRootD 5.5 loads it only when TLS is configured below.
        "http.exthandler xrdtpc libXrdHttpTPC.so",
        "http.listingdeny false",
        "http.desthttps false",
        f"xrd.tls {folder / 'hostcert.pem'} {folder / 'hostkey.pem'}",
        f"xrd.tlsca certdir {ca_dir}",
        *(extra_lines or []),
    ]
    return "\n".join(lines) + "\n"


PLUGIN_BUILD = PROJECT_ROOT / "xrootd-plugins" / "build"
PLUGIN_LIBRARY = "libXrdWanIO-5.so"
PLUGIN_TPC_PROGRAM = "xrdcp-wan"


def plugin_lines(state: StateDir) -> list[str]:
    """The lines that load the project's plugin on both layers (storage: write-behind and streaming
    adler32; file system: readahead threads around sendfile()) and its parallel TPC pull program, or
    none when it is switched off (SRCNET_XROOTD_PLUGIN=off, for comparisons). A plugin that is on but
    not built is an error, not a silent fall-back to the stock server.

    The library and the pull program are copied into the state folder: the xrootd account may not be
    able to read the checkout."""
    if os.environ.get("SRCNET_XROOTD_PLUGIN", "on").lower() in ("off", "0", "no", "false"):
        return []
    library, program = PLUGIN_BUILD / PLUGIN_LIBRARY, PLUGIN_BUILD / PLUGIN_TPC_PROGRAM
    if not (library.exists() and program.exists()):
        raise ServiceError(
            f"the XRootD plugin is not built ({PLUGIN_BUILD}): run scripts/bootstrap.sh, or set "
            "SRCNET_XROOTD_PLUGIN=off to run the sites with the stock server"
        )
    folder = state.sub("xrootd-plugin")
    for source in (library, program):
        target = folder / source.name
        if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
            shutil.copy2(source, target)
            target.chmod(0o755)
    return [
        f"ofs.osslib ++ {folder / 'libXrdWanIO.so'}",
        f"xrootd.fslib ++ {folder / 'libXrdWanIO.so'}",
        f"ofs.tpc autorm pgm {folder / PLUGIN_TPC_PROGRAM} --server --inflight 16",
        # An upload cut off mid-way is removed rather than kept looking complete.
        "ofs.persist auto hold 0",
    ]


def ensure_site(state: StateDir, name: str, *, extra_lines: list[str] | None = None) -> LocalSite:
    """Start the site's xrootd unless it is running; ports are recorded in the state's runtime file.

    The project's XRootD plugin is loaded unless SRCNET_XROOTD_PLUGIN=off."""
    root_port = state.port(f"xrootd:{name}:root")
    http_port = state.port(f"xrootd:{name}:http")
    folder = site_folder(state, name)
    site = LocalSite(name=name, root_port=root_port, http_port=http_port, data_dir=folder / "data")
    daemon = f"xrootd-{name}"
    if running(state, daemon) and port_open(root_port) and port_open(http_port):
        return site
    ca_dir = ensure_pki(state)
    for sub in ("data", "admin", "run", "log"):
        (folder / sub).mkdir(exist_ok=True)
    cert, key = host_credentials(state)
    shutil.copyfile(cert, folder / "hostcert.pem")
    shutil.copyfile(key, folder / "hostkey.pem")
    (folder / "hostkey.pem").chmod(0o600)
    config = folder / "xrootd.cfg"
    config.write_text(
        render_config(
            name=name,
            folder=folder,
            root_port=root_port,
            http_port=http_port,
            ca_dir=ca_dir,
            extra_lines=[*plugin_lines(state), *(extra_lines or [])],
        )
    )
    if as_root():
        chown_tree(folder, SERVICE_USER)
    argv = [require_binary("xrootd"), "-c", str(config), "-l", str(folder / "log" / "xrootd.log"), "-n", name]
    if as_root():
        argv[1:1] = ["-R", SERVICE_USER]
    env = dict(os.environ)
    # Once, a server of many started in a row exited at start-up without a word in its log (seen
    # in CI, not reproduced): one that exits is started once more, and both failures are kept.
    failures: list[str] = []
    while True:
        pid = start_daemon(state, daemon, argv, env=env, log_name=f"xrootd-{name}.out")
        try:
            wait_for_port(root_port, pid=pid, what=f"xrootd {name}", timeout=20)
            break
        except ServiceError as error:
            failures.append(str(error))
            if is_alive(pid) or len(failures) == 2:
                raise ServiceError("; before that: ".join(reversed(failures))) from error
            print(f"{error}; starting it once more", file=sys.stderr, flush=True)
    wait_for_port(http_port, pid=pid, what=f"xrootd {name} (http)", timeout=20)
    return site


def stop_site(state: StateDir, name: str) -> bool:
    return stop_daemon(state, f"xrootd-{name}")


def known_sites(state: StateDir) -> list[str]:
    folder = state.path / "xrootd"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []

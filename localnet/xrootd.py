"""One real XRootD server per site: root:// and HTTP(S)/WebDAV on one port each, third-party copy on both
protocols, adler32 checksums. On loopback, or inside a network namespace of the long-haul network
(localnet/longhaul.py), where it is reached at the namespace's address."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .fireflies import pmark_lines
from .pki import ensure_pki, host_credentials
from .processes import ServiceError, port_open, running, start_daemon, stop_daemon, wait_for_port
from .state import PROJECT_ROOT, StateDir, short_run_dir
from .users import as_root, chown_tree, require_binary

SERVICE_USER = "xrootd"


@dataclass(frozen=True)
class LocalSite:
    """An XRootD server standing in for one storage endpoint."""

    name: str
    root_port: int
    http_port: int
    data_dir: Path
    host: str = "127.0.0.1"  # its address: loopback, or its namespace's in the long-haul network
    audience: str = ""  # the token audience it enforces ("": it enforces no token)

    def root_url(self, path: str) -> str:
        return f"root://{self.host}:{self.root_port}//{path.lstrip('/')}"

    def davs_url(self, path: str) -> str:
        return f"davs://{self.host}:{self.http_port}/{path.lstrip('/')}"

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
    run_dir: Path,
    extra_lines: list[str] | None = None,
) -> str:
    """The xrootd configuration of one site (pure: text out, tested alone). Its admin sockets go to the
    short ``run_dir``, not under ``folder``: their paths must stay within the Unix-socket limit however deep
    the checkout lies."""
    lines = [
        "all.export /",
        f"oss.localroot {folder / 'data'}",
        f"all.adminpath {run_dir / 'admin'}",
        f"all.pidpath {run_dir / 'run'}",
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
        # A copy's SciTags flow identifier (transfers/flow_marks.py) into the open's CGI, as root:// has it.
        "http.header2cgi SciTag scitag.flow",
        f"xrd.tls {folder / 'hostcert.pem'} {folder / 'hostkey.pem'}",
        f"xrd.tlsca certdir {ca_dir}",
        *(extra_lines or []),
    ]
    return "\n".join(lines) + "\n"


PLUGIN_BUILD = PROJECT_ROOT / "xrootd-plugins" / "build"
PLUGIN_LIBRARY = "libXrdWanIO-5.so"
PLUGIN_TPC_PROGRAM = "xrdcp-wan"
# Preloaded into the server: TCP Fast Open on its own connections (its HTTP-TPC pulls'), see
# xrootd-plugins/src/preload/FastOpenPreload.cc.
FAST_OPEN_PRELOAD = "libwanio_fastopen.so"


def plugin_on() -> bool:
    return os.environ.get("SRCNET_XROOTD_PLUGIN", "on").lower() not in ("off", "0", "no", "false")


@contextmanager
def stock_server() -> Iterator[None]:
    """Sites started inside run XRootD's own server, without the project's plugin (the switch
    SRCNET_XROOTD_PLUGIN=off, for comparisons), and the switch is as it was afterwards."""
    before = os.environ.get("SRCNET_XROOTD_PLUGIN")
    os.environ["SRCNET_XROOTD_PLUGIN"] = "off"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SRCNET_XROOTD_PLUGIN")
        else:
            os.environ["SRCNET_XROOTD_PLUGIN"] = before


def _plugin_folder(state: StateDir) -> Path:
    """The plugin's library, pull program and preload, copied into the state folder (the xrootd account
    may not be able to read the checkout)."""
    built = [PLUGIN_BUILD / name for name in (PLUGIN_LIBRARY, PLUGIN_TPC_PROGRAM, FAST_OPEN_PRELOAD)]
    if not all(path.exists() for path in built):
        raise ServiceError(
            f"the XRootD plugin is not built ({PLUGIN_BUILD}): run scripts/bootstrap.sh, or set "
            "SRCNET_XROOTD_PLUGIN=off to run the sites with the stock server"
        )
    folder = state.sub("xrootd-plugin")
    for source in built:
        target = folder / source.name
        if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
            shutil.copy2(source, target)
            target.chmod(0o755)
    return folder


def plugin_environment(state: StateDir) -> dict[str, str]:
    """What the server's environment gets with the plugin: the Fast Open preload (none without it)."""
    if not plugin_on():
        return {}
    return {"LD_PRELOAD": str(_plugin_folder(state) / FAST_OPEN_PRELOAD)}


def plugin_lines(state: StateDir, path_bps: float | None = None) -> list[str]:
    """The lines that load the project's plugin on both layers (storage: write-behind and streaming
    adler32; file system: readahead threads around sendfile()) and its parallel TPC pull program, or
    none when it is switched off (SRCNET_XROOTD_PLUGIN=off, for comparisons). A plugin that is on but
    not built is an error, not a silent fall-back to the stock server. With ``path_bps`` (the site's path
    bottleneck, bit/s) the pull keeps that rate times the round trip it measures to each source in flight
    (``--rate``, as the xrootd_site role configures it); without, 16 reads of 8 MiB."""
    if not plugin_on():
        return []
    folder = _plugin_folder(state)
    rate = f" --rate {path_bytes_per_s(path_bps)}" if path_bps else ""
    return [
        f"ofs.osslib ++ {folder / 'libXrdWanIO.so'}",
        f"xrootd.fslib ++ {folder / 'libXrdWanIO.so'}",
        # -S N (the copy's streams) becomes N sub-streams, up to XRootD's own maximum of 15.
        f"ofs.tpc autorm pgm {folder / PLUGIN_TPC_PROGRAM} --server --inflight 16 --max-streams 15{rate}",
        # An upload cut off mid-way is removed rather than kept looking complete.
        "ofs.persist auto hold 0",
        # Whole chunks of what lands (uploads, HTTP third-party pulls) past the page cache, as the xrootd_site
        # role sets it: no copy into the cache, no dirty pages to flush behind a 10 Gbit/s stream.
        "wanio.wb.odirect on",
    ]


# The plugin's counters (write-behind queue and memory, checksum, readahead): each site's plugin writes them
# every few seconds to a file of its own in one folder, which the local node exporter's textfile collector
# serves (localnet/monitoring.py; docs/adr/0004-plugin-metrics-in-a-textfile.md). Unlike the summary's UDP
# packets, this works from inside a long-haul namespace too.
PLUGIN_METRICS_EVERY_SECONDS = 5


def plugin_metrics_dir(state: StateDir) -> Path:
    """The folder of the sites' plugin metrics files: written by the xrootd account, read by the node
    exporter's (world-readable files, ``MetricsFileWriter``)."""
    folder = state.sub("xrootd-metrics")
    folder.chmod(0o755)
    if as_root():
        chown_tree(folder, SERVICE_USER)
    return folder


def plugin_metrics_lines(state: StateDir, name: str) -> list[str]:
    return [
        f"wanio.metrics.file {plugin_metrics_dir(state) / f'srcnet-wanio-{name}.prom'}",
        f"wanio.metrics.every {PLUGIN_METRICS_EVERY_SECONDS}",
    ]


# XRootD's summary monitoring: every site sends its counters (UDP) to the state's summary exporter
# (monitoring/xrootd_exporter.py, started with the local Prometheus by localnet/monitoring.py); while none
# runs the packets are dropped. A site in a long-haul namespace has its own loopback: its reports go nowhere.
SUMMARY_EVERY_SECONDS = 5


# The plugin's pacing range (wanio.net.pacing, xrootd-plugins README): 1 MiB/s to 64 GiB/s.
PACING_MIN_BYTES_PER_S = 2**20
PACING_MAX_BYTES_PER_S = 64 * 2**30


def path_bytes_per_s(path_bps: float) -> int:
    """The site's path bottleneck (bit/s) in bytes/s, clamped to the plugin's pacing range."""
    return int(min(PACING_MAX_BYTES_PER_S, max(PACING_MIN_BYTES_PER_S, path_bps / 8)))


def pacing_line(path_bps: float) -> str:
    """The plugin's directive that paces every connection reading a file at the site's path bottleneck, as
    the xrootd_site Ansible role configures a deployed site; clamped to the plugin's range."""
    return f"wanio.net.pacing {path_bytes_per_s(path_bps)}"


@dataclass(frozen=True)
class SiteTokens:
    """What a token-enforcing site trusts: the issuers' URLs, its own audience, and the base path below which
    the tokens' storage scopes apply (the endpoint's prefix)."""

    issuers: tuple[str, ...]
    audience: str
    base_path: str


def token_config(tokens: SiteTokens) -> str:
    """The token plugin's configuration file (pure). No token, no access: ``onmissing = passthrough`` hands
    an anonymous request to XRootD's default authorization, whose database grants nothing."""
    lines = ["[Global]", f"audience = {tokens.audience}", "onmissing = passthrough", ""]
    for number, issuer in enumerate(tokens.issuers, start=1):
        lines += [
            f"[Issuer issuer{number}]",
            f"issuer = {issuer}",
            f"base_path = {tokens.base_path.rstrip('/') or '/'}",
            f"default_user = {SERVICE_USER}",
            "",
        ]
    return "\n".join(lines)


def token_lines(folder: Path) -> list[str]:
    """The directives that make a site enforce tokens on both protocols (root://: ``authz`` in the opaque
    part; HTTP: the Authorization header, handed to the plugin as ``authz``)."""
    return [
        "ofs.authorize 1",
        f"ofs.authlib ++ libXrdAccSciTokens.so config={folder / 'scitokens.cfg'}",
        f"acc.authdb {folder / 'authdb'}",
        "http.header2cgi Authorization authz",
    ]


def write_token_files(folder: Path, tokens: SiteTokens) -> list[str]:
    """Write into ``folder`` the token plugin's configuration, an authorization database that grants nobody
    anything (what an anonymous request meets) and the folder for the issuers' keys (``cache``, the
    server's $XDG_CACHE_HOME); return the directives that load them (``token_lines``)."""
    (folder / "scitokens.cfg").write_text(token_config(tokens))
    (folder / "authdb").write_text("# No anonymous access: every request carries a token (scitokens.cfg).\n")
    (folder / "cache").mkdir(exist_ok=True)
    return token_lines(folder)


def trusting(argv: list[str], bundle: Path) -> list[str]:
    """``argv`` run in a mount namespace of its own in which ``bundle`` (``trust_bundle``) stands for the
    system's CA bundle. ``sh -c '... exec "$@"'`` execs the program there: a recorded PID is the program's."""
    mount = 'mount --bind "$0" ' + SYSTEM_CA_BUNDLE + ' && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(bundle), *argv]


def trust_bundle(state: StateDir) -> Path:
    """The system's CA bundle and the local CA's certificate in one file. scitokens-cpp fetches an issuer's
    keys with libcurl, which reads only the system bundle: a token-enforcing site runs with this file mounted
    over it in a mount namespace of its own, as a deployed site trusts its issuer's CA (the xrootd_site role
    installs it into the system's trust store)."""
    ca_dir = ensure_pki(state)
    bundle = state.path / "pki" / "trust-bundle.pem"
    system = Path(SYSTEM_CA_BUNDLE).read_bytes()
    wanted = system + b"\n" + (ca_dir / "ca.pem").read_bytes()
    if not bundle.exists() or bundle.read_bytes() != wanted:
        bundle.write_bytes(wanted)
        bundle.chmod(0o644)
    return bundle


SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def summary_report_lines(state: StateDir) -> list[str]:
    return [f"xrd.report 127.0.0.1:{state.port('xrootd-summary')} every {SUMMARY_EVERY_SECONDS}s all"]


def ensure_site(
    state: StateDir,
    name: str,
    *,
    extra_lines: list[str] | None = None,
    netns: str | None = None,
    host: str = "127.0.0.1",
    credentials: tuple[Path, Path] | None = None,
    pacing_bps: float | None = None,
    tokens: SiteTokens | None,
    fireflies: bool = True,
    host_reaches: bool = True,
) -> LocalSite:
    """Start the site's xrootd unless it is running; ports are recorded in the state's runtime file.

    With ``netns`` it runs inside that network namespace and is reached at ``host`` there (its certificate,
    ``credentials``, must name that address for HTTPS). A site of that name running elsewhere is stopped
    first. The project's XRootD plugin is loaded unless SRCNET_XROOTD_PLUGIN=off; with it, ``pacing_bps``
    (the site's path bottleneck, bit/s) paces the connections that read its files (``pacing_line``). With
    ``tokens`` it refuses every request without a valid token from one of its issuers (``token_config``);
    ``tokens`` is required, and None (a site open to anyone on loopback) is only for the benchmarks' baselines
    that measure what tokens cost (bench/tokens_cost.py) and for tests of such a site itself. Its
    connections are reported to the state's firefly collector (localnet/fireflies.py) unless ``fireflies``
    is False (a site in a network namespace of its own, which cannot reach the host's loopback).
    ``host_reaches=False``: the host has no route to ``host`` (an end of bench/wan's emulated path, where only
    the far end is reached, across the path), so its ports are probed from inside ``netns``."""
    root_port = state.port(f"xrootd:{name}:root")
    http_port = state.port(f"xrootd:{name}:http")
    folder = site_folder(state, name)
    site = LocalSite(
        name=name,
        root_port=root_port,
        http_port=http_port,
        data_dir=folder / "data",
        host=host,
        audience=tokens.audience if tokens is not None else "",
    )
    daemon = f"xrootd-{name}"
    if running(state, daemon):
        if (
            port_open(root_port, host)
            and port_open(http_port, host)
            and _enforces(folder, tokens)
            and _marks(folder) == fireflies
        ):
            return site
        # Ours (its PID file), but not where or as it is wanted now (with or without tokens, other issuers).
        stop_daemon(state, daemon)
    ca_dir = ensure_pki(state)
    for sub in ("data", "log"):
        (folder / sub).mkdir(exist_ok=True)
    run_dir = short_run_dir(folder, SERVICE_USER if as_root() else None)
    for sub in ("admin", "run"):
        (run_dir / sub).mkdir(exist_ok=True)
        if as_root():
            chown_tree(run_dir / sub, SERVICE_USER)
    cert, key = credentials or host_credentials(state)
    shutil.copyfile(cert, folder / "hostcert.pem")
    shutil.copyfile(key, folder / "hostkey.pem")
    (folder / "hostkey.pem").chmod(0o600)
    plugin = plugin_lines(state, pacing_bps)
    token_directives = write_token_files(folder, tokens) if tokens is not None else []
    config = folder / "xrootd.cfg"
    config.write_text(
        render_config(
            name=name,
            folder=folder,
            root_port=root_port,
            http_port=http_port,
            ca_dir=ca_dir,
            run_dir=run_dir,
            extra_lines=[
                *plugin,
                *(plugin_metrics_lines(state, name) if plugin else []),
                *([pacing_line(pacing_bps)] if plugin and pacing_bps else []),
                *summary_report_lines(state),
                *(pmark_lines(state, folder) if fireflies else []),
                *token_directives,
                *(extra_lines or []),
            ],
        )
    )
    if as_root():
        chown_tree(folder, SERVICE_USER)
    # No -l: XRootD 5.5 starts its log-rotation thread as soon as it opens a log file, and that thread's
    # first localtime_r (getenv("TZ")) races the main thread's putenv of XRDSITE, XRDADMINPATH and XRDPORT,
    # which reallocates the environment under it: a start-up segfault in getenv (seen twice in one CI run,
    # NLSRC_DISK and CHSRC_DISK, "killed by signal 11" before the first log line). Without a log file the
    # thread never starts; the server logs to stderr, which goes to log/xrootd-<name>.out.
    argv = [require_binary("xrootd"), "-c", str(config), "-n", name]
    if as_root():
        argv[1:1] = ["-R", SERVICE_USER]
    # Not the starting process's XrdCl settings (XRD_*): the transfer service sets a 120 s request timeout
    # for its own client (transfers/executor.py), and a site started from such a process handed it to its
    # third-party-copy program, whose pipelined reads of a paced 300 ms copy wait longer than that ("read at
    # offset 67108864 failed: Operation expired", tests/longhaul/test_tokens.py in a whole run).
    env = {key: value for key, value in os.environ.items() if not key.startswith("XRD_")}
    env.update(plugin_environment(state))
    if tokens is not None and not as_root():
        raise ServiceError(f"site {name}: a token-enforcing site needs root (to trust the issuer's CA)")
    if tokens is not None:
        # scitokens-cpp keeps the issuers' keys in $XDG_CACHE_HOME (the xrootd account has no home).
        env["XDG_CACHE_HOME"] = str(folder / "cache")
        argv = trusting(argv, trust_bundle(state))
    if netns:
        # `ip netns exec` execs xrootd: the PID recorded is the server's own.
        argv[:0] = ["ip", "netns", "exec", netns]
    log_name = f"xrootd-{name}.out"
    pid = start_daemon(state, daemon, argv, env=env, log_name=log_name)
    try:
        inside = None if host_reaches else netns
        wait_for_port(root_port, pid=pid, what=f"xrootd {name}", timeout=20, host=host, netns=inside)
        wait_for_port(http_port, pid=pid, what=f"xrootd {name} (http)", timeout=20, host=host, netns=inside)
    except ServiceError as error:
        # The server's own log says why it did not start (a bad directive, a path too long, a port taken).
        raise ServiceError(f"{error}; its log ends: {_log_tail(state.sub('log') / log_name)}") from error
    return site


def _enforces(folder: Path, tokens: SiteTokens | None) -> bool:
    """Whether the site configured in ``folder`` enforces exactly ``tokens`` (or none, for None)."""
    config, plugin = folder / "xrootd.cfg", folder / "scitokens.cfg"
    loaded = config.exists() and "libXrdAccSciTokens" in config.read_text()
    if tokens is None:
        return not loaded
    return loaded and plugin.exists() and plugin.read_text() == token_config(tokens)


def _marks(folder: Path) -> bool:
    """Whether the site configured in ``folder`` sends fireflies (``xrootd.pmark``)."""
    config = folder / "xrootd.cfg"
    return config.exists() and "xrootd.pmark ffdest" in config.read_text()


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:]) or "(empty)"
    except FileNotFoundError:
        return "(no log written)"


def stop_site(state: StateDir, name: str) -> bool:
    stopped = stop_daemon(state, f"xrootd-{name}")
    # A stopped server's last counters would be served as if it were alive.
    (state.path / "xrootd-metrics" / f"srcnet-wanio-{name}.prom").unlink(missing_ok=True)
    shutil.rmtree(short_run_dir(site_folder(state, name)), ignore_errors=True)
    return stopped


def known_sites(state: StateDir) -> list[str]:
    folder = state.path / "xrootd"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []

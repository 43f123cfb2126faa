"""Booted Debian 12 hosts for the deployment tests: each a systemd-nspawn container with systemd as PID 1,
on its own copy of the cached root file system (an overlay: the cache is the lower layer, every host writes
to an upper layer of its own), in a network namespace of its own the test creates, reached over SSH with
a key the test generates (../shared/reference/booted-hosts.md).

The network: one namespace holds a bridge (``10.251.0.1/24``); each host's namespace is joined to it by a
veth pair and has ``10.251.0.<10+i>``. Addresses exist only inside these namespaces. The controller
(ansible-playbook, ssh) runs in the bridge's namespace. Everything is stopped by PID and removed by
``Fleet.close()``, which the fixture calls also when a test fails."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from localnet.processes import is_alive, stop_pid

SUBNET = "10.251.0"
NSPAWN_RUN = Path("/run/systemd/nspawn")


class HostError(RuntimeError):
    pass


def _run(argv: list[str], *, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise HostError(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr.strip()[-2000:]}")
    return result


@dataclass
class BootedHost:
    """One booted machine: its name, address, namespace, root file system and the nspawn PID."""

    name: str
    address: str
    netns: str
    root: Path
    pid: int = 0
    log: Path | None = None

    def leader(self) -> int:
        """The container's PID 1 (systemd), the child of the nspawn process."""
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        text = children.read_text().split() if children.exists() else []
        if not text:
            raise HostError(f"{self.name}: nspawn {self.pid} has no child")
        return int(text[0])


@dataclass
class Fleet:
    """The hosts of one test run, their network and the controller's SSH key."""

    workdir: Path
    rootfs: Path
    tag: str = field(default_factory=lambda: f"sdp{os.getpid()}")
    hosts: dict[str, BootedHost] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    mounts: list[Path] = field(default_factory=list)
    # Where the controller (ssh, ansible-playbook) runs: the bridge's namespace, or one the caller names
    # when the hosts live in namespaces made by someone else (bench/deploy: the WAN emulator's path ends).
    controller_netns: str | None = None

    @property
    def lan(self) -> str:
        return self.controller_netns or f"{self.tag}-lan"

    @property
    def key(self) -> Path:
        return self.workdir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.workdir / "known_hosts"

    # --- set-up ---

    def open(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.key.exists():
            _run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    "srcnet-deploy-test",
                    "-f",
                    str(self.key),
                ]
            )
        NSPAWN_RUN.mkdir(parents=True, exist_ok=True)
        if _run(["mountpoint", "-q", str(NSPAWN_RUN)], check=False).returncode != 0:
            # nspawn refuses to run without it on a host without systemd (booted-hosts.md, step 3).
            _run(["mount", "-t", "tmpfs", "tmpfs", str(NSPAWN_RUN)])
        if self.controller_netns is not None:
            return  # the caller's network
        self._netns(self.lan)
        self.lan_exec(["ip", "link", "add", "br0", "type", "bridge"])
        self.lan_exec(["ip", "link", "set", "br0", "mtu", "9000", "up"])
        self.lan_exec(["ip", "addr", "add", f"{SUBNET}.1/24", "dev", "br0"])
        self.lan_exec(["ip", "link", "set", "lo", "up"])

    def _netns(self, name: str) -> None:
        _run(["ip", "netns", "add", name])
        self.namespaces.append(name)

    def lan_exec(self, argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return _run(["ip", "netns", "exec", self.lan, *argv], **kwargs)  # type: ignore[arg-type]

    def add(self, name: str, *, mtu: int = 1500) -> BootedHost:
        """Prepare a host (network, root file system, SSH); ``boot()`` starts them all. ``mtu``: its
        interface's MTU as it boots (the DTN role raises the storage hosts' to 9000 itself)."""
        index = len(self.hosts)
        host = BootedHost(
            name=name,
            address=f"{SUBNET}.{10 + index}",
            netns=f"{self.tag}-{name}",
            root=self.workdir / "hosts" / name / "root",
        )
        self._netns(host.netns)
        peer = f"v{index}"
        _run(
            [
                "ip",
                "-n",
                self.lan,
                "link",
                "add",
                peer,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                host.netns,
            ]
        )
        _run(["ip", "-n", self.lan, "link", "set", peer, "mtu", "9000", "master", "br0", "up"])
        _run(["ip", "-n", host.netns, "addr", "add", f"{host.address}/24", "dev", "eth0"])
        _run(["ip", "-n", host.netns, "link", "set", "eth0", "mtu", str(mtu), "up"])
        _run(["ip", "-n", host.netns, "link", "set", "lo", "up"])
        _run(["ip", "-n", host.netns, "route", "add", "default", "via", f"{SUBNET}.1"])
        self._root(host)
        self.hosts[name] = host
        return host

    def attach(self, name: str, netns: str, address: str) -> BootedHost:
        """Prepare a host living in an existing namespace at ``address`` (not removed by ``close()``)."""
        root = self.workdir / "hosts" / name / "root"
        host = BootedHost(name=name, address=address, netns=netns, root=root)
        self._root(host)
        self.hosts[name] = host
        return host

    def _root(self, host: BootedHost) -> None:
        base = host.root.parent
        upper, work = base / "upper", base / "work"
        for folder in (upper, work, host.root):
            folder.mkdir(parents=True, exist_ok=True)
        options = f"lowerdir={self.rootfs},upperdir={upper},workdir={work}"
        _run(["mount", "-t", "overlay", "overlay", "-o", options, str(host.root)])
        self.mounts.append(host.root)
        ssh = host.root / "root" / ".ssh"
        ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
        (ssh / "authorized_keys").write_text(self.key.with_suffix(".pub").read_text())
        (ssh / "authorized_keys").chmod(0o600)
        # Host keys of its own, and the controller knows them: no host key checking switched off.
        _run(["ssh-keygen", "-A", "-f", str(host.root)])
        public = (host.root / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
        with open(self.known_hosts, "a") as known:
            known.write(f"{host.address} {public[0]} {public[1]}\n")
        (host.root / "etc/hostname").write_text(host.name + "\n")
        # No DNS on this network (names are in /etc/hosts): without a nameserver line a lookup fails at once,
        # where the build machine's nameserver, unreachable from here, makes every one wait for time-outs.
        (host.root / "etc/resolv.conf").unlink(missing_ok=True)
        (host.root / "etc/resolv.conf").write_text("# no DNS on the deployment test network\n")

    def boot(self, *, timeout: float = 120) -> None:
        """Boot every host added and wait until each answers over SSH with systemd running."""
        names = "\n".join(f"{h.address} {h.name}" for h in self.hosts.values())
        for host in self.hosts.values():
            (host.root / "etc/hosts").write_text(f"127.0.0.1 localhost\n{names}\n")
            host.log = host.root.parent / "console.log"
            with open(host.log, "wb") as out:
                process = subprocess.Popen(
                    [
                        "systemd-nspawn",
                        "--quiet",
                        "-D",
                        str(host.root),
                        "-M",
                        host.name,
                        "--register=no",
                        "--keep-unit",
                        "-b",
                        "--console=pipe",
                        "--resolv-conf=off",
                        f"--network-namespace-path=/run/netns/{host.netns}",
                        # nspawn keeps CAP_NET_ADMIN only for networks it makes itself; this namespace is the
                        # host's own, which it tunes (sysctls, MTU, qdisc) as a real machine does.
                        "--capability=CAP_NET_ADMIN",
                    ],
                    # /proc/sys/net writable, as on a machine that owns its network namespace (nspawn does
                    # this by itself only with --private-network).
                    env={**os.environ, "SYSTEMD_NSPAWN_API_VFS_WRITABLE": "network"},
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            host.pid = process.pid
        deadline = time.monotonic() + timeout
        for host in self.hosts.values():
            while True:
                if not is_alive(host.pid):
                    raise HostError(f"{host.name}: nspawn exited; console: {self.console_tail(host)}")
                state = self.ssh(host, ["systemctl", "is-system-running", "--wait"], check=False, timeout=30)
                if state.stdout.strip() in ("running", "degraded"):
                    break
                if time.monotonic() > deadline:
                    raise HostError(f"{host.name} did not boot: {state.stdout} {state.stderr}")
                time.sleep(1)

    def console_tail(self, host: BootedHost) -> str:
        if host.log is None or not host.log.exists():
            return "(none)"
        return " | ".join(host.log.read_text(errors="replace").splitlines()[-10:])

    # --- reaching the hosts ---

    def ssh_options(self) -> list[str]:
        return [
            "-i",
            str(self.key),
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "ConnectTimeout=3",
            "-o",
            "BatchMode=yes",
        ]

    def ssh(
        self, host: BootedHost, argv: list[str], *, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        command = " ".join(_quote(a) for a in argv)
        return self.lan_exec(
            ["ssh", *self.ssh_options(), f"root@{host.address}", command], check=check, timeout=timeout
        )

    # --- tear-down ---

    def close(self) -> list[str]:
        """Stop every host by its nspawn PID (SIGTERM halts it cleanly; SIGKILL after 40 s), all at once
        (each host's shutdown waits on its own services' stop timeouts), unmount, remove the namespaces and
        the work folder. Returns what could not be cleaned (empty when all went)."""
        problems: list[str] = []
        running = [host for host in self.hosts.values() if host.pid and is_alive(host.pid)]
        with ThreadPoolExecutor(max_workers=max(len(running), 1)) as pool:
            list(pool.map(lambda host: stop_pid(host.pid, timeout=40, sig=signal.SIGTERM), running))
        for host in running:
            if is_alive(host.pid):
                problems.append(f"nspawn {host.pid} ({host.name}) still alive")
        for mount in reversed(self.mounts):
            if _run(["umount", str(mount)], check=False).returncode != 0:
                _run(["umount", "-l", str(mount)], check=False)
                problems.append(f"{mount} needed a lazy unmount")
        self.mounts.clear()
        for name in reversed(self.namespaces):
            if _run(["ip", "netns", "del", name], check=False).returncode != 0:
                problems.append(f"netns {name} not removed")
        self.namespaces.clear()
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.workdir)
        return problems


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)

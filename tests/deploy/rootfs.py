"""The Debian 12 root file system the booted test hosts start from: built once with debootstrap from
Debian's own packages and the apt mirror this machine already uses, cached outside the checkout under
``/var/cache/srcnet-rootfs/<hash of the package list>``, and copied (reflink where the file system can)
for every host of every run.

The hosts have no internet. Every Debian package the roles install is therefore already in the cached
root file system; the roles still declare each of them with ``state: present``, which on a host made
from this image is a no-op and on a real host installs it. Python wheels reach the hosts as a
wheelhouse (tests/deploy/wheelhouse.py)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

CACHE_ROOT = Path(os.environ.get("SRCNET_ROOTFS_CACHE", "/var/cache/srcnet-rootfs"))
SUITE = "bookworm"

# What debootstrap itself installs: a host that boots (systemd as PID 1) and that Ansible can reach.
BOOT_PACKAGES = ["systemd", "systemd-sysv", "dbus", "python3", "openssh-server", "iproute2", "procps"]
# What the roles install on the hosts (ansible/roles/*/tasks: the same names, state=present), and what
# Ansible's own modules need on a Debian target (python3-apt for apt, python3-psycopg2 for postgresql_*).
ROLE_PACKAGES = [
    "acl",
    "ca-certificates",
    "openssl",
    "python3-apt",
    "python3-venv",
    "python3-psycopg2",
    "postgresql",
    "redis-server",
    "xrootd-server",
    "xrootd-client",
    "xrootd-server-plugins",
    "xrootd-scitokens-plugins",
    "python3-xrootd",
    "gfal2",
    "gfal2-plugin-xrootd",
    "gfal2-plugin-http",
    "gfal2-plugin-file",
    "python3-gfal2",
    "davix",
    # The token issuer's Java (role token_issuer).
    "openjdk-17-jre-headless",
]
# The monitoring role's packages (ansible/roles/monitoring), installed as the role installs them: without
# their recommends (smartmontools and friends, whose daemons have nothing to watch in a container).
MONITORING_PACKAGES = ["prometheus", "prometheus-alertmanager", "prometheus-node-exporter"]
# Units Debian enables when their package is installed: off in the image, so a host runs only what
# its roles start (the roles enable them where they belong).
DISABLED_UNITS = [
    "postgresql.service",
    "redis-server.service",
    "prometheus.service",
    "prometheus-alertmanager.service",
    "prometheus-node-exporter.service",
]


class RootfsError(RuntimeError):
    pass


def mirror() -> str:
    """The Debian mirror of this machine's apt sources (deb822 ``.sources`` or a one-line list)."""
    for source in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        text = source.read_text()
        for stanza in text.split("\n\n"):
            if re.search(rf"^Suites:.*\b{SUITE}\b", stanza, re.M) and "security" not in stanza:
                match = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
                if match:
                    return match.group(1)
    listing = Path("/etc/apt/sources.list")
    if listing.exists():
        for line in listing.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and parts[2] == SUITE:
                return parts[1]
    raise RootfsError("no Debian bookworm mirror found in /etc/apt/sources.list.d/*.sources")


def package_hash() -> str:
    recipe = "\n".join(
        [SUITE, *BOOT_PACKAGES, "--", *ROLE_PACKAGES, "--", *MONITORING_PACKAGES, "--", *DISABLED_UNITS, "v1"]
    )
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def cached_rootfs() -> Path:
    """The cached root file system, built first when absent (a few minutes, once per package list)."""
    target = CACHE_ROOT / package_hash()
    if (target / ".complete").exists():
        return target
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    with open(CACHE_ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run may be building the same one
        if not (target / ".complete").exists():
            _build(target)
    return target


def _build(target: Path) -> None:
    work = target.with_name(target.name + ".building")
    shutil.rmtree(work, ignore_errors=True)
    log = CACHE_ROOT / f"{target.name}.log"
    with open(log, "w") as out:

        def step(argv: list[str], timeout: int) -> None:
            out.write(f"$ {' '.join(argv)}\n")
            out.flush()
            result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False)
            if result.returncode != 0:
                raise RootfsError(f"{' '.join(argv[:3])} failed; see {log}")

        step(["debootstrap", f"--include={','.join(BOOT_PACKAGES)}", SUITE, str(work), mirror()], 1200)
        # Packages installed in the chroot must not start their daemons here: policy-rc.d says no.
        policy = work / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        subprocess.run(["mount", "-t", "proc", "proc", str(work / "proc")], check=True)
        try:
            env = "DEBIAN_FRONTEND=noninteractive"
            step(["chroot", str(work), "env", env, "apt-get", "install", "-y", "-q", *ROLE_PACKAGES], 1200)
            step(
                ["chroot", str(work), "env", env, "apt-get", "install", "-y", "-q", "--no-install-recommends",
                 *MONITORING_PACKAGES],
                1200,
            )  # fmt: skip
            step(["chroot", str(work), "apt-get", "clean"], 60)
            step(["chroot", str(work), "systemctl", "disable", *DISABLED_UNITS], 60)
        finally:
            subprocess.run(["umount", str(work / "proc")], check=False)
        policy.unlink()
        # Each booted copy gets its own machine id and SSH host keys (tests/deploy/hosts.py).
        (work / "etc/machine-id").write_text("")
        for key in (work / "etc/ssh").glob("ssh_host_*"):
            key.unlink()
    (work / ".complete").write_text(package_hash() + "\n")
    work.rename(target)


if __name__ == "__main__":
    print(cached_rootfs())

#!/usr/bin/env bash
# `make test` as a newcomer runs it on a new Debian 12 machine, measured on this one: a minimal Debian 12
# (debootstrap minbase, plus git and make to clone and run it) entered as a machine's root (pivot_root in a
# mount namespace of its own), sharing this machine's kernel and network (as a fresh machine of this kind
# has no systemd either, none is booted), a fresh clone
# of the project at a deep path inside it, then `make test` there, timed, bootstrap included. Nothing of
# this machine's installs, caches or virtual environments is visible inside. docs/testing.md.
#
#   scripts/fresh-machine.sh [REVISION]     # default HEAD of this checkout; needs root and debootstrap
#
# Prints the wall time of the whole `make test` and leaves its output in /var/tmp/srcnet-fresh-results/; the
# new root is removed at the end (SRCNET_FRESH_KEEP=1 keeps it), its mounts also when the run fails.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
revision=${1:-HEAD}
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh-machine: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }

root=/var/tmp/srcnet-fresh-$$
results=${SRCNET_FRESH_RESULTS:-/var/tmp/srcnet-fresh-results}
mkdir -p "$results"
mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
mirror=${mirror:-http://deb.debian.org/debian}

mounted=()
cleanup() {
  local i pid target
  # Whatever still runs inside (a background build the run left behind), by its PID, then every mount below
  # the root, the deepest first (the booted hosts' root file system build mounts /proc and /sys of its own).
  local namespace
  namespace=$(cat "$root/.fresh-mount-ns" 2>/dev/null || true)
  for signal in TERM KILL; do
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
      if [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] ||
        { [ -n "$namespace" ] && [ "$(readlink "/proc/$pid/ns/mnt" 2>/dev/null)" = "$namespace" ]; }; then
        kill "-$signal" "$pid" 2>/dev/null
      fi
    done
    sleep 2
  done
  for target in $(awk -v r="$root/" 'index($5, r) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount -l "$target" 2>/dev/null || true
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
  done
  if [ -z "${SRCNET_FRESH_KEEP:-}" ]; then
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT

echo "fresh-machine: debootstrap into $root" >&2
debootstrap --variant=minbase --include=git,make,ca-certificates,procps bookworm "$root" "$mirror" \
  >"$results/debootstrap-$$.log" 2>&1
cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A machine's own name and how it resolves (debootstrap writes neither): XRootD stops at start-up when the
# host name does not resolve ("Unable to determine host name").
cp /etc/hostname /etc/hosts "$root/etc/"
# What every machine of this kind comes with, not the project: the certificate authorities and the pip and
# apt settings through which it reaches the package registries.
cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
cp /etc/apt/apt.conf.d/99artifact-registry "$root/etc/apt/apt.conf.d/" 2>/dev/null || true

# What a machine has of its own: /proc, /sys, /dev (the TUN device among them) and an empty /run. /tmp stays
# on disk, as on the machines of this kind: the plugin's read-ahead test evicts a file from the page cache,
# which a tmpfs /tmp cannot do (it failed there).
# Its root a mount point of its own, as a machine's is: `ip netns exec` (the booted-host tests) makes `/` a
# slave mount in its namespace, which fails on a chroot's plain folder ("mount --make-rslave /" failed).
mount --bind "$root" "$root" && mounted+=("$root")
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" && mounted+=("$root/sys")
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" && mounted+=("$root/dev")
mount -t tmpfs tmpfs "$root/run" && mounted+=("$root/run")

# The clone: this checkout's revision, at a deep path, as a newcomer's.
deep=/home/newcomer/src/github.com/ska/srcnet-platform/checkouts/main/srcnet
git -C "$here" bundle create "$root/project.bundle" "$revision" >/dev/null 2>&1
chroot "$root" git clone -q /project.bundle "$deep"
commit=$(chroot "$root" git -C "$deep" rev-parse --short HEAD)

echo "fresh-machine: make test at $commit in $deep" >&2
log="$results/make-test-$commit-$$.log"
begun=$(date +%s)
status=0
# The machine's own environment for the registries (certificates, pip's settings) and nothing else.
machine_env=()
for name in $(compgen -e); do
  case "$name" in
    PIP_DEFAULT_TIMEOUT | PIP_DISABLE_PIP_VERSION_CHECK | PIP_CERT | SSL_CERT_FILE | SSL_CERT_DIR | \
      REQUESTS_CA_BUNDLE | CURL_CA_BUNDLE | GIT_SSL_CAINFO | http_proxy | https_proxy | no_proxy)
      machine_env+=("$name=${!name}") ;;
  esac
done
# Entered as a machine's root, not by chroot: a mount namespace of its own whose root is the new system
# (pivot_root, the host's tree detached). The kernel refuses a chrooted process a user namespace, and
# systemd makes one for the sandboxed services of the booted hosts (their Redis failed: "Failed to set up
# user namespacing"). Its processes are found again by that namespace (cleanup).
unshare --mount --propagation private --fork -- /bin/sh -c '
  readlink /proc/self/ns/mnt >"$1/.fresh-mount-ns"
  cd "$1" && mkdir -p .old-root && pivot_root . .old-root && cd / && umount -l /.old-root && rmdir /.old-root
  shift
  exec "$@"' fresh "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 CI=true "${machine_env[@]}" bash -c "cd $deep && make test" </dev/null >"$log" 2>&1 ||
  status=$?
took=$(($(date +%s) - begun))
printf 'fresh-machine: make test at %s exited %s after %d min %02d s (log: %s)\n' \
  "$commit" "$status" $((took / 60)) $((took % 60)) "$log"
tail -n 40 "$log"
exit "$status"

#!/usr/bin/env bash
# Idempotent set-up of everything the project needs on Debian 12: the Debian packages, a virtual
# environment made from Debian's Python (which carries the gfal2 and XRootD bindings) and the project
# installed into it. A second run finds everything in place and takes about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  # storage and transfer stack
  xrootd-server xrootd-client xrootd-server-plugins python3-xrootd
  # token-enforcing storage (WLCG JWT profile) and the local token issuer, Keycloak, a Java service
  xrootd-scitokens-plugins openjdk-17-jre-headless
  gfal2 gfal2-plugin-xrootd gfal2-plugin-http gfal2-plugin-file gfal2-plugin-mock python3-gfal2
  gfal2-util-scripts python3-gfal2-util davix
  # databases and broker
  postgresql redis-server
  # python
  python3-venv python3-dev
  # C++ plugin, WAN emulator, benchmarks
  build-essential cmake clang-format zlib1g-dev libxrootd-server-dev libxrootd-client-dev googletest libgtest-dev
  iperf3 iproute2 openssl curl strace
  # modprobe: the long-haul sites run BBR, a module (tcp_bbr) on Debian's kernel
  kmod
  # libFuzzer for the plugin's fuzz targets: clang only recommends its runtime (libclang-rt)
  clang libclang-rt-14-dev
  # setfacl: the platform's service account is granted search on the folders above a private checkout
  acl
  # the fts3 client builds M2Crypto when no wheel fits
  swig libssl-dev
  # ansible/ and its booted-host tests (tests/deploy): Debian 12 hosts made by debootstrap, booted by nspawn
  ansible ansible-lint debootstrap systemd-container openssh-client
  # monitoring: the local network's Prometheus, Alertmanager and node exporter (docs/monitoring.md)
  prometheus prometheus-alertmanager prometheus-node-exporter
)

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q "${missing[@]}"
fi

# Debian's python3 is the one with the gfal2 and XRootD bindings; never the one first on PATH.
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv from /usr/bin/python3" >&2
  /usr/bin/python3 -m venv --system-site-packages .venv
fi

# Reinstall only when the declared dependencies changed.
stamp=.venv/.srcnet-install-stamp
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing the project into .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  echo "$want" > "$stamp"
fi

# >>> rucio server venv (owned by the Rucio integration; see docs/rucio.md) >>>
# The Rucio server and its daemons run from their own venv: rucio 41.5.1 pins packaging<=26.2 while
# celery's kombu wants a newer one, so they cannot share .venv. Fast no-op when the pinned set is there.
rucio_stamp=.venv-rucio/.srcnet-rucio-stamp
rucio_want="rucio==41.5.1 psycopg[binary] gunicorn"
if [ ! -x .venv-rucio/bin/python ]; then
  echo "bootstrap: creating .venv-rucio from /usr/bin/python3" >&2
  /usr/bin/python3 -m venv --system-site-packages .venv-rucio
fi
if [ ! -f "$rucio_stamp" ] || [ "$(cat "$rucio_stamp")" != "$rucio_want" ]; then
  echo "bootstrap: installing the Rucio server into .venv-rucio" >&2
  .venv-rucio/bin/python -m pip install -q 'rucio==41.5.1' 'psycopg[binary]' gunicorn
  echo "$rucio_want" > "$rucio_stamp"
fi
# <<< rucio server venv <<<

# >>> portal browser tests (owned by the portal; see docs/portal.md) >>>
# tests/browser drive Debian's headless Chromium through Debian's chromedriver (Selenium, in the dev
# extras): no browser download at test time. Fast no-op when both are installed.
portal_missing=()
for pkg in chromium chromium-driver; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    portal_missing+=("$pkg")
  fi
done
if ((${#portal_missing[@]})); then
  echo "bootstrap: installing Debian packages for the browser tests: ${portal_missing[*]}" >&2
  portal_sudo=()
  [ "$(id -u)" -eq 0 ] || portal_sudo=(sudo)
  "${portal_sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${portal_sudo[@]}" apt-get install -y -q "${portal_missing[@]}"
fi
# <<< portal browser tests <<<

# The local network's token issuer (docs/tokens.md); a no-op when installed and built.
bash scripts/install-keycloak.sh

# The C++ XRootD plugin the local sites load (xrootd-plugins/README.md); a no-op when up to date.
bash xrootd-plugins/build.sh >/dev/null

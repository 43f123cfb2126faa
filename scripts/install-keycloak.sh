#!/usr/bin/env bash
# The local network's token issuer (localnet/issuer.py, docs/tokens.md): Keycloak from Maven Central,
# checked against the digest pinned here, unpacked once, with the project's WLCG claim mappers added and
# its build-time options applied (`kc.sh build`). Idempotent: a second run checks a stamp and returns.
set -euo pipefail
cd "$(dirname "$0")/.."

version=26.4.0
sha512=068b1a93d1e91c583e0c4497bd3c0fd272043b5ef91b029617a600f803b582ce141ef9a79e56b26071addbe618288e19bfb418f2abe1f271fb8fcb2629708a80
url="https://repo1.maven.org/maven2/org/keycloak/keycloak-quarkus-dist/${version}/keycloak-quarkus-dist-${version}.tar.gz"
# Keep in step with localnet/issuer.py (keycloak_home, BUILD_OPTIONS).
if [ -n "${SRCNET_KEYCLOAK_ROOT:-}" ]; then
  root=$SRCNET_KEYCLOAK_ROOT
elif [ "$(id -u)" -eq 0 ]; then
  root=/opt/srcnet
else
  root=${XDG_DATA_HOME:-$HOME/.local/share}/srcnet
fi
home=$root/keycloak-$version
build_options=(--db=dev-file --features=token-exchange,dynamic-scopes,scripts --health-enabled=true)

want=$(cat localnet/keycloak/keycloak-scripts.json localnet/keycloak/wlcg-nbf.js localnet/keycloak/wlcg-audience.js | sha256sum | cut -d' ' -f1)
want="$want ${build_options[*]}"
stamp=$home/.srcnet-build-stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

mkdir -p "$root"
if [ ! -x "$home/bin/kc.sh" ]; then
  archive=$root/keycloak-quarkus-dist-$version.tar.gz
  if [ ! -f "$archive" ] || ! echo "$sha512  $archive" | sha512sum --check --status; then
    echo "bootstrap: downloading Keycloak $version from Maven Central" >&2
    curl -fsSL --retry 3 -o "$archive.part" "$url"
    echo "$sha512  $archive.part" | sha512sum --check --status || {
      echo "bootstrap: the Keycloak archive does not match its pinned SHA-512" >&2
      rm -f "$archive.part"
      exit 1
    }
    mv "$archive.part" "$archive"
  fi
  tar -xzf "$archive" -C "$root"
fi

# From here on the installation changes: a run that stops part-way leaves no stamp, so the next one redoes it.
rm -f "$stamp"
# The claim mapper is a script provider: a jar holding the script and its descriptor (no compiler needed).
/usr/bin/python3 - "$home/providers/srcnet-wlcg.jar" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as jar:
    jar.write("localnet/keycloak/keycloak-scripts.json", "META-INF/keycloak-scripts.json")
    jar.write("localnet/keycloak/wlcg-nbf.js", "wlcg-nbf.js")
    jar.write("localnet/keycloak/wlcg-audience.js", "wlcg-audience.js")
PY
echo "bootstrap: building Keycloak (${build_options[*]})" >&2
"$home/bin/kc.sh" build "${build_options[@]}" >/dev/null
# The issuer runs as an unprivileged account: everything here is read-only to it.
chmod -R a+rX "$root"
echo "$want" > "$stamp"

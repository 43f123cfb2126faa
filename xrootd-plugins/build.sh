#!/bin/sh
# Builds the wanio XRootD plugin, the xrdcp-wan TPC program and the unit tests.
#   ./build.sh          -> build/       (normal build)
#   ./build.sh --asan   -> build-asan/  (AddressSanitizer + UndefinedBehaviorSanitizer)
# Idempotent: re-running with nothing changed is a fast no-op.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir="$here/build"
extra="-DCMAKE_BUILD_TYPE=RelWithDebInfo"
case "${1:-}" in
  # Debug (-O0) compiles much faster; the sanitizers do not need optimisation.
  --asan) dir="$here/build-asan"; extra="-DWANIO_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" ;;
  "") ;;
  *) echo "usage: $0 [--asan]" >&2; exit 2 ;;
esac
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$dir" $extra >/dev/null
fi
cmake --build "$dir" -j2

#!/bin/sh
# Builds the wanio XRootD plugin, the xrdcp-wan TPC program and the unit tests.
#   ./build.sh          -> build/       (normal build)
#   ./build.sh --asan   -> build-asan/  (AddressSanitizer + UndefinedBehaviorSanitizer)
# Idempotent: re-running with nothing changed is a fast no-op.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir="$here/build"
extra=""
case "${1:-}" in
  --asan) dir="$here/build-asan"; extra="-DWANIO_SANITIZE=ON" ;;
  "") ;;
  *) echo "usage: $0 [--asan]" >&2; exit 2 ;;
esac
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo $extra >/dev/null
fi
cmake --build "$dir" -j2

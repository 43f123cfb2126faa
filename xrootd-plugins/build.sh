#!/bin/sh
# Builds the wanio XRootD plugin, the xrdcp-wan TPC program and the unit tests.
#   ./build.sh          -> build/       (normal build)
#   ./build.sh --asan   -> build-asan/  (AddressSanitizer + UndefinedBehaviorSanitizer)
#   ./build.sh --fuzz   -> build-fuzz/  (libFuzzer targets, clang, ASan + UBSan; run-fuzz.sh)
# Idempotent: re-running with nothing changed is a fast no-op.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir="$here/build"
extra="-DCMAKE_BUILD_TYPE=RelWithDebInfo"
case "${1:-}" in
  # Debug (-O0) compiles much faster; the sanitizers do not need optimisation.
  --asan) dir="$here/build-asan"; extra="-DWANIO_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" ;;
  # libFuzzer comes with clang only. Optimised: a fuzzer's worth is executions per second.
  --fuzz)
    if ! command -v clang++ >/dev/null; then
      echo "$0: --fuzz needs clang++ and libclang-rt-14-dev (scripts/bootstrap.sh)" >&2; exit 1
    fi
    dir="$here/build-fuzz"
    extra="-DWANIO_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo" ;;
  "") ;;
  *) echo "usage: $0 [--asan|--fuzz]" >&2; exit 2 ;;
esac
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$dir" $extra >/dev/null
fi
cmake --build "$dir" -j2

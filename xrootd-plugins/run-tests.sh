#!/bin/sh
# Builds the plugin (normal and ASan/UBSan), runs the GoogleTest units of both
# builds through ctest, then the integration tests against real xrootd servers.
# Must run as root (xrootd is started as user 'xrootd'; the disk-full test mounts a tmpfs).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
python=${PYTHON:-/usr/bin/python3}

"$here/build.sh"
"$here/build.sh" --asan

echo "== ctest: normal build"
(cd "$here/build" && ctest --output-on-failure --timeout 300)
echo "== ctest: AddressSanitizer + UndefinedBehaviorSanitizer build"
(cd "$here/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure --timeout 600)

echo "== integration tests (real xrootd, xrdcp, xrdfs, curl, gfal-copy on 127.0.0.1)"
cd "$repo"
# --confcutdir: these tests need only the standard library, not the project's
# Django fixtures in tests/conftest.py.
exec "$python" -m pytest --confcutdir tests/xrootd_plugin -q tests/xrootd_plugin "$@"

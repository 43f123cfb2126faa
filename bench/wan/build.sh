#!/bin/sh
# Idempotent build of the WAN emulator: make is a fast no-op when build/wanemu
# is newer than its sources.  Never more than -j2 (shared 2-core machine).
set -eu
cd "$(dirname "$0")"
exec make -s -j2 build/wanemu

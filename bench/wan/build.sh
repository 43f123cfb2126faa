#!/bin/sh
# Idempotent build of the WAN emulators (wanemu: one path; wannet: a network):
# make is a fast no-op when build/ is newer than the sources.  Never more than -j2 (shared 2-core machine).
set -eu
cd "$(dirname "$0")"
exec make -s -j2 build/wanemu build/wannet

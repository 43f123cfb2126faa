#!/usr/bin/env bash
# The whole test suite (what `make test` and CI run): the static checks (scripts/lint.sh), the C++ plugin's
# unit tests (normal and under ASan/UBSan), then every Python test against real PostgreSQL, Redis, XRootD
# servers, Celery workers and emulated long-haul paths. Arguments go to pytest (e.g. `make test PYTEST_ARGS="tests/unit -x"`).
set -euo pipefail
cd "$(dirname "$0")/.."

# A subset run (PYTEST_ARGS given) skips the static checks; the whole suite, as CI runs it, starts with them.
if [ "$#" -eq 0 ]; then
  bash scripts/lint.sh
fi

if [ -z "${SRCNET_SKIP_NATIVE:-}" ]; then
  bash xrootd-plugins/build.sh
  bash xrootd-plugins/build.sh --asan
  bash bench/wan/build.sh
  ctest --test-dir xrootd-plugins/build --output-on-failure
  ctest --test-dir xrootd-plugins/build-asan --output-on-failure
  # The plugin's directive and xrdcp-wan argument parsers under libFuzzer, ~3 minutes in all.
  bash xrootd-plugins/build.sh --fuzz
  bash xrootd-plugins/run-fuzz.sh
fi
# The slowest tests are listed at the end, to see where the suite's time goes (CI prints the tail). The
# paths come first: `localnet test` hands pytest everything from its first positional argument on.
if [ "$#" -eq 0 ]; then
  set -- tests
fi
exec .venv/bin/python -m localnet test "$@" --durations=25

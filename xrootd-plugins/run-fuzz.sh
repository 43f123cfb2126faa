#!/bin/sh
# Runs the libFuzzer targets of build-fuzz/ (build.sh --fuzz) for a bounded time each,
# two at a time, one per core (CI runs this from scripts/test.sh):
#   ./run-fuzz.sh [TARGET...]                       # all targets, 40 s each
#   WANIO_FUZZ_SECONDS=3600 ./run-fuzz.sh FuzzConfig  # a longer local run
#   WANIO_FUZZ_JOBS=1 ./run-fuzz.sh                 # one after the other
# Fails if any target reports a crash, a failed property check, a leak, undefined
# behaviour, a slow input (over 5 s) or memory over 2 GB. The input is kept as
# build-fuzz/artifacts/<target>-<kind>-<sha1>; reproduce with build-fuzz/<target> <file>.
# New inputs are added to build-fuzz/corpus/<target> (the checked-in seeds in
# tests/fuzz/corpus/ are only read), so repeated local runs start where the last ended.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir="$here/build-fuzz"
seconds=${WANIO_FUZZ_SECONDS:-40}
targets=${*:-FuzzConfig FuzzTpcArgs FuzzSize FuzzTraceIdent}

for t in $targets; do
  if [ ! -x "$dir/$t" ]; then
    echo "run-fuzz: no $dir/$t: run $here/build.sh --fuzz first" >&2
    exit 1
  fi
done
mkdir -p "$dir/artifacts" "$dir/logs"
# UBSan's report gets a stack trace; -fno-sanitize-recover already makes it fatal.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

jobs=${WANIO_FUZZ_JOBS:-2}

# One target: its verdict goes to $dir/logs/<target>.verdict, read when all have ended.
fuzz_one() {
  t=$1
  mkdir -p "$dir/corpus/$t"
  log="$dir/logs/$t.log"
  # -max_len: libFuzzer would otherwise take it from the longest seed.
  if "$dir/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -max_len=4096 \
       -print_final_stats=1 -dict="$here/tests/fuzz/$t.dict" \
       -artifact_prefix="$dir/artifacts/$t-" \
       "$dir/corpus/$t" "$here/tests/fuzz/corpus/$t" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    corpus=$(find "$dir/corpus/$t" -type f | wc -l)
    printf 'run-fuzz: %-15s ok  %10s runs in %ss, %8s exec/s, %s, corpus %s\n' \
      "$t" "$runs" "$seconds" "$rate" "$cov" "$corpus" >"$dir/logs/$t.verdict"
  else
    echo FAILED >"$dir/logs/$t.verdict"
  fi
}

running=0
pids=""
for t in $targets; do
  rm -f "$dir/logs/$t.verdict"
  fuzz_one "$t" &
  pids="$pids $!"
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    for pid in $pids; do wait "$pid" || true; done
    running=0
    pids=""
  fi
done
for pid in $pids; do wait "$pid" || true; done

failed=""
for t in $targets; do
  verdict=$(cat "$dir/logs/$t.verdict" 2>/dev/null || echo FAILED)
  if [ "$verdict" = FAILED ]; then
    echo "run-fuzz: $t FAILED (log: $dir/logs/$t.log):" >&2
    tail -n 60 "$dir/logs/$t.log" >&2
    failed="$failed $t"
  else
    echo "$verdict"
  fi
done
if [ -n "$failed" ]; then
  echo "run-fuzz: failed:$failed; inputs kept in $dir/artifacts/" >&2
  exit 1
fi

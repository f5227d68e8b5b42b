#!/bin/sh
# Bounded fuzzing (CI runs it): builds the cargo-fuzz targets (nightly
# toolchain, cargo-fuzz installed) and runs each for SECONDS (default 60) from
# a scratch copy of its committed corpus, so the corpus in the repository
# does not grow. Exits non-zero on the first crash; libFuzzer leaves the
# input that crashed in fuzz/artifacts/TARGET/.
#
#   fuzz/run.sh            # 5 targets x 60 s, plus the build
#   fuzz/run.sh 10         # a smoke run
#
# FUZZ_BUILD picks the build: "dev" (default; unoptimised with debug
# assertions and overflow checks, address sanitizer; builds in ~2 min on two
# cores and still runs thousands of inputs a second) or "release" (-O: faster
# fuzzing, a 6-12 min build). FUZZ_TARGET_DIR keeps the build somewhere that
# outlives the checkout (CI uses a cache directory), so a re-run pays nothing.
set -eu
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
targets="pg_backend mysql_packets target_spec plan_file store_damaged"
case "${FUZZ_BUILD:-dev}" in
    dev) mode=--dev ;;
    release) mode=-O ;;
    *) echo "fuzz: FUZZ_BUILD must be dev or release, not ${FUZZ_BUILD}" >&2; exit 2 ;;
esac
set -- "$mode"
if [ -n "${FUZZ_TARGET_DIR:-}" ]; then set -- "$mode" --target-dir "$FUZZ_TARGET_DIR"; fi
start=$(date +%s)
if ! cargo +nightly fuzz build "$@" >"${TMPDIR:-/tmp}/tidemark-fuzz-build.log" 2>&1; then
    tail -40 "${TMPDIR:-/tmp}/tidemark-fuzz-build.log"
    echo "fuzz: the build failed (log above)" >&2
    exit 1
fi
built=$(date +%s)
echo "fuzz: built in $((built - start)) s; $secs s per target"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for t in $targets; do
    mkdir -p "$scratch/$t"
    cp -r "corpus/$t/." "$scratch/$t/"
    max_len=4096
    [ "$t" = store_damaged ] && max_len=131072
    if ! cargo +nightly fuzz run "$@" "$t" "$scratch/$t" -- \
        -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 >"$scratch/$t.log" 2>&1; then
        tail -40 "$scratch/$t.log"
        echo "fuzz: $t failed; the input is in $here/artifacts/$t/" >&2
        exit 1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$scratch/$t.log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $t ok, $runs inputs in $secs s"
done
echo "fuzz: all targets ok in $(( $(date +%s) - start )) s"

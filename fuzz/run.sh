#!/bin/sh
# Bounded fuzzing for CI: builds the cargo-fuzz targets (nightly toolchain,
# cargo-fuzz installed) and runs each for SECONDS (default 60) from a
# scratch copy of its committed corpus, so the corpus in the repository does
# not grow. Exits non-zero on the first crash; libFuzzer leaves the input
# that crashed in fuzz/artifacts/TARGET/.
#
#   fuzz/run.sh            # 5 targets x 60 s, plus the build
#   fuzz/run.sh 10         # a smoke run
set -eu
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
targets="pg_backend mysql_packets target_spec plan_file store_damaged"
start=$(date +%s)
cargo +nightly fuzz build -O $targets >/dev/null 2>&1 || cargo +nightly fuzz build -O
built=$(date +%s)
echo "fuzz: built in $((built - start)) s; $secs s per target"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for t in $targets; do
    mkdir -p "$scratch/$t"
    cp -r "corpus/$t/." "$scratch/$t/"
    max_len=4096
    [ "$t" = store_damaged ] && max_len=131072
    if ! cargo +nightly fuzz run -O "$t" "$scratch/$t" -- \
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

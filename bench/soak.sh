#!/usr/bin/env bash
# Soak check: one long mixed step (sysbench read-write, range 100: point
# selects, ranges, updates, delete + insert in each transaction) on a
# PostgreSQL server tidemark starts, while this script prints tidemark's
# resident memory and the results store's size every INTERVAL seconds.
# Memory must stay flat: the script fails when tidemark's RSS at the end of
# the step is more than 20 % (and 8 MiB) above its RSS a tenth of the way in
# (after the load and the warm-up have allocated what they need).
#
# usage: bench/soak.sh [seconds] [interval] [target] [results-dir]
#   default: 3600 10 pg@system /tmp/tidemark-soak
#   TIDEMARK=path/to/tidemark uses that binary (default: a release build)
# needs: PostgreSQL server binaries (apt-get install postgresql)
set -euo pipefail
secs=${1:-3600}
interval=${2:-10}
target=${3:-pg@system}
dir=${4:-/tmp/tidemark-soak}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
if [ -z "${TIDEMARK:-}" ]; then
    cargo build --release --quiet
    TIDEMARK=$here/target/release/tidemark
fi
rm -rf "$dir"
mkdir -p "$dir"
"$TIDEMARK" run --suite sysbench --tests read-write_range=100 --target "$target" \
    --table-size 100000 --read-secs "$secs" --write-secs "$secs" --warmup-secs 0 \
    --results "$dir" --no-report >"$dir/run.log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true' INT TERM
start=$(date +%s)
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
store_kib() { du -k -c "$dir"/results.db* 2>/dev/null | awk 'END {print $1}'; }
printf '%9s %16s %9s\n' elapsed_s tidemark_rss_kib store_kib
first=0
last=0
while kill -0 "$pid" 2>/dev/null; do
    now=$(( $(date +%s) - start ))
    rss=$(rss_kib "$pid")
    [ "$rss" -gt 0 ] && last=$rss
    if [ "$first" -eq 0 ] && [ "$now" -ge $(( secs / 10 )) ] && [ "$rss" -gt 0 ]; then
        first=$rss
    fi
    printf '%9d %16d %9s\n' "$now" "$rss" "$(store_kib)"
    sleep "$interval"
done
wait "$pid" || { echo "soak: the run failed:"; tail -5 "$dir/run.log"; exit 1; }
echo "soak: ${secs} s step; RSS ${first} KiB at a tenth, ${last} KiB at the end; store $(store_kib) KiB"
if [ "$first" -gt 0 ] && [ "$last" -gt $(( first * 12 / 10 )) ] && [ $(( last - first )) -gt 8192 ]; then
    echo "soak: tidemark's memory grew by more than 20 % during the step" >&2
    exit 1
fi

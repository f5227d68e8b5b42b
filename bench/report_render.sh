#!/usr/bin/env bash
# How long `tidemark report` takes for a big comparison: a REAL run of the
# whole sysbench suite (38 steps, 32 reported) on 6 managed PostgreSQL
# targets with very short steps builds the store, then the report is
# rendered (HTML, Markdown, JSON, CSV) several times and each is timed.
#
# usage: bench/report_render.sh [targets] [repeats]
#        bench/report_render.sh --store results.db [repeats]
#   --store: time the report of a stored results database instead (e.g.
#   tests/fixtures/report-6/results.db: 6 targets × 34 tests, a real run);
#   it is copied first, the original is never opened.
# needs: PostgreSQL server binaries (apt-get install postgresql), unless --store
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
store=
if [ "${1:-}" = --store ]; then
  store=$(realpath "$2")
  shift 2
  targets=0
  repeats=${1:-5}
else
  targets=${1:-6}
  repeats=${2:-5}
fi

cargo build --release --quiet
tm=$here/target/release/tidemark
work=$(mktemp -d /tmp/tidemark-report-bench.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

# Renders the report of $work/results $repeats times, timing each.
time_reports() {
  for i in $(seq "$repeats"); do
    t0=$(date +%s%N)
    "$tm" report --results "$work/results" -o "$work/report" >/dev/null
    t1=$(date +%s%N)
    echo "report $i: $(( (t1 - t0) / 1000000 )) ms (process start to files written)"
  done
  ls -la "$work/report" | awk 'NR>1 && $9 !~ /^\.+$/ {print "  " $9 ": " $5 " bytes"}'
}

if [ -n "$store" ]; then
  mkdir -p "$work/results"
  cp "$store" "$work/results/results.db"
  echo "store: $store ($(stat -c %s "$store") bytes)"
  time_reports
  exit 0
fi

args=()
for _ in $(seq "$targets"); do args+=(--target pg@system); done
start=$(date +%s)
"$tm" run --results "$work/results" "${args[@]}" --table-size 2000 --read-secs 0.2 \
  --write-secs 0.2 --warmup-secs 0 --scan-warm-secs 0.2 --postwrite-scale 0 --no-report \
  >"$work/run.log" 2>&1 || { tail -20 "$work/run.log"; exit 1; }
echo "store built by a real run in $(( $(date +%s) - start )) s: $("$tm" runs --results "$work/results" | tail -1)"
ls -la "$work/results/results.db" | awk '{print "results.db: " $5 " bytes"}'

time_reports

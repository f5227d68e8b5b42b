#!/usr/bin/env bash
# What `--cpu-profile` costs the measurement: the same point-query step on
# a managed PostgreSQL, alternately without and with the profiler, N pairs,
# one run each. Prints each run's QPS and the mean ratio with/without.
#
# usage: bench/cpu_profile_overhead.sh [pairs] [seconds]   (default 3 10)
# needs: PostgreSQL server binaries, perf (linux-perf)
set -euo pipefail
pairs=${1:-3}
secs=${2:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo build --release --quiet
tm=$here/target/release/tidemark
dir=$(mktemp -d /tmp/tidemark-profile-overhead.XXXXXX)
trap 'rm -rf "$dir"' EXIT
qps() { # $1 = results dir, rest = extra flags
    local r=$1; shift
    "$tm" run --tests point-query --read-secs "$secs" --warmup-secs 1 \
        --results "$r" --no-report "$@" 2>&1 |
        sed -n 's/.*point-query[^ ]* *\([0-9.]*\) qps.*/\1/p' | head -1
}
without=() with=()
for i in $(seq 1 "$pairs"); do
    a=$(qps "$dir/off-$i")
    b=$(qps "$dir/on-$i" --cpu-profile)
    echo "pair $i: without ${a} qps, with --cpu-profile ${b} qps"
    without+=("$a") with+=("$b")
done
python3 - "${without[*]}" "${with[*]}" <<'PY'
import sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
m = lambda v: sum(v) / len(v)
print(f"mean without {m(a):.0f} qps, with {m(b):.0f} qps: ratio {m(b)/m(a):.3f}")
PY

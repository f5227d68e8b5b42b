#!/usr/bin/env bash
# Client cost at high concurrency: sysbench oltp_point_select, pgbench -M prepared
# (-j = this host's cores, connections multiplexed on that many threads) and
# tidemark's point-query against ONE PostgreSQL server, at 1 … 1024 client
# connections, in one run. tidemark runs twice per count: multiplexed (an
# event loop per core, --mux-from 1) and with one thread per connection
# (--mux-from 0), so the crossover between the two shows; `*` marks the one
# tidemark picks by default (multiplexed from DEFAULT_MUX_FROM clients on).
#
# Prints one row per connections × tool: QPS and client CPU µs per query (the
# client process's user+sys CPU over the queries it completed; for tidemark
# also its client threads alone, as stored). On a shared machine the numbers
# are noisy: compare tools within one run.
#
# usage: bench/concurrency_vs_anchors.sh [seconds-per-run] [rows] ["1 4 16 64 256 1024"]
# needs: PostgreSQL server binaries and pgbench, sysbench (apt-get install sysbench)
set -euo pipefail
secs=${1:-10}
rows=${2:-100000}
counts=${3:-"1 4 16 64 256 1024"}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
ulimit -n "$(ulimit -Hn)"

cargo build --release --quiet
tm=$here/target/release/tidemark
cores=$(nproc)
TIMEFORMAT='%U %S'
cpu_of() { awk '{printf "%.3f", $1 + $2}' "$1"; }
per_q() { echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 * 1e6 / $2; else print "n/a" }'; }

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bindir/postgres" ] || { echo "no PostgreSQL server binaries: apt-get install postgresql" >&2; exit 1; }
command -v sysbench >/dev/null || { echo "sysbench missing: apt-get install sysbench" >&2; exit 1; }
pgbench=$bindir/pgbench; [ -x "$pgbench" ] || pgbench=$(command -v pgbench)
default_mux_from=$(sed -n 's/^pub const DEFAULT_MUX_FROM: u32 = \([0-9]*\);/\1/p' src/workload/sysbench/mod.rs)
largest=$(echo "$counts" | tr ' ' '\n' | sort -n | tail -1)

work=$(mktemp -d /tmp/tidemark-bench.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R postgres "$work"; su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
cleanup() { as_pg "$bindir/pg_ctl -D $work/data -m fast stop" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
as_pg "$bindir/initdb -D $work/data -U tidemark --auth=trust >/dev/null"
as_pg "$bindir/pg_ctl -D $work/data -l $work/log -w -o '-p $port -k $work -c listen_addresses=127.0.0.1 \
  -c shared_buffers=512MB -c max_connections=$((largest + 40))' start >/dev/null"
as_pg "$bindir/createdb -h 127.0.0.1 -p $port -U tidemark tidemark"
url="postgres://tidemark@127.0.0.1:$port/tidemark"

# Load sbtest1 once with tidemark (the schema sysbench uses).
"$tm" run --results "$work/results" --target "$url" --tests point-query --table-size "$rows" \
  --read-secs 1 --warmup-secs 0 --no-report >/dev/null 2>&1
printf '\\set id random(1, %s)\nSELECT c FROM sbtest1 WHERE id = :id;\n' "$rows" >"$work/pq.sql"

echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}'), point select over TCP, $cores cores, ${secs} s per run"
printf '%11s  %-14s %10s %16s %22s\n' connections tool qps client_us_per_q "(client threads only)"
for c in $counts; do
  # sysbench: one thread per connection
  { time sysbench oltp_point_select --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" \
      --pgsql-user=tidemark --pgsql-db=tidemark --tables=1 --table-size="$rows" --threads="$c" \
      --time="$secs" --rand-type=uniform --db-ps-mode=auto run >"$work/sb.out" 2>&1; } 2>"$work/sb.time"
  q=$(awk '/queries:/ {print $2; exit}' "$work/sb.out")
  printf '%11s  %-14s %10.0f %16s\n' "$c" sysbench "$(echo "$q $secs" | awk '{print $1/$2}')" \
    "$(per_q "$(cpu_of "$work/sb.time")" "$q")"

  # pgbench: -j = cores (never more threads than connections)
  j=$(( c < cores ? c : cores ))
  { time "$pgbench" -n -M prepared -h 127.0.0.1 -p "$port" -U tidemark -c "$c" -j "$j" -T "$secs" \
      -f "$work/pq.sql" tidemark >"$work/pb.out" 2>&1; } 2>"$work/pb.time"
  q=$(awk '/number of transactions actually processed/ {split($0,a,": "); split(a[2],b,"/"); print b[1]; exit}' "$work/pb.out")
  printf '%11s  %-14s %10.0f %16s\n' "$c" "pgbench -j$j" "$(echo "$q $secs" | awk '{print $1/$2}')" \
    "$(per_q "$(cpu_of "$work/pb.time")" "$q")"

  # tidemark multiplexed, then one thread per connection
  for mode in mux thr; do
    if [ "$mode" = mux ]; then extra=(--mux-from 1); else extra=(--mux-from 0); fi
    name=tidemark-$mode
    if { [ "$mode" = mux ] && [ "$c" -ge "$default_mux_from" ]; } ||
       { [ "$mode" = thr ] && [ "$c" -lt "$default_mux_from" ]; }; then name="$name*"; fi
    { time "$tm" run --results "$work/results" --target "$url" --reuse-tables --tests point-query \
        --table-size "$rows" --threads "$c" --read-secs "$secs" --warmup-secs 0 --no-report \
        "${extra[@]}" >"$work/tm.out" 2>&1; } 2>"$work/tm.time"
    read -r q qps cu loops < <("$tm" export --results "$work/results" --format json | python3 -c '
import json,sys
s=json.load(sys.stdin)["runs"][-1]["targets"][0]["steps"][-1]
print(s["statements"], s["qps"], s["client_cpu_us_per_query"], s["params"].get("client_loops", 0))')
    [ "$loops" != 0 ] && name="$name/$loops"
    printf '%11s  %-14s %10.0f %16s %22.2f\n' "$c" "$name" "$qps" \
      "$(per_q "$(cpu_of "$work/tm.time")" "$q")" "$cu"
  done
done

#!/usr/bin/env bash
# Client cost of a point query: sysbench oltp_point_select, pgbench -M prepared
# and tidemark's point-query against ONE managed PostgreSQL server, then
# sysbench's mysql driver and tidemark against ONE MariaDB server, in one run.
# Prints QPS and client CPU µs per query (the client process's user+sys CPU
# divided by the queries it sent) at 1 and 4 client threads.
#
# usage: bench/point_query_vs_anchors.sh [seconds-per-run] [rows] [pg|mariadb|all]
# needs: PostgreSQL server binaries, pgbench, sysbench (apt-get install sysbench),
#        MariaDB server binaries (apt-get install mariadb-server) for the second part
set -euo pipefail
secs=${1:-10}
rows=${2:-100000}
which=${3:-all}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

cargo build --release --quiet
tm=$here/target/release/tidemark
TIMEFORMAT='%U %S'
cpu_of() { awk '{printf "%.3f", $1 + $2}' "$1"; }
# tidemark's numbers for the last step stored in $1: statements, qps, µs/query of client threads.
tm_last() { "$tm" export --results "$1" --format json | python3 -c '
import json,sys
s=json.load(sys.stdin)["runs"][-1]["targets"][0]["steps"][-1]
print(s["statements"], s["qps"], s["client_cpu_us_per_query"])'; }

pg_part() {
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bindir/postgres" ] || { echo "no PostgreSQL server binaries: apt-get install postgresql" >&2; exit 1; }
command -v sysbench >/dev/null || { echo "sysbench missing: apt-get install sysbench" >&2; exit 1; }
pgbench=$bindir/pgbench; [ -x "$pgbench" ] || pgbench=$(command -v pgbench)

work=$(mktemp -d /tmp/tidemark-bench.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R postgres "$work"; su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
cleanup() { as_pg "$bindir/pg_ctl -D $work/data -m fast stop" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
as_pg "$bindir/initdb -D $work/data -U tidemark --auth=trust >/dev/null"
as_pg "$bindir/pg_ctl -D $work/data -l $work/log -w -o '-p $port -k $work -c listen_addresses=127.0.0.1 -c shared_buffers=512MB -c max_connections=50' start >/dev/null"
as_pg "$bindir/createdb -h 127.0.0.1 -p $port -U tidemark tidemark"
url="postgres://tidemark@127.0.0.1:$port/tidemark"

# Load sbtest1 once with tidemark (same schema sysbench uses).
"$tm" run --results "$work/results" --target "$url" --tests point-query --table-size "$rows" \
  --read-secs 1 --warmup-secs 0 >/dev/null 2>&1

printf '%-10s %7s %12s %18s\n' tool threads qps client_us_per_q
for t in 1 4; do
  # sysbench
  { time sysbench oltp_point_select --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" \
      --pgsql-user=tidemark --pgsql-db=tidemark --tables=1 --table-size="$rows" --threads="$t" \
      --time="$secs" --rand-type=uniform --db-ps-mode=auto run >"$work/sb.out" 2>&1; } 2>"$work/sb.time"
  # "queries: TOTAL (RATE per sec.)"
  q=$(awk '/queries:/ {print $2; exit}' "$work/sb.out")
  qps=$(awk '/queries:/ {gsub(/\(/,"",$3); print $3; exit}' "$work/sb.out")
  printf '%-10s %7s %12.0f %18.2f\n' sysbench "$t" "$qps" "$(echo "$(cpu_of "$work/sb.time") $q" | awk '{print $1*1e6/$2}')"

  # pgbench, prepared, same SELECT
  printf '\\set id random(1, %s)\nSELECT c FROM sbtest1 WHERE id = :id;\n' "$rows" >"$work/pq.sql"
  { time "$pgbench" -n -M prepared -h 127.0.0.1 -p "$port" -U tidemark -c "$t" -j "$t" -T "$secs" \
      -f "$work/pq.sql" tidemark >"$work/pb.out" 2>&1; } 2>"$work/pb.time"
  q=$(awk '/number of transactions actually processed/ {split($0,a,": "); split(a[2],b,"/"); print b[1]; exit}' "$work/pb.out")
  printf '%-10s %7s %12.0f %18.2f\n' pgbench "$t" "$(echo "$q $secs" | awk '{print $1/$2}')" \
    "$(echo "$(cpu_of "$work/pb.time") $q" | awk '{print $1*1e6/$2}')"

  # tidemark point-query on the same table
  { time "$tm" run --results "$work/results" --target "$url" --reuse-tables --tests point-query \
      --table-size "$rows" --threads "$t" --read-secs "$secs" --warmup-secs 0 >"$work/tm.out" 2>&1; } 2>"$work/tm.time"
  "$tm" export --results "$work/results" --format json >"$work/tm.json"
  read -r q qps cu < <(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
s=d["runs"][-1]["targets"][0]["steps"][-1]
print(s["statements"], s["qps"], s["client_cpu_us_per_query"])' "$work/tm.json")
  printf '%-10s %7s %12.0f %18.2f   (client threads only: %.2f)\n' tidemark "$t" "$qps" \
    "$(echo "$(cpu_of "$work/tm.time") $q" | awk '{print $1*1e6/$2}')" "$cu"
done
}

mariadb_part() {
mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)
[ -x "$mariadbd" ] || { echo "no MariaDB server binary: apt-get install mariadb-server" >&2; return 1; }
mwork=$(mktemp -d /tmp/tidemark-bench-my.XXXXXX)
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_my() { if [ "$(id -u)" = 0 ]; then chown -R mysql "$mwork"; su mysql -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
mcleanup() { [ -f "$mwork/pid" ] && kill "$(cat "$mwork/pid")" 2>/dev/null; while [ -f "$mwork/pid" ] && kill -0 "$(cat "$mwork/pid")" 2>/dev/null; do sleep 0.2; done; rm -rf "$mwork"; }
trap 'mcleanup; if declare -F cleanup >/dev/null; then cleanup; fi' EXIT
as_my "mariadb-install-db --no-defaults --datadir=$mwork/data --auth-root-authentication-method=normal --skip-name-resolve >/dev/null"
as_my "$mariadbd --no-defaults --datadir=$mwork/data --port=$mport --bind-address=127.0.0.1 --socket=$mwork/sock \
  --pid-file=$mwork/pid --skip-name-resolve --innodb-buffer-pool-size=512M --character-set-server=latin1 \
  --max-connections=50 >$mwork/log 2>&1 &"
for _ in $(seq 100); do mariadb -S "$mwork/sock" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
mariadb -S "$mwork/sock" -uroot -e "CREATE USER 'tidemark'@'127.0.0.1'; GRANT ALL ON *.* TO 'tidemark'@'127.0.0.1'; CREATE DATABASE tidemark"
murl="mariadb://tidemark@127.0.0.1:$mport/tidemark"
"$tm" run --results "$mwork/results" --target "$murl" --tests point-query --table-size "$rows" \
  --read-secs 1 --warmup-secs 0 >/dev/null 2>&1
echo "MariaDB $("$mariadbd" --version | awk '{print $3}'), point select over TCP, latin1"
printf '%-10s %7s %12s %18s\n' tool threads qps client_us_per_q
for t in 1 4; do
  # sysbench's mysql driver (LANG=POSIX, as the seeds run it)
  { time LANG=POSIX sysbench oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$mport" \
      --mysql-user=tidemark --mysql-db=tidemark --tables=1 --table-size="$rows" --threads="$t" \
      --time="$secs" --rand-type=uniform --db-ps-mode=auto run >"$mwork/sb.out" 2>&1; } 2>"$mwork/sb.time"
  q=$(awk '/queries:/ {print $2; exit}' "$mwork/sb.out")
  printf '%-10s %7s %12.0f %18.2f\n' sysbench "$t" "$(echo "$q $secs" | awk '{print $1/$2}')" \
    "$(echo "$(cpu_of "$mwork/sb.time") $q" | awk '{print $1*1e6/$2}')"
  # tidemark point-query on the same table
  { time "$tm" run --results "$mwork/results" --target "$murl" --reuse-tables --tests point-query \
      --table-size "$rows" --threads "$t" --read-secs "$secs" --warmup-secs 0 >"$mwork/tm.out" 2>&1; } 2>"$mwork/tm.time"
  read -r q qps cu < <(tm_last "$mwork/results")
  printf '%-10s %7s %12.0f %18.2f   (client threads only: %.2f)\n' tidemark "$t" "$qps" \
    "$(echo "$(cpu_of "$mwork/tm.time") $q" | awk '{print $1*1e6/$2}')" "$cu"
done
}

case "$which" in
  pg) pg_part ;;
  mariadb) mariadb_part ;;
  *) pg_part; echo; mariadb_part ;;
esac

#!/usr/bin/env bash
# How much of this host's noise two servers cancel by taking turns, by turn
# length: outside tidemark, two private PostgreSQL servers of one build
# (pgbench's 100,000-row table, shared_buffers 128MB), one `pgbench -S -M
# prepared -c1` client each, servers and clients on one CPU (as tidemark
# places a one-client run), a small C program (bench/turns/gate.c) letting
# the two clients take turns with SIGSTOP/SIGCONT in the order A B B A …
# It prints, per turn length: each server's rate while its turn, and the
# standard error of the mean log ratio of neighbouring turns scaled to 5 s
# per server (the quick profile's time per test): what the noise inside one
# repetition would be if tidemark's slices alternated that often. "at once"
# runs both clients together (tidemark's --interleave together).
#
# usage: bench/turns.sh [seconds-per-length] [turn lengths in ms ...]
#   default: 20 0 500 50 20 10 5 2   (0: at once)
# needs: PostgreSQL server binaries with pgbench (apt-get install
#   postgresql), gcc, python3; root (the servers run as postgres) or the
#   user who owns the binaries.
# Measured (2026-12-07, 2-vCPU VM, session 27; two runs of each length):
# at once 12,000/s each (36,000/s alone), SE 0.15 %; turns of 500 ms
# 0.87-1.37 %, 50 ms 0.72 %, 20 ms 0.42 %, 10 ms 0.29-0.31 % at an
# unchanged 36,500-37,000/s, 5 ms 0.26 % (35,000/s), 2 ms 0.32 % with the
# rate down to 34,000/s and a 2.6 % bias: switching starts to cost.
set -euo pipefail
secs=${1:-20}
shift || true
lengths=("$@")
[ ${#lengths[@]} -eq 0 ] && lengths=(0 500 50 20 10 5 2)
here=$(cd "$(dirname "$0")" && pwd)
bin=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$bin/pgbench" ] || { echo "turns.sh: no pgbench in $bin: apt-get install postgresql" >&2; exit 1; }
cpu=$(($(nproc) - 1))
work=$(mktemp -d /tmp/tidemark-turns.XXXXXX)
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else bash -c "$*"; fi; }
cleanup() {
    for i in 1 2; do
        [ -f "$work/d$i/postmaster.pid" ] && as_pg "$bin/pg_ctl -D $work/d$i -m fast stop" >/dev/null 2>&1
    done
    rm -rf "$work"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] && chown postgres "$work"
gcc -O2 -o "$work/gate" "$here/turns/gate.c"
ports=()
for i in 1 2; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    ports+=("$port")
    as_pg "$bin/initdb -D $work/d$i -A trust" >/dev/null
    printf "port = %s\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nshared_buffers = 128MB\nautovacuum = off\n" \
        "$port" "$work" >>"$work/d$i/postgresql.conf"
    as_pg "taskset -c $cpu $bin/pg_ctl -D $work/d$i -l $work/log$i -w start" >/dev/null
    as_pg "$bin/pgbench -h 127.0.0.1 -p $port -i -s 1 -q postgres" >/dev/null 2>&1
done
cd "$work"
for ms in "${lengths[@]}"; do
    tag=t$ms
    pids=()
    for i in 1 2; do
        taskset -c "$cpu" "$bin/pgbench" -h 127.0.0.1 -p "${ports[$((i - 1))]}" -U postgres -n -S -M prepared \
            -c1 -T $((secs + 3)) -l --log-prefix="$tag.$i" postgres >/dev/null 2>&1 &
        pids+=($!)
    done
    sleep 1
    "$work/gate" "${pids[0]}" "${pids[1]}" $((ms * 1000)) "$secs" >"$tag.gate"
    wait "${pids[@]}"
    python3 - "$tag" "$ms" <<'PY'
import bisect, glob, math, statistics as st, sys
tag, ms = sys.argv[1], int(sys.argv[2])
def done(side):  # completion times (µs) of every transaction
    t = []
    for f in glob.glob(f"{tag}.{side}.*"):
        for line in open(f):
            p = line.split()
            if len(p) >= 6:
                t.append(int(p[4]) * 1_000_000 + int(p[5]))
    return sorted(t)
a, b = done(1), done(2)
marks = [l.split() for l in open(f"{tag}.gate")]
count = lambda xs, s, e: bisect.bisect_left(xs, e) - bisect.bisect_left(xs, s)
if marks[0][1] == "both":
    t0, t1, w = int(marks[0][0]), int(marks[1][0]), 500_000
    pairs = [(count(a, s, s + w) / w * 1e6, count(b, s, s + w) / w * 1e6) for s in range(t0, t1 - w, w)]
    own = (t1 - t0) / 1e6
    label = "at once"
else:
    # A turn's first 100 µs are left out: the other client's last statement
    # may still be running then.
    turns = [(int(marks[i][0]) + 100, int(marks[i + 1][0]), marks[i][1]) for i in range(len(marks) - 1)]
    rates = [(who, count(a if who == "A" else b, s, e) / (e - s) * 1e6, (e - s) / 1e6) for s, e, who in turns]
    pairs = []
    for x, y in zip(rates[0::2], rates[1::2]):
        if x[0] != y[0]:
            pairs.append((x[1], y[1]) if x[0] == "A" else (y[1], x[1]))
    own = sum(r[2] for r in rates if r[0] == "A")
    label = f"turns of {ms} ms"
d = [math.log(y / x) for x, y in pairs if x > 0 and y > 0]
se = st.stdev(d) / math.sqrt(len(d)) * math.sqrt(own / 5)
print(f"{label:>16}: {st.mean(x for x, _ in pairs):7.0f}/s and {st.mean(y for _, y in pairs):7.0f}/s "
      f"while measured, mean log ratio {100 * st.mean(d):+.2f} %, standard error at 5 s each {100 * se:.2f} %")
PY
done

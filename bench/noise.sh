#!/usr/bin/env bash
# Calibration of tidemark's verdicts on this machine: an A/A comparison (the
# same target twice, --repeat N, the read tests of the sysbench point and
# range groups, quick profile) and, optionally, a planted difference (a
# third target with a setting of large known cost). Prints, per compared
# target, the share of cells whose verdict is not "no difference" and the
# median 95 % interval half-width (on the log scale, 0.05 ≈ ±5 %).
#
# For A/A at most 5 % of cells should be flagged; the planted target should
# be flagged slower where the setting matters.
#
# usage: bench/noise.sh [repeat] [target] [planted-target|-] [results-dir]
#   default: 3 pg@system pg@system:shared_buffers=128kB /tmp/tidemark-noise
# env: ARGS      more options for `tidemark run` (e.g. "--read-secs 60",
#                "--server-cpus 1 --client-cpus 0")
#      AFFECTED  comma-separated tests (or cells: read-only_range=10000)
#                the planted difference should be found on (e.g. where a
#                planted patch adds >= 3 % of a statement's instructions,
#                as `run --instructions` counts it; bench/instructions.sh
#                prints them); the output then says on how many it was
#      TIDEMARK_BIN  a tidemark binary instead of a release build
#      REREAD=1  no run: read the results already in results-dir again
# Prints, per compared target: cells flagged (QPS), the median half-width
# overall and per group (what the run could have seen), and the same for
# the server's and the host's CPU per query (srv/o, cpu/o).
# 2026-12-07 (session 28), the default with turns inside each slice
# (--turn-ms 10): `bench/noise.sh 3 pg@system -` 1,341 s, 0/22 flagged,
# median +-3.1 % (point +-3.7, range-noagg +-3.0, range-agg +-1.1 %), a
# repetition's log ratio +-0.5 % from the noise inside it and +-1.4 %
# between repetitions (whole slices the day before: +-4.0 and +-5.3 %,
# inside a repetition +-1.9 and +-3.4 %). The default planted run after it
# (1,963 s): A/A 0/22, +-3.3 %; shared_buffers=128kB 20/22 slower (whole
# slices: 10/22), the smallest found 0.978 (read-only_range=10000).
# 60 s per test and target with turns (2026-12-08, session 29, 7,243 s):
# ARGS="--read-secs 10" AFFECTED=<pg-row.patch's eight cells, its README>
# bench/noise.sh 6 pg@15.18_o2nofp pg@15.18_o2nofp_p737fa134 (pg-row.patch):
# A/A 1/22 (points-notcovered-si 0.983), +-0.8 % (point +-1.6, range-noagg
# +-0.8, range-agg +-0.7 %); planted found on 8 of 8 affected cells
# (0.920-0.984, srv/o higher on all 8), 11/22 slower, none faster.
# Measured (2026-11-28, 2-vCPU VM, idle, the default placement: servers and
# client on one CPU): `bench/noise.sh 3 pg@15.18_o2nofp -` 0/22 flagged,
# median ±1.5 % (point ±2.1, range-noagg ±1.3, range-agg ±1.5 %; unplaced
# before: ±4.2, ±4.2, ±5.9 %); with AFFECTED=point-query and
# pg@15.18_o2nofp_p504f199d (the 3 % patch) planted: A/A 0/22, ±1.1 %;
# planted point-query 0.979 (0.970-0.988), "no difference" at
# --min-effect 3 % (the default then), slower at 1 % (the default now;
# 8 of 22 slower then, A/A still 0).
# ARGS="--read-secs 20" (60 s per test and target over three repetitions,
# the same planted pair, 5,223 s): A/A 1/22 (points-notcovered-si 1.032),
# ±1.5 %; planted ±1.7 % (point ±4.3 %), point-query 0.965 (0.924-1.008)
# not flagged, its srv/o 1.047 higher. Longer steps do not narrow the
# intervals: the spread between servers of one build sets them.
# A noisier day (steal 0-11 %), ARGS="--read-secs 10", repeat 6, stopped
# after four repetitions: A/A 0/22, +-3.4 % with a read test's repetition
# the median of its slice pairs (+-5.1 % summing the slices); the planted
# point-query 1.041 (1.000-1.083) "faster": point-query and hot-points
# varied 3-5x as much as the group's other tests that day.
# ARGS="--read-secs 10", repeat 6 (60 s per test and target again, a freshly
# booted VM, 5,484 s): A/A 0/22 but ±4.1 % (point ±4.8 %); planted
# point-query 1.002 (0.950-1.057): two servers of one build differed by up
# to 12 % for a whole repetition that day.
# Repeat 12 of the quick 5 s (60 s per test and target again, a freshly
# booted VM, 5,931 s): A/A 0/22, +-2.7 % (point +-3.8 %); planted point-query
# 0.992, not flagged; 3/22 flagged. Instances did not differ that day: a
# repetition varied +-4.0 % against +-3.5 % from the noise inside one (the
# last lines below), so the host's second-scale noise set the width.
# The same pair, repeat 3 of the quick 5 s, 2026-12-06 (session 21), one run
# after the other: the default (steps) 1,494 s, A/A 2/22 flagged, +-1.7 %
# (inside a repetition +-1.0 %), planted point-query 0.976 not flagged, 6/22
# flagged; ARGS="--interleave together" (each slice on every target at once,
# one CPU shared) 571 s, A/A 1/22, +-1.1 % (inside a repetition +-0.2 %),
# planted point-query 0.963 not flagged (hot-points 0.89 in one repetition
# widened the point group to +-5.6 %), 10/22 flagged, all slower: differences
# come out larger on a shared CPU (docs/verdicts.md, "Measured at once").
# Repeat 6 together (30 s per test and target, 1,128 s): A/A 0/22, +-0.8 %;
# planted point-query 0.973 slower (1 of 1 affected), 10/22 slower; srv/o
# A/A +-3.7 %, 2/22 flagged.
# Repeat 12 together, later that day (60 s per test and target, 2,257 s): A/A
# 1/22, +-1.1 %; planted point-query 1.022 *faster* (the layout of the patched
# binary, not its loop, sets a point query's rate); srv/o +-3.9 %: a backend
# reaped while the server's tree was read dropped out of a reading. With that
# fixed (session 22), repeat 6 together (1,130 s): A/A 0/22, QPS +-1.8 %,
# srv/o +-1.8 %; planted 12/22 slower, srv/o higher on the same 12.
# A planted cost per row instead (bench/planted/pg-row.patch, 3.2-7.1 % of
# the instructions of eight read cells; bench/instructions.sh prints them
# as AFFECTED=...), repeat 12 together, 60 s per test and target
# (2026-12-07, 2,248 s): A/A 0/22, +-1.1 % (srv/o +-1.3 %); planted found on
# 8 of 8 affected cells (0.916-0.986, srv/o higher on all 8), 15/22 flagged
# (point-query 1.026 faster: its layout, the loop is 0.5 % there).
# Repeat 3 of the quick 5 s, default (steps), a noisy day (2026-12-07,
# session 24; hot-points' seconds ran 5,000-9,500 within one step), 994 s
# each: A/A 3/22 flagged with one pooled variance per group (+-8.8 %); with
# a noisy test's own noise in its interval (docs/verdicts.md) 0/22,
# +-10.2 %; a second run 0/22, +-8.6 %. ARGS="--slices 10" (half-second
# slices, 1,168 s): 1/22 (scan 1.104), +-6.6 %, a repetition's noise
# inside it +-4.0 % against +-4.4-5.5 % with five slices.
# Back to back later that day: default 997 s, 0/22, +-11.2 % (noise inside
# +-5.9 %); ARGS="--slices 10" 1,174 s, 1/22 (points-notcovered-si 1.114),
# +-8.0 % (inside +-4.4 %). Shorter slices narrowed both pairs.
# Connections kept across a test's slices and a 0.05 s slice warm-up
# (session 25, --slices 10): 918 s, 1/22 flagged, +-7.1 % (between
# repetitions +-3.5 %, inside +-4.1 %); the previous binary's default right
# after: 997 s, 1/22, +-8.0 %, and 995 s, 1/22, +-8.4 %. Two slices a second
# became the default. A quieter day (2026-12-07, session 26, steal 0 %),
# back to back: the new default 915 s, 3/22 (scan_range=100 1.097,
# read-only-order 1.050, random-points_range=1000 0.916), +-5.1 % (point
# +-5.3, range-noagg +-4.3, range-agg +-3.4 %; between +-2.7, inside
# +-2.5 %); the previous binary (one slice a second, new connections each
# slice) 992 s, 2/22, +-4.8 % (5.6, 5.7, 3.0 %; between +-2.5, inside
# +-2.8 %); the new default once more: 917 s, 0/22, +-5.5 % (point +-5.5,
# range-noagg +-6.0, range-agg +-3.9 %). Eleven A/A runs of this command
# since a noisy test's own noise joined its interval: 10 of 242 cells
# flagged (4.1 %). With the default plant (shared_buffers=128kB, 1,376 s):
# A/A 1/22 (read-only_range=100 1.030), +-5.1 %; planted 10/22 slower
# (0.46-0.95), none faster, srv/o higher on 13.
# Session 27 (2026-12-07, steal 0 %): 916 s, 1/22 (read-only_range=10
# 0.965), +-4.0 % (point +-4.0, range-noagg +-7.4, range-agg +-2.6 %;
# between +-1.9, inside +-1.9 %); 40 minutes later 915 s, 0/22, +-5.3 %
# (point +-6.1, range-noagg +-5.3, range-agg +-3.4 %; between +-2.6, inside
# +-3.4 %). Fourteen A/A runs since the noisy-test fix: 12 of 308 cells
# flagged (3.9 %). Slices down to 0.05 s and other
# summaries of the slice pairs (trimmed mean, mean, Hodges-Lehmann) did not
# narrow the intervals honestly (docs/verdicts.md, "Would shorter slices").
# needs: PostgreSQL server binaries (apt-get install postgresql), python3
set -euo pipefail
repeat=${1:-3}
target=${2:-pg@system}
planted=${3:-pg@system:shared_buffers=128kB}
dir=${4:-/tmp/tidemark-noise}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
tm=${TIDEMARK_BIN:-}
if [ -z "$tm" ]; then
    cargo build --release --quiet
    tm=$here/target/release/tidemark
fi
tests=scan,read-only,read-only-simple,read-only-sum,read-only-order,read-only-distinct,read-only-count
tests=$tests,point-query,random-points,hot-points,points-covered-pk,points-notcovered-pk
tests=$tests,range-covered-pk,range-notcovered-pk,points-covered-si,points-notcovered-si
tests=$tests,range-covered-si,range-notcovered-si
targets=(--target "$target" --target "$target")
[ "$planted" != "-" ] && targets+=(--target "$planted")
if [ "${REREAD:-0}" != 1 ]; then
    rm -rf "$dir"
    start=$(date +%s)
    # shellcheck disable=SC2086 # ARGS is a list of options
    "$tm" run --suite sysbench --tests "$tests" "${targets[@]}" --repeat "$repeat" ${ARGS:-} \
        --results "$dir" --no-report >"$dir.log" 2>&1 || { tail -5 "$dir.log"; exit 1; }
    echo "run: $(( $(date +%s) - start )) s ($dir.log)"
fi
"$tm" report --results "$dir" -o "$dir/report" >/dev/null
AFFECTED=${AFFECTED:-} python3 - "$dir/report/report.json" <<'PY'
import json, math, os, statistics, sys
r = json.load(open(sys.argv[1]))
cols = r["targets"]
affected = [t for t in os.environ.get("AFFECTED", "").split(",") if t]
cost_keys = [c["key"] for c in r["sysbench"].get("cost_columns", [])]
def half(iv):
    return (math.log(iv["hi"]) - math.log(iv["lo"])) / 2
def med(v):
    return f"±{100 * statistics.median(v):.1f}%" if v else "n/a"
for i, t in enumerate(cols[1:], start=1):
    cells, flagged, widths, methods, groups = 0, {}, [], set(), []
    found = []
    cost = {k: ([], []) for k in ("server_cpu", "cpupq")}
    for g in r["sysbench"]["groups"]:
        gw = []
        for test in g["tests"]:
            c = test["cells"][i]
            if not c or not c.get("verdict"):
                continue
            cells += 1
            v = c["verdict"]
            name = test["name"].split("_")[0]
            if v in ("faster", "slower"):
                flagged.setdefault(v, []).append(f'{test["name"]} {c["relative"]:.3f}')
            iv = c.get("interval")
            if iv:
                gw.append(half(iv))
                methods.add(iv["method"])
            for key, (w, f) in cost.items():
                if key not in cost_keys:
                    continue
                k = cost_keys.index(key)
                civ = (c.get("cost_interval") or [None] * len(cost_keys))[k]
                cv = (c.get("cost_verdict") or [None] * len(cost_keys))[k]
                if civ:
                    w.append(half(civ))
                if cv in ("higher", "lower"):
                    f.append(f'{test["name"]} {civ["estimate"] if civ else float("nan"):.3f} {cv}')
            if name in affected or test["name"] in affected:
                found.append((test["name"], v, c.get("relative"),
                              c.get("cost_verdict") and c["cost_verdict"][cost_keys.index("server_cpu")]
                              if "server_cpu" in cost_keys else None))
        widths += gw
        groups.append(f'{g["group"]} {med(gw)}')
    n_flag = sum(len(v) for v in flagged.values())
    print(f'{t["column"]} {t["label"]} vs {r["base"]}: {n_flag}/{cells} cells flagged '
          f'({100 * n_flag / max(cells, 1):.1f} %), median interval half-width '
          f'{statistics.median(widths) if widths else float("nan"):.3f} ({", ".join(sorted(methods))})')
    print(f'  sees, per group: {"; ".join(groups)}')
    for v, names in sorted(flagged.items()):
        print(f'  {v}: {"; ".join(names)}')
    for key, (w, f) in cost.items():
        if w:
            print(f'  {key} per query: median half-width {med(w)}; flagged {len(f)}: {"; ".join(f)}')
    if affected:
        hit = [x for x in found if x[1] == "slower" or x[3] == "higher"]
        print(f'  planted: found on {len(hit)} of {len(found)} affected cells: '
              + "; ".join(f"{n} qps {v} {rel:.3f}, srv/o {sv}" for n, v, rel, sv in found))
PY
# What set the widths: per compared target, the median over the read tests
# of the spread of a repetition's log ratio (the median of its slice pairs,
# as the report takes it) and of the noise inside one repetition (the
# standard error of its slice pairs). When the first is well above the
# second, server instances differ; when they are alike, the host's noise
# inside each step sets the width and only more measured time narrows it.
python3 - "$dir/results.db" <<'PY'
import json, math, sqlite3, statistics as st, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
where = {tid: (pos, rep) for tid, pos, rep in db.execute("SELECT id, position, repetition FROM targets")}
rates = {}  # test -> repetition -> position -> per-slice rates
for tid, name, metrics in db.execute("SELECT target_id, name, metrics_json FROM steps WHERE status = 'ok'"):
    per = json.loads(metrics or "{}").get("slices") or []
    pos, rep = where[tid]
    rates.setdefault(name, {}).setdefault(rep, {})[pos] = [s["statements"] / s["secs"] for s in per if s["secs"] > 0]
positions = sorted({p for reps in rates.values() for cell in reps.values() for p in cell if p > 0})
for other in positions:
    between, within = [], []
    for reps in rates.values():
        logs, ses = [], []
        for cell in reps.values():
            a, b = cell.get(0, []), cell.get(other, [])
            if len(a) != len(b) or len(a) < 3 or min(a + b) <= 0:
                continue
            pairs = [math.log(y / x) for x, y in zip(a, b)]
            logs.append(st.median(pairs))
            ses.append(st.stdev(pairs) / math.sqrt(len(pairs)))
        if len(logs) >= 2:
            between.append(st.stdev(logs))
            within.append(st.mean(ses))
    if between:
        print(f"col-{other}: a repetition's log ratio varies ±{100 * st.median(between):.1f} % "
              f"between repetitions, ±{100 * st.median(within):.1f} % from the noise inside one "
              f"(median over {len(between)} tests)")
PY

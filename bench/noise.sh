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
# needs: PostgreSQL server binaries (apt-get install postgresql), python3
set -euo pipefail
repeat=${1:-3}
target=${2:-pg@system}
planted=${3:-pg@system:shared_buffers=128kB}
dir=${4:-/tmp/tidemark-noise}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo build --release --quiet
tm=$here/target/release/tidemark
tests=scan,read-only,read-only-simple,read-only-sum,read-only-order,read-only-distinct,read-only-count
tests=$tests,point-query,random-points,hot-points,points-covered-pk,points-notcovered-pk
tests=$tests,range-covered-pk,range-notcovered-pk,points-covered-si,points-notcovered-si
tests=$tests,range-covered-si,range-notcovered-si
targets=(--target "$target" --target "$target")
[ "$planted" != "-" ] && targets+=(--target "$planted")
rm -rf "$dir"
start=$(date +%s)
"$tm" run --suite sysbench --tests "$tests" "${targets[@]}" --repeat "$repeat" \
    --results "$dir" --no-report >"$dir.log" 2>&1 || { tail -5 "$dir.log"; exit 1; }
echo "run: $(( $(date +%s) - start )) s ($dir.log)"
"$tm" report --results "$dir" -o "$dir/report" >/dev/null
python3 - "$dir/report/report.json" <<'PY'
import json, math, statistics, sys
r = json.load(open(sys.argv[1]))
cols = r["targets"]
for i, t in enumerate(cols[1:], start=1):
    cells, flagged, widths, methods = 0, {}, [], set()
    for g in r["sysbench"]["groups"]:
        for test in g["tests"]:
            c = test["cells"][i]
            if not c or not c.get("verdict"):
                continue
            cells += 1
            v = c["verdict"]
            if v in ("faster", "slower"):
                flagged.setdefault(v, []).append(f'{test["name"]} {c["relative"]:.2f}')
            iv = c.get("interval")
            if iv:
                widths.append((math.log(iv["hi"]) - math.log(iv["lo"])) / 2)
                methods.add(iv["method"])
    n_flag = sum(len(v) for v in flagged.values())
    print(f'{t["column"]} {t["label"]} vs {r["base"]}: {n_flag}/{cells} cells flagged '
          f'({100 * n_flag / max(cells, 1):.1f} %), median interval half-width '
          f'{statistics.median(widths) if widths else float("nan"):.3f} ({", ".join(sorted(methods))})')
    for v, names in sorted(flagged.items()):
        print(f'  {v}: {"; ".join(names)}')
PY

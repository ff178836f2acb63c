#!/usr/bin/env bash
# ab.sh — a speed-up measured side by side: the same benchmark programs
# (this tree's bench/) built against two commits' libraries, run in
# turns (base, head, base, head, ...) so that both see the same machine,
# and one JSON line per benchmark and figure:
#   {"bench", "figure", "base", "head", "runs", "base_min", "head_min",
#    "base_median", "head_median", "speedup"}
# speedup is base_median / head_median (above 1: head is faster); the
# figures are seconds (keys ending in _s, rates such as events_per_s
# left out), lower is better.
#
# Usage (from anywhere in the tree, after `meson setup build`):
#   bash bench/ab.sh [--runs R] [BASE [HEAD]] [-- BENCH [ARGS...]]...
# BASE defaults to HEAD~1, HEAD to the working tree (its build/). R
# defaults to 5. Without a `--` section the benchmarks are
#   bench_estimate --runs 20     (figure wall_s, best of its runs)
#   bench_search 64              (figure cpu_s)
# Each `-- BENCH ARGS` section adds one; the figures taken are the JSON
# keys ending in _s that both runs print, except the results (iteration_s,
# estimate_s, and the search's best, configs and estimated), which must
# agree instead: the script fails when they differ, since a speed-up must
# not change the outputs.
# A commit is built in a worktree under ${TMPDIR:-/tmp} (kept for the
# next run) with this tree's bench/ copied in; a commit whose public API
# the benchmarks no longer match does not build, and the script says so.
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
runs=5
if [ "${1:-}" = --runs ]; then
	runs=$2
	shift 2
fi
base=HEAD~1
head=
if [ $# -gt 0 ] && [ "$1" != -- ]; then base=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != -- ]; then head=$1; shift; fi
benches=()
while [ $# -gt 0 ]; do
	[ "$1" = -- ] || { echo "ab.sh: expected --, got $1" >&2; exit 2; }
	shift
	cmd=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do cmd+="${cmd:+ }$1"; shift; done
	[ -n "$cmd" ] && benches+=("$cmd")
done
if [ ${#benches[@]} -eq 0 ]; then
	benches=("bench_estimate --runs 20" "bench_search 64")
fi

# build COMMIT: prints the build folder of COMMIT with this tree's bench/
build() {
	local rev sha dir
	rev=$1
	sha=$(git rev-parse --short=12 "$rev^{commit}")
	dir=${TMPDIR:-/tmp}/shardlab-ab-$sha
	if [ ! -d "$dir" ]; then
		git worktree add --detach -q "$dir" "$sha" >&2
	fi
	rm -rf "$dir/bench"
	cp -r "$root/bench" "$dir/bench"
	if [ ! -d "$dir/build" ]; then
		meson setup "$dir/build" "$dir" -Dtests=false >/dev/null
	fi
	if ! ninja -C "$dir/build" >"$dir/build/ab-build.log" 2>&1; then
		echo "ab.sh: $rev ($sha) does not build with this tree's benchmarks; see" \
		     "$dir/build/ab-build.log" >&2
		return 1
	fi
	echo "$dir/build"
}

base_dir=$(build "$base")
base_sha=$(git rev-parse --short=12 "$base^{commit}")
if [ -n "$head" ]; then
	head_dir=$(build "$head")
	head_sha=$(git rev-parse --short=12 "$head^{commit}")
else
	ninja -C build >/dev/null
	head_dir=$root/build
	head_sha="$(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD || echo +)"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for b in "${!benches[@]}"; do
	read -r -a argv <<<"${benches[$b]}"
	prog=${argv[0]}
	for ((r = 0; r < runs; r++)); do
		echo "ab.sh: ${benches[$b]}: run $((r + 1)) of $runs" >&2
		"$base_dir/bench/$prog" "${argv[@]:1}" >>"$out/$b.base"
		"$head_dir/bench/$prog" "${argv[@]:1}" >>"$out/$b.head"
	done
done

python3 - "$out" "$base_sha" "$head_sha" "$runs" "${benches[@]}" <<'PY'
import json, statistics, sys
out, base, head, runs, benches = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
same_keys = ("iteration_s", "estimate_s", "best", "configs", "estimated")
failed = False
for i, cmd in enumerate(benches):
    rows = {}
    for side in ("base", "head"):
        rows[side] = [json.loads(l) for l in open(f"{out}/{i}.{side}") if l.startswith("{")]
    # lines of one run: as many as the program prints per run
    per = len(rows["base"]) // runs
    for k in range(per):
        a = rows["base"][k::per]
        b = rows["head"][k::per]
        for key in same_keys:
            if key in a[0] and {r[key] for r in a} != {r[key] for r in b}:
                print(f"ab.sh: {cmd}: {key} differs: base {a[0][key]}, head {b[0][key]}",
                      file=sys.stderr)
                failed = True
        label = a[0].get("bench", cmd.split()[0])
        extra = {x: a[0][x] for x in ("devices", "ranks", "cluster") if x in a[0]}
        for key in a[0]:
            if not key.endswith("_s") or "_per_" in key or key in same_keys \
                    or key not in b[0] or not isinstance(a[0][key], (int, float)):
                continue
            av = [r[key] for r in a]
            bv = [r[key] for r in b]
            am, bm = statistics.median(av), statistics.median(bv)
            print(json.dumps({"bench": label, **extra, "figure": key, "base": base,
                              "head": head, "runs": runs, "base_min": min(av),
                              "head_min": min(bv), "base_median": am, "head_median": bm,
                              "speedup": round(am / bm, 3) if bm > 0 else None}))
sys.exit(1 if failed else 0)
PY

#!/usr/bin/env bash
# Proves that two revisions of shardlab print the same thing: builds each in
# a temporary worktree, runs every shipped scenario through every command
# that reports on it (plan, explain, advise, estimate, simulate, compare, in
# text and JSON, with each planner), the topologies and models through topo
# and graph, and the validation files through validate, then compares the
# outputs byte for byte.
#
#   bash scripts/same-outputs.sh BASE [HEAD]     HEAD defaults to the work tree
#
# BASE and HEAD are anything git rev-parse takes; HEAD "." (the default)
# means the current work tree, uncommitted changes included, built in its
# BUILD_DIR (default build). Both read the input files of BASE's checkout. Exit 0 when every output is identical, 1 with
# the differing commands listed otherwise. SIMULATE_MAX_DEVICES (default
# 128) skips simulating larger scenarios, whose runs take minutes each
# (their plans and estimates are still compared).
set -euo pipefail

cd "$(dirname "$0")/.."
top=$(pwd)
base=${1:?usage: same-outputs.sh BASE [HEAD]}
head=${2:-.}
max_devices=${SIMULATE_MAX_DEVICES:-128}
work=$(mktemp -d /tmp/same-outputs.XXXXXX)
trap 'git -C "$top" worktree prune; rm -rf "$work"' EXIT

build_rev() { # rev -> path of its shardlab
	local rev=$1 dir=$2
	if [ "$rev" = . ]; then
		[ "$dir" != "$work/a" ] || { echo "same-outputs: BASE must be a revision" >&2; exit 1; }
		ninja -C "${BUILD_DIR:-build}" cli/shardlab >/dev/null || exit 1
		# A copy, so that building on while this runs changes nothing.
		cp "$top/${BUILD_DIR:-build}/cli/shardlab" "$work/shardlab-worktree"
		echo "$work/shardlab-worktree"
		return
	fi
	git -C "$top" worktree add -q --detach "$dir" "$rev"
	(cd "$dir" && meson setup build -Dtests=false -Dbuildtype=debugoptimized >/dev/null &&
		ninja -C build cli/shardlab >/dev/null) || exit 1
	[ -x "$dir/build/cli/shardlab" ] || { echo "same-outputs: $rev did not build" >&2; exit 1; }
	echo "$dir/build/cli/shardlab"
}

# The commands, one per line: the same list for both revisions, run in
# BASE's checkout so that both read the same input files, which nothing
# changes while they run.
commands() {
	local f n
	for f in topologies/*.json; do echo "topo $f"; echo "topo --json $f"; done
	for f in models/*.json; do echo "graph $f"; done
	for f in scenarios/*.json; do
		echo "check $f"
		echo "explain $f"
		echo "explain --json $f"
		echo "advise $f"
		for p in propagate recursive data-parallel megatron; do
			echo "plan $f --planner $p"
			echo "plan --json $f --planner $p"
			echo "estimate $f --planner $p"
			echo "estimate --json $f --planner $p"
		done
		echo "estimate $f --planner recursive --rec-cost mindspore"
		echo "estimate $f --fused"
		n=$(grep -o '"devices" *: *[0-9]*' "$f" | grep -o '[0-9]*$' || echo 0)
		if [ "${n:-0}" -le "$max_devices" ]; then
			echo "simulate $f"
			echo "simulate --json $f --fidelity phase"
			echo "compare $f"
		fi
	done
	echo "validate validation/collectives-dev.json"
	echo "validate --estimate-only validation/megatron-dev.json"
	echo "validate --json --estimate-only validation/megatron-dev.json"
}

run_all() { # shardlab outdir
	local exe=$1 out=$2 i=0 cmd
	mkdir -p "$out"
	while IFS= read -r cmd; do
		i=$((i + 1))
		# shellcheck disable=SC2086
		(cd "$work/a" && "$exe" $cmd >"$out/$i.out" 2>"$out/$i.err"; echo $? >"$out/$i.rc") || true
		echo "$cmd" >"$out/$i.cmd"
	done < <(cd "$work/a" && commands)
	echo "$i"
}

exe_a=$(build_rev "$base" "$work/a") || exit 1
exe_b=$(build_rev "$head" "$work/b") || exit 1
n=$(run_all "$exe_a" "$work/out-a")
run_all "$exe_b" "$work/out-b" >/dev/null
bad=0
for i in $(seq 1 "$n"); do
	if ! cmp -s "$work/out-a/$i.out" "$work/out-b/$i.out" ||
		! cmp -s "$work/out-a/$i.err" "$work/out-b/$i.err" ||
		! cmp -s "$work/out-a/$i.rc" "$work/out-b/$i.rc"; then
		echo "differs: shardlab $(cat "$work/out-a/$i.cmd")"
		bad=$((bad + 1))
	fi
done
echo "$n commands, $((n - bad)) identical, $bad differ ($base against ${head/#./the work tree})"
[ "$bad" -eq 0 ]

#!/usr/bin/env bash
# bench_verify.sh — `shardlab verify` on every shipped scenario of fewer
# than 64 devices: one JSON line each,
#   {"bench": "verify", "scenario", "devices", "scale", "wall_s", "cpu_s", "max_rss_kb",
#    "status", "digest", "blas_kernels"}
# wall_s, cpu_s (user + system) and max_rss_kb from GNU time (Debian
# package time); cpu_s is the figure to compare on a shared machine. A
# scenario that verify refuses at scale 1 for its memory ("try --scale N")
# is run at the scale it suggests. status verify's exit status (0 agrees, 1 differs or is
# invalid); digest a checksum of verify's output, so that two builds can
# be compared for identical results (a speed-up must not change them).
# blas_kernels the OpenBLAS kernels verify ran on ("SkylakeX", "Haswell",
# "Prescott"...; "-" without OpenBLAS), as OPENBLAS_VERBOSE=2 reports them.
#
# Usage: bash bench/bench_verify.sh [SHARDLAB]   (default: build/cli/shardlab)
# Environment: OPENBLAS_NUM_THREADS as the run wants it (shardlab pins
# OpenBLAS to one thread unless told otherwise, docs/robustness.md).
set -euo pipefail
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$root"
bin=${1:-build/cli/shardlab}
out=$(mktemp)
trap 'rm -f "$out" "$out.time"' EXIT
kernels=$(OPENBLAS_VERBOSE=2 "$bin" verify scenarios/seed003-matmul-4p.json 2>&1 >/dev/null |
	sed -n 's/^Core: *//p' | tail -1)
kernels=${kernels:--}
for f in scenarios/*.json; do
	devices=$(sed -n 's/^ *"devices": *\([0-9]*\).*/\1/p' "$f" | head -1)
	if [ -z "$devices" ]; then
		# No "devices": all of the topology's; the name says how many.
		devices=$(basename "$f" .json | sed -n 's/.*-\([0-9]*\)p\(-.*\)\?$/\1/p')
	fi
	[ -n "$devices" ] && [ "$devices" -lt 64 ] || continue
	scale=1
	for try in 1 2; do
		status=0
		/usr/bin/time -f '%e %U %S %M' -o "$out.time" "$bin" verify "$f" --scale "$scale" \
			>"$out" 2>&1 || status=$?
		s=$(sed -n 's/.*try --scale \([0-9]*\).*/\1/p' "$out" | head -1)
		[ "$status" -ne 0 ] && [ -n "$s" ] && [ "$try" = 1 ] || break
		scale=$s
	done
	read -r wall user sys rss < <(tail -1 "$out.time")
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
	digest=$(sha256sum "$out" | cut -c1-16)
	printf '{"bench": "verify", "scenario": "%s", "devices": %s, "scale": %s, "wall_s": %s, "cpu_s": %s, "max_rss_kb": %s, "status": %d, "digest": "%s", "blas_kernels": "%s"}\n' \
		"$f" "$devices" "$scale" "$wall" "$cpu" "$rss" "$status" "$digest" "$kernels"
done

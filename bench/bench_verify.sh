#!/usr/bin/env bash
# bench_verify.sh — `shardlab verify` on every shipped scenario of fewer
# than 64 devices: one JSON line each,
#   {"bench": "verify", "scenario", "devices", "wall_s", "max_rss_kb", "status", "digest"}
# wall_s and max_rss_kb from GNU time (or bash's clock when it is absent:
# max_rss_kb null); status verify's exit status (0 agrees, 1 differs or is
# invalid); digest a checksum of verify's output, so that two builds can
# be compared for identical results (a speed-up must not change them).
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
for f in scenarios/*.json; do
	devices=$(sed -n 's/^ *"devices": *\([0-9]*\).*/\1/p' "$f" | head -1)
	if [ -z "$devices" ]; then
		# No "devices": all of the topology's; the name says how many.
		devices=$(basename "$f" .json | sed -n 's/.*-\([0-9]*\)p\(-.*\)\?$/\1/p')
	fi
	[ -n "$devices" ] && [ "$devices" -lt 64 ] || continue
	status=0
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %M' -o "$out.time" "$bin" verify "$f" >"$out" 2>&1 || status=$?
		read -r wall rss < <(tail -1 "$out.time")
	else
		t0=$(date +%s.%N)
		"$bin" verify "$f" >"$out" 2>&1 || status=$?
		wall=$(echo "$(date +%s.%N) - $t0" | bc)
		rss=null
	fi
	digest=$(sha256sum "$out" | cut -c1-16)
	printf '{"bench": "verify", "scenario": "%s", "devices": %s, "wall_s": %s, "max_rss_kb": %s, "status": %d, "digest": "%s"}\n' \
		"$f" "$devices" "$wall" "$rss" "$status" "$digest"
done

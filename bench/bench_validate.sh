#!/usr/bin/env bash
# bench_validate.sh — the time `shardlab validate` takes on a validation
# file, estimate and simulation (issue 17's "validate of the whole
# development set with simulation"), and the MAPE it prints, as one JSON
# line:
#   {"bench": "validate", "file", "rows", "wall_s", "mape"}
# ("mape" as `validate --json` prints it)
# Usage (from the source root, after a build):
#   bash bench/bench_validate.sh [FILE]   (default validation/megatron-dev.json)
# SHARDLAB names the binary (default build/cli/shardlab). Takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-validation/megatron-dev.json}
bin=${SHARDLAB:-build/cli/shardlab}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
t0=$(date +%s.%N)
"$bin" validate --json "$file" >"$out"
t1=$(date +%s.%N)
python3 - "$out" "$file" "$t0" "$t1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = j["mape"]
print(json.dumps({"bench": "validate", "file": sys.argv[2], "rows": len(j["rows"]),
                  "wall_s": round(float(sys.argv[4]) - float(sys.argv[3]), 3),
                  "mape": m}))
PY

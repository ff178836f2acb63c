#!/usr/bin/env bash
# bench_report.sh — a 1,024-rank simulation's page (issue 45: under 10 MB,
# open in under 5 s in headless Chromium), as one JSON line:
#   {"bench": "report", "ranks", "page_bytes", "write_s" (shardlab report
#    --simulate: plan, estimate, traced simulation and the page),
#    "browser_s" (chromium --dump-dom of the page, wall), "blank_s" (the
#    same of an empty page: the browser's own start), "open_s" (their
#    difference), "load_ms" (the page's load event after navigation, as
#    the page measures it), "timeline_rows", "mesh_cells"}
# The scenario: a 4-layer GPT (hidden 2048, 16 heads, sequence 1024) on
# 1,024 Ascend 910B of atlas800t-a2-910b-x1024, Megatron's TP 8, two
# pipeline stages, DP 64, 8 micro-batches.
# Usage (from the source root, after a build): bash bench/bench_report.sh
# SHARDLAB names the binary (default build/cli/shardlab); CHROMIUM the
# browser (default chromium). Not a test: no thresholds here.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SHARDLAB:-build/cli/shardlab}
browser=${CHROMIUM:-chromium}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/scenario.json" <<JSON
{
  "format": "shardlab-scenario",
  "version": 1,
  "name": "bench-report-1024",
  "model": {"name": "gpt-4layer-1024", "generator": {"kind": "gpt", "hidden": 2048,
            "layers": 4, "heads": 16, "ffn": 8192, "seq": 1024, "vocab": 51200,
            "micro_batch": 64, "dtype": "fp16"}},
  "topology": "$PWD/topologies/atlas800t-a2-910b-x1024.json",
  "devices": 1024,
  "planners": ["megatron"],
  "training": {"global_batch": 512, "pipeline_stages": 2, "dtype": "fp16"}
}
JSON
echo '<!DOCTYPE html><html><body></body></html>' >"$dir/blank.html"
open_page() { # FILE: the DOM after load, on stdout
	timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --no-first-run \
		--disable-dev-shm-usage --user-data-dir="$dir/profile" --dump-dom "file://$1" \
		2>/dev/null
}
now() { date +%s.%N; }
t0=$(now)
"$bin" report "$dir/scenario.json" --simulate --out "$dir/page.html"
t1=$(now)
open_page "$dir/blank.html" >/dev/null # the first start warms the profile
t2=$(now)
open_page "$dir/blank.html" >/dev/null
t3=$(now)
open_page "$dir/page.html" >"$dir/dom.html"
t4=$(now)
python3 - "$dir" "$t0" "$t1" "$t2" "$t3" "$t4" <<'PY'
import json, os, re, sys
d = sys.argv[1]
t0, t1, t2, t3, t4 = map(float, sys.argv[2:7])
dom = open(os.path.join(d, "dom.html")).read()
m = re.search(r'data-load-ms="(\d+)"', dom)
print(json.dumps({"bench": "report", "ranks": 1024,
                  "page_bytes": os.path.getsize(os.path.join(d, "page.html")),
                  "write_s": round(t1 - t0, 3), "browser_s": round(t4 - t3, 3),
                  "blank_s": round(t3 - t2, 3), "open_s": round((t4 - t3) - (t3 - t2), 3),
                  "load_ms": int(m.group(1)) if m else None,
                  "timeline_rows": dom.count('class="tl-row"'),
                  "mesh_cells": dom.count('class="mesh-cell"')}))
PY

#!/usr/bin/env python3
"""Put the layers measured by kernels.py beside shardlab's estimate of them.

    python3 bench/gpu/compare_layers.py LAYERS.json TOPOLOGY.json [SHARDLAB]

LAYERS.json is what `kernels.py OUT layers` wrote (OUT/layers.json): one GPT
layer's tensor-parallel slice, forward + backward, measured three ways
(unfused, Megatron-LM's fusions, fused attention). For each configuration
this writes a scenario of the same layer (the `gpt` generator, 2 layers, the
configuration's tensor-parallel degree as devices of TOPOLOGY, bf16, no
recomputation) with `flash_attention` false and true, runs `shardlab estimate
--csv --calibration none` (SHARDLAB, default build/cli/shardlab: the kernel
model, without a training calibration) and adds up the compute of the
second layer's ops (forward + backward; the tensor-parallel collectives are
not in the measurement and not counted). The unfused and fused measurements
are compared with the estimate without flash_attention, the flash one with
it. Needs only Python; no GPU.
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile


def estimate_ms(shardlab, topology, cfg, flash, tmp):
    name = "layer-h%d-a%d-tp%d-b%d-%s" % (cfg["hidden"], cfg["heads"], cfg["tensor_parallel"],
                                          cfg["micro_batch"], "flash" if flash else "plain")
    scenario = {
        "format": "shardlab-scenario", "version": 1, "name": name,
        "model": {"name": name, "generator": {
            "kind": "gpt", "hidden": cfg["hidden"], "layers": 2, "heads": cfg["heads"],
            "seq": cfg["seq"], "vocab": 51200, "dtype": "bf16",
            "micro_batch": cfg["micro_batch"]}},
        "topology": os.path.abspath(topology),
        "devices": cfg["tensor_parallel"],
        "planners": ["megatron"],
        "training": {"tensor_parallel": cfg["tensor_parallel"], "global_batch": cfg["micro_batch"],
                     "recompute": "none", "dtype": "bf16", "flash_attention": flash},
    }
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as fh:
        json.dump(scenario, fh)
    # The kernel model alone: a shipped training calibration scales whole
    # iterations to measured ones and is not a kernel correction.
    out = subprocess.run([shardlab, "estimate", path, "--csv", "--calibration", "none"], check=True,
                         capture_output=True, text=True).stdout
    total = 0.0
    for row in csv.DictReader(io.StringIO(out)):
        if row["name"].startswith("layers.1."):
            total += float(row["compute_forward_s"]) + float(row["compute_backward_s"])
    return total * 1e3


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    layers_path, topology = sys.argv[1], sys.argv[2]
    shardlab = sys.argv[3] if len(sys.argv) > 3 else "build/cli/shardlab"
    with open(layers_path) as fh:
        layers = json.load(fh)
    print("%-20s %-8s %14s %14s %8s" % ("layer slice", "variant", "measured ms", "estimate ms",
                                        "error"))
    with tempfile.TemporaryDirectory() as tmp:
        cache = {}
        for e in layers:
            if "forward_backward_s" not in e:
                print("%-20s %-8s %14s" % (e["config"], e["variant"], "failed"))
                continue
            flash = e["variant"] == "flash"
            key = (e["hidden"], e["heads"], e["tensor_parallel"], e["micro_batch"], flash)
            if key not in cache:
                cache[key] = estimate_ms(shardlab, topology, e, flash, tmp)
            m = e["forward_backward_s"] * 1e3
            print("%-20s %-8s %14.3f %14.3f %+7.1f%%"
                  % (e["config"], e["variant"], m, cache[key], 100 * (cache[key] / m - 1)))
    print("\nerror: 100 (estimate / measured - 1); forward + backward of one layer, compute only")


if __name__ == "__main__":
    main()

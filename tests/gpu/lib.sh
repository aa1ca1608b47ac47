# lib.sh: sourced by the GPU scripts (tests/gpu/*.sh, bench/bench_gpu.sh);
# tests/run.sh does not run it as a suite.
#
#   gpu_cc EXE SRC BUILD KERNELS [CFLAGS...]
#
# Compiles the C driver SRC into EXE against BUILD's libtrainer.a and
# liblib.a, with BUILD/libkernels.a and the CUDA libraries (cuBLASLt,
# cuBLAS, cudart from $CUDA_HOME/lib64) when KERNELS is 1, and the project's
# dependency libraries (the flags of `make dep-flags`); CFLAGS are added to -std=c11 -Wall -Wextra -O2 -g
# -I. -Itests/unit. Run from the repository root; $CC, $CUDA_HOME honoured.
# gpu_run EXE... runs a command with $CUDA_HOME/lib64 on LD_LIBRARY_PATH.
# need_nvcc skips the calling suite (exit 0) when nvcc is missing.
# torch_py prints the first Python that imports torch: $TORCH_PYTHON, PATH's
# python3 (a GPU machine's, in a venv), /usr/bin/python3 (Debian's
# python3-torch); fails when none does.
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

gpu_cc() {
	local exe=$1 src=$2 b=$3 kernels=$4
	shift 4
	local kern=() cuda=() flags dcf dlf
	if [[ $kernels == 1 ]]; then
		# whole: kernels/ registers the cuda backend from a static initialiser
		kern=(-Wl,--whole-archive "$b/libkernels.a" -Wl,--no-whole-archive)
		cuda=(-L"$CUDA_HOME/lib64" -lcublasLt -lcublas -lcudart -lstdc++)
	fi
	# the Makefile's own dependency flags (pkg-config, or the plain names and
	# scripts/gpu-deps.sh's EXTRA_CFLAGS and LDFLAGS)
	flags=$(make -s --no-print-directory dep-flags) || return 1
	dcf=$(sed -n 1p <<<"$flags")
	dlf=$(sed -n 2p <<<"$flags")
	mkdir -p "$(dirname "$exe")"
	# shellcheck disable=SC2086
	${CC:-cc} -std=c11 -Wall -Wextra -O2 -g -I. -Itests/unit -D_DEFAULT_SOURCE \
		-D_POSIX_C_SOURCE=200809L "$@" $dcf \
		-o "$exe" "$src" "${kern[@]}" "$b/libtrainer.a" "$b/libdata.a" "$b/liblib.a" $dlf "${cuda[@]}"
}

# need_nvcc: puts $CUDA_HOME/bin on PATH; without nvcc there, prints a
# skipped suite's lines and exits 0 (the calling script)
need_nvcc() {
	export PATH="$CUDA_HOME/bin:$PATH"
	command -v nvcc >/dev/null 2>&1 && return 0
	echo "skipped: no nvcc"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
}

gpu_run() {
	LD_LIBRARY_PATH="$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}

torch_py() {
	local p
	for p in "${TORCH_PYTHON:-}" python3 /usr/bin/python3; do
		[[ -n "$p" ]] || continue
		if "$p" -c 'import torch' >/dev/null 2>&1; then
			command -v "$p"
			return 0
		fi
	done
	return 1
}

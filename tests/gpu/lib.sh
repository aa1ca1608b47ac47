# lib.sh: sourced by the GPU scripts (tests/gpu/*.sh, bench/bench_gpu.sh);
# tests/run.sh does not run it as a suite.
#
#   gpu_cc EXE SRC BUILD KERNELS [CFLAGS...]
#
# Compiles the C driver SRC into EXE against BUILD's libtrainer.a and
# liblib.a, with BUILD/libkernels.a and the CUDA libraries (cuBLASLt,
# cuBLAS, cudart from $CUDA_HOME/lib64) when KERNELS is 1, and the project's
# dependency libraries; CFLAGS are added to -std=c11 -Wall -Wextra -O2 -g
# -I. -Itests/unit. Run from the repository root; $CC, $CUDA_HOME honoured.
# gpu_run EXE... runs a command with $CUDA_HOME/lib64 on LD_LIBRARY_PATH.
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

gpu_cc() {
	local exe=$1 src=$2 b=$3 kernels=$4
	shift 4
	local pkgs="libcrypto libarchive libcjson libpcre2-8" kern=() cuda=()
	if [[ $kernels == 1 ]]; then
		kern=("$b/libkernels.a")
		cuda=(-L"$CUDA_HOME/lib64" -lcublasLt -lcublas -lcudart -lstdc++)
	fi
	mkdir -p "$(dirname "$exe")"
	# shellcheck disable=SC2046
	${CC:-cc} -std=c11 -Wall -Wextra -O2 -g -I. -Itests/unit -D_DEFAULT_SOURCE \
		-D_POSIX_C_SOURCE=200809L "$@" $(pkg-config --cflags $pkgs lapacke openblas 2>/dev/null) \
		-o "$exe" "$src" "$b/libtrainer.a" "${kern[@]}" "$b/liblib.a" \
		$(pkg-config --libs $pkgs 2>/dev/null) -lgsl \
		$(pkg-config --libs lapacke openblas 2>/dev/null || echo -llapacke -lopenblas) -lm -lpthread \
		"${cuda[@]}"
}

gpu_run() {
	LD_LIBRARY_PATH="$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}

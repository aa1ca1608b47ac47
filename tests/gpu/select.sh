#!/usr/bin/env bash
# select.sh: builds tests/gpu/test_select.c against the current build's
# libtrainer.a ($BUILD, default build; with libkernels.a and -DSUPKIT_CUDA
# when that build is a GPU=1 one) and runs it. Runs without a GPU: it checks
# what backend = cpu | cuda | auto give on this build and machine.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
if [[ ! -f "$B/libtrainer.a" || ! -f "$B/liblib.a" ]]; then
	echo "FAIL no $B/libtrainer.a (build first)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PKGS="libcrypto libarchive libcjson libpcre2-8"
cflags=$(pkg-config --cflags $PKGS lapacke openblas 2>/dev/null)
libs="$(pkg-config --libs $PKGS 2>/dev/null) -lgsl $(pkg-config --libs lapacke openblas 2>/dev/null || echo -llapacke -lopenblas) -lm -lpthread"
san=""
[[ "${SAN:-}" == 1 ]] && san="-fsanitize=address,undefined -fno-omit-frame-pointer"
kern="" cuda=""
if [[ -f "$B/libkernels.a" ]] && nm "$B/libtrainer.a" 2>/dev/null | grep -q ' U backend_cuda$'; then
	kern="$B/libkernels.a"
	cuda="-L$CUDA_HOME/lib64 -lcublasLt -lcublas -lcudart -lstdc++"
fi
mkdir -p "$B/gpu"
exe="$B/gpu/test_select"
if ! ${CC:-cc} -std=c11 -Wall -Wextra -O2 -g $san -I. -Itests/unit -D_DEFAULT_SOURCE \
	-D_POSIX_C_SOURCE=200809L $cflags -o "$exe" tests/gpu/test_select.c "$B/libtrainer.a" \
	$kern "$B/liblib.a" $libs $cuda; then
	echo "FAIL build of tests/gpu/test_select.c against $B"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
LD_LIBRARY_PATH="$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$exe"

#!/usr/bin/env bash
# cuda_compile.sh: every kernels/*.cu compiles with nvcc (as CI does; no GPU
# needed), with the Makefile's flags, and kernels/cuda_api.h is plain C11.
# Skips when nvcc is not found. Reference: shared/DESIGN.md (Tests).
. "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=$(command -v nvcc 2>/dev/null || { [[ -x $CUDA_HOME/bin/nvcc ]] && echo "$CUDA_HOME/bin/nvcc"; })
if [[ -z "$NVCC" ]]; then
	skip "nvcc" "nvcc not found (set CUDA_HOME or PATH)"
	finish
fi

shopt -s nullglob
srcs=(kernels/*.cu)
if ((${#srcs[@]} == 0)); then
	bad "kernels/*.cu" "no CUDA sources"
fi
# two at a time (the machine's cores are shared)
pids=()
for i in "${!srcs[@]}"; do
	f=${srcs[$i]}
	( "$NVCC" -O3 -std=c++17 -arch=sm_90a -I. -Xcompiler -fPIC,-Wall,-Werror -c \
		-o "$TMP/$i.o" "$f" >"$TMP/$i.log" 2>&1; echo $? >"$TMP/$i.rc" ) &
	pids+=($!)
	if (( ${#pids[@]} == 2 )); then wait "${pids[@]}"; pids=(); fi
done
wait
for i in "${!srcs[@]}"; do
	f=${srcs[$i]}
	rc=$(cat "$TMP/$i.rc" 2>/dev/null || echo 1)
	errout=$(cat "$TMP/$i.log" 2>/dev/null)
	if [[ $rc == 0 && -z "$errout" ]]; then
		ok "$f compiles with $(basename "$NVCC") for sm_90a, no warnings"
	else
		bad "$f compiles" "exit $rc"
	fi
done

# the C face: C11, no CUDA headers needed
printf '#include "kernels/cuda_api.h"\nint main(void){struct cuda_mem_stats s; (void)s; return 0;}\n' >"$TMP/c.c"
run ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I. -fsyntax-only "$TMP/c.c"
expect_rc 0 "kernels/cuda_api.h is plain C11"
finish

#!/usr/bin/env bash
# cuda_compile.sh: every kernels/*.cu compiles with nvcc (as CI does; no GPU
# needed) with the Makefile's flags and no warning, and kernels/cuda_api.h is
# plain C11. The objects are the build's own (make cuda: build/kernels, one
# copy for every BUILD variant, each with its compile's output in X.o.log;
# up to date after make test's build, else compiled here): a source without
# a fresh object, or whose compile printed anything, fails. Skips when nvcc
# is not found. Reference: the Makefile's cuda target.
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
run make -s --no-print-directory NVCC="$NVCC" cuda
expect_rc 0 "make cuda (nvcc) succeeds"
for f in "${srcs[@]}"; do
	o=build/kernels/$(basename "$f" .cu).o
	if [[ ! -f "$o" || ! "$o" -nt "$f" ]]; then
		bad "$f compiles" "no object $o newer than the source"
	elif [[ ! -f "$o.log" ]]; then
		bad "$f compiles" "no compile log $o.log"
	elif [[ -s "$o.log" ]]; then
		bad "$f compiles with no warnings" "$(head -c 600 "$o.log")"
	else
		ok "$f compiles with $(basename "$NVCC") for sm_90a, no warnings"
	fi
done

printf '#include "kernels/cuda_api.h"\nint main(void){struct cuda_mem_stats s; (void)s; return 0;}\n' >"$TMP/c.c"
run ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I. -fsyntax-only "$TMP/c.c"
expect_rc 0 "kernels/cuda_api.h is plain C11"
finish

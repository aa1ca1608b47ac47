#!/usr/bin/env bash
# cuda_compile.sh: every kernels/*.cu, and every dev/cuda/*.cu (the kernel
# variants not in the product), compiles with nvcc (as CI does; no GPU
# needed) with the Makefile's flags and no warning, and kernels/cuda_api.h is
# plain C11. The objects are the build's own (make cuda: build/kernels and
# build/dev/cuda, one copy for every BUILD variant, each with its compile's
# output in X.o.log;
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
srcs+=(dev/cuda/*.cu)
run make -s --no-print-directory NVCC="$NVCC" cuda
expect_rc 0 "make cuda (nvcc) succeeds"
for f in "${srcs[@]}"; do
	o=build/${f%.cu}.o
	if [[ ! -f "$o" || ! "$o" -nt "$f" ]]; then
		bad "$f compiles" "no object $o newer than the source"
	elif [[ ! -f "$o.log" ]]; then
		bad "$f compiles" "no compile log $o.log"
	elif [[ -s "$o.log" ]]; then
		bad "$f compiles with no warnings" "$(head -c 600 "$o.log")"
	else
		ok "$f compiles with $(basename "$NVCC"), no warnings"
	fi
done

# The fat binary (Makefile CUDA_ARCHS): machine code for sm_80, sm_89 and
# sm_90a, Blackwell's sm_100 and sm_120 where this nvcc knows them, and
# compute_80 PTX (cuobjdump --list-elf / --list-ptx, or without cuobjdump
# scripts/fatbin-archs.py on the object's .nv_fatbin section); wgmma
# instructions in none of the product's attention code, and in the sm_90a
# code only of dev/cuda's variants (the PTX nvcc makes for each arch).
CUOBJDUMP=$(dirname "$NVCC")/cuobjdump
known=" $("$NVCC" --list-gpu-code 2>/dev/null | tr '\n' ' ') "
want=(sm_80 sm_89 sm_90a)
for a in sm_100 sm_120; do [[ "$known" == *" $a "* ]] && want+=("$a"); done
archs_of() { # OBJ: its code words (sm_NN, compute_NN)
	if [[ -x "$CUOBJDUMP" ]]; then
		"$CUOBJDUMP" --list-elf "$1" | grep -o 'sm_[0-9]*a\?' | sort -u
		"$CUOBJDUMP" --list-ptx "$1" | grep -o 'sm_[0-9]*a\?' | sed 's/^sm_/compute_/' | sort -u
	elif command -v python3 >/dev/null 2>&1 && command -v objcopy >/dev/null 2>&1; then
		python3 scripts/fatbin-archs.py "$1" | tr ' ' '\n'
	else
		return 2
	fi
}
for f in "${srcs[@]}"; do
	o=build/${f%.cu}.o
	[[ -f "$o" ]] || continue
	have=$(archs_of "$o")
	if [[ $? == 2 ]]; then skip "$o archs" "neither cuobjdump nor python3 and objcopy"; continue; fi
	have=" $(tr '\n' ' ' <<<"$have") "
	miss=()
	for a in "${want[@]}" compute_80; do [[ "$have" == *" $a "* ]] || miss+=("$a"); done
	if ((${#miss[@]} == 0)); then ok "$o holds ${want[*]} and compute_80 PTX"
	else bad "$o holds ${want[*]} and compute_80 PTX" "missing ${miss[*]}; has$have"; fi
done
wgmma_archs() { # SRC: the archs of want whose PTX of SRC has wgmma instructions
	local a c
	for a in "${want[@]}"; do
		c=compute_${a#sm_}
		if ! "$NVCC" -std=c++17 -I. -arch="$c" -ptx -o "$TMP/wg_$a.ptx" "$1" >"$TMP/ptx.log" 2>&1; then
			bad "$1 to $c PTX" "$(head -c 300 "$TMP/ptx.log")"
			continue
		fi
		grep -q 'wgmma\.' "$TMP/wg_$a.ptx" && echo "$a"
	done
}
wg=$(wgmma_archs kernels/attention_mma.cu | tr '\n' ' ')
[[ -z "$wg" ]] && ok "no wgmma instructions in kernels/attention_mma.cu" ||
	bad "no wgmma instructions in kernels/attention_mma.cu" "found for: '$wg'"
wg=$(wgmma_archs dev/cuda/attention_variants.cu | tr '\n' ' ')
[[ "$wg" == "sm_90a " ]] && ok "wgmma instructions in dev/cuda/attention_variants.cu's sm_90a code only" ||
	bad "wgmma instructions in dev/cuda/attention_variants.cu's sm_90a code only" "found for: '$wg'"

printf '#include "kernels/cuda_api.h"\nint main(void){struct cuda_mem_stats s; (void)s; return 0;}\n' >"$TMP/c.c"
run ${CC:-cc} -std=c11 -Wall -Wextra -Werror -I. -fsyntax-only "$TMP/c.c"
expect_rc 0 "kernels/cuda_api.h is plain C11"
finish

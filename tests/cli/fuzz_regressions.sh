#!/usr/bin/env bash
# fuzz_regressions.sh: replay every fuzz harness's inputs through its plain
# driver ($BUILD/fuzz/replay_NAME, tests/fuzz/fuzz.mk): the seed corpus
# (tests/fuzz/seeds.txt, tests/fuzz/corpus/NAME) and every finding kept under
# tests/fuzz/regressions/NAME/. One test per harness: it passes when the
# driver replays them all without an abort, a sanitizer report (SAN=1) or a
# hang (60 s).
# Findings listed in tests/fuzz/regressions/NAME/OPEN (one "FILE  why" a line)
# are bugs not fixed yet: each replays on its own and is reported as skipped
# while it still fails, as passed once fixed (then drop its OPEN line).
# Reference: tests/fuzz/README.md.
source "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT" || exit 1
BUILD=${BUILD:-build}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

names=$( (awk '$1 !~ /^#/ && NF { print $1 }' tests/fuzz/seeds.txt
	for d in tests/fuzz/regressions/*/; do [[ -d "$d" ]] && basename "$d"; done) | sort -u)

for name in $names; do
	bin="$BUILD/fuzz/replay_$name"
	if [[ ! -x "$bin" ]]; then
		if [[ -f "tests/fuzz/fuzz_$name.c" ]]; then
			bad "$name: replay" "'$bin' not built (make $bin)"
		else
			skip "$name: replay" "no tests/fuzz/fuzz_$name.c"
		fi
		continue
	fi
	reg="tests/fuzz/regressions/$name"
	inputs=()
	for f in $(awk -v n="$name" '$1 == n { $1 = ""; print }' tests/fuzz/seeds.txt); do
		[[ -e "$f" ]] && inputs+=("$f")
	done
	[[ -d "tests/fuzz/corpus/$name" ]] && inputs+=("tests/fuzz/corpus/$name")
	open=()
	if [[ -f "$reg/OPEN" ]]; then
		while read -r f _; do
			[[ -n "$f" && "$f" != \#* ]] && open+=("$f")
		done <"$reg/OPEN"
	fi
	nreg=0
	if [[ -d "$reg" ]]; then
		for f in "$reg"/*; do
			b=$(basename "$f")
			[[ -f "$f" && "$b" != OPEN && "$b" != README* ]] || continue
			[[ " ${open[*]} " == *" $b "* ]] && continue
			inputs+=("$f")
			nreg=$((nreg + 1))
		done
	fi
	if ((${#inputs[@]} == 0)); then
		skip "$name: replay" "no seeds or regressions"
		continue
	fi
	run timeout 60 "$bin" "${inputs[@]}"
	if [[ $rc == 0 ]]; then
		ok "$name: $nreg regressions and seeds replay ($out)"
	else
		last=$(grep '^replay: ' <<<"$errout" | tail -n 1)
		bad "$name: replay" "exit $rc at '${last#replay: }'"
	fi
	for b in "${open[@]}"; do
		run timeout 60 "$bin" "$reg/$b"
		why=$(awk -v f="$b" '$1 == f { $1 = ""; sub(/^ +/, ""); print }' "$reg/OPEN")
		if [[ ! -f "$reg/$b" ]]; then
			bad "$name: open $b" "listed in $reg/OPEN but missing"
		elif [[ $rc == 0 ]]; then
			ok "$name: open $b replays now (fixed; drop it from OPEN)"
		else
			skip "$name: open $b" "still fails (exit $rc): $why"
		fi
	done
done
finish

#!/usr/bin/env bash
# run.sh: run the libFuzzer harnesses (make fuzz-run SECONDS=N [FUZZ="a b"]).
#
#   bash tests/fuzz/run.sh -t SECONDS [-n EXECUTIONS] NAME...
#
# For each NAME: build/fuzz/lf/fuzz_NAME runs for SECONDS in all (or until
# EXECUTIONS executions, whichever comes first; libFuzzer checks the count
# between fork-mode jobs, so it stops a little past it), on the
# working corpus build/fuzz/corpus/NAME (seeded from tests/fuzz/seeds.txt and
# tests/fuzz/corpus/NAME), with a 10 s per-input timeout and a 2 GiB RSS
# limit, in libFuzzer's fork mode with one job (-fork=1), which goes on past
# crashes, leaks, timeouts and OOMs. Each finding is replayed once to get
# its signature (the first two frames in the project's sources, or the kind for a
# timeout or OOM); one input per new signature is minimised into
# tests/fuzz/regressions/NAME/<kind>-<sha1 prefix>. A line per harness
# (executions, seconds, findings) is printed and appended to
# build/fuzz/summary.txt. Exit 0 when no harness found anything new, 1 otherwise.
# Leaves out: more than one job per harness (the machine is shared).
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=60 runs=-1
while [[ "${1:-}" == -t || "${1:-}" == -n ]]; do
	[[ $# -ge 2 ]] || { echo "usage: run.sh -t SECONDS [-n EXECUTIONS] NAME..." >&2; exit 2; }
	if [[ $1 == -t ]]; then secs=$2; else runs=$2; fi
	shift 2
done
[[ $# -gt 0 ]] || { echo "usage: run.sh -t SECONDS [-n EXECUTIONS] NAME..." >&2; exit 2; }
LF=${FUZZ_LF:-build/fuzz/lf}
mkdir -p build/fuzz
found_any=0

seeds_of() { # name: the seed files, one a line
	local line f
	line=$(awk -v n="$1" '$1 == n { $1 = ""; print }' tests/fuzz/seeds.txt)
	for f in $line; do [[ -e "$f" ]] && find "$f" -type f; done
	[[ -d "tests/fuzz/corpus/$1" ]] && find "tests/fuzz/corpus/$1" -type f
	return 0
}

for name in "$@"; do
	bin="$LF/fuzz_$name"
	[[ -x "$bin" ]] || { echo "run.sh: no '$bin' (make fuzz)" >&2; exit 2; }
	corpus="build/fuzz/corpus/$name" art="build/fuzz/artifacts/$name" reg="tests/fuzz/regressions/$name"
	sigs="build/fuzz/signatures.$name"
	mkdir -p "$corpus" "$art"
	touch "$sigs"
	while read -r f; do
		[[ -n "$f" ]] && cp "$f" "$corpus/seed-$(sha1sum <"$f" | cut -c1-16)"
	done < <(seeds_of "$name")
	rm -f "$art"/*
	log="build/fuzz/$name.log" t0=$SECONDS
	ASAN_OPTIONS=detect_leaks=1 nice "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
		-ignore_ooms=1 -max_total_time="$secs" -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$art/" "$corpus" >"$log" 2>&1
	execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
	fuzz_s=$(grep -oE "time: [0-9]+s" "$log" | tail -n 1 | grep -oE "[0-9]+")
	findings=0 new=0
	for a in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
		[[ -f "$a" ]] || continue
		findings=$((findings + 1))
		kind=$(basename "$a"); kind=${kind%%-*}
		sig=$kind
		if [[ $kind == crash || $kind == leak ]]; then
			sig=$(ASAN_OPTIONS=detect_leaks=1 timeout 60 "$bin" -runs=1 "$a" 2>&1 |
				grep -oE " in [A-Za-z_0-9]+ $PWD/[^ ]+" | grep -v 'tests/fuzz/driver' |
				head -n 2 | sed "s| in ||; s|$PWD/||" | paste -sd' ')
			sig="$kind ${sig:-unknown}"
		fi
		grep -qxF -- "$sig" "$sigs" && continue
		echo "$sig" >>"$sigs"
		min="$art/min"
		rm -f "$min"
		nice "$bin" -minimize_crash=1 -max_total_time=20 -timeout=10 -rss_limit_mb=2048 \
			-exact_artifact_path="$min" "$a" >>"$log.min" 2>&1
		[[ -s "$min" ]] || cp "$a" "$min"
		mkdir -p "$reg"
		dest="$reg/$kind-$(sha1sum <"$min" | cut -c1-12)"
		cp "$min" "$dest"
		new=$((new + 1)) found_any=1
		echo "run.sh: $name: $sig: minimised into $dest ($(stat -c %s "$dest") bytes)"
	done
	line="$name: ${execs:-0} executions in ${fuzz_s:-0} s of fuzzing ($((SECONDS - t0)) s in all), $findings findings, $new new ($(date -u +%FT%TZ))"
	echo "$line" | tee -a build/fuzz/summary.txt
done
exit $((found_any ? 1 : 0))

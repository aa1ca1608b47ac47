#!/usr/bin/env bash
# run.sh: run the libFuzzer harnesses (make fuzz-run SECONDS=N [FUZZ="a b"]).
#
#   bash tests/fuzz/run.sh -t SECONDS NAME...
#
# For each NAME: build/fuzz/lf/fuzz_NAME runs for SECONDS in all, on the
# working corpus build/fuzz/corpus/NAME (seeded from tests/fuzz/seeds.txt and
# tests/fuzz/corpus/NAME), with a 10 s per-input timeout and a 2 GiB RSS
# limit. When it stops on a crash, leak, timeout or OOM, the input is
# minimised into tests/fuzz/regressions/NAME/<kind>-<sha1 prefix> and the run
# goes on with the time left (at most 5 findings per harness). A line per
# harness (executions, seconds, findings) is printed and appended to
# build/fuzz/summary.txt. Exit 0 when no harness found anything, 1 otherwise.
# Leaves out: parallel jobs (-jobs/-fork): the machine is shared.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=60
if [[ "${1:-}" == -t ]]; then secs=$2; shift 2; fi
[[ $# -gt 0 ]] || { echo "usage: run.sh -t SECONDS NAME..." >&2; exit 2; }
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
	mkdir -p "$corpus" "$art"
	while read -r f; do
		[[ -n "$f" ]] && cp "$f" "$corpus/seed-$(sha1sum <"$f" | cut -c1-16)"
	done < <(seeds_of "$name")
	left=$secs execs=0 findings=0 t0=$SECONDS
	log="build/fuzz/$name.log"
	: >"$log"
	while ((left > 0 && findings < 5)); do
		rm -f "$art"/*
		ASAN_OPTIONS=detect_leaks=1 nice "$bin" -max_total_time="$left" -timeout=10 \
			-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
			"$corpus" >>"$log" 2>&1
		rc=$?
		n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$')
		execs=$((execs + ${n:-0}))
		left=$((secs - (SECONDS - t0)))
		a=$(ls "$art" 2>/dev/null | head -n 1)
		if ((rc == 0)) || [[ -z "$a" ]]; then
			((rc == 0)) || echo "run.sh: $name: exit $rc without an artifact (see $log)" >&2
			break
		fi
		findings=$((findings + 1)) found_any=1
		kind=${a%%-*}
		mkdir -p "$reg"
		min="$art/min"
		nice "$bin" -minimize_crash=1 -max_total_time=60 -timeout=10 -rss_limit_mb=2048 \
			-exact_artifact_path="$min" "$art/$a" >>"$log" 2>&1
		[[ -s "$min" ]] || cp "$art/$a" "$min"
		dest="$reg/$kind-$(sha1sum <"$min" | cut -c1-12)"
		cp "$min" "$dest"
		echo "run.sh: $name: $kind, minimised into $dest ($(stat -c %s "$dest") bytes)"
		# keep the finding out of the working corpus's way: it is a regression now
	done
	line="$name: $execs executions in $((SECONDS - t0)) s, $findings findings ($(date -u +%FT%TZ))"
	echo "$line" | tee -a build/fuzz/summary.txt
done
exit $((found_any ? 1 : 0))

#!/usr/bin/env bash
# check_dry.sh: scripts/gpu-check.sh, the one command a GPU machine runs,
# as a dry run on this machine (no GPU: its suites skip, the benchmark
# does nothing), so that an error in its phases, budget, summary or packing
# shows here and not first on a GPU. Checks the exit status, the sources'
# hash in the summary's first line, a summary line for the build, every suite and the benchmark, the dry-run
# verdict, and logs.tgz holding every phase's log; then, with one phase's call
# misspelt, a failed run (exit 1, the command named). Skips when nvcc is
# missing (the build phase needs it) or when a GPU is present (then
# gpu-check.sh itself is the test). Reference: scripts/gpu-check.sh.
set -u
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
need_nvcc
if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
	echo "skipped: a GPU is present (run scripts/gpu-check.sh itself)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"; }
# SAN= : the GPU=1 build as tests/gpu/link.sh makes it (make test SAN=1
# would otherwise rebuild it with the sanitizers)
env SAN= GPU_CHECK_BUDGET=300 bash scripts/gpu-check.sh "$out/o" >"$out/stdout" 2>&1
rc=$?
[[ $rc == 0 ]] && ok "gpu-check.sh exits 0 on a dry run" || bad "gpu-check.sh exit status" "$rc: $(tail -n 5 "$out/stdout")"
sum="$out/o/summary.txt"
if [[ -f "$sum" ]]; then ok "summary.txt written"; else bad "summary.txt written"; fi
# the sources' hash, which --sources prints for this checkout
src=$(bash scripts/gpu-check.sh --sources 2>/dev/null)
if [[ "$src" =~ ^[0-9a-f]{16}$ ]] && grep -q "^supkit gpu-check .*, sources $src\$" "$sum" 2>/dev/null; then
	ok "summary: the sources' hash, as --sources prints it"
else
	bad "summary: the sources' hash, as --sources prints it" "'$src'; $(head -n 1 "$sum" 2>/dev/null)"
fi
for want in '^supkit gpu-check ' '^device: none' '^libraries: ' '^build: exit 0 ' \
	'^test cuda_ops: .* skipped ' '^test select: [0-9]+ passed, 0 failed' '^test train_cli: .* skipped ' \
	'^test curve: .* skipped ' \
	'^bench: exit 0 ' '^total: [0-9]+ s; tests passed \(a dry run'; do
	if grep -qE "$want" "$sum" 2>/dev/null; then ok "summary: $want"; else bad "summary: $want" "$(head -c 800 "$sum" 2>/dev/null)"; fi
done
logs=$(tar -tzf "$out/o/logs.tgz" 2>/dev/null)
# asynchronous ops are the backend's only mode: no second run of suites for them
grep -q '_async' "$sum" 2>/dev/null && bad "summary: no *_async suites" "$(grep '_async' "$sum")" ||
	ok "summary: no *_async suites"
for l in env.txt build.log cuda_ops.log select.log train_cli.log curve.log bench.log; do
	if grep -qx "logs/$l" <<<"$logs"; then ok "logs.tgz: $l"; else bad "logs.tgz: $l" "$(tr '\n' ' ' <<<"$logs")"; fi
done
[[ ! -e "$out/o/logs" ]] && ok "the logs folder packed away" || bad "the logs folder packed away"
# A misspelt phase (suite select -> suit select) must fail the run, not pass
# it with a phase missing: the script, so edited, runs from a tree of links to
# this one (it finds the repository from its own path).
root="$out/root"
mkdir -p "$root/scripts"
for f in * .[!.]*; do
	[[ $f == scripts || $f == .git ]] || ln -s "$PWD/$f" "$root/$f"
done
for f in scripts/*; do ln -s "$PWD/$f" "$root/$f"; done
rm "$root/scripts/gpu-check.sh"
sed 's/^suite select /suit select /' scripts/gpu-check.sh >"$root/scripts/gpu-check.sh"
if grep -q '^suit select ' "$root/scripts/gpu-check.sh"; then
	env SAN= GPU_CHECK_BUDGET=300 bash "$root/scripts/gpu-check.sh" "$out/m" >"$out/m.stdout" 2>&1
	rc=$?
	[[ $rc == 1 ]] && ok "a misspelt phase: exit 1" || bad "a misspelt phase: exit 1" "$rc: $(tail -n 5 "$out/m.stdout")"
	for want in '^gpu-check.sh: command not found: suit select ' '^a command was not found' \
		'^total: [0-9]+ s; tests FAILED'; do
		if grep -qE "$want" "$out/m/summary.txt" 2>/dev/null; then ok "misspelt: $want"; else bad "misspelt: $want" "$(tail -c 600 "$out/m/summary.txt" 2>/dev/null)"; fi
	done
	[[ ! -e "$out/m/.not-found" ]] && ok "misspelt: no mark left in OUTDIR" || bad "misspelt: no mark left in OUTDIR"
else
	bad "the misspelling was made (is the line still 'suite select ...'?)"
fi
echo "$pass passed, $fail failed, 0 skipped"
[[ $fail == 0 ]]

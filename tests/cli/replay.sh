#!/usr/bin/env bash
# replay.sh: supkit replay end to end: apply, run, diff; exit codes 0 (ok),
# 1 (a run failed or mismatched), 2 (bad usage or input); one-line errors that
# name the file, run, hunk and line; no output left behind on refusal; --help
# options documented in the man page. Fixtures: tests/fixtures/replay (make.sh).
source "$(dirname "$0")/lib.sh"
R=$FIX/replay
C=$R/cases
MAN=$SUPKIT_ROOT/man/supkit-replay.1

# --help, and every option it lists is in the man page
run supkit-replay --help
expect_rc 0 "--help exits 0"
expect_out_contains "diff" "--help lists the subcommands"
for sub in apply run diff; do
	run supkit-replay $sub --help
	expect_rc 0 "$sub --help exits 0"
	opts=$(grep -oE -- '--[a-z][a-z-]*' <<<"$out" | sort -u | grep -v -- '--help')
	missing=""
	for o in $opts; do grep -qE -- "Fl (\\\\)?-${o#--}\b" "$MAN" || missing+=" $o"; done
	if [[ -z "$missing" ]]; then ok "$sub: every option of --help is in the man page"; else bad "$sub: man page lacks$missing"; fi
done
run supkit-replay nosuch
expect_rc 2 "unknown subcommand exits 2"
expect_one_line_err "unknown subcommand: one line"

# ---- apply
run supkit-replay apply "$C/multi/old" "$C/multi/U0.diff"
expect_rc 0 "apply -U 0 to stdout"
supkit-replay apply "$C/multi/old" "$C/multi/U0.diff" >"$TMP/multi.out"
expect_same_file "$TMP/multi.out" "$C/multi/new" "apply: stdout is the new file exactly"
for c in crlf nonl_old nonl_new nonl_both append_nonl empty_new; do
	run supkit-replay apply "$C/$c/old" "$C/$c/U3.diff" -o "$TMP/$c.out"
	expect_rc 0 "apply -U 3 $c with -o"
	expect_same_file "$TMP/$c.out" "$C/$c/new" "apply $c: byte for byte"
done
sed '4s/^-/-X/' "$C/change/U0.diff" >"$TMP/bad.diff"
run supkit-replay apply "$C/change/old" "$TMP/bad.diff" -o "$TMP/never.out"
expect_rc 2 "apply: a removed line that differs exits 2"
expect_err_contains "bad.diff': hunk 1 (line 4): removed line does not match baseline line" "apply: error names hunk and lines"
expect_one_line_err "apply: one-line error"
expect_no_file "$TMP/never.out" "apply: no output on refusal"
head -c 200 "$C/multi/U0.diff" >"$TMP/trunc.diff"
run supkit-replay apply "$C/multi/old" "$TMP/trunc.diff"
expect_rc 2 "apply: truncated diff exits 2"
expect_err_contains "truncated" "apply: says truncated"
run supkit-replay apply "$C/multi/old"
expect_rc 2 "apply: one operand exits 2"
run supkit-replay apply "$TMP/nosuch" "$C/multi/U0.diff"
expect_rc 2 "apply: missing baseline exits 2"
expect_err_contains "nosuch" "apply: names the missing file"

# ---- run
run supkit-replay run --baseline "$R/runs/base/train.txt" "$R/diffs.json" -o "$TMP/out"
expect_rc 0 "run: all runs match"
expect_out_contains "5 runs: 5 ok, 0 mismatch, 0 failed" "run: summary line"
expect_out_contains "r1       3       +2       -6  ok" "run: table row"
for r in r1 r2 r3 r4 r5; do
	expect_same_file "$TMP/out/$r/train.txt" "$R/runs/$r/train.txt" "run: $r rebuilt exactly"
done
run supkit replay run "$R/diffs.json" --baseline "$R/runs/base/train.txt" --json
expect_rc 0 "run via the front command, options after the operand"
echo "$out" >"$TMP/j1"
run supkit-replay run --json --baseline "$R/runs/base/train.txt" "$R/diffs.json"
echo "$out" >"$TMP/j2"
expect_same_file "$TMP/j1" "$TMP/j2" "run --json is deterministic"
expect_out_contains '"ok": 5' "run --json: summary"
run supkit-replay run --baseline "$R/runs/base/train.txt" "$R/mismatch.json" -o "$TMP/mm"
expect_rc 1 "run: a mismatch exits 1"
expect_out_contains "MISMATCH" "run: MISMATCH in the table"
expect_err_contains "run 'r2': SHA-256 mismatch" "run: mismatch names the run"
expect_no_file "$TMP/mm/r2" "run: the mismatching run writes nothing"
expect_same_file "$TMP/mm/r1/train.txt" "$R/runs/r1/train.txt" "run: matching runs are still written"
# a run whose diff does not apply
sed 's/-have the freedom/-HAVE the freedom/' "$R/diffs.json" >"$TMP/failing.json"
run supkit-replay run --baseline "$R/runs/base/train.txt" "$TMP/failing.json" -o "$TMP/fo"
expect_rc 1 "run: a failing run exits 1"
expect_out_contains "FAILED" "run: FAILED in the table"
expect_err_contains "failing.json': run 'r1': hunk 1 (line 4): removed line does not match baseline line 5" \
	"run: error names run, hunk and line"
expect_no_file "$TMP/fo/r1" "run: the failed run writes nothing"
# badly shaped files: refused as a whole, nothing written
printf '{"r1": {"diff": "", "sha256": "abc"}}\n' >"$TMP/shape.json"
run supkit-replay run --baseline "$R/runs/base/train.txt" "$TMP/shape.json" -o "$TMP/so"
expect_rc 2 "run: bad sha256 exits 2"
expect_one_line_err "run: bad shape, one line"
expect_no_file "$TMP/so" "run: bad shape writes nothing"
printf '{"../x": {"diff": "", "sha256": "%064d"}}\n' 0 >"$TMP/evil.json"
run supkit-replay run --baseline "$R/runs/base/train.txt" "$TMP/evil.json" -o "$TMP/eo"
expect_rc 2 "run: unsafe run name exits 2"
expect_err_contains "unsafe run name" "run: says unsafe"
expect_no_file "$TMP/eo" "run: unsafe name writes nothing"
printf 'not json' >"$TMP/nj.json"
run supkit-replay run --baseline "$R/runs/base/train.txt" "$TMP/nj.json"
expect_rc 2 "run: not JSON exits 2"
expect_err_contains "line 1, column" "run: JSON error has line and column"
run supkit-replay run "$R/diffs.json"
expect_rc 2 "run: missing --baseline exits 2"

# ---- diff
mkdir -p "$TMP/d"
(cd "$R/runs" && supkit-replay diff base/train.txt r1/train.txt r2/train.txt r3/train.txt r4/train.txt r5/train.txt \
	-o "$TMP/d/made.json")
if [[ $? == 0 ]]; then ok "diff: writes a diffs file"; else bad "diff: writes a diffs file"; fi
run supkit-replay run --baseline "$R/runs/base/train.txt" "$TMP/d/made.json" -o "$TMP/d/out"
expect_rc 0 "diff then run: every run matches"
for r in r1 r2 r3 r4 r5; do
	expect_same_file "$TMP/d/out/$r/train.txt" "$R/runs/$r/train.txt" "diff then run: $r exact"
done
run supkit-replay diff "$R/runs/base/train.txt" "$R/runs/r1/train.txt" "$R/runs/r3/train.txt" -n alpha -n beta
expect_rc 0 "diff -n names runs"
expect_out_contains '"alpha": {' "diff -n: first name used"
expect_out_contains '"beta": {' "diff -n: second name used"
run supkit-replay diff "$R/runs/base/train.txt" "$R/runs/r1/train.txt" -n a -n b
expect_rc 2 "diff: a --name count that differs exits 2"
run supkit-replay diff "$R/runs/base/train.txt" "$R/runs/r1/train.txt" "$R/runs/r1/train.txt" -o "$TMP/dup.json"
expect_rc 2 "diff: two runs with one name exit 2"
expect_err_contains "given twice" "diff: says given twice"
expect_no_file "$TMP/dup.json" "diff: no output on refusal"
(cd "$C/multi" && supkit-replay diff -u old new >"$TMP/u.diff")
run supkit-replay apply "$C/multi/old" "$TMP/u.diff" -o "$TMP/u.out"
expect_same_file "$TMP/u.out" "$C/multi/new" "diff -u then apply: exact"
if command -v patch >/dev/null; then
	patch -s -f --no-backup-if-mismatch -o "$TMP/p.out" "$C/multi/old" "$TMP/u.diff" >/dev/null 2>&1
	expect_same_file "$TMP/p.out" "$C/multi/new" "diff -u then GNU patch: exact"
else
	skip "diff -u then GNU patch" "patch not installed"
fi
(cd "$C/change" && supkit-replay diff -u old new >"$TMP/c.diff")
expect_same_file "$TMP/c.diff" "$C/change/U0.diff" "diff -u: same bytes as GNU diff -U 0 --label"

# the committed example set (the demo) replays, and the man page shows its table
EX=$SUPKIT_ROOT/examples/replay
run supkit replay run --baseline "$EX/baseline/train.py" "$EX/diffs.json" -o "$TMP/ex"
expect_rc 0 "example set: every run matches"
expect_out_contains "4 runs: 4 ok, 0 mismatch, 0 failed" "example set: summary"
while read -r line; do
	grep -qF -- "$line" "$MAN" || { bad "man page EXAMPLES shows the example's table" "lacks '$line'"; line=x; break; }
done <<<"$out"
[[ "${line:-}" == x ]] || ok "man page EXAMPLES shows the example's table"
finish

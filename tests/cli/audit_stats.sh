#!/usr/bin/env bash
# audit_stats.sh: supkit audit stats end to end (tables, --json, --check, bad input).
source "$(dirname "$0")/lib.sh"
S="$FIX/stats"
MAN="$SUPKIT_ROOT/man/src/supkit-audit-stats.mdoc"

run supkit-audit stats --help
expect_rc 0 "--help exits 0"
expect_out_contains "usage: supkit audit stats [options] RECORDS..." "--help prints the synopsis"
# --help and the man page list the same options.
missing=""
for o in $(grep -oE -- '--[a-z][a-z-]+' <<<"$out" | sort -u); do
	[[ "$o" == --help ]] && continue
	grep -qF -- "Fl -${o#--}" "$MAN" || missing+=" $o"
done
if [[ -f "$MAN" && -z "$missing" ]]; then ok "man page documents every option"; else bad "man page documents every option" "missing:$missing"; fi

# The papers' results JSON, named by rules: Table 2 and Table 3.
run supkit-audit stats --names "$S/paper.rules" "$S/paper_results.json"
expect_rc 0 "paper results: exit 0"
expect_out_contains '`d6/01` | `1.048075 / 1.047426`' "per-cell row with each seed"
expect_out_contains '`1.047284 ± 0.001391`' "per-cell mean ± SD"
expect_out_contains '`-0.001395 ± 0.000920` (`[-0.003681, +0.000891]`, `[-0.001009, -0.000730, -0.002445]`, `3/3`' "the papers' example contrast row"
expect_out_contains '`-0.000743 ± 0.000892`' "d8 QK | Opt, OE row"
expect_out_contains '`2/3`' "k/n seeds improved"
expect_out_contains '`48.6%` of 1. Opt \| Dense' "retention ratio"
expect_out_contains "dropped 46 (not in d6/01)" "unequal seed sets: dropped seed named"
expect_err_contains "1 run matched no naming rule" "unmatched run reported"

run supkit-audit stats --names "$S/paper.rules" --json "$S/paper_results.json"
cp "$TMP/.out" "$TMP/a.json"
run supkit-audit stats --names "$S/paper.rules" --json "$S/paper_results.json"
expect_same_file "$TMP/a.json" "$TMP/.out" "--json is byte-identical from run to run"
expect_out_contains '"ignored_runs": [' "--json lists ignored runs"
run supkit-audit stats --names "$S/paper.rules" --json -o "$TMP/b.json" "$S/paper_results.json"
expect_rc 0 "-o exits 0"
expect_same_file "$TMP/a.json" "$TMP/b.json" "-o writes the same report"

# Folders of result.json records, full arm names.
run supkit-audit stats "$S/runs"
expect_rc 0 "result.json folders: exit 0"
expect_out_contains '**4. OE \| Native (10 - 00)**' "built-in contrast on full arm names"
expect_out_contains '`-0.015089 ± 0.001713`' "OE | Native at d8"
expect_out_contains "skipped: 1. Opt | Dense (01 - 00) at d8: no runs of arm '01'" "absent arms skipped"

run supkit-audit stats "$S/flat_results.json"
expect_rc 0 "flat layout: exit 0"
expect_out_contains '**11. DoD(OE x Joint)** ((12 - 10) - (02 - 00)) | `+0.000366 ± 0.001300`' "flat layout: DoD row"

# A contrast spec.
cat >"$TMP/spec.txt" <<'EOF'
# x
contrast opt = 01 - 00
contrast dod = (11 - 10) - (01 - 00)
contrast depth = d8/12 - d6/12
ratio dod / opt
EOF
run supkit-audit stats --names "$S/paper.rules" --contrasts "$TMP/spec.txt" "$S/paper_results.json"
expect_rc 0 "contrast spec: exit 0"
expect_out_contains '`d6,d8` Val' "fixed-depth terms get their own column"
expect_out_contains '`-0.046564 ± 0.001297`' "cross-depth contrast computed"

# Four paired seeds: df = 3.
printf 'contrast n4 = d6/noguard_full80 - d6/00\n' >"$TMP/n4.txt"
run supkit-audit stats --names "$S/paper.rules" --contrasts "$TMP/n4.txt" --json "$S/paper_results.json"
expect_rc 0 "four seeds: exit 0"
expect_out_contains '"df": 3,' "four seeds: df 3"
expect_out_contains '"t": 3.18244630528' "four seeds: t(0.975, 3)"

# --check: the published vectors against the records.
run supkit-audit stats --names "$S/paper.rules" --check "$S/stats.json" "$S/paper_results.json"
expect_rc 0 "--check of the vectors: exit 0"
expect_out_contains "0 inconsistent, 0 missing" "--check: nothing inconsistent"
expect_out_contains "rounding     d6 T3.1 Opt|Dense (01-00) [val] ci_low: published -0.003680, computed -0.003681" "--check names a rounding case with both values"
sed 's/"published_mean": "1.048678"/"published_mean": "1.048681"/' "$S/stats.json" >"$TMP/pub.json"
run supkit-audit stats --names "$S/paper.rules" --check "$TMP/pub.json" "$S/paper_results.json"
expect_rc 1 "--check: an inconsistent figure exits 1"
expect_out_contains "inconsistent d6/00 [val] mean: published 1.048681, computed 1.048678" "--check: inconsistent with both values"
run supkit-audit stats --names "$S/paper.rules" --check "$TMP/pub.json" --json "$S/paper_results.json"
expect_out_contains '"inconsistent": 1' "--check --json counts"

run supkit-audit stats --check "$S/stats.json" "$S/runs"
expect_rc 1 "--check: figures without runs exit 1"
expect_out_contains "missing      d6/00 [val]: d6/00: no runs in the records" "--check: missing cell named"

# --json read back by --check (the round trip): every cell and contrast
# figure, 0 disagreements; the papers' results with their naming rules, and
# result.json folders
for recs in "--names $S/paper.rules $S/paper_results.json" "$S/runs" "$S/flat_results.json"; do
	supkit-audit stats --json $recs >"$TMP/own.json" 2>/dev/null
	run supkit-audit stats --check "$TMP/own.json" $recs
	expect_rc 0 "round trip: --json -> --check exits 0 (${recs##*/})"
	if grep -qE '^[0-9]+ figures: [0-9]+ ok, 0 rounding, 0 inconsistent, 0 missing$' <<<"$out"; then
		ok "round trip: every figure ok (${recs##*/}: $(grep -oE '^[0-9]+ figures' <<<"$out"))"
	else bad "round trip: every figure ok (${recs##*/})" "$out"; fi
done
supkit-audit stats --json --names "$S/paper.rules" "$S/paper_results.json" >"$TMP/own.json" 2>/dev/null
sed -i '0,/"sd": [0-9.e-]*/s//"sd": 0.5/' "$TMP/own.json"
run supkit-audit stats --check "$TMP/own.json" --names "$S/paper.rules" "$S/paper_results.json"
expect_rc 1 "round trip: a changed SD exits 1"
if grep -q '^inconsistent d6/00 \[heldout\] sd: published 0.5, computed 0.00' <<<"$out" && grep -q ' 1 inconsistent' <<<"$out"; then
	ok "round trip: exactly the changed SD named"
else bad "round trip: exactly the changed SD named" "$out"; fi
grep -q '"derivation": {' "$TMP/own.json" && grep -q '"command": "stats"' "$TMP/own.json" &&
	ok "--json records its derivation" || bad "--json records its derivation"

# --claims: the tables' figures as printed; --check re-derives each exactly
run supkit-audit stats --names "$S/paper.rules" --claims "$TMP/claims.json" "$S/paper_results.json"
expect_rc 0 "--claims with the tables"
grep -q '"value": "-0.001395"' "$TMP/claims.json" && ok "--claims: a contrast mean as printed" || bad "--claims: a contrast mean as printed"
run supkit-audit stats --check "$TMP/claims.json" --names "$S/paper.rules" "$S/paper_results.json"
expect_rc 0 "--check of the claims: exit 0"
expect_out_contains " 0 rounding, 0 inconsistent, 0 missing" "--check of the claims: each the rounding of its figure"
sed -i '0,/"value": "-0.001395"/s//"value": "-0.001396"/' "$TMP/claims.json"
run supkit-audit stats --check "$TMP/claims.json" --names "$S/paper.rules" "$S/paper_results.json"
expect_rc 1 "a claim off by one unit of its last place, from exact inputs: exit 1"
expect_out_contains "inconsistent contrasts table: 1. Opt | Dense (01 - 00) at d6, validation, mean [val] mean: published -0.001396, computed -0.001395" \
	"the claim named with where it appears"
run supkit-audit stats --check "$TMP/claims.json" --input-decimals 6 --names "$S/paper.rules" "$S/paper_results.json"
expect_out_contains " 0 inconsistent" "the same claim with inputs printed to 6 decimals: within their rounding"

# Bad input: one line, file and place named, exit 2, no output file.
mkdir -p "$TMP/r1/a" "$TMP/r1/b"
printf '{"arm":"00","depth":8,"val_bpb":1.0,"heldout_bpb":1.0}\n' >"$TMP/r1/a/result.json"
run supkit-audit stats "$TMP/r1"
expect_rc 2 "missing seed: exit 2"
expect_err_contains "missing 'seed'" "missing seed: named"
expect_one_line_err "missing seed: one line"
printf '{"arm":"00","depth":8,"seed":1,"val_bpb":1.0,"heldout_bpb":1.0}\n' >"$TMP/r1/a/result.json"
cp "$TMP/r1/a/result.json" "$TMP/r1/b/result.json"
run supkit-audit stats "$TMP/r1"
expect_rc 2 "duplicate runs: exit 2"
expect_err_contains "duplicate run: d8/00 seed 1 is also" "duplicate runs: named"
expect_one_line_err "duplicate runs: one line"
printf '{"x": {"arm":"00","depth":8,"seed":1,"val_bpb":"n/a","heldout_bpb":1.0}}\n' >"$TMP/nn.json"
run supkit-audit stats "$TMP/nn.json"
expect_rc 2 "non-numeric BPB: exit 2"
expect_err_contains "run 'x': 'val_bpb' is not a number" "non-numeric BPB: file and run named"
printf 'contrast a = 01 - 99\n' >"$TMP/unk.txt"
run supkit-audit stats --names "$S/paper.rules" --contrasts "$TMP/unk.txt" -o "$TMP/out.md" "$S/paper_results.json"
expect_rc 2 "unknown arm: exit 2"
expect_err_contains "line 1: unknown arm '99'" "unknown arm: line named"
expect_one_line_err "unknown arm: one line"
expect_no_file "$TMP/out.md" "no output file on error"
printf '00 8 base(?<seed>\\d+\n' >"$TMP/bad.rules"
run supkit-audit stats --names "$TMP/bad.rules" "$S/paper_results.json"
expect_rc 2 "bad naming rule: exit 2"
expect_err_contains "line 1, column" "bad naming rule: place named"
printf '{"x": {"arm": "00",\n "depth": }}\n' >"$TMP/syn.json"
run supkit-audit stats "$TMP/syn.json"
expect_rc 2 "JSON syntax error: exit 2"
expect_err_contains "line 2, column" "JSON syntax error: place named"
run supkit-audit stats "$TMP/nonexistent.json"
expect_rc 2 "missing file: exit 2"
run supkit-audit stats
expect_rc 2 "no RECORDS: exit 2"
run supkit-audit stats --input-decimals x "$S/runs"
expect_rc 2 "bad --input-decimals: exit 2"
finish

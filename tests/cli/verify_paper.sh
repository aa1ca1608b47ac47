#!/usr/bin/env bash
# verify_paper.sh: supkit verify on a supplement laid out as the papers
# describe theirs (tests/fixtures/supplements/paper, made by make_paper.py
# from the papers' own figures): a SHA256SUMS manifest, a diffs file whose
# runs carry extra keys, the per-run results JSON, the Table 1b compute audit
# and the Table 2/3 figures as a claims file. verify re-derives the tables
# from the per-run BPB and lists exactly the published figures that do not
# follow under rounding (paper.expected, found by the script in Python).
source "$(dirname "$0")/lib.sh"
P=$FIX/supplements/paper
cp -r "$P" "$TMP/p"

run supkit verify "$TMP/p"
expect_rc 1 "the papers' supplement: exit 1 (figures that do not follow)"
expect_out_contains "manifest: a sha256sum manifest (no sizes)" "the SHA256SUMS manifest is read"
expect_out_contains "5 entries ok, 0 changed, 0 missing, 0 extra, 0 refused" "every entry as SHA256SUMS says"
expect_out_contains "24 of 24 runs replayed ok" "configs/paper2_runs_diffs.json replayed on configs/baseline_train.py"
expect_out_contains 'replay: note: keys of runs other than "diff" and "sha256" ignored: run_name, seeds, source_commit (--strict refuses them)' \
	"the extra keys named once"
expect_out_contains "(found in the entries: the manifest records none)" "the derivations found in the entries"
grep '^derived ' <<<"$out" | sed -E 's/^derived  ([^ ]+)  (d[0-9]+ [^ ]+ [^:]+): published .*/\1: \2/' | sort >"$TMP/got"
if cmp -s "$TMP/got" "$P/../paper.expected"; then ok "exactly the published figures that do not follow are named ($(grep -c '' "$TMP/got"))"
else bad "exactly the published figures that do not follow are named" "$(diff "$TMP/got" "$P/../paper.expected" | head -20)"; fi
if grep -q '^derived  claims.json' <<<"$out"; then bad "every Table 2/3 figure follows within the rounding of its inputs"
else ok "every Table 2/3 figure follows within the rounding of its inputs"; fi
n=$(grep -oE '[0-9]+ numbers checked' <<<"$out" | cut -d' ' -f1)
if [[ "$n" -ge 500 ]]; then ok "the 354 claims and 162 compute figures re-derived ($n)"; else bad "claims and compute figures re-derived" "$n"; fi
expect_out_contains "follows the convention --denominator paper" "the convention a disagreeing figure follows is named"

# --strict refuses the extra keys
run supkit verify --strict "$TMP/p"
expect_rc 1 "--strict: exit 1"
expect_out_contains "replay: 'configs/paper2_runs_diffs.json': run 'd6_baseline_seed41': unexpected key 'run_name' (strict)" \
	"--strict: the diffs file refused, its first extra key named"

# a claim changed beyond the rounding of its inputs: that claim, and only it
sed -i '0,/"value": "1.048678"/s//"value": "1.048700"/' "$TMP/p/claims.json"
sha=$(sha256sum "$TMP/p/claims.json" | cut -c1-64)
sed -i "s/^[0-9a-f]*  claims.json\$/$sha  claims.json/" "$TMP/p/SHA256SUMS"
run supkit verify "$TMP/p"
lines=$(grep '^derived  claims.json' <<<"$out")
if [[ $(grep -c '' <<<"$lines") == 1 ]] && grep -q 'claims\[0\] (000 Table 2: d6/00 validation BPB mean): published 1.048700, re-derived 1.048678' <<<"$lines"; then
	ok "a changed Table 2 figure is named, with where it appears"
else bad "a changed Table 2 figure is named" "$lines"; fi
grep -q '^ok .* claims.json' <<<"$out" && ok "SHA256SUMS updated: the entry checks out" || bad "SHA256SUMS updated: the entry checks out"

# no manifest at all: hashed and re-derived, with a note
rm "$TMP/p/SHA256SUMS"
run supkit verify "$TMP/p"
expect_out_contains "manifest: no manifest: 5 entries hashed, nothing to compare them with" "no manifest: noted"
expect_out_contains "(no manifest)" "no manifest: the last line says so"
expect_out_contains "24 of 24 runs replayed ok" "no manifest: still replayed"
grep -q '^derived  claims.json' <<<"$out" && ok "no manifest: still re-derived" || bad "no manifest: still re-derived"

# a bad sha256sum manifest: one line, the line named
cp -r "$P" "$TMP/q"
printf 'not a sum line\n' >>"$TMP/q/SHA256SUMS"
run supkit verify "$TMP/q"
expect_rc 2 "a bad SHA256SUMS line: exit 2"
expect_err_contains "SHA256SUMS': line 6: not '<sha256>  <path>'" "a bad SHA256SUMS line: the line named"
expect_one_line_err "a bad SHA256SUMS line: one line"
# a *.sha256 file and a changed entry
cp -r "$P" "$TMP/r"
mv "$TMP/r/SHA256SUMS" "$TMP/r/paper2_supplement.sha256"
echo '# edited' >>"$TMP/r/configs/baseline_train.py"
run supkit verify --no-rederive "$TMP/r"
expect_rc 1 "a *.sha256 manifest with an entry changed: exit 1"
expect_out_contains "changed" "the changed entry is listed"

# the results JSON as the papers ship it is audit stats input, without rules
run supkit audit stats "$P/results/paper2_runs_results.json"
expect_rc 0 "audit stats reads the papers' results JSON as it is"
expect_out_contains '`d6/01` | `1.048075 / 1.047426`' "its per-cell rows"
# the same runs as an array of records: read as they are
if command -v python3 >/dev/null; then
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); json.dump([dict(v, run_name=k) for k, v in d.items()], open(sys.argv[2], "w"))' \
		"$P/results/paper2_runs_results.json" "$TMP/array.json"
	run supkit audit stats --json "$TMP/array.json"
	a=$(strip_derivation <<<"$out")
	run supkit audit stats --json "$P/results/paper2_runs_results.json"
	[[ "$a" == "$(strip_derivation <<<"$out")" ]] && ok "audit stats: an array of run records gives the same report" ||
		bad "audit stats: an array of run records gives the same report"
else skip "audit stats: an array of run records" "python3 not installed"; fi
# replay run reads the papers' diffs file, naming the extra keys once
run supkit replay run --baseline "$P/configs/baseline_train.py" "$P/configs/paper2_runs_diffs.json"
expect_rc 0 "replay run: a diffs file with extra keys replays"
expect_err_contains "keys of runs other than \"diff\" and \"sha256\" ignored: run_name, seeds, source_commit (--strict refuses them)" \
	"replay run: the extra keys named"
[[ $(grep -c 'ignored' <<<"$errout") == 1 ]] && ok "replay run: named once" || bad "replay run: named once"
run supkit replay run --strict --baseline "$P/configs/baseline_train.py" "$P/configs/paper2_runs_diffs.json"
expect_rc 2 "replay run --strict: exit 2"
expect_one_line_err "replay run --strict: one line"
finish

#!/usr/bin/env bash
# audit_compute.sh: `supkit audit compute` end to end: the accounting, --json
# determinism, --print-config and its SHA-256, the arm configs (each baseline.cfg
# plus its diff, rebuilt with supkit replay when built), bad configs refused with
# file:line, --check against the papers' figures, --runs.
source "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"
A=(supkit-audit compute)
CF="$FIX/compute"

run "${A[@]}" --help
expect_rc 0 "--help exits 0"
expect_out_contains "--neumann-count" "--help lists the options"

run "${A[@]}" --depth 6
expect_rc 0 "depth 6 accounts"
expect_out_contains "backbone (num_params)          26,345,772" "depth 6 backbone 26,345,772"
run "${A[@]}"
expect_out_contains "backbone (num_params)          50,332,176" "default depth 8 backbone 50,332,176"
expect_out_contains "per token                     239,078,400" "depth 8 FLOPs/token"

run "${A[@]}" --depth 8 --arm 12_oe_joint
expect_out_contains "sum                             63.4229" "d8 12_oe_joint extra 63.4229 GFLOPs/step"
expect_out_contains "OE rows per table        150,855 150,857 150,859 150,861" "OE rows per table"

run "${A[@]}" --table --json
expect_rc 0 "--table --json"
cp "$TMP/.out" "$TMP/t1.json"
run "${A[@]}" --table --json
if cmp -s "$TMP/.out" "$TMP/t1.json"; then ok "--json byte-identical from run to run"; else bad "--json byte-identical"; fi
expect_out_contains '"backbone": 26346932' "--json carries the backbone count"

run "${A[@]}" --table
expect_out_contains "d8 12_oe_joint" "human table lists d8 12_oe_joint"
expect_out_contains "+63.42 (+0.051%)" "human table in the papers' layout"

run "${A[@]}" configs/arms/d8/00_dense_native.cfg configs/arms/d8/12_oe_joint.cfg
expect_rc 0 "several CONFIG files"
expect_out_contains "d8 12_oe_joint                     50,334,224 + 77,239,296 = 127,573,520  +63.42 (+0.051%)         +456.98" "a table from config files alone"

# --print-config: its SHA-256 is the config_sha256 of the JSON record
run "${A[@]}" --depth 6 --arm 12do --print-config
sha=$(sha256sum <"$TMP/.out" | cut -d' ' -f1)
run "${A[@]}" --depth 6 --arm 12do --json
expect_out_contains "\"config_sha256\": \"$sha\"" "SHA-256 of --print-config identifies the run"
run "${A[@]}" --depth 6 --arm 12do --set seed=7 --print-config
expect_out_contains "seed = 7" "--set overrides"

# arm configs: parse to the arm, and equal baseline.cfg plus their diff
have_replay=0
[[ -x "$SUPKIT_BIN/supkit-replay" ]] && have_replay=1
nbad=0 nrep=0 narm=0
for cfg in configs/arms/d[68]/*.cfg; do
	depth=${cfg#configs/arms/d}; depth=${depth%%/*}
	name=$(basename "$cfg" .cfg)
	narm=$((narm + 1))
	"${A[@]}" --print-config "$cfg" >"$TMP/a" 2>&1 || nbad=$((nbad + 1))
	"${A[@]}" --print-config --depth "$depth" --arm "$name" >"$TMP/b" 2>&1 || nbad=$((nbad + 1))
	cmp -s "$TMP/a" "$TMP/b" || { nbad=$((nbad + 1)); echo "  $cfg differs from --depth $depth --arm $name"; }
	if ((have_replay)); then
		supkit-replay apply configs/baseline.cfg "${cfg%.cfg}.diff" -o "$TMP/r.cfg" >/dev/null 2>&1 &&
			cmp -s "$TMP/r.cfg" "$cfg" || { nrep=$((nrep + 1)); echo "  $cfg is not baseline.cfg + its diff"; }
	fi
done
if ((narm >= 40 && nbad == 0)); then ok "$narm arm configs parse to their arm"; else bad "arm configs parse to their arm" "$nbad bad of $narm"; fi
if ((have_replay)); then
	if ((nrep == 0)); then ok "every arm config is baseline.cfg + its diff (supkit replay)"; else bad "arm configs = baseline + diff" "$nrep bad"; fi
else
	skip "arm configs = baseline + diff" "bin/supkit-replay not built"
fi

# bad configs: one line, file:line, exit 2
printf 'depth = 6\nfoo = 1\n' >"$TMP/unknown.cfg"
run "${A[@]}" "$TMP/unknown.cfg"
expect_rc 2 "unknown key exits 2"
expect_err_contains "unknown.cfg:2: unknown key 'foo'" "unknown key names file:line"
expect_one_line_err "unknown key: one line"
printf '# x\ndepth = 6\noe = maybe\n' >"$TMP/value.cfg"
run "${A[@]}" "$TMP/value.cfg"
expect_rc 2 "bad value exits 2"
expect_err_contains "value.cfg:3: oe: 'maybe' is not 0 or 1" "bad value names file:line"
printf 'vocab_size = 70000\n' >"$TMP/range.cfg"
run "${A[@]}" "$TMP/range.cfg"
expect_err_contains "range.cfg:1: vocab_size: 70000 is out of range [2, 65536]" "out of range names file:line"
printf 'depth = 6\n\nqk_mask = l0_hf16\n' >"$TMP/conflict.cfg"
run "${A[@]}" "$TMP/conflict.cfg"
expect_rc 2 "conflicting switches exit 2"
expect_err_contains "conflict.cfg:3: qk_mask = l0_hf16 needs qk_scale" "conflict names file:line"
expect_one_line_err "conflict: one line"
run "${A[@]}" --set out_lambdas=1
expect_err_contains "--set: out_lambdas = 1 needs wte_lambdas = 1" "--set conflict named"
run "${A[@]}" "$TMP/missing.cfg"
expect_rc 2 "missing config exits 2 (lib/fileio: missing input)"
expect_err_contains "missing.cfg" "missing config named"
run "${A[@]}" --arm nosuch
expect_rc 2 "unknown arm exits 2"
run "${A[@]}" --table --depth 6
expect_rc 2 "--table with --depth is a usage error"

# --check against the published figures
run "${A[@]}" --check "$CF/table1b.json"
expect_rc 1 "--check Table 1b finds disagreements (exit 1)"
expect_out_contains "d6 01_dense_opt flops.extra_pct: published +0.041, recomputed 0.03892" "names figure, both values"
expect_out_contains "follows the convention --denominator paper" "names the convention a figure follows"
expect_out_contains "162 figures compared, 20 disagree" "summary line"
run "${A[@]}" --check "$CF/table1b.json" --denominator paper --tabneu-rows 506900
expect_out_contains "162 figures compared, 6 disagree" "paper denominator leaves the rounded sums"
expect_out_contains "sum of its components rounded to 2 decimals" "rounded-sum disagreement explained"
run "${A[@]}" --check "$CF/paper004.json" --neumann-count lemma2
expect_rc 0 "paper 004 Table 5 agrees under --neumann-count lemma2"
run "${A[@]}" --check "$CF/paper002.json"
expect_rc 0 "paper 002 Tables 2 and 3 (parameter counts), Zeta's memory and Table 1's activation storage agree"
expect_out_contains "35 figures compared, 0 disagree" "paper 002: 35 figures"
run "${A[@]}" --check "$CF/paper004.json" --json
expect_rc 1 "--check --json exit 1"
expect_out_contains '"disagreements": 5' "--check --json counts"
# our own --json is a published audit JSON: it checks out, and an edited figure does not
"${A[@]}" --table --json >"$TMP/own.json"
run "${A[@]}" --check "$TMP/own.json"
expect_rc 0 "--check of our own --table --json agrees"
sed 's/"backbone": 26346932/"backbone": 26346933/' "$TMP/own.json" >"$TMP/own2.json"
run "${A[@]}" --check "$TMP/own2.json"
expect_rc 1 "--check finds an edited figure"
expect_out_contains "params.backbone: published 26346933, recomputed 26346932 " "edited figure reported"
echo '{"arms": [{"arm": "00", "depth": 6, "params": {"nope": 1}}]}' >"$TMP/badpub.json"
run "${A[@]}" --check "$TMP/badpub.json"
expect_rc 2 "--check with an unknown figure exits 2"
expect_err_contains "arms[0]: params.nope is not a figure" "names the entry"
echo '{"arms": [' >"$TMP/trunc.json"
run "${A[@]}" --check "$TMP/trunc.json"
expect_rc 2 "--check with broken JSON exits 2"
expect_one_line_err "broken JSON: one line"

# --runs: measured means and deltas against dense
run "${A[@]}" --runs "$CF/runs"
expect_rc 0 "--runs"
expect_out_contains "13,829.4 (+96.0)" "measured peak and delta vs dense"
expect_out_contains "576.7s / 591.7s (n=1)" "timed / full loop seconds"
run "${A[@]}" --depth 6 --arm 01_dense_opt --runs "$CF/runs" --json
expect_out_contains '"peak_memory_mib": 96' "--json measured delta"
# a run with its own config.cfg (any arm name): accounted from that config
mkdir -p "$TMP/runs/r1" "$TMP/runs/r2"
printf 'arm = my_arm\ndepth = 4\noe = 1\noe_m = 1000\n' >"$TMP/runs/r1/config.cfg"
echo '{"arm": "my_arm", "depth": 4, "peak_memory_mib": 500, "training_seconds": 10, "training_loop_seconds": 11}' >"$TMP/runs/r1/result.json"
echo '{"arm": "00", "depth": 4, "peak_memory_mib": 450, "training_seconds": 9, "training_loop_seconds": 10}' >"$TMP/runs/r2/result.json"
run "${A[@]}" --runs "$TMP/runs"
expect_rc 0 "--runs with a run's config.cfg"
# d4: 4 V d (wte, lm_head, 2 value_embeds) = 8,388,608 + 12*4*256^2 + 2*2*32 = 3,145,856 + 8 scalars;
# OE m = 1000: 4012 rows x 64
expect_out_contains "d4 my_arm                          11,534,472 +    256,768 =  11,791,240" "accounted from the run's config.cfg"
expect_out_contains "500.0 (+50.0)" "short arm name groups with its arm (dense delta)"
printf 'arm = other\ndepth = 4\n' >"$TMP/runs/r1/config.cfg"
run "${A[@]}" --runs "$TMP/runs"
expect_rc 2 "config.cfg disagreeing with result.json exits 2"
expect_err_contains "but its result.json says my_arm" "names the disagreement"
mkdir -p "$TMP/empty"
run "${A[@]}" --runs "$TMP/empty"
expect_rc 2 "--runs on a folder without records exits 2"

run "${A[@]}" --list-arms
expect_out_contains "12do_oe_decoupled_x0_out" "--list-arms"

# --json carries what --check needs to recompute it (the round trip): every
# named arm at depths 6 and 8, under each convention; a config with
# overrides (its "set"); an arm that is not a named one; --runs
for conv in "" "--neumann-count lemma2 --denominator paper" "--tabneu-rows 506900"; do
	"${A[@]}" --table --json $conv >"$TMP/rt.json"
	run "${A[@]}" --check "$TMP/rt.json"
	expect_rc 0 "round trip: --table --json ${conv:-(defaults)} -> --check exits 0"
	expect_out_contains ", 0 disagree" "round trip: --table ${conv:-(defaults)}: 0 disagreements"
done
nfig=$(grep -oE '^[0-9]+ figures compared' <<<"$out" | cut -d' ' -f1)
((nfig > 2000)) && ok "round trip: every figure of every arm compared ($nfig)" || bad "round trip: every figure compared" "$nfig"
"${A[@]}" --json "$FIX/train/tiny.cfg" "$SUPKIT_ROOT/configs/arms/d8/01_dense_opt.cfg" --set seed=7 >"$TMP/rt.json"
grep -q '"set": {' "$TMP/rt.json" && ok "--json of a config with overrides carries its set" || bad "--json carries the set"
run "${A[@]}" --check "$TMP/rt.json"
expect_out_contains ", 0 disagree" "round trip: configs with overrides (tiny.cfg, --set seed=7): 0 disagreements"
printf 'arm = my_arm\ndepth = 4\noe = 1\noe_m = 1000\nseed = 3\n' >"$TMP/my.cfg"
"${A[@]}" --json "$TMP/my.cfg" >"$TMP/rt.json"
run "${A[@]}" --check "$TMP/rt.json"
expect_out_contains ", 0 disagree" "round trip: an arm that is not a named one: 0 disagreements"
sed -i 's/"per_token": [0-9]*/"per_token": 999/' "$TMP/rt.json"
run "${A[@]}" --json --check "$TMP/rt.json"
expect_rc 1 "round trip: a changed figure exits 1"
expect_out_contains '"path": "flops.per_token"' "--check --json: each figure, the changed one named"
expect_out_contains '"agrees": false' "--check --json: its verdict"
"${A[@]}" --json --runs "$CF/runs" >"$TMP/rt.json"
run "${A[@]}" --check "$TMP/rt.json"
expect_out_contains ", 0 disagree" "round trip: --runs (measured figures not recomputed): 0 disagreements"

# --json records how it was made: the command, its version, the files read
"${A[@]}" --json "$TMP/my.cfg" --set seed=4 >"$TMP/d.json"
if grep -q '"derivation": {' "$TMP/d.json" && grep -q '"command": "compute"' "$TMP/d.json" &&
	grep -q '"--set",' "$TMP/d.json" && grep -q '"seed=4",' "$TMP/d.json" && grep -q "\"path\": \"$(basename "$TMP")/my.cfg\"" "$TMP/d.json" &&
	grep -q "\"sha256\": \"$(sha256sum "$TMP/my.cfg" | cut -c1-64)\"" "$TMP/d.json"; then
	ok "--json: the derivation (args, the config by a path of no machine folder, its SHA-256)"
else bad "--json: the derivation" "$(grep -A30 '"derivation"' "$TMP/d.json" | head -30)"; fi

# --claims: the table as printed, each figure re-derivable by --check
run "${A[@]}" --table --claims "$TMP/claims.json"
expect_rc 0 "--claims writes the table's figures"
grep -q '"value": "26,345,772"' "$TMP/claims.json" && ok "--claims: figures as printed" || bad "--claims: figures as printed"
run "${A[@]}" --check "$TMP/claims.json"
expect_rc 0 "--check of the claims: exit 0"
rows=$((2 * $("${A[@]}" --list-arms | grep -c '')))   # every arm at depths 6 and 8
expect_out_contains "$((6 * rows)) figures compared, 0 disagree" "--check of the claims: 6 figures of each of $rows rows"
sed -i '0,/"value": "+24.55"/s//"value": "+24.65"/' "$TMP/claims.json"
run "${A[@]}" --check "$TMP/claims.json"
expect_rc 1 "a changed claim: exit 1"
if [[ $(grep -c 'published' <<<"$out") == 1 ]] && grep -q '^claim [0-9]* (compute table: row d6 01_dense_opt, column extra GFLOPs/step) flops.extra_gflops_step_total: published +24.65' <<<"$out"; then
	ok "a changed claim: named with where it appears"
else bad "a changed claim: named with where it appears" "$out"; fi
finish

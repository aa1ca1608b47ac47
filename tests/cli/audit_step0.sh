#!/usr/bin/env bash
# audit_step0.sh: `supkit audit step0` and `supkit audit trajectory` end to
# end on the trainer's tiny fixture (tests/fixtures/train: tiny.cfg and its
# data, made by make.sh). The numbers themselves are tested in
# tests/unit/audit/test_step0.c; here: output, --json determinism, -o, and
# refusals (one line naming the file, exit 2 for bad input, 4 for system).
source "$(dirname "$0")/lib.sh"
CFG=$FIX/train/tiny.cfg
DATA=$FIX/train/data

run supkit-audit step0 --help
expect_rc 0 "step0 --help exits 0"
expect_out_contains "--tokens" "step0 --help lists its options"
run supkit-audit trajectory --help
expect_rc 0 "trajectory --help exits 0"
expect_out_contains "--steps" "trajectory --help lists its options"

run supkit-audit step0 --config "$CFG" --data "$DATA"
expect_rc 0 "step0 on the tiny config"
expect_out_contains "x0_lambdas[1]" "table lists every scalar"
expect_out_contains "sign agreement: " "sign agreement summarised"
expect_out_contains "closed form vs float64 backward" "closed form compared"
expect_err_contains "float64 at eps = 2^-23" "progress on stderr"

run supkit-audit step0 --config "$CFG" --data "$DATA" --set wte_lambdas=1 --set out_lambdas=1 --json -q
expect_rc 0 "step0 --json with routing lambdas"
cp "$TMP/.out" "$TMP/j1"
expect_out_contains '"out_lambdas": [' "out_lambdas audited"
expect_out_contains '"label": "2^-23"' "eps 2^-23 evaluated"
expect_out_contains '"arithmetic": "cpu fp32' "the trainer's arithmetic named"
[[ -z "$errout" ]] && ok "-q: nothing on stderr" || bad "-q: nothing on stderr"
# shard files as operands, options after them, -o writes the same record
run supkit-audit step0 "$DATA/train_0000.bin" --config "$CFG" --set wte_lambdas=1 --set out_lambdas=1 -q --json -o "$TMP/r.json"
expect_rc 0 "a shard file as operand"
# the shard list differs (file vs folder); the rest is the same record
if diff <(strip_derivation "$TMP/.out" | grep -v train_0000) <(strip_derivation "$TMP/j1" | grep -v train_0000) >/dev/null; then ok "--json deterministic across SHARDS spellings"
else bad "--json deterministic across SHARDS spellings"; fi
expect_same_file "$TMP/r.json" "$TMP/.out" "-o writes the --json record"
run supkit-audit step0 --config "$CFG" --set "data_dir=$DATA" --tokens 64 --json -q
expect_rc 0 "data from the config's data_dir, --tokens 64"
expect_out_contains '"tokens": 64' "--tokens recorded"

# refusals
run supkit-audit step0 --data "$DATA"
expect_rc 2 "no --config refused"
run supkit-audit step0 --config "$CFG"
expect_rc 2 "no data refused"
expect_one_line_err "no data: one line"
expect_err_contains "data_dir" "no data: says where data comes from"
run supkit-audit step0 --config "$CFG" --data "$TMP/none"
expect_rc 2 "missing data folder refused (as lib/fileio refuses a missing input)"
expect_err_contains "$TMP/none" "missing data: path named"
mkdir -p "$TMP/empty"
run supkit-audit step0 --config "$CFG" --data "$TMP/empty"
expect_rc 2 "a folder without shards refused"
expect_err_contains "train_*.bin" "no shards: what was looked for"
printf 'garbage\n' >"$TMP/bad.bin"
run supkit-audit step0 --config "$CFG" --data "$TMP/bad.bin"
expect_rc 2 "a bad shard refused"
expect_one_line_err "bad shard: one line"
expect_err_contains "bad.bin" "bad shard: file named"
printf 'depth = 2\nbogus_key = 1\n' >"$TMP/bad.cfg"
run supkit-audit step0 --config "$TMP/bad.cfg" --data "$DATA"
expect_rc 2 "a bad config refused"
expect_one_line_err "bad config: one line"
expect_err_contains "bad.cfg:2" "bad config: file and line named"
run supkit-audit step0 --config "$TMP/none.cfg" --data "$DATA"
expect_rc 2 "missing config refused"
expect_one_line_err "missing config: one line"
run supkit-audit step0 --config "$CFG" --data "$DATA" --set vocab_size=1024
expect_rc 2 "shards of another vocabulary refused"
expect_err_contains "vocab" "vocab mismatch explained"
run supkit-audit step0 --config "$CFG" --data "$DATA" --tokens 65
expect_rc 2 "--tokens not a multiple of seq_len refused"
run supkit-audit step0 --config "$CFG" --data "$DATA" --tokens 12x
expect_rc 2 "--tokens not a number refused"
run supkit-audit step0 --config "$CFG" --data "$DATA" --init-from "$TMP/none.safetensors" -q
[[ $rc == 2 || $rc == 4 ]] && ok "missing --init-from checkpoint refused" || bad "missing --init-from checkpoint refused" "exit $rc"
expect_err_contains "none.safetensors" "missing checkpoint named"
run supkit-audit step0 --config "$CFG" --data "$DATA" -q --json -o "$TMP/no/such/r.json"
expect_rc 4 "unwritable -o is a system error"
expect_no_file "$TMP/no/such/r.json" "no half-written report"

# trajectory
run supkit-audit trajectory --config "$CFG" --data "$DATA" --steps 2 --json -q -o "$TMP/t.json"
expect_rc 0 "trajectory --json"
cp "$TMP/.out" "$TMP/t1"
expect_out_contains '"mode": "disp_stepcount_nomom"' "every mode run"
expect_out_contains '"wte_lambdas_switched_on": true' "switching wte_lambdas on is recorded"
expect_out_contains '"exp_avg_sq"' "moments recorded"
expect_same_file "$TMP/t.json" "$TMP/t1" "-o writes the --json record"
run supkit-audit trajectory --config "$CFG" --data "$DATA" --steps 2 --json -q
expect_same_file "$TMP/.out" "$TMP/t1" "trajectory --json is deterministic"
run supkit-audit trajectory --config "$CFG" --data "$DATA" --steps 2 -q
expect_rc 0 "trajectory table"
expect_out_contains "mode nostep0 (wte_lambdas switched on)" "table says when wte_lambdas was switched on"
run supkit-audit trajectory --config "$CFG" --data "$DATA" --steps 0
expect_rc 2 "--steps 0 refused"
run supkit-audit trajectory --config "$TMP/bad.cfg" --data "$DATA"
expect_rc 2 "trajectory: bad config refused"
expect_err_contains "bad.cfg:2" "trajectory: file and line named"
run supkit-audit trajectory --config "$CFG" --data "$TMP/empty"
expect_rc 2 "trajectory: no shards refused"
run supkit-audit trajectory --config "$CFG" --data "$DATA" --set max_loss=1 -q
expect_rc 1 "trajectory fast-fails like the trainer"
expect_err_contains "fast-fail" "fast-fail named"
finish

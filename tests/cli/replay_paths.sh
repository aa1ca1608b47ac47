#!/usr/bin/env bash
# replay_paths.sh: supkit replay diff --relative-to DIR labels the files with
# their paths relative to DIR, so a diffs file made anywhere is the same:
# a demo-shaped supplement (baseline.cfg, results/<run>/config.cfg, as
# scripts/demo.sh writes it) at two absolute locations, diffed from different
# current folders with absolute paths, gives byte-identical diffs.json and
# zips, with no absolute path; replay run, apply and verify still find the
# files. Refusals: a file outside DIR, a DIR that is not there.
source "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"

# the supplement: two arms x two seeds of the trainer's configs
mk_supp() { # dir
	mkdir -p "$1/configs" "$1/results"
	for arm in 00_dense_native 01_dense_opt; do
		supkit train --print-config "configs/arms/d8/$arm.cfg" --set depth=2 --set data_dir=data \
			>"$1/configs/$arm.cfg" || return 1
		for seed in 42 43; do
			mkdir -p "$1/results/${arm}_s$seed"
			sed "s/^seed = .*/seed = $seed/" "$1/configs/$arm.cfg" >"$1/results/${arm}_s$seed/config.cfg"
		done
	done
	cp "$1/configs/00_dense_native.cfg" "$1/baseline.cfg"
}
# scripts/demo.sh's stage 5 (absolute paths; cwd: $2)
diffs() { # supp cwd [extra options]
	local s=$1 cwd=$2 names=() cfgs=() r
	shift 2
	for r in "$s/results"/*/; do
		r=${r%/}
		names+=(-n "$(basename "$r")")
		cfgs+=("$r/config.cfg")
	done
	(cd "$cwd" && supkit replay diff "$@" "$s/baseline.cfg" "${cfgs[@]}" "${names[@]}" -o "$s/diffs.json")
}
A=$TMP/one/demo-out/supplement
B=$TMP/two/elsewhere/deeper/supplement
mk_supp "$A" && mk_supp "$B" || bad "make the supplements"
mkdir -p "$TMP/cwd"

run diffs "$A" "$A" --relative-to "$A"
expect_rc 0 "replay diff --relative-to SUPP, run inside it"
run diffs "$B" "$TMP/cwd" --relative-to "$B"
expect_rc 0 "replay diff --relative-to SUPP, run from another folder"
expect_same_file "$A/diffs.json" "$B/diffs.json" "the same supplement at two places: byte-identical diffs.json"
if ! grep -q "$TMP" "$A/diffs.json" && ! grep -qE '(---|\+\+\+) /' "$A/diffs.json"; then ok "no absolute path in diffs.json"
else bad "no absolute path in diffs.json" "$(grep -oE '(---|\+\+\+) [^\\]*' "$A/diffs.json" | head -3)"; fi
if grep -qF -- '--- baseline.cfg\n+++ results/01_dense_opt_s43/config.cfg\n' "$A/diffs.json"; then
	ok "the labels name the supplement's entries (baseline.cfg, results/RUN/config.cfg)"
else bad "the labels name the supplement's entries" "$(grep -oE '(---|\+\+\+) [^\\]*' "$A/diffs.json" | head -2)"; fi
# through a symlinked folder the same
ln -s "$TMP/two" "$TMP/link"
run diffs "$TMP/link/elsewhere/deeper/supplement" "$TMP" --relative-to "$TMP/link/elsewhere/deeper/supplement"
expect_same_file "$A/diffs.json" "$B/diffs.json" "the same through a symlinked path"

# replay run and apply still find the files; verify replays the zip's diffs file
run supkit replay run --baseline "$A/baseline.cfg" "$A/diffs.json" -o "$TMP/replayed"
expect_rc 0 "replay run of the relative-labelled diffs file"
# the +++ label's last component names the file (the baseline's for an empty diff)
same=0
for r in "$A/results"/*/; do
	n=$(basename "$r") f=config.cfg
	[[ $n == 00_dense_native_s42 ]] && f=baseline.cfg
	cmp -s "$r/config.cfg" "$TMP/replayed/$n/$f" && same=$((same + 1))
done
if [[ $same == 4 ]]; then ok "replay run rebuilds the 4 runs' files (RUN/config.cfg)"; else bad "replay run rebuilds the 4 runs' files" "$same of 4"; fi
run supkit replay diff -u --relative-to "$A" "$A/baseline.cfg" "$A/results/01_dense_opt_s42/config.cfg" -o "$TMP/one.diff"
expect_rc 0 "replay diff -u --relative-to"
if head -n 2 "$TMP/one.diff" | tr '\n' ' ' | grep -qx -- '--- baseline.cfg +++ results/01_dense_opt_s42/config.cfg '; then ok "diff -u: the relative labels"
else bad "diff -u: the relative labels" "$(head -n 2 "$TMP/one.diff" | tr '\n' ' ')"; fi
run supkit replay apply "$A/baseline.cfg" "$TMP/one.diff" -o "$TMP/applied.cfg"
expect_rc 0 "replay apply of the relative-labelled diff"
expect_same_file "$A/results/01_dense_opt_s42/config.cfg" "$TMP/applied.cfg" "replay apply rebuilds the file"
run supkit pack -q "$A" -o "$TMP/a.zip"
expect_rc 0 "pack the supplement"
supkit pack -q "$B" -o "$TMP/b.zip" >/dev/null 2>&1
expect_same_file "$TMP/a.zip" "$TMP/b.zip" "the two places pack byte-identical zips"
run supkit verify "$TMP/a.zip"
expect_rc 0 "verify of the supplement replays its diffs file"
expect_out_contains "4 of 4 runs replayed ok" "verify: the 4 runs replayed"

# without --relative-to: the paths as given, as before
run diffs "$A" "$A"
if grep -qF -- "--- $A/baseline.cfg" "$A/diffs.json"; then ok "without --relative-to the labels are the paths as given"
else bad "without --relative-to the labels are the paths as given"; fi

# refusals: nothing written
rm -f "$A/diffs.json"
run diffs "$A" "$A" --relative-to "$A/results"
expect_rc 2 "a file outside --relative-to's folder is refused"
expect_err_contains "is not inside" "the refusal says so"
expect_err_contains "$A/baseline.cfg" "the refusal names the file"
expect_one_line_err "the refusal is one line"
expect_no_file "$A/diffs.json" "no diffs file from a refused run"
run diffs "$A" "$A" --relative-to "$TMP/nowhere"
expect_rc 2 "a --relative-to folder that is not there is refused"
expect_err_contains "$TMP/nowhere" "the refusal names the folder"
expect_no_file "$A/diffs.json" "no diffs file from a refused run"
finish

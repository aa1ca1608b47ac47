#!/usr/bin/env bash
# install.sh: make install DESTDIR=... PREFIX=/usr puts the tools, the man
# pages and configs/ (as PREFIX/share/supkit/configs, the layout kept) in
# place, and the installed supkit train --arm NAME finds its arm's file there,
# run outside the source tree with SUPKIT_ROOT unset: a few steps of the test
# model (tests/fixtures/train) with the arm's switches, checked in the run's
# config.cfg. Also: without CONFIG the arm's file is the config; SUPKIT_CONFIGS
# comes first; a moved install still finds its configs; without them the
# refusal names the folder.
source "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"
dest=$TMP/dest
# the make under test: not the one running the suite (no inherited flags);
# the build variant of this suite (SAN=1 runs install the sanitizer build)
run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory install DESTDIR="$dest" PREFIX=/usr SAN="${SAN:-}"
expect_rc 0 "make install DESTDIR=... PREFIX=/usr"
u=$dest/usr
for t in "$SUPKIT_BIN"/supkit "$SUPKIT_BIN"/supkit-*; do
	n=$(basename "$t")
	if [[ -x "$u/bin/$n" ]]; then ok "installed bin/$n"; else bad "installed bin/$n"; fi
done
for p in man/*.1; do expect_same_file "$p" "$u/share/man/man1/$(basename "$p")" "installed man1/$(basename "$p")"; done
for p in man/*.5; do expect_same_file "$p" "$u/share/man/man5/$(basename "$p")" "installed man5/$(basename "$p")"; done
c=$u/share/supkit/configs
expect_same_file configs/baseline.cfg "$c/baseline.cfg" "installed configs/baseline.cfg"
for d in d6 d8; do
	n=0 diffs=0
	for f in configs/arms/$d/*.cfg configs/arms/$d/*.diff; do
		cmp -s "$f" "$c/arms/$d/$(basename "$f")" || diffs=$((diffs + 1))
		n=$((n + 1))
	done
	if ((n > 40 && diffs == 0)); then ok "installed configs/arms/$d: $n files, each the same"
	else bad "installed configs/arms/$d" "$diffs of $n files missing or different"; fi
done

# the installed trainer, outside the source tree, SUPKIT_ROOT and SUPKIT_CONFIGS unset
mkdir -p "$TMP/work"
cp "$FIX/train/tiny.cfg" "$TMP/work/tiny.cfg"
inst() { (cd "$TMP/work" && env -u SUPKIT_ROOT -u SUPKIT_CONFIGS PATH=/usr/bin:/bin "$@"); }
key() { grep -E "^$2 = " "$1" 2>/dev/null | sed "s/^$2 = //"; }
run inst "$u/bin/supkit-train" --arm 01 tiny.cfg --set data_dir="$FIX/train/data" --set steps=3 \
	--set warmup_steps=0 --quiet -o run01
expect_rc 0 "installed supkit-train --arm 01 tiny.cfg trains"
cfg=$TMP/work/run01/config.cfg
want="arm=01_dense_opt muoneq=bieq bieq_tau=25 cooldown=1 neumann=1 polar=fp32 embed_state=fp32 muon_wd_schedule=cosine"
got=""
for kv in $want; do got+="${kv%%=*}=$(key "$cfg" "${kv%%=*}") "; done
if [[ "$got" == "$want " ]]; then ok "the run's config.cfg has the arm's switches ($want)"
else bad "the run's config.cfg has the arm's switches" "got: $got"; fi
got="depth=$(key "$cfg" depth) model_dim=$(key "$cfg" model_dim) steps=$(key "$cfg" steps) vocab_size=$(key "$cfg" vocab_size)"
if [[ "$got" == "depth=2 model_dim=64 steps=3 vocab_size=512" ]]; then ok "and tiny.cfg's model and --set's steps ($got)"
else bad "and tiny.cfg's model and --set's steps" "$got"; fi
if grep -q '"steps": *3\b' "$TMP/work/run01/result.json" 2>/dev/null; then ok "the run finished its 3 steps"
else bad "the run finished its 3 steps"; fi

# the front command runs the installed trainer beside it
run inst "$u/bin/supkit" train --arm 12do tiny.cfg --print-config
expect_rc 0 "installed supkit train --arm 12do --print-config"
if grep -qx "arm = 12do_oe_decoupled_x0_out" <<<"$out" && grep -qx "out_lambdas = 1" <<<"$out" &&
	grep -qx "depth = 2" <<<"$out"; then ok "a short name means its full arm's file"
else bad "a short name means its full arm's file" "$(grep -E '^(arm|out_lambdas|depth) =' <<<"$out" | tr '\n' ' ')"; fi

# without CONFIG the arm's file is the config
run inst "$u/bin/supkit-train" --arm 02_dense_joint --print-config
a=$out
run supkit train --print-config configs/arms/d8/02_dense_joint.cfg
if [[ -n "$a" && "$a" == "$out" ]]; then ok "--arm NAME alone: the arm's file (configs/arms/d8/NAME.cfg)"
else bad "--arm NAME alone: the arm's file" "$(diff <(echo "$a") <(echo "$out") | head -5)"; fi

# SUPKIT_CONFIGS comes first
mkdir -p "$TMP/mine/arms/d8"
cp configs/baseline.cfg "$TMP/mine/baseline.cfg"
sed 's/^arm = .*/arm = mine/; s/^seed = .*/seed = 7/' configs/baseline.cfg >"$TMP/mine/arms/d8/mine.cfg"
run inst env SUPKIT_CONFIGS="$TMP/mine" "$u/bin/supkit-train" --arm mine tiny.cfg --print-config
if [[ $rc == 0 ]] && grep -qx "arm = mine" <<<"$out" && grep -qx "seed = 7" <<<"$out"; then ok "SUPKIT_CONFIGS: its arms/d8/NAME.cfg"
else bad "SUPKIT_CONFIGS: its arms/d8/NAME.cfg" "exit $rc"; fi
run inst env SUPKIT_CONFIGS="$TMP/mine" "$u/bin/supkit-train" --arm 01 tiny.cfg --print-config
expect_rc 2 "SUPKIT_CONFIGS is the only folder looked in when set"
expect_err_contains "$TMP/mine/arms/d8/01.cfg" "the refusal names the file looked for"

# a moved install finds its own configs; without them the refusal names the folder
mv "$dest/usr" "$TMP/moved"
run inst "$TMP/moved/bin/supkit-train" --arm 01 tiny.cfg --print-config
if [[ $rc == 0 ]] && grep -qx "neumann = 1" <<<"$out"; then ok "a moved install finds BINDIR/../share/supkit/configs"
else bad "a moved install finds BINDIR/../share/supkit/configs" "exit $rc"; fi
rm -rf "$TMP/moved/share/supkit"
run inst "$TMP/moved/bin/supkit-train" --arm 01 tiny.cfg -o run02
expect_rc 4 "no configs folder: exit 4"
expect_err_contains "$TMP/moved/share/supkit/configs" "the refusal names the folder looked for"
expect_one_line_err "the refusal is one line"
expect_no_file "$TMP/work/run02" "no run folder from a refused run"
finish

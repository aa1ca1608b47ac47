#!/usr/bin/env bash
# progress.sh: the progress lines of the long commands (lib/progress.h):
# pack (bytes of the walk's total), data tokenize (input bytes) and train
# (steps) show the share done, the rate and the time left, in plain lines
# when stderr is not a terminal (SUPKIT_PROGRESS_INTERVAL=0: one at every
# update) and in one updating line on a terminal (util-linux script(1) gives
# the command one; skipped without it). The arithmetic is unit-tested with an
# injected clock (tests/unit/lib/test_progress.c); here the fields, their
# order, and figures the test can know: the totals, 100% and ETA 0:00 at the
# end, shares that never fall.
source "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 4
RATE='[0-9.]+ (B|KB|MB|GB)/s'
ETA='ETA ([0-9]+:)?[0-9]+:[0-9][0-9]'

shares_rise() { # file of lines: the percentages never fall
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+%$/) { p = $i + 0; if (p < last) exit 1; last = p } }' "$1"
}

# ---- pack: bytes of the total ----
mkdir -p big
head -c 2500000 /dev/zero | tr '\0' 'a' >big/a.txt
head -c 1500000 /dev/zero | tr '\0' 'b' >big/b.txt
SUPKIT_PROGRESS_INTERVAL=0 supkit pack big -o big.zip >/dev/null 2>pack.err
rc=$?
expect_rc 0 "pack with progress exits 0"
n=$(grep -cE "^packing:  [0-9.]+/4\.0 MB  [0-9]+%  $RATE  $ETA$" pack.err)
total=$(grep -c '' pack.err)
if ((n >= 3 && n == total)); then ok "pack: $n plain lines 'packing:  D/4.0 MB  P%  R MB/s  ETA m:ss'"
else errout=$(cat pack.err); bad "pack: plain lines with the total, share, rate and ETA" "$n of $total lines"; fi
if tail -n 1 pack.err | grep -qE "^packing:  4\.0/4\.0 MB  100%  $RATE  ETA 0:00$"; then ok "pack: the last line is 4.0/4.0 MB, 100%, ETA 0:00"
else bad "pack: the last line is 4.0/4.0 MB, 100%, ETA 0:00" "$(tail -n 1 pack.err)"; fi
shares_rise pack.err && ok "pack: the share never falls" || bad "pack: the share never falls"
supkit pack big -o big2.zip >/dev/null 2>pack2.err
if [[ ! -s pack2.err ]]; then ok "pack: no line in a pack under a second (default interval)"; else bad "pack: no line in a pack under a second (default interval)"; fi
SUPKIT_PROGRESS_INTERVAL=0 supkit pack -q big -o big3.zip >/dev/null 2>pack3.err
if [[ ! -s pack3.err ]]; then ok "pack -q: no progress"; else bad "pack -q: no progress"; fi

# ---- data tokenize: input bytes ----
D=$FIX/data
supkit data train-tokenizer -q --vocab 300 -o tok "$D/sample.txt"
{ for i in 1 2 3 4 5; do cat "$D/sample.txt"; printf '\n%%%%\n'; done; cat "$D/sample.txt"; } >corpus.txt
size=$(stat -c %s corpus.txt)
SUPKIT_PROGRESS_INTERVAL=0 supkit data tokenize --delim $'\n%%\n' --val-every 0 --ranks tok/ranks.tiktoken \
	-o sh corpus.txt >/dev/null 2>tok.err
rc=$?
expect_rc 0 "tokenize with progress exits 0"
n=$(grep -cE "^data: corpus\.txt: [0-9]+ documents, [0-9]+ tokens  [0-9.]+/[0-9.]+ KB  [0-9]+%  $RATE  $ETA$" tok.err)
if ((n >= 6)); then ok "tokenize: a line a document with the input bytes, share, rate and ETA ($n)"
else errout=$(cat tok.err); bad "tokenize: a line a document with the input bytes, share, rate and ETA" "$n lines"; fi
kb=$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1000 }')
if tail -n 1 tok.err | grep -qE "^data: [0-9]+ train \+ 0 val documents, [0-9]+ \+ 0 tokens  $kb/$kb KB  100%  $RATE  ETA 0:00$"; then
	ok "tokenize: the closing line has the input's $kb KB, 100%, ETA 0:00"
else bad "tokenize: the closing line has the input's $kb KB, 100%, ETA 0:00" "$(tail -n 1 tok.err)"; fi
shares_rise tok.err && ok "tokenize: the share never falls" || bad "tokenize: the share never falls"
supkit data tokenize --force --delim $'\n%%\n' --val-every 0 --ranks tok/ranks.tiktoken -o sh corpus.txt >/dev/null 2>tok2.err
if [[ $(grep -c '' tok2.err) -le 2 ]] && tail -n 1 tok2.err | grep -qE "100%  $RATE  ETA 0:00$"; then
	ok "tokenize (default interval): the first line and the closing one, with its fields"
else errout=$(cat tok2.err); bad "tokenize (default interval): the first line and the closing one, with its fields"; fi

# ---- train: steps ----
T=$FIX/train
SUPKIT_PROGRESS_INTERVAL=0 supkit train "$T/tiny.cfg" --set data_dir="$T/data" --set steps=6 --set warmup_steps=0 \
	--set eval_tokens=256 --set heldout_tokens=256 -o run >/dev/null 2>train.err
rc=$?
expect_rc 0 "train with progress exits 0"
n=$(grep -cE "^step [1-6]/6  loss [0-9.]+  lrm [0-9.]+  dt [0-9]+ ms  [0-9]+ tok/s  [0-9]+%  [0-9.e+-]+ steps/s  $ETA$" train.err)
if [[ "$n" == 6 ]]; then ok "train: a line a step with share, steps/s and ETA"
else errout=$(cat train.err); bad "train: a line a step with share, steps/s and ETA" "$n of 6"; fi
if grep -qE "^step 3/6 .*  50%  " train.err && grep -qE "^step 6/6 .*  100%  .* ETA 0:00$" train.err; then
	ok "train: step 3 of 6 is 50%, step 6 100% and ETA 0:00"
else bad "train: step 3 of 6 is 50%, step 6 100% and ETA 0:00"; fi
# a resumed run measures from where it resumed: its first line's share is past the stop
supkit train "$T/tiny.cfg" --set data_dir="$T/data" --set steps=6 --set warmup_steps=0 --set eval_tokens=256 \
	--set heldout_tokens=256 --stop-after 4 -q -o run2 >/dev/null 2>&1
SUPKIT_PROGRESS_INTERVAL=0 supkit train --resume run2 >/dev/null 2>resume.err
if head -n 1 resume.err | grep -qE "^step 5/6 .*  83%  [0-9.e+-]+ steps/s  $ETA$"; then ok "train --resume: shares from the resumed step"
else errout=$(cat resume.err); bad "train --resume: shares from the resumed step" "$(head -n 1 resume.err)"; fi

# ---- on a terminal: one line updated in place ----
if command -v script >/dev/null && script -qc true /dev/null >/dev/null 2>&1; then
	SUPKIT_PROGRESS_INTERVAL=0 script -qec "supkit pack big -o big4.zip >/dev/null" /dev/null >tty.out 2>&1
	rc=$?
	expect_rc 0 "pack on a terminal exits 0"
	cr=$(tr -cd '\r' <tty.out | wc -c)
	if ((cr >= 3)) && grep -q $'\r\033\[Kpacking:  ' tty.out; then ok "pack on a terminal: carriage return, erase line, redraw ($cr)"
	else bad "pack on a terminal: carriage return, erase line, redraw" "$cr"; fi
	if tr '\r' '\n' <tty.out | grep -qE "^(.\[K)?packing:  4\.0/4\.0 MB  100%  $RATE  ETA 0:00"; then ok "pack on a terminal: the same fields"
	else bad "pack on a terminal: the same fields"; fi
else
	skip "pack on a terminal" "no script(1)"
fi
finish

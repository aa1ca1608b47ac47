#!/usr/bin/env bash
# stdio.sh: "-" for standard input and output (lib/stream.h, supkit(1)
# CONVENTIONS). Where a stream makes sense the result through "-" equals the
# result through a named file, byte for byte: pack -o - (the zip), verify and
# unpack of a zip on standard input (spooled, nothing left behind), replay's
# inputs and outputs, data encode/decode and corpora, data batches -o -,
# configs and the audits' one JSON or text file. Elsewhere "-" is refused with
# one line naming what it is not supported for, and no file named "-"
# appears. Binary output never goes to a terminal (util-linux script(1) gives
# the command a terminal; skipped without it).
source "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 4
export TMPDIR="$TMP/tmpdir"   # the spools and -o -'s folder: checked empty after each use
mkdir -p "$TMPDIR"
D=$FIX/data
CL=$D/cl100k_base.tiktoken.gz

tmp_empty() { # name: nothing left in $TMPDIR
	if [[ -z "$(ls -A "$TMPDIR")" ]]; then ok "$1"; else bad "$1" "left: $(ls -A "$TMPDIR")"; fi
}
refused() { # what name: exit 2, one line saying '-' is not supported for <what>
	if [[ "$rc" == 2 ]] && grep -qF -- "'-' (standard $1) is not supported for" <<<"$errout" &&
		[[ $(grep -c '' <<<"$errout") == 1 ]]; then ok "$2"
	else bad "$2" "exit $rc"; fi
}
no_dash_file() { # name: no file named "-" was written
	if [[ ! -e ./- ]]; then ok "$1"; else bad "$1" "a file named '-' exists"; rm -f ./-; fi
}
HAVE_SCRIPT=0
command -v script >/dev/null && script -qc true /dev/null >/dev/null 2>&1 && HAVE_SCRIPT=1
on_tty() { # command...: run it with a terminal on stdin, stdout and stderr; sets rc, errout
	script -qec "$*" /dev/null </dev/null >"$TMP/.tty" 2>&1
	rc=$?
	errout=$(tr -d '\r' <"$TMP/.tty")
}

# ---- pack -o - ----
mkdir -p study/sub
printf 'lr = 0.02\n' >study/baseline.cfg
printf 'x%.0s' {1..5000} >study/sub/data.txt
run supkit pack study -o named.zip
expect_rc 0 "pack -o FILE"
supkit pack study -o - >piped.zip 2>"$TMP/pack.err"
rc=$?
expect_rc 0 "pack -o - exits 0"
expect_same_file piped.zip named.zip "pack -o - writes the same zip as -o FILE, byte for byte"
no_dash_file "pack -o - writes no file named '-'"
tmp_empty "pack -o - removes its temporary folder"
if grep -q "^$(sha256sum <piped.zip | cut -d' ' -f1)  -$" "$TMP/pack.err"; then
	ok "pack -o -: the summary (with the zip's SHA-256) goes to stderr"
else errout=$(cat "$TMP/pack.err"); bad "pack -o -: the summary (with the zip's SHA-256) goes to stderr"; fi
supkit pack -q study -o - >/dev/null 2>"$TMP/pack.err"
if [[ ! -s "$TMP/pack.err" ]]; then ok "pack -q -o -: nothing on stderr"; else bad "pack -q -o -: nothing on stderr"; fi
run supkit pack study -o - --json
expect_rc 2 "pack -o - --json refused (stdout carries the zip)"
run supkit pack - -o x.zip
refused input "pack DIR - refused"
expect_no_file x.zip "pack DIR -: nothing written"
ln -s /etc/passwd study/link
supkit pack study -o - >bad.zip 2>"$TMP/pack.err"
rc=$?
expect_rc 2 "pack -o - of a refused folder exits 2"
if [[ ! -s bad.zip ]]; then ok "pack -o - of a refused folder writes nothing to stdout"; else bad "pack -o - of a refused folder writes nothing to stdout"; fi
tmp_empty "pack -o - of a refused folder removes its temporary folder"
rm study/link
if ((HAVE_SCRIPT)); then
	on_tty supkit pack study -o -
	expect_rc 2 "pack -o - to a terminal refused"
	expect_err_contains "refusing to write a zip to a terminal" "pack -o - to a terminal: says why"
	tmp_empty "pack -o - to a terminal leaves nothing"
	no_dash_file "pack -o - to a terminal writes no file named '-'"
else skip "pack -o - to a terminal refused" "no script(1)"; fi

# ---- verify and unpack of a zip on standard input ----
run supkit verify named.zip
want=$(sed 's/named\.zip/-/' <<<"$out")
supkit verify - <named.zip >"$TMP/v.out" 2>"$TMP/v.err"
rc=$?
expect_rc 0 "verify - exits 0"
if [[ "$(cat "$TMP/v.out")" == "$want" ]]; then ok "verify - reports as verify FILE, naming '-'"
else bad "verify - reports as verify FILE, naming '-'" "$(head -c 300 "$TMP/v.out")"; fi
tmp_empty "verify - leaves no spool behind"
supkit verify --json - <named.zip >"$TMP/v.json"
supkit verify --json named.zip | sed 's/named\.zip/-/' >"$TMP/w.json"
expect_same_file "$TMP/v.json" "$TMP/w.json" "verify --json - equals verify --json FILE"
supkit verify --no-manifest - <named.zip >"$TMP/m1" && supkit verify --no-manifest named.zip >"$TMP/m2"
expect_same_file "$TMP/m1" "$TMP/m2" "verify --no-manifest - equals the file's"
supkit verify --no-manifest -o - named.zip >"$TMP/m3"
expect_same_file "$TMP/m3" "$TMP/m2" "verify --no-manifest -o - writes to stdout"
no_dash_file "verify -o - writes no file named '-'"
# a changed entry: exit 1 through standard input too (the zip made by Info-ZIP's zip)
if command -v zip >/dev/null; then
	mkdir -p ch && (cd ch && unzip -q ../named.zip && printf 'lr = 0.03\n' >baseline.cfg && zip -q -r ../changed.zip .)
	run supkit verify - <changed.zip
	expect_rc 1 "verify - of a changed entry exits 1"
	expect_out_contains "FAILED: -" "verify -: the verdict names '-'"
else skip "verify - of a changed entry exits 1" "no zip(1)"; fi
printf 'not a zip' >garbage
run supkit verify - <garbage
expect_rc 2 "verify - of garbage exits 2"
expect_err_contains "'-': not a zip archive" "verify -: the error names '-', not the spool"
expect_one_line_err "verify - of garbage: one line"
tmp_empty "verify - of garbage leaves no spool behind"
run supkit unpack - -C out <named.zip
expect_rc 0 "unpack - exits 0"
if cmp -s out/baseline.cfg study/baseline.cfg && cmp -s out/sub/data.txt study/sub/data.txt; then
	ok "unpack - extracts the zip"; else bad "unpack - extracts the zip"; fi
tmp_empty "unpack - leaves no spool behind"
run supkit unpack - -C out2 <garbage
expect_rc 2 "unpack - of garbage exits 2"
expect_err_contains "'-': not a zip archive" "unpack -: the error names '-'"
expect_no_file out2 "unpack - of garbage: no folder"
run supkit unpack named.zip -C -
refused output "unpack -C - refused"
if ((HAVE_SCRIPT)); then
	on_tty supkit verify -
	expect_rc 2 "verify - from a terminal refused"
	expect_err_contains "refusing to read a zip from a terminal" "verify - from a terminal: says why"
else skip "verify - from a terminal refused" "no script(1)"; fi
run supkit verify - -
expect_rc 2 "verify takes one operand"

# ---- replay ----
mkdir -p r1 r2
printf 'a\nb\nc\n' >base.py
printf 'a\nB\nc\n' >r1/base.py
printf 'a\nb\nc\nd\n' >r2/base.py
supkit replay diff base.py r1/base.py r2/base.py -o diffs.json
run supkit replay run --baseline base.py diffs.json
want=$out
supkit replay run --baseline base.py - <diffs.json >"$TMP/r.out"
if [[ "$(cat "$TMP/r.out")" == "$want" ]]; then ok "replay run DIFFS - equals the file's"; else bad "replay run DIFFS - equals the file's"; fi
run supkit replay run --baseline - diffs.json -o rebuilt <base.py
expect_rc 0 "replay run --baseline - exits 0"
expect_same_file rebuilt/r1/base.py r1/base.py "replay run --baseline -: runs rebuilt"
run supkit replay run --baseline - - <base.py
expect_rc 2 "replay run: '-' twice refused"
expect_err_contains "given twice" "replay run: '-' twice: says so"
run supkit replay run --baseline base.py diffs.json -o -
refused output "replay run -o - refused (a folder)"
supkit replay diff -u base.py r1/base.py >r1.diff
run supkit replay apply base.py - <r1.diff
expect_rc 0 "replay apply PATCH - exits 0"
if [[ "$out" == "$(cat r1/base.py)" ]]; then ok "replay apply PATCH -: the patched file"; else bad "replay apply PATCH -: the patched file"; fi
run supkit replay apply - r1.diff -o applied.py <base.py
expect_same_file applied.py r1/base.py "replay apply BASELINE -: the patched file"
run supkit replay apply base.py r1.diff -o -
if [[ "$out" == "$(cat r1/base.py)" ]]; then ok "replay apply -o -: standard output"; else bad "replay apply -o -: standard output"; fi
no_dash_file "replay apply -o - writes no file named '-'"
run supkit replay diff base.py - <r1/base.py
expect_rc 2 "replay diff FILE - without -n refused"
run supkit replay diff base.py - -n r1 -o d1.json <r1/base.py
expect_rc 0 "replay diff FILE - -n RUN exits 0"
grep -q '+++ r1/base.py' d1.json && ok "replay diff FILE -: labelled RUN/<baseline's name>" || bad "replay diff FILE -: labelled RUN/<baseline's name>"
run supkit replay run --baseline base.py d1.json -o rb1
expect_same_file rb1/r1/base.py r1/base.py "replay diff FILE -: its diffs file replays"
run supkit replay diff - r1/base.py r2/base.py -o - <base.py
expect_rc 0 "replay diff BASELINE - -o - exits 0"
grep -q '"r2"' <<<"$out" && ok "replay diff -o -: the diffs file on stdout" || bad "replay diff -o -: the diffs file on stdout"

# ---- data ----
supkit data encode --ranks "$CL" "$D/sample.txt" >ids.txt
run supkit data encode --ranks "$CL" - <"$D/sample.txt"
expect_rc 0 "data encode - exits 0"
if [[ "$out" == "$(cat ids.txt)" ]]; then ok "data encode -: the same ids"; else bad "data encode -: the same ids"; fi
run supkit data decode --ranks "$CL" -o - - <ids.txt
expect_rc 0 "data decode - -o - exits 0"
if [[ "$out" == "$(cat "$D/sample.txt")" ]]; then ok "data decode - -o -: the text"; else bad "data decode - -o -: the text"; fi
no_dash_file "data decode -o - writes no file named '-'"
supkit data encode --ranks "$CL" --u32 -o - "$D/sample.txt" >ids.u32
supkit data encode --ranks "$CL" --u32 -o ids2.u32 "$D/sample.txt"
expect_same_file ids.u32 ids2.u32 "data encode --u32 -o -: the same bytes as -o FILE"
if ((HAVE_SCRIPT)); then
	on_tty supkit data encode --ranks "$CL" --u32 "$D/sample.txt"
	expect_rc 2 "data encode --u32 to a terminal refused"
	expect_err_contains "refusing to write uint32 ids to a terminal" "encode --u32 to a terminal: says why"
else skip "data encode --u32 to a terminal refused" "no script(1)"; fi
run supkit data encode --ranks - "$D/sample.txt"
refused input "data encode --ranks - refused"
supkit data train-tokenizer -q --vocab 300 -o tok1 "$D/sample.txt"
supkit data train-tokenizer -q --vocab 300 -o tok2 - <"$D/sample.txt"
expect_same_file tok2/ranks.tiktoken tok1/ranks.tiktoken "train-tokenizer CORPUS -: the same ranks"
run supkit data train-tokenizer -o - "$D/sample.txt"
refused output "train-tokenizer -o - refused (a folder)"
printf 'one\n\ntwo three\n\nfour\n' >c.txt
supkit data tokenize -q --json --delim $'\n\n' --val-every 0 --ranks tok1/ranks.tiktoken -o sh1 c.txt >t1.json
supkit data tokenize -q --json --delim $'\n\n' --val-every 0 --ranks tok1/ranks.tiktoken -o sh2 - <c.txt >t2.json
expect_same_file sh2/train_0000.bin sh1/train_0000.bin "tokenize CORPUS -: the same shard"
if [[ -s t2.json ]] && cmp -s t2.json t1.json; then ok "tokenize CORPUS -: the same report"; else bad "tokenize CORPUS -: the same report"; fi
run supkit data tokenize --ranks tok1/ranks.tiktoken -o - c.txt
refused output "tokenize -o - refused (a folder)"
run supkit data stats -
refused input "data stats SHARD - refused"
run supkit data overlap sh1/train_0000.bin -- -
refused input "data overlap SHARD - refused"
run supkit data brown -o - .
refused output "data brown -o - refused"
LD=$FIX/loader
supkit data batches -q --seed 3 --seq-len 16 --batch-rows 2 --count 5 -o b.bin "$LD/a.bin"
supkit data batches -q --seed 3 --seq-len 16 --batch-rows 2 --count 5 -o - "$LD/a.bin" >b2.bin
expect_same_file b2.bin b.bin "data batches -o -: the same bytes as -o FILE"
no_dash_file "data batches -o - writes no file named '-'"
run supkit data batches --count 5 -o - "$LD/a.bin" --json
expect_rc 2 "data batches -o - --json refused"
run supkit data batches --count 5 -o x.bin -
refused input "data batches TRAIN_SHARD - refused"
if ((HAVE_SCRIPT)); then
	on_tty supkit data batches --count 1 --seq-len 16 --batch-rows 2 -o - "$LD/a.bin"
	expect_rc 2 "data batches -o - to a terminal refused"
else skip "data batches -o - to a terminal refused" "no script(1)"; fi

# ---- audits ----
CF=$FIX/compute
S=$FIX/stats
run supkit audit compute --check "$CF/table1b.json" --json
want=$out
supkit audit compute --check - --json <"$CF/table1b.json" >"$TMP/c.out"
rc=$?
expect_rc 1 "audit compute --check - exits as with the file (1)"
if [[ "$(sed 's/"file": "-"/"file": "X"/' "$TMP/c.out")" == "$(sed 's|"file": "[^"]*"|"file": "X"|' <<<"$want")" ]]; then
	ok "audit compute --check -: the same report"; else bad "audit compute --check -: the same report"; fi
run supkit audit compute --json "$SUPKIT_ROOT/configs/baseline.cfg"
want=$out
run supkit audit compute --json - <"$SUPKIT_ROOT/configs/baseline.cfg"
expect_rc 0 "audit compute CONFIG - exits 0"
# the same record but for its derivation (standard input, not the file)
if [[ "$(strip_derivation <<<"$out")" == "$(strip_derivation <<<"$want")" ]] && grep -q '"path": "-"' <<<"$out"; then
	ok "audit compute CONFIG -: the same accounting, derived from standard input"
else bad "audit compute CONFIG -: the same accounting, derived from standard input"; fi
run supkit audit compute --runs - --table
refused input "audit compute --runs - refused"
run supkit audit stats --names "$S/paper.rules" --json "$S/paper_results.json"
want=$out
run supkit audit stats --names "$S/paper.rules" --json - <"$S/paper_results.json"
expect_rc 0 "audit stats RECORDS - exits 0"
if [[ "$(strip_derivation <<<"$out")" == "$(strip_derivation <<<"$want")" ]]; then ok "audit stats RECORDS -: the same report"; else bad "audit stats RECORDS -: the same report"; fi
run supkit audit stats --names - --json "$S/paper_results.json" <"$S/paper.rules"
if [[ "$(strip_derivation <<<"$out")" == "$(strip_derivation <<<"$want")" ]]; then ok "audit stats --names -: the same report"; else bad "audit stats --names -: the same report"; fi
run supkit audit stats --names "$S/paper.rules" --json -o - "$S/paper_results.json"
if [[ "$out" == "$want" ]]; then ok "audit stats -o -: standard output"; else bad "audit stats -o -: standard output"; fi
no_dash_file "audit stats -o - writes no file named '-'"
run supkit audit stats --names "$S/paper.rules" --check - "$S/paper_results.json" <"$S/stats.json"
expect_rc 0 "audit stats --check - exits 0"
expect_out_contains "0 inconsistent, 0 missing" "audit stats --check -: checked"
run supkit audit stats - <"$(ls -d "$S"/runs/*/ | head -1)result.json"
expect_rc 2 "audit stats: a single record on stdin refused (no run name)"
expect_err_contains "has no run name" "audit stats single record on stdin: says why"
run supkit audit stats --names - - <"$S/paper.rules"
expect_rc 2 "audit stats: '-' twice refused"
G=$FIX/geometry/runs/00_dense_native_seed41.safetensors
run supkit audit geometry - <"$G"
refused input "audit geometry CHECKPOINT - refused"
run supkit audit geometry -o - "$G"
refused output "audit geometry -o - refused"
run supkit audit digest -
refused input "audit digest CHECKPOINT - refused"
run supkit audit step0 --config "$FIX/train/tiny.cfg" --data -
refused input "audit step0 --data - refused"
run supkit audit trajectory --config "$FIX/train/tiny.cfg" -
refused input "audit trajectory SHARDS - refused"
run supkit audit step0 --config "$FIX/train/tiny.cfg" --init-from - "$FIX/train/data"
refused input "audit step0 --init-from - refused"
supkit audit step0 -q --json --tokens 64 --config "$FIX/train/tiny.cfg" --data "$FIX/train/data" >s0a.json
supkit audit step0 -q --json --tokens 64 --config - --data "$FIX/train/data" <"$FIX/train/tiny.cfg" >s0b.json
if [[ -s s0b.json ]] && cmp -s <(strip_derivation s0a.json) <(strip_derivation s0b.json); then ok "audit step0 --config -: the same report"
else bad "audit step0 --config -: the same report"; fi

# ---- train ----
run supkit train --print-config "$FIX/train/tiny.cfg"
want=$out
run supkit train --print-config - <"$FIX/train/tiny.cfg"
expect_rc 0 "train CONFIG - exits 0"
if [[ "$out" == "$want" ]]; then ok "train CONFIG -: the same resolved config"; else bad "train CONFIG -: the same resolved config"; fi
run supkit train "$FIX/train/tiny.cfg" -o -
refused output "train -o - refused (a run folder)"
run supkit train --resume -
refused input "train --resume - refused"
no_dash_file "no command wrote a file named '-'"
finish

#!/usr/bin/env bash
# conventions.sh: what every tool shares (supkit(1) CONVENTIONS): supkit help
# TOOL [SUB] is TOOL [SUB] --help; every tool and subcommand takes --version
# ("supkit-<tool> <version>", exit 0) and, where it has --quiet, -q; quiet
# data subcommands print errors only (--json still printed); --json on
# replay apply and diff, data train-tokenizer, encode and decode, checked
# against what the same command writes without it. Product files state what
# is true now: no numbered history or references to documents outside the
# repository in kernels/, trainer/, tests/gpu/, scripts/, bench/, the README,
# man/ and docs/.
source "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 4
D=$FIX/data
CL=$D/cl100k_base.tiktoken.gz
num() { grep -o "\"$2\": *[-0-9.e+]*" <<<"$1" | head -1 | sed 's/.*: *//'; }
str() { grep -o "\"$2\": *\"[^\"]*\"" <<<"$1" | head -1 | sed 's/.*: *"//; s/"$//'; }

# ---- supkit help ----
for args in "train" "pack" "audit" "audit stats" "data tokenize" "replay diff"; do
	read -ra a <<<"$args"
	run supkit help "${a[@]}"
	got=$out grc=$rc
	run "supkit-${a[0]}" "${a[@]:1}" --help
	if [[ "$grc" == 0 && "$got" == "$out" ]]; then ok "supkit help $args = supkit $args --help"
	else bad "supkit help $args = supkit $args --help" "exit $grc: $(head -c 200 <<<"$got")"; fi
done
run supkit help
got=$out
run supkit --help
if [[ "$got" == "$out" ]]; then ok "supkit help alone = supkit --help"; else bad "supkit help alone = supkit --help"; fi
run supkit help nosuch
expect_rc 2 "supkit help of an unknown tool exits 2"
expect_err_contains "'nosuch' is not a supkit tool" "supkit help nosuch: says so"
run supkit help audit stats extra
expect_rc 2 "supkit help takes a tool and at most one subcommand"

# ---- --version and -q everywhere ----
run supkit --version
version=${out#supkit }
[[ -n "$version" && "$version" != "$out" ]] && ok "supkit --version: '$out'" || bad "supkit --version" "'$out'"
for t in "$SUPKIT_BIN"/supkit-*; do
	tool=${t##*/supkit-}
	run "$t" --version
	if [[ "$rc" == 0 && "$out" == "supkit-$tool $version" ]]; then ok "supkit-$tool --version"
	else bad "supkit-$tool --version" "exit $rc, '$out'"; fi
	help=$("$t" --help 2>/dev/null)
	subs=$(awk '/^subcommands:$/{f=1;next} f&&/^  [a-z0-9-]+/{print $1} f&&/^$/{f=0}' <<<"$help")
	for cmd in "" $subs; do
		name="supkit-$tool${cmd:+ $cmd}"
		if [[ -n "$cmd" ]]; then
			run "$t" "$cmd" --version
			if [[ "$rc" == 0 && "$out" == "supkit-$tool $version" ]]; then ok "$name --version"
			else bad "$name --version" "exit $rc, '$out'"; fi
			h=$("$t" "$cmd" --help 2>/dev/null)
		else h=$help; fi
		grep -q -- "--version" <<<"$h" && ok "$name --help lists --version" || bad "$name --help lists --version"
		grep -q -- "--quiet" <<<"$h" || continue
		grep -qE -- "^  -q, --quiet" <<<"$h" && ok "$name --help: -q, --quiet" || bad "$name --help: -q, --quiet"
		run "$t" ${cmd:+"$cmd"} -q --help
		expect_rc 0 "$name takes -q"
	done
done
# a subcommand's --version wins over missing operands, as --help does
run supkit-data tokenize --version
expect_rc 0 "data tokenize --version without its operands exits 0"

# ---- quiet data subcommands: errors only, --json still printed ----
printf '{"text": "one two"}\n{"text": ""}\n{"text": "three \\u00e9"}\n' >a.jsonl
supkit data train-tokenizer -q --vocab 300 -o tok "$D/sample.txt" >"$TMP/tt.out" 2>"$TMP/tt.err"
if [[ ! -s "$TMP/tt.out" && ! -s "$TMP/tt.err" ]]; then ok "train-tokenizer -q: nothing printed"
else bad "train-tokenizer -q: nothing printed" "$(head -c 200 "$TMP/tt.out" "$TMP/tt.err")"; fi
R=tok/ranks.tiktoken
run supkit data tokenize -q --ranks "$R" -o sh a.jsonl
expect_rc 0 "tokenize -q exits 0"
if [[ -z "$out" && -z "$errout" ]]; then ok "tokenize -q: no table, no note (an empty document was skipped)"
else bad "tokenize -q: no table, no note (an empty document was skipped)" "stdout '$out'"; fi
run supkit data tokenize --quiet --force --json --ranks "$R" -o sh a.jsonl
expect_out_contains '"empty_documents": 1' "tokenize --quiet --json: the report is still printed"
[[ -z "$errout" ]] && ok "tokenize --quiet --json: nothing on stderr" || bad "tokenize --quiet --json: nothing on stderr"
run supkit data tokenize --force --ranks "$R" -o sh a.jsonl
expect_out_contains "split  shards" "tokenize without -q prints its table"
expect_err_contains "1 empty documents skipped" "tokenize without -q notes the empty document"

# ---- --json: replay apply and diff ----
mkdir -p r1 r2
printf 'a\nb\nc\nd\n' >base.py
printf 'a\nB\nc\nd\ne\n' >r1/base.py
printf 'a\nb\nc\nd\n' >r2/base.py
supkit replay diff -u base.py r1/base.py >r1.diff
run supkit replay apply base.py r1.diff -o out.py --json
expect_rc 0 "replay apply --json exits 0"
expect_same_file out.py r1/base.py "replay apply --json still writes OUT"
[[ "$(str "$out" sha256)" == "$(sha256sum <out.py | cut -d' ' -f1)" ]] && ok "apply --json: sha256 of OUT" || bad "apply --json: sha256 of OUT"
[[ "$(num "$out" bytes)" == "$(stat -c %s out.py)" ]] && ok "apply --json: bytes of OUT" || bad "apply --json: bytes of OUT"
[[ "$(num "$out" hunks) $(num "$out" added) $(num "$out" removed)" == "2 2 1" ]] && ok "apply --json: 2 hunks, +2 -1" || bad "apply --json: 2 hunks, +2 -1" "$out"
[[ "$(str "$out" output) $(str "$out" baseline) $(str "$out" patch)" == "out.py base.py r1.diff" ]] && ok "apply --json: names its files" || bad "apply --json: names its files"
run supkit replay apply base.py r1.diff --json
expect_rc 2 "replay apply --json without -o refused (stdout carries the file)"
run supkit replay diff base.py r1/base.py r2/base.py -o d.json --json
expect_rc 0 "replay diff --json exits 0"
run_json=$out
run supkit replay run --baseline base.py d.json --json
if [[ "$run_json" == "$out" ]]; then ok "replay diff --json = replay run --json of the diffs file written"
else bad "replay diff --json = replay run --json of the diffs file written"; fi
expect_out_contains '"ok": 2' "replay diff --json: both runs replay"
run supkit replay diff base.py r1/base.py --json
expect_rc 2 "replay diff --json without -o refused"
run supkit replay diff -u base.py r1/base.py -o u.diff --json
expect_rc 0 "replay diff -u --json exits 0"
expect_same_file u.diff r1.diff "replay diff -u --json still writes the diff"
[[ "$(num "$out" hunks) $(num "$out" added) $(num "$out" removed) $(num "$out" bytes)" == "2 2 1 $(stat -c %s r1.diff)" ]] &&
	ok "diff -u --json: hunks, lines, bytes" || bad "diff -u --json: hunks, lines, bytes" "$out"
expect_out_contains '"identical": false' "diff -u --json: the files differ"
run supkit replay diff -u base.py r2/base.py -o same.diff --json
expect_out_contains '"identical": true' "diff -u --json: identical files"

# ---- --json: data train-tokenizer, encode, decode ----
run supkit data train-tokenizer --json --vocab 300 -o tok2 "$D/sample.txt"
expect_rc 0 "train-tokenizer --json exits 0"
expect_same_file tok2/ranks.tiktoken tok/ranks.tiktoken "train-tokenizer --json: the same tokenizer"
[[ "$(str "$out" ranks)" == tok2/ranks.tiktoken && "$(str "$out" token_bytes)" == tok2/token_bytes.bin &&
	"$(str "$out" tokenizer)" == tok2/tokenizer.json ]] && ok "train-tokenizer --json: the files written" ||
	bad "train-tokenizer --json: the files written" "$out"
[[ "$(num "$out" vocab_size)" == 300 && "$(num "$out" mergeable_ranks)" == 296 ]] &&
	ok "train-tokenizer --json: V and ranks" || bad "train-tokenizer --json: V and ranks"
supkit data encode --ranks "$CL" "$D/sample.txt" >ids.txt
run supkit data encode --ranks "$CL" --json "$D/sample.txt"
expect_rc 0 "encode --json exits 0"
if [[ "$(tr -d ' \n' <<<"$out" | sed 's/.*"ids":\[\([0-9,]*\)\].*/\1/' | tr ',' '\n')" == "$(cat ids.txt)" ]]; then
	ok "encode --json: ids equal encode's"; else bad "encode --json: ids equal encode's"; fi
[[ "$(num "$out" tokens)" == "$(grep -c '' ids.txt)" && "$(num "$out" bytes)" == "$(stat -c %s "$D/sample.txt")" ]] &&
	ok "encode --json: tokens and bytes" || bad "encode --json: tokens and bytes"
expect_out_contains '"output": null' "encode --json: no output file"
run supkit data encode --ranks "$CL" --json --u32 -o ids.u32 "$D/sample.txt"
[[ "$(num "$out" tokens)" == "$(( $(stat -c %s ids.u32) / 4 ))" ]] && ok "encode --json -o: counts the ids written" || bad "encode --json -o: counts the ids written"
expect_out_contains '"format": "u32"' "encode --json -o: the format"
grep -q '"ids"' <<<"$out" && bad "encode --json -o: no ids in the object" || ok "encode --json -o: no ids in the object"
run supkit data encode --ranks "$CL" --json --u32 "$D/sample.txt"
expect_rc 2 "encode --json --u32 without -o refused"
run supkit data decode --ranks "$CL" --json ids.txt
expect_rc 0 "decode --json exits 0"
expect_out_contains '"valid_utf8": true' "decode --json: valid UTF-8"
[[ "$(num "$out" bytes)" == "$(stat -c %s "$D/sample.txt")" && "$(num "$out" tokens)" == "$(grep -c '' ids.txt)" ]] &&
	ok "decode --json: bytes and tokens" || bad "decode --json: bytes and tokens"
printf 'say "hi"\n\tthen\\go \xc3\xa9' >q.txt
supkit data encode --ranks "$CL" q.txt >q.ids
run supkit data decode --ranks "$CL" --json q.ids
expect_out_contains "\"text\": \"say \\\"hi\\\"\\n\\tthen\\\\go $(printf '\xc3\xa9')\"" "decode --json: the text as a JSON string"
printf 'ok \xff end\n' >bad.txt
supkit data encode --ranks "$CL" bad.txt >bad.ids
run supkit data decode --ranks "$CL" --json bad.ids
expect_out_contains '"valid_utf8": false' "decode --json: invalid UTF-8 said"
expect_out_contains "\"text\": \"ok $(printf '\xef\xbf\xbd') end\\n\"" "decode --json: an invalid byte shown as U+FFFD"
run supkit data decode --ranks "$CL" --json -o back.txt bad.ids
expect_same_file back.txt bad.txt "decode --json -o: the exact bytes in the file"
grep -q '"text"' <<<"$out" && bad "decode --json -o: no text in the object" || ok "decode --json -o: no text in the object"

# ---- product files: no numbered history, no outside references ----
hist=$(cd "$SUPKIT_ROOT" && grep -rnE "session [0-9]+|sessions [0-9]|[Ii]ssue [0-9]+|SPEC [0-9§]|not yet run on a GPU|give_back|later issue" \
	--include='*' kernels trainer tests/gpu scripts bench README.md man docs 2>/dev/null)
if [[ -z "$hist" ]]; then ok "no numbered history or outside references in product files"
else bad "no numbered history or outside references in product files" "$(head -n 5 <<<"$hist" | cut -c1-160)"; fi
finish

#!/usr/bin/env bash
# data_import.sh: supkit data import-tokenizer end to end, against
# tests/fixtures/tokenizer_pkl (make.py: Python's own pickle of a
# tiktoken-shaped Encoding in every protocol, torch 1.13's torch.save): the
# folder equals what Python wrote, encoding with it gives the ids the same
# ranks give through --ranks, token_bytes.pt is checked, and every hostile
# file is refused with one line, exit 2, no folder, and nothing run (the
# os.system ones would touch PWNED in the working folder under Python).
source "$(dirname "$0")/lib.sh"
D=$FIX/tokenizer_pkl

run supkit data import-tokenizer --help
expect_rc 0 "--help exits 0"
expect_out_contains "TOKENIZER.pkl" "--help shows the usage"
run supkit data --help
expect_out_contains "import-tokenizer" "supkit data --help lists import-tokenizer"
run supkit data import-tokenizer "$D/tokenizer.pkl"
expect_rc 2 "no -o: exit 2"
run supkit data import-tokenizer -o "$TMP/x" "$TMP/none.pkl"
expect_rc 2 "missing file: exit 2"
expect_one_line_err "missing file: one line"
expect_no_file "$TMP/x" "missing file: no folder"

# the real shape (protocol 4), with its token_bytes.pt
run supkit data import-tokenizer --token-bytes "$D/token_bytes.pt" -o "$TMP/tok" "$D/tokenizer.pkl"
expect_rc 0 "import exits 0"
expect_out_contains "$TMP/tok/ranks.tiktoken" "prints the rank file's path"
expect_err_contains "300 ranks + 4 specials (V = 304, BOS 300)" "summary on stderr"
expect_err_contains "equal to the given file" "summary says token_bytes.pt agreed"
expect_same_file "$TMP/tok/ranks.tiktoken" "$D/ranks.tiktoken" "ranks.tiktoken equals Python's"
expect_same_file "$TMP/tok/token_bytes.bin" "$D/token_bytes.bin" "token_bytes.bin equals prepare.py's table"
grep -q '"vocab_size": 304' "$TMP/tok/tokenizer.json" && ok "tokenizer.json has V" || bad "tokenizer.json has V"

# encoding with the imported tokenizer = the same ranks through --ranks
run supkit data encode --ranks "$TMP/tok/ranks.tiktoken" -o "$TMP/a.ids" "$D/sample.txt"
expect_rc 0 "encode with the imported ranks"
run supkit data encode --ranks "$D/ranks.tiktoken" -o "$TMP/b.ids" "$D/sample.txt"
expect_same_file "$TMP/a.ids" "$TMP/b.ids" "imported tokenizer encodes to the ids of the same ranks"
if (($(grep -c '' "$TMP/a.ids") > 100)); then ok "the text took many ids"; else bad "the text took many ids"; fi
run supkit data decode --ranks "$TMP/tok/ranks.tiktoken" -o "$TMP/a.txt" "$TMP/a.ids"
expect_same_file "$TMP/a.txt" "$D/sample.txt" "decode(encode(x)) == x with the imported tokenizer"
run supkit data tokenize --quiet --ranks "$TMP/tok/ranks.tiktoken" --val-every 2 -o "$TMP/shards" "$D/sample.txt"
expect_rc 0 "tokenize with the imported ranks"
run supkit data stats --token-bytes "$TMP/tok/token_bytes.bin" "$TMP/shards/train_0000.bin"
expect_rc 0 "stats with the imported token_bytes"

# every protocol, and the other token_bytes.pt shapes
for p in 0 1 2 3 5; do
	run supkit data import-tokenizer --quiet -o "$TMP/p$p" "$D/tokenizer_p$p.pkl"
	expect_rc 0 "protocol $p imports"
	expect_same_file "$TMP/p$p/ranks.tiktoken" "$D/ranks.tiktoken" "protocol $p: same ranks"
	expect_same_file "$TMP/p$p/token_bytes.bin" "$D/token_bytes.bin" "protocol $p: same token_bytes"
done
for pt in token_bytes_v2.pt token_bytes_be.pt; do
	run supkit data import-tokenizer --quiet --token-bytes "$D/$pt" -o "$TMP/$pt.d" "$D/tokenizer.pkl"
	expect_rc 0 "$pt accepted"
done

# --json, --force, another pattern
run supkit data import-tokenizer --quiet --json -o "$TMP/tok" "$D/tokenizer.pkl"
expect_rc 2 "existing folder: exit 2"
expect_err_contains "already exists (use --force to replace it)" "existing folder: says --force"
run supkit data import-tokenizer --quiet --json --force -o "$TMP/tok" "$D/tokenizer.pkl"
expect_rc 0 "--force replaces the folder"
expect_out_contains '"token_bytes_rule": "utf8_replaced"' "--json prints the record"
expect_out_contains '"pickle_protocol": 4' "--json names the protocol"
run supkit data import-tokenizer -o "$TMP/other" "$D/other_pattern.pkl"
expect_rc 0 "another split pattern imports"
expect_err_contains "give it with --pattern" "another pattern: says so"
grep -qF '\\p{N}{1,3}' "$TMP/other/tokenizer.json" && ok "tokenizer.json carries the pattern" ||
	bad "tokenizer.json carries the pattern"

# hostile files: one line, exit 2, no folder, nothing executed
mkdir -p "$TMP/h"
cd "$TMP/h" || exit 1
n=0 fails=0
while IFS=$'\t' read -r f want; do
	[[ "$f" == \#* || -z "$f" ]] && continue
	n=$((n + 1))
	if [[ "$f" == *.pt ]]; then
		run supkit data import-tokenizer --token-bytes "$D/hostile/$f" -o out "$D/tokenizer.pkl"
	else
		run supkit data import-tokenizer -o out "$D/hostile/$f"
	fi
	lines=$(grep -c '' <<<"$errout")
	if [[ $rc != 2 || $lines != 1 || "$errout" != *"$want"* || -e out || -e PWNED ||
		$(ls -A | wc -l) != 0 ]]; then
		fails=$((fails + 1))
		echo "  $f: exit $rc, $lines lines: $errout"
	fi
done <"$D/hostile.tsv"
cd "$SUPKIT_ROOT" || exit 1
if ((n >= 60 && fails == 0)); then ok "$n hostile files refused: one line, exit 2, no folder, nothing run"
else bad "hostile files refused" "$fails of $n not as expected"; fi
expect_no_file "$TMP/h/PWNED" "no hostile pickle ran os.system"
finish

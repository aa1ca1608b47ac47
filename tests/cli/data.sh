#!/usr/bin/env bash
# data.sh: supkit data end to end: encode equals tiktoken's Rust core
# (sample_bench.ids, made by tests/fixtures/data/make_tiktoken.sh), decode
# inverts encode (text and --u32, invalid UTF-8 included), training,
# tokenizing every corpus format into shards, stats, overlap, the Brown
# converter, and refused inputs (one-line errors, exit codes, no outputs).
source "$(dirname "$0")/lib.sh"
D=$FIX/data
CL=$D/cl100k_base.tiktoken.gz

run supkit data --help
expect_rc 0 "--help exits 0"
expect_out_contains "train-tokenizer" "--help lists the subcommands"
run supkit data nosuch
expect_rc 2 "unknown subcommand exits 2"

# encode = tiktoken (real cl100k_base ranks, benchmark split pattern: the default)
run supkit data encode --ranks "$CL" -o "$TMP/s.ids" "$D/sample.txt"
expect_rc 0 "encode exits 0"
expect_same_file "$TMP/s.ids" "$D/sample_bench.ids" "encode gives tiktoken's ids"
run supkit data decode --ranks "$CL" -o "$TMP/s.txt" "$TMP/s.ids"
expect_same_file "$TMP/s.txt" "$D/sample.txt" "decode(encode(x)) == x"

# --u32 and invalid UTF-8, CRLF
printf 'ok \xff\xfe bad \xc3( \xed\xa0\x80 crlf\r\nend \xf0\x9f\x98\x80\n' >"$TMP/bin.txt"
run supkit data encode --ranks "$CL" --u32 -o "$TMP/bin.u32" "$TMP/bin.txt"
expect_rc 0 "encode --u32 exits 0"
run supkit data decode --ranks "$CL" --u32 -o "$TMP/bin.back" "$TMP/bin.u32"
expect_same_file "$TMP/bin.back" "$TMP/bin.txt" "invalid UTF-8 round-trips through --u32"
n_u32=$(( $(stat -c %s "$TMP/bin.u32") / 4 ))
run supkit data encode --ranks "$CL" "$TMP/bin.txt"
if [[ $(grep -c '' <<<"$out") == "$n_u32" ]]; then ok "--u32 and text give the same count"; else bad "--u32 and text give the same count"; fi

# the cl100k pattern given as data (as tiktoken ships it)
run supkit data encode --ranks "$CL" --pattern "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+" "$TMP/bin.txt"
expect_rc 0 "--pattern accepted"
run supkit data encode --ranks "$CL" --pattern "(unclosed" "$TMP/bin.txt"
expect_rc 2 "bad --pattern exits 2"
expect_one_line_err "bad --pattern: one line"
printf '5\nx\n' >"$TMP/bad.ids"
run supkit data decode --ranks "$CL" "$TMP/bad.ids"
expect_rc 2 "bad ids file exits 2"
expect_err_contains "line 2" "bad ids: names the line"
# one decimal id a line, digits only: a NUL with digits after it, a sign,
# a blank are refused (strtoll alone read 116 NUL NUL 262 as 116)
for bad in NUL ' 5' '+5' '-0' '5 '; do
	if [[ $bad == NUL ]]; then printf '9\n116\0\0%s\n' 262; else printf '9\n%s\n' "$bad"; fi >"$TMP/bad.ids"
	run supkit data decode --ranks "$CL" "$TMP/bad.ids"
	expect_rc 2 "ids line '$bad' exits 2"
	expect_err_contains "line 2: not a token id" "ids line '$bad': names the line"
done
printf '999999\n' >"$TMP/big.ids"
run supkit data decode --ranks "$CL" "$TMP/big.ids"
expect_rc 2 "id beyond the vocabulary exits 2"
run supkit data encode --ranks "$TMP/none" "$TMP/bin.txt"
expect_rc 2 "missing rank file exits 2 (bad input, as lib/fileio.c decides)"
expect_one_line_err "missing rank file: one line"

# train a tokenizer on every text of the fixtures
run supkit data train-tokenizer --quiet --vocab 400 -o "$TMP/tok" "$D/sample.txt" "$FIX/data/texts.json"
expect_rc 0 "train-tokenizer exits 0"
if [[ $(grep -c '' "$TMP/tok/ranks.tiktoken") == 396 ]]; then ok "V-4 ranks written"; else bad "V-4 ranks written"; fi
if [[ $(stat -c %s "$TMP/tok/token_bytes.bin") == $((16 + 4 * 400)) ]]; then ok "token_bytes has V entries"; else bad "token_bytes has V entries"; fi
grep -q '"bos_id": 396' "$TMP/tok/tokenizer.json" && ok "tokenizer.json names BOS" || bad "tokenizer.json names BOS"
R=$TMP/tok/ranks.tiktoken
run supkit data encode --ranks "$R" -o "$TMP/t.ids" "$D/sample.txt"
run supkit data decode --ranks "$R" -o "$TMP/t.txt" "$TMP/t.ids"
expect_same_file "$TMP/t.txt" "$D/sample.txt" "trained tokenizer round-trips"

# corpora: JSON Lines, JSON array, delimited text (empty and invalid documents counted)
printf '{"text": "first document"}\n\n{"text": ""}\n{"text": "second \\u00e9 document", "id": 2}\n{"text": "third"}\n' >"$TMP/a.jsonl"
printf '["alpha beta", "", "gamma delta epsilon", "first document"]' >"$TMP/b.json"
printf 'one\n%%%%\ntwo \xff\n%%%%\n\n%%%%\nthree' >"$TMP/c.txt"
run supkit data tokenize --quiet --json --ranks "$R" --delim $'\n%%\n' --val-every 3 -o "$TMP/sh" "$TMP/a.jsonl" "$TMP/b.json" "$TMP/c.txt"
expect_rc 0 "tokenize exits 0"
expect_out_contains '"empty_documents": 3' "empty documents counted"
expect_out_contains '"invalid_utf8_documents": 1' "invalid UTF-8 documents counted"
expect_out_contains '"documents_read": 12' "all documents read"
[[ -f "$TMP/sh/train_0000.bin" && -f "$TMP/sh/val_0000.bin" && -f "$TMP/sh/data.json" ]] && ok "shards written" || bad "shards written"
run supkit data stats --json --token-bytes "$TMP/tok/token_bytes.bin" "$TMP/sh/train_0000.bin" "$TMP/sh/val_0000.bin"
expect_rc 0 "stats exits 0"
expect_out_contains '"documents": 9' "stats counts the kept documents"
expect_out_contains '"bytes_per_token"' "stats reports bytes per token"
run supkit data tokenize --quiet --ranks "$R" -o "$TMP/sh" "$TMP/a.jsonl"
expect_rc 2 "existing output refused"
run supkit data tokenize --quiet --force --skip-invalid --val-every 0 --delim $'\n%%\n' --ranks "$R" -o "$TMP/sh" "$TMP/c.txt"
expect_rc 0 "--force replaces"
[[ ! -e "$TMP/sh/val_0000.bin" ]] && ok "--val-every 0: no validation shard" || bad "--val-every 0: no validation shard"

# leakage: "first document" is in both files; --val-files 1 puts b.json in validation
run supkit data tokenize --quiet --val-files 1 --ranks "$R" -o "$TMP/ov" "$TMP/a.jsonl" "$TMP/b.json"
run supkit data overlap --n 1 "$TMP/ov/train_0000.bin" -- "$TMP/ov/val_0000.bin"
expect_rc 0 "overlap exits 0 without limits"
expect_out_contains "duplicate documents  1" "overlap finds the duplicate document"
run supkit data overlap --max-dup 0 --json "$TMP/ov/train_0000.bin" -- "$TMP/ov/val_0000.bin"
expect_rc 1 "overlap over --max-dup exits 1"
expect_out_contains '"ok": false' "overlap --json verdict"
run supkit data overlap "$TMP/ov/train_0000.bin"
expect_rc 2 "overlap without -- exits 2"

# refused inputs
printf '{"text": "ok"}\n{"text": 5}\n' >"$TMP/bad.jsonl"
run supkit data tokenize --quiet --ranks "$R" -o "$TMP/out1" "$TMP/bad.jsonl"
expect_rc 2 "JSONL without a string text exits 2"
expect_err_contains "line 2" "JSONL error names the line"
expect_one_line_err "JSONL error: one line"
expect_no_file "$TMP/out1" "no output folder after a refused input"
printf '["ok", 3]' >"$TMP/bad.json"
run supkit data tokenize --quiet --ranks "$R" -o "$TMP/out2" "$TMP/bad.json"
expect_err_contains "entry 1" "JSON array error names the entry"
run supkit data tokenize --quiet --ranks "$CL" -o "$TMP/out3" "$TMP/a.jsonl"
expect_rc 2 "a vocabulary over 65536 is refused for shards"
expect_err_contains "does not fit" "says the vocabulary does not fit"
expect_no_file "$TMP/out3" "no output for a refused vocabulary"
head -c 67 "$TMP/sh/train_0000.bin" >"$TMP/trunc.bin"
run supkit data stats "$TMP/trunc.bin"
expect_rc 2 "truncated shard exits 2"
expect_err_contains "trunc.bin': offset" "shard error names file and offset"

# batches: the trainer's token stream, against the independent Python loader
# (tests/fixtures/loader/make_loader_ref.py: the SHA-256 of its 500 batches,
# inputs then targets each, int32 little-endian)
LD="$FIX/loader"
want=$(grep -o '"sha256": *"[0-9a-f]*"' "$LD/loader_ref.json" | grep -o '[0-9a-f]\{64\}')
run supkit data batches --quiet --seed 0 --seq-len 16 --batch-rows 4 --count 500 -o "$TMP/batches.bin" \
	"$LD/a.bin" "$LD/b.bin"
expect_rc 0 "batches exits 0"
got=$(sha256sum "$TMP/batches.bin" 2>/dev/null | cut -d' ' -f1)
if [[ -n "$want" && "$got" == "$want" ]]; then ok "batches equal the Python loader's, byte for byte"
else bad "batches equal the Python loader's, byte for byte" "got '$got', want '$want'"; fi
run supkit data batches --json --seed 7 --seq-len 16 --batch-rows 4 --count 3 -o "$TMP/b7.bin" "$LD/a.bin"
expect_rc 0 "batches --json exits 0"
expect_out_contains '"bytes": 1536' "batches --json reports the bytes (3 x 2 x 4 x 16 x 4)"
if [[ $(stat -c %s "$TMP/b7.bin" 2>/dev/null) == 1536 ]] && ! cmp -s <(head -c 1536 "$TMP/batches.bin") "$TMP/b7.bin"
then ok "another seed gives another order, of the same size"
else bad "another seed gives another order, of the same size"; fi
run supkit data batches --count 2 -o "$TMP/bad.bin" "$TMP/trunc.bin"
expect_rc 2 "batches of a truncated shard exits 2"
expect_err_contains "trunc.bin" "the error names the shard"
expect_no_file "$TMP/bad.bin" "no output file for a bad shard"
run supkit data batches -o "$TMP/bad.bin" "$LD/a.bin"
expect_rc 2 "batches without --count is a usage error"

# Brown corpus form C -> plain text
mkdir -p "$TMP/brown"
printf '\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn (/( yet/rb )/) '"''"'/'"''"' ,/, and/cc left/vbd ./.\n\n\n\tIt/pps ended/vbd ./.\n' >"$TMP/brown/ca01"
printf 'not part of the corpus\n' >"$TMP/brown/README"
run supkit data brown --quiet -o "$TMP/btext" "$TMP/brown"
expect_rc 0 "brown exits 0"
printf 'The jury said "no evidence (yet)", and left.\nIt ended.\n' >"$TMP/want.txt"
expect_same_file "$TMP/btext/ca01.txt" "$TMP/want.txt" "brown strips tags and rebuilds sentences"
expect_no_file "$TMP/btext/README.txt" "brown converts only corpus files"
finish

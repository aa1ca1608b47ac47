#!/usr/bin/env bash
# data.sh: supkit data end to end: encode equals tiktoken's Rust core
# (sample_bench.ids, made by tests/fixtures/data/make_tiktoken.sh), decode
# inverts encode (text and --u32, invalid UTF-8 included), training,
# tokenizing every corpus format into shards (token_bytes.bin beside them),
# parquet input giving the same tokens as the same texts in JSON Lines
# (train-tokenizer, tokenize, stats, overlap), binary input refused, stats,
# overlap, the Brown converter, and refused inputs (one-line errors, exit
# codes, no outputs).
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

# tokenize writes the tokenizer's token_bytes.bin beside the shards
expect_same_file "$TMP/sh/token_bytes.bin" "$TMP/tok/token_bytes.bin" "tokenize: token_bytes.bin beside the shards, the tokenizer's"

# parquet input (tests/fixtures/parquet: 40 rows, 12 null, 2 empty strings;
# texts.jsonl holds the same texts): the same tokens as the JSON Lines corpus
PQ=$FIX/parquet
run supkit data train-tokenizer -q --vocab 300 -o "$TMP/ptj" "$PQ/texts.jsonl"
run supkit data train-tokenizer -q --json --vocab 300 -o "$TMP/ptp" "$PQ/zstd-v2-dict.parquet"
expect_rc 0 "train-tokenizer reads parquet"
expect_same_file "$TMP/ptp/ranks.tiktoken" "$TMP/ptj/ranks.tiktoken" "train-tokenizer: parquet and JSON Lines give the same ranks"
expect_out_contains '"null_rows": 12' "train-tokenizer counts the null rows"
PR=$TMP/ptj/ranks.tiktoken
run supkit data tokenize -q --val-every 0 --ranks "$PR" -o "$TMP/pj" "$PQ/texts.jsonl"
for f in none-v1-plain snappy-v1-dict gzip-v2-plain zstd-v2-dict; do
	run supkit data tokenize -q --json --val-every 0 --ranks "$PR" -o "$TMP/p_$f" "$PQ/$f.parquet"
	expect_same_file "$TMP/p_$f/train_0000.bin" "$TMP/pj/train_0000.bin" "tokenize: $f.parquet gives texts.jsonl's tokens"
done
expect_out_contains '"null_rows": 12' "data.json counts the null rows"
expect_out_contains '"empty_documents": 2' "parquet's empty strings skipped and counted as empty documents"
run supkit data tokenize -q --val-every 0 --column text --ranks "$PR" -o "$TMP/p_stdin" - <"$PQ/gzip-v1-dict.parquet"
expect_same_file "$TMP/p_stdin/train_0000.bin" "$TMP/pj/train_0000.bin" "tokenize: parquet on standard input, by its magic"
cp "$PQ/snappy-v2-plain.parquet" "$TMP/named.txt"
run supkit data tokenize -q --val-every 0 --ranks "$PR" -o "$TMP/p_named" "$TMP/named.txt"
expect_same_file "$TMP/p_named/train_0000.bin" "$TMP/pj/train_0000.bin" "tokenize: parquet by its magic bytes, not its name"
SUPKIT_PROGRESS_INTERVAL=0 run supkit data tokenize --val-every 0 --ranks "$PR" -o "$TMP/p_prog" "$PQ/zstd-v1-plain.parquet"
n=$(grep -c "zstd-v1-plain.parquet: [0-9]* documents" <<<"$errout")
if ((n >= 4)); then ok "tokenize: progress row group by row group ($n lines)"; else bad "tokenize: progress row group by row group" "$n lines"; fi
expect_err_contains "12 null rows skipped" "tokenize notes the null rows"
run supkit data tokenize -q --ranks "$PR" --column id -o "$TMP/p_bad" "$PQ/none-v1-plain.parquet"
expect_rc 2 "--column of a column that is not text exits 2"
expect_err_contains "column 'id' is INT64, not a string" "the refusal names the column and its type"
expect_no_file "$TMP/p_bad" "no output folder for a refused column"
# stats and overlap: with --ranks, a parquet file counts as its shard would
run supkit data stats --json --ranks "$PR" "$PQ/snappy-v2-dict.parquet" "$TMP/pj/train_0000.bin"
expect_rc 0 "stats --ranks reads parquet"
t1=$(tr -d ' \n' <<<"$out" | grep -o '"documents":[0-9]*,"empty_documents":2,"input":"corpus"[^}]*"tokens":[0-9]*')
t2=$(tr -d ' \n' <<<"$out" | grep -o '"input":"shard"[^}]*"tokens":[0-9]*' | grep -o '"tokens":[0-9]*')
if [[ -n "$t1" && "${t1##*\"tokens\":}" == "${t2##*:}" && "$t1" == '"documents":26,'* ]]
then ok "stats: a parquet file's tokens and documents are its shard's (${t2##*:})"; else bad "stats: a parquet file's tokens and documents are its shard's" "$out"; fi
expect_out_contains '"null_rows": 12' "stats counts a parquet file's null rows"
run supkit data stats "$PQ/snappy-v2-dict.parquet"
expect_rc 2 "stats of parquet without --ranks exits 2"
expect_err_contains "give --ranks FILE" "the refusal says what to give"
run supkit data overlap -q --ranks "$PR" --json "$PQ/none-v2-dict.parquet" -- "$TMP/pj/train_0000.bin"
expect_out_contains '"duplicate_documents": 26' "overlap --ranks: a parquet file against its own shard, every document a duplicate"
# the trainer finds token_bytes.bin beside the shards (no --token-bytes)
run supkit data tokenize -q --val-every 3 --ranks "$PR" -o "$TMP/p_train" "$PQ/zstd-v2-plain.parquet"
run supkit train "$FIX/train/tiny.cfg" --quiet --set vocab_size=300 --set data_dir="$TMP/p_train" --set steps=2 \
	--set warmup_steps=0 --set eval_tokens=256 --set heldout_tokens=0 -o "$TMP/p_run"
expect_rc 0 "supkit train on tokenize's folder, token_bytes.bin found there"

# binary input is refused, never tokenized
gzip -c "$PQ/texts.jsonl" >"$TMP/texts.jsonl.gz"
run supkit data tokenize -q --ranks "$PR" -o "$TMP/b1" "$TMP/texts.jsonl.gz"
expect_rc 2 "a gzip corpus exits 2"
expect_err_contains "texts.jsonl.gz': a gzip file, not text" "the refusal says it is gzip"
expect_one_line_err "gzip corpus: one line"
expect_no_file "$TMP/b1" "no output for a gzip corpus"
run supkit data tokenize -q --format text --ranks "$PR" -o "$TMP/b2" "$PQ/none-v1-plain.parquet"
expect_rc 2 "a parquet file given as text exits 2"
expect_err_contains "a parquet file (PAR1 at both ends), not text" "the refusal says it is parquet"
printf 'text\0more' >"$TMP/nul.txt"
run supkit data train-tokenizer -q --vocab 300 -o "$TMP/b3" "$TMP/nul.txt"
expect_rc 2 "a file with a NUL byte exits 2"
expect_err_contains "nul.txt': offset 4: a NUL byte: binary data, not UTF-8 text" "the refusal names the offset"
expect_no_file "$TMP/b3" "no tokenizer from a binary file"

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

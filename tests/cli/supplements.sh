#!/usr/bin/env bash
# supplements.sh: supkit pack, verify and unpack end to end: reproducible
# archives accepted by Info-ZIP unzip and Python's zipfile; archives made by
# Info-ZIP zip verified and unpacked; manifest mismatches listed; hostile
# archives (tests/fixtures/supplements/make_hostile.py) refused with one line
# naming the entry, nothing written.
source "$(dirname "$0")/lib.sh"
S=$FIX/supplements
have() { command -v "$1" >/dev/null 2>&1; }
# Debian's python3 when there (quicker to start than a version manager's shim)
PY=$(command -v /usr/bin/python3 || command -v python3 || true)

for t in pack verify unpack; do
	run supkit-$t --help
	expect_rc 0 "$t --help exits 0"
	expect_out_contains "usage: supkit $t" "$t --help prints usage"
done
run supkit-pack
expect_rc 2 "pack without arguments exits 2"
run supkit-pack "$S/tree" -o "$TMP/x.zip" --bogus
expect_rc 2 "pack with an unknown option exits 2"
expect_no_file "$TMP/x.zip" "unknown option writes nothing"

# --- pack: output, reproducibility --------------------------------------------
run supkit pack "$S/tree" -o "$TMP/a.zip"
expect_rc 0 "pack the fixture tree"
expect_out_contains "7 entries, " "pack prints the entry count"
if grep -qE '^7 entries, [0-9.]+ (B|KB) uncompressed, [0-9.]+ (B|KB) compressed$' <<<"$(head -n1 <<<"$out")"; then
	ok "pack summary line format"
else bad "pack summary line format" "$out"; fi
run supkit-pack --json -o "$TMP/j.zip" "$S/tree"
expect_rc 0 "pack --json"
expect_out_contains '"entries": 7' "pack --json has entries"
expect_same_file "$TMP/a.zip" "$TMP/j.zip" "options before or after DIR give the same zip"

cp -r "$S/tree" "$TMP/t2"
find "$TMP/t2" -type f -exec touch -d '2011-11-11 11:11' {} +
chmod 600 "$TMP/t2/README.txt"
(umask 077 && TZ=XST-14 supkit-pack -q "$TMP/t2" -o "$TMP/b.zip" >/dev/null)
expect_same_file "$TMP/a.zip" "$TMP/b.zip" "other mtimes, modes, umask and zone: identical bytes"
# other creation order: copy the files in reverse order into a fresh tree
mkdir "$TMP/t3"
(cd "$S/tree" && find . -type f | sort -r | while read -r f; do mkdir -p "$TMP/t3/$(dirname "$f")"; cp "$f" "$TMP/t3/$f"; done)
supkit-pack -q "$TMP/t3" -o "$TMP/c.zip" >/dev/null
expect_same_file "$TMP/a.zip" "$TMP/c.zip" "other creation order: identical bytes"
SOURCE_DATE_EPOCH=1700000000 supkit-pack -q "$S/tree" -o "$TMP/d.zip" >/dev/null
if ! cmp -s "$TMP/a.zip" "$TMP/d.zip"; then ok "SOURCE_DATE_EPOCH changes the timestamps"
else bad "SOURCE_DATE_EPOCH changes the timestamps"; fi
run env SOURCE_DATE_EPOCH=yesterday supkit-pack "$S/tree" -o "$TMP/e.zip"
expect_rc 2 "invalid SOURCE_DATE_EPOCH exits 2"
expect_no_file "$TMP/e.zip" "invalid SOURCE_DATE_EPOCH writes nothing"

# --- interoperability ---------------------------------------------------------
if have unzip; then
	run unzip -t "$TMP/a.zip"
	expect_rc 0 "unzip -t accepts our archive"
	expect_out_contains "No errors detected" "unzip -t finds no errors"
	run unzip -Z1 "$TMP/a.zip"
	if [[ "$(head -n1 <<<"$out")" == manifest.json ]]; then ok "manifest.json is the first entry"
	else bad "manifest.json is the first entry" "$out"; fi
	mkdir "$TMP/uz" && (cd "$TMP/uz" && unzip -q "$TMP/a.zip")
	if cmp -s "$TMP/uz/manifest.json" "$S/tree.manifest.json" && diff -r -x manifest.json "$TMP/uz" "$S/tree" >/dev/null; then
		ok "unzip extracts the same files, and Python's manifest"
	else bad "unzip extracts the same files, and Python's manifest"; fi
else skip "unzip interoperability" "unzip not installed"; fi
if have python3; then
	run python3 -c '
import sys, zipfile, hashlib, json
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
names = z.namelist()
assert names[0] == "manifest.json", names
m = json.loads(z.read("manifest.json"))
for e in m["entries"]:
    b = z.read(e["path"])
    assert len(b) == e["size"] and hashlib.sha256(b).hexdigest() == e["sha256"], e["path"]
assert sorted(e["path"] for e in m["entries"]) == sorted(names[1:])
print("python ok", len(names))' "$TMP/a.zip"
	expect_rc 0 "Python zipfile reads our archive and agrees with the manifest"
else skip "Python zipfile interoperability" "python3 not installed"; fi

# --- verify ---------------------------------------------------------------------
run supkit verify "$TMP/a.zip"
expect_rc 0 "verify our archive"
expect_out_contains "verified: " "verify prints the verdict"
expect_out_contains "3 of 3 runs replayed ok" "verify replays the diffs file"
run supkit-verify "$S/infozip.zip"
expect_rc 0 "verify an archive made by Info-ZIP zip"
expect_out_contains "3 of 3 runs replayed ok" "replay from an Info-ZIP archive"
run supkit-verify "$S/infozip-zip64.zip"
expect_rc 0 "verify an Info-ZIP archive with Zip64 extra fields"
run supkit-unpack "$S/infozip-zip64.zip" -C "$TMP/u64"
expect_rc 0 "unpack an Info-ZIP archive with Zip64 extra fields"
run supkit-verify "$S/hostile/python-ok.zip"
expect_rc 0 "verify an archive made by Python zipfile"
run supkit-verify --json "$S/infozip.zip"
j1=$out
run supkit-verify --json "$S/infozip.zip"
if [[ "$out" == "$j1" ]] && grep -q '"verified": true' <<<"$out"; then ok "verify --json deterministic"
else bad "verify --json deterministic"; fi
run supkit-verify "$S/infozip-nomanifest.zip"
expect_rc 1 "verify without a manifest exits 1"
expect_one_line_err "no manifest: one line"
run supkit-verify --no-manifest "$S/infozip-nomanifest.zip"
expect_rc 0 "--no-manifest lists and hashes"
printf '%s\n' "$out" >"$TMP/nm.json"
expect_same_file "$TMP/nm.json" "$S/tree.manifest.json" "--no-manifest prints the manifest pack writes (Python's)"
run supkit-verify --no-manifest -o "$TMP/nm2.json" "$S/infozip-nomanifest.zip"
expect_same_file "$TMP/nm2.json" "$S/tree.manifest.json" "--no-manifest -o writes it"
run supkit-verify "$S/hostile/flipped.zip"
expect_rc 1 "a flipped byte fails verify"
expect_out_contains "CRC" "the flipped member is named with its CRC error"

# --- manifest mismatches (folder and Info-ZIP re-zipped) ------------------------
mismatch() { # name, edit command (in the folder), expected status word
	local d="$TMP/mm-$1"
	rm -rf "$d"
	supkit-unpack -q "$TMP/a.zip" -C "$d" >/dev/null
	(cd "$d" && eval "$2")
	run supkit-verify --no-replay "$d"
	expect_rc 1 "$1: folder verify exits 1"
	expect_out_contains "$3" "$1: folder verify lists '$3'"
	if have zip; then
		rm -f "$d.zip"
		(cd "$d" && zip -q -r "$d.zip" .)
		run supkit-verify --no-replay "$d.zip"
		expect_rc 1 "$1: zip verify exits 1"
		expect_out_contains "$3" "$1: zip verify lists '$3'"
	fi
}
mismatch missing "rm results/r1.json" "missing            42  results/r1.json"
mismatch extra "echo new > extra.txt" "extra               4  extra.txt"
mismatch size "echo more >> README.txt" "(size 69 in the manifest)"
mismatch content "sed -i 's/depth = 6/depth = 7/' baseline.cfg" "(SHA-256 differs from the manifest)"

# a symbolic link in a verified folder is refused, not followed
d="$TMP/mm-link"
supkit-unpack -q "$TMP/a.zip" -C "$d" >/dev/null
ln -s /etc/passwd "$d/passwd"
run supkit-verify --no-replay "$d"
expect_rc 1 "a symlink in a verified folder exits 1"
expect_out_contains "refused" "the symlink is listed as refused"

# replay failure with an honest manifest: a run's recorded SHA-256 is wrong
cp -r "$S/tree" "$TMP/rf"
sed -i '0,/"sha256": "/s//"sha256": "00/' "$TMP/rf/diffs.json"
sed -i 's/"sha256": "00\(.\{62\}\)../"sha256": "00\1/' "$TMP/rf/diffs.json"
supkit-pack -q "$TMP/rf" -o "$TMP/rf.zip" >/dev/null
run supkit-verify "$TMP/rf.zip"
expect_rc 1 "a run that does not replay to its SHA-256 fails verify"
expect_out_contains "mismatch" "the run is listed as a mismatch"
run supkit-verify --no-replay "$TMP/rf.zip"
expect_rc 0 "--no-replay checks the manifest only"

# --- pack refusals ----------------------------------------------------------------
cp -r "$S/tree" "$TMP/bad"
ln -s README.txt "$TMP/bad/link"
run supkit-pack "$TMP/bad" -o "$TMP/bad.zip"
expect_rc 2 "symlink inside DIR exits 2"
expect_one_line_err "symlink: one line"
expect_err_contains "'link'" "symlink: names the entry"
expect_no_file "$TMP/bad.zip" "symlink: nothing written"
rm "$TMP/bad/link"
mkfifo "$TMP/bad/fifo"
run supkit-pack "$TMP/bad" -o "$TMP/bad.zip"
expect_rc 2 "special file inside DIR exits 2"
expect_no_file "$TMP/bad.zip" "special file: nothing written"
rm "$TMP/bad/fifo"
touch "$TMP/bad/$(printf 'x\377.txt')"
run supkit-pack "$TMP/bad" -o "$TMP/bad.zip"
expect_rc 2 "a path that is not UTF-8 exits 2"
expect_err_contains "UTF-8" "non-UTF-8: says why"
rm "$TMP/bad/$(printf 'x\377.txt')"
run bash -c 'cd "$1" && exec supkit-pack "$2" -o ""' _ "$TMP" "$TMP/bad"
expect_rc 2 "-o '': exit 2"
expect_err_contains "empty" "-o '': says why"
run supkit-pack "$TMP/bad" -o "$TMP/bad/sub.zip"
expect_rc 2 "output inside DIR exits 2"
expect_one_line_err "output inside DIR: one line"
expect_no_file "$TMP/bad/sub.zip" "output inside DIR: nothing written"

# --- unpack ---------------------------------------------------------------------------
run supkit-unpack "$S/infozip.zip" -C "$TMP/ui"
expect_rc 0 "unpack an Info-ZIP archive"
run supkit-verify "$TMP/ui"
expect_rc 0 "the unpacked Info-ZIP archive verifies as a folder"
run supkit-unpack "$S/infozip.zip" -C "$TMP/ui"
expect_rc 2 "unpack into a non-empty folder exits 2"
run supkit-unpack "$S/infozip.zip" -C "$TMP/ui2/"
expect_rc 0 "unpack into DIR/ (trailing slash)"
run supkit-unpack "$S/infozip.zip" -C "$TMP/no/such/dir"
expect_rc 2 "unpack below a folder that does not exist exits 2"
expect_one_line_err "missing parent: one line"
mkdir "$TMP/hz"
for f in "$S"/hostile/*.zip; do
	n=$(basename "$f" .zip)
	[[ $n == python-ok || $n == ok-* ]] && continue
	run supkit-unpack "$f" -C "$TMP/hz/out"
	expect_rc 2 "hostile $n: unpack exits 2"
	expect_one_line_err "hostile $n: one line"
	if grep -qE "entr(y|ies) '[^']+'|truncated|times the archive" <<<"$errout"; then ok "hostile $n: names the entry"
	else bad "hostile $n: names the entry"; fi
	if [[ -z "$(ls -A "$TMP/hz")" ]]; then ok "hostile $n: nothing written"
	else bad "hostile $n: nothing written" "$(ls -A "$TMP/hz")"; rm -rf "$TMP/hz"/*; fi
done
run supkit-unpack --max-ratio 2000 "$S/hostile/bomb.zip" -C "$TMP/bomb"
expect_rc 0 "--max-ratio lifts the ratio limit"

# --- every reader sees the same archive, or supkit refuses it ----------------------
# Unicode Path extra fields (0x7075) that swap two names: Info-ZIP unzip and
# libarchive take the name from the field, Python's zipfile from the header
for n in unicode-path unicode-path-central; do
	run supkit-verify "$S/hostile/$n.zip"
	expect_rc 2 "$n: verify refuses"
	expect_err_contains "Unicode Path extra field" "$n: says which field"
	expect_err_contains "entry 'a.txt'" "$n: names the entry"
done
if have unzip && [[ -n $PY ]]; then
	mkdir "$TMP/uzp" && (cd "$TMP/uzp" && unzip -q -o "$S/hostile/unicode-path.zip" >/dev/null 2>&1)
	py=$("$PY" -c 'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("a.txt").decode())' \
		"$S/hostile/unicode-path.zip")
	if [[ "$(cat "$TMP/uzp/a.txt")" == AAAA && "$py" == AAAA ]]; then
		ok "unicode-path: unzip and Python read a.txt = AAAA, the manifest (libarchive's view) BBBB"
	else bad "unicode-path: unzip and Python read a.txt = AAAA" "unzip $(cat "$TMP/uzp/a.txt"), python $py"; fi
else skip "unicode-path: unzip and Python's view" "unzip or python3 not installed"; fi
# bytes the central directory does not account for: a local header hidden
# between entries, before the central directory, a prefix
for n in gap gap-end prefix descriptor-mismatch; do
	run supkit-verify "$S/hostile/$n.zip"
	expect_rc 2 "$n: verify refuses"
	expect_one_line_err "$n: one line"
	expect_err_contains "$([[ $n == descriptor-mismatch ]] && echo "no data descriptor matching" || echo "belong to no entry")" \
		"$n: says which bytes"
done
# one rule for duplicates in every reader: the same folder twice
run supkit-verify --no-manifest "$S/hostile/folder-twice.zip"
expect_rc 1 "folder twice: verify --no-manifest leaves it out (exit 1)"
expect_err_contains "entry 'd/' left out: duplicate name" "folder twice: verify says why"
run supkit-unpack "$S/hostile/folder-twice.zip" -C "$TMP/f2"
expect_err_contains "entry 'd/': duplicate name" "folder twice: unpack says why"
# names that are not UTF-8 are shown as escaped bytes
for n in latin1-name latin1-name-noflag; do
	run supkit-verify --no-manifest "$S/hostile/$n.zip"
	expect_rc 1 "$n: verify --no-manifest leaves it out (exit 1)"
	expect_err_contains "entry 'caf\xe9.txt' left out: path is not valid UTF-8" "$n: the name as escaped bytes"
	run supkit-unpack "$S/hostile/$n.zip" -C "$TMP/l1"
	expect_err_contains "entry 'caf\xe9.txt': path is not valid UTF-8" "$n: unpack names it as escaped bytes"
done
# a name the file system cannot hold is bad input, found before writing
run supkit-unpack "$S/hostile/long-name.zip" -C "$TMP/ln"
expect_rc 2 "a 256-byte name component: exit 2"
expect_err_contains "a name component of 256 bytes" "a 256-byte name component: says why"
expect_no_file "$TMP/ln" "a 256-byte name component: nothing written"
# the ratio limit on the whole archive: 16 entries of 1 MiB of zeros
run supkit-unpack "$S/hostile/bomb-many.zip" -C "$TMP/bm"
expect_rc 2 "many 1 MiB entries of zeros: refused on the archive's ratio"
expect_err_contains "times the archive's 17990 bytes, past the limit of 200:1 (--max-ratio)" "the archive's ratio named"
run supkit-unpack --max-ratio 2000 "$S/hostile/bomb-many.zip" -C "$TMP/bm"
expect_rc 0 "--max-ratio lifts the archive's ratio limit too"
run supkit-unpack --max-total 1048576 "$S/hostile/bomb-many.zip" -C "$TMP/bm2"
expect_rc 2 "--max-total bounds the whole"
expect_err_contains "(--max-total)" "--max-total named"

# --- Unicode NFC: one form of every name ----------------------------------------------
# a supplement made on macOS (names in NFD in the zip and the manifest), one
# whose manifest lists the names in NFC; and one written to a pipe (sizes in
# data descriptors)
for n in ok-nfd ok-nfd-manifest-nfc ok-descriptor; do
	run supkit-verify "$S/hostile/$n.zip"
	expect_rc 0 "$n: verifies"
	run supkit-unpack "$S/hostile/$n.zip" -C "$TMP/$n"
	expect_rc 0 "$n: unpacks"
	run supkit-verify "$TMP/$n"
	expect_rc 0 "$n: the unpacked folder verifies"
done
nfc_names() { # folder: its relative file paths, one a line, sorted, checked NFC by Python
	"$PY" -c '
import os, sys, unicodedata
out = []
for r, ds, fs in os.walk(sys.argv[1]):
    for f in fs:
        p = os.path.relpath(os.path.join(r, f), sys.argv[1])
        out.append(("NFC " if unicodedata.is_normalized("NFC", p) else "NOT-NFC ") + p)
print("\n".join(sorted(out)))' "$1"
}
if [[ -n $PY ]]; then
	got=$(nfc_names "$TMP/ok-nfd")
	if ! grep -q NOT-NFC <<<"$got" && [[ $(grep -c '' <<<"$got") == 4 ]]; then ok "ok-nfd: unpack writes NFC names"
	else bad "ok-nfd: unpack writes NFC names" "$got"; fi
	# pack a folder whose names are NFD: the zip and the manifest in NFC, and it verifies
	mkdir -p "$TMP/nfd"
	"$PY" -c '
import os, sys, unicodedata
d = sys.argv[1]
for p in ("r\u00e9sultats/\u00e9t\u00e9.json", "na\u00efve.txt"):
    p = os.path.join(d, unicodedata.normalize("NFD", p))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "w").write("x\n")' "$TMP/nfd"
	run supkit-pack "$TMP/nfd" -o "$TMP/nfd.zip"
	expect_rc 0 "pack a folder with NFD names"
	run supkit-verify "$TMP/nfd.zip"
	expect_rc 0 "its zip verifies"
	expect_out_contains "verified: " "its zip verifies: verdict"
	"$PY" -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("manifest.json"))' \
		"$TMP/nfd.zip" >"$TMP/nfd/manifest.json"
	run supkit-verify "$TMP/nfd"
	expect_rc 0 "the NFD folder verifies against the NFC manifest"
	rm "$TMP/nfd/manifest.json"
	run "$PY" -c '
import json, sys, unicodedata, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
paths = [e["path"] for e in json.loads(z.read("manifest.json"))["entries"]]
assert all(unicodedata.is_normalized("NFC", n) for n in names), names
assert paths == sorted(n for n in names if n != "manifest.json"), (paths, names)
assert "na\u00efve.txt" in names, names' "$TMP/nfd.zip"
	expect_rc 0 "the zip's names and the manifest's paths are the same NFC (Python)"
	# --diffs and --baseline name entries in NFC too
	cp -r "$S/tree" "$TMP/dt"
	mkdir "$TMP/dt/$(printf 'r\xc3\xa9glages')"
	mv "$TMP/dt/diffs.json" "$TMP/dt/baseline.cfg" "$TMP/dt/$(printf 'r\xc3\xa9glages')/"
	supkit-pack -q "$TMP/dt" -o "$TMP/dt.zip" >/dev/null
	run supkit-verify --diffs "$(printf 're\xcc\x81glages/diffs.json')" \
		--baseline "$(printf 're\xcc\x81glages/baseline.cfg')" "$TMP/dt.zip"
	expect_rc 0 "--diffs and --baseline in NFD find the entries"
	expect_out_contains "3 of 3 runs replayed ok" "--diffs in NFD: the runs replayed"
	# both forms of one name in a folder: refused at pack time
	"$PY" -c '
import os, sys, unicodedata
for f in ("NFC", "NFD"):
    open(os.path.join(sys.argv[1], unicodedata.normalize(f, "\u00e9t\u00e9.txt")), "w").write(f)' "$TMP/nfd"
	run supkit-pack "$TMP/nfd" -o "$TMP/nfd2.zip"
	expect_rc 2 "a folder with both forms of a name: pack exits 2"
	expect_err_contains "duplicate name" "both forms: says why"
	expect_no_file "$TMP/nfd2.zip" "both forms: nothing written"
else skip "NFC names" "python3 not installed"; fi
run supkit-unpack "$S/hostile/nfc-nfd-twice.zip" -C "$TMP/nn"
expect_err_contains "the same name in Unicode NFC" "both forms in a zip: unpack says why"
run supkit-verify --no-manifest "$S/hostile/nfc-nfd-twice.zip"
expect_rc 1 "both forms in a zip: verify leaves them out"

# --- the output folder ---------------------------------------------------------------
mkdir "$TMP/cwd"
S_ABS=$(cd "$S" && pwd)
run bash -c 'cd "$1" && exec supkit-unpack "$2" -C ""' _ "$TMP/cwd" "$S_ABS/hostile/python-ok.zip"
expect_rc 2 "-C '': exit 2"
expect_one_line_err "-C '': one line"
expect_err_contains "empty" "-C '': says why"
if [[ -z "$(ls -A "$TMP/cwd")" ]]; then ok "-C '': nothing written"
else bad "-C '': nothing written" "$(ls -A "$TMP/cwd")"; fi
(umask 022 && supkit-unpack -q "$S/hostile/python-ok.zip" -C "$TMP/m755" >/dev/null)
if [[ "$(stat -c %a "$TMP/m755")" == 755 ]]; then ok "a new DIR is 0777 less the umask (755)"
else bad "a new DIR is 0777 less the umask (755)" "$(stat -c %a "$TMP/m755")"; fi
(umask 027 && supkit-unpack -q "$S/hostile/python-ok.zip" -C "$TMP/m750" >/dev/null)
if [[ "$(stat -c %a "$TMP/m750" "$TMP/m750/sub")" == $'750\n750' ]]; then ok "umask 027: DIR and its folders 750"
else bad "umask 027: DIR and its folders 750" "$(stat -c %a "$TMP/m750" "$TMP/m750/sub")"; fi
mkdir "$TMP/keep" && chmod 711 "$TMP/keep"
xattr=0
"$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.supkit", b"kept")' "$TMP/keep" 2>/dev/null && xattr=1
before=$(stat -c '%i %a %u %g' "$TMP/keep")
run supkit-unpack "$S/hostile/python-ok.zip" -C "$TMP/keep"
expect_rc 0 "unpack into an existing empty folder"
if [[ "$(stat -c '%i %a %u %g' "$TMP/keep")" == "$before" ]]; then ok "the existing folder is kept (inode, mode, owner)"
else bad "the existing folder is kept (inode, mode, owner)" "$before -> $(stat -c '%i %a %u %g' "$TMP/keep")"; fi
if ((xattr)); then
	if [[ "$("$PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.supkit").decode())' "$TMP/keep")" == kept ]]; then
		ok "the existing folder keeps its extended attributes"
	else bad "the existing folder keeps its extended attributes"; fi
else skip "the existing folder keeps its extended attributes" "no user xattrs here"; fi
if [[ "$(cd "$TMP/keep" && ls -A | sort | tr '\n' ' ')" == "a.txt manifest.json sub " ]]; then ok "its entries, and nothing else, inside"
else bad "its entries, and nothing else, inside" "$(ls -A "$TMP/keep")"; fi
mkdir "$TMP/keep2"
run supkit-unpack "$S/hostile/zipslip.zip" -C "$TMP/keep2"
if [[ $rc == 2 && -z "$(ls -A "$TMP/keep2")" ]]; then ok "a refused archive leaves an existing folder empty"
else bad "a refused archive leaves an existing folder empty" "rc $rc: $(ls -A "$TMP/keep2")"; fi
run supkit-unpack --max-size 10 "$S/hostile/python-ok.zip" -C "$TMP/lim"
expect_rc 2 "--max-size refuses a larger entry"
expect_err_contains "--max-size" "--max-size named in the reason"
run supkit-unpack --max-size ten "$S/hostile/python-ok.zip" -C "$TMP/lim"
expect_rc 2 "--max-size with a bad number exits 2"
finish

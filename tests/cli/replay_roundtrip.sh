#!/usr/bin/env bash
# replay_roundtrip.sh: round-trip property test of supkit replay against GNU
# diff and GNU patch (installed by scripts/install-deps.sh: diffutils, patch).
#
# For CASES (default 200) random edits of real text files (insertions,
# deletions, changes, at the start and the end, CRLF lines, a removed or added
# final newline, empty files): GNU `diff -U 0` and `supkit replay diff -u` each
# make a diff; `supkit replay apply` rebuilds the edited file exactly from
# both (and from GNU `diff -U 0..3`, any context size); GNU `patch` rebuilds
# it from ours; our diff is never longer than GNU's (ours is a shortest edit
# script). Deterministic: SEED (default 1) drives the edits. Sources:
# /usr/share/common-licenses/* (this repository's lib/ and replay/ sources
# only where that folder is missing).
source "$(dirname "$0")/lib.sh"
CASES=${CASES:-200}
SEED=${SEED:-1}
for tool in diff patch python3; do
	if ! command -v $tool >/dev/null; then
		skip "round trip" "$tool is not installed (scripts/install-deps.sh installs it)"
		finish
		exit
	fi
done

# The mutator: writes $TMP/cN/a and $TMP/cN/b for each case.
python3 - "$TMP" "$CASES" "$SEED" "$SUPKIT_ROOT" <<'EOF'
import glob, os, random, sys
tmp, cases, seed, root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(seed)
srcs = sorted(glob.glob('/usr/share/common-licenses/*'))
if not srcs:
    srcs = sorted(glob.glob(os.path.join(root, 'lib', '*.[ch]')))
    srcs += sorted(glob.glob(os.path.join(root, 'replay', '*.[ch]')))
texts = []
for p in srcs:
    try:
        with open(p, 'rb') as f:
            d = f.read()
    except OSError:
        continue
    if d and b'\0' not in d:
        texts.append(d.splitlines(keepends=True))
assert texts, 'no source texts'

def mutate(lines):
    lines = list(lines)
    pool = [l for t in rng.sample(texts, min(3, len(texts))) for l in t] or [b'x\n']
    for _ in range(rng.choice([0, 1, 1, 2, 3, 5, 8, 20])):
        op = rng.choice(['ins', 'del', 'chg', 'start', 'end', 'dup', 'crlf'])
        n = len(lines)
        i = rng.randrange(n + 1)
        k = rng.choice([1, 1, 1, 2, 3, 7])
        new = [rng.choice(pool) for _ in range(k)]
        if op == 'ins':
            lines[i:i] = new
        elif op == 'del':
            del lines[i:i + k]
        elif op == 'chg':
            lines[i:i + k] = new[:rng.randint(1, k)]
        elif op == 'start':
            lines[0:rng.randint(0, 2)] = new
        elif op == 'end':
            lines[max(0, n - rng.randint(0, 2)):] = new
        elif op == 'dup' and n:
            lines[i:i] = lines[max(0, i - k):i]  # repeated blocks: ambiguous alignments
        elif op == 'crlf':
            for j in range(i, min(n, i + k)):
                if lines[j].endswith(b'\n') and not lines[j].endswith(b'\r\n'):
                    lines[j] = lines[j][:-1] + b'\r\n'
    lines = [l if l.endswith(b'\n') else l + b'\n' for l in lines]
    return lines

def finish(lines, r):
    data = b''.join(lines)
    if data and r < 0.3:
        data = data.rstrip(b'\n')  # no final newline
    return data

for c in range(cases):
    t = rng.choice(texts)
    start = rng.randrange(len(t))
    a = t[start:start + rng.randint(0, 120)]
    if rng.random() < 0.15:
        a = [l.replace(b'\n', b'\r\n') if not l.endswith(b'\r\n') else l for l in a]  # a CRLF file
    b = mutate(a)
    ra, rb = rng.random(), rng.random()
    d = os.path.join(tmp, 'c%03d' % c)
    os.makedirs(d)
    with open(os.path.join(d, 'a'), 'wb') as f:
        f.write(finish(a, ra))
    with open(os.path.join(d, 'b'), 'wb') as f:
        f.write(finish(b, rb))
EOF
[[ $? == 0 ]] || { bad "mutator" "python3 failed"; finish; exit; }

changed() { grep -c '^[-+]' "$1" | awk '{print $1}'; }
n_ctx=0 n_gnu=0 n_ours=0 n_patch=0 n_min=0 n_same=0 n_id=0 fails=0
for d in "$TMP"/c*; do
	c=${d##*/}
	(cd "$d" && diff -U 0 a b >gnu.diff)
	drc=$?
	ctx=$((10#${c#c} % 4))
	(cd "$d" && diff -U $ctx a b >gnu_ctx.diff)
	if ((drc > 1)); then bad "$c: GNU diff" "exit $drc"; continue; fi
	((drc == 0)) && n_id=$((n_id + 1))
	# 1. our applier rebuilds b from GNU's diff
	if supkit-replay apply "$d/a" "$d/gnu.diff" -o "$d/from_gnu" 2>"$d/err1" && cmp -s "$d/from_gnu" "$d/b"; then
		n_gnu=$((n_gnu + 1))
	else
		fails=$((fails + 1)); ((fails <= 10)) && echo "  $c: our applier on GNU's diff: $(head -c 300 "$d/err1")"
	fi
	# ... and from GNU's diff with $ctx lines of context (any context size)
	if supkit-replay apply "$d/a" "$d/gnu_ctx.diff" -o "$d/from_ctx" 2>"$d/err5" && cmp -s "$d/from_ctx" "$d/b"; then
		n_ctx=$((n_ctx + 1))
	else
		fails=$((fails + 1)); ((fails <= 10)) && echo "  $c: our applier on GNU's -U $ctx diff: $(head -c 300 "$d/err5")"
	fi
	# 2. our generator, applied by our applier and by GNU patch
	if ! (cd "$d" && supkit-replay diff -u a b >ours.diff 2>err2); then
		fails=$((fails + 1)); echo "  $c: supkit-replay diff -u failed: $(head -c 300 "$d/err2")"; continue
	fi
	if supkit-replay apply "$d/a" "$d/ours.diff" -o "$d/from_ours" 2>"$d/err3" && cmp -s "$d/from_ours" "$d/b"; then
		n_ours=$((n_ours + 1))
	else
		fails=$((fails + 1)); ((fails <= 10)) && echo "  $c: our applier on our diff: $(head -c 300 "$d/err3")"
	fi
	if [[ ! -s "$d/ours.diff" ]]; then
		cp "$d/a" "$d/by_patch"
	else
		patch -s -f --binary --no-backup-if-mismatch -r - -o "$d/by_patch" "$d/a" "$d/ours.diff" >"$d/err4" 2>&1
	fi
	if cmp -s "$d/by_patch" "$d/b"; then
		n_patch=$((n_patch + 1))
	else
		fails=$((fails + 1)); ((fails <= 10)) && echo "  $c: GNU patch on our diff: $(head -c 300 "$d/err4")"
	fi
	# 3. ours is a shortest script: never more changed lines than GNU's
	go=$(changed "$d/gnu.diff") oo=$(changed "$d/ours.diff")
	# (both count the two header lines when the files differ)
	if ((oo <= go)); then n_min=$((n_min + 1)); else
		fails=$((fails + 1)); ((fails <= 10)) && echo "  $c: our diff changes $oo lines, GNU's $go"
	fi
	# byte-identical to GNU's apart from the timestamps in the headers?
	if cmp -s <(sed '1,2d' "$d/gnu.diff") <(sed '1,2d' "$d/ours.diff"); then n_same=$((n_same + 1)); fi
done
total=$(ls -d "$TMP"/c* | wc -l)
echo "  $total cases ($n_id identical pairs): applier on GNU diffs $n_gnu, applier on ours $n_ours," \
	"GNU patch on ours $n_patch, ours shortest $n_min, hunks byte-identical to GNU's $n_same"
if ((n_gnu == total)); then ok "applier rebuilds every file from GNU diff -U 0 ($total cases)"; else bad "applier on GNU diffs" "$n_gnu/$total"; fi
if ((n_ctx == total)); then ok "applier rebuilds every file from GNU diff -U 0..3"; else bad "applier on GNU -U 0..3 diffs" "$n_ctx/$total"; fi
if ((n_ours == total)); then ok "applier rebuilds every file from our diffs"; else bad "applier on our diffs" "$n_ours/$total"; fi
if ((n_patch == total)); then ok "GNU patch rebuilds every file from our diffs"; else bad "GNU patch on our diffs" "$n_patch/$total"; fi
if ((n_min == total)); then ok "our diffs are never longer than GNU's"; else bad "shortest" "$n_min/$total"; fi
if ((total == CASES)); then ok "all $CASES cases generated"; else bad "cases" "$total/$CASES"; fi
finish

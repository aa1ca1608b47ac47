#!/usr/bin/env bash
# plot.sh: supkit plot end to end. Real inputs: four tiny training runs (two
# arms x two seeds, tests/fixtures/train), their audit stats, audit geometry
# (with --spectrum) and audit trajectory reports, each drawn as PNG, SVG and
# PDF (the PNG read back by python3's zlib: its size and that it is not
# blank). A run of known points drawn as SVG, parsed as XML by python3's
# standard library: the bold line's vertices map back to the data within
# half a point (a pixel at 150 dpi), through the frame and the tick values
# found in the SVG. Two runs of the command give the same bytes (SVG, PDF,
# PNG). Bad input (an empty run, NaN or null in a curve, a JSON report of
# another kind, a bad output name or folder) exits non-zero with one line
# naming the file, and leaves no file (nor a temporary one) behind.
source "$(dirname "$0")/lib.sh"
if [[ ! -x "$SUPKIT_BIN/supkit-plot" ]]; then
	skip "supkit plot" "supkit-plot not built (cairo not found by pkg-config)"
	finish
	exit 0
fi
MAN="$SUPKIT_ROOT/man/supkit-plot.1"
T="$FIX/train"

for sub in curves stats geometry step0; do
	run supkit plot $sub --help
	expect_rc 0 "plot $sub --help exits 0"
	expect_out_contains "usage: supkit plot $sub" "plot $sub --help prints its synopsis"
	grep -qF "Cm $sub" "$MAN" && ok "supkit-plot(1) documents $sub" || bad "supkit-plot(1) documents $sub"
done
run supkit plot
expect_rc 2 "no subcommand: exit 2"
run supkit plot frobnicate
expect_rc 2 "unknown subcommand: exit 2"

# PNG facts by python3's standard library: width, height, not one colour
png_info() {
	python3 - "$1" <<'EOF'
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", b[16:24])
depth, ctype = b[24], b[25]
data, at = b"", 8
while at < len(b):
    n = struct.unpack(">I", b[at:at + 4])[0]
    kind = b[at + 4:at + 8]
    if kind == b"IDAT":
        data += b[at + 8:at + 8 + n]
    at += 12 + n
raw = zlib.decompress(data)
print(w, h, len(set(raw[i] for i in range(0, len(raw), 7))) > 8)
EOF
}

# ---- real inputs: tiny runs, two arms x two seeds ----
trn() { supkit train "$T/tiny.cfg" --set data_dir="$T/data" --set steps=16 --set eval_every=4 --quiet "$@"; }
mkdir -p "$TMP/runs"
for seed in 42 43; do
	trn --set seed=$seed -o "$TMP/runs/00_s$seed" >/dev/null 2>&1
	trn --set seed=$seed --set arm=01_dense_opt --set cooldown=1 -o "$TMP/runs/01_s$seed" >/dev/null 2>&1
done
if [[ -f "$TMP/runs/01_s43/result.json" ]]; then ok "four tiny runs trained"; else bad "four tiny runs trained"; fi

for fmt in png svg pdf; do
	run supkit plot curves "$TMP/runs" -o "$TMP/curves.$fmt"
	expect_rc 0 "curves of a folder of runs: $fmt"
	[[ -s "$TMP/curves.$fmt" ]] && ok "curves.$fmt written" || bad "curves.$fmt written"
done
expect_out_contains "curves.pdf: PDF," "the command names what it wrote"
read -r w h varied <<<"$(png_info "$TMP/curves.png")"
if [[ "$w" -gt 600 && "$h" -gt 300 && "$varied" == True ]]; then ok "curves.png: ${w}x${h}, not blank"
else bad "curves.png: ${w}x${h}, not blank" "$w $h $varied"; fi
head -c 4 "$TMP/curves.pdf" | grep -q '%PDF' && ok "curves.pdf is a PDF" || bad "curves.pdf is a PDF"
run supkit plot curves "$TMP/runs/00_s42" "$TMP/runs/01_s42" --band --x tokens --log-x --smooth 0.5 --from 2 \
	--title "two runs" --size 640x300 --dpi 100 -o "$TMP/c2.png"
expect_rc 0 "curves: every option"
expect_out_contains "c2.png: PNG, 889 x 417 px" "--size in points at --dpi 100"
supkit plot curves "$TMP/runs" --title "two arms" -o "$TMP/t.pdf" >/dev/null
grep -aq "/Title (two arms)" "$TMP/t.pdf" && ok "--title is the PDF's title" || bad "--title is the PDF's title"

run supkit audit stats --json -o "$TMP/stats.json" "$TMP/runs"
expect_rc 0 "audit stats on the runs"
for fmt in png svg pdf; do
	run supkit plot stats "$TMP/stats.json" -o "$TMP/stats.$fmt"
	expect_rc 0 "plot stats: $fmt"
done
# the paper's records (22 contrasts, two scopes)
supkit audit stats --names "$FIX/stats/paper.rules" --json -o "$TMP/paper.json" \
	"$FIX/stats/paper_results.json" 2>/dev/null
run supkit plot stats "$TMP/paper.json" -o "$TMP/paper.svg"
expect_rc 0 "plot stats: the papers' contrasts"

run supkit audit geometry -q --spectrum --json -o "$TMP/geom.json" "$TMP/runs"/*/model.safetensors
expect_rc 0 "audit geometry --spectrum on the runs"
for fmt in png svg pdf; do
	run supkit plot geometry "$TMP/geom.json" -o "$TMP/geom.$fmt"
	expect_rc 0 "plot geometry: $fmt"
	run supkit plot geometry --spectrum "$TMP/geom.json" -o "$TMP/spec.$fmt"
	expect_rc 0 "plot geometry --spectrum: $fmt"
done
supkit audit geometry -q --json -o "$TMP/geom_nospec.json" "$TMP/runs/00_s42/model.safetensors"
run supkit plot geometry --spectrum "$TMP/geom_nospec.json" -o "$TMP/nospec.png"
expect_rc 2 "--spectrum of a report without spectra: exit 2"
expect_err_contains "no 'singular_values' (the report of supkit audit geometry --spectrum has them)" \
	"--spectrum without spectra says what to run"
expect_no_file "$TMP/nospec.png" "--spectrum without spectra: no file"

run supkit audit trajectory --config "$T/tiny.cfg" --data "$T/data" --steps 3 -q --json -o "$TMP/traj.json"
expect_rc 0 "audit trajectory"
for fmt in png svg pdf; do
	run supkit plot step0 "$TMP/traj.json" -o "$TMP/step0.$fmt"
	expect_rc 0 "plot step0: $fmt"
done
run supkit plot step0 --entry 1 "$TMP/traj.json" -o "$TMP/step0e.png"
expect_rc 0 "plot step0 --entry 1"
run supkit plot step0 --entry 9 "$TMP/traj.json" -o "$TMP/step0e9.png"
expect_rc 2 "plot step0 --entry past the family: exit 2"
expect_err_contains "no entry 9" "--entry past the family: named"

# ---- determinism: a second run gives the same bytes ----
same=1
for f in curves.png curves.svg curves.pdf stats.svg stats.pdf geom.svg spec.pdf step0.svg step0.png; do
	kind=${f%%.*} ext=${f##*.}
	case $kind in
	curves) supkit plot curves "$TMP/runs" -o "$TMP/again.$ext" >/dev/null ;;
	stats) supkit plot stats "$TMP/stats.json" -o "$TMP/again.$ext" >/dev/null ;;
	geom) supkit plot geometry "$TMP/geom.json" -o "$TMP/again.$ext" >/dev/null ;;
	spec) supkit plot geometry --spectrum "$TMP/geom.json" -o "$TMP/again.$ext" >/dev/null ;;
	step0) supkit plot step0 "$TMP/traj.json" -o "$TMP/again.$ext" >/dev/null ;;
	esac
	cmp -s "$TMP/$f" "$TMP/again.$ext" || { same=0; echo "  $f differs"; }
done
((same)) && ok "two runs: byte-identical SVG, PDF and PNG" || bad "two runs: byte-identical SVG, PDF and PNG"
SOURCE_DATE_EPOCH=1700000000 supkit plot stats "$TMP/stats.json" -o "$TMP/dated.pdf" >/dev/null
grep -aq "CreationDate (20231114221320Z)" "$TMP/dated.pdf" && ! grep -aq CreationDate "$TMP/stats.pdf" &&
	ok "PDF: SOURCE_DATE_EPOCH's date, else none" || bad "PDF: SOURCE_DATE_EPOCH's date, else none"

# ---- SVG: the line's vertices back to the data ----
K="$TMP/known/run"
mkdir -p "$K"
python3 - "$K" <<'EOF'
import json, sys
d = sys.argv[1]
with open(d + "/curve.jsonl", "w") as f:
    for t in range(0, 100):
        f.write(json.dumps({"step": t, "loss": 4 - 0.02 * t + (0.1 if t % 10 == 3 else 0)}) + "\n")
open(d + "/config.cfg", "w").write("arm = known\nseed = 1\nsteps = 100\n")
EOF
run supkit plot curves --smooth 0 "$K" -o "$TMP/known.svg"
expect_rc 0 "a run of known points as SVG"
run python3 - "$TMP/known.svg" <<'EOF'
import re, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
def pts(d):
    return [(float(a), float(b)) for a, b in re.findall(r"[ML] (-?[0-9.]+) (-?[0-9.]+)", d)]
frames, lines, ticks = [], [], []
for el in root.iter("{http://www.w3.org/2000/svg}path"):
    st, d = el.get("style", ""), el.get("d", "")
    if "stroke:rgb(0%,0%,0%)" in st and "stroke-width:0.8" in st:
        p = pts(d)
        xs, ys = sorted({x for x, _ in p}), sorted({y for _, y in p})
        if d.count("Z") == 1 and len(xs) == 2 and len(ys) == 2:
            frames.append((xs[0], ys[0], xs[1], ys[1]))
        else:
            ticks.append(p)
    if "stroke:rgb(0%,44.705882%,69.803922%)" in st and "stroke-width:1.8" in st:
        lines.append(pts(d))
lines = [l for l in lines if len(l) > 2]   # not the legend's swatch
assert len(frames) == 1, "frames: %r" % frames
x0, y0, x1, y1 = frames[0]
# x ticks: segments going down from the bottom edge; 0 .. 100 by 20
xt = sorted({round(x, 3) for seg in ticks for x, y in seg if y > y1 + 1})
assert len(xt) == 6, "x ticks %r" % xt
assert abs(xt[0] - x0) < 0.01 and abs(xt[-1] - x1) < 0.01, "ticks at the ends of the x axis"
yt = sorted({round(y, 3) for seg in ticks for x, y in seg if x < x0 - 1})
assert len(yt) == 6, "y ticks %r" % yt   # 2.0 .. 4.5 by 0.5
assert len(lines) == 1, "bold lines: %d" % len(lines)
line = lines[0]
tol = 0.5   # points: a pixel at 150 dpi
def loss(t):
    return 4 - 0.02 * t + (0.1 if t % 10 == 3 else 0)
def px(t):
    return x0 + t / 100 * (x1 - x0)
def py(v):
    return y1 - (v - 2.0) / 2.5 * (y1 - y0)
# cairo merges collinear segments: each vertex is a data point, and each
# data point lies on the line
for x, y in line:
    t = round((x - x0) / (x1 - x0) * 100)
    assert abs(x - px(t)) < tol and abs(y - py(loss(t))) < tol, "vertex (%g, %g) is no data point" % (x, y)
assert abs(line[0][0] - px(0)) < tol and abs(line[-1][0] - px(99)) < tol, "the line spans steps 0 .. 99"
for t in range(100):
    X, Y = px(t), py(loss(t))
    seg = [(a, b) for a, b in zip(line, line[1:]) if a[0] - tol <= X <= b[0] + tol]
    on = False
    for (ax, ay), (bx, by) in seg:
        u = 0 if bx == ax else min(1, max(0, (X - ax) / (bx - ax)))
        on |= abs(ay + u * (by - ay) - Y) < tol
    assert on, "step %d: (%g, %g) not on the line" % (t, X, Y)
print("%d vertices, 100 data points, within %g pt" % (len(line), tol))
EOF
expect_rc 0 "SVG: every vertex of the line maps back to its data point"
[[ $rc == 0 ]] || echo "  $out"

# ---- bad input: an error line, no file ----
mkdir -p "$TMP/bad/empty" "$TMP/bad/nan" "$TMP/bad/null" "$TMP/bad/norun" "$TMP/out"
: >"$TMP/bad/empty/curve.jsonl"
printf '{"step":0,"loss":5}\n{"step":1,"loss":NaN}\n' >"$TMP/bad/nan/curve.jsonl"
printf '{"step":0,"loss":5}\n{"step":1,"loss":null}\n' >"$TMP/bad/null/curve.jsonl"
check_bad() { # want-rc message name command...
	local want=$1 msg=$2 name=$3; shift 3
	run "$@"
	expect_rc "$want" "$name: exit $want"
	expect_err_contains "$msg" "$name: says why"
	expect_one_line_err "$name: one line"
	if [[ -z "$(ls -A "$TMP/out")" ]]; then ok "$name: no file left"; else bad "$name: no file left" "$(ls "$TMP/out")"; fi
}
check_bad 2 "bad/empty/curve.jsonl': no steps (an empty run)" "empty run" \
	supkit plot curves "$TMP/bad/empty" -o "$TMP/out/x.png"
check_bad 2 "bad/nan/curve.jsonl': line 2, column 18: a NaN or infinity, not a finite number" "NaN in a curve" supkit plot curves "$TMP/bad/nan" -o "$TMP/out/x.svg"
check_bad 2 "line 2: 'loss' is not a finite number" "null loss in a curve" \
	supkit plot curves "$TMP/bad/null" -o "$TMP/out/x.pdf"
check_bad 2 "no curve.jsonl in it or in its subfolders" "a folder without runs" \
	supkit plot curves "$TMP/bad/norun" -o "$TMP/out/x.png"
check_bad 2 "an audit geometry report (supkit audit geometry --json), not an audit stats report" \
	"geometry JSON to plot stats" supkit plot stats "$TMP/geom.json" -o "$TMP/out/x.png"
check_bad 2 "an audit stats report (supkit audit stats --json), not an audit trajectory report" \
	"stats JSON to plot step0" supkit plot step0 "$TMP/stats.json" -o "$TMP/out/x.png"
check_bad 2 "not an audit geometry report" "a run's result.json to plot geometry" \
	supkit plot geometry "$TMP/runs/00_s42/result.json" -o "$TMP/out/x.png"
check_bad 2 "must end in .png, .svg or .pdf" "an unknown output format" \
	supkit plot stats "$TMP/stats.json" -o "$TMP/out/x.jpg"
check_bad 2 "no output given" "no -o" supkit plot stats "$TMP/stats.json"
check_bad 2 "--smooth: 1 is not in [0, 1)" "--smooth out of range" \
	supkit plot curves "$TMP/runs" --smooth 1 -o "$TMP/out/x.png"
check_bad 4 "cannot" "an output folder that does not exist" \
	supkit plot stats "$TMP/stats.json" -o "$TMP/out/nowhere/x.png"
finish

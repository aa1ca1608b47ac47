#!/usr/bin/env bash
# sweep.sh: supkit sweep end to end on the trainer tests' tiny model
# (tests/fixtures/train). 1. refusals before anything runs; 2. --local:
# the grid's results/ read by audit stats and pack, status, a re-run that
# starts nothing, a changed sweep refused, a failed run, a resumed run
# bit-identical, locks, GPU hand-out, SIGTERM; 3. Slurm for real: a one-node
# Slurm (Debian's slurm-wlm and munge) on this machine, with its own
# slurm.conf, munge key and socket in a temporary folder, slurmctld and
# slurmd in the foreground, stopped at the end: the same 2 arm x 2 seed
# sweep through --slurm gives the same result.json figures as --local 2;
# a held job's runs read as pending and are not started by --local; a
# failed task reads as failed; srun --mpi=pmix -n 2 of the data-parallel
# trainer gives mpirun -np 2's weights bit for bit. Part 3 is skipped (and counted so) where
# Slurm or munge is missing or cannot start (not root).
source "$(dirname "$0")/lib.sh"
D="$FIX/train/data"
BASE="$FIX/train/tiny.cfg"
sweep_file() { # path [extra lines...]: the 2 arm x 2 seed tiny sweep
	local f=$1; shift
	{
		echo "base = $BASE"
		echo "arms = 00_dense_native 01"
		echo "seeds = 42 43"
		echo "data_dir = $D"
		echo "steps = 12"
		echo "eval_tokens = 1024"
		echo "heldout_tokens = 1024"
		echo "backend = cpu"
		printf '%s\n' "$@"
	} >"$f"
}
num() { grep -o "\"$2\": *[-0-9.e+]*" "$1" | head -1 | sed 's/.*: *//'; }
str() { grep -o "\"$2\": *\"[^\"]*\"" "$1" | head -1 | sed 's/.*: *"//; s/"$//'; }
expect_row() { # run state detail-prefix name: the status table's row of run
	if awk -v r="$1" -v s="$2" -v d="$3" '$1 == r && $2 == s && (d == "" || index(substr($0, index($0, s) + length(s)), d)) { f = 1 }
		END { exit !f }' <<<"$out"; then ok "$4"
	else bad "$4" "no row '$1 $2 $3...' in: $(head -c 600 <<<"$out")"; fi
}
RUNS=(00_dense_native_d2_s42 00_dense_native_d2_s43 01_dense_opt_d2_s42 01_dense_opt_d2_s43)

# 1. refusals: one line naming file and line, exit 2, nothing written
sweep_file "$TMP/bad.cfg" "stepz = 3"
run supkit sweep "$TMP/bad.cfg" -o "$TMP/bad" --local 1
expect_rc 2 "unknown key refused"
expect_err_contains "bad.cfg:9: unknown key 'stepz'" "the refusal names file and line"
expect_one_line_err "the refusal is one line"
expect_no_file "$TMP/bad" "nothing written for a refused sweep"
sweep_file "$TMP/bad.cfg" "qk_mask = l0_hf16"
run supkit sweep "$TMP/bad.cfg" -o "$TMP/bad" --local 1
expect_rc 2 "a config that supkit train would refuse is refused for every run first"
expect_err_contains "run 00_dense_native_d2_s42: $TMP/bad.cfg:9: qk_mask" "the refusal names the run, file and line"
expect_no_file "$TMP/bad" "nothing written"
sweep_file "$TMP/bad.cfg" "slurm_time = 2 hours"
run supkit sweep "$TMP/bad.cfg" -o "$TMP/bad" --slurm
expect_rc 2 "a bad Slurm time refused"
run supkit sweep "$TMP/bad.cfg" -o "$TMP/bad"
expect_rc 2 "no executor: usage error"
run supkit sweep "$TMP/bad.cfg" -o "$TMP/bad" --local 2 --slurm
expect_rc 2 "--local and --slurm together refused"

for sub in "" status task; do
	run supkit-sweep $sub --version
	if [[ $rc == 0 && "$out" == "supkit-sweep "* ]]; then ok "supkit-sweep${sub:+ $sub} --version"
	else bad "supkit-sweep${sub:+ $sub} --version" "exit $rc, '$out'"; fi
done

# dry run: the runs listed, nothing written; the job script printed, the same bytes twice
sweep_file "$TMP/s.cfg"
run supkit sweep "$TMP/s.cfg" -o "$TMP/dry" --dry-run
expect_rc 0 "--dry-run"
for r in "${RUNS[@]}"; do expect_row "$r" pending "not started" "--dry-run lists $r"; done
expect_no_file "$TMP/dry" "--dry-run writes nothing"
run supkit sweep "$TMP/s.cfg" -o "$TMP/dry" --dry-run --slurm
expect_out_contains "#SBATCH --array=0-3" "the job script: one task a run"
if grep -q -- '--gres' <<<"$out"; then bad "no --gres for runs on the CPU"; else ok "no --gres for runs on the CPU"; fi
expect_out_contains "exec $SUPKIT_BIN/supkit-sweep task $TMP/dry" "each task runs supkit-sweep task"
first=$out
run supkit sweep "$TMP/s.cfg" -o "$TMP/dry" --dry-run --slurm
if [[ "$out" == "$first" ]]; then ok "the job script is deterministic"; else bad "the job script is deterministic"; fi

# 2. --local 2
run supkit sweep "$TMP/s.cfg" -o "$TMP/local" --local 2
expect_rc 0 "--local 2 runs the grid"
expect_out_contains "4 runs: 4 done, 0 running, 0 pending, 0 failed" "all four done"
expect_err_contains "started" "progress on stderr"
for r in "${RUNS[@]}"; do
	if [[ -f "$TMP/local/results/$r/result.json" && -f "$TMP/local/results/$r/curve.jsonl" &&
		-f "$TMP/local/results/$r/config.cfg" ]]; then ok "results/$r has result.json, curve.jsonl, config.cfg"
	else bad "results/$r has result.json, curve.jsonl, config.cfg"; fi
	expect_same_file "$TMP/local/runs/$r/result.json" "$TMP/local/results/$r/result.json" "results/$r is the run's result"
	sha=$(sha256sum "$TMP/local/runs/$r/config.cfg" | cut -c1-64)
	if [[ "$(str "$TMP/local/runs/$r/result.json" config_sha256)" == "$sha" ]] &&
		grep -q "\"config_sha256\": \"$sha\"" "$TMP/local/sweep.json"; then ok "$r: sweep.json and result.json agree on config_sha256"
	else bad "$r: sweep.json and result.json agree on config_sha256"; fi
done
if grep -q '^muoneq = bieq' "$TMP/local/runs/01_dense_opt_d2_s42/config.cfg" &&
	grep -q '^muoneq = off' "$TMP/local/runs/00_dense_native_d2_s42/config.cfg" &&
	grep -q '^seed = 43' "$TMP/local/runs/01_dense_opt_d2_s43/config.cfg" &&
	grep -q '^steps = 12' "$TMP/local/runs/01_dense_opt_d2_s43/config.cfg"; then ok "each run's config: base, arm, seed, overrides"
else bad "each run's config: base, arm, seed, overrides"; fi
# the config is what supkit train --arm NAME BASE resolves, with the overrides
supkit train --print-config --arm 01 "$BASE" --set seed=43 --set data_dir="$D" --set steps=12 \
	--set eval_tokens=1024 --set heldout_tokens=1024 --set backend=cpu >"$TMP/want.cfg"
expect_same_file "$TMP/want.cfg" "$TMP/local/runs/01_dense_opt_d2_s43/config.cfg" "a run's config equals supkit train --arm's"
run supkit audit stats --json "$TMP/local/results"
expect_rc 0 "audit stats reads results/"
expect_out_contains '"arm": "01_dense_opt"' "audit stats finds the cells"
expect_out_contains '"01 - 00"' "audit stats pairs the seeds"
run supkit pack "$TMP/local/results" -o "$TMP/results.zip"
expect_rc 0 "pack reads results/"
run supkit sweep status "$TMP/local"
expect_rc 0 "status of a finished sweep exits 0"
expect_out_contains "4 runs: 4 done" "status: 4 done"
run supkit sweep status --json "$TMP/local"
expect_out_contains '"done": 4' "status --json counts"
stamp=$(stat -c %Y.%s "$TMP/local/results/00_dense_native_d2_s42/result.json")
run supkit sweep "$TMP/s.cfg" -o "$TMP/local" --local 2
expect_rc 0 "a re-run"
expect_out_contains "nothing to start: 4 done" "a re-run starts nothing"
[[ "$(stat -c %Y.%s "$TMP/local/results/00_dense_native_d2_s42/result.json")" == "$stamp" ]] &&
	ok "a re-run leaves results/ alone" || bad "a re-run leaves results/ alone"
# a sweep whose configs changed is refused, naming the run folder
sweep_file "$TMP/s2.cfg" "steps = 13"
run supkit sweep "$TMP/s2.cfg" -o "$TMP/local" --local 2
expect_rc 2 "a changed config refused in an existing sweep folder"
expect_err_contains "runs/00_dense_native_d2_s42/config.cfg' holds another config" "the refusal names the run's config"

# a failed run: exit 1, status failed with the exit status; then fixed by hand and re-run
sweep_file "$TMP/f.cfg" "max_loss = 1e-9"
sed -i 's/^seeds = .*/seeds = 42/; s/^arms = .*/arms = 00/' "$TMP/f.cfg"
run supkit sweep "$TMP/f.cfg" -o "$TMP/fail" --local 1
expect_rc 1 "a failed run: exit 1"
expect_err_contains "00_dense_native_d2_s42 failed: exit 1" "the failure named, with the exit status"
run supkit sweep status "$TMP/fail"
expect_rc 1 "status with a failed run exits 1"
expect_row 00_dense_native_d2_s42 failed "exit 1" "status: failed, exit 1"
if grep -q "max_loss" "$TMP/fail/runs/00_dense_native_d2_s42/train.log"; then ok "the trainer's error is in train.log"
else bad "the trainer's error is in train.log"; fi

# a run interrupted with a checkpoint resumes, bit-identical to the uninterrupted one
r=01_dense_opt_d2_s43
mkdir -p "$TMP/res"
cp "$TMP/s.cfg" "$TMP/res/s.cfg"
mkdir -p "$TMP/res/out/runs/$r"
cp "$TMP/local/runs/$r/config.cfg" "$TMP/res/out/runs/$r/config.cfg"
supkit train --quiet "$TMP/res/out/runs/$r/config.cfg" --stop-after 5 -o "$TMP/res/out/runs/$r" >/dev/null 2>&1
echo "killed" >"$TMP/res/out/runs/$r/train.log"
run supkit sweep "$TMP/res/s.cfg" -o "$TMP/res/out" --local 2
expect_rc 0 "a sweep with an interrupted run"
if grep -q -- "--resume $TMP/res/out/runs/$r" "$TMP/res/out/runs/$r/train.log"; then ok "the interrupted run resumed"
else bad "the interrupted run resumed"; fi
expect_same_file "$TMP/local/runs/$r/model.safetensors" "$TMP/res/out/runs/$r/model.safetensors" "resumed run bit-identical"

# locks: a run whose folder another process holds is running, and not started
sweep_file "$TMP/l.cfg"
sed -i 's/^seeds = .*/seeds = 42/' "$TMP/l.cfg"
hold() { # lock file: a process holding it (its id written in it) in the background; $holder
	mkdir -p "$(dirname "$1")"
	rm -f "$TMP/holder.pid"
	flock -x -o "$1" sh -c 'echo $$ >"$0"; echo $$ >"$1"; exec sleep 60' "$1" "$TMP/holder.pid" &
	for _ in $(seq 1 50); do [[ -s "$TMP/holder.pid" ]] && break; sleep 0.1; done
	holder=$(cat "$TMP/holder.pid")
}
release() { kill "$holder" 2>/dev/null; wait 2>/dev/null; }
hold "$TMP/lk/runs/00_dense_native_d2_s42/.sweep.lock"
run supkit sweep "$TMP/l.cfg" -o "$TMP/lk" --local 2
expect_rc 0 "a sweep with a run held elsewhere"
expect_err_contains "1 running or queued, 1 to start" "the held run is not started"
expect_row 00_dense_native_d2_s42 running "process $holder" "the held run reads as running, with the holder"
expect_row 01_dense_opt_d2_s42 done "val_bpb" "the other run ran"
release
# the trainer's own lock (RUNDIR/.lock holding its process id)
hold "$TMP/lk/runs/00_dense_native_d2_s42/.lock"
run supkit sweep status "$TMP/lk"
expect_row 00_dense_native_d2_s42 running "supkit train, process $holder" "a folder the trainer holds reads as running"
release
run supkit sweep status "$TMP/lk"
expect_row 00_dense_native_d2_s42 pending "not started" "released: pending again"

# GPUs: each slot its own CUDA_VISIBLE_DEVICES (runs not on the CPU only)
sweep_file "$TMP/g.cfg" "steps = 3"
sed -i 's/^backend = cpu$/backend = auto/' "$TMP/g.cfg"
run supkit sweep "$TMP/g.cfg" -o "$TMP/gpu" --local 2 --gpus 5,6
expect_rc 0 "--gpus 5,6"
n5=$(grep -l '^== CUDA_VISIBLE_DEVICES=5$' "$TMP"/gpu/runs/*/train.log | wc -l)
n6=$(grep -l '^== CUDA_VISIBLE_DEVICES=6$' "$TMP"/gpu/runs/*/train.log | wc -l)
if ((n5 >= 1 && n6 >= 1 && n5 + n6 == 4)); then ok "runs get one GPU each from --gpus ($n5 on 5, $n6 on 6)"
else bad "runs get one GPU each from --gpus" "$n5 on 5, $n6 on 6"; fi
if grep -q CUDA_VISIBLE_DEVICES "$TMP"/local/runs/*/train.log; then bad "no GPU for backend = cpu runs"
else ok "no GPU for backend = cpu runs"; fi

# SIGTERM: the running trainers are stopped, their exit recorded, exit 1
sweep_file "$TMP/t.cfg" "steps = 100000" "checkpoint_every = 0"
sed -i 's/^seeds = .*/seeds = 42/; s/^arms = .*/arms = 00/' "$TMP/t.cfg"
supkit sweep "$TMP/t.cfg" -o "$TMP/term" --local 1 >"$TMP/term.out" 2>"$TMP/term.err" &
sw=$!
for _ in $(seq 1 100); do grep -q '^step' "$TMP/term/runs/00_dense_native_d2_s42/train.log" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$sw"
wait "$sw"
rc=$?
errout=$(cat "$TMP/term.err")
expect_rc 1 "a sweep stopped by SIGTERM exits 1"
expect_err_contains "stopping the 1 running run" "it says it stops the running run"
if [[ -s "$TMP/term/runs/00_dense_native_d2_s42/sweep_exit" && ! -e "$TMP/term/runs/00_dense_native_d2_s42/result.json" ]]
then ok "the trainer was stopped, its end recorded ($(cat "$TMP/term/runs/00_dense_native_d2_s42/sweep_exit"))"
else bad "the trainer was stopped, its end recorded"; fi
run supkit sweep status "$TMP/term"
expect_row 00_dense_native_d2_s42 failed "" "the stopped run reads as failed"

# 3. Slurm for real
slurm_skip() { skip "slurm: $1"; finish; exit $?; }
for c in munged mungekey slurmctld slurmd sbatch squeue sinfo scancel flock; do
	command -v "$c" >/dev/null || slurm_skip "no $c (Debian: slurm-wlm, munge)"
done
[[ $(id -u) == 0 ]] || slurm_skip "not root (slurmd runs jobs as their users)"
S=$(mktemp -d /tmp/supkit-slurm.XXXXXX)
chmod 700 "$S"
pids=()
stop_slurm() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$S"
}
trap 'stop_slurm; rm -rf "$TMP"' EXIT
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log"
chmod 700 "$S/munge"
mungekey --create --keyfile="$S/munge/munge.key" >/dev/null 2>&1 ||
	dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$S/munge/munge.key"
munged --foreground --force --key-file="$S/munge/munge.key" --socket="$S/munge/sock" \
	--pid-file="$S/munge/pid" --log-file="$S/log/munged.log" --seed-file="$S/munge/seed" >"$S/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [[ -S "$S/munge/sock" ]] && break; sleep 0.1; done
[[ -S "$S/munge/sock" ]] || slurm_skip "munged did not start: $(tail -n 1 "$S/log/munged.out")"
host=$(hostname -s)
port=$((20000 + RANDOM % 20000))
cat >"$S/slurm.conf" <<EOF
ClusterName=supkittest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/sock
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$(nproc) RealMemory=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$S/slurm.conf"
slurmctld -D -i >"$S/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D >"$S/log/slurmd.out" 2>&1 &
pids+=($!)
idle=
for _ in $(seq 1 100); do
	[[ "$(sinfo -h -o %T 2>/dev/null)" == idle ]] && { idle=1; break; }
	sleep 0.2
done
[[ -n "$idle" ]] || slurm_skip "the node did not come up: $(tail -n 2 "$S/log/slurmctld.out" "$S/log/slurmd.out" | tr '\n' ' ')"
ok "one-node Slurm up ($host, port $port)"

wait_job() { # id: until squeue lists none of its tasks (120 s at most)
	local t
	for t in $(seq 1 600); do
		[[ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]] && return 0
		sleep 0.2
	done
	return 1
}

run supkit sweep "$TMP/s.cfg" -o "$TMP/slurm" --slurm
expect_rc 0 "--slurm submits"
job=$(sed -n 's/^submitted job \([0-9]*\):.*/\1/p' <<<"$out")
if [[ -n "$job" ]]; then ok "sbatch's job id printed ($job)"; else bad "sbatch's job id printed" "$out"; fi
if grep -qx '#SBATCH --array=0-3' "$TMP/slurm/slurm/sweep.sbatch" && grep -q "\"job_id\": \"$job\"" "$TMP/slurm/sweep.json"
then ok "sweep.sbatch has the array, sweep.json the job"; else bad "sweep.sbatch has the array, sweep.json the job"; fi
run supkit sweep status "$TMP/slurm"
expect_rc 0 "status while the job runs"
expect_out_contains "slurm job ${job}_" "status names the Slurm tasks"
if wait_job "$job"; then ok "the array finished"; else bad "the array finished" "still queued after 120 s"; fi
run supkit sweep status "$TMP/slurm"
expect_rc 0 "status after the array"
expect_out_contains "4 runs: 4 done, 0 running, 0 pending, 0 failed" "all four done through Slurm"
same=0
for r in "${RUNS[@]}"; do
	a="$TMP/local/results/$r/result.json" b="$TMP/slurm/results/$r/result.json"
	d=""
	for k in val_bpb heldout_bpb final_loss steps; do [[ "$(num "$a" $k)" == "$(num "$b" $k)" ]] || d+=" $k"; done
	[[ "$(str "$a" config_sha256)" == "$(str "$b" config_sha256)" ]] || d+=" config_sha256"
	if [[ -z "$d" && -n "$(num "$b" val_bpb)" ]]; then same=$((same + 1)); else bad "$r: --slurm and --local agree" "differ:$d"; fi
done
((same == 4)) && ok "--slurm and --local 2 give the same result.json figures (4 runs)"
expect_same_file "$TMP/local/runs/01_dense_opt_d2_s43/model.safetensors" "$TMP/slurm/runs/01_dense_opt_d2_s43/model.safetensors" \
	"the same weights through Slurm"
if ls "$TMP/slurm/slurm/${job}_"*.out >/dev/null 2>&1; then ok "each task's own output in DIR/slurm"; else bad "each task's own output in DIR/slurm"; fi
run supkit sweep "$TMP/s.cfg" -o "$TMP/slurm" --slurm
expect_out_contains "nothing to start: 4 done" "a re-run submits nothing"
run supkit audit stats "$TMP/slurm/results"
expect_rc 0 "audit stats reads the Slurm sweep's results/"

# a held job: its runs are pending (queued), --local leaves them to Slurm, scancel
sweep_file "$TMP/h.cfg"
sed -i 's/^seeds = .*/seeds = 42/' "$TMP/h.cfg"
run supkit sweep "$TMP/h.cfg" -o "$TMP/held" --slurm --sbatch-arg=--hold
expect_rc 0 "--sbatch-arg=--hold passed to sbatch"
hjob=$(sed -n 's/^submitted job \([0-9]*\):.*/\1/p' <<<"$out")
run supkit sweep status "$TMP/held"
expect_row 00_dense_native_d2_s42 pending "slurm job ${hjob}_0 PENDING" "a held task reads as pending, with its job"
run supkit sweep "$TMP/h.cfg" -o "$TMP/held" --local 2
expect_out_contains "nothing to start: 0 done, 2 running or queued" "--local leaves queued runs to Slurm"
scancel "$hjob"
wait_job "$hjob"
run supkit sweep status "$TMP/held"
expect_row 00_dense_native_d2_s42 pending "not started" "cancelled before it started: pending, not started"

# a failing task: failed, with the exit status
run supkit sweep "$TMP/f.cfg" -o "$TMP/sfail" --slurm
fjob=$(sed -n 's/^submitted job \([0-9]*\):.*/\1/p' <<<"$out")
wait_job "$fjob"
run supkit sweep status "$TMP/sfail"
expect_rc 1 "status of a failed Slurm task exits 1"
expect_row 00_dense_native_d2_s42 failed "exit 1" "a failed task reads as failed, exit 1"
# data-parallel training started by Slurm's srun through PMIx: 2 ranks give the
# bits mpirun's 2 ranks give (the same world size, the same rank-ordered sums)
TRAIN=$(command -v supkit-train)
if ! command -v mpirun >/dev/null 2>&1 || ! nm "$TRAIN" 2>/dev/null | grep -q 'MPI_Init'; then
	skip "srun of the data-parallel trainer" "supkit-train built without MPI, or no mpirun"
elif ! srun --mpi=list 2>&1 | grep -q pmix; then
	skip "srun of the data-parallel trainer" "Slurm has no pmix plugin here"
else
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	[[ "${SAN:-}" == 1 ]] && export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
	run srun --mpi=pmix -n 2 "$TRAIN" "$BASE" --set data_dir="$D" --set steps=6 --quiet -o "$TMP/srun2"
	expect_rc 0 "srun --mpi=pmix -n 2 supkit-train finishes"
	w=$(num "$TMP/srun2/result.json" world_size)
	if [[ "$w" == 2 ]]; then ok "srun: result.json world_size 2"; else bad "srun: result.json world_size 2" "'$w' $(head -c 400 <<<"$out")"; fi
	run mpirun --oversubscribe -np 2 "$TRAIN" "$BASE" --set data_dir="$D" --set steps=6 --quiet -o "$TMP/mpirun2"
	expect_rc 0 "mpirun -np 2 supkit-train finishes"
	expect_same_file "$TMP/srun2/model.safetensors" "$TMP/mpirun2/model.safetensors" "srun's 2 ranks give mpirun's weights"
	expect_same_file "$TMP/srun2/optim.bin" "$TMP/mpirun2/optim.bin" "srun's 2 ranks give mpirun's optimizer state"
fi
finish

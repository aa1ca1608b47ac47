/* sweep.h: supkit sweep, a grid of training runs (arms x depths x seeds)
 * expanded from one sweep file and run by an executor that already exists:
 * this machine's process table (--local N) or a Slurm job array (--slurm).
 * The runs are `supkit-train` child processes; nothing here links the model.
 *
 * Sweep file: the config syntax (trainer/config.h: `key = value` lines, `#`
 * comments, later lines win), read by config_scan_text. Its own keys:
 *   base = CONFIG          the config file every run starts from (default:
 *                          the built-in defaults, the benchmark baseline)
 *   arms = NAME|FILE ...   arms: a name of the configs folder's arms
 *                          (arms/d8/NAME.cfg, short names as supkit train
 *                          --arm takes them) or a config file (a word
 *                          holding '/' or ending in ".cfg")
 *   seeds = N ...          seeds
 *   depths = N ...         depths (optional; without it each run keeps the
 *                          depth its config resolves to)
 *   slurm_partition, slurm_time, slurm_gres, slurm_cpus, slurm_mem,
 *   slurm_throttle         the Slurm job's resources (sweep_slurm below)
 * Every other key is a config key, an override for every run, checked (name
 * and value) when the file is read. arm and seed cannot be overridden (arms
 * and seeds set them), nor depth when depths is given.
 *
 * A run's config: base; then the arm's switches (a named arm: the keys where
 * arms/d8/NAME.cfg differs from the configs folder's baseline.cfg, as
 * supkit train --arm NAME CONFIG applies them; an arm file: the keys it
 * sets to other values than the defaults); arm = the arm's name (a named
 * arm's full name; a file's own arm key, else its file name without .cfg);
 * the overrides; depth; seed; then config_validate. The arms' switches do
 * not depend on depth (configs/arms/d6/NAME.cfg is d8/NAME.cfg with
 * depth = 6), so a depth is the key depth set over them. Relative paths
 * (base, arm files) are taken from the sweep file's folder, the sweep's
 * working folder, where every run starts (so a relative data_dir or
 * init_from is too).
 *
 * A run's name: ARM_dDEPTH_sSEED; the order: arms, then depths, then
 * seeds, as the file lists them.
 *
 * Output folder DIR:
 *   sweep.json            the expanded runs (name, arm, depth, seed,
 *                         backend, config_sha256), the working folder, the
 *                         Slurm jobs submitted (id, runs in array order)
 *   runs/NAME/            the run folder: config.cfg (the resolved config,
 *                         written before the run), train.log (the
 *                         trainer's output, appended by every attempt),
 *                         sweep_exit (the last attempt's exit status),
 *                         .sweep.lock (held by the process that runs it)
 *                         and the trainer's files (supkit-train(1))
 *   results/NAME/         a copy of a finished run's result.json,
 *                         curve.jsonl and config.cfg: what supkit audit
 *                         stats and supkit pack read
 *   slurm/sweep.sbatch    the job array script of the last submission,
 *                         slurm/JOB_TASK.out its tasks' own output
 *   .lock                 held while a supkit sweep command works in DIR
 *
 * Leaves out: a scheduler or transport of its own; MPI inside a run (the
 * trainer's business).
 */
#ifndef SUPKIT_SWEEP_H
#define SUPKIT_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "lib/err.h"

#define SWEEP_NAME_MAX 96

struct sweep_override {
	char *key, *value;
	int line;
};

/* Slurm resources; empty / 0 = not given. Values are checked when read:
 * they go into a shell script. */
struct sweep_slurm {
	char partition[128];  /* slurm_partition: names, commas */
	char time[32];        /* slurm_time: minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S */
	char gres[128];       /* slurm_gres: "none" or name[:type][:count],... */
	char mem[32];         /* slurm_mem: a number with an optional K, M, G or T */
	int cpus;             /* slurm_cpus: cpus a task */
	int throttle;         /* slurm_throttle: array tasks at once (the %M) */
};

struct sweep_run {
	char name[SWEEP_NAME_MAX];  /* ARM_dDEPTH_sSEED */
	char arm[64];
	int depth;
	uint64_t seed;
	int backend;                /* enum cfg_backend */
	char *config_text;          /* config_print of the resolved config */
	char sha[65];               /* its SHA-256: the run's config_sha256 */
};

struct sweep {
	char *path;          /* the sweep file as given */
	char *workdir;       /* its folder, absolute: where runs start */
	char *base;          /* base as written, or NULL */
	int base_line;
	char **arms;         /* as written */
	int n_arms, arms_line;
	uint64_t *seeds;
	int n_seeds, seeds_line;
	int *depths;
	int n_depths, depths_line;
	struct sweep_override *over;
	int n_over;
	struct sweep_slurm slurm;
	struct sweep_run *runs;
	int n_runs;
};

/* Read and check the sweep file at path into s (zeroed here): syntax, the
 * sweep keys' values, every other key a config key with a valid value.
 * 0, or -1 with e set (EXIT_USAGE "FILE:LINE: ...", EXIT_SYS when the file
 * cannot be read). sweep_free releases s either way. */
int sweep_parse(struct sweep *s, const char *path, struct err *e);
/* The same over text (len bytes; name for messages, workdir the folder
 * relative paths are taken from). */
int sweep_parse_text(struct sweep *s, const char *text, size_t len, const char *name, const char *workdir,
		     struct err *e);
/* Resolve every run's config (see above) into s->runs, all of them before
 * returning: 0, or -1 with e naming the run, file and line. configs_env
 * ($SUPKIT_CONFIGS) and exe (the program's path) find the configs folder
 * (trainer/arm_file.h), asked only when an arm is a name. */
int sweep_expand(struct sweep *s, const char *configs_env, const char *exe, struct err *e);
void sweep_free(struct sweep *s);

/* ---- run states (sweep/state.c) ---- */

enum run_state { RUN_PENDING, RUN_RUNNING, RUN_DONE, RUN_FAILED };
const char *run_state_name(enum run_state s);   /* "pending", ... */

/* What Slurm says of a run (squeue, then sacct): state empty when nothing. */
struct slurm_task {
	char job[32];      /* array job id */
	int index;         /* array index */
	char state[32];    /* PENDING, RUNNING, COMPLETED, FAILED, ... */
	int queued;        /* 1: from squeue (still in the queue) */
};

struct run_status {
	enum run_state state;
	char detail[256];
	double val_bpb;    /* done: from result.json (NaN when absent) */
	int resumable;     /* a checkpoint is there */
};

/* The state of run r in run folder rundir, from its files and the locks:
 *   done     result.json with config_sha256 = r->sha
 *   running  .sweep.lock or the trainer's .lock held by a live process,
 *            or (slurm, when given) a task in the queue that is running
 *   pending  queued (slurm) or never started (no train.log)
 *   failed   started, not running, no result: the detail says why (exit
 *            status, Slurm's state, a checkpoint to resume from, a
 *            result.json of another config).
 * slurm may be NULL. Never changes a file. */
void sweep_run_state(const char *rundir, const char *sha, const struct slurm_task *slurm,
		     struct run_status *st);
/* 1 when the lock file path is locked (flock) by another open file; 0 when
 * free or absent. With pid_guard, only when the process id written in the
 * file is alive on this machine (a free lock is then never touched, so
 * probing never races a process about to take it). */
int sweep_lock_held(const char *path, int pid_guard);
/* Take the exclusive flock of path (created when missing) and write this
 * process's id into it, retrying for about a second while another holds
 * it (a status probe holds it for microseconds). 0 with *fd (close it to
 * release), or -1 with e set: EXIT_SYS, "'what' is in use by process N"
 * when held. */
int sweep_lock(const char *path, const char *what, int *fd, struct err *e);

/* Copy rundir's result.json, curve.jsonl and config.cfg into
 * results_dir/name (a temporary folder renamed into place; an existing copy
 * with another result.json is replaced, one with the same left alone).
 * 0, or -1 with e set (EXIT_SYS). */
int sweep_collect(const char *rundir, const char *results_dir, const char *name, struct err *e);

/* ---- Slurm (sweep/slurm.c) ---- */

/* The job array script for the runs names[0..n-1] of the sweep in out_dir
 * (absolute), run by the program sweep_exe (absolute): one task a run,
 * `supkit-sweep task OUT_DIR NAME`; its text depends on nothing else (no
 * date), so the same sweep gives the same bytes. gres: the --gres value or
 * "" for none. NULL with e set (EXIT_USAGE) when a path holds a character
 * that sbatch or the shell would take apart (white space, quotes, '%',
 * '\\', '$', '`', control characters). Caller frees. */
char *sweep_sbatch_script(const struct sweep *s, const char *out_dir, const char *sweep_exe,
			  const char *const *names, int n, const char *gres, struct err *e);
/* The --gres of the job: slurm_gres when given ("none": ""), else "gpu:1"
 * unless every run has backend = cpu. */
const char *sweep_gres(const struct sweep *s);

/* Parse squeue -h -r -o '%F|%K|%T' output (text, NUL-terminated) for job;
 * calls fn(index, state) for every task line of that job (a range
 * "2-5%2" or "1,3" calls it for each index). */
typedef void (*slurm_task_fn)(int index, const char *state, void *ctx);
void slurm_parse_squeue(const char *text, const char *job, slurm_task_fn fn, void *ctx);
/* Parse sacct -n -P -X -o JobID,State output: lines "JOB_INDEX|STATE"
 * (a "JOB_[2-5%2]" range for pending ones; "CANCELLED by 0" read as
 * CANCELLED). */
void slurm_parse_sacct(const char *text, const char *job, slurm_task_fn fn, void *ctx);
/* The job id of sbatch --parsable's output ("123" or "123;cluster"), into
 * id (n bytes): 0, or -1 when it holds none. */
int slurm_parse_job_id(const char *text, char *id, size_t n);

/* Run argv (argv[0] found on PATH) with stdin from /dev/null, its stdout
 * into *out (fresh, NUL-terminated, at most 16 MiB kept) and the first line
 * of its stderr into err_line (n bytes). Returns the wait status, or -1
 * with e set when it could not be started (EXIT_SYS). */
int sweep_capture(char *const argv[], char **out, char *err_line, size_t n, struct err *e);

/* ---- running (sweep/exec.c) ---- */

/* How to start the trainer: train_exe (absolute, or a name found on PATH),
 * the working folder. */
struct sweep_exec {
	const char *train_exe;
	const char *workdir;
	const char *gpu;      /* CUDA_VISIBLE_DEVICES for the child, NULL: as inherited */
};

/* Start one attempt of the run in rundir (its config.cfg written): with
 * rundir's .sweep.lock taken (lock_fd, kept by the caller until the
 * attempt is over), the previous sweep_exit removed, a header line
 * appended to rundir/train.log, then supkit-train forked with stdout and
 * stderr appended to train.log: `--resume RUNDIR` when a checkpoint is
 * there, else `RUNDIR/config.cfg -o RUNDIR`. *pid the child. 0, or -1 with
 * e set (EXIT_SYS). */
int sweep_start(const struct sweep_exec *x, const char *rundir, pid_t *pid, struct err *e);
/* Record an attempt's end: wait status into rundir/sweep_exit ("exit N" or
 * "signal N"), a closing line in train.log. Returns the exit status the
 * attempt stands for (the trainer's, 128 + N for a signal). */
int sweep_finish(const char *rundir, int wstatus);

/* ---- the sweep's folder (sweep/runner.c) ---- */

/* One run as DIR/sweep.json records it, with what is known of it now. */
struct sweep_entry {
	char name[SWEEP_NAME_MAX];
	char sha[65];
	int backend;                /* enum cfg_backend */
	struct slurm_task slurm;    /* its newest Slurm task, if any */
	struct run_status st;
};

/* DIR/sweep.json read: the runs, the working folder (fresh), the jobs (a
 * cJSON array, fresh; caller deletes). -1 with e set: EXIT_USAGE for a
 * missing or malformed file (naming it), EXIT_SYS when unreadable. */
struct cJSON;
int sweep_json_read(const char *dir, struct sweep_entry **runs, int *n, char **workdir, struct cJSON **jobs,
		    struct err *e);
/* Write DIR/sweep.json for s (atomically), with jobs (may be NULL). */
int sweep_json_write(const char *dir, const struct sweep *s, const struct cJSON *jobs, struct err *e);
/* The entries of s's runs (fresh array of s->n_runs). */
struct sweep_entry *sweep_entries(const struct sweep *s);

/* Fill each entry's slurm task from squeue (then sacct, for tasks that
 * have left the queue) for the jobs of the jobs array; a run's newest job
 * counts. No squeue on PATH, or one that knows nothing of a job: nothing
 * filled. Runs whose result.json exists are not asked about. */
void sweep_query_slurm(const char *dir, struct sweep_entry *runs, int n, const struct cJSON *jobs);
/* Every entry's state (sweep_run_state on DIR/runs/NAME). */
void sweep_states(const char *dir, struct sweep_entry *runs, int n);
/* The table (RUN STATE DETAIL, then "N runs: ..."), or with json one
 * object; to f. Returns the number of failed runs. */
int sweep_report(FILE *f, const struct sweep_entry *runs, int n, int json);

/* Copy every done run into DIR/results (sweep_collect), each under its
 * run's .sweep.lock (a run whose lock is held is left to its holder).
 * 0, or -1 with e set at the first failure. */
int sweep_collect_done(const char *dir, const struct sweep_entry *runs, int n, struct err *e);

/* The --local executor: start the runs idx[0..m-1] of runs (their folders
 * DIR/runs/NAME with config.cfg), at most slots at a time, each under its
 * .sweep.lock (a run held by another process is skipped), with GPU
 * gpus[slot % n_gpus] for runs whose backend is not cpu (n_gpus 0: none);
 * a finished run copied to results/. Progress on stderr unless quiet.
 * SIGINT and SIGTERM stop new starts and go on to the running children.
 * Returns the number of runs that failed (-1 when interrupted). */
int sweep_local(const char *dir, const struct sweep_exec *x, const struct sweep_entry *runs, const int *idx,
		int m, int slots, char **gpus, int n_gpus, int quiet);
/* The Slurm task of run name: find it in DIR/sweep.json, run one attempt
 * (unless it is done or running elsewhere: a note, 0), copy its result.
 * Returns the exit status (the trainer's; 2 or 4 with a message when the
 * sweep folder or the run is wrong). */
int sweep_task(const char *dir, const char *train_exe, const char *name);

#endif

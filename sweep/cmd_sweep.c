/* cmd_sweep.c: supkit-sweep, thin: a sweep file's runs on this machine
 * (--local N) or as a Slurm job array (--slurm); `status` lists a sweep
 * folder's runs; `task` is what each array task runs. The library is
 * sweep/sweep.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/sha256.h"
#include "sweep/sweep.h"
#include "trainer/arm_file.h"
#include "trainer/config.h"

enum { O_LOCAL = 256, O_SLURM, O_SBATCH_ARG, O_GPUS, O_DRY_RUN, O_JSON };

static const struct cli_opt opts[] = {
	{"output", 'o', "DIR", "the sweep folder: runs/, results/, sweep.json (required)"},
	{"local", O_LOCAL, "N", "run the runs here, N at a time (one GPU each where there are GPUs)"},
	{"slurm", O_SLURM, NULL, "submit the runs as one Slurm job array (sbatch)"},
	{"sbatch-arg", O_SBATCH_ARG, "ARG", "pass ARG to sbatch (repeatable), e.g. --sbatch-arg=--account=lab"},
	{"gpus", O_GPUS, "LIST", "--local: the GPUs to use, comma-separated, or none (default: "
				  "CUDA_VISIBLE_DEVICES, else every NVIDIA GPU)"},
	{"dry-run", O_DRY_RUN, NULL, "check and list the runs (with --slurm print the job script); write nothing"},
	{"quiet", 'q', NULL, "no progress lines"},
	{NULL, 0, NULL, NULL},
};

static const char usage[] =
	"usage: supkit sweep [options] SWEEP.cfg -o DIR (--local N | --slurm)\n"
	"       supkit sweep status [--json] DIR\n"
	"       supkit sweep task DIR NAME\n"
	"Run a grid of training runs (arms x depths x seeds) from a sweep file (man supkit-sweep).\n"
	"\n"
	"subcommands:\n"
	"  status  list the runs of a sweep folder: pending, running, done, failed\n"
	"  task    run one run of a sweep folder (what each Slurm array task runs)\n";

struct args {
	const char *out;
	long local;
	int slurm, dry_run, quiet;
	char **sbatch_args;
	int n_sbatch;
	const char *gpus;
};

static int on_opt(int key, const char *arg, void *ctx, struct err *e)
{
	struct args *a = ctx;
	int64_t v;
	switch (key) {
	case 'o': a->out = arg; return 0;
	case O_LOCAL:
		if (cli_parse_i64(arg, 1, 4096, &v, "--local", e) < 0)
			return -1;
		a->local = (long)v;
		return 0;
	case O_SLURM: a->slurm = 1; return 0;
	case O_SBATCH_ARG:
		a->sbatch_args = xrealloc(a->sbatch_args, (size_t)(a->n_sbatch + 1) * sizeof *a->sbatch_args);
		a->sbatch_args[a->n_sbatch++] = (char *)arg;
		return 0;
	case O_GPUS: a->gpus = arg; return 0;
	case O_DRY_RUN: a->dry_run = 1; return 0;
	case 'q': a->quiet = 1; return 0;
	}
	return err_set(e, EXIT_USAGE, "unhandled option");
}

/* the GPUs --local hands out: --gpus, else CUDA_VISIBLE_DEVICES, else the
 * driver's list (/proc/driver/nvidia/gpus: one folder a GPU) */
static char **gpu_list(const char *opt, int *n)
{
	*n = 0;
	char **g = NULL;
	const char *env = getenv("CUDA_VISIBLE_DEVICES");
	const char *list = opt ? opt : env;
	if (list) {
		if (!strcmp(list, "none"))
			return NULL;
		char *t = xstrdup(list), *save = NULL;
		for (char *w = strtok_r(t, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
			while (*w == ' ')
				w++;
			if (!*w)
				continue;
			g = xrealloc(g, (size_t)(*n + 1) * sizeof *g);
			g[(*n)++] = xstrdup(w);
		}
		free(t);
		return g;
	}
	DIR *d = opendir("/proc/driver/nvidia/gpus");
	if (!d)
		return NULL;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			g = xrealloc(g, (size_t)(*n + 1) * sizeof *g);
			g[*n] = xasprintf("%d", *n);
			(*n)++;
		}
	closedir(d);
	return g;
}

/* supkit-train beside this program, else the name (found on PATH) */
static char *train_exe(const char *self)
{
	if (self) {
		char *dir = path_dirname(self);
		char *p = path_join(dir, "supkit-train");
		free(dir);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return xstrdup("supkit-train");
}

static char *run_dir(const char *dir, const char *name)
{
	char *runs = path_join(dir, "runs");
	char *p = path_join(runs, name);
	free(runs);
	return p;
}

/* Each run's folder and config.cfg: a config.cfg already there must be the
 * sweep's (checked for all runs before any is written). */
static int write_configs(const char *dir, const struct sweep *s, struct err *e)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < s->n_runs; i++) {
			const struct sweep_run *r = &s->runs[i];
			char *rd = run_dir(dir, r->name);
			char *cp = path_join(rd, "config.cfg");
			char *text = NULL;
			size_t len = 0;
			struct err re;
			int have = file_read_all(cp, 1u << 20, &text, &len, &re) == 0;
			int rc = 0;
			if (pass == 0 && have && (len != strlen(r->config_text) || memcmp(text, r->config_text, len))) {
				char hex[65];
				sha256_buf_hex(text, len, hex);
				rc = err_set(e, EXIT_USAGE,
					     "'%s' holds another config than the sweep's for run %s (config_sha256 %.12s, the "
					     "sweep's %.12s): remove the run folder or use another -o", cp, r->name, hex, r->sha);
			} else if (pass == 1 && !have) {
				rc = dir_make_all(rd, e);
				if (rc == 0)
					rc = file_write_atomic(cp, r->config_text, strlen(r->config_text), e);
			}
			free(text);
			free(rd);
			free(cp);
			if (rc)
				return -1;
		}
	return 0;
}

static int submit(const char *dir, const struct sweep *s, struct sweep_entry *runs, cJSON *jobs, const int *idx,
		  int m, const char *self, const struct args *a, struct err *e)
{
	const char **names = xcalloc((size_t)m, sizeof *names);
	for (int i = 0; i < m; i++)
		names[i] = runs[idx[i]].name;
	int rc = -1;
	char *slurm_dir = path_join(dir, "slurm");
	char *sp = path_join(slurm_dir, "sweep.sbatch");
	char *out = NULL;
	char *script = sweep_sbatch_script(s, dir, self, names, m, sweep_gres(s), e);
	if (!script)
		goto done;
	if (a->dry_run) {
		fputs(script, stdout);
		rc = 0;
		goto done;
	}
	if (dir_make_all(slurm_dir, e) != 0 || file_write_atomic(sp, script, strlen(script), e) != 0 ||
	    sweep_json_write(dir, s, jobs, e) != 0)
		goto done;
	char **argv = xcalloc((size_t)a->n_sbatch + 4, sizeof *argv);
	int k = 0;
	argv[k++] = "sbatch";
	argv[k++] = "--parsable";
	for (int i = 0; i < a->n_sbatch; i++)
		argv[k++] = a->sbatch_args[i];
	argv[k++] = sp;
	argv[k] = NULL;
	char errl[512];
	int ws = sweep_capture(argv, &out, errl, sizeof errl, e);
	free(argv);
	if (ws < 0) {
		err_prefix(e, "cannot submit (is this a Slurm login node?)");
		goto done;
	}
	char id[32];
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		err_set(e, EXIT_SYS, "sbatch refused '%s' (exit %d): %s", sp, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1,
			errl[0] ? errl : "no message");
		goto done;
	}
	if (slurm_parse_job_id(out, id, sizeof id) != 0) {
		err_set(e, EXIT_SYS, "sbatch printed no job id: '%.100s'", out);
		goto done;
	}
	cJSON *job = cJSON_CreateObject();
	cJSON_AddStringToObject(job, "job_id", id);
	cJSON *jr = cJSON_AddArrayToObject(job, "runs");
	for (int i = 0; i < m; i++)
		cJSON_AddItemToArray(jr, cJSON_CreateString(names[i]));
	cJSON *sa = cJSON_AddArrayToObject(job, "sbatch_args");
	for (int i = 0; i < a->n_sbatch; i++)
		cJSON_AddItemToArray(sa, cJSON_CreateString(a->sbatch_args[i]));
	char hex[65];
	sha256_buf_hex(script, strlen(script), hex);
	cJSON_AddStringToObject(job, "script_sha256", hex);
	cJSON_AddItemToArray(jobs, job);
	if (sweep_json_write(dir, s, jobs, e) != 0) {
		err_prefix(e, "job %s submitted, but not recorded (cancel it with scancel %s)", id, id);
		goto done;
	}
	printf("submitted job %s: %d run%s (array 0-%d", id, m, m == 1 ? "" : "s", m - 1);
	if (s->slurm.throttle)
		printf(", at most %d at once", s->slurm.throttle);
	printf("), script %s\n", sp);
	rc = 0;
done:
	free(out);
	free(script);
	free(sp);
	free(slurm_dir);
	free(names);
	return rc;
}

static int cmd_run(int argc, char **argv)
{
	struct args a = {0};
	struct err e;
	err_clear(&e);
	int first;
	if (cli_parse(argc, argv, opts, usage, on_opt, &a, &first, &e) < 0)
		cli_usage_error("%s", e.msg);
	if (first + 1 != argc)
		cli_usage_error("need exactly one SWEEP.cfg");
	if (!a.out)
		cli_usage_error("need -o DIR");
	if (a.local && a.slurm)
		cli_usage_error("--local and --slurm cannot be combined");
	if (!a.local && !a.slurm && !a.dry_run)
		cli_usage_error("need --local N or --slurm (or --dry-run)");
	if (a.n_sbatch && !a.slurm)
		cli_usage_error("--sbatch-arg needs --slurm");
	if (a.gpus && !a.local)
		cli_usage_error("--gpus needs --local N");
	if (a.gpus && !*a.gpus)
		cli_usage_error("--gpus: an empty list (give none for no GPU)");

	struct sweep s;
	char *self = arm_self_exe();
	char *train = train_exe(self);
	char *dir = NULL;
	struct sweep_entry *runs = NULL;
	cJSON *jobs = NULL;
	int *idx = NULL;
	char **gpus = NULL;
	int n_gpus = 0, lock_fd = -1, status = EXIT_OK;
	if (sweep_parse(&s, argv[first], &e) != 0 || sweep_expand(&s, getenv("SUPKIT_CONFIGS"), self, &e) != 0)
		goto fail;
	if (a.dry_run) {
		dir = xstrdup(a.out);
	} else {
		if (dir_make_all(a.out, &e) != 0)
			goto fail;
		char real[4096];
		if (!realpath(a.out, real)) {
			err_errno(&e, EXIT_SYS, "cannot resolve '%s'", a.out);
			goto fail;
		}
		dir = xstrdup(real);
		char *lk = path_join(dir, ".lock");
		int r = sweep_lock(lk, dir, &lock_fd, &e);
		free(lk);
		if (r != 0 || write_configs(dir, &s, &e) != 0)
			goto fail;
	}
	runs = sweep_entries(&s);
	/* the jobs of earlier submissions: their queued tasks are not started again */
	{
		char *jp = path_join(dir, "sweep.json");
		struct stat st;
		if (stat(jp, &st) == 0) {
			struct sweep_entry *old;
			int n_old;
			char *wd;
			if (sweep_json_read(dir, &old, &n_old, &wd, &jobs, &e) != 0) {
				free(jp);
				goto fail;
			}
			free(old);
			free(wd);
		} else {
			jobs = cJSON_CreateArray();
		}
		free(jp);
	}
	sweep_query_slurm(dir, runs, s.n_runs, jobs);
	sweep_states(dir, runs, s.n_runs);
	if (!a.dry_run && sweep_collect_done(dir, runs, s.n_runs, &e) != 0)
		goto fail;
	idx = xcalloc((size_t)s.n_runs, sizeof *idx);
	int m = 0, queued = 0;
	for (int i = 0; i < s.n_runs; i++) {
		const struct run_status *st = &runs[i].st;
		if (st->state == RUN_FAILED || (st->state == RUN_PENDING && !runs[i].slurm.queued))
			idx[m++] = i;
		else if (st->state != RUN_DONE)
			queued++;
	}
	if (!a.quiet)
		fprintf(stderr, "supkit-sweep: %d run%s: %d done, %d running or queued, %d to start\n", s.n_runs,
			s.n_runs == 1 ? "" : "s", s.n_runs - m - queued, queued, m);
	if (a.dry_run && !a.slurm) {
		sweep_report(stdout, runs, s.n_runs, 0);
		goto done;
	}
	if (m == 0) {
		if (!a.dry_run)
			sweep_json_write(dir, &s, jobs, &e);
		printf("nothing to start: %d done, %d running or queued\n", s.n_runs - queued, queued);
		goto done;
	}
	if (a.slurm) {
		if (submit(dir, &s, runs, jobs, idx, m, self ? self : "supkit-sweep", &a, &e) != 0)
			goto fail;
		goto done;
	}
	if (sweep_json_write(dir, &s, jobs, &e) != 0)
		goto fail;
	gpus = gpu_list(a.gpus, &n_gpus);
	int any_gpu_run = 0;
	for (int i = 0; i < m; i++)
		any_gpu_run |= s.runs[idx[i]].backend != BACKEND_CPU;
	if (n_gpus && any_gpu_run && a.local > n_gpus && !a.quiet)
		fprintf(stderr, "supkit-sweep: --local %ld with %d GPU%s: runs share GPUs\n", a.local, n_gpus,
			n_gpus == 1 ? "" : "s");
	struct sweep_exec x = {train, s.workdir, NULL};
	int failed = sweep_local(dir, &x, runs, idx, m, (int)a.local, gpus, n_gpus, a.quiet);
	sweep_query_slurm(dir, runs, s.n_runs, jobs);
	sweep_states(dir, runs, s.n_runs);
	int nf = sweep_report(stdout, runs, s.n_runs, 0);
	if (failed < 0) {
		fprintf(stderr, "supkit-sweep: stopped by a signal\n");
		status = EXIT_CHECK;
	} else if (failed > 0 || nf > 0) {
		status = EXIT_CHECK;
	}
	goto done;
fail:
	err_print(NULL, &e);
	status = e.code ? e.code : EXIT_SYS;
done:
	for (int i = 0; i < n_gpus; i++)
		free(gpus[i]);
	free(gpus);
	if (lock_fd >= 0)
		close(lock_fd);
	cJSON_Delete(jobs);
	free(idx);
	free(runs);
	free(dir);
	free(train);
	free(self);
	free(a.sbatch_args);
	sweep_free(&s);
	return status;
}

static int on_status_opt(int key, const char *arg, void *ctx, struct err *e)
{
	(void)arg;
	if (key == O_JSON) {
		*(int *)ctx = 1;
		return 0;
	}
	return err_set(e, EXIT_USAGE, "unhandled option");
}

static int cmd_status(int argc, char **argv)
{
	static const struct cli_opt sopts[] = {
		{"json", O_JSON, NULL, "print one JSON object"},
		{NULL, 0, NULL, NULL},
	};
	static const char susage[] =
		"usage: supkit sweep status [--json] DIR\n"
		"List the runs of the sweep folder DIR: pending, running, done or failed, from the run folders,\n"
		"their locks and (where the sweep was submitted) squeue and sacct.";
	cli_set_prog("supkit-sweep status");
	int json = 0, first;
	struct err e;
	err_clear(&e);
	if (cli_parse(argc, argv, sopts, susage, on_status_opt, &json, &first, &e) < 0)
		cli_usage_error("%s", e.msg);
	if (first + 1 != argc)
		cli_usage_error("need exactly one DIR");
	const char *dir = argv[first];
	struct sweep_entry *runs;
	int n;
	char *wd;
	cJSON *jobs;
	if (sweep_json_read(dir, &runs, &n, &wd, &jobs, &e) != 0)
		return err_report(&e);
	sweep_query_slurm(dir, runs, n, jobs);
	sweep_states(dir, runs, n);
	int failed = sweep_report(stdout, runs, n, json);
	free(runs);
	free(wd);
	cJSON_Delete(jobs);
	return failed ? EXIT_CHECK : EXIT_OK;
}

static int cmd_task(int argc, char **argv)
{
	static const struct cli_opt topts[] = {{NULL, 0, NULL, NULL}};
	static const char tusage[] =
		"usage: supkit sweep task DIR NAME\n"
		"Run the run NAME of the sweep folder DIR once (resumed from its checkpoint when it has one),\n"
		"unless it is done or running elsewhere: what each task of a sweep's Slurm job array runs.";
	cli_set_prog("supkit-sweep task");
	int first;
	struct err e;
	err_clear(&e);
	if (cli_parse(argc, argv, topts, tusage, NULL, NULL, &first, &e) < 0)
		cli_usage_error("%s", e.msg);
	if (first + 2 != argc)
		cli_usage_error("need DIR and NAME");
	char *self = arm_self_exe();
	char *train = train_exe(self);
	int rc = sweep_task(argv[first], train, argv[first + 1]);
	free(train);
	free(self);
	return rc;
}

int main(int argc, char **argv)
{
	cli_set_prog("supkit-sweep");
	/* --version first, as in `supkit-sweep [status|task] --version` */
	int sub = argc >= 2 && (!strcmp(argv[1], "status") || !strcmp(argv[1], "task"));
	if (argc >= 2 + sub && !strcmp(argv[1 + sub], "--version")) {
		printf("supkit-sweep %s\n", SUPKIT_VERSION);
		return EXIT_OK;
	}
	if (argc >= 2 && !strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "task"))
		return cmd_task(argc - 1, argv + 1);
	return cmd_run(argc, argv);
}

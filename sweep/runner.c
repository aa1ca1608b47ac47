/* runner.c: the sweep's folder (sweep.h): sweep.json, the states of its
 * runs (files, locks, squeue and sacct), the report, the results/ copies,
 * the --local process pool and the Slurm task.
 */
#define _GNU_SOURCE
#include "sweep/sweep.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"
#include "lib/sha256.h"
#include "trainer/config.h"

static const char *const backend_words[] = {"auto", "cpu", "cuda", NULL};

static char *run_dir(const char *dir, const char *name)
{
	char *runs = path_join(dir, "runs");
	char *p = path_join(runs, name);
	free(runs);
	return p;
}

/* ---- sweep.json ---- */

int sweep_json_write(const char *dir, const struct sweep *s, const cJSON *jobs, struct err *e)
{
	cJSON *j = cJSON_CreateObject();
	char real[4096];
	const char *sp = realpath(s->path, real) ? real : s->path;
	cJSON_AddStringToObject(j, "sweep", sp);
	cJSON_AddStringToObject(j, "workdir", s->workdir);
	cJSON *runs = cJSON_AddArrayToObject(j, "runs");
	for (int i = 0; i < s->n_runs; i++) {
		const struct sweep_run *r = &s->runs[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", r->name);
		cJSON_AddStringToObject(o, "arm", r->arm);
		cJSON_AddNumberToObject(o, "depth", r->depth);
		cJSON_AddNumberToObject(o, "seed", (double)r->seed);
		cJSON_AddStringToObject(o, "backend", backend_words[r->backend]);
		cJSON_AddStringToObject(o, "config_sha256", r->sha);
		cJSON_AddItemToArray(runs, o);
	}
	cJSON_AddItemToObject(j, "jobs", jobs ? cJSON_Duplicate(jobs, 1) : cJSON_CreateArray());
	char *p = path_join(dir, "sweep.json");
	int rc = json_write_file(p, j, e);
	free(p);
	cJSON_Delete(j);
	return rc;
}

struct sweep_entry *sweep_entries(const struct sweep *s)
{
	struct sweep_entry *r = xcalloc((size_t)(s->n_runs ? s->n_runs : 1), sizeof *r);
	for (int i = 0; i < s->n_runs; i++) {
		snprintf(r[i].name, sizeof r[i].name, "%s", s->runs[i].name);
		snprintf(r[i].sha, sizeof r[i].sha, "%s", s->runs[i].sha);
		r[i].backend = s->runs[i].backend;
	}
	return r;
}

static int plain_run_name(const char *s)
{
	if (!*s || *s == '.' || strlen(s) >= SWEEP_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-' || *s == '.'))
			return 0;
	return 1;
}

int sweep_json_read(const char *dir, struct sweep_entry **out, int *n, char **workdir, cJSON **jobs_out,
		    struct err *e)
{
	*out = NULL;
	*n = 0;
	*workdir = NULL;
	*jobs_out = NULL;
	char *p = path_join(dir, "sweep.json");
	struct stat st;
	if (stat(p, &st) != 0) {
		err_set(e, EXIT_USAGE, "'%s' is not a sweep folder: no '%s'", dir, p);
		free(p);
		return -1;
	}
	cJSON *j = json_read_file(p, 64u << 20, e);
	if (!j) {
		free(p);
		return -1;
	}
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
	const cJSON *wd = cJSON_GetObjectItemCaseSensitive(j, "workdir");
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(j, "jobs");
	int bad = !cJSON_IsArray(runs) || !cJSON_IsString(wd) || (jobs && !cJSON_IsArray(jobs));
	int m = bad ? 0 : cJSON_GetArraySize(runs);
	struct sweep_entry *r = xcalloc((size_t)(m ? m : 1), sizeof *r);
	for (int i = 0; !bad && i < m; i++) {
		const cJSON *o = cJSON_GetArrayItem(runs, i);
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
		const cJSON *sh = cJSON_GetObjectItemCaseSensitive(o, "config_sha256");
		const cJSON *be = cJSON_GetObjectItemCaseSensitive(o, "backend");
		if (!cJSON_IsString(nm) || !plain_run_name(nm->valuestring) || !cJSON_IsString(sh) ||
		    !sha256_hex_valid(sh->valuestring) || !cJSON_IsString(be)) {
			err_set(e, EXIT_USAGE, "'%s': runs[%d] is not a run (name, config_sha256, backend)", p, i);
			bad = 2;
			break;
		}
		snprintf(r[i].name, sizeof r[i].name, "%s", nm->valuestring);
		snprintf(r[i].sha, sizeof r[i].sha, "%s", sh->valuestring);
		r[i].backend = BACKEND_AUTO;
		for (int k = 0; backend_words[k]; k++)
			if (!strcmp(be->valuestring, backend_words[k]))
				r[i].backend = k;
	}
	if (bad) {
		if (bad == 1)
			err_set(e, EXIT_USAGE, "'%s' is not a sweep record (runs, workdir, jobs)", p);
		free(r);
		cJSON_Delete(j);
		free(p);
		return -1;
	}
	*out = r;
	*n = m;
	*workdir = xstrdup(wd->valuestring);
	*jobs_out = jobs ? cJSON_Duplicate(jobs, 1) : cJSON_CreateArray();
	cJSON_Delete(j);
	free(p);
	return 0;
}

/* ---- Slurm's view ---- */

struct task_ctx {
	struct sweep_entry *runs;
	int n;
	const char *job;
	const cJSON *names;   /* the job's runs, in array order */
	int queued;
};

static int find_run(struct sweep_entry *runs, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(runs[i].name, name))
			return i;
	return -1;
}

static void on_task(int index, const char *state, void *c)
{
	struct task_ctx *t = c;
	const cJSON *nm = cJSON_GetArrayItem(t->names, index);
	if (!cJSON_IsString(nm))
		return;
	int r = find_run(t->runs, t->n, nm->valuestring);
	if (r < 0 || strcmp(t->runs[r].slurm.job, t->job))   /* not this run's newest job */
		return;
	struct slurm_task *s = &t->runs[r].slurm;
	if (s->queued && !t->queued)   /* squeue's word stands over sacct's */
		return;
	snprintf(s->state, sizeof s->state, "%s", state);
	s->queued = t->queued;
}

static int has_result(const char *dir, const char *name)
{
	char *rd = run_dir(dir, name);
	char *p = path_join(rd, "result.json");
	struct stat st;
	int r = stat(p, &st) == 0;
	free(rd);
	free(p);
	return r;
}

void sweep_query_slurm(const char *dir, struct sweep_entry *runs, int n, const cJSON *jobs)
{
	int nj = cJSON_IsArray(jobs) ? cJSON_GetArraySize(jobs) : 0;
	/* each run's newest job and its index there */
	for (int k = 0; k < nj; k++) {
		const cJSON *job = cJSON_GetArrayItem(jobs, k);
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "job_id");
		const cJSON *names = cJSON_GetObjectItemCaseSensitive(job, "runs");
		if (!cJSON_IsString(id) || !cJSON_IsArray(names) || strlen(id->valuestring) >= sizeof runs[0].slurm.job)
			continue;
		int m = cJSON_GetArraySize(names);
		for (int i = 0; i < m; i++) {
			const cJSON *nm = cJSON_GetArrayItem(names, i);
			int r = cJSON_IsString(nm) ? find_run(runs, n, nm->valuestring) : -1;
			if (r < 0)
				continue;
			memset(&runs[r].slurm, 0, sizeof runs[r].slurm);
			snprintf(runs[r].slurm.job, sizeof runs[r].slurm.job, "%s", id->valuestring);
			runs[r].slurm.index = i;
		}
	}
	for (int k = 0; k < nj; k++) {
		const cJSON *job = cJSON_GetArrayItem(jobs, k);
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "job_id");
		const cJSON *names = cJSON_GetObjectItemCaseSensitive(job, "runs");
		if (!cJSON_IsString(id) || !cJSON_IsArray(names))
			continue;
		int wanted = 0;
		for (int r = 0; r < n && !wanted; r++)
			wanted = !strcmp(runs[r].slurm.job, id->valuestring) && !has_result(dir, runs[r].name);
		if (!wanted)
			continue;
		struct task_ctx t = {runs, n, id->valuestring, names, 1};
		char *out = NULL;
		char errl[256];
		struct err e;
		char *sq[] = {"squeue", "-h", "-r", "-j", id->valuestring, "-o", "%F|%K|%T", NULL};
		int ws = sweep_capture(sq, &out, errl, sizeof errl, &e);
		if (ws < 0)
			return;   /* no squeue here: no Slurm to ask */
		if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
			slurm_parse_squeue(out, id->valuestring, on_task, &t);
		free(out);
		/* tasks that have left the queue: sacct, where accounting is kept */
		int left = 0;
		for (int r = 0; r < n && !left; r++)
			left = !strcmp(runs[r].slurm.job, id->valuestring) && !runs[r].slurm.queued &&
			       !has_result(dir, runs[r].name);
		if (!left)
			continue;
		char *sa[] = {"sacct", "-n", "-P", "-X", "-j", id->valuestring, "-o", "JobID,State", NULL};
		t.queued = 0;
		out = NULL;
		ws = sweep_capture(sa, &out, errl, sizeof errl, &e);
		if (ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
			slurm_parse_sacct(out, id->valuestring, on_task, &t);
		free(out);
	}
}

void sweep_states(const char *dir, struct sweep_entry *runs, int n)
{
	for (int i = 0; i < n; i++) {
		char *rd = run_dir(dir, runs[i].name);
		sweep_run_state(rd, runs[i].sha, runs[i].slurm.job[0] ? &runs[i].slurm : NULL, &runs[i].st);
		free(rd);
	}
}

int sweep_report(FILE *f, const struct sweep_entry *runs, int n, int json)
{
	int count[4] = {0};
	for (int i = 0; i < n; i++)
		count[runs[i].st.state]++;
	if (json) {
		cJSON *j = cJSON_CreateObject();
		cJSON *a = cJSON_AddArrayToObject(j, "runs");
		for (int i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", runs[i].name);
			cJSON_AddStringToObject(o, "state", run_state_name(runs[i].st.state));
			cJSON_AddStringToObject(o, "detail", runs[i].st.detail);
			cJSON_AddStringToObject(o, "config_sha256", runs[i].sha);
			cJSON_AddBoolToObject(o, "resumable", runs[i].st.resumable);
			if (!isnan(runs[i].st.val_bpb))
				cJSON_AddNumberToObject(o, "val_bpb", runs[i].st.val_bpb);
			if (runs[i].slurm.job[0]) {
				char t[64];
				snprintf(t, sizeof t, "%s_%d", runs[i].slurm.job, runs[i].slurm.index);
				cJSON_AddStringToObject(o, "slurm_task", t);
			}
			cJSON_AddItemToArray(a, o);
		}
		for (int s = 0; s < 4; s++)
			cJSON_AddNumberToObject(j, run_state_name((enum run_state)s), count[s]);
		cJSON_AddNumberToObject(j, "total", n);
		char *t = json_print(j, 1);
		fputs(t, f);
		free(t);
		cJSON_Delete(j);
	} else {
		int w = 3;
		for (int i = 0; i < n; i++)
			if ((int)strlen(runs[i].name) > w)
				w = (int)strlen(runs[i].name);
		fprintf(f, "%-*s  %-7s  %s\n", w, "RUN", "STATE", "DETAIL");
		for (int i = 0; i < n; i++)
			fprintf(f, "%-*s  %-7s  %s\n", w, runs[i].name, run_state_name(runs[i].st.state),
				runs[i].st.detail);
		fprintf(f, "%d runs: %d done, %d running, %d pending, %d failed\n", n, count[RUN_DONE],
			count[RUN_RUNNING], count[RUN_PENDING], count[RUN_FAILED]);
	}
	return count[RUN_FAILED];
}

/* ---- results/ ---- */

static int collect_one(const char *dir, const char *name, int have_lock, struct err *e)
{
	char *rd = run_dir(dir, name);
	char *res = path_join(dir, "results");
	int fd = -1, rc = 0;
	if (!have_lock) {
		char *lk = path_join(rd, ".sweep.lock");
		struct err le;
		if (sweep_lock(lk, rd, &fd, &le) != 0)
			fd = -2;   /* held: its holder copies it */
		free(lk);
	}
	if (fd != -2)
		rc = sweep_collect(rd, res, name, e);
	if (fd >= 0)
		close(fd);
	free(rd);
	free(res);
	return rc;
}

int sweep_collect_done(const char *dir, const struct sweep_entry *runs, int n, struct err *e)
{
	for (int i = 0; i < n; i++)
		if (runs[i].st.state == RUN_DONE && collect_one(dir, runs[i].name, 0, e) != 0)
			return -1;
	return 0;
}

/* ---- one attempt, start to end ---- */

/* the last line of rundir/train.log that is not the sweep's own, quoted
 * into buf (n bytes) */
static void last_log_line(const char *rundir, char *buf, size_t n)
{
	buf[0] = 0;
	char *p = path_join(rundir, "train.log");
	FILE *f = fopen(p, "rb");
	free(p);
	if (!f)
		return;
	char tail[4096];
	long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
	long from = size > (long)sizeof tail - 1 ? size - (long)sizeof tail + 1 : 0;
	fseek(f, from, SEEK_SET);
	size_t got = fread(tail, 1, sizeof tail - 1, f);
	fclose(f);
	tail[got] = 0;
	char *save = NULL, *last = NULL;
	for (char *l = strtok_r(tail, "\r\n", &save); l; l = strtok_r(NULL, "\r\n", &save))
		if (strncmp(l, "== supkit sweep", 15))
			last = l;
	if (last) {
		snprintf(buf, n, "%s", last);
		for (char *q = buf; *q; q++)
			if ((unsigned char)*q < 0x20)
				*q = '?';
	}
}

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

static void catch_stops(struct sigaction *old_int, struct sigaction *old_term)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);   /* no SA_RESTART: waitpid returns EINTR */
	sigaction(SIGINT, &sa, old_int);
	sigaction(SIGTERM, &sa, old_term);
}

struct slot {
	pid_t pid;
	int run, lock_fd;
	double t0;
};

int sweep_local(const char *dir, const struct sweep_exec *x0, const struct sweep_entry *runs, const int *idx,
		int m, int nslots, char **gpus, int n_gpus, int quiet)
{
	struct slot *slots = xcalloc((size_t)nslots, sizeof *slots);
	for (int s = 0; s < nslots; s++)
		slots[s].pid = 0;
	struct sigaction old_int, old_term;
	stop_sig = 0;
	catch_stops(&old_int, &old_term);
	int next = 0, active = 0, failed = 0, done = 0, skipped = 0, forwarded = 0;
	while (next < m || active) {
		while (!stop_sig && active < nslots && next < m) {
			int r = idx[next++];
			char *rd = run_dir(dir, runs[r].name);
			char *lk = path_join(rd, ".sweep.lock");
			char *tl = path_join(rd, ".lock");
			struct err e;
			int fd;
			int s = 0;
			while (slots[s].pid)
				s++;
			struct sweep_exec x = *x0;
			x.gpu = n_gpus > 0 && runs[r].backend != BACKEND_CPU ? gpus[s % n_gpus] : NULL;
			pid_t pid = 0;
			if (sweep_lock(lk, rd, &fd, &e) != 0) {
				if (!quiet)
					fprintf(stderr, "supkit-sweep: %s: skipped: %s\n", runs[r].name, e.msg);
				skipped++;
			} else if (sweep_lock_held(tl, 1)) {
				if (!quiet)
					fprintf(stderr, "supkit-sweep: %s: skipped: a supkit train runs in '%s'\n",
						runs[r].name, rd);
				close(fd);
				skipped++;
			} else if (sweep_start(&x, rd, &pid, &e) != 0) {
				fprintf(stderr, "supkit-sweep: %s: %s\n", runs[r].name, e.msg);
				close(fd);
				failed++;
			} else {
				slots[s] = (struct slot){pid, r, fd, now_seconds()};
				active++;
				if (!quiet)
					fprintf(stderr, "supkit-sweep: [%d/%d] %s started%s%s\n", next, m, runs[r].name,
						x.gpu ? " on GPU " : "", x.gpu ? x.gpu : "");
			}
			free(rd);
			free(lk);
			free(tl);
		}
		if (!active)
			break;
		int ws;
		pid_t pid = waitpid(-1, &ws, 0);
		if (pid < 0) {
			if (errno == EINTR && stop_sig && !forwarded) {
				fprintf(stderr, "supkit-sweep: %s: stopping the %d running run%s\n",
					strsignal(stop_sig), active, active == 1 ? "" : "s");
				for (int s = 0; s < nslots; s++)
					if (slots[s].pid)
						kill(slots[s].pid, stop_sig);
				forwarded = 1;
			}
			if (errno == ECHILD)
				break;
			continue;
		}
		int s = 0;
		while (s < nslots && slots[s].pid != pid)
			s++;
		if (s == nslots)
			continue;
		const char *name = runs[slots[s].run].name;
		char *rd = run_dir(dir, name);
		int code = sweep_finish(rd, ws);
		struct run_status st;
		sweep_run_state(rd, runs[slots[s].run].sha, NULL, &st);
		/* the lock is still this process's: the state reads "running" unless done */
		if (code == 0 && st.state == RUN_DONE) {
			struct err e;
			if (collect_one(dir, name, 1, &e) != 0)
				fprintf(stderr, "supkit-sweep: %s: %s\n", name, e.msg);
			done++;
			if (!quiet)
				fprintf(stderr, "supkit-sweep: %s done (%s, %.0f s)\n", name, st.detail,
					now_seconds() - slots[s].t0);
		} else {
			char last[300];
			last_log_line(rd, last, sizeof last);
			failed++;
			char *log = path_join(rd, "train.log");
			if (code == 0)
				fprintf(stderr, "supkit-sweep: %s failed: exit 0 without a result of its config (%s)\n", name,
					log);
			else
				fprintf(stderr, "supkit-sweep: %s failed: %s %d (%s)%s%s\n", name,
					WIFSIGNALED(ws) ? "signal" : "exit", WIFSIGNALED(ws) ? WTERMSIG(ws) : code, log,
					last[0] ? ": " : "", last);
			free(log);
		}
		free(rd);
		close(slots[s].lock_fd);
		slots[s].pid = 0;
		active--;
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	free(slots);
	if (!quiet)
		fprintf(stderr, "supkit-sweep: %d run%s finished, %d failed, %d skipped, %d not started\n", done,
			done == 1 ? "" : "s", failed, skipped, m - next);
	return stop_sig ? -1 : failed;
}

int sweep_task(const char *dir, const char *train_exe, const char *name)
{
	struct sweep_entry *runs;
	int n;
	char *workdir;
	cJSON *jobs;
	struct err e;
	if (sweep_json_read(dir, &runs, &n, &workdir, &jobs, &e) != 0)
		return err_report(&e);
	cJSON_Delete(jobs);
	int r = find_run(runs, n, name);
	int code = 0;
	if (r < 0) {
		err_set(&e, EXIT_USAGE, "'%s' is not a run of the sweep in '%s'", name, dir);
		code = err_report(&e);
		goto out;
	}
	char *rd = run_dir(dir, name);
	char *lk = path_join(rd, ".sweep.lock");
	char *tl = path_join(rd, ".lock");
	struct run_status st;
	sweep_run_state(rd, runs[r].sha, NULL, &st);
	int fd = -1;
	if (st.state == RUN_DONE) {
		fprintf(stderr, "supkit-sweep: %s is done (%s): nothing to run\n", name, st.detail);
		if (collect_one(dir, name, 0, &e) != 0)
			code = err_report(&e);
	} else if (sweep_lock(lk, rd, &fd, &e) != 0) {
		fprintf(stderr, "supkit-sweep: %s: not started: %s\n", name, e.msg);
	} else if (sweep_lock_held(tl, 1)) {
		fprintf(stderr, "supkit-sweep: %s: not started: a supkit train runs in '%s'\n", name, rd);
	} else {
		struct sweep_exec x = {train_exe, workdir, NULL};
		pid_t pid;
		struct sigaction old_int, old_term;
		stop_sig = 0;
		catch_stops(&old_int, &old_term);
		if (sweep_start(&x, rd, &pid, &e) != 0) {
			code = err_report(&e);
		} else {
			fprintf(stderr, "supkit-sweep: %s started (log: %s/train.log)\n", name, rd);
			int ws, forwarded = 0;
			while (waitpid(pid, &ws, 0) < 0) {
				if (errno != EINTR)
					break;
				if (stop_sig && !forwarded) {
					kill(pid, stop_sig);
					forwarded = 1;
				}
			}
			code = sweep_finish(rd, ws);
			sweep_run_state(rd, runs[r].sha, NULL, &st);
			if (code == 0 && st.state == RUN_DONE) {
				if (collect_one(dir, name, 1, &e) != 0)
					code = err_report(&e);
				else
					fprintf(stderr, "supkit-sweep: %s done (%s)\n", name, st.detail);
			} else {
				char last[300];
				last_log_line(rd, last, sizeof last);
				fprintf(stderr, "supkit-sweep: %s failed: exit %d%s%s\n", name, code, last[0] ? ": " : "",
					last);
				if (code == 0)
					code = EXIT_CHECK;
			}
		}
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	if (fd >= 0)
		close(fd);
	free(rd);
	free(lk);
	free(tl);
out:
	free(runs);
	free(workdir);
	return code;
}

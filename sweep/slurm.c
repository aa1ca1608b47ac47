/* slurm.c: the Slurm side of a sweep (sweep.h): the job array script, the
 * readings of squeue's and sacct's output, and running a client command.
 * Slurm itself does the scheduling; this only writes what sbatch reads and
 * reads what squeue and sacct print.
 *
 * Reference: sbatch(1) (--array, --parsable, #SBATCH, filename patterns
 * %A %a), squeue(1) (-r, -o %F %K %T), sacct(1) (-P, -X, JobID of array
 * tasks "JOB_INDEX", pending ranges "JOB_[2-5%2]").
 */
#define _GNU_SOURCE
#include "sweep/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "trainer/config.h"

const char *sweep_gres(const struct sweep *s)
{
	if (s->slurm.gres[0])
		return strcmp(s->slurm.gres, "none") ? s->slurm.gres : "";
	for (int i = 0; i < s->n_runs; i++)
		if (s->runs[i].backend != BACKEND_CPU)
			return "gpu:1";
	return "";
}

/* a path sbatch's directives and the shell take as one word, unquoted */
static int plain_path(const char *p)
{
	for (; *p; p++)
		if ((unsigned char)*p < 0x21 || *p == 0x7f || strchr("'\"\\$`%!;&|<>(){}*?[]#~", *p))
			return 0;
	return 1;
}

struct buf {
	char *s;
	size_t n, cap;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->n + (size_t)m + 1 > b->cap) {
		b->cap = (b->n + (size_t)m + 1) * 2;
		b->s = xrealloc(b->s, b->cap);
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->n, (size_t)m + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)m;
}

char *sweep_sbatch_script(const struct sweep *s, const char *out_dir, const char *sweep_exe,
			  const char *const *names, int n, const char *gres, struct err *e)
{
	const char *paths[][2] = {{"the output folder", out_dir}, {"supkit-sweep's path", sweep_exe}};
	for (int i = 0; i < 2; i++)
		if (!plain_path(paths[i][1])) {
			err_set(e, EXIT_USAGE,
				"%s '%s' holds white space or a character that sbatch or the shell would interpret "
				"(quotes, %%, $, ...): use another path for --slurm", paths[i][0], paths[i][1]);
			return NULL;
		}
	if (n < 1) {
		err_set(e, EXIT_USAGE, "no runs to submit");
		return NULL;
	}
	/* the job's name: sweep-FOLDER when FOLDER is a plain name */
	const char *base = path_basename(out_dir);
	int plain = *base != 0;
	for (const char *p = base; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '-' || *p == '.'))
			plain = 0;
	struct buf b = {0};
	put(&b, "#!/bin/bash\n");
	put(&b, "# supkit sweep: one Slurm array task a run. Each task runs\n"
		"# `supkit-sweep task DIR NAME`, which starts supkit-train on the run\n"
		"# (--resume when its folder holds a checkpoint) and logs to\n"
		"# DIR/runs/NAME/train.log; see supkit-sweep(1). Written by supkit sweep\n"
		"# for the runs not yet done when it was submitted.\n");
	put(&b, "#SBATCH --job-name=%s%s\n", plain ? "sweep-" : "supkit-sweep", plain ? base : "");
	if (s->slurm.throttle)
		put(&b, "#SBATCH --array=0-%d%%%d\n", n - 1, s->slurm.throttle);
	else
		put(&b, "#SBATCH --array=0-%d\n", n - 1);
	put(&b, "#SBATCH --output=%s/slurm/%%A_%%a.out\n", out_dir);
	put(&b, "#SBATCH --ntasks=1\n");
	if (s->slurm.partition[0])
		put(&b, "#SBATCH --partition=%s\n", s->slurm.partition);
	if (s->slurm.time[0])
		put(&b, "#SBATCH --time=%s\n", s->slurm.time);
	if (s->slurm.cpus)
		put(&b, "#SBATCH --cpus-per-task=%d\n", s->slurm.cpus);
	if (s->slurm.mem[0])
		put(&b, "#SBATCH --mem=%s\n", s->slurm.mem);
	if (gres && *gres)
		put(&b, "#SBATCH --gres=%s\n", gres);
	put(&b, "set -u\nruns=(\n");
	for (int i = 0; i < n; i++)
		put(&b, "\t%s\n", names[i]);
	put(&b, ")\nexec %s task %s \"${runs[$SLURM_ARRAY_TASK_ID]}\"\n", sweep_exe, out_dir);
	return b.s;
}

/* ---- squeue / sacct ---- */

/* each index of a list "3", "2-5", "1,3,5-7", a "%M" throttle ignored */
static void each_index(const char *list, const char *state, slurm_task_fn fn, void *ctx)
{
	char *l = xstrdup(list);
	l[strcspn(l, "%]")] = 0;
	char *save = NULL;
	for (char *t = strtok_r(l, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		long a = strtol(t, &end, 10), b = a;
		if (end == t || a < 0)
			continue;
		if (*end == '-') {
			char *e2;
			b = strtol(end + 1, &e2, 10);
			if (e2 == end + 1 || *e2 || b < a || b - a > 1000000)
				continue;
		} else if (*end) {
			continue;
		}
		for (long i = a; i <= b; i++)
			fn((int)i, state, ctx);
	}
	free(l);
}

/* each line of text cut at '|' into fields (at most 3) */
static void each_line(const char *text, void (*fn)(char **f, int nf, void *ctx), void *ctx)
{
	char *t = xstrdup(text);
	char *save = NULL;
	for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "\r")] = 0;
		char *f[3];
		int nf = 0;
		char *p = line;
		while (nf < 3) {
			f[nf++] = p;
			char *bar = strchr(p, '|');
			if (!bar)
				break;
			*bar = 0;
			p = bar + 1;
		}
		for (int i = 0; i < nf; i++) {   /* trim */
			while (*f[i] == ' ')
				f[i]++;
			size_t n = strlen(f[i]);
			while (n && f[i][n - 1] == ' ')
				f[i][--n] = 0;
		}
		fn(f, nf, ctx);
	}
	free(t);
}

struct parse_ctx {
	const char *job;
	slurm_task_fn fn;
	void *ctx;
};

static void squeue_line(char **f, int nf, void *c)
{
	struct parse_ctx *p = c;
	if (nf == 3 && !strcmp(f[0], p->job))
		each_index(f[1], f[2], p->fn, p->ctx);
}

void slurm_parse_squeue(const char *text, const char *job, slurm_task_fn fn, void *ctx)
{
	struct parse_ctx p = {job, fn, ctx};
	each_line(text, squeue_line, &p);
}

static void sacct_line(char **f, int nf, void *c)
{
	struct parse_ctx *p = c;
	size_t n = strlen(p->job);
	if (nf < 2 || strncmp(f[0], p->job, n) || f[0][n] != '_')
		return;
	char state[32];
	snprintf(state, sizeof state, "%.*s", (int)strcspn(f[1], " "), f[1]);
	const char *idx = f[0] + n + 1;
	if (*idx == '[')
		idx++;
	each_index(idx, state, p->fn, p->ctx);
}

void slurm_parse_sacct(const char *text, const char *job, slurm_task_fn fn, void *ctx)
{
	struct parse_ctx p = {job, fn, ctx};
	each_line(text, sacct_line, &p);
}

int slurm_parse_job_id(const char *text, char *id, size_t n)
{
	while (*text == ' ' || *text == '\n')
		text++;
	size_t k = strspn(text, "0123456789");
	if (!k || k >= n || (text[k] && !strchr(";\r\n ", text[k])))
		return -1;
	memcpy(id, text, k);
	id[k] = 0;
	return 0;
}

/* ---- running a client command ---- */

int sweep_capture(char *const argv[], char **out, char *err_line, size_t n, struct err *e)
{
	*out = NULL;
	if (n)
		err_line[0] = 0;
	int po[2], pe[2], px[2];
	if (pipe2(po, O_CLOEXEC) != 0)
		return err_errno(e, EXIT_SYS, "cannot make a pipe");
	if (pipe2(pe, O_CLOEXEC) != 0) {
		close(po[0]);
		close(po[1]);
		return err_errno(e, EXIT_SYS, "cannot make a pipe");
	}
	if (pipe2(px, O_CLOEXEC) != 0) {
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		return err_errno(e, EXIT_SYS, "cannot make a pipe");
	}
	pid_t pid = fork();
	if (pid < 0) {
		err_errno(e, EXIT_SYS, "cannot start '%s'", argv[0]);
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		close(px[0]);
		close(px[1]);
		return -1;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execvp(argv[0], argv);
		int err = errno;
		ssize_t w = write(px[1], &err, sizeof err);
		(void)w;
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	close(px[1]);
	size_t cap = 4096, len = 0, elen = 0;
	char *o = xmalloc(cap);
	char ebuf[1024];
	struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
	int open_fds = 2;
	while (open_fds) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char tmp[4096];
			ssize_t r = read(fds[i].fd, tmp, sizeof tmp);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
				continue;
			}
			if (i == 0 && len < (16u << 20)) {
				if (len + (size_t)r + 1 > cap) {
					cap = (len + (size_t)r + 1) * 2;
					o = xrealloc(o, cap);
				}
				memcpy(o + len, tmp, (size_t)r);
				len += (size_t)r;
			} else if (i == 1 && elen < sizeof ebuf - 1) {
				size_t k = (size_t)r < sizeof ebuf - 1 - elen ? (size_t)r : sizeof ebuf - 1 - elen;
				memcpy(ebuf + elen, tmp, k);
				elen += k;
			}
		}
	}
	o[len] = 0;
	ebuf[elen] = 0;
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int exec_err = 0;
	ssize_t got = read(px[0], &exec_err, sizeof exec_err);
	close(px[0]);
	if (got == (ssize_t)sizeof exec_err) {
		free(o);
		errno = exec_err;
		return err_errno(e, EXIT_SYS, "cannot run '%s'", argv[0]);
	}
	if (n) {
		size_t k = strcspn(ebuf, "\n");
		snprintf(err_line, n, "%.*s", (int)k, ebuf);
		for (char *q = err_line; *q; q++)
			if ((unsigned char)*q < 0x20)
				*q = '?';
	}
	*out = o;
	return status;
}

/* exec.c: one attempt of a run as a supkit-train child process (sweep.h):
 * fork, exec, the exit status recorded beside the trainer's files. The
 * process pool (--local) and the Slurm task both go through here.
 */
#define _GNU_SOURCE
#include "sweep/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/fileio.h"

static int has(const char *dir, const char *name)
{
	char *p = path_join(dir, name);
	struct stat st;
	int r = lstat(p, &st) == 0;
	free(p);
	return r;
}

/* write all of s to fd, ignoring failures (a log line) */
static void log_write(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

int sweep_start(const struct sweep_exec *x, const char *rundir, pid_t *pid_out, struct err *e)
{
	char *exitp = path_join(rundir, "sweep_exit");
	unlink(exitp);
	free(exitp);
	int resume = has(rundir, "checkpoint") || has(rundir, "checkpoint.old");
	char *cfg = path_join(rundir, "config.cfg");
	char *argv[6];
	int k = 0;
	argv[k++] = (char *)x->train_exe;
	if (resume) {
		argv[k++] = "--resume";
		argv[k++] = (char *)rundir;
	} else {
		argv[k++] = cfg;
		argv[k++] = "-o";
		argv[k++] = (char *)rundir;
	}
	argv[k] = NULL;
	char *logp = path_join(rundir, "train.log");
	int log = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (log < 0) {
		err_errno(e, EXIT_SYS, "cannot open '%s'", logp);
		free(logp);
		free(cfg);
		return -1;
	}
	free(logp);
	char when[64] = "", host[256] = "";
	time_t t = time(NULL);
	struct tm tm;
	if (localtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %z", &tm);
	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = 0;
	char *cmd = xstrdup("");
	for (int i = 0; argv[i]; i++) {
		char *t = xasprintf("%s%s%s", cmd, i ? " " : "", argv[i]);
		free(cmd);
		cmd = t;
	}
	char *line = xasprintf("== supkit sweep, %s on %s: %s\n", when, host, cmd);
	free(cmd);
	log_write(log, line);
	free(line);
	if (x->gpu) {
		line = xasprintf("== CUDA_VISIBLE_DEVICES=%s\n", x->gpu);
		log_write(log, line);
		free(line);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		err_errno(e, EXIT_SYS, "cannot start '%s'", x->train_exe);
		close(log);
		free(cfg);
		return -1;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(log, 1);
		dup2(log, 2);
		if (x->workdir && chdir(x->workdir) != 0) {
			fprintf(stderr, "supkit-sweep: cannot enter '%s': %s\n", x->workdir, strerror(errno));
			_exit(EXIT_SYS);
		}
		if (x->gpu)
			setenv("CUDA_VISIBLE_DEVICES", x->gpu, 1);
		if (strchr(x->train_exe, '/'))
			execv(x->train_exe, argv);
		else
			execvp(x->train_exe, argv);
		fprintf(stderr, "supkit-sweep: cannot run '%s': %s\n", x->train_exe, strerror(errno));
		_exit(127);
	}
	close(log);
	free(cfg);
	*pid_out = pid;
	return 0;
}

int sweep_finish(const char *rundir, int wstatus)
{
	char rec[64];
	int code;
	if (WIFSIGNALED(wstatus)) {
		code = 128 + WTERMSIG(wstatus);
		snprintf(rec, sizeof rec, "signal %d\n", WTERMSIG(wstatus));
	} else {
		code = WEXITSTATUS(wstatus);
		snprintf(rec, sizeof rec, "exit %d\n", code);
	}
	char *p = path_join(rundir, "sweep_exit");
	struct err e;
	if (file_write_atomic(p, rec, strlen(rec), &e) != 0)
		fprintf(stderr, "%s: %s\n", err_prog ? err_prog : "supkit-sweep", e.msg);
	free(p);
	char *logp = path_join(rundir, "train.log");
	int log = open(logp, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (log >= 0) {
		char *line = xasprintf("== supkit sweep: %s", rec);
		log_write(log, line);
		free(line);
		close(log);
	}
	free(logp);
	return code;
}

/* test_rundir.c: trainer/rundir.c (the run folder's lock across processes,
 * stale temporaries, the memory limit and check) and the memory floor of
 * trainer/accounting.c against the model's own figures.
 *
 * The lock is taken by child processes (fork), as a second supkit train
 * would: refused while another process holds it, naming that process; free
 * again once the holder is killed with SIGKILL (the kernel releases it).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "lib/fileio.h"
#include "trainer/accounting.h"
#include "trainer/model.h"
#include "trainer/paramspec.h"
#include "trainer/rundir.h"
#include "trainer_fixture.h"

static char dir[] = "/tmp/supkit-rundir-XXXXXX";

/* In a child: rundir_lock's result, 0 taken, 1 refused naming `holder`, 2
 * anything else (the message printed). */
static int child_lock(const char *d, long holder)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd;
		struct err e = {0};
		int r = rundir_lock(d, &fd, &e);
		char want[160];
		snprintf(want, sizeof want, "'%s' is in use by process %ld", d, holder);
		if (r == 0)
			_exit(0);
		if (e.code == EXIT_SYS && strstr(e.msg, want) && !strchr(e.msg, '\n'))
			_exit(1);
		printf("  child: %s\n", e.msg);
		fflush(stdout);
		_exit(2);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

TEST(lock_one_process_at_a_time)
{
	char *d = path_join(dir, "run");
	struct err e;
	CHECK(dir_make_all(d, &e) == 0);
	int fd;
	CHECKF(rundir_lock(d, &fd, &e) == 0, "%s", e.msg);
	/* the holder's pid in the lock file */
	char *lp = path_join(d, RUNDIR_LOCK_NAME), *text;
	size_t n;
	CHECK(file_read_all(lp, 0, &text, &n, &e) == 0);
	CHECK(atol(text) == (long)getpid());
	free(text);
	CHECK(child_lock(d, (long)getpid()) == 1);
	rundir_unlock(fd);
	CHECK(child_lock(d, 0) == 0);
	/* a holder killed with SIGKILL leaves nothing that blocks the next */
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	pid_t holder = fork();
	if (holder == 0) {
		int hfd;
		struct err he;
		char c = rundir_lock(d, &hfd, &he) == 0 ? 'y' : 'n';
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c = 0;
	CHECK(holder > 0 && read(pfd[0], &c, 1) == 1 && c == 'y');
	CHECK(child_lock(d, (long)holder) == 1);
	CHECK(rundir_lock(d, &fd, &e) == -1 && strstr(e.msg, "in use by process") && e.code == EXIT_SYS);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	CHECKF(rundir_lock(d, &fd, &e) == 0, "%s", e.msg);
	rundir_unlock(fd);
	close(pfd[0]);
	close(pfd[1]);
	/* a folder that is not there */
	char *none = path_join(dir, "none");
	CHECK(rundir_lock(none, &fd, &e) == -1 && e.code == EXIT_SYS && strstr(e.msg, "lock file"));
	free(none);
	free(lp);
	free(d);
}

TEST(stale_temporaries)
{
	const char *stale[] = {"config.cfg.tmp-AbC123", "checkpoint.tmp-000000", "model.safetensors.tmp-zzzzzz",
			       "result.json.tmp-Q9w8E7", "curve.jsonl.tmp-aaaaaa", "optim.bin.tmp-ZZZZZZ"};
	const char *kept[] = {"config.cfg", "checkpoint", "checkpoint.old", ".lock", "config.cfg.tmp-AbC12",
			      "config.cfg.tmp-AbC1234", "config.cfg.tmp-AbC12!", "notes.tmp-abcdef",
			      "state.json.tmp-abcdef", "xconfig.cfg.tmp-abcdef"};
	for (size_t i = 0; i < sizeof stale / sizeof *stale; i++)
		CHECKF(rundir_is_stale_name(stale[i]), "%s", stale[i]);
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
		CHECKF(!rundir_is_stale_name(kept[i]), "%s", kept[i]);
	char *d = path_join(dir, "stale");
	struct err e;
	CHECK(dir_make_all(d, &e) == 0);
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
		char *p = path_join(d, kept[i]);
		CHECK(file_write_atomic(p, "k", 1, &e) == 0);
		free(p);
	}
	for (size_t i = 0; i < sizeof stale / sizeof *stale; i++) {
		char *p = path_join(d, stale[i]);
		if (!strncmp(stale[i], "checkpoint", 10)) {   /* a folder tree */
			char *q = path_join(p, "params.safetensors");
			CHECK(dir_make_all(p, &e) == 0 && file_write_atomic(q, "s", 1, &e) == 0);
			free(q);
		} else {
			CHECK(file_write_atomic(p, "s", 1, &e) == 0);
		}
		free(p);
	}
	CHECK(rundir_remove_stale(d, &e) == (int)(sizeof stale / sizeof *stale));
	for (size_t i = 0; i < sizeof stale / sizeof *stale; i++) {
		char *p = path_join(d, stale[i]);
		CHECKF(access(p, F_OK) != 0, "%s stays", stale[i]);
		free(p);
	}
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
		char *p = path_join(d, kept[i]);
		CHECKF(access(p, F_OK) == 0, "%s removed", kept[i]);
		free(p);
	}
	CHECK(rundir_remove_stale(d, &e) == 0);
	free(d);
}

TEST(memory_limit_and_check)
{
	struct err e;
	double b;
	char src[64];
	setenv("SUPKIT_MEMORY_MIB", "2", 1);
	CHECK(rundir_memory_limit(&b, src, sizeof src, &e) == 0 && b == 2.0 * 1048576 && !strcmp(src, "SUPKIT_MEMORY_MIB"));
	CHECK(rundir_memory_check(1048576.0, NULL, &e) == 0);
	CHECK(rundir_memory_check(3.0 * 1048576, "model 3.0 MiB", &e) == -1 && e.code == EXIT_SYS);
	CHECKF(strstr(e.msg, "the run needs at least 3.0 MiB of memory (model 3.0 MiB), more than the 2.0 MiB "
			     "available (SUPKIT_MEMORY_MIB)"), "%s", e.msg);
	const char *bad[] = {"0", "-1", "x", "1e999", "2 MiB", "nan"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		setenv("SUPKIT_MEMORY_MIB", bad[i], 1);
		CHECKF(rundir_memory_limit(&b, src, sizeof src, &e) == -1 && e.code == EXIT_USAGE &&
		       strstr(e.msg, "SUPKIT_MEMORY_MIB"), "'%s' accepted", bad[i]);
		CHECK(rundir_memory_check(1, NULL, &e) == -1 && e.code == EXIT_USAGE);
	}
	unsetenv("SUPKIT_MEMORY_MIB");
	CHECK(rundir_memory_limit(&b, src, sizeof src, &e) == 0 && b > 0);
	char f[32];
	rundir_format_bytes(4398046511104.0, f, sizeof f);
	CHECK_STREQ(f, "4.0 TiB");
	rundir_format_bytes(1536, f, sizeof f);
	CHECK_STREQ(f, "1.5 KiB");
}

/* The floor is one: no more than what the model allocates (its parameter
 * block exactly) and measures for a step's activations; the token buffers
 * as counted by hand. */
TEST(memory_floor_is_a_floor)
{
	static const char *const cfgs[][12] = {
		{"depth=2", "model_dim=64", "head_dim=32", "vocab_size=512", "seq_len=64", "batch_rows=4", NULL},
		{"depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "seq_len=16", "batch_rows=3", "oe=1",
		 "oe_m=13", "qk_scale=pair", "wte_lambdas=1", "out_lambdas=1", NULL},
		{"depth=3", "model_dim=64", "head_dim=16", "vocab_size=96", "seq_len=32", "batch_rows=2", "dtype=fp64",
		 "oe=1", "oe_m=17", NULL},
	};
	for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++) {
		struct model *m = model_make(cfgs[k]);
		CHECK(m != NULL);
		if (!m)
			continue;
		const struct config *c = model_config(m);
		struct param_spec *s;
		size_t n;
		struct err e;
		CHECK(paramspec_build(c, &s, &n, &e) == 0);
		struct memory_floor f;
		memory_floor_of(c, s, n, &f);
		free(s);
		double B = c->batch_rows, T = c->seq_len;
		CHECK(c->eval_tokens > 0 && f.tokens == 4 * (5 * B * T + 2 * B * (T + 1)));
		CHECKF(f.params <= (double)model_bytes(m), "case %zu: params %g > model %zu", k, f.params, model_bytes(m));
		double for_step = (double)model_bytes_for(m, c->batch_rows, c->seq_len);
		CHECKF(f.params + f.activations <= for_step, "case %zu: %g > %g", k, f.params + f.activations, for_step);
		CHECK(f.optim > 0 && f.total == f.params + f.optim + f.activations + f.tokens);
		struct config ne = *c;   /* no evaluation: no evaluation buffers */
		ne.eval_tokens = ne.heldout_tokens = 0;
		struct memory_floor g;
		CHECK(paramspec_build(&ne, &s, &n, &e) == 0);
		memory_floor_of(&ne, s, n, &g);
		free(s);
		CHECK(g.tokens == 4 * (2 * B * T + B * (T + 1)) && g.params == f.params);
		model_free(m);
	}
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(lock_one_process_at_a_time);
	RUN(stale_temporaries);
	RUN(memory_limit_and_check);
	RUN(memory_floor_is_a_floor);
	dir_remove_tree(dir);
	return t_done();
}

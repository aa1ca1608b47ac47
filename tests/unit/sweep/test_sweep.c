/* test_sweep.c: sweep/ (the sweep file and its expansion, the job array
 * script, the readings of squeue, sacct and sbatch, run states from files
 * and locks, results/ copies, running a client command).
 *
 * The resolved configs are checked against files made independently of
 * the sweep: every configs/arms/d6/NAME.cfg (make_arms.sh's output) must be
 * what a sweep of that arm at depth 6 resolves to, and a named arm over a
 * base must be what supkit train --arm NAME BASE resolves (config.c's
 * config_apply_switches over the same files). Runs from the repository root
 * (tests/run.sh does), where configs/ is.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "lib/fileio.h"
#include "lib/sha256.h"
#include "sweep/sweep.h"
#include "trainer/config.h"

static char tmp_root[64];

static char *tpath(const char *name)
{
	return path_join(tmp_root, name);
}

static void put_file(const char *name, const char *text)
{
	char *p = tpath(name);
	char *d = path_dirname(p);
	struct err e;
	dir_make_all(d, &e);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(d);
	free(p);
}

/* parse + expand the sweep text (configs from ./configs); 0 or -1 with e */
static int load(struct sweep *s, const char *text, struct err *e)
{
	put_file("s.cfg", text);
	char *p = tpath("s.cfg");
	int rc = sweep_parse(s, p, e);
	if (rc == 0)
		rc = sweep_expand(s, "configs", NULL, e);
	free(p);
	return rc;
}

/* the error of a sweep text; fresh message */
static void expect_error(const char *text, const char *want, int line)
{
	struct sweep s;
	struct err e;
	err_clear(&e);
	int rc = load(&s, text, &e);
	CHECKF(rc == -1, "accepted: %s", text);
	CHECKF(e.code == EXIT_USAGE, "code %d for %s", e.code, text);
	CHECKF(strstr(e.msg, want) != NULL, "'%s' lacks '%s'", e.msg, want);
	if (line > 0) {
		char where[32];
		snprintf(where, sizeof where, "s.cfg:%d:", line);
		CHECKF(strstr(e.msg, where) != NULL, "'%s' lacks '%s'", e.msg, where);
	}
	sweep_free(&s);
}

/* the value of key in canonical config text */
static const char *cfg_value(const char *text, const char *key, char *buf, size_t n)
{
	size_t k = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, k) && !strncmp(l + k, " = ", 3)) {
			size_t m = strcspn(l + k + 3, "\n");
			snprintf(buf, n, "%.*s", (int)m, l + k + 3);
			return buf;
		}
	return NULL;
}

TEST(expands_in_order_with_names)
{
	put_file("tiny.cfg", "depth = 2\nmodel_dim = 64\nhead_dim = 32\nsteps = 20\nwarmup_steps = 2\n");
	put_file("arms/mine.cfg", "oe = 1\noe_m = 211\n");
	struct sweep s;
	struct err e;
	int rc = load(&s,
		      "# a sweep\nbase = tiny.cfg\narms = 00 01_dense_opt arms/mine.cfg\nseeds = 7 3\n"
		      "depths = 2 4\nsteps = 30   # every run\ndata_dir = data\nslurm_time = 1-02:00:00\n"
		      "slurm_cpus = 8\nslurm_throttle = 4\n",
		      &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc) {
		sweep_free(&s);
		return;
	}
	CHECK(s.n_runs == 12);
	const char *want[] = {"00_dense_native_d2_s7", "00_dense_native_d2_s3", "00_dense_native_d4_s7",
			      "00_dense_native_d4_s3", "01_dense_opt_d2_s7", "01_dense_opt_d2_s3",
			      "01_dense_opt_d4_s7", "01_dense_opt_d4_s3", "mine_d2_s7", "mine_d2_s3",
			      "mine_d4_s7", "mine_d4_s3"};
	for (int i = 0; i < 12 && i < s.n_runs; i++)
		CHECK_STREQ(s.runs[i].name, want[i]);
	char b[128];
	for (int i = 0; i < s.n_runs; i++) {
		const struct sweep_run *r = &s.runs[i];
		CHECK_STREQ(cfg_value(r->config_text, "steps", b, sizeof b), "30");
		CHECK_STREQ(cfg_value(r->config_text, "data_dir", b, sizeof b), "data");
		CHECK_STREQ(cfg_value(r->config_text, "model_dim", b, sizeof b), "64");   /* from base */
		CHECK_STREQ(cfg_value(r->config_text, "arm", b, sizeof b), r->arm);
		char d[16];
		snprintf(d, sizeof d, "%d", r->depth);
		CHECK_STREQ(cfg_value(r->config_text, "depth", b, sizeof b), d);
		char hex[65];
		sha256_buf_hex(r->config_text, strlen(r->config_text), hex);
		CHECK_STREQ(r->sha, hex);
		/* the text reads back as the same config, valid */
		struct config c;
		config_defaults(&c);
		CHECK(config_load_text(&c, r->config_text, strlen(r->config_text), "x", &e) == 0);
		CHECK(config_validate(&c, &e) == 0);
		char *again = config_print(&c);
		CHECK_STREQ(again, r->config_text);
		free(again);
	}
	CHECK_STREQ(cfg_value(s.runs[4].config_text, "muoneq", b, sizeof b), "bieq");
	CHECK_STREQ(cfg_value(s.runs[0].config_text, "muoneq", b, sizeof b), "off");
	CHECK_STREQ(cfg_value(s.runs[8].config_text, "oe", b, sizeof b), "1");
	CHECK_STREQ(cfg_value(s.runs[8].config_text, "oe_m", b, sizeof b), "211");
	CHECK_STREQ(cfg_value(s.runs[9].config_text, "seed", b, sizeof b), "3");
	CHECK(s.slurm.cpus == 8 && s.slurm.throttle == 4);
	CHECK_STREQ(s.slurm.time, "1-02:00:00");
	sweep_free(&s);
}

/* every configs/arms/d6 file is a sweep of its arm at depth 6 with the file's
 * seed (42, or the run's seed of an arm that sets one): the depth mapping and
 * the named arms' switches */
TEST(d6_arm_files_equal_sweep_at_depth_6)
{
	DIR *d = opendir("configs/arms/d6");
	if (!d)
		T_SKIP("no configs/arms/d6 (not run from the repository root)");
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".cfg"))
			continue;
		char arm[128], text[256];
		snprintf(arm, sizeof arm, "%.*s", (int)(l - 4), de->d_name);
		struct err e;
		struct config c;
		config_defaults(&c);
		char *p = xasprintf("configs/arms/d6/%s", de->d_name);
		CHECK(config_load_file(&c, p, &e) == 0);
		char *want = config_print(&c);
		snprintf(text, sizeof text, "arms = %s\nseeds = %llu\ndepths = 6\n", arm,
			 (unsigned long long)c.seed);
		struct sweep s;
		int rc = load(&s, text, &e);
		CHECKF(rc == 0, "%s: %s", arm, e.msg);
		if (rc == 0 && s.n_runs == 1)
			CHECKF(!strcmp(s.runs[0].config_text, want), "%s differs", arm);
		free(want);
		free(p);
		sweep_free(&s);
		n++;
	}
	closedir(d);
	CHECK(n >= 20);
}

/* a named arm over a base: what supkit train --arm NAME BASE resolves */
TEST(named_arm_over_base_is_train_arm)
{
	put_file("b.cfg", "depth = 3\nmodel_dim = 128\nhead_dim = 64\nseed = 9\nsteps = 40\nwarmup_steps = 1\n");
	struct sweep s;
	struct err e;
	int rc = load(&s, "base = b.cfg\narms = 12do\nseeds = 9\n", &e);
	CHECKF(rc == 0, "%s", e.msg);
	struct config c;
	config_defaults(&c);
	char *b = tpath("b.cfg");
	CHECK(config_load_file(&c, b, &e) == 0);
	CHECK(config_apply_switches(&c, "configs/baseline.cfg", "configs/arms/d8/12do_oe_decoupled_x0_out.cfg", &e) == 0);
	char *want = config_print(&c);
	if (rc == 0) {
		CHECK_STREQ(s.runs[0].name, "12do_oe_decoupled_x0_out_d3_s9");
		CHECK_STREQ(s.runs[0].config_text, want);
	}
	free(want);
	free(b);
	sweep_free(&s);
}

TEST(refusals_name_file_and_line)
{
	expect_error("arms = 00\nseeds = 1\nstepz = 3\n", "unknown key 'stepz'", 3);
	expect_error("arms = 00\nseeds = 1\nslurm_gpus = 3\n", "unknown key 'slurm_gpus'", 3);
	expect_error("arms = 00\nseeds = 1\nsteps = many\n", "steps: 'many' is not an integer", 3);
	expect_error("arms = 00\nseeds = 1\nsteps = 0\n", "steps: 0 is out of range", 3);
	expect_error("arms = 00\nseeds = 1 x\n", "'x' is not an unsigned integer", 2);
	expect_error("arms = 00\nseeds = 1 2 1\n", "seeds: 1 is given twice", 2);
	expect_error("arms = 00\nseeds = 1\ndepths = 6 0\n", "depth: 0 is out of range", 3);
	expect_error("arms = 00 01 00\nseeds = 1\n", "arms: '00' is given twice", 1);
	expect_error("arms = 00 00_dense_native\nseeds = 1\n", "are both the arm '00_dense_native'", 1);
	expect_error("arms =\nseeds = 1\n", "arms: needs at least one arm", 1);
	expect_error("seeds = 1\n", "no arms", 0);
	expect_error("arms = 00\n", "no seeds", 0);
	expect_error("arms = 00\nseeds = 1\nseed = 4\n", "seed: set by seeds", 3);
	expect_error("arms = 00\nseeds = 1\narm = x\n", "arm: set by arms", 3);
	expect_error("arms = 00\nseeds = 1\ndepths = 6\n\ndepth = 4\n", "depth: set by depths (line 3)", 5);
	expect_error("arms = nosucharm\nseeds = 1\n", "unknown arm 'nosucharm'", 1);
	expect_error("arms = 00\nseeds = 1\nbase = nothere.cfg\n", "nothere.cfg", 3);
	expect_error("arms = missing.cfg\nseeds = 1\n", "missing.cfg", 1);
	expect_error("arms = 00\nseeds = 1\nslurm_time = 2 hours\n", "slurm_time: '2 hours' is not a Slurm time", 3);
	expect_error("arms = 00\nseeds = 1\nslurm_time = 1-2:3:4:5\n", "is not a Slurm time", 3);
	expect_error("arms = 00\nseeds = 1\nslurm_gres = gpu:1;rm\n", "is not a gres", 3);
	expect_error("arms = 00\nseeds = 1\nslurm_partition = a b\n", "is not a partition name", 3);
	expect_error("arms = 00\nseeds = 1\nslurm_mem = 4X\n", "slurm_mem: '4X' is not a size", 3);
	expect_error("arms = 00\nseeds = 1\nslurm_cpus = 0\n", "slurm_cpus: '0' is not an integer", 3);
	expect_error("arms = 00\nseeds = 1\nnot a line\n", "expected 'key = value'", 3);
	/* cross-key validation of a resolved run names the run and the line */
	expect_error("arms = 00\nseeds = 1\nqk_mask = l0_hf16\n", "run 00_dense_native_d8_s1: ", 3);
	expect_error("arms = 00\nseeds = 1\nqk_mask = l0_hf16\n", "s.cfg:3: qk_mask = l0_hf16 needs qk_scale", 3);
}

TEST(sbatch_script_exact)
{
	struct sweep s;
	struct err e;
	int rc = load(&s, "arms = 00\nseeds = 1 2\nbackend = cpu\nslurm_partition = gpu,debug\nslurm_time = 90\n"
			  "slurm_mem = 16G\nslurm_throttle = 2\n", &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc) {
		sweep_free(&s);
		return;
	}
	CHECK_STREQ(sweep_gres(&s), "");   /* every run on the CPU */
	const char *names[] = {"a_d8_s1", "a_d8_s2"};
	char *t = sweep_sbatch_script(&s, "/w/my-sweep", "/opt/bin/supkit-sweep", names, 2, "gpu:1", &e);
	const char *want =
		"#!/bin/bash\n"
		"# supkit sweep: one Slurm array task a run. Each task runs\n"
		"# `supkit-sweep task DIR NAME`, which starts supkit-train on the run\n"
		"# (--resume when its folder holds a checkpoint) and logs to\n"
		"# DIR/runs/NAME/train.log; see supkit-sweep(1). Written by supkit sweep\n"
		"# for the runs not yet done when it was submitted.\n"
		"#SBATCH --job-name=sweep-my-sweep\n"
		"#SBATCH --array=0-1%2\n"
		"#SBATCH --output=/w/my-sweep/slurm/%A_%a.out\n"
		"#SBATCH --ntasks=1\n"
		"#SBATCH --partition=gpu,debug\n"
		"#SBATCH --time=90\n"
		"#SBATCH --mem=16G\n"
		"#SBATCH --gres=gpu:1\n"
		"set -u\n"
		"runs=(\n"
		"\ta_d8_s1\n"
		"\ta_d8_s2\n"
		")\n"
		"exec /opt/bin/supkit-sweep task /w/my-sweep \"${runs[$SLURM_ARRAY_TASK_ID]}\"\n";
	CHECK_STREQ(t, want);
	free(t);
	/* paths the shell or sbatch would take apart */
	const char *badp[] = {"/w/a b", "/w/50%", "/w/$x", "/w/a'b", "/w/a\nb"};
	for (int i = 0; i < 5; i++) {
		t = sweep_sbatch_script(&s, badp[i], "/x", names, 2, "", &e);
		CHECK(t == NULL && e.code == EXIT_USAGE);
		free(t);
	}
	sweep_free(&s);
	/* gres: gpu:1 unless every run is on the CPU; none by hand */
	rc = load(&s, "arms = 00\nseeds = 1\n", &e);
	CHECK(rc == 0 && !strcmp(sweep_gres(&s), "gpu:1"));
	sweep_free(&s);
	rc = load(&s, "arms = 00\nseeds = 1\nbackend = cuda\nslurm_gres = none\n", &e);
	CHECK(rc == 0 && !strcmp(sweep_gres(&s), ""));
	sweep_free(&s);
	rc = load(&s, "arms = 00\nseeds = 1\nbackend = cpu\nslurm_gres = gpu:a100:2\n", &e);
	CHECK(rc == 0 && !strcmp(sweep_gres(&s), "gpu:a100:2"));
	sweep_free(&s);
}

struct seen {
	int n;
	int idx[32];
	char st[32][32];
};

static void on_task(int index, const char *state, void *ctx)
{
	struct seen *s = ctx;
	if (s->n < 32) {
		s->idx[s->n] = index;
		snprintf(s->st[s->n], sizeof s->st[0], "%s", state);
		s->n++;
	}
}

TEST(squeue_sacct_sbatch_readings)
{
	struct seen s = {0};
	slurm_parse_squeue("12|0|RUNNING\n12|1|RUNNING\n13|0|PENDING\n12|2-4%2|PENDING\n12|7,9|PENDING\n", "12",
			   on_task, &s);
	int want_i[] = {0, 1, 2, 3, 4, 7, 9};
	CHECK(s.n == 7);
	for (int i = 0; i < 7 && i < s.n; i++)
		CHECK(s.idx[i] == want_i[i]);
	CHECK_STREQ(s.st[0], "RUNNING");
	CHECK_STREQ(s.st[2], "PENDING");
	memset(&s, 0, sizeof s);
	slurm_parse_sacct("12_0|COMPLETED\n12_1|CANCELLED by 0\n120_2|FAILED\n12_[2-3%1]|PENDING\n12|RUNNING\n", "12",
			  on_task, &s);
	CHECK(s.n == 4);
	CHECK(s.idx[1] == 1 && !strcmp(s.st[1], "CANCELLED"));
	CHECK(s.idx[2] == 2 && s.idx[3] == 3 && !strcmp(s.st[3], "PENDING"));
	char id[32];
	CHECK(slurm_parse_job_id("4711\n", id, sizeof id) == 0 && !strcmp(id, "4711"));
	CHECK(slurm_parse_job_id("4711;cluster2\n", id, sizeof id) == 0 && !strcmp(id, "4711"));
	CHECK(slurm_parse_job_id("Submitted batch job 5\n", id, sizeof id) == -1);
	CHECK(slurm_parse_job_id("", id, sizeof id) == -1);
}

static void put_result(const char *dir, const char *sha, double bpb)
{
	char *p = path_join(dir, "result.json");
	char *t = xasprintf("{\"config_sha256\": \"%s\", \"val_bpb\": %.6f}\n", sha, bpb);
	struct err e;
	file_write_atomic(p, t, strlen(t), &e);
	free(t);
	free(p);
}

TEST(run_states_from_files_and_locks)
{
	char *rd = tpath("runs/r1");
	struct err e;
	dir_make_all(rd, &e);
	const char *sha = "1111111111111111111111111111111111111111111111111111111111111111";
	struct run_status st;
	sweep_run_state(rd, sha, NULL, &st);
	CHECK(st.state == RUN_PENDING && !strcmp(st.detail, "not started"));
	/* queued in Slurm */
	struct slurm_task q = {"55", 3, "PENDING", 1};
	sweep_run_state(rd, sha, &q, &st);
	CHECK(st.state == RUN_PENDING && strstr(st.detail, "slurm job 55_3 PENDING"));
	snprintf(q.state, sizeof q.state, "RUNNING");
	sweep_run_state(rd, sha, &q, &st);
	CHECK(st.state == RUN_RUNNING);
	/* started, no exit status: failed */
	char *log = path_join(rd, "train.log");
	file_write_atomic(log, "x\n", 2, &e);
	sweep_run_state(rd, sha, NULL, &st);
	CHECK(st.state == RUN_FAILED && strstr(st.detail, "no exit status"));
	char *ex = path_join(rd, "sweep_exit");
	file_write_atomic(ex, "exit 3\n", 7, &e);
	struct slurm_task f = {"55", 3, "FAILED", 0};
	sweep_run_state(rd, sha, &f, &st);
	CHECKF(st.state == RUN_FAILED && !strcmp(st.detail, "exit 3, slurm FAILED"), "%s", st.detail);
	char *ck = path_join(rd, "checkpoint");
	mkdir(ck, 0755);
	sweep_run_state(rd, sha, NULL, &st);
	CHECKF(st.resumable && strstr(st.detail, "checkpoint: resumes"), "%s", st.detail);
	/* the sweep's lock, held by another open file of this process */
	char *lk = path_join(rd, ".sweep.lock");
	int fd;
	CHECK(sweep_lock(lk, rd, &fd, &e) == 0);
	sweep_run_state(rd, sha, NULL, &st);
	CHECKF(st.state == RUN_RUNNING, "%s", st.detail);
	int fd2;
	double t0 = now_seconds();
	CHECK(sweep_lock(lk, rd, &fd2, &e) == -1 && strstr(e.msg, "is in use by process"));
	CHECK(now_seconds() - t0 > 0.5);   /* retried for about a second */
	close(fd);
	sweep_run_state(rd, sha, NULL, &st);
	CHECK(st.state == RUN_FAILED);
	/* the trainer's lock: running only while the process it names lives */
	char *tl = path_join(rd, ".lock");
	char pid[32];
	snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	file_write_atomic(tl, pid, strlen(pid), &e);
	int tfd = open(tl, O_RDONLY);
	CHECK(flock(tfd, LOCK_EX) == 0);
	sweep_run_state(rd, sha, NULL, &st);
	CHECKF(st.state == RUN_RUNNING && strstr(st.detail, "supkit train"), "%s", st.detail);
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	snprintf(pid, sizeof pid, "%ld\n", (long)child);   /* a process that is gone */
	int w = open(tl, O_WRONLY | O_TRUNC);
	CHECK(write(w, pid, strlen(pid)) == (ssize_t)strlen(pid));
	close(w);
	sweep_run_state(rd, sha, NULL, &st);
	CHECKF(st.state == RUN_FAILED, "a lock naming a dead process probed: %s", st.detail);
	close(tfd);
	/* results */
	put_result(rd, "2222222222222222222222222222222222222222222222222222222222222222", 1.5);
	sweep_run_state(rd, sha, NULL, &st);
	CHECKF(st.state == RUN_FAILED && strstr(st.detail, "another config"), "%s", st.detail);
	put_result(rd, sha, 1.25);
	sweep_run_state(rd, sha, &q, &st);
	CHECK(st.state == RUN_DONE && st.val_bpb == 1.25 && !strcmp(st.detail, "val_bpb 1.250000"));
	free(rd);
	free(log);
	free(ex);
	free(ck);
	free(lk);
	free(tl);
}

TEST(collect_copies_replaces_and_cleans)
{
	char *rd = tpath("runs/c1");
	char *res = tpath("results");
	struct err e;
	dir_make_all(rd, &e);
	const char *files[] = {"result.json", "curve.jsonl", "config.cfg", "model.safetensors"};
	for (int i = 0; i < 4; i++) {
		char *p = path_join(rd, files[i]);
		file_write_atomic(p, files[i], strlen(files[i]), &e);
		free(p);
	}
	put_file("results/c1.tmp-abcdef/result.json", "left by a killed copy");
	CHECKF(sweep_collect(rd, res, "c1", &e) == 0, "%s", e.msg);
	char *buf;
	size_t len;
	char *p = tpath("results/c1/curve.jsonl");
	CHECK(file_read_all(p, 0, &buf, &len, &e) == 0 && !strcmp(buf, "curve.jsonl"));
	free(buf);
	free(p);
	p = tpath("results/c1/model.safetensors");
	struct stat st;
	CHECK(stat(p, &st) != 0);   /* only the three records */
	free(p);
	p = tpath("results/c1.tmp-abcdef");
	CHECK(stat(p, &st) != 0);
	free(p);
	/* a new result replaces the copy */
	char *r = path_join(rd, "result.json");
	file_write_atomic(r, "{\"v\": 2}", 8, &e);
	CHECK(sweep_collect(rd, res, "c1", &e) == 0);
	p = tpath("results/c1/result.json");
	CHECK(file_read_all(p, 0, &buf, &len, &e) == 0 && !strcmp(buf, "{\"v\": 2}"));
	free(buf);
	free(p);
	int entries = 0;
	DIR *d = opendir(res);
	struct dirent *de;
	while (d && (de = readdir(d)))
		entries += de->d_name[0] != '.';
	if (d)
		closedir(d);
	CHECK(entries == 1);
	/* a run without its records: an error, the copy kept */
	unlink(r);
	CHECK(sweep_collect(rd, res, "c1", &e) == -1);
	p = tpath("results/c1/result.json");
	CHECK(stat(p, &st) == 0);
	free(p);
	free(r);
	free(rd);
	free(res);
}

TEST(capture_a_command)
{
	char *argv[] = {"sh", "-c", "echo out; echo err1 >&2; echo err2 >&2; exit 3", NULL};
	char *out;
	char errl[64];
	struct err e;
	int ws = sweep_capture(argv, &out, errl, sizeof errl, &e);
	CHECK(ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 3);
	CHECK(out && !strcmp(out, "out\n"));
	CHECK_STREQ(errl, "err1");
	free(out);
	char *none[] = {"supkit-no-such-command", NULL};
	CHECK(sweep_capture(none, &out, errl, sizeof errl, &e) == -1 && e.code == EXIT_SYS);
	CHECK(strstr(e.msg, "cannot run 'supkit-no-such-command'") != NULL);
}

int main(void)
{
	snprintf(tmp_root, sizeof tmp_root, "/tmp/test_sweep.XXXXXX");
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 4;
	}
	RUN(expands_in_order_with_names);
	RUN(d6_arm_files_equal_sweep_at_depth_6);
	RUN(named_arm_over_base_is_train_arm);
	RUN(refusals_name_file_and_line);
	RUN(sbatch_script_exact);
	RUN(squeue_sacct_sbatch_readings);
	RUN(run_states_from_files_and_locks);
	RUN(collect_copies_replaces_and_cleans);
	RUN(capture_a_command);
	dir_remove_tree(tmp_root);
	return t_done();
}

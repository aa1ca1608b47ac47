/* test_figure.c: plot/figure.c, runs.c and report.c without drawing: axis
 * ranges and ticks in 1-2-5 steps checked against their definition over
 * many random ranges, log ticks, tick labels, output formats, the EMA
 * smoothing against its formula, run folders (layout, fields, the
 * warm-down start, every refusal) and telling the audit reports apart. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/rng.h"
#include "plot/figure.h"
#include "plot/plots.h"
#include "t.h"

/* Whether s is 1, 2 or 5 times a power of ten. */
static int nice_step(double s)
{
	double k = floor(log10(s) + 1e-12);
	double m = s / pow(10, k);
	return fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9;
}

static int multiple(double v, double s)
{
	double q = v / s;
	return fabs(q - round(q)) < 1e-6;
}

/* The next smaller 1-2-5 step. */
static double smaller(double s)
{
	double k = floor(log10(s) + 1e-12);
	double m = round(s / pow(10, k));
	return m == 1 ? 5 * pow(10, k - 1) : m == 2 ? pow(10, k) : 2 * pow(10, k);
}

TEST(linear_ticks_follow_their_definition)
{
	struct rng r;
	rng_seed(&r, 7);
	for (int it = 0; it < 2000; it++) {
		double c = (rng_uniform(&r) - 0.5) * pow(10, (int)(rng_uniform(&r) * 12) - 6);
		double w = pow(10, rng_uniform(&r) * 10 - 6);
		if (w < fabs(c) * 1e-4)   /* at least 4 significant digits apart */
			w = fabs(c) * 1e-4;
		double lo = c - w * rng_uniform(&r), hi = c + w * rng_uniform(&r) + 1e-9 * w;
		struct plot_axis a;
		memset(&a, 0, sizeof a);
		plot_axis_ticks(&a, lo, hi);
		int n = (int)lround((a.hi - a.lo) / a.step);
		CHECKF(nice_step(a.step), "[%g, %g]: step %g", lo, hi, a.step);
		CHECKF(a.lo <= lo && a.hi >= hi, "[%g, %g] not inside [%g, %g]", lo, hi, a.lo, a.hi);
		CHECKF(multiple(a.lo, a.step) && multiple(a.hi, a.step), "[%g, %g]: ends not on the step %g",
		       a.lo, a.hi, a.step);
		CHECKF(n <= 8 && a.nticks == n + 1, "[%g, %g]: %d intervals, %d ticks", lo, hi, n, a.nticks);
		/* the smallest such step: the next smaller needs more than 8 intervals */
		double s = smaller(a.step);
		double k = ceil(hi / s - 1e-9) - floor(lo / s + 1e-9);
		CHECKF(k > 8, "[%g, %g]: step %g would do (%g intervals)", lo, hi, s, k);
		for (int i = 0; i < a.nticks; i++)
			CHECK(fabs(a.ticks[i] - (a.lo + i * a.step)) <= 1e-9 * fmax(fabs(a.lo), a.step));
		if (t_cur_failed)
			break;
	}
	/* worked cases */
	struct plot_axis a;
	memset(&a, 0, sizeof a);
	plot_axis_ticks(&a, 0, 100);
	CHECK(a.lo == 0 && a.hi == 100 && a.step == 20 && a.nticks == 6);
	plot_axis_ticks(&a, 2.55, 2.79);
	CHECK(fabs(a.lo - 2.55) < 1e-12 && fabs(a.hi - 2.8) < 1e-12 && fabs(a.step - 0.05) < 1e-15);
	plot_axis_ticks(&a, -0.027, 0.004);
	CHECK(fabs(a.lo + 0.03) < 1e-12 && fabs(a.hi - 0.005) < 1e-12 && fabs(a.step - 0.005) < 1e-15);
	/* integer axis: no step below 1; one value: a range around it */
	memset(&a, 0, sizeof a);
	a.integer = 1;
	plot_axis_ticks(&a, 0, 3);
	CHECK(a.lo == 0 && a.hi == 3 && a.step == 1 && a.nticks == 4);
	memset(&a, 0, sizeof a);
	plot_axis_ticks(&a, 5, 5);
	CHECK(a.lo < 5 && a.hi > 5);
	plot_axis_ticks(&a, NAN, NAN);
	CHECK(a.lo == 0 && a.hi == 1);
	/* fixed range: kept, ticks inside */
	memset(&a, 0, sizeof a);
	plot_axis_fix(&a, 0.5, 9.5);
	plot_axis_ticks(&a, 0, 100);
	CHECK(a.lo == 0.5 && a.hi == 9.5 && a.ticks[0] >= 0.5 && a.ticks[a.nticks - 1] <= 9.5);
}

TEST(log_ticks)
{
	struct plot_axis a;
	memset(&a, 0, sizeof a);
	a.log = 1;
	plot_axis_ticks(&a, 3, 700);   /* three decades: the powers of ten */
	CHECK(a.lo == 1 && a.hi == 1000 && a.nticks == 4);
	CHECK(a.ticks[0] == 1 && fabs(a.ticks[3] - 1000) < 1e-9);
	plot_axis_ticks(&a, 0.05, 0.8);   /* two decades: 1, 2, 5 */
	double want[7] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1};
	CHECK(fabs(a.lo - 0.01) < 1e-15 && a.hi == 1 && a.nticks == 7);
	for (int i = 0; i < 7 && i < a.nticks; i++)
		CHECK(fabs(a.ticks[i] - want[i]) < 1e-12 * want[i]);
	plot_axis_ticks(&a, 1e-12, 1e12);   /* 24 decades: every third labelled */
	CHECK(a.nticks <= 9 && a.nticks >= 5);
	plot_axis_ticks(&a, -1, 5);   /* no positive lower end: 1..10 */
	CHECK(a.lo == 1 && a.hi == 10);
}

TEST(tick_labels)
{
	struct plot_axis a;
	char b[64];
	memset(&a, 0, sizeof a);
	plot_axis_ticks(&a, 2.55, 2.79);
	plot_tick_label(&a, 2.6, b, sizeof b);
	CHECK_STREQ(b, "2.60");
	plot_axis_ticks(&a, 0, 3e6);   /* tokens */
	plot_tick_label(&a, 1.5e6, b, sizeof b);
	CHECK_STREQ(b, "1.5M");
	plot_tick_label(&a, 0, b, sizeof b);
	CHECK_STREQ(b, "0");
	plot_axis_ticks(&a, 0, 60000);
	plot_tick_label(&a, 20000, b, sizeof b);
	CHECK_STREQ(b, "20k");
	plot_axis_ticks(&a, -0.027, 0.004);
	plot_tick_label(&a, -0.015, b, sizeof b);
	CHECK_STREQ(b, "-0.015");
	plot_tick_label(&a, -1e-18, b, sizeof b);   /* rounding near zero: no "-0.000" */
	CHECK_STREQ(b, "0.000");
	plot_axis_ticks(&a, 0, 8e-7);
	plot_tick_label(&a, 2e-7, b, sizeof b);
	CHECK_STREQ(b, "2e-7");
	a.log = 1;
	plot_axis_ticks(&a, 0.05, 80);
	plot_tick_label(&a, 10, b, sizeof b);
	CHECK_STREQ(b, "10");
	plot_tick_label(&a, 0.02, b, sizeof b);
	CHECK_STREQ(b, "0.02");
	plot_tick_label(&a, 1e-5, b, sizeof b);
	CHECK_STREQ(b, "1e-5");
	plot_tick_label(&a, 1e6, b, sizeof b);
	CHECK_STREQ(b, "1M");
	char *cats[2] = {"wte", "lm_head"};
	memset(&a, 0, sizeof a);
	plot_axis_categories(&a, cats, 2);
	plot_axis_ticks(&a, NAN, NAN);
	CHECK(a.lo == -0.5 && a.hi == 1.5);
	plot_tick_label(&a, 1, b, sizeof b);
	CHECK_STREQ(b, "lm_head");
	for (int i = 0; i < a.ncat; i++)
		free(a.cat[i]);
	free(a.cat);
}

TEST(formats)
{
	enum plot_format f;
	struct err e;
	CHECK(plot_format_of("a/b.png", &f, &e) == 0 && f == PLOT_PNG);
	CHECK(plot_format_of("x.SVG", &f, &e) == 0 && f == PLOT_SVG);
	CHECK(plot_format_of("x.pdf", &f, &e) == 0 && f == PLOT_PDF);
	CHECK(plot_format_of("x.jpg", &f, &e) < 0 && e.code == EXIT_USAGE && strstr(e.msg, "'x.jpg'"));
	CHECK(plot_format_of("x", &f, &e) < 0);
	CHECK(plot_format_of("d.png/x", &f, &e) < 0);
}

TEST(smoothing_is_debiased_ema)
{
	double y[5] = {0, 2, 4, 4, 1}, s[5];
	plot_smooth(y, 5, 0.5, s);
	/* s_i = 0.5 s_{i-1} + 0.5 y_i from 0, over 1 - 0.5^(i+1) */
	double acc = 0, w = 1;
	for (int i = 0; i < 5; i++) {
		acc = 0.5 * acc + 0.5 * y[i];
		w *= 0.5;
		CHECK_NEAR(s[i], acc / (1 - w), 1e-15);
	}
	double c[3] = {3, 3, 3};
	plot_smooth(c, 3, 0.9, s);
	CHECK_NEAR(s[0], 3, 1e-14);   /* debiased: a constant stays itself */
	CHECK_NEAR(s[2], 3, 1e-14);
	plot_smooth(y, 5, 0, s);
	CHECK(memcmp(s, y, sizeof y) == 0);
}

/* ---- run folders ---- */

static char tmpdir[256];

static void write_file(const char *dir, const char *name, const char *text)
{
	char *p = path_join(dir, name);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	free(p);
}

static char *mkrun(const char *name)
{
	char *d = path_join(tmpdir, name);
	mkdir(d, 0755);
	return d;
}

TEST(run_folder_read)
{
	char *d = mkrun("r1");
	write_file(d, "curve.jsonl",
		   "{\"step\":0,\"loss\":6,\"lrm\":1}\n"
		   "{\"step\":1,\"loss\":5.5,\"lrm\":1,\"val_bpb\":2.5}\n"
		   "\n"
		   "{\"step\":2,\"loss\":5,\"lrm\":0.5}\n"
		   "{\"step\":3,\"loss\":4.5,\"lrm\":0.25}\n");
	write_file(d, "config.cfg", "# c\narm = 01_dense_opt\nseed = 43\ndepth = 2\nsteps = 4\n"
		   "warmup_steps = 0\nwarmdown_ratio = 0.5\nbatch_rows = 2\nseq_len = 8\ngrad_accum = 3\n");
	write_file(d, "result.json", "{\"val_bpb\": 2.25, \"steps\": 4}");
	struct plot_run r;
	struct err e;
	CHECKF(plot_run_read(d, &r, &e) == 0, "%s", e.msg);
	CHECK(r.n == 4 && r.step[3] == 3 && r.loss[1] == 5.5);
	CHECK_STREQ(r.arm, "01_dense_opt");
	CHECK(r.seed == 43 && r.depth == 2 && r.steps == 4);
	CHECK(r.tokens_per_step == 48);
	/* validation after step 1's update (x = 2), the final one at x = steps */
	CHECK(r.nval == 2 && r.val_x[0] == 2 && r.val_bpb[0] == 2.5 && r.val_x[1] == 4 && r.val_bpb[1] == 2.25);
	CHECK(r.warmdown == 2);   /* W + (1 - 0.5)(S - W) */
	struct plot_run *rs;
	int n;
	char *paths[1] = {tmpdir};   /* a folder of run folders */
	CHECKF(plot_runs_read(paths, 1, &rs, &n, &e) == 0, "%s", e.msg);
	CHECK(n == 1);
	plot_runs_free(rs, n);
	/* without config.cfg: arm from result.json, warm-down from lrm < 1 */
	char *d2 = mkrun("r2_s7");
	write_file(d2, "curve.jsonl", "{\"step\":0,\"loss\":6,\"lrm\":1}\n{\"step\":5,\"loss\":5,\"lrm\":0.9}\n");
	write_file(d2, "result.json", "{\"arm\":\"x\",\"seed\":7,\"tokens_per_step\":100}");
	struct plot_run r2;
	CHECKF(plot_run_read(d2, &r2, &e) == 0, "%s", e.msg);
	CHECK_STREQ(r2.arm, "x");
	CHECK(r2.seed == 7 && r2.warmdown == 5 && r2.tokens_per_step == 100 && r2.steps == 6);
	plot_runs_free(NULL, 0);
	struct plot_run *two = xcalloc(2, sizeof *two);
	two[0] = r;
	two[1] = r2;
	plot_runs_free(two, 2);
	free(d);
	free(d2);
}

static void refused(const char *curve, const char *want)
{
	char *d = mkrun("bad");
	write_file(d, "curve.jsonl", curve);
	struct plot_run r;
	struct err e;
	err_clear(&e);
	int rc = plot_run_read(d, &r, &e);
	CHECKF(rc < 0 && e.code == EXIT_USAGE && strstr(e.msg, want) && strstr(e.msg, "curve.jsonl"),
	       "'%s': got rc %d, '%s'", want, rc, e.msg);
	free(d);
}

TEST(run_folder_refusals)
{
	refused("", "no steps (an empty run)");
	refused("\n\n", "no steps");
	refused("{\"step\":0,\"loss\":null}\n", "line 1: 'loss' is not a finite number");
	refused("{\"step\":0,\"loss\":1}\n{\"step\":1,\"loss\":NaN}\n",
		"line 2, column 18: a NaN or infinity, not a finite number");
	refused("{\"step\":0,\"loss\":1}\n{\"step\":1,\"loss\":-Infinity}\n", "line 2, column 18: a NaN");
	refused("{\"step\":0,\"loss\":1} x\n", "line 1, column 21: not valid JSON");
	refused("{\"step\":0,\"loss\":1\n", "line 1, column 18: not valid JSON");
	refused("{\"step\":0,\"loss\":1,\"val_bpb\":null}\n", "'val_bpb' is not a finite number");
	refused("{\"step\":0,\"loss\":\"x\"}\n", "'loss' is not a finite number");
	refused("{\"loss\":1}\n", "line 1: no 'step'");
	refused("{\"step\":1,\"loss\":1}\n{\"step\":1,\"loss\":1}\n", "step 1 does not follow step 1");
	refused("{\"step\":0.5,\"loss\":1}\n", "is not an integer");
	refused("[1]\n", "not a JSON object");
	struct err e;
	struct plot_run *rs;
	int n;
	char *empty = mkrun("empty");
	char *paths[1] = {empty};
	CHECK(plot_runs_read(paths, 1, &rs, &n, &e) < 0 && strstr(e.msg, "no curve.jsonl"));
	char *nowhere = path_join(tmpdir, "nowhere");
	paths[0] = nowhere;
	CHECK(plot_runs_read(paths, 1, &rs, &n, &e) < 0 && strstr(e.msg, "not a folder"));
	/* a broken result.json */
	char *d = mkrun("badres");
	write_file(d, "curve.jsonl", "{\"step\":0,\"loss\":1}\n");
	write_file(d, "result.json", "{");
	struct plot_run r;
	CHECK(plot_run_read(d, &r, &e) < 0 && strstr(e.msg, "result.json"));
	free(d);
	free(empty);
	free(nowhere);
}

TEST(report_kinds)
{
	static const struct {
		const char *json;
		int kind;
	} c[] = {
		{"{\"cells\":[],\"contrasts\":[]}", PLOT_REPORT_STATS},
		{"{\"checkpoints\":[],\"arms\":{},\"method\":\"gram\"}", PLOT_REPORT_GEOMETRY},
		{"{\"modes\":[]}", PLOT_REPORT_TRAJECTORY},
		{"{\"contrasts\":[]}", -1},
		{"[]", -1},
		{"{\"checkpoints\":[]}", -1},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		cJSON *j = cJSON_Parse(c[i].json);
		CHECKF(plot_report_kind(j) == c[i].kind, "%s", c[i].json);
		cJSON_Delete(j);
	}
	char *d = path_join(tmpdir, "g.json");
	FILE *f = fopen(d, "w");
	fputs("{\"checkpoints\":[],\"arms\":{}}", f);
	fclose(f);
	struct err e;
	CHECK(plot_report_read(d, PLOT_REPORT_STATS, &e) == NULL && e.code == EXIT_USAGE);
	CHECKF(strstr(e.msg, "an audit geometry report (supkit audit geometry --json), not an audit stats "
			     "report (supkit audit stats --json)") != NULL, "%s", e.msg);
	cJSON *j = plot_report_read(d, PLOT_REPORT_GEOMETRY, &e);
	CHECK(j != NULL);
	cJSON_Delete(j);
	f = fopen(d, "w");
	fputs("{\"x\":1}", f);
	fclose(f);
	CHECK(plot_report_read(d, PLOT_REPORT_TRAJECTORY, &e) == NULL &&
	      strstr(e.msg, "not an audit trajectory report"));
	free(d);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/supkit-test-figure-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 4;
	RUN(linear_ticks_follow_their_definition);
	RUN(log_ticks);
	RUN(tick_labels);
	RUN(formats);
	RUN(smoothing_is_debiased_ema);
	RUN(run_folder_read);
	RUN(run_folder_refusals);
	RUN(report_kinds);
	dir_remove_tree(tmpdir);
	return t_done();
}

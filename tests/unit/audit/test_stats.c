/* test_stats.c: unit tests of audit/stats.h (supkit audit stats).
 *
 * References: tests/fixtures/stats/intervals.json (t quantiles and intervals
 * from make_intervals.py: incomplete-beta bisection and numpy), stats.json (the
 * figures of papers 000/001; docs/papers.md), and brute force for the
 * ranges behind the rounding-aware check.
 */
#include "t.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audit/stats.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/rng.h"

static cJSON *fixture_json(const char *name)
{
	char *p = path_join(t_fixtures(), name);
	struct err e = {0};
	cJSON *j = json_read_file(p, 0, &e);
	if (!j)
		printf("  cannot read fixture: %s\n", e.msg);
	free(p);
	return j;
}

static double num(const cJSON *v)
{
	if (cJSON_IsString(v))
		return strtod(v->valuestring, NULL);
	return v ? v->valuedouble : NAN;
}

TEST(t_quantiles_match_reference)
{
	cJSON *j = fixture_json("stats/intervals.json");
	CHECK(j);
	if (!j)
		return;
	const cJSON *q = cJSON_GetObjectItem(j, "t975");
	int n = 0;
	for (const cJSON *x = q ? q->child : NULL; x; x = x->next, n++) {
		double df = strtod(x->string, NULL);
		CHECK_NEAR(stats_t_quantile(0.975, df), x->valuedouble, 1e-10);
	}
	CHECK(n == 5);
	/* Published two-sided 95% critical values, many digits. */
	static const double known[][2] = {{1, 12.706204736174704}, {2, 4.302652729749464},
					  {3, 3.182446305284263}, {10, 2.228138851986274},
					  {30, 2.042272456301238}};
	for (size_t i = 0; i < 5; i++)
		CHECK_NEAR(stats_t_quantile(0.975, known[i][0]), known[i][1], 1e-12);
	/* The t_crit the vectors print. */
	char buf[32];
	stats_printed_format(stats_t_quantile(0.975, 2), 6, 0, buf, sizeof buf);
	CHECK_STREQ(buf, "4.302653");
	stats_printed_format(stats_t_quantile(0.975, 3), 6, 0, buf, sizeof buf);
	CHECK_STREQ(buf, "3.182446");
	cJSON_Delete(j);
}

TEST(intervals_match_numpy)
{
	cJSON *j = fixture_json("stats/intervals.json");
	CHECK(j);
	if (!j)
		return;
	int n = 0;
	for (const cJSON *c = cJSON_GetObjectItem(j, "cases")->child; c; c = c->next, n++) {
		const cJSON *xs = cJSON_GetObjectItem(c, "x");
		size_t m = (size_t)cJSON_GetArraySize(xs);
		double *x = malloc(m * sizeof *x);
		for (size_t i = 0; i < m; i++)
			x[i] = cJSON_GetArrayItem(xs, (int)i)->valuedouble;
		struct stats_summary s;
		stats_summarize(x, m, &s);
		const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
		CHECKF(fabs(s.mean - num(cJSON_GetObjectItem(c, "mean"))) < 1e-15, "%s mean", name);
		CHECKF(fabs(s.sd - num(cJSON_GetObjectItem(c, "sd"))) < 1e-15, "%s sd", name);
		CHECK_NEAR(s.t, num(cJSON_GetObjectItem(c, "t")), 1e-10);
		const cJSON *ci = cJSON_GetObjectItem(c, "ci");
		CHECKF(fabs(s.ci[0] - num(cJSON_GetArrayItem(ci, 0))) < 1e-13, "%s ci low", name);
		CHECKF(fabs(s.ci[1] - num(cJSON_GetArrayItem(ci, 1))) < 1e-13, "%s ci high", name);
		CHECK((double)s.improved == num(cJSON_GetObjectItem(c, "improved")));
		free(x);
	}
	CHECK(n == 6);
	cJSON_Delete(j);
}

TEST(papers_example)
{
	/* The papers' example: -0.001009, -0.000730, -0.002445 give -0.001395 +- 0.000920,
	 * 95% CI [-0.003680, +0.000891]. The low bound recomputes to -0.003681:
	 * the paper used unrounded deltas, which the check calls rounding. */
	double d[3] = {-0.001009, -0.000730, -0.002445};
	struct stats_summary s;
	stats_summarize(d, 3, &s);
	char b[32];
	stats_printed_format(s.mean, 6, 1, b, sizeof b);
	CHECK_STREQ(b, "-0.001395");
	stats_printed_format(s.sd, 6, 0, b, sizeof b);
	CHECK_STREQ(b, "0.000920");
	stats_printed_format(s.ci[1], 6, 1, b, sizeof b);
	CHECK_STREQ(b, "+0.000891");
	CHECK(s.improved == 3);
	double lo[3], hi[3], rmin, rmax;
	for (int i = 0; i < 3; i++) {
		lo[i] = d[i] - 1e-6; /* two inputs, each +- 0.5e-6 */
		hi[i] = d[i] + 1e-6;
	}
	stats_range(STATS_FIG_CI_LO, lo, hi, 3, &rmin, &rmax);
	CHECK(stats_judge(s.ci[0], rmin, rmax, "-0.003680") == STATS_ROUNDING);
	CHECK(stats_judge(s.ci[0], rmin, rmax, "-0.003681") == STATS_OK);
	CHECK(stats_judge(s.ci[0], rmin, rmax, "-0.003690") == STATS_INCONSISTENT);
	stats_range(STATS_FIG_MEAN, lo, hi, 3, &rmin, &rmax);
	CHECK(stats_judge(s.mean, rmin, rmax, "-0.001395") == STATS_OK);
	CHECK(stats_judge(s.mean, rmin, rmax, "-0.001396") == STATS_ROUNDING);
	CHECK(stats_judge(s.mean, rmin, rmax, "-0.001398") == STATS_INCONSISTENT);
}

TEST(printed_parse_and_format)
{
	double v;
	int d;
	CHECK(stats_printed_parse("+0.000891", &v, &d) == 0 && d == 6 && fabs(v - 0.000891) < 1e-18);
	CHECK(stats_printed_parse("48.6", &v, &d) == 0 && d == 1);
	CHECK(stats_printed_parse("100", &v, &d) == 0 && d == 0);
	CHECK(stats_printed_parse("1.", &v, &d) < 0);
	CHECK(stats_printed_parse("abc", &v, &d) < 0);
	CHECK(stats_printed_parse("1e-3", &v, &d) < 0);
	char b[32];
	stats_printed_format(-1e-9, 6, 1, b, sizeof b);
	CHECK_STREQ(b, "+0.000000");
	stats_printed_format(-1e-9, 6, 0, b, sizeof b);
	CHECK_STREQ(b, "0.000000");
	CHECK(stats_judge(-1e-9, -1e-9, -1e-9, "0.000000") == STATS_OK);
	CHECK(stats_judge(-1e-9, -1e-9, -1e-9, "-0.000000") == STATS_OK);
}

/* Every figure of the vectors, from each entry's own printed inputs. */
TEST(vectors_reproduced_at_printed_precision)
{
	cJSON *j = fixture_json("stats/stats.json");
	CHECK(j);
	if (!j)
		return;
	size_t ok = 0, rounding = 0, bad = 0;
	const double h = 0.5e-6;
	for (const cJSON *c = cJSON_GetObjectItem(j, "contrasts")->child; c; c = c->next) {
		const cJSON *terms = cJSON_GetObjectItem(c, "terms"), *in = cJSON_GetObjectItem(c, "inputs");
		const cJSON *seeds = cJSON_GetObjectItem(c, "seeds"), *pub = cJSON_GetObjectItem(c, "published");
		const char *id = cJSON_GetObjectItem(c, "id")->valuestring;
		size_t n = (size_t)cJSON_GetArraySize(seeds), nt = (size_t)cJSON_GetArraySize(terms);
		double d[8] = {0}, lo[8], hi[8];
		for (size_t i = 0; i < n; i++) {
			const char *s = cJSON_GetArrayItem(seeds, (int)i)->valuestring;
			for (size_t t = 0; t < nt; t++) {
				const cJSON *tm = cJSON_GetArrayItem(terms, (int)t);
				const char *cell = cJSON_GetArrayItem(tm, 1)->valuestring;
				d[i] += num(cJSON_GetArrayItem(tm, 0)) *
					num(cJSON_GetObjectItem(cJSON_GetObjectItem(in, cell), s));
			}
			lo[i] = d[i] - h * (double)nt;
			hi[i] = d[i] + h * (double)nt;
		}
		struct stats_summary s;
		stats_summarize(d, n, &s);
		struct {
			enum stats_figure f;
			double v;
			const cJSON *p;
			double units; /* README: means and SDs one unit off at most, bounds two */
		} figs[] = {
			{STATS_FIG_MEAN, s.mean, cJSON_GetObjectItem(pub, "mean"), 1},
			{STATS_FIG_SD, s.sd, cJSON_GetObjectItem(pub, "sd"), 1},
			{STATS_FIG_CI_LO, s.ci[0], cJSON_GetArrayItem(cJSON_GetObjectItem(pub, "ci"), 0), 2},
			{STATS_FIG_CI_HI, s.ci[1], cJSON_GetArrayItem(cJSON_GetObjectItem(pub, "ci"), 1), 2},
		};
		for (size_t f = 0; f < 4; f++) {
			double rmin, rmax;
			stats_range(figs[f].f, lo, hi, n, &rmin, &rmax);
			enum stats_verdict v = stats_judge(figs[f].v, rmin, rmax, figs[f].p->valuestring);
			ok += v == STATS_OK;
			rounding += v == STATS_ROUNDING;
			CHECKF(v != STATS_INCONSISTENT, "%s figure %zu: published %s, computed %.9f", id, f,
			       figs[f].p->valuestring, figs[f].v);
			CHECKF(fabs(figs[f].v - num(figs[f].p)) <= (figs[f].units + 0.5) * 1e-6 + 1e-12,
			       "%s figure %zu more than %g units off", id, f, figs[f].units);
			bad += v == STATS_INCONSISTENT;
		}
		const cJSON *sd = cJSON_GetObjectItem(pub, "seed_deltas");
		for (size_t i = 0; sd && i < n; i++) {
			const char *p = cJSON_GetArrayItem(sd, (int)i)->valuestring;
			enum stats_verdict v = stats_judge(d[i], lo[i], hi[i], p);
			CHECKF(v != STATS_INCONSISTENT, "%s delta %zu: %s vs %.9f", id, i, p, d[i]);
			ok += v == STATS_OK;
			rounding += v == STATS_ROUNDING;
		}
		const cJSON *k = cJSON_GetObjectItem(pub, "k_improved");
		if (k) {
			char b[16];
			snprintf(b, sizeof b, "%zu/%zu", s.improved, n);
			CHECK_STREQ(b, k->valuestring);
		}
		char tb[32];
		stats_printed_format(s.t, 6, 0, tb, sizeof tb);
		CHECK_STREQ(tb, cJSON_GetObjectItem(c, "t_crit")->valuestring);
	}
	for (const cJSON *c = cJSON_GetObjectItem(j, "cell_stats")->child; c; c = c->next) {
		const cJSON *in = cJSON_GetObjectItem(c, "inputs"), *seeds = cJSON_GetObjectItem(c, "seeds");
		size_t n = (size_t)cJSON_GetArraySize(seeds);
		double x[8], lo[8], hi[8];
		for (size_t i = 0; i < n; i++) {
			x[i] = num(cJSON_GetObjectItem(in, cJSON_GetArrayItem(seeds, (int)i)->valuestring));
			lo[i] = x[i] - h;
			hi[i] = x[i] + h;
		}
		struct stats_summary s;
		stats_summarize(x, n, &s);
		double rmin, rmax;
		stats_range(STATS_FIG_MEAN, lo, hi, n, &rmin, &rmax);
		enum stats_verdict v1 = stats_judge(s.mean, rmin, rmax,
						    cJSON_GetObjectItem(c, "published_mean")->valuestring);
		stats_range(STATS_FIG_SD, lo, hi, n, &rmin, &rmax);
		enum stats_verdict v2 = stats_judge(s.sd, rmin, rmax,
						    cJSON_GetObjectItem(c, "published_sd")->valuestring);
		CHECK(v1 != STATS_INCONSISTENT && v2 != STATS_INCONSISTENT);
		ok += (v1 == STATS_OK) + (v2 == STATS_OK);
		rounding += (v1 == STATS_ROUNDING) + (v2 == STATS_ROUNDING);
	}
	for (const cJSON *r = cJSON_GetObjectItem(j, "ratios")->child; r; r = r->next) {
		double mean[2];
		const char *split = cJSON_GetObjectItem(r, "split")->valuestring;
		(void)split;
		for (int side = 0; side < 2; side++) {
			const cJSON *o = cJSON_GetObjectItem(r, side ? "denominator" : "numerator");
			const cJSON *terms = cJSON_GetObjectItem(o, "terms"), *in = cJSON_GetObjectItem(o, "inputs");
			const cJSON *seeds = cJSON_GetObjectItem(o, "seeds");
			double sum = 0;
			int n = cJSON_GetArraySize(seeds);
			for (int i = 0; i < n; i++)
				for (const cJSON *tm = terms->child; tm; tm = tm->next)
					sum += num(cJSON_GetArrayItem(tm, 0)) *
					       num(cJSON_GetObjectItem(cJSON_GetObjectItem(in,
						   cJSON_GetArrayItem(tm, 1)->valuestring),
						   cJSON_GetArrayItem(seeds, i)->valuestring));
			mean[side] = sum / n;
		}
		char b[32];
		stats_printed_format(100 * mean[0] / mean[1], 1, 0, b, sizeof b);
		CHECK_STREQ(b, cJSON_GetObjectItem(r, "published_pct")->valuestring);
	}
	printf("  vectors: %zu ok, %zu rounding, %zu inconsistent\n", ok, rounding, bad);
	CHECK(ok > 2 * rounding); /* mostly exact; the rest within the rounding band */
	cJSON_Delete(j);
}

static double fig(enum stats_figure f, const double *x, size_t n)
{
	struct stats_summary s;
	stats_summarize(x, n, &s);
	return f == STATS_FIG_MEAN ? s.mean : f == STATS_FIG_SD ? s.sd : f == STATS_FIG_CI_LO ? s.ci[0] : s.ci[1];
}

/* Ranges against a brute-force grid over the box (n = 3). */
TEST(ranges_match_brute_force)
{
	struct rng r;
	rng_seed(&r, 7);
	for (int trial = 0; trial < 20; trial++) {
		double lo[3], hi[3];
		double spread = trial < 10 ? 1e-3 : 2e-6; /* wide and nearly-overlapping boxes */
		for (int i = 0; i < 3; i++) {
			double c = -0.001 + spread * (rng_uniform(&r) - 0.5);
			lo[i] = c - 1e-6;
			hi[i] = c + 1e-6;
		}
		for (int f = 0; f < 4; f++) {
			double rmin, rmax, gmin = INFINITY, gmax = -INFINITY, x[3];
			stats_range((enum stats_figure)f, lo, hi, 3, &rmin, &rmax);
			const int G = 24;
			for (int a = 0; a <= G; a++)
				for (int b = 0; b <= G; b++)
					for (int c = 0; c <= G; c++) {
						x[0] = lo[0] + (hi[0] - lo[0]) * a / G;
						x[1] = lo[1] + (hi[1] - lo[1]) * b / G;
						x[2] = lo[2] + (hi[2] - lo[2]) * c / G;
						double v = fig((enum stats_figure)f, x, 3);
						if (v < gmin)
							gmin = v;
						if (v > gmax)
							gmax = v;
					}
			/* Nothing on the grid escapes the range; the range is tight. */
			double slack = 1e-15, tight = 0.1 * 2e-6 * 4.31;
			CHECKF(gmin >= rmin - slack && gmax <= rmax + slack,
			       "trial %d fig %d: grid [%.12g, %.12g] outside [%.12g, %.12g]", trial, f, gmin,
			       gmax, rmin, rmax);
			CHECKF(gmin - rmin <= tight && rmax - gmax <= tight,
			       "trial %d fig %d: range [%.12g, %.12g] loose vs grid [%.12g, %.12g]", trial, f,
			       rmin, rmax, gmin, gmax);
		}
	}
}

TEST(ratio_range_matches_vertices)
{
	struct rng r;
	rng_seed(&r, 11);
	for (int trial = 0; trial < 20; trial++) {
		enum { M = 6 };
		double a[M], b[M], lo[M], hi[M], x[M];
		for (int j = 0; j < M; j++) {
			double v = 1.0 + 0.05 * rng_uniform(&r);
			lo[j] = v - 0.5e-6;
			hi[j] = v + 0.5e-6;
			a[j] = j < 3 ? (j % 2 ? -1.0 : 1.0) / 3 : 0;
			b[j] = j >= 3 ? (j % 2 ? 1.0 : -1.0) / 3 : 0;
		}
		a[0] += 0.2; /* share a variable between the two */
		double rmin, rmax, vmin = INFINITY, vmax = -INFINITY;
		stats_range_ratio(a, b, lo, hi, M, &rmin, &rmax);
		for (int m = 0; m < (1 << M); m++) {
			double sa = 0, sb = 0;
			for (int j = 0; j < M; j++) {
				x[j] = (m >> j) & 1 ? hi[j] : lo[j];
				sa += a[j] * x[j];
				sb += b[j] * x[j];
			}
			double v = 100 * sa / sb;
			if (v < vmin)
				vmin = v;
			if (v > vmax)
				vmax = v;
		}
		if (isinf(rmin)) {
			CHECK(isinf(rmax));
			continue;
		}
		CHECKF(fabs(rmin - vmin) <= 1e-9 * fabs(vmin) && fabs(rmax - vmax) <= 1e-9 * fabs(vmax),
		       "trial %d: [%.12g, %.12g] vs vertices [%.12g, %.12g]", trial, rmin, rmax, vmin, vmax);
	}
}

TEST(naming_rules)
{
	struct stats_rules *r = NULL;
	struct err e = {0};
	const char *text = "# comment\n"
			   "00  8  baseline_seed(?<seed>\\d+)\n"
			   "10  *  p2_d(?<depth>\\d+)_mfree_oe_native_seed(?<seed>\\d+)\n"
			   "*   *  vec_d(?<depth>\\d+)_(?<arm>.+)_seed(?<seed>\\d+)\n";
	CHECK(stats_rules_parse(&r, text, "t.rules", &e) == 0);
	char *arm = NULL;
	int depth = 0;
	long seed = 0;
	CHECK(stats_rules_match(r, "baseline_seed42", &arm, &depth, &seed, &e) == 1);
	CHECK_STREQ(arm, "00");
	CHECK(depth == 8 && seed == 42);
	free(arm);
	CHECK(stats_rules_match(r, "p2_d6_mfree_oe_native_seed47", &arm, &depth, &seed, &e) == 1);
	CHECK_STREQ(arm, "10");
	CHECK(depth == 6 && seed == 47);
	free(arm);
	CHECK(stats_rules_match(r, "vec_d8_12do_bf16_seed41", &arm, &depth, &seed, &e) == 1);
	CHECK_STREQ(arm, "12do_bf16");
	CHECK(depth == 8 && seed == 41);
	free(arm);
	/* Whole-name match only. */
	CHECK(stats_rules_match(r, "xbaseline_seed42", &arm, &depth, &seed, &e) == 0);
	CHECK(stats_rules_match(r, "baseline_seed42_old", &arm, &depth, &seed, &e) == 0);
	stats_rules_free(r);

	r = NULL;
	CHECK(stats_rules_parse(&r, "00 8 baseline_seed\\d+\n", "t.rules", &e) < 0);
	CHECK(strstr(e.msg, "(?<seed>") != NULL);
	CHECK(stats_rules_parse(&r, "* 8 x(?<seed>\\d+)\n", "t.rules", &e) < 0);
	CHECK(strstr(e.msg, "(?<arm>") != NULL);
	CHECK(stats_rules_parse(&r, "\n00 8 x(?<seed>\\d+\n", "t.rules", &e) < 0);
	CHECK(strstr(e.msg, "'t.rules': line 2, column") != NULL);
	CHECK(stats_rules_parse(&r, "00 eight x(?<seed>\\d+)\n", "t.rules", &e) < 0);
	CHECK(strstr(e.msg, "line 1") != NULL);
	CHECK(stats_rules_parse(&r, "00\n", "t.rules", &e) < 0);
	CHECK(stats_rules_parse(&r, "# none\n", "t.rules", &e) < 0);
	/* A capture that is not a seed. */
	CHECK(stats_rules_parse(&r, "a 8 run_(?<seed>\\w+)\n", "t.rules", &e) == 0);
	CHECK(stats_rules_match(r, "run_x1", &arm, &depth, &seed, &e) < 0);
	CHECK(strstr(e.msg, "seed 'x1'") != NULL);
	stats_rules_free(r);
}

static int add_text(struct stats_records *rec, const char *text, struct err *e)
{
	cJSON *j = json_parse(text, strlen(text), "r.json", e);
	if (!j)
		return -1;
	int rc = stats_records_add_json(rec, j, "r.json", NULL, e);
	cJSON_Delete(j);
	return rc;
}

TEST(records_layouts_and_bad_input)
{
	struct stats_records rec;
	struct err e = {0};
	stats_records_init(&rec);
	CHECK(add_text(&rec, "{\"a\": {\"arm\": \"00\", \"depth\": 8, \"seed\": 41, \"val_bpb\": 1.0,"
			     " \"heldout_bpb\": 0.9},"
			     " \"b\": {\"result\": {\"arm\": \"00\", \"depth\": 8, \"seed\": 42, \"val_bpb\": 1.1},"
			     " \"heldout_loss\": {\"bpb\": 1.05}},"
			     " \"c\": {\"result\": {\"x\": 1}, \"validation_loss\": 2, \"heldout_loss\": 3}}",
		       &e) == 0);
	CHECK(rec.n == 2 && rec.n_ignored == 1);
	CHECK(rec.n == 2 && rec.runs[1].bpb[STATS_VAL] == 1.1 && rec.runs[1].bpb[STATS_HO] == 1.05);
	/* The same arm, depth and seed again. */
	CHECK(add_text(&rec, "{\"z\": {\"arm\": \"00\", \"depth\": 8, \"seed\": 41, \"val_bpb\": 1,"
			     " \"heldout_bpb\": 1}}", &e) < 0);
	CHECK(strstr(e.msg, "duplicate run: d8/00 seed 41 is also 'r.json': run 'a'") != NULL);
	/* The same run name twice. */
	CHECK(add_text(&rec, "{\"y\": {}, \"y\": {}}", &e) < 0);
	CHECK(strstr(e.msg, "duplicate run 'y'") != NULL);
	CHECK(add_text(&rec, "{\"w\": {\"arm\": \"00\", \"depth\": 8, \"seed\": 43, \"val_bpb\": \"1.0\","
			     " \"heldout_bpb\": 1}}", &e) < 0);
	CHECK(strstr(e.msg, "run 'w': 'val_bpb' is not a number") != NULL);
	CHECK(add_text(&rec, "{\"v\": {\"arm\": \"00\", \"depth\": 8, \"val_bpb\": 1,"
			     " \"heldout_bpb\": 1}}", &e) < 0);
	CHECK(strstr(e.msg, "run 'v': missing 'seed'") != NULL);
	CHECK(add_text(&rec, "{\"u\": {\"arm\": \"00\", \"depth\": 8, \"seed\": 44, \"val_bpb\": 1}}",
		       &e) < 0);
	CHECK(strstr(e.msg, "missing 'heldout_bpb'") != NULL);
	CHECK(add_text(&rec, "{\"t\": {\"arm\": \"0 0\", \"depth\": 8, \"seed\": 44, \"val_bpb\": 1,"
			     " \"heldout_bpb\": 1}}", &e) < 0);
	CHECK(add_text(&rec, "{\"s\": {\"arm\": \"00\", \"depth\": 8, \"seed\": 45, \"val_bpb\": -1,"
			     " \"heldout_bpb\": 1}}", &e) < 0);
	CHECK(strstr(e.msg, "not a positive BPB") != NULL);
	CHECK(add_text(&rec, "[1]", &e) < 0);
	CHECK(rec.n == 2);
	stats_records_free(&rec);
}

TEST(spec_parse)
{
	struct stats_spec s;
	struct err e = {0};
	CHECK(stats_spec_parse(&s, "contrast A = (11 - 10) - (01 - 00)\n"
				   "contrast B = d8/12 - d6/12 + 12 - 12\n"
				   "ratio A / B\n", "s.txt", &e) == 0);
	CHECK(s.n == 2 && s.n_r == 1);
	CHECK(s.c[0].n_terms == 4);
	int sum = 0;
	for (size_t t = 0; t < s.c[0].n_terms; t++)
		sum += s.c[0].terms[t].coef * (!strcmp(s.c[0].terms[t].arm, "11") ? 1000 :
					       !strcmp(s.c[0].terms[t].arm, "10") ? 100 :
					       !strcmp(s.c[0].terms[t].arm, "01") ? 10 : 1);
	CHECK(sum == 1000 - 100 - 10 + 1);
	CHECK(s.c[1].n_terms == 2 && s.c[1].terms[0].depth == 8 && s.c[1].terms[1].depth == 6);
	stats_spec_free(&s);

	CHECK(stats_spec_parse(&s, "contrast A = (11 - 10\n", "s.txt", &e) < 0);
	CHECK(strstr(e.msg, "'s.txt': line 1, column") && strstr(e.msg, "expected ')'"));
	CHECK(stats_spec_parse(&s, "contrast A = 11 - 11\n", "s.txt", &e) < 0);
	CHECK(strstr(e.msg, "cancels") != NULL);
	CHECK(stats_spec_parse(&s, "contrast A = 11 - 10\nratio A / C\n", "s.txt", &e) < 0);
	CHECK(strstr(e.msg, "line 2: ratio: no contrast 'C'") != NULL);
	CHECK(stats_spec_parse(&s, "contrast A = 1\ncontrast A = 2\n", "s.txt", &e) < 0);
	CHECK(stats_spec_parse(&s, "contrast A = 11 -\n", "s.txt", &e) < 0);
	CHECK(stats_spec_parse(&s, "compare A = 1\n", "s.txt", &e) < 0);
	CHECK(stats_spec_builtin(&s, &e) == 0);
	CHECK(s.n == 11 && s.n_r == 6 && s.builtin);
	stats_spec_free(&s);
}

static void build(struct stats_records *rec, struct stats_cells *cells, const char *text)
{
	struct err e = {0};
	stats_records_init(rec);
	if (add_text(rec, text, &e) < 0)
		printf("  %s\n", e.msg);
	stats_cells_build(rec, cells);
}

TEST(evaluate_pairs_seeds_and_refuses_unknown_arms)
{
	struct stats_records rec;
	struct stats_cells cells;
	build(&rec, &cells,
	      "{\"a41\": {\"arm\": \"00_dense_native\", \"depth\": 8, \"seed\": 41, \"val_bpb\": 1.0, \"heldout_bpb\": 1.0},"
	      " \"a42\": {\"arm\": \"00_dense_native\", \"depth\": 8, \"seed\": 42, \"val_bpb\": 1.1, \"heldout_bpb\": 1.1},"
	      " \"a46\": {\"arm\": \"00_dense_native\", \"depth\": 8, \"seed\": 46, \"val_bpb\": 1.2, \"heldout_bpb\": 1.2},"
	      " \"b41\": {\"arm\": \"10_oe_native\", \"depth\": 8, \"seed\": 41, \"val_bpb\": 0.9, \"heldout_bpb\": 0.95},"
	      " \"b42\": {\"arm\": \"10_oe_native\", \"depth\": 8, \"seed\": 42, \"val_bpb\": 1.05, \"heldout_bpb\": 1.0},"
	      " \"b47\": {\"arm\": \"10_oe_native\", \"depth\": 8, \"seed\": 47, \"val_bpb\": 1.0, \"heldout_bpb\": 1.0}}");
	CHECK(cells.n == 2);
	struct stats_spec s;
	struct stats_results res;
	struct err e = {0};
	CHECK(stats_spec_parse(&s, "contrast OE = 10 - 00\nratio OE / OE\n", "s.txt", &e) == 0);
	CHECK(stats_evaluate(&s, &cells, &res, &e) == 0);
	CHECK(res.n == 1);
	if (res.n == 1) {
		CHECK(res.c[0].n == 2 && res.c[0].seeds[0] == 41 && res.c[0].seeds[1] == 42);
		CHECK_NEAR(res.c[0].sum[STATS_VAL].mean, -0.075, 1e-12);
		CHECK_STREQ(res.c[0].dropped, "46 (not in d8/10_oe_native); 47 (not in d8/00_dense_native)");
		CHECK(res.c[0].n_ratios == 1 && fabs(res.c[0].ratios[0].pct[0] - 100) < 1e-9);
	}
	stats_results_free(&res);
	stats_spec_free(&s);

	CHECK(stats_spec_parse(&s, "contrast X = 11 - 00\n", "s.txt", &e) == 0);
	CHECK(stats_evaluate(&s, &cells, &res, &e) < 0);
	CHECK(strstr(e.msg, "'s.txt': line 1: unknown arm '11' at depth 8") != NULL);
	stats_results_free(&res);
	stats_spec_free(&s);

	/* The built-in spec skips what is absent and says so. */
	CHECK(stats_spec_builtin(&s, &e) == 0);
	CHECK(stats_evaluate(&s, &cells, &res, &e) == 0);
	CHECK(res.n == 1 && res.n_skipped == 10);
	stats_results_free(&res);
	stats_spec_free(&s);
	stats_cells_free(&cells);
	stats_records_free(&rec);

	/* One paired seed is not enough. */
	build(&rec, &cells,
	      "{\"a\": {\"arm\": \"x\", \"depth\": 8, \"seed\": 1, \"val_bpb\": 1, \"heldout_bpb\": 1},"
	      " \"b\": {\"arm\": \"y\", \"depth\": 8, \"seed\": 1, \"val_bpb\": 1, \"heldout_bpb\": 1},"
	      " \"c\": {\"arm\": \"y\", \"depth\": 8, \"seed\": 2, \"val_bpb\": 1, \"heldout_bpb\": 1}}");
	CHECK(stats_spec_parse(&s, "contrast D = y - x\n", "s.txt", &e) == 0);
	CHECK(stats_evaluate(&s, &cells, &res, &e) < 0);
	CHECK(strstr(e.msg, "has 1 paired seed, needs 2; dropped 2 (not in d8/x)") != NULL);
	stats_results_free(&res);
	stats_spec_free(&s);
	stats_cells_free(&cells);
	stats_records_free(&rec);
}

TEST(check_published_against_records)
{
	struct stats_rules *rules = NULL;
	struct stats_records rec;
	struct stats_cells cells;
	struct err e = {0};
	char *rp = path_join(t_fixtures(), "stats/paper.rules");
	char *pp = path_join(t_fixtures(), "stats/paper_results.json");
	stats_records_init(&rec);
	CHECK(stats_rules_load(&rules, rp, &e) == 0);
	CHECK(stats_records_add_path(&rec, pp, rules, &e) == 0);
	CHECK(rec.n_ignored == 1);
	stats_cells_build(&rec, &cells);
	cJSON *pub = fixture_json("stats/stats.json");
	CHECK(pub);
	if (!pub)
		goto out;
	struct stats_check_counts k = {0};
	cJSON *items = cJSON_CreateArray();
	CHECK(stats_check_published(pub, "stats.json", &cells, 6, items, &k, &e) == 0);
	CHECK(k.inconsistent == 0 && k.missing == 0 && k.ok > 200 && k.rounding > 0);
	cJSON_Delete(items);
	/* A figure three units off is inconsistent; a cell without runs is missing. */
	cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(pub, "cell_stats"), 0);
	cJSON_ReplaceItemInObject(c0, "published_mean", cJSON_CreateString("1.048681"));
	cJSON *c1 = cJSON_GetArrayItem(cJSON_GetObjectItem(pub, "cell_stats"), 1);
	cJSON_ReplaceItemInObject(c1, "cell", cJSON_CreateString("d7/00"));
	memset(&k, 0, sizeof k);
	items = cJSON_CreateArray();
	CHECK(stats_check_published(pub, "stats.json", &cells, 6, items, &k, &e) == 0);
	CHECK(k.inconsistent == 1 && k.missing == 1);
	cJSON_Delete(items);
	cJSON_Delete(pub);
out:
	stats_cells_free(&cells);
	stats_records_free(&rec);
	stats_rules_free(rules);
	free(rp);
	free(pp);
}

/* Mutated inputs: every parser returns cleanly (0, or -1 with a message);
 * run under SAN=1 this is the parsers' memory-safety regression. */
static char *mutate(struct rng *r, const char *src)
{
	size_t n = strlen(src);
	char *s = malloc(n + 16);
	memcpy(s, src, n + 1);
	int edits = 1 + (int)rng_below(r, 4);
	static const char pool[] = "()+-/=*#\"?<>{}[]:,.0123456789 \n\tdx_";
	for (int k = 0; k < edits && n; k++) {
		size_t at = rng_below(r, n);
		switch (rng_below(r, 3)) {
		case 0: s[at] = pool[rng_below(r, sizeof pool - 1)]; break;
		case 1: memmove(s + at, s + at + 1, n - at); n--; break;
		default:
			if (n + 1 < strlen(src) + 15) {
				memmove(s + at + 1, s + at, n - at + 1);
				s[at] = pool[rng_below(r, sizeof pool - 1)];
				n++;
			}
		}
	}
	return s;
}

TEST(parsers_survive_mutations)
{
	static const char rules[] = "00 8 baseline_seed(?<seed>\\d+)\n* * v_d(?<depth>\\d+)_(?<arm>.+)_s(?<seed>\\d+)\n";
	static const char spec[] = "contrast A = (11 - 10) - (d8/01 - 00)\ncontrast B = 12 - 10\nratio A / B\n";
	static const char recs[] = "{\"baseline_seed1\": {\"result\": {\"val_bpb\": 1.5}, \"heldout_loss\": {\"bpb\": 2}},"
				   " \"v_d6_x_s2\": {\"arm\": \"y\", \"depth\": 6, \"seed\": 3, \"val_bpb\": 1, \"heldout_bpb\": 1}}";
	struct rng r;
	rng_seed(&r, 99);
	int accepted = 0, refused = 0, unexplained = 0;
	for (int it = 0; it < 3000; it++) {
		struct err e = {0};
		char *t = mutate(&r, rules);
		struct stats_rules *rs = NULL;
		if (stats_rules_parse(&rs, t, "m.rules", &e) == 0) {
			accepted++;
			char *arm = NULL;
			int depth;
			long seed;
			if (stats_rules_match(rs, "baseline_seed12", &arm, &depth, &seed, &e) == 1)
				free(arm);
			stats_rules_free(rs);
		} else {
			refused++;
			unexplained += !e.msg[0];
		}
		free(t);
		t = mutate(&r, spec);
		struct stats_spec sp;
		err_clear(&e);
		if (stats_spec_parse(&sp, t, "m.spec", &e) == 0) {
			accepted++;
			stats_spec_free(&sp);
		} else {
			refused++;
			unexplained += !e.msg[0];
		}
		free(t);
		t = mutate(&r, recs);
		struct stats_records rec;
		stats_records_init(&rec);
		err_clear(&e);
		cJSON *j = json_parse(t, strlen(t), "m.json", &e);
		if (j && stats_records_add_json(&rec, j, "m.json", NULL, &e) == 0)
			accepted++;
		else {
			refused++;
			unexplained += !e.msg[0];
		}
		cJSON_Delete(j);
		stats_records_free(&rec);
		free(t);
	}
	printf("  mutations: %d accepted, %d refused\n", accepted, refused);
	CHECK(unexplained == 0);
	CHECK(accepted > 100 && refused > 100);
}

int main(void)
{
	RUN(t_quantiles_match_reference);
	RUN(intervals_match_numpy);
	RUN(papers_example);
	RUN(printed_parse_and_format);
	RUN(vectors_reproduced_at_printed_precision);
	RUN(ranges_match_brute_force);
	RUN(ratio_range_matches_vertices);
	RUN(naming_rules);
	RUN(records_layouts_and_bad_input);
	RUN(spec_parse);
	RUN(evaluate_pairs_seeds_and_refuses_unknown_arms);
	RUN(check_published_against_records);
	RUN(parsers_survive_mutations);
	return t_done();
}

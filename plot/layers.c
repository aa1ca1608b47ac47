/* layers.c: the geometry figures of supkit audit geometry --json (contract
 * in plots.h): per-matrix stable rank and mean-row energy share against
 * layer, and (--spectrum reports) the singular spectra.
 *
 * Reads checkpoints[i].arm and .matrices (name -> stable_rank,
 * mean_row_energy, singular_values) as audit/geometry.c writes them. The
 * family and layer come from the matrix's name (PyTorch state_dict names:
 * transformer.h.L.attn.c_q.weight, value_embeds.I.weight, oe.I.weight,
 * transformer.wte.weight, lm_head.weight); names of other shapes are left
 * out. A figure that is null in the report (an all-zero matrix) is a gap.
 */
#include "plot/jrep.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Families with a layer index. */
static const char *const layered[] = {"attn.c_q", "attn.c_k", "attn.c_v", "attn.c_proj",
				      "mlp.c_fc", "mlp.c_proj", "attn.ve_gate"};
#define NLAYERED 7
/* Spectrum families after the layered ones. */
static const char *const tables[] = {"wte", "lm_head", "value_embeds", "oe_tables"};
#define NTABLES 4
#define NFAM (NLAYERED + NTABLES)

/* "<prefix><digits>.<rest>" at s: index and rest, or NULL. */
static const char *indexed(const char *s, const char *prefix, int *idx)
{
	size_t pl = strlen(prefix);
	if (strncmp(s, prefix, pl) || !isdigit((unsigned char)s[pl]))
		return NULL;
	long v = 0;
	s += pl;
	while (isdigit((unsigned char)*s)) {
		v = v * 10 + (*s++ - '0');
		if (v > 1000000)
			return NULL;
	}
	if (*s != '.')
		return NULL;
	*idx = (int)v;
	return s + 1;
}

/* Family (0 .. NFAM-1) and index of a matrix name; -1 for other names. */
static int family_of(const char *name, int *idx)
{
	for (;;) {   /* torch.compile / DDP prefixes */
		if (!strncmp(name, "_orig_mod.", 10))
			name += 10;
		else if (!strncmp(name, "module.", 7))
			name += 7;
		else
			break;
	}
	*idx = 0;
	const char *rest;
	if ((rest = indexed(name, "transformer.h.", idx))) {
		for (int k = 0; k < NLAYERED; k++) {
			size_t l = strlen(layered[k]);
			if (!strncmp(rest, layered[k], l) && !strcmp(rest + l, ".weight"))
				return k;
		}
		return -1;
	}
	if (!strcmp(name, "transformer.wte.weight"))
		return NLAYERED + 0;
	if (!strcmp(name, "lm_head.weight"))
		return NLAYERED + 1;
	if ((rest = indexed(name, "value_embeds.", idx)) && !strcmp(rest, "weight"))
		return NLAYERED + 2;
	if (((rest = indexed(name, "oe.", idx)) || (rest = indexed(name, "oe_tables.", idx))) &&
	    !strcmp(rest, "weight"))
		return NLAYERED + 3;
	return -1;
}

/* One matrix of one checkpoint. */
struct mat {
	int ck, arm, fam, idx;
	int cat;                 /* tables: category index */
	double sr, en;           /* stable rank, energy share */
	double *sv;              /* spectrum (spectrum figures) */
	int nsv;
};

struct geo {
	struct mat *m;
	int nm;
	const char **arms;   /* names, in order of first appearance */
	int na;
	int *ck_arm;         /* per checkpoint */
	int nck;
	int *arm_n;          /* checkpoints per arm */
};

static void geo_free(struct geo *g)
{
	for (int i = 0; i < g->nm; i++)
		free(g->m[i].sv);
	free(g->m);
	free(g->arms);
	free(g->ck_arm);
	free(g->arm_n);
}

static int geo_read(const cJSON *rep, const char *path, int spectrum, struct geo *g, struct err *e)
{
	memset(g, 0, sizeof *g);
	const cJSON *cks = jrep_get(rep, "checkpoints");
	int nck = cJSON_GetArraySize(cks);
	if (nck == 0)
		return err_set(e, EXIT_USAGE, "'%s': no checkpoints in the report", path);
	g->nck = nck;
	g->ck_arm = xcalloc((size_t)nck, sizeof *g->ck_arm);
	g->arms = xcalloc((size_t)nck, sizeof *g->arms);
	g->arm_n = xcalloc((size_t)nck, sizeof *g->arm_n);
	int i = 0;
	for (const cJSON *c = cks->child; c; c = c->next, i++) {
		char where[64];
		snprintf(where, sizeof where, "checkpoints[%d]", i);
		const char *arm;
		if (!cJSON_IsObject(c))
			return err_set(e, EXIT_USAGE, "'%s': %s is not an object", path, where);
		if (jrep_string(c, "arm", &arm, path, where, e) < 0)
			return -1;
		int a = 0;
		while (a < g->na && strcmp(g->arms[a], arm))
			a++;
		if (a == g->na)
			g->arms[g->na++] = arm;
		g->ck_arm[i] = a;
		g->arm_n[a]++;
		const cJSON *ms = jrep_get(c, "matrices");
		if (!cJSON_IsObject(ms))
			return err_set(e, EXIT_USAGE, "'%s': %s: 'matrices' is %s, not an object", path, where,
				       ms ? "of another type" : "missing");
		for (const cJSON *m = ms->child; m; m = m->next) {
			int idx, fam = family_of(m->string, &idx);
			if (fam < 0)
				continue;
			char w2[512];
			snprintf(w2, sizeof w2, "%s.matrices.'%s'", where, m->string);
			if (!cJSON_IsObject(m))
				return err_set(e, EXIT_USAGE, "'%s': %s is not an object", path, w2);
			struct mat x = {.ck = i, .arm = a, .fam = fam, .idx = idx};
			if (jrep_number(m, "stable_rank", &x.sr, path, w2, e) < 0 ||
			    jrep_number(m, "mean_row_energy", &x.en, path, w2, e) < 0)
				return -1;
			if (spectrum) {
				const cJSON *sv = jrep_get(m, "singular_values");
				if (!sv)
					return err_set(e, EXIT_USAGE, "'%s': %s: no 'singular_values' (the report of "
						       "supkit audit geometry --spectrum has them)", path, w2);
				char w3[560];
				snprintf(w3, sizeof w3, "%s.singular_values", w2);
				if (jrep_numbers(sv, &x.sv, &x.nsv, path, w3, e) < 0)
					return -1;
			}
			g->m = xrealloc(g->m, (size_t)(g->nm + 1) * sizeof *g->m);
			g->m[g->nm++] = x;
		}
	}
	if (g->nm == 0)
		return err_set(e, EXIT_USAGE, "'%s': no model matrices in the report", path);
	return 0;
}

static struct plot_style st(struct plot_rgb c, double alpha, double w, enum plot_mark mk, double ms)
{
	struct plot_style s = {c, alpha, w, PLOT_SOLID, mk, ms};
	return s;
}

/* Table categories: "wte", "lm_head", "ve.I" (value_embeds), "oe.I". */
static char *cat_name(const struct mat *m)
{
	switch (m->fam - NLAYERED) {
	case 0: return xstrdup("wte");
	case 1: return xstrdup("lm_head");
	case 2: return xasprintf("ve.%d", m->idx);
	default: return xasprintf("oe.%d", m->idx);
	}
}

static int cat_key(const struct mat *m)
{
	return (m->fam - NLAYERED) * 1000001 + m->idx;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x < y ? -1 : x > y;
}

static void legend_arms(struct plot_figure *f, const struct geo *g, const char *what)
{
	int multi = 0;
	for (int a = 0; a < g->na; a++) {
		char lab[512];
		snprintf(lab, sizeof lab, "%s (%d %s%s)", g->arms[a], g->arm_n[a], what,
			 g->arm_n[a] == 1 ? "" : "s");
		struct plot_style s = st(plot_color(a), 1, 1.6, PLOT_MARK_DOT, 3.5);
		plot_legend_add(f, PLOT_LEGEND_LINE, lab, &s);
		multi |= g->arm_n[a] > 1;
	}
	if (multi) {
		struct plot_rgb grey = {0.3, 0.3, 0.3};
		struct plot_style s = st(grey, 1, 1.6, PLOT_MARK_DOT, 3.5);
		plot_legend_add(f, PLOT_LEGEND_LINE, "mean of the arm", &s);
		s = st(grey, 0.45, 0.7, PLOT_MARK_NONE, 0);
		plot_legend_add(f, PLOT_LEGEND_LINE, strcmp(what, "matrix") ? "one checkpoint" : "one matrix", &s);
	}
}

/* Stable rank and energy figure. */
static void layers_figure(struct plot_figure *f, const struct geo *g)
{
	int have[NFAM] = {0}, ntab = 0;
	for (int i = 0; i < g->nm; i++)
		have[g->m[i].fam < NLAYERED ? g->m[i].fam : NLAYERED] = 1;
	int cols[NLAYERED + 1], nc = 0;
	for (int k = 0; k <= NLAYERED; k++)
		if (have[k])
			cols[nc++] = k;
	/* table categories, sorted by family then index */
	int *keys = xmalloc((size_t)g->nm * sizeof *keys);
	for (int i = 0; i < g->nm; i++)
		if (g->m[i].fam >= NLAYERED)
			keys[ntab++] = cat_key(&g->m[i]);
	qsort(keys, (size_t)ntab, sizeof *keys, cmp_int);
	int ncat = 0;
	for (int i = 0; i < ntab; i++)
		if (!ncat || keys[ncat - 1] != keys[i])
			keys[ncat++] = keys[i];
	char **cats = xcalloc((size_t)(ncat ? ncat : 1), sizeof *cats);
	for (int i = 0; i < g->nm; i++) {
		struct mat *m = &g->m[i];
		if (m->fam < NLAYERED)
			continue;
		int k = cat_key(m);
		int *hit = bsearch(&k, keys, (size_t)ncat, sizeof *keys, cmp_int);
		m->cat = (int)(hit - keys);
		if (!cats[m->cat])
			cats[m->cat] = cat_name(m);
	}
	/* families wrap after 4 columns; each takes two rows: stable rank
	 * above mean-row energy */
	int gc = nc < 4 ? nc : 4, blocks = (nc + gc - 1) / gc;
	plot_figure_init(f, 2 * blocks, gc);
	f->cell_w = 165;
	f->cell_h = 120;
	for (int k = blocks * gc - 1; k >= nc; k--) {
		plot_panel_at(f, 2 * (k / gc), k % gc)->hidden = 1;
		plot_panel_at(f, 2 * (k / gc) + 1, k % gc)->hidden = 1;
	}
	for (int k = 0; k < nc; k++) {
		int fam = cols[k], c = k % gc;
		int npos = fam < NLAYERED ? 0 : ncat;
		if (fam < NLAYERED)
			for (int i = 0; i < g->nm; i++)
				if (g->m[i].fam == fam && g->m[i].idx + 1 > npos)
					npos = g->m[i].idx + 1;
		size_t np1 = (size_t)(npos ? npos : 1);
		for (int row = 0; row < 2; row++) {
			struct plot_panel *p = plot_panel_at(f, 2 * (k / gc) + row, c);
			if (row == 0)
				plot_panel_title(p, fam < NLAYERED ? layered[fam] : "tables");
			if (c == 0)
				plot_axis_label(&p->y, row == 0 ? "stable rank" : "mean-row energy (%)");
			if (fam == NLAYERED)
				plot_axis_categories(&p->x, cats, ncat);
			else
				p->x.integer = 1;
			if (row == 1 && fam < NLAYERED)
				plot_axis_label(&p->x, "layer");
			/* per arm: each checkpoint thin (arms of several), the mean bold;
			 * a line joins the layers present (null figures break it) */
			for (int a = 0; a < g->na; a++) {
				struct plot_rgb col = plot_color(a);
				double *sum = xcalloc(np1, sizeof *sum);
				int *cnt = xcalloc(np1, sizeof *cnt);
				double *val = xmalloc(np1 * sizeof *val), *xs = xmalloc(np1 * sizeof *xs),
				       *ys = xmalloc(np1 * sizeof *ys);
				char *here = xmalloc(np1);
				for (int ck = 0; ck < g->nck; ck++) {
					if (g->ck_arm[ck] != a)
						continue;
					memset(here, 0, np1);
					for (int i = 0; i < g->nm; i++) {
						const struct mat *m = &g->m[i];
						int in = fam < NLAYERED ? m->fam == fam : m->fam >= NLAYERED;
						if (m->ck != ck || !in)
							continue;
						int q = fam < NLAYERED ? m->idx : m->cat;
						val[q] = row == 0 ? m->sr : 100 * m->en;
						here[q] = 1;
					}
					int m = 0;
					for (int q = 0; q < npos; q++) {
						if (!here[q])
							continue;
						xs[m] = q;
						ys[m++] = val[q];
						sum[q] += val[q];   /* NaN stays NaN */
						cnt[q]++;
					}
					if (m && g->arm_n[a] > 1) {
						struct plot_style s = fam < NLAYERED ? st(col, 0.45, 0.7, PLOT_MARK_NONE, 0)
										     : st(col, 0.6, 0, PLOT_MARK_RING, 3);
						plot_add_line(p, &s, m, xs, ys);
					}
				}
				int m = 0;
				for (int q = 0; q < npos; q++) {
					if (cnt[q] != g->arm_n[a])
						continue;
					xs[m] = q;
					ys[m++] = sum[q] / cnt[q];
				}
				struct plot_style s = fam < NLAYERED ? st(col, 1, 1.6, PLOT_MARK_DOT, 3.5)
								     : st(col, 1, 0, PLOT_MARK_DOT, 4.5);
				if (m)
					plot_add_line(p, &s, m, xs, ys);
				free(sum);
				free(cnt);
				free(val);
				free(xs);
				free(ys);
				free(here);
			}
		}
	}
	legend_arms(f, g, "checkpoint");
	for (int i = 0; i < ncat; i++)
		free(cats[i]);
	free(cats);
	free(keys);
}

/* Spectrum figure. */
static void spectrum_figure(struct plot_figure *f, const struct geo *g)
{
	int have[NFAM] = {0}, fams[NFAM], nf = 0;
	for (int i = 0; i < g->nm; i++)
		have[g->m[i].fam] = 1;
	for (int k = 0; k < NFAM; k++)
		if (have[k])
			fams[nf++] = k;
	int cols = nf < 4 ? nf : 4, rows = (nf + cols - 1) / cols;
	plot_figure_init(f, rows, cols);
	f->cell_w = 170;
	f->cell_h = 140;
	for (int k = 0; k < rows * cols; k++) {
		struct plot_panel *p = &f->panels[k];
		int r = k / cols, c = k % cols;
		if (k >= nf) {
			p->hidden = 1;
			continue;
		}
		int fam = fams[k];
		plot_panel_title(p, fam < NLAYERED ? layered[fam] : tables[fam - NLAYERED]);
		p->x.log = p->y.log = 1;
		if (r == rows - 1 || k + cols >= nf)
			plot_axis_label(&p->x, "index i");
		if (c == 0)
			plot_axis_label(&p->y, "singular value");
		for (int a = 0; a < g->na; a++) {
			struct plot_rgb col = plot_color(a);
			int q0 = -1, nmean = 0, nall = 0;
			double *sum = NULL;
			for (int i = 0; i < g->nm; i++) {
				const struct mat *m = &g->m[i];
				if (m->fam != fam || m->arm != a || m->nsv == 0)
					continue;
				nall++;
				double *xs = xmalloc((size_t)m->nsv * sizeof *xs);
				for (int j = 0; j < m->nsv; j++)
					xs[j] = j + 1;
				struct plot_style s = st(col, 0.35, 0.6, m->nsv == 1 ? PLOT_MARK_RING : PLOT_MARK_NONE, 3);
				plot_add_line(p, &s, m->nsv, xs, m->sv);
				free(xs);
				if (q0 < 0) {
					q0 = m->nsv;
					sum = xcalloc((size_t)q0, sizeof *sum);
				}
				if (m->nsv == q0) {
					for (int j = 0; j < q0; j++)
						sum[j] += m->sv[j];
					nmean++;
				}
			}
			if (nmean > 1 || (nmean == 1 && nall == 1)) {
				double *xs = xmalloc((size_t)q0 * sizeof *xs);
				for (int j = 0; j < q0; j++) {
					xs[j] = j + 1;
					sum[j] /= nmean;
				}
				struct plot_style s = st(col, 1, 1.6, q0 == 1 ? PLOT_MARK_DOT : PLOT_MARK_NONE, 4);
				plot_add_line(p, &s, q0, xs, sum);
				free(xs);
			}
			free(sum);
		}
	}
	for (int a = 0; a < g->na; a++) {
		char lab[512];
		snprintf(lab, sizeof lab, "%s (%d checkpoint%s)", g->arms[a], g->arm_n[a],
			 g->arm_n[a] == 1 ? "" : "s");
		struct plot_style s = st(plot_color(a), 1, 1.6, PLOT_MARK_NONE, 0);
		plot_legend_add(f, PLOT_LEGEND_LINE, lab, &s);
	}
	struct plot_rgb grey = {0.3, 0.3, 0.3};
	struct plot_style s = st(grey, 1, 1.6, PLOT_MARK_NONE, 0);
	plot_legend_add(f, PLOT_LEGEND_LINE, "mean spectrum of the arm", &s);
	s = st(grey, 0.35, 0.6, PLOT_MARK_NONE, 0);
	plot_legend_add(f, PLOT_LEGEND_LINE, "one matrix", &s);
}

int plot_geometry(struct plot_figure *f, const cJSON *rep, const char *path, int spectrum,
		  const char *title, struct err *e)
{
	struct geo g;
	if (geo_read(rep, path, spectrum, &g, e) < 0) {
		geo_free(&g);
		return -1;
	}
	if (spectrum)
		spectrum_figure(f, &g);
	else
		layers_figure(f, &g);
	if (title) {
		plot_set_title(f, title);
	} else {
		char t[1024];
		size_t u = (size_t)snprintf(t, sizeof t, spectrum ? "Singular spectra: " :
					    "Stable rank and mean-row energy: ");
		for (int a = 0; a < g.na && u < sizeof t; a++)
			u += (size_t)snprintf(t + u, sizeof t - u, "%s%s", a ? (a == g.na - 1 ? " vs " : ", ") : "",
					      g.arms[a]);
		plot_set_title(f, t);
	}
	geo_free(&g);
	return 0;
}

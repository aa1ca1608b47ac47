/* forest.c: the forest plot of supkit audit stats --json (contract in
 * plots.h). Reads each contrast's name, scope, n and, per split ("val",
 * "heldout"), mean, ci95 and deltas, as audit/stats_report.c writes them
 * (man supkit-audit, stats); draws the interval the report holds (the
 * t-interval of the mean difference), nothing is recomputed.
 */
#include "plot/jrep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOREST_ROW_H 17.0

struct split {
	double mean, lo, hi;
	double *deltas;
	int nd;
};

struct row {
	char *label;
	int scope;     /* colour index */
	struct split s[2];
};

static int read_split(const cJSON *c, const char *key, struct split *s, const char *path, int i,
		      struct err *e)
{
	char where[96];
	memset(s, 0, sizeof *s);
	s->mean = s->lo = s->hi = NAN;
	const cJSON *o = jrep_get(c, key);
	if (!o || cJSON_IsNull(o))
		return 0;
	snprintf(where, sizeof where, "contrasts[%d].%s", i, key);
	if (!cJSON_IsObject(o))
		return err_set(e, EXIT_USAGE, "'%s': %s is not an object", path, where);
	if (jrep_number(o, "mean", &s->mean, path, where, e) < 0)
		return -1;
	const cJSON *ci = jrep_get(o, "ci95");
	if (ci && !cJSON_IsNull(ci)) {
		double *v;
		int n;
		char w2[112];
		snprintf(w2, sizeof w2, "%s.ci95", where);
		if (jrep_numbers(ci, &v, &n, path, w2, e) < 0)
			return -1;
		if (n != 2) {
			free(v);
			return err_set(e, EXIT_USAGE, "'%s': %s holds %d numbers, not 2", path, w2, n);
		}
		s->lo = v[0];
		s->hi = v[1];
		free(v);
		if (s->lo > s->hi)
			return err_set(e, EXIT_USAGE, "'%s': %s: the interval's ends are reversed", path, w2);
	}
	const cJSON *d = jrep_get(o, "deltas");
	if (d && !cJSON_IsNull(d)) {
		char w2[112];
		snprintf(w2, sizeof w2, "%s.deltas", where);
		if (jrep_numbers(d, &s->deltas, &s->nd, path, w2, e) < 0)
			return -1;
	}
	return 0;
}

static void extend(double *lo, double *hi, double v)
{
	if (!isfinite(v))
		return;
	if (isnan(*lo) || v < *lo)
		*lo = v;
	if (isnan(*hi) || v > *hi)
		*hi = v;
}

int plot_stats(struct plot_figure *f, const cJSON *rep, const char *path, const char *title,
	       struct err *e)
{
	const cJSON *cs = jrep_get(rep, "contrasts");
	int n = cJSON_GetArraySize(cs);
	if (n == 0)
		return err_set(e, EXIT_USAGE, "'%s': no contrasts to draw (the report's 'skipped' says why)",
			       path);
	struct row *rows = xcalloc((size_t)n, sizeof *rows);
	char **scopes = xcalloc((size_t)n, sizeof *scopes);
	int nsc = 0, i = 0, rc = 0;
	for (const cJSON *c = cs->child; c && rc == 0; c = c->next, i++) {
		char where[64];
		snprintf(where, sizeof where, "contrasts[%d]", i);
		const char *name, *scope = "";
		double nn;
		if (!cJSON_IsObject(c)) {
			rc = err_set(e, EXIT_USAGE, "'%s': %s is not an object", path, where);
			break;
		}
		if (jrep_string(c, "name", &name, path, where, e) < 0 ||
		    jrep_number(c, "n", &nn, path, where, e) < 0) {
			rc = -1;
			break;
		}
		if (jrep_get(c, "scope") && jrep_string(c, "scope", &scope, path, where, e) < 0) {
			rc = -1;
			break;
		}
		int k = 0;
		while (k < nsc && strcmp(scopes[k], scope))
			k++;
		if (k == nsc)
			scopes[nsc++] = (char *)scope;
		rows[i].scope = k;
		if (isfinite(nn))
			rows[i].label = *scope ? xasprintf("%s, %s, n=%g", name, scope, nn)
					       : xasprintf("%s, n=%g", name, nn);
		else
			rows[i].label = *scope ? xasprintf("%s, %s", name, scope) : xasprintf("%s", name);
		if (read_split(c, "val", &rows[i].s[0], path, i, e) < 0 ||
		    read_split(c, "heldout", &rows[i].s[1], path, i, e) < 0)
			rc = -1;
	}
	if (rc == 0) {
		plot_figure_init(f, 1, 2);
		f->cell_w = 230;
		f->cell_h = n * FOREST_ROW_H + 6 > 70 ? n * FOREST_ROW_H + 6 : 70;
		double lo = 0, hi = 0;   /* the zero line is always in range */
		for (int r = 0; r < n; r++)
			for (int s = 0; s < 2; s++) {
				extend(&lo, &hi, rows[r].s[s].mean);
				extend(&lo, &hi, rows[r].s[s].lo);
				extend(&lo, &hi, rows[r].s[s].hi);
				for (int d = 0; d < rows[r].s[s].nd; d++)
					extend(&lo, &hi, rows[r].s[s].deltas[d]);
			}
		struct plot_axis tmp;
		memset(&tmp, 0, sizeof tmp);
		plot_axis_ticks(&tmp, lo, hi);
		char **labels = xcalloc((size_t)n, sizeof *labels);
		for (int r = 0; r < n; r++)
			labels[r] = rows[r].label;
		static const char *const side[2] = {"validation", "held-out"};
		struct plot_style zero = {{0.3, 0.3, 0.3}, 1, 0.8, PLOT_SOLID, PLOT_MARK_NONE, 0};
		for (int s = 0; s < 2; s++) {
			struct plot_panel *p = plot_panel_at(f, 0, s);
			plot_panel_title(p, side[s]);
			plot_axis_label(&p->x, "difference of means (BPB)");
			plot_axis_fix(&p->x, tmp.lo, tmp.hi);
			plot_axis_categories(&p->y, labels, n);
			p->y.reverse = 1;
			p->y.hide_labels = s == 1;
			plot_add_ref(p, 1, 0, &zero);
			for (int r = 0; r < n; r++) {
				const struct split *sp = &rows[r].s[s];
				struct plot_rgb c = plot_color(rows[r].scope);
				if (sp->nd) {   /* a rug just below the row */
					double *ys = xmalloc((size_t)sp->nd * sizeof *ys);
					for (int d = 0; d < sp->nd; d++)
						ys[d] = r + 0.3;
					struct plot_style ds = {c, 0.8, 0, PLOT_SOLID, PLOT_MARK_RING, 2.6};
					plot_add_line(p, &ds, sp->nd, sp->deltas, ys);
					free(ys);
				}
				struct plot_style bs = {c, 1, 1.3, PLOT_SOLID, PLOT_MARK_DOT, 5.5};
				int excl = isfinite(sp->lo) && (sp->lo > 0 || sp->hi < 0);
				plot_add_bar(p, &bs, r, sp->lo, sp->mean, sp->hi, excl);
			}
		}
		free(labels);
		for (int k = 0; k < nsc; k++) {
			struct plot_style ls = {plot_color(k), 1, 1.3, PLOT_SOLID, PLOT_MARK_DOT, 5.5};
			char lab[256];
			snprintf(lab, sizeof lab, "%s", *scopes[k] ? scopes[k] : "(no scope)");
			plot_legend_add(f, PLOT_LEGEND_LINE, lab, &ls);
		}
		struct plot_rgb grey = {0.3, 0.3, 0.3};
		struct plot_style ls = {grey, 1, 1.3, PLOT_SOLID, PLOT_MARK_DOT, 5.5};
		plot_legend_add(f, PLOT_LEGEND_LINE, "mean, interval excludes 0", &ls);
		ls.mark = PLOT_MARK_RING;
		plot_legend_add(f, PLOT_LEGEND_LINE, "mean, interval includes 0", &ls);
		struct plot_style ds = {grey, 0.8, 0, PLOT_SOLID, PLOT_MARK_RING, 2.6};
		plot_legend_add(f, PLOT_LEGEND_LINE, "one seed's difference", &ds);
		if (title) {
			plot_set_title(f, title);
		} else {
			const cJSON *spec = jrep_get(rep, "spec");
			char *t = xasprintf("Paired contrasts (%s): difference of means, 95%% t-interval",
					    cJSON_IsString(spec) ? spec->valuestring : "audit stats");
			plot_set_title(f, t);
			free(t);
		}
	}
	for (int r = 0; r < n; r++) {
		free(rows[r].label);
		free(rows[r].s[0].deltas);
		free(rows[r].s[1].deltas);
	}
	free(rows);
	free(scopes);
	return rc;
}

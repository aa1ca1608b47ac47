/* trajectory.c: the step-0 trajectories of supkit audit trajectory --json
 * (contract in plots.h). Reads modes[i].mode, .wte_lambdas_switched_on and
 * .steps[k] (step, loss, value and value_after: family name -> array), as
 * audit/step0.c writes them. x = steps taken: 0 is steps[0].value (before
 * any update), k >= 1 is steps[k-1].value_after; the loss of step k (taken
 * before its update) is at k.
 */
#include "plot/jrep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const families[4] = {"resid_lambdas", "x0_lambdas", "wte_lambdas", "out_lambdas"};

/* Entry `entry` of family fam in obj (an object family -> array), NaN when
 * the family is absent; -1 on a malformed array or an entry out of range. */
static int fam_entry(const cJSON *obj, const char *fam, int entry, double *out, const char *path,
		     const char *where, struct err *e)
{
	*out = NAN;
	const cJSON *a = jrep_get(obj, fam);
	if (!a || cJSON_IsNull(a))
		return 0;
	char w[160];
	snprintf(w, sizeof w, "%s.%s", where, fam);
	double *v;
	int n;
	if (jrep_numbers(a, &v, &n, path, w, e) < 0)
		return -1;
	if (entry >= n) {
		free(v);
		return err_set(e, EXIT_USAGE, "'%s': %s has %d entries, no entry %d", path, w, n, entry);
	}
	*out = v[entry];
	free(v);
	return 0;
}

int plot_step0(struct plot_figure *f, const cJSON *rep, const char *path, int entry,
	       const char *title, struct err *e)
{
	const cJSON *modes = jrep_get(rep, "modes");
	int nm = cJSON_GetArraySize(modes);
	if (nm == 0)
		return err_set(e, EXIT_USAGE, "'%s': no modes in the report", path);
	if (entry < 0)
		return err_set(e, EXIT_USAGE, "entry %d is negative", entry);
	/* which families appear anywhere */
	int have[4] = {0};
	int mi = 0;
	for (const cJSON *m = modes->child; m; m = m->next, mi++) {
		char where[64];
		snprintf(where, sizeof where, "modes[%d]", mi);
		if (!cJSON_IsObject(m))
			return err_set(e, EXIT_USAGE, "'%s': %s is not an object", path, where);
		const cJSON *steps = jrep_get(m, "steps");
		if (!cJSON_IsArray(steps) || cJSON_GetArraySize(steps) == 0)
			return err_set(e, EXIT_USAGE, "'%s': %s: 'steps' is %s", path, where,
				       cJSON_IsArray(steps) ? "empty" : "not an array");
		for (const cJSON *s = steps->child; s; s = s->next)
			for (int k = 0; k < 4; k++)
				have[k] |= cJSON_IsArray(jrep_get(jrep_get(s, "value_after"), families[k]));
	}
	int np = 1;
	for (int k = 0; k < 4; k++)
		np += have[k];
	int cols = np < 3 ? np : 3, rows = (np + cols - 1) / cols;
	plot_figure_init(f, rows, cols);
	f->cell_w = 200;
	f->cell_h = 150;
	struct plot_panel *pan[5];
	int pf[5];
	pan[0] = &f->panels[0];
	pf[0] = -1;
	plot_panel_title(pan[0], "loss");
	plot_axis_label(&pan[0]->y, "loss (nats)");
	for (int k = 0, j = 1; k < 4; k++)
		if (have[k]) {
			pan[j] = &f->panels[j];
			pf[j] = k;
			char *t = xasprintf("%s[%d]", families[k], entry);
			plot_panel_title(pan[j], t);
			free(t);
			j++;
		}
	for (int j = 0; j < rows * cols; j++) {
		struct plot_panel *p = &f->panels[j];
		if (j >= np) {
			p->hidden = 1;
			continue;
		}
		p->x.integer = 1;
		plot_axis_label(&p->x, "steps taken");
		if (j > 0 && j % cols == 0)
			plot_axis_label(&p->y, "value");
		if (j == 1 && cols > 1)
			plot_axis_label(&p->y, "value");
	}
	int rc = 0;
	mi = 0;
	for (const cJSON *m = modes->child; m && rc == 0; m = m->next, mi++) {
		char where[96];
		const char *name;
		snprintf(where, sizeof where, "modes[%d]", mi);
		if (jrep_string(m, "mode", &name, path, where, e) < 0) {
			rc = -1;
			break;
		}
		const cJSON *steps = jrep_get(m, "steps");
		int ns = cJSON_GetArraySize(steps);
		double *lx = xmalloc((size_t)ns * sizeof *lx), *ly = xmalloc((size_t)ns * sizeof *ly);
		double *vx = xmalloc((size_t)(ns + 1) * sizeof *vx);
		double *vy = xmalloc((size_t)(ns + 1) * 4 * sizeof *vy);
		int k = 0;
		for (const cJSON *s = steps->child; s && rc == 0; s = s->next, k++) {
			char w2[128];
			snprintf(w2, sizeof w2, "%s.steps[%d]", where, k);
			double step, loss;
			if (!cJSON_IsObject(s)) {
				rc = err_set(e, EXIT_USAGE, "'%s': %s is not an object", path, w2);
				break;
			}
			if (jrep_number(s, "step", &step, path, w2, e) < 0 ||
			    jrep_number(s, "loss", &loss, path, w2, e) < 0) {
				rc = -1;
				break;
			}
			if (!isfinite(loss)) {
				rc = err_set(e, EXIT_USAGE, "'%s': %s: 'loss' is not a finite number", path, w2);
				break;
			}
			lx[k] = step;
			ly[k] = loss;
			char w3[160];
			for (int q = 0; q < 4 && rc == 0; q++) {
				if (!have[q])
					continue;
				if (k == 0) {
					snprintf(w3, sizeof w3, "%s.value", w2);
					rc = fam_entry(jrep_get(s, "value"), families[q], entry, &vy[q], path, w3, e);
				}
				snprintf(w3, sizeof w3, "%s.value_after", w2);
				if (rc == 0)
					rc = fam_entry(jrep_get(s, "value_after"), families[q], entry,
						       &vy[(size_t)(k + 1) * 4 + q], path, w3, e);
			}
		}
		if (rc == 0) {
			const cJSON *sw = jrep_get(m, "wte_lambdas_switched_on");
			struct plot_rgb c = plot_color(mi);
			struct plot_style s = {c, 1, 1.3, PLOT_SOLID, PLOT_MARK_DOT, 3.2};
			plot_add_line(pan[0], &s, ns, lx, ly);
			double *ys = xmalloc((size_t)(ns + 1) * sizeof *ys);
			for (int j = 0; j <= ns; j++)
				vx[j] = j;
			for (int j = 1; j < np; j++) {
				for (int t = 0; t <= ns; t++)
					ys[t] = vy[(size_t)t * 4 + pf[j]];
				plot_add_line(pan[j], &s, ns + 1, vx, ys);
			}
			free(ys);
			char *lab = cJSON_IsTrue(sw) ? xasprintf("%s (wte_lambdas on)", name) : xstrdup(name);
			plot_legend_add(f, PLOT_LEGEND_LINE, lab, &s);
			free(lab);
		}
		free(lx);
		free(ly);
		free(vx);
		free(vy);
	}
	if (rc < 0)
		return -1;
	if (title) {
		plot_set_title(f, title);
	} else {
		const cJSON *arm = jrep_get(rep, "arm"), *seed = jrep_get(rep, "seed"),
			    *dt = jrep_get(rep, "dtype");
		char t[512];
		size_t u = (size_t)snprintf(t, sizeof t, "Step-0 trajectories");
		if (cJSON_IsString(arm) && u < sizeof t)
			u += (size_t)snprintf(t + u, sizeof t - u, ": %s", arm->valuestring);
		if (cJSON_IsNumber(seed) && u < sizeof t)
			u += (size_t)snprintf(t + u, sizeof t - u, ", seed %g", seed->valuedouble);
		if (cJSON_IsString(dt) && u < sizeof t)
			snprintf(t + u, sizeof t - u, ", %s", dt->valuestring);
		plot_set_title(f, t);
	}
	return 0;
}

/* schedule.c: the benchmark's step schedules (docs/model.md) and the
 * schedule arms of supkit-train(1) (cooldown momentum, cosine Muon weight
 * decay, lr_scale and muon_wd_scale calibration).
 *
 * Benchmark form: progress p_t = min(max(t - W, 0) / (S - W), 1) with W the
 * untimed warm-up steps (11); lrm = 1 while p < 1 - warmdown_ratio, then
 * (1 - p) / warmdown_ratio; mu_t = start + (end - start) min(t / 300, 1);
 * wd_t = wd (1 - p) (linear) or wd * 0.5 (1 + cos(pi p)) (cosine: our
 * reading, docs/papers.md). Cooldown: in warmdown
 * mu_t = start + (mu_base - start) lrm. lr_scale multiplies every group lr after the momentum was computed
 * from the unscaled lrm; muon_wd_scale multiplies wd_t.
 * Left out: the original's time-based progress (we use step-based, as the
 * benchmark reproduction does) and LR warm-up (WARMUP_RATIO = 0).
 */
#include <math.h>
#include "trainer/optim.h"

void optim_schedule(const struct config *c, int step, struct optim_sched *s)
{
	double span = (double)(c->steps - c->warmup_steps);
	double p = (double)(step - c->warmup_steps);
	if (p < 0)
		p = 0;
	p = span > 0 ? p / span : 1.0;
	if (p > 1)
		p = 1;
	double lrm = 1.0;
	int warmdown = c->warmdown_ratio > 0 && p >= 1.0 - c->warmdown_ratio;
	if (warmdown)
		lrm = (1.0 - p) / c->warmdown_ratio;
	double frac = c->momentum_warmup > 0 ? (double)step / c->momentum_warmup : 1.0;
	if (frac > 1)
		frac = 1;
	double mu = (1 - frac) * c->momentum_start + frac * c->momentum_end;
	if (c->cooldown && warmdown)
		mu = c->momentum_start + (mu - c->momentum_start) * lrm;
	double wd = c->muon_wd_schedule == WD_COSINE
		? c->muon_wd * 0.5 * (1.0 + cos(M_PI * p))
		: c->muon_wd * (1.0 - p);
	s->step = step;
	s->progress = p;
	s->lrm = lrm;
	s->lr_mult = lrm * c->lr_scale;
	s->momentum = mu;
	s->muon_wd = wd * c->muon_wd_scale;
}

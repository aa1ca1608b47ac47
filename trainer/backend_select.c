/* backend_select.c: the registry of backends (trainer/backend.h
 * backend_register, backend_find), the choice of one for a run, and the
 * run-level helpers over the chosen backend object.
 *
 * The CPU backend is always in the registry; kernels/ registers "cuda" when
 * its objects are linked in (make GPU=1, and the emulated device of
 * tests/emu), so this file names no backend's code but the CPU's. Without
 * a "cuda" entry, asking for backend = cuda is a usage error that says how
 * to build it.
 * Left out: a CUDA fp64 path; several devices in one process.
 * Reference: supkit-formats(5), TRAINER CONFIG (backend); trainer/backend.h.
 */
#include "trainer/backend_select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKEND_MAX 4

static const struct backend_ops *registry[BACKEND_MAX];
static int nregistered;

void backend_register(const struct backend_ops *bk)
{
	if (!strcmp(bk->name, "cpu") || backend_find(bk->name) || nregistered == BACKEND_MAX) {
		fprintf(stderr, "backend_register: cannot add '%s' (name taken or registry full)\n",
			bk->name);
		abort();
	}
	registry[nregistered++] = bk;
}

const struct backend_ops *backend_find(const char *name)
{
	if (!strcmp(name, "cpu"))
		return backend_cpu();
	for (int i = 0; i < nregistered; i++)
		if (!strcmp(registry[i]->name, name))
			return registry[i];
	return NULL;
}

int backend_cuda_built(void)
{
	return backend_find("cuda") != NULL;
}

int backend_cuda_present(void)
{
	const struct backend_ops *c = backend_find("cuda");
	return c && c->device_count() > 0;
}

/* 1 with e set to the refusal when cfg asks for something only the CPU
 * backend does, else 0: the arms whose steps are host code
 * (trainer/optim.c: Zeta, MALT, Muon2-F, NormPre-G), or that are validated
 * on the CPU backend only (the fused weights W (1 alpha^T), AdamW on the
 * block matrices, rope_tau's tables and their gradient, fp32 RoPE tables),
 * and a polar step other than the plain 5-step one (kernels/polar.cu). */
static int cpu_only(const struct config *cfg, struct err *e)
{
	const char *host_arm = cfg->zeta ? "zeta" : cfg->malt ? "malt" : cfg->muon2f ? "muon2f"
			     : cfg->normpre_g ? "normpre_g" : NULL;
	if (host_arm)
		return -err_set(e, EXIT_USAGE, "backend = cuda: %s = 1 needs backend = cpu "
				"(its pre-polar step runs on the host only)", host_arm);
	if (cfg->sub_gains && cfg->sub_form != SUB_FORM_FUSED)
		return -err_set(e, EXIT_USAGE, "backend = cuda: sub_gains = 1 with sub_form = %s needs backend = cpu "
				"(the CUDA backend does not implement the scaled activation x_hat alpha)",
				cfg->sub_form == SUB_FORM_UNFUSED ? "unfused"
				: cfg->sub_form == SUB_FORM_UNFUSED_GATE_COPY ? "unfused_gate_copy" : "gate_scaled");
	if (cfg->sub_gains)
		return -err_set(e, EXIT_USAGE, "backend = cuda: sub_gains = 1 needs backend = cpu "
				"(the CUDA backend does not implement the fused weights W (1 alpha^T))");
	if (cfg->matrix_optim == MATRIX_OPTIM_ADAMW)
		return -err_set(e, EXIT_USAGE, "backend = cuda: matrix_optim = adamw needs backend = cpu "
				"(the CUDA backend steps the block matrices with Muon only)");
	if (cfg->rope_tau != ROPE_TAU_OFF || cfg->rope_trig != ROPE_TRIG_BF16)
		return -err_set(e, EXIT_USAGE, "backend = cuda: %s needs backend = cpu "
				"(the CUDA backend has neither learned RoPE frequencies nor fp32 RoPE tables)",
				cfg->rope_tau == ROPE_TAU_SHARED ? "rope_tau = shared"
				: cfg->rope_tau == ROPE_TAU_HEAD ? "rope_tau = head" : "rope_trig = fp32");
	if (cfg->polar_norm != POLAR_NORM_AS_POLAR || cfg->polar_steps != 5)
		return -err_set(e, EXIT_USAGE, "backend = cuda: polar_norm = %s and polar_steps = %d need backend = cpu "
				"(the CUDA polar step is the plain 5-step one)",
				cfg->polar_norm == POLAR_NORM_FP32 ? "fp32" : cfg->polar_norm == POLAR_NORM_AOL ? "aol" : "polar",
				cfg->polar_steps);
	return 0;
}

/* The table for cfg before it is opened, or NULL with e set. */
static const struct backend_ops *choose(const struct config *cfg, struct err *e)
{
	if (cfg->backend == BACKEND_CPU)
		return backend_cpu();
	int fp32 = cfg->dtype == DTYPE_F32;
	const struct backend_ops *c = backend_find("cuda");
	struct err why = {0};
	int host_only = cpu_only(cfg, &why);
	if (cfg->backend == BACKEND_AUTO)
		return backend_cuda_present() && fp32 && !host_only ? c : backend_cpu();
	if (host_only) {
		if (e)
			*e = why;
		return NULL;
	}
	if (!c) {
		err_set(e, EXIT_USAGE, "backend = cuda: this build has no CUDA backend "
			"(build with make GPU=1)");
		return NULL;
	}
	if (c->device_count() < 1) {
		err_set(e, EXIT_USAGE, "backend = cuda: no CUDA device found");
		return NULL;
	}
	if (!fp32) {
		err_set(e, EXIT_USAGE, "backend = cuda: dtype = fp64 runs need backend = cpu");
		return NULL;
	}
	return c;
}

_Static_assert((int)BK_PRECISION_AUTO == (int)PRECISION_AUTO &&
	       (int)BK_PRECISION_AUTOCAST == (int)PRECISION_AUTOCAST &&
	       (int)BK_PRECISION_FP32 == (int)PRECISION_FP32, "precision enums differ");

const struct backend_ops *backend_select(const struct config *cfg, struct err *e)
{
	const struct backend_ops *bk = choose(cfg, e);
	if (!bk)
		return NULL;
	struct backend_options o = { .device = cfg->device, .threads = cfg->threads,
				     .precision = (enum backend_precision)cfg->precision };
	if (bk->open(&o, e) < 0)
		return NULL;
	return bk;
}

void *backend_alloc(const struct backend_ops *bk, size_t n)
{
	void *p = bk->alloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "out of %s memory (%zu bytes)\n", bk->host_memory ? "host" : "device",
			n);
		abort();
	}
	return p;
}

void backend_free(const struct backend_ops *bk, void *p)
{
	bk->free(p);
}

void backend_optim_attach(struct optim *o, const struct backend_ops *bk)
{
	optim_set_polar(o, bk->polar_express);
	optim_set_device(o, bk->optim());
}

double peak_bf16_flops(const char *name)
{
	if (strstr(name, "H100") && strstr(name, "PCIe"))
		return 756e12;
	if (strstr(name, "H100") || strstr(name, "H200"))
		return 989.5e12;   /* SXM */
	if (strstr(name, "A100"))
		return 312e12;
	return 0;
}

int backend_peak_flops(const struct backend_ops *bk, double *peak, struct err *e)
{
	*peak = 0;
	const char *v = getenv("SUPKIT_PEAK_TFLOPS");
	if (v && *v) {
		char *end;
		double t = strtod(v, &end);
		if (*end || !(t > 0) || !isfinite(t))
			return err_set(e, EXIT_USAGE, "SUPKIT_PEAK_TFLOPS '%s' is not a positive number (TFLOP/s)", v);
		*peak = t * 1e12;
		return 0;
	}
	*peak = bk->peak_flops();
	return 0;
}

/* backend_select.c: the choice between the CPU reference backend and the
 * CUDA backend (kernels/cuda_api.h) for a run, and memory every backend's
 * ops use in place.
 *
 * Without SUPKIT_CUDA (the default build) the CUDA branches compile away and
 * asking for backend = cuda is a usage error that says how to build it.
 * Left out: several devices (device 0 only), a CUDA fp64 path.
 * Reference: supkit-formats(5), TRAINER CONFIG (backend); trainer/backend.h.
 */
#include "trainer/backend_select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if SUPKIT_CUDA
#include "kernels/cuda_api.h"
#define SELECT_CUDA_BUILT 1
#else
#define SELECT_CUDA_BUILT 0
#endif

#if SUPKIT_CUDA
static int is_cuda(const struct backend_ops *bk)
{
	return bk && strcmp(bk->name, "cuda") == 0;
}
#endif

int backend_cuda_built(void)
{
	return SELECT_CUDA_BUILT;
}

int backend_cuda_present(void)
{
#if SUPKIT_CUDA
	return cuda_device_count() > 0;
#else
	return 0;
#endif
}

static const struct backend_ops *cuda_table(void)
{
#if SUPKIT_CUDA
	return backend_cuda();
#else
	return NULL;
#endif
}

const struct backend_ops *backend_select(const struct config *cfg, struct err *e)
{
	if (cfg->backend == BACKEND_CPU)
		return backend_cpu();
	int fp32 = cfg->dtype == DTYPE_F32;
	if (cfg->backend == BACKEND_AUTO)
		return backend_cuda_present() && fp32 ? cuda_table() : backend_cpu();
	if (!backend_cuda_built()) {
		err_set(e, EXIT_USAGE, "backend = cuda: this build has no CUDA backend "
			"(build with make GPU=1)");
		return NULL;
	}
	if (!backend_cuda_present()) {
		err_set(e, EXIT_USAGE, "backend = cuda: no CUDA device found");
		return NULL;
	}
	if (!fp32) {
		err_set(e, EXIT_USAGE, "backend = cuda: dtype = fp64 runs need backend = cpu");
		return NULL;
	}
	return cuda_table();
}

void *backend_alloc(const struct backend_ops *bk, size_t n)
{
#if SUPKIT_CUDA
	if (is_cuda(bk)) {
		void *p = cuda_mem_alloc(n ? n : 1);
		if (!p) {
			fprintf(stderr, "out of device memory (%zu bytes)\n", n);
			abort();
		}
		return p;
	}
#endif
	(void)bk;
	return xcalloc(n ? n : 1, 1);
}

void backend_free(const struct backend_ops *bk, void *p)
{
#if SUPKIT_CUDA
	if (is_cuda(bk)) {
		cuda_mem_free(p);
		return;
	}
#endif
	(void)bk;
	free(p);
}

optim_polar_fn backend_polar(const struct backend_ops *bk)
{
#if SUPKIT_CUDA
	if (is_cuda(bk))
		return cuda_polar_express;
#endif
	(void)bk;
	return NULL;
}

#if SUPKIT_CUDA
static void *cuda_state_alloc(size_t n)
{
	void *p = cuda_mem_alloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "out of device memory (%zu bytes of optimizer state)\n", n);
		abort();
	}
	return p;
}

static const struct optim_device cuda_optim = {
	.alloc = cuda_state_alloc, .free = cuda_mem_free, .nesterov = cuda_opt_nesterov,
	.sumsq = cuda_opt_sumsq, .muon_update = cuda_opt_muon_update, .adamw = cuda_opt_adamw,
	.step_w = cuda_opt_step_w, .oe_sumsq = cuda_opt_oe_sumsq, .oe_step = cuda_opt_oe_step,
	.sumsq64 = cuda_opt_sumsq64, .scale64 = cuda_opt_scale64, .widen = cuda_opt_widen,
	.narrow = cuda_opt_narrow, .colsum64 = cuda_opt_colsum64, .ng_project = cuda_opt_ng_project,
	.gram64 = cuda_opt_gram64, .ng_whiten = cuda_opt_ng_whiten, .ng_combine = cuda_opt_ng_combine,
};
#endif

const struct optim_device *backend_optim_device(const struct backend_ops *bk)
{
#if SUPKIT_CUDA
	if (is_cuda(bk))
		return &cuda_optim;
#endif
	(void)bk;
	return NULL;
}

void backend_optim_attach(struct optim *o, const struct backend_ops *bk)
{
	optim_set_polar(o, backend_polar(bk));
	optim_set_device(o, backend_optim_device(bk));
}

size_t backend_device_bytes(const struct backend_ops *bk, size_t *peak)
{
	*peak = 0;
#if SUPKIT_CUDA
	if (is_cuda(bk)) {
		struct cuda_mem_stats s;
		cuda_mem_stats(&s);
		*peak = s.device_peak;
		return s.device_used;
	}
#endif
	(void)bk;
	return 0;
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

int backend_device_name(const struct backend_ops *bk, char *buf, size_t n)
{
#if SUPKIT_CUDA
	if (is_cuda(bk) && cuda_device_name(buf, n) == 0)
		return 0;
#endif
	(void)bk;
	if (n)
		buf[0] = 0;
	return -1;
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
	char name[256];
	if (backend_device_name(bk, name, sizeof name) == 0)
		*peak = peak_bf16_flops(name);
	return 0;
}

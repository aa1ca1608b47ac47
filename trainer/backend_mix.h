/* backend_mix.h: backend.h's mix_rmsnorm_fwd and mix_bwd as the sequences
 * of a backend's own ops they stand for, in their order: the CPU backend's
 * implementation, and the reference the CUDA backend's fused kernels are
 * tested against (tests/gpu/test_cuda_ops.c).
 * Reference: trainer/backend.h.
 */
#ifndef SUPKIT_BACKEND_MIX_H
#define SUPKIT_BACKEND_MIX_H

#include "trainer/backend.h"

static inline void backend_mix_fwd_ops(const struct backend_ops *b, struct tensor *x,
				       struct tensor *out, struct tensor *rstd,
				       const struct tensor *xin, const struct tensor *x0,
				       const struct tensor *x0w, const double *c, double eps)
{
	b->axpby(x, c[0], xin, 0);
	b->axpby(x, c[1], x0, 1);
	if (x0w)
		b->axpby(x, c[2], x0w, 1);
	b->rmsnorm_fwd(out, rstd, x, eps);
}

static inline void backend_mix_bwd_ops(const struct backend_ops *b, struct tensor *dx,
				       struct tensor *dx0, struct tensor *dx0w, struct tensor *g,
				       int64_t i, const struct tensor *xin,
				       const struct tensor *x0, const struct tensor *x0w,
				       const double *c)
{
	b->dot_acc(&g[0], i, dx, xin);
	b->dot_acc(&g[1], i, dx, x0);
	b->axpby(dx0, c[1], dx, 1);
	if (x0w) {
		b->dot_acc(&g[2], i, dx, x0w);
		b->axpby(dx0w, c[2], dx, 1);
	}
	b->axpby(dx, 0, dx, c[0]);
}

#endif

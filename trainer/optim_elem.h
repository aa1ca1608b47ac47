/* optim_elem.h: the optimizer's per-element arithmetic, shared by the host
 * loops of trainer/optim.c and the CUDA kernels of kernels/optim.cu (one
 * thread an element), so that both round at the same points in the same
 * order (trainer/optim.c's header lists the rounding points). C and CUDA
 * C++ alike: on the device the functions are __host__ __device__.
 *
 * Values travel as double and are rounded with rnd() to the dtype the
 * original's tensor has (RND_F32, RND_BF16; RND_F64 leaves them alone, for
 * fp64 runs).
 */
#ifndef SUPKIT_OPTIM_ELEM_H
#define SUPKIT_OPTIM_ELEM_H

#include <math.h>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <string.h>
#define OPT_FN __host__ __device__ static __forceinline__
#else
#include <string.h>
#include "lib/bf16.h"
#define OPT_FN static inline __attribute__((always_inline))
#endif

enum round_mode { RND_F64, RND_F32, RND_BF16 };

/* x rounded to fp32 and then to bf16 (round to nearest even). */
OPT_FN float opt_bf16(float x)
{
#ifdef __CUDA_ARCH__
	return __bfloat162float(__float2bfloat16_rn(x));
#elif defined(__CUDACC__)
	unsigned int u;
	memcpy(&u, &x, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		u = (u | 0x00400000u) & 0xffff0000u;   /* quiet NaN */
	else
		u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
	memcpy(&x, &u, 4);
	return x;
#else
	return bf16_round(x);
#endif
}

OPT_FN double rnd(double x, enum round_mode r)
{
	switch (r) {
	case RND_F32:
		return (float)x;
	case RND_BF16:
		return opt_bf16((float)x);
	default:
		return x;
	}
}

/* torch.lerp(a, b, w) as PyTorch computes it, in fp64 and in fp32. */
OPT_FN double opt_lerp(double a, double b, double w)
{
	return w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w);
}

OPT_FN float opt_lerp_f32(float a, float b, float w)
{
	return w < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}

/* AdamW's moment update of one element: m, v updated and stored rounded;
 * returns the unrounded direction m / (sqrt(v / bias2) + eps) from the
 * unrounded moments (the original's fused kernel). bf16_state: g is bf16
 * already and the moments round once, to bf16 (r = RND_BF16). */
OPT_FN double adamw_elem(double *m, double *v, double g, double w1, double w2, double bias2,
			 double eps, int bf16_state, enum round_mode r)
{
	double mm = opt_lerp(*m, g, w1);
	double gg = rnd(g * g, bf16_state ? RND_F32 : r);
	double vv = opt_lerp(*v, gg, w2);
	if (!bf16_state) {
		mm = rnd(mm, r);
		vv = rnd(vv, r);
	}
	double upd = mm / (sqrt(vv / bias2) + eps);
	*m = rnd(mm, r);
	*v = rnd(vv, r);
	return upd;
}

/* Nesterov momentum of one element: buf = lerp(buf, g, 1 - mu), returns
 * lerp(g, buf, mu); fp32 runs in fp32 arithmetic (PyTorch's fp32 lerp). */
OPT_FN double nesterov_elem(double *buf, double g, double w1, double mu, int f64)
{
	if (f64) {
		*buf = opt_lerp(*buf, g, w1);
		return opt_lerp(g, *buf, mu);
	}
	*buf = opt_lerp_f32((float)*buf, (float)g, (float)w1);
	return opt_lerp_f32((float)g, (float)*buf, (float)mu);
}

/* Muon's last step for one element: x (Polar Express output) times its
 * row or column scale s, rounded to X's dtype xr; the cautious mask (x * w
 * >= 0, in w's dtype r); returns w - (lr x + [mask] lrwd w). */
OPT_FN double muon_update_elem(double w, double x, double s, double lr, double lrwd,
			       enum round_mode r, enum round_mode xr)
{
	x = rnd(x * s, xr);
	int mask = rnd(x * w, r) >= 0;
	double a = rnd(lr * x, xr);
	double b = mask ? rnd(rnd(lrwd * w, r), r) : 0;
	return rnd(w - rnd(a + b, r), r);
}

/* bf16 storage bits <-> fp32 (the conversion to bf16 rounds to nearest
 * even; x is bf16-exact where the callers use it). */
OPT_FN float opt_bf16_to_f32(unsigned short b)
{
	unsigned int u = (unsigned int)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

OPT_FN unsigned short opt_f32_to_bf16(float x)
{
	float r = opt_bf16(x);
	unsigned int u;
	memcpy(&u, &r, 4);
	return (unsigned short)(u >> 16);
}

/* OE update: entry of a visited row's normalised gradient g / count, and
 * its step eta * G / rms, rounded as the tensors are (r). */
OPT_FN double oe_g_elem(double g, double count, enum round_mode r)
{
	return rnd(g / count, r);
}

OPT_FN double oe_step_elem(double G, double eta, double rms, enum round_mode r)
{
	return rnd(eta * rnd(G / rms, r), r);
}

#endif

/* attn_harness.h: the attention kernels launched one by one on the CPU
 * through the SIMT emulator (simt.h), as attn_fwd_mma_launch and
 * attn_bwd_mma_launch run them, and checked against the CPU backend's
 * attention in fp64 on the same bf16 inputs: emulate() runs a forward (and
 * the backward), against_cpu() compares one shape, cases() the shapes.
 * k_attn_dq_mma, dQ recomputed without the kept dS, is the harness's own
 * reference for the product's dQ from the kept dS.
 * Included by tests/emu/test_mma_emu.cc (the product's mma kernels,
 * kernels/attention_mma.cu) and by dev/cuda/kernels_emu.cc, which defines
 * ATTN_HARNESS_VARIANTS and includes dev/cuda/attention_variants.cu first:
 * then FWD_WG runs that variant's kernels too.
 *
 * The includer includes, before this file: lib/rng.h, trainer/backend.h,
 * kernels/attention_mma.cu, t.h, tests/emu/emu_test.h, <vector>.
 * Reference: kernels/attention_mma.cu, tests/emu/simt.h, trainer/backend.h.
 */
#ifndef SUPKIT_ATTN_HARNESS_H
#define SUPKIT_ATTN_HARNESS_H

/* dQ recomputing S, P, dP = dY V^T and dS from q, k, v, dy, lse and Dd
 * (a block per 64 queries, b, h; key tiles of 64), the way a backward
 * without the kept dS forms it: the reference k_attn_dq_ds_mma's dQ is
 * checked against bit for bit where the tiles align. */

__global__ void __launch_bounds__(MM_THREADS)
k_attn_dq_mma(float *dq, bf *dqb, const bf *dy, const bf *q, const bf *k, const bf *v,
	      const float *lse, const float *Dd, int T, int H, int64_t window, float scale)
{
	DYN_SMEM(smraw);
	bf *Qs = (bf *)smraw, *Gs = Qs + MM_TILE, *Ks = Gs + MM_TILE, *Vs = Ks + 2 * MM_TILE;
	const qblock qb = query_block(MM_R, T, H, window);
	const int bh = qb.bh, q0 = qb.q0, kfirst = qb.kfirst, ntile = qb.ntile;
	const int64_t ld = qb.ld, base = qb.base;
	const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int c = lane & 3, g = lane >> 2;

	tile_load(Qs, q + base, ld, q0, T);
	tile_load(Gs, dy + base, ld, q0, T);
	tile_load(Ks, k + base, ld, kfirst, T);
	tile_load(Vs, v + base, ld, kfirst, T);
	cp_commit();
	const int tr[2] = { q0 + w * 16 + g, q0 + w * 16 + g + 8 };
	const float sl2 = scale * LOG2E;   /* P = exp2(s scale log2 e - lse log2 e) */
	float L[2], Dr[2];
#pragma unroll
	for (int i = 0; i < 2; i++) {
		L[i] = tr[i] < T ? lse[(int64_t)bh * T + tr[i]] * LOG2E : 0.f;
		Dr[i] = tr[i] < T ? Dd[(int64_t)bh * T + tr[i]] : 0.f;
	}
	float gq[16][4];
	zero_frags<16>(gq);
	for (int it = 0; it < ntile; it++) {
		const int s0 = kfirst + it * MM_R, cur = it & 1;
		const bf *Kc = Ks + cur * MM_TILE, *Vc = Vs + cur * MM_TILE;
		pair_next(Ks, Vs, k + base, v + base, ld, it, ntile, s0, T);
		__syncthreads();
		float p[8][4], ds[8][4];
		prod_abt(p, NULL, Qs, w * 16, Kc);    /* S */
		if (all_vis(q0 + w * 16, q0 + w * 16 + 15, s0, s0 + MM_R - 1, T, window)) {
#pragma unroll
			for (int j = 0; j < 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					p[j][e] = exp2f(fmaf(p[j][e], sl2, -L[e >> 1]));
		} else {
#pragma unroll
			for (int j = 0; j < 8; j++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					int i = e >> 1, key = s0 + j * 8 + 2 * c + (e & 1);
					p[j][e] = attn_visible(tr[i], key, T, window)
							  ? exp2f(fmaf(p[j][e], sl2, -L[i])) : 0.f;
				}
		}
		prod_abt(ds, NULL, Gs, w * 16, Vc);   /* dP = dY V^T */
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				ds[j][e] = p[j][e] * (ds[j][e] - Dr[e >> 1]);
		prod_px(gq, ds, Kc);                  /* dQ += dS K */
		__syncthreads();
	}
	store_rows(dq ? dq + base : NULL, dqb ? dqb + base : NULL, gq, scale, ld, q0 + w * 16, T);
}

static size_t mm_smem_dq(void)
{
	return (size_t)6 * MM_TILE * sizeof(bf);
}

namespace {

struct rng RG;

struct run {
	std::vector<float> y, lse, dq, dk, dv;
	std::vector<bf> yb, dqb, dkb, dvb;   /* the kernels' bf16 copies of y, dq, dk, dv */
	/* the backward with the kept dS: dQ from k_attn_dq_ds_mma;
	 * dk and dv of the dK/dV kernel that kept them differing from dk and
	 * dv above (should be 0); slots the dK/dV kernel left unwritten and
	 * guard entries past the buffer it wrote (both should be 0) */
	std::vector<float> dqs;
	std::vector<bf> dqsb;   /* its bf16 copy */
	size_t ds_kdiff = 0, ds_unwritten = 0, ds_guard = 0;
	size_t vt_bad = 0;   /* wg: entries of k_attn_vt's v^T that are not v's */
};

const uint16_t NAN_BF = 0x7fc1;   /* the dS buffer's fill: a NaN no kernel makes */

std::vector<bf> to_bf(const std::vector<float> &x)
{
	std::vector<bf> b(x.size());
	for (size_t i = 0; i < x.size(); i++)
		b[i] = __float2bfloat16_rn(x[i]);
	return b;
}

std::vector<float> rounded(const std::vector<float> &x)
{
	std::vector<float> r(x.size());
	for (size_t i = 0; i < x.size(); i++)
		r[i] = __bfloat162float(__float2bfloat16_rn(x[i]));
	return r;
}

#ifdef ATTN_HARNESS_VARIANTS
/* entries of xt (k_attn_vt's copy) that are not x's transposed, or 0 past T */
size_t vt_misses(const std::vector<bf> &xt, const std::vector<bf> &x, int B, int T, int H,
		 int64_t Tp)
{
	size_t bad = 0;
	for (int bh = 0; bh < B * H; bh++)
		for (int d = 0; d < MM_D; d++)
			for (int64_t t = 0; t < Tp; t++) {
				const bf a = xt[((size_t)bh * MM_D + d) * Tp + t];
				const bf e = t < T ? x[(((size_t)(bh / H) * T + t) * H + bh % H) * MM_D + d]
						   : __float2bfloat16_rn(0.f);
				bad += a.x != e.x;
			}
	return bad;
}
#endif

/* The forwards: mma's, wg's (wgmma; with the backward, its dK, dV kernel) */
enum { FWD_MMA, FWD_WG };
const char *const FWD_NAME[] = { "mma", "wg" };

/* The forward fwd and the backward of the kernels on the emulator, as
 * attn_fwd_mma_launch and attn_bwd_mma_launch (dev/cuda's fwd_wg and
 * bwd_wg) would run them. */
run emulate(int fwd, const std::vector<float> &q, const std::vector<float> &k,
	    const std::vector<float> &v, const std::vector<float> &dy, int B, int T, int H,
	    int64_t window, float scale)
{
	(void)fwd;   /* FWD_MMA alone without ATTN_HARNESS_VARIANTS */
	if (window > T)
		window = T;
	const int D = MM_D;
	size_t n = (size_t)B * T * H * D, nl = (size_t)B * H * T;
	std::vector<bf> bq = to_bf(q), bk = to_bf(k), bv = to_bf(v), bdy = to_bf(dy);
	run r;
	r.y.assign(n, NAN);
	r.lse.assign(nl, NAN);
	r.yb.assign(n, __float2bfloat16_rn(NAN));
	float *y = r.y.data(), *lse = r.lse.data();
	bf *yb = r.yb.data();
	const bf *pq = bq.data(), *pk = bk.data(), *pv = bv.data(), *pdy = bdy.data();
	dim3 gr((unsigned)((T + MM_R - 1) / MM_R), (unsigned)(B * H));
#ifdef ATTN_HARNESS_VARIANTS
	if (fwd == FWD_WG) {
		/* v^T first (NaN where k_attn_vt writes nothing, so a key the
		 * kernel reads unwritten shows) */
		int64_t Tp = wg_tp(T);
		std::vector<bf> vt((size_t)B * H * MM_D * Tp, __float2bfloat16_rn(NAN));
		bf *pvt = vt.data();
		emu_launch(dim3((unsigned)(Tp / MM_R), (unsigned)(B * H)), MM_THREADS,
			   MM_TILE * sizeof(bf), [&] { k_attn_vt(pvt, pv, T, H, Tp); });
		r.vt_bad += vt_misses(vt, bv, B, T, H, Tp);
		emu_launch(gr, MM_THREADS, WG_SMEM,
			   [&] { k_attn_fwd_wg(y, yb, lse, pq, pk, pvt, T, H, window, scale); });
	} else
#endif
	{
		emu_launch(gr, MM_THREADS, 5 * MM_TILE * sizeof(bf),
			   [&] { k_attn_fwd_mma(y, yb, lse, pq, pk, pv, T, H, window, scale); });
	}
	std::vector<float> Dd(nl);
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			for (int h = 0; h < H; h++) {
				double s = 0;
				size_t o = (((size_t)b * T + t) * H + h) * D;
				for (int d = 0; d < D; d++)
					s += (double)dy[o + d] * r.y[o + d];
				Dd[((size_t)b * H + h) * T + t] = (float)s;
			}
	r.dq.assign(n, NAN);
	r.dk.assign(n, NAN);
	r.dv.assign(n, NAN);
	r.dqb.assign(n, __float2bfloat16_rn(NAN));
	r.dkb.assign(n, __float2bfloat16_rn(NAN));
	r.dvb.assign(n, __float2bfloat16_rn(NAN));
	float *dq = r.dq.data(), *dk = r.dk.data(), *dv = r.dv.data();
	bf *dqb = r.dqb.data(), *dkb = r.dkb.data(), *dvb = r.dvb.data();
	const float *pD = Dd.data();
	dim3 g64((unsigned)((T + MM_R - 1) / MM_R), (unsigned)(B * H));
	/* dK, dV: wg's kernel (on transposed copies of q and dy; dQ from the
	 * kept dS on one of k; each checked as v's) or mma's */
#ifdef ATTN_HARNESS_VARIANTS
	int64_t Tp = wg_tp(T);
	std::vector<bf> qt, dyt, kt;
	if (fwd == FWD_WG) {
		qt.assign((size_t)B * H * MM_D * Tp, __float2bfloat16_rn(NAN));
		dyt = kt = qt;
		bf *pqt = qt.data(), *pdyt = dyt.data(), *pkt = kt.data();
		dim3 gt((unsigned)(Tp / MM_R), (unsigned)(B * H));
		emu_launch(gt, MM_THREADS, MM_TILE * sizeof(bf), [&] { k_attn_vt(pqt, pq, T, H, Tp); });
		emu_launch(gt, MM_THREADS, MM_TILE * sizeof(bf), [&] { k_attn_vt(pdyt, pdy, T, H, Tp); });
		emu_launch(gt, MM_THREADS, MM_TILE * sizeof(bf), [&] { k_attn_vt(pkt, pk, T, H, Tp); });
		r.vt_bad += vt_misses(qt, bq, B, T, H, Tp) + vt_misses(dyt, bdy, B, T, H, Tp) +
			    vt_misses(kt, bk, B, T, H, Tp);
	}
#endif
	auto dkdv = [&](float *gk_, float *gv_, bf *gkb_, bf *gvb_, bf *ds_) {
#ifdef ATTN_HARNESS_VARIANTS
		if (fwd == FWD_WG)
			emu_launch(g64, MM_THREADS, WG_BWD_SMEM, [&] {
				k_attn_dkdv_wg(gk_, gv_, gkb_, gvb_, ds_, pdy, pq, pk, pv, qt.data(),
					       dyt.data(), lse, pD, T, H, window, scale);
			});
		else
#endif
			emu_launch(g64, MM_THREADS, mm_smem_dkdv(), [&] {
				k_attn_dkdv_mma(gk_, gv_, gkb_, gvb_, ds_, pdy, pq, pk, pv, lse, pD, T, H,
						window, scale);
			});
	};
	dkdv(dk, dv, dkb, dvb, NULL);
	emu_launch(g64, MM_THREADS, mm_smem_dq(),
		   [&] { k_attn_dq_mma(dq, dqb, pdy, pq, pk, pv, lse, pD, T, H, window, scale); });
	/* again keeping dS, then dQ from it (as attn_bwd_mma_launch runs them) */
	size_t nds = (size_t)B * H * ds_slots(T, window) * DS_T * DS_T, guard = 4096;
	std::vector<bf> ds(nds + guard);
	for (bf &x : ds)
		x.x = NAN_BF;
	std::vector<float> dk2(n, NAN), dv2(n, NAN);
	std::vector<bf> dvb2(n);
	r.dqs.assign(n, NAN);
	r.dqsb.assign(n, __float2bfloat16_rn(NAN));
	float *pk2 = dk2.data(), *pv2 = dv2.data(), *pqs = r.dqs.data();
	bf *pds = ds.data(), *pvb2 = dvb2.data(), *pqsb = r.dqsb.data();
	dkdv(pk2, pv2, NULL, pvb2, pds);
#ifdef ATTN_HARNESS_VARIANTS
	if (fwd == FWD_WG)   /* dQ from the kept dS: wg's kernel on k^T, or mma's */
		emu_launch(g64, MM_THREADS, WG_DQ_SMEM,
			   [&] { k_attn_dq_ds_wg(pqs, pqsb, pds, kt.data(), T, H, window, scale); });
	else
#endif
		emu_launch(g64, MM_THREADS, mm_smem_dq_ds(),
			   [&] { k_attn_dq_ds_mma(pqs, pqsb, pds, pk, T, H, window, scale); });
	r.ds_kdiff = (size_t)(memcmp(dk2.data(), dk, n * 4) != 0) +
		     (memcmp(dv2.data(), dv, n * 4) != 0) +
		     (memcmp(dvb2.data(), dvb, n * sizeof(bf)) != 0);
	for (size_t i = 0; i < nds + guard; i++)
		(i < nds ? r.ds_unwritten : r.ds_guard) += ds[i].x == NAN_BF;
	r.ds_guard = guard - r.ds_guard;
	return r;
}

double rel_fro(const std::vector<float> &a, const std::vector<double> &b)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < a.size(); i++) {
		double d = (double)a[i] - b[i];
		num += d * d;
		den += b[i] * b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

std::vector<double> widen(const std::vector<float> &x)
{
	return std::vector<double>(x.begin(), x.end());
}

/* One shape: the emulated kernels against the CPU backend in fp64 on the
 * same bf16-rounded inputs. */
void against_cpu(int fwd, int B, int T, int H, int64_t window)
{
	const int D = MM_D;
	size_t n = (size_t)B * T * H * D, nl = (size_t)B * H * T;
	std::vector<float> q = normals(&RG, n, 1), k = normals(&RG, n, 1), v = normals(&RG, n, 1);
	std::vector<float> dy = normals(&RG, n, 1);
	double sc = 1.0 / sqrt((double)D);
	run g = emulate(fwd, q, k, v, dy, B, T, H, window, (float)sc);
	/* fp64 CPU reference on the rounded values */
	std::vector<double> hq(n), hk(n), hv(n), hdy(n), hy(n), hl(nl), hdq(n), hdk(n), hdv(n);
	std::vector<float> rq = rounded(q), rk = rounded(k), rv = rounded(v), rdy = rounded(dy);
	for (size_t i = 0; i < n; i++)
		hq[i] = rq[i], hk[i] = rk[i], hv[i] = rv[i], hdy[i] = rdy[i];
	auto A4 = [&](std::vector<double> &x) {
		struct tensor t = { x.data(), TD_F64, 4, { B, T, H, D } };
		return t;
	};
	struct tensor tq = A4(hq), tk = A4(hk), tv = A4(hv), tdy = A4(hdy), ty = A4(hy);
	struct tensor tdq = A4(hdq), tdk = A4(hdk), tdv = A4(hdv);
	struct tensor tl = { hl.data(), TD_F64, 3, { B, H, T, 1 } };
	const struct backend_ops *cpu = backend_cpu();
	cpu->attn_fwd(&ty, &tl, &tq, &tk, &tv, window, sc);
	double ey = rel_fro(g.y, hy), el = 0;
	for (size_t i = 0; i < nl; i++)
		el = std::max(el, fabs((double)g.lse[i] - hl[i]));
	printf("  %-4s B%d T%d H%d window %lld: y %.2e, lse %.2e", FWD_NAME[fwd], B, T, H,
	       (long long)window, ey, el);
	CHECKF(ey <= 1e-2 && el <= 1e-3, "%s T %d window %lld: y error %.3g, lse error %.3g",
	       FWD_NAME[fwd], T, (long long)window, ey, el);
	CHECKF(g.vt_bad == 0, "k_attn_vt: %zu entries of v^T are not v's (or 0 past T)", g.vt_bad);
	/* the bf16 copy of y the backend keeps for proj's GEMMs: y rounded */
	CHECKF(cast_misses(g.y, g.yb) == 0, "y's bf16 copy: %zu entries are not y rounded",
	       cast_misses(g.y, g.yb));
	/* the kernels' D: rowsum(dy * y) of their own forward */
	cpu->attn_bwd(&tdq, &tdk, &tdv, &tdy, &tq, &tk, &tv, &ty, &tl, window, sc);
	double e[3] = { rel_fro(g.dq, hdq), rel_fro(g.dk, hdk), rel_fro(g.dv, hdv) };
	printf(", dq %.2e, dk %.2e, dv %.2e", e[0], e[1], e[2]);
	const char *nm[] = { "dq", "dk", "dv" };
	for (int i = 0; i < 3; i++) {
		/* window 0: dq = dk = 0 in the reference (P = 1 on the
		 * diagonal, dS = 0); the kernels' dP = bf16(dy) . bf16(v) is
		 * not D = dy . y (fp32 dy, as attn_bwd_launch forms it), so an
		 * absolute bound on the RMS, as tests/gpu's */
		if (window == 0 && i < 2) {
			double ss = 0;
			const std::vector<float> &x = i ? g.dk : g.dq;
			for (float f : x)
				ss += (double)f * f;
			CHECKF(sqrt(ss / (double)n) <= 2e-2, "window 0: %s rms %.3g", nm[i],
			       sqrt(ss / (double)n));
			continue;
		}
		CHECKF(e[i] <= 1e-2, "T %d window %lld: %s error %.3g", T, (long long)window, nm[i],
		       e[i]);
	}
	/* the bf16 copies (backend.h attn_bf16 stores the gradients so) */
	size_t cm[4] = { cast_misses(g.dq, g.dqb), cast_misses(g.dk, g.dkb),
			 cast_misses(g.dv, g.dvb), cast_misses(g.dqs, g.dqsb) };
	CHECKF(cm[0] + cm[1] + cm[2] + cm[3] == 0,
	       "bf16 copies: %zu of dq's, %zu of dk's, %zu of dv's, %zu of the kept-dS dq's "
	       "entries are not the fp32 value rounded", cm[0], cm[1], cm[2], cm[3]);
	/* dQ from the kept dS: against the CPU as dq; where every query
	 * tile's first key tile is 64-aligned (the window a multiple of
	 * 64, or reaching row 0 from every tile) the same tiles in the
	 * same order as k_attn_dq_mma with the same dS bits, so equal to
	 * its dq element by element; keeping dS leaves dk, dv alone; every
	 * slot written, nothing past the buffer */
	int64_t wc = window > T ? T : window;
	bool aligned = wc % MM_R == 0 || (int64_t)((T - 1) / MM_R) * MM_R <= wc;
	double eds = rel_fro(g.dqs, hdq);
	size_t dsd = 0;
	for (size_t i = 0; i < n; i++)
		dsd += !(g.dqs[i] == g.dq[i]);
	printf(", dq from kept dS %.2e (%zu differ from dq%s)", eds, dsd,
	       aligned ? ", aligned: must be 0" : "");
	if (window == 0) {
		double ss = 0;
		for (float f : g.dqs)
			ss += (double)f * f;
		CHECKF(sqrt(ss / (double)n) <= 2e-2, "window 0: dq from kept dS rms %.3g",
		       sqrt(ss / (double)n));
	} else {
		CHECKF(eds <= 1e-2, "T %d window %lld: dq from kept dS error %.3g", T,
		       (long long)window, eds);
	}
	if (aligned)
		CHECKF(dsd == 0, "T %d window %lld: dq from kept dS differs from dq in %zu", T,
		       (long long)window, dsd);
	CHECKF(g.ds_kdiff == 0 && g.ds_unwritten == 0 && g.ds_guard == 0,
	       "keeping dS: %zu of dk/dv/dv's copy changed, %zu slot entries unwritten, %zu "
	       "written past the buffer", g.ds_kdiff, g.ds_unwritten, g.ds_guard);
	/* bitwise reproducible */
	run g2 = emulate(fwd, q, k, v, dy, B, T, H, window, (float)sc);
	CHECK(memcmp(g.dk.data(), g2.dk.data(), n * 4) == 0 &&
	      memcmp(g.dq.data(), g2.dq.data(), n * 4) == 0 &&
	      memcmp(g.dqs.data(), g2.dqs.data(), n * 4) == 0 &&
	      memcmp(g.y.data(), g2.y.data(), n * 4) == 0);
	printf("\n");
}

void cases(int fwd)
{
	against_cpu(fwd, 1, 150, 1, 64);
	against_cpu(fwd, 1, 200, 2, 17);       /* window not tile-aligned, two heads */
	against_cpu(fwd, 2, 130, 1, INT64_MAX); /* no window: clamped to T */
	against_cpu(fwd, 1, 70, 1, 0);
	against_cpu(fwd, 1, 300, 1, 150);      /* several tiles each way, rows past T */
	against_cpu(fwd, 1, 260, 1, 100);      /* key tiles starting 28 past a 64-row tile's first */
}

} // namespace

#endif

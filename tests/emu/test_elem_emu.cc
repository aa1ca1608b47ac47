/* test_elem_emu.cc: the CUDA backend's own row and element kernels
 * (kernels/backend_kernels.cuh) run on the CPU through the SIMT emulator of
 * tests/emu, against the CPU backend, with the launch shapes of
 * kernels/backend_cuda.cu: first the kernels changed since the code that
 * ran on a GPU. For each: the cross-entropy's fp32 arithmetic and
 * its bf16 gradient copy (and its bf16-logits form, whose bf16 gradient may
 * differ from the CPU's by one bf16 ulp where the row sums' order moves an
 * fp32 value across a tie); RMSNorm forward and backward and the fused
 * RoPE/QK-norm backward with their bf16 output copies; the embedding gather
 * (one warp a row, bf16 and fp32 tables, accumulate, rounding) and its bad
 * index flag; the value-embedding gate; relu^2 writing its cast alone; the
 * embedding scatter on a plan made as the device's CUB sort makes it.
 * Tolerances as tests/gpu/test_cuda_ops.c's for the same ops (relative to
 * the largest reference value): 2e-6 for the cross-entropy (the CPU's fp32
 * tanh/exp: here the same libm, so the rest is summation order), 1e-6 for
 * the fp64-accumulated rows, exact for gathers, scatters and bf16 copies
 * (each copy equals its fp32 value rounded to nearest even). Not shown
 * here: CUDA's own tanhf/expf (the host's libm runs instead), speed.
 * Reference: kernels/backend_kernels.cuh, trainer/backend_cpu_ops.h.
 */
extern "C" {
#include "lib/rng.h"
#include "trainer/backend.h"
}
#include "kernels/backend_kernels.cuh"
#include "t.h"
#include "tests/emu/emu_test.h"

#include <vector>

namespace {

struct rng RG;
const struct backend_ops *CPU;
int bad[3];   /* the kernels' error flags (pinned host memory on a GPU) */

typedef std::vector<float> fv;
typedef std::vector<__nv_bfloat16> bv;

struct tensor T2(fv &x, int64_t r, int64_t c)
{
	return tensor_2d(x.data(), TD_F32, r, c);
}

/* max |a - b| / max |b| */
double rel(const fv &a, const fv &b)
{
	double mx = 0, d = 0;
	for (size_t i = 0; i < a.size(); i++) {
		mx = std::max(mx, (double)fabsf(b[i]));
		double e = fabs((double)a[i] - b[i]);
		d = e == e ? std::max(d, e) : INFINITY;
	}
	return mx > 0 ? d / mx : d;
}

/* the launch shapes of backend_cuda.cu */
dim3 rows_grid(int64_t rows)
{
	return dim3((unsigned)std::max<int64_t>(1, (rows + NT / 32 - 1) / (NT / 32)));
}

dim3 stride_grid(int64_t n)
{
	return dim3((unsigned)std::min<int64_t>(std::max<int64_t>(1, (n + NT - 1) / NT), 1 << 20));
}

} // namespace

/* Entries of a (bf16 values) that differ from b's: each at most one bf16
 * ulp away (else counted in *far). */
size_t bf16_flips(const fv &a, const fv &b, size_t *far)
{
	size_t n = 0;
	*far = 0;
	for (size_t i = 0; i < a.size(); i++)
		if (a[i] != b[i]) {
			n++;
			*far += !(fabsf(a[i] - b[i]) <= 0x1p-8f * fabsf(b[i]));
		}
	return n;
}

TEST(softcap_ce_fp32)
{
	const int64_t R = 13, V = 1000;
	std::vector<int32_t> tg(R);
	for (int64_t r = 0; r < R; r++)
		tg[r] = r % 5 == 2 ? -1 : (int32_t)rng_below(&RG, V);
	fv lg = normals(&RG, R * V, 10);
	/* bf: softcap_ce_bf16 (bf16 logits, a bf16 gradient) */
	for (int bf = 0; bf < 2; bf++)
		for (int pass = 0; pass < 2; pass++) {
			double dscale = pass ? 0.37 : 0;
			fv h = lg, hl(R), d = lg, dl(R, NAN);
			bv db(R * V);
			struct tensor th = T2(h, R, V), tl = T2(hl, 1, R);
			(bf ? CPU->softcap_ce_bf16 : CPU->softcap_ce)(&th, &tl, tg.data(), 15, dscale, NULL);
			float *pd = d.data(), *pl = dl.data();
			__nv_bfloat16 *pb = pass ? db.data() : NULL;
			const int32_t *pt = tg.data();
			emu_launch(dim3((unsigned)R), NT, 0, [&] {
				k_softcap_ce(pd, pb, pl, pt, V, 15, dscale, &bad[2], bf);
			});
			CHECKF(rel(dl, hl) <= 2e-6, "bf %d loss: %.3g", bf, rel(dl, hl));
			if (bf && pass) {
				/* both gradients are bf16 values: an fp32 difference in
				 * the sum's order may move one across a bf16 tie */
				size_t far, n = bf16_flips(d, h, &far);
				CHECKF(far == 0 && n * 1000 <= d.size(), "bf16 gradient: %zu differ, %zu by "
				       "more than one bf16 ulp", n, far);
				size_t nb = 0;
				for (float v : d)
					nb += v != __bfloat162float(__float2bfloat16_rn(v));
				CHECKF(nb == 0, "%zu gradient entries are not bf16 values", nb);
			} else {
				CHECKF(rel(d, h) <= 2e-6, "bf %d logits / gradient: %.3g", bf, rel(d, h));
			}
			if (pass)
				CHECKF(cast_misses(d, db) == 0, "gradient's bf16 copy: %zu", cast_misses(d, db));
		}
	CHECK(bad[2] == 0);
	/* a target not below V: flagged, the row ignored, nothing read past it */
	std::vector<int32_t> t2 = tg;
	t2[3] = (int32_t)V;
	fv d = lg, dl(R);
	float *pd = d.data(), *pl = dl.data();
	const int32_t *pt = t2.data();
	emu_launch(dim3((unsigned)R), NT, 0, [&] { k_softcap_ce(pd, NULL, pl, pt, V, 15, 0.5, &bad[2], 0); });
	CHECK(bad[2] == 1 && dl[3] == 0);
	bad[2] = 0;
}

TEST(rmsnorm_with_casts)
{
	const int64_t N = 37, C = 96;
	fv x = normals(&RG, N * C, 1), dout = normals(&RG, N * C, 1);
	fv ho(N * C), hr(N), go(N * C), gr(N);
	bv ob(N * C);
	struct tensor tx = T2(x, N, C), to = T2(ho, N, C), tr = T2(hr, 1, N);
	CPU->rmsnorm_fwd(&to, &tr, &tx, 1e-6);
	float *po = go.data(), *pr = gr.data();
	const float *px = x.data();
	__nv_bfloat16 *pb = ob.data();
	emu_launch(rows_grid(N), NT, 0, [&] { k_rms_fwd(po, pb, pr, px, N, C, 1e-6); });
	CHECKF(rel(go, ho) <= 1e-6 && rel(gr, hr) <= 1e-6, "forward: %.3g, rstd %.3g", rel(go, ho),
	       rel(gr, hr));
	CHECKF(cast_misses(go, ob) == 0, "forward's bf16 copy: %zu", cast_misses(go, ob));
	for (int accum = 0; accum < 2; accum++) {
		fv hdx = normals(&RG, N * C, 1), gdx = hdx;
		struct tensor tdx = T2(hdx, N, C), tdo = T2(dout, N, C);
		CPU->rmsnorm_bwd(&tdx, &tdo, &to, &tr, accum);
		float *pdx = gdx.data();
		const float *pdo = dout.data(), *pout = ho.data(), *prs = hr.data();
		emu_launch(rows_grid(N), NT, 0,
			   [&] { k_rms_bwd(pdx, pb, pdo, pout, prs, N, C, accum); });
		CHECKF(rel(gdx, hdx) <= 1e-6, "backward (accum %d): %.3g", accum, rel(gdx, hdx));
		CHECKF(cast_misses(gdx, ob) == 0, "backward's bf16 copy: %zu", cast_misses(gdx, ob));
	}
}

TEST(rope_rmsnorm_bwd_with_cast)
{
	const int64_t B = 2, T = 9, H = 3, D = 128, N = B * T, h2 = D / 2;
	fv x = normals(&RG, N * H * D, 1), cs(T * h2), sn(T * h2);
	for (int64_t t = 0; t < T; t++)
		for (int64_t c = 0; c < h2; c++) {
			double a = t / pow(10000.0, (double)c / h2);
			cs[t * h2 + c] = (float)cos(a), sn[t * h2 + c] = (float)sin(a);
		}
	fv xn(N * H * D), rs(N * H), dout = normals(&RG, N * H * D, 1);
	struct tensor tx = { x.data(), TD_F32, 3, { N, H, D, 1 } };
	struct tensor txn = { xn.data(), TD_F32, 3, { N, H, D, 1 } }, trs = T2(rs, 1, N * H);
	struct tensor tcs = T2(cs, T, h2), tsn = T2(sn, T, h2);
	CPU->rope_rmsnorm_fwd(&txn, &trs, NULL, &tx, NULL, &tcs, &tsn, T, 1e-6);
	fv hdx(N * H * D), gdx(N * H * D);
	bv ob(N * H * D);
	struct tensor tdx = { hdx.data(), TD_F32, 3, { N, H, D, 1 } };
	struct tensor tdo = { dout.data(), TD_F32, 3, { N, H, D, 1 } };
	CPU->rope_rmsnorm_bwd(&tdx, NULL, &tdo, &txn, &trs, NULL, &tcs, &tsn, T);
	float *pdx = gdx.data();
	__nv_bfloat16 *pb = ob.data();
	const float *pdo = dout.data(), *pxn = xn.data(), *prs = rs.data(), *pc = cs.data(),
		    *ps = sn.data();
	emu_launch(rows_grid(N * H), NT, 0, [&] {
		k_rope_rms_bwd(pdx, pb, pdo, pxn, prs, NULL, pc, ps, N * H, H, D, T);
	});
	CHECKF(rel(gdx, hdx) <= 1e-6, "dx: %.3g", rel(gdx, hdx));
	CHECKF(cast_misses(gdx, ob) == 0, "dx's bf16 copy: %zu", cast_misses(gdx, ob));
}

/* the fused RoPE + QK-norm (+ q_tau) forward with its output's bf16 copy
 * (read by the mma attention) */
TEST(rope_rmsnorm_fwd_with_cast)
{
	const int64_t B = 2, T = 9, H = 3, D = 128, N = B * T, h2 = D / 2;
	fv x = normals(&RG, N * H * D, 1), cs(T * h2), sn(T * h2), k = normals(&RG, H * D, 0.3);
	for (int64_t t = 0; t < T; t++)
		for (int64_t c = 0; c < h2; c++) {
			double a = t / pow(10000.0, (double)c / h2);
			cs[t * h2 + c] = (float)cos(a), sn[t * h2 + c] = (float)sin(a);
		}
	for (float &v : k)
		v = expf(v);
	for (int tau = 0; tau < 2; tau++) {
		fv ho(N * H * D), hn(N * H * D), hr(N * H), go(N * H * D), gn(N * H * D), gr(N * H);
		bv ob(N * H * D);
		struct tensor tx = { x.data(), TD_F32, 3, { N, H, D, 1 } };
		struct tensor to = { ho.data(), TD_F32, 3, { N, H, D, 1 } };
		struct tensor tn = { hn.data(), TD_F32, 3, { N, H, D, 1 } }, tr = T2(hr, 1, N * H);
		struct tensor tk = T2(k, 1, H * D), tcs = T2(cs, T, h2), tsn = T2(sn, T, h2);
		CPU->rope_rmsnorm_fwd(&to, &tr, tau ? &tn : NULL, &tx, tau ? &tk : NULL, &tcs, &tsn, T,
				      1e-6);
		float *po = go.data(), *pn = tau ? gn.data() : NULL, *pr = gr.data();
		__nv_bfloat16 *pb = ob.data();
		const float *px = x.data(), *pk = tau ? k.data() : NULL, *pc = cs.data(),
			    *ps = sn.data();
		emu_launch(rows_grid(N * H), NT, 0, [&] {
			k_rope_rms_fwd(po, pb, pr, pn, px, pk, pc, ps, N * H, H, D, T, 1e-6);
		});
		CHECKF(rel(go, ho) <= 1e-6, "q_tau %d: out %.3g", tau, rel(go, ho));
		CHECKF(rel(gr, hr) <= 1e-6, "q_tau %d: rstd %.3g", tau, rel(gr, hr));
		CHECKF(!tau || rel(gn, hn) <= 1e-6, "xn %.3g", rel(gn, hn));
		CHECKF(cast_misses(go, ob) == 0, "q_tau %d: out's bf16 copy: %zu", tau,
		       cast_misses(go, ob));
	}
}

/* one warp a row: k below and above 32 lanes; bf16 and fp32 tables */
TEST(embed_gather_warp_rows)
{
	static const int64_t cs[][4] = { { 300, 40, 24, 8 }, { 257, 160, 100, 28 } };   /* N C k c0 */
	for (const auto &s : cs) {
		int64_t N = s[0], C = s[1], k = s[2], c0 = s[3], Vt = 70;
		fv tab = normals(&RG, Vt * k, 1), o = normals(&RG, N * C, 1);
		bv tb(Vt * k);
		for (int64_t i = 0; i < Vt * k; i++)
			tb[i] = __float2bfloat16_rn(tab[i]);
		std::vector<int32_t> idx(N);
		for (int64_t n = 0; n < N; n++)
			idx[n] = (int32_t)rng_below(&RG, Vt);
		for (int bf = 0; bf < 2; bf++)
			for (int acc = 0; acc < 2; acc++)
				for (int rb = 0; rb < 2; rb++) {
					fv h = o, g = o;
					struct tensor th = T2(h, N, C), tt = T2(tab, Vt, k);
					struct tensor tbt = { tb.data(), TD_BF16, 2, { Vt, k, 1, 1 } };
					CPU->embed_gather(&th, bf ? &tbt : &tt, idx.data(), c0, rb, acc);
					float *pg = g.data();
					const void *pt = bf ? (const void *)tb.data() : (const void *)tab.data();
					const int32_t *pi = idx.data();
					emu_launch(rows_grid(N), NT, 0, [&] {
						k_gather(pg, pt, bf, pi, N, C, k, c0, rb, acc, Vt, &bad[0]);
					});
					CHECKF(rel(g, h) == 0, "N %lld k %lld bf16 %d accum %d round %d: %.3g",
					       (long long)N, (long long)k, bf, acc, rb, rel(g, h));
				}
		CHECK(bad[0] == 0);
		idx[N / 2] = (int32_t)Vt;   /* one past the table: flagged, the row left alone */
		fv g = o;
		float *pg = g.data();
		const int32_t *pi = idx.data();
		const float *pt = tab.data();
		emu_launch(rows_grid(N), NT, 0,
			   [&] { k_gather(pg, pt, 0, pi, N, C, k, c0, 0, 0, Vt, &bad[0]); });
		CHECK(bad[0] == 1 && g[(N / 2) * C + c0] == o[(N / 2) * C + c0]);
		bad[0] = 0;
	}
}

TEST(ve_gate_rows)
{
	static const int64_t cs[][3] = { { 30, 3, 16 }, { 37, 4, 128 } };   /* N H D */
	for (const auto &s : cs) {
		int64_t N = s[0], H = s[1], D = s[2], C = H * D;
		fv v = normals(&RG, N * C, 1), gl = normals(&RG, N * H, 2), ve = normals(&RG, N * C, 1);
		fv h = v, g = v;
		struct tensor th = T2(h, N, C), tgl = T2(gl, N, H), tve = T2(ve, N, C);
		CPU->ve_gate_fwd(&th, &tgl, &tve);
		float *pg = g.data();
		const float *pgl = gl.data(), *pve = ve.data();
		ve_src src = { pve, NULL, NULL, 0, 0, 0, NULL };
		emu_launch(rows_grid(N * H), NT, 0,
			   [&] { k_ve_gate_fwd(pg, pgl, src, N * H, H, D); });
		CHECKF(rel(g, h) <= 1e-6, "N %lld H %lld D %lld: %.3g", (long long)N, (long long)H,
		       (long long)D, rel(g, h));
	}
}

/* relu^2 with and without its fp32 output (relu2_fwd_gemm: the cast alone) */
TEST(relu2_cast_only)
{
	const int64_t n = 1037;
	fv hv = normals(&RG, n, 1), ref(n), out(n, 7.f);
	bv ob(n);
	struct tensor th = T2(hv, 1, n), tr = T2(ref, 1, n);
	CPU->relu2_fwd(&tr, &th);
	for (int v4 = 0; v4 < 2; v4++) {
		const float *ph = hv.data();
		__nv_bfloat16 *pb = ob.data();
		int64_t m = v4 ? n / 4 : n;
		emu_launch(stride_grid(m), NT, 0, [&] { k_relu2_fwd(NULL, pb, ph, n, v4); });
		CHECKF(cast_misses(ref, ob) == 0, "v4 %d: %zu entries of the cast", v4, cast_misses(ref, ob));
		float *po = out.data();
		emu_launch(stride_grid(m), NT, 0, [&] { k_relu2_fwd(po, pb, ph, n, v4); });
		CHECKF(rel(out, ref) == 0 && cast_misses(ref, ob) == 0, "v4 %d with the fp32 output", v4);
	}
}

/* The scatter on the plan the device's CUB sort makes (positions stably
 * sorted by index, run starts, run keys, the run count in device memory),
 * with backend_cuda.cu's launch (sc_launch), against the CPU's loop: the
 * same additions in the same order, so the same bits. */
static void scatter_case(const std::vector<int32_t> &idx, int64_t C, int64_t Vt, int64_t k,
			 int64_t c0)
{
	const int64_t N = (int64_t)idx.size();
	std::vector<int32_t> order(N);
	for (int64_t n = 0; n < N; n++)
		order[n] = (int32_t)n;
	std::stable_sort(order.begin(), order.end(),
			 [&](int32_t a, int32_t b) { return idx[(size_t)a] < idx[(size_t)b]; });
	std::vector<int32_t> start, keys;
	for (int64_t j = 0; j < N; j++)
		if (j == 0 || idx[(size_t)order[j]] != idx[(size_t)order[j - 1]]) {
			start.push_back((int32_t)j);
			keys.push_back(idx[(size_t)order[j]]);
		}
	int U = (int)keys.size();
	start.push_back((int32_t)N);
	fv g = normals(&RG, Vt * k, 1), d = normals(&RG, N * C, 1), h = g;
	struct tensor th = T2(h, Vt, k), td = T2(d, N, C);
	CPU->embed_scatter_add(&th, &td, idx.data(), c0);
	float *pg = g.data();
	const float *pd = d.data();
	const int32_t *po = order.data(), *ps = start.data(), *pk = keys.data();
	const int *pu = &U;
	const sc_shape sh = sc_launch(k);
	const dim3 gr((unsigned)(std::min(N, Vt) * sh.S));
	emu_launch(gr, sh.nt, 0,
		   [&] { k_scatter<float>(pg, pd, po, ps, pk, pu, k, C, c0, Vt, sh.S); });
	CHECKF(rel(g, h) == 0, "k %lld, fp32 table: %.3g", (long long)k, rel(g, h));
	/* a bf16 table, twice */
	bv gb(Vt * k), hb(Vt * k);
	for (int64_t i = 0; i < Vt * k; i++)
		gb[i] = hb[i] = __float2bfloat16_rn(g[i] * 0.01f);
	struct tensor thb = { hb.data(), TD_BF16, 2, { Vt, k, 1, 1 } };
	__nv_bfloat16 *pb = gb.data();
	for (int r = 0; r < 2; r++) {
		CPU->embed_scatter_add(&thb, &td, idx.data(), c0);
		emu_launch(gr, sh.nt, 0, [&] {
			k_scatter<__nv_bfloat16>(pb, pd, po, ps, pk, pu, k, C, c0, Vt, sh.S);
		});
	}
	size_t diff = 0;
	for (int64_t i = 0; i < Vt * k; i++)
		diff += gb[i].x != hb[i].x;
	CHECKF(diff == 0, "k %lld, bf16 table: %zu entries differ", (long long)k, diff);
}

TEST(embed_scatter_plan)
{
	/* many repeats, a slice narrower than a warp */
	std::vector<int32_t> idx(900);
	for (size_t n = 0; n < idx.size(); n++)
		idx[n] = n % 3 ? (int32_t)rng_below(&RG, 20) : (int32_t)(699 - rng_below(&RG, 300));
	scatter_case(idx, 40, 700, 24, 8);
	/* three slices of a row (128, 128, 44 columns); a frequent index's run
	 * of 500 rows, runs of 15, 16 and 17 rows (nvcc unrolls the row loop
	 * by 16) */
	idx.assign(2000, 0);
	for (int n = 0; n < 2000; n++)
		idx[(size_t)n] = n % 4 == 1                    ? 7
				 : n % 4 == 2 && n < 4 * 15        ? 100
				 : n % 4 == 3 && n < 4 * 16        ? 101
				 : n % 4 == 0 && n >= 4 && n < 4 * 18 ? 102
								    : 200 + (int32_t)rng_below(&RG, 300);
	scatter_case(idx, 320, 500, 300, 16);
}

int main(void)
{
	rng_seed(&RG, 2028);
	CPU = backend_cpu();
	RUN(softcap_ce_fp32);
	RUN(rmsnorm_with_casts);
	RUN(rope_rmsnorm_fwd_with_cast);
	RUN(rope_rmsnorm_bwd_with_cast);
	RUN(embed_gather_warp_rows);
	RUN(ve_gate_rows);
	RUN(relu2_cast_only);
	RUN(embed_scatter_plan);
	return t_done();
}

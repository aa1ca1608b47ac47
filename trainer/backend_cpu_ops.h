/* backend_cpu_ops.h: the CPU backend's operations written once over a real
 * type, included twice by trainer/backend_cpu.c (REAL = float, SFX = f32,
 * GEMM = cblas_sgemm; REAL = double, SFX = f64, GEMM = cblas_dgemm). Not a
 * public header: the contract of every op is in trainer/backend.h.
 *
 * Sums over a row (RMS, dot products, softmax denominators) accumulate in
 * double in both instantiations; exp and tanh run in the real type (REXP,
 * RTANH), as PyTorch's fp32 kernels do. Reference: docs/model.md.
 */
#ifndef REAL
#error "include from trainer/backend_cpu.c only"
#endif

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)

static void FN(zero)(struct tensor *x)
{
	memset(x->data, 0, (size_t)tensor_numel(x) * sizeof(REAL));
}

static void FN(axpby)(struct tensor *y, double a, const struct tensor *x, double b)
{
	int64_t n = tensor_numel(y);
	REAL *py = y->data;
	const REAL *px = x->data;
	REAL ra = (REAL)a, rb = (REAL)b;
	if (b == 0)
		for (int64_t i = 0; i < n; i++)
			py[i] = ra * px[i];
	else if (b == 1)
		for (int64_t i = 0; i < n; i++)
			py[i] += ra * px[i];
	else
		for (int64_t i = 0; i < n; i++)
			py[i] = ra * px[i] + rb * py[i];
}

static double FN(dot)(const struct tensor *x, const struct tensor *y)
{
	int64_t n = tensor_numel(x);
	const REAL *a = x->data, *b = y->data;
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += (double)a[i] * (double)b[i];
	return s;
}

static void FN(cols_get)(struct tensor *out, const struct tensor *x, int64_t c0, int accum)
{
	int64_t N = tensor_rows(x), C = tensor_cols(x), k = tensor_cols(out);
	REAL *o = out->data;
	const REAL *px = x->data;
	for (int64_t n = 0; n < N; n++) {
		const REAL *src = px + n * C + c0;
		REAL *dst = o + n * k;
		if (accum)
			for (int64_t c = 0; c < k; c++)
				dst[c] += src[c];
		else
			memcpy(dst, src, (size_t)k * sizeof(REAL));
	}
}

static void FN(cols_add)(struct tensor *out, const struct tensor *x, int64_t c0)
{
	int64_t N = tensor_rows(out), C = tensor_cols(out), k = tensor_cols(x);
	REAL *o = out->data;
	const REAL *px = x->data;
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < k; c++)
			o[n * C + c0 + c] += px[n * k + c];
}

/* out = alpha op(a) op(b) + beta out */
static void FN(matmul)(struct tensor *out, const struct tensor *a, const struct tensor *b,
		       int ta, int tb, double alpha, double beta)
{
	int64_t M = tensor_rows(out), N = tensor_cols(out);
	int64_t ar = tensor_rows(a), ac = tensor_cols(a);
	int64_t br = tensor_rows(b), bc = tensor_cols(b);
	int64_t K = ta ? ar : ac;
	bk_check((ta ? ac : ar) == M && (tb ? br : bc) == N && (tb ? bc : br) == K, "matmul");
	GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
	     (int)M, (int)N, (int)K, (REAL)alpha, a->data, (int)ac, b->data, (int)bc,
	     (REAL)beta, out->data, (int)N);
}

static void FN(rmsnorm_fwd)(struct tensor *out, struct tensor *rstd, const struct tensor *x,
			    double eps)
{
	int64_t N = tensor_rows(x), C = tensor_cols(x);
	const REAL *px = x->data;
	REAL *po = out->data, *pr = rstd->data;
	for (int64_t n = 0; n < N; n++) {
		const REAL *r = px + n * C;
		double ss = 0;
		for (int64_t c = 0; c < C; c++)
			ss += (double)r[c] * r[c];
		REAL s = (REAL)(1.0 / sqrt(ss / (double)C + eps));
		pr[n] = s;
		REAL *o = po + n * C;
		if ((const REAL *)o == r)    /* in place: its own loop, which vectorises */
			for (int64_t c = 0; c < C; c++)
				o[c] *= s;
		else
			for (int64_t c = 0; c < C; c++)
				o[c] = r[c] * s;
	}
}

static void FN(rmsnorm_bwd)(struct tensor *dx, const struct tensor *dout, const struct tensor *out,
			    const struct tensor *rstd, int accum)
{
	int64_t N = tensor_rows(out), C = tensor_cols(out);
	const REAL *dy = dout->data, *y = out->data, *pr = rstd->data;
	REAL *pd = dx->data;
	for (int64_t n = 0; n < N; n++) {
		const REAL *a = dy + n * C, *b = y + n * C;
		double s = 0;
		for (int64_t c = 0; c < C; c++)
			s += (double)a[c] * b[c];
		REAL m = (REAL)(s / (double)C), r = pr[n];
		REAL *d = pd + n * C;
		if (accum)
			for (int64_t c = 0; c < C; c++)
				d[c] += r * (a[c] - b[c] * m);
		else if ((const REAL *)d == a)  /* in place (dx = dout) */
			for (int64_t c = 0; c < C; c++)
				d[c] = r * (d[c] - b[c] * m);
		else
			for (int64_t c = 0; c < C; c++)
				d[c] = r * (a[c] - b[c] * m);
	}
}

static void FN(rmsnorm_ref_fwd)(struct tensor *out, struct tensor *r, const struct tensor *x,
				const struct tensor *s, double eps)
{
	int64_t N = tensor_rows(x), C = tensor_cols(x);
	const REAL *px = x->data, *ps = s->data;
	REAL *po = out->data, *pr = r->data;
	for (int64_t n = 0; n < N; n++) {
		double ss = 0;
		for (int64_t c = 0; c < C; c++)
			ss += (double)ps[n * C + c] * ps[n * C + c];
		REAL q = (REAL)(1.0 / sqrt(ss / (double)C + eps));
		pr[n] = q;
		for (int64_t c = 0; c < C; c++)
			po[n * C + c] = px[n * C + c] * q;
	}
}

static void FN(rmsnorm_ref_bwd)(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
				const struct tensor *x, const struct tensor *s,
				const struct tensor *r, int accum)
{
	int64_t N = tensor_rows(x), C = tensor_cols(x);
	const REAL *dy = dout->data, *px = x->data, *ps = s->data, *pr = r->data;
	REAL *pdx = dx->data, *pds = ds->data;
	for (int64_t n = 0; n < N; n++) {
		double t = 0;
		for (int64_t c = 0; c < C; c++)
			t += (double)dy[n * C + c] * px[n * C + c];
		REAL q = pr[n];
		REAL f = (REAL)(-(double)q * q * q * t / (double)C);
		for (int64_t c = 0; c < C; c++) {
			REAL a = q * dy[n * C + c], b = f * ps[n * C + c];
			if (accum) {
				pdx[n * C + c] += a;
				pds[n * C + c] += b;
			} else {
				pdx[n * C + c] = a;
				pds[n * C + c] = b;
			}
		}
	}
}

static void FN(rope_apply)(struct tensor *x, const struct tensor *cos, const struct tensor *sin,
			   int64_t T, REAL sgn)
{
	int64_t D = x->shape[x->ndim - 1], H = x->shape[x->ndim - 2];
	int64_t N = tensor_numel(x) / (H * D), h2 = D / 2, tw = tensor_cols(cos);
	bk_check((tw == h2 || tw == H * h2) && tensor_rows(cos) >= T, "rope");
	const REAL *pc = cos->data, *ps = sin->data;
	REAL *px = x->data;
	for (int64_t n = 0; n < N; n++) {
		for (int64_t h = 0; h < H; h++) {
			int64_t tr = (n % T) * tw + (tw == h2 ? 0 : h * h2);   /* the head's table */
			const REAL *cr = pc + tr, *sr = ps + tr;
			REAL *r = px + (n * H + h) * D;
			for (int64_t c = 0; c < h2; c++) {
				REAL x1 = r[c], x2 = r[c + h2], co = cr[c], si = sgn * sr[c];
				r[c] = x1 * co + x2 * si;
				r[c + h2] = -x1 * si + x2 * co;
			}
		}
	}
}

static void FN(rope_fwd)(struct tensor *x, const struct tensor *cos, const struct tensor *sin,
			 int64_t T)
{
	FN(rope_apply)(x, cos, sin, T, 1);
}

static void FN(rope_bwd)(struct tensor *dx, const struct tensor *cos, const struct tensor *sin,
			 int64_t T)
{
	FN(rope_apply)(dx, cos, sin, T, -1);
}

/* Column sums ds (K) kept in fp64 from ds's value (mul_cols_bwd's and the
 * fused q_tau backward's): open copies ds out, close rounds it back once. */
static double *FN(ds_open)(const REAL *ds, int64_t K)
{
	double *acc = xmalloc((size_t)(K ? K : 1) * sizeof *acc);
	for (int64_t k = 0; k < K; k++)
		acc[k] = ds[k];
	return acc;
}

static void FN(ds_close)(REAL *ds, double *acc, int64_t K)
{
	for (int64_t k = 0; k < K; k++)
		ds[k] = (REAL)acc[k];
	free(acc);
}

static void FN(rope_rmsnorm_fwd)(struct tensor *out, struct tensor *rstd, struct tensor *xn,
				 const struct tensor *x, const struct tensor *s,
				 const struct tensor *cos, const struct tensor *sin, int64_t T,
				 double eps)
{
	int64_t D = tensor_cols(x), H = x->shape[x->ndim - 2];
	int64_t N = tensor_numel(x) / (H * D), h2 = D / 2, tw = tensor_cols(cos);
	bk_check((tw == h2 || tw == H * h2) && tensor_rows(cos) >= T, "rope_rmsnorm_fwd");
	const REAL *pc = cos->data, *ps = sin->data, *px = x->data, *pk = s ? s->data : NULL;
	REAL *po = out->data, *pr = rstd->data, *pn = s ? xn->data : po;
	for (int64_t n = 0; n < N; n++) {
		for (int64_t h = 0; h < H; h++) {
			int64_t tr = (n % T) * tw + (tw == h2 ? 0 : h * h2);
			const REAL *cr = pc + tr, *sr = ps + tr;
			const REAL *r = px + (n * H + h) * D;
			REAL *o = pn + (n * H + h) * D;
			/* rope_apply's arithmetic (sgn 1), then rmsnorm_fwd's */
			for (int64_t c = 0; c < h2; c++) {
				REAL x1 = r[c], x2 = r[c + h2], co = cr[c], si = sr[c];
				o[c] = x1 * co + x2 * si;
				o[c + h2] = -x1 * si + x2 * co;
			}
			double ss = 0;
			for (int64_t c = 0; c < D; c++)
				ss += (double)o[c] * o[c];
			REAL q = (REAL)(1.0 / sqrt(ss / (double)D + eps));
			pr[n * H + h] = q;
			for (int64_t c = 0; c < D; c++)
				o[c] *= q;
			if (pk) {   /* then mul_cols_fwd's */
				REAL *y = po + (n * H + h) * D;
				const REAL *k = pk + h * D;
				for (int64_t c = 0; c < D; c++)
					y[c] = o[c] * k[c];
			}
		}
	}
}

static void FN(rope_rmsnorm_bwd)(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
				 const struct tensor *xn, const struct tensor *rstd,
				 const struct tensor *s, const struct tensor *cos,
				 const struct tensor *sin, int64_t T)
{
	int64_t D = tensor_cols(xn), H = xn->shape[xn->ndim - 2];
	int64_t N = tensor_numel(xn) / (H * D), h2 = D / 2, tw = tensor_cols(cos);
	bk_check((tw == h2 || tw == H * h2) && tensor_rows(cos) >= T && D <= 128,
		 "rope_rmsnorm_bwd");
	const REAL *pc = cos->data, *ps = sin->data, *dy = dout->data, *y = xn->data;
	const REAL *pr = rstd->data, *pk = s ? s->data : NULL;
	REAL *pd = dx->data, *pds = s && ds ? ds->data : NULL, g[128];
	double *acc = pds ? FN(ds_open)(pds, H * D) : NULL;   /* in row order, as mul_cols_bwd */
	for (int64_t n = 0; n < N; n++) {
		for (int64_t h = 0; h < H; h++) {
			int64_t row = n * H + h, tr = (n % T) * tw + (tw == h2 ? 0 : h * h2);
			const REAL *cr = pc + tr, *sr = ps + tr;
			const REAL *a = dy + row * D, *b = y + row * D;
			REAL *d = pd + row * D;
			if (pk) {   /* mul_cols_bwd's arithmetic */
				const REAL *k = pk + h * D;
				for (int64_t c = 0; c < D; c++) {
					if (acc)
						acc[h * D + c] += (double)a[c] * b[c];
					g[c] = a[c] * k[c];
				}
				a = g;
			}
			/* rmsnorm_bwd's arithmetic, then rope_apply's (sgn -1) */
			double sum = 0;
			for (int64_t c = 0; c < D; c++)
				sum += (double)a[c] * b[c];
			REAL m = (REAL)(sum / (double)D), r = pr[row];
			for (int64_t c = 0; c < h2; c++) {
				REAL g1 = r * (a[c] - b[c] * m), g2 = r * (a[c + h2] - b[c + h2] * m);
				REAL co = cr[c], si = -sr[c];
				d[c] = g1 * co + g2 * si;
				d[c + h2] = -g1 * si + g2 * co;
			}
		}
	}
	if (acc)
		FN(ds_close)(pds, acc, H * D);
}

/* Row block of queries for attention. */
#define ATTN_BR 64

static void FN(attn_fwd)(struct tensor *y, struct tensor *lse, const struct tensor *q,
			 const struct tensor *k, const struct tensor *v, int64_t window, double scale)
{
	int64_t B = q->shape[0], T = q->shape[1], H = q->shape[2], D = q->shape[3];
	int64_t ld = H * D;
	bk_check(q->ndim == 4 && tensor_numel(k) == tensor_numel(q) &&
		 tensor_numel(y) == tensor_numel(q) && tensor_numel(lse) == B * H * T, "attn_fwd");
	int64_t maxk = ATTN_BR + (window < T ? window : T);
	REAL *S = xmalloc((size_t)(ATTN_BR * maxk) * sizeof(REAL));
	REAL *pl = lse->data;
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++) {
			const REAL *Q = (const REAL *)q->data + b * T * ld + h * D;
			const REAL *K = (const REAL *)k->data + b * T * ld + h * D;
			const REAL *Vv = (const REAL *)v->data + b * T * ld + h * D;
			REAL *Y = (REAL *)y->data + b * T * ld + h * D;
			for (int64_t t0 = 0; t0 < T; t0 += ATTN_BR) {
				int64_t t1 = t0 + ATTN_BR < T ? t0 + ATTN_BR : T, nr = t1 - t0;
				int64_t ks = t0 - window > 0 ? t0 - window : 0, nk = t1 - ks;
				GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)nk, (int)D,
				     (REAL)scale, Q + t0 * ld, (int)ld, K + ks * ld, (int)ld, 0, S, (int)nk);
				for (int64_t i = 0; i < nr; i++) {
					int64_t t = t0 + i;
					int64_t lo = (t - window > 0 ? t - window : 0) - ks, hi = t - ks;
					REAL *s = S + i * nk;
					double mx = -INFINITY, sum = 0;
					for (int64_t j = lo; j <= hi; j++)
						if (s[j] > mx)
							mx = s[j];
					for (int64_t j = 0; j < nk; j++) {
						if (j < lo || j > hi) {
							s[j] = 0;
							continue;
						}
						REAL e = REXP(s[j] - (REAL)mx);
						s[j] = e;
						sum += e;
					}
					REAL inv = (REAL)(1.0 / sum);
					for (int64_t j = lo; j <= hi; j++)
						s[j] *= inv;
					pl[(b * H + h) * T + t] = (REAL)(mx + log(sum));
				}
				GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)D, (int)nk, 1,
				     S, (int)nk, Vv + ks * ld, (int)ld, 0, Y + t0 * ld, (int)ld);
			}
		}
	free(S);
}

static void FN(attn_bwd)(struct tensor *dq, struct tensor *dk, struct tensor *dv,
			 const struct tensor *dy, const struct tensor *q, const struct tensor *k,
			 const struct tensor *v, const struct tensor *y, const struct tensor *lse,
			 int64_t window, double scale)
{
	int64_t B = q->shape[0], T = q->shape[1], H = q->shape[2], D = q->shape[3];
	int64_t ld = H * D;
	bk_check(q->ndim == 4 && tensor_numel(dq) == tensor_numel(q), "attn_bwd");
	int64_t maxk = ATTN_BR + (window < T ? window : T);
	REAL *P = xmalloc((size_t)(ATTN_BR * maxk) * sizeof(REAL));
	REAL *dP = xmalloc((size_t)(ATTN_BR * maxk) * sizeof(REAL));
	double *Di = xmalloc(ATTN_BR * sizeof(double));
	const REAL *pl = lse->data;
	FN(zero)(dk);
	FN(zero)(dv);
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++) {
			size_t off = (size_t)(b * T * ld + h * D);
			const REAL *Q = (const REAL *)q->data + off, *K = (const REAL *)k->data + off;
			const REAL *Vv = (const REAL *)v->data + off, *Y = (const REAL *)y->data + off;
			const REAL *dY = (const REAL *)dy->data + off;
			REAL *dQ = (REAL *)dq->data + off, *dK = (REAL *)dk->data + off;
			REAL *dV = (REAL *)dv->data + off;
			for (int64_t t0 = 0; t0 < T; t0 += ATTN_BR) {
				int64_t t1 = t0 + ATTN_BR < T ? t0 + ATTN_BR : T, nr = t1 - t0;
				int64_t ks = t0 - window > 0 ? t0 - window : 0, nk = t1 - ks;
				GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)nk, (int)D,
				     (REAL)scale, Q + t0 * ld, (int)ld, K + ks * ld, (int)ld, 0, P, (int)nk);
				GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)nk, (int)D,
				     1, dY + t0 * ld, (int)ld, Vv + ks * ld, (int)ld, 0, dP, (int)nk);
				for (int64_t i = 0; i < nr; i++) {
					int64_t t = t0 + i;
					int64_t lo = (t - window > 0 ? t - window : 0) - ks, hi = t - ks;
					double l = pl[(b * H + h) * T + t], di = 0;
					for (int64_t c = 0; c < D; c++)
						di += (double)dY[t * ld + c] * Y[t * ld + c];
					Di[i] = di;
					REAL *p = P + i * nk, *dp = dP + i * nk;
					for (int64_t j = 0; j < nk; j++) {
						if (j < lo || j > hi) {
							p[j] = 0;
							dp[j] = 0;
							continue;
						}
						REAL pj = REXP(p[j] - (REAL)l);
						p[j] = pj;
						dp[j] = pj * (REAL)((double)dp[j] - di);
					}
				}
				/* dQ = scale dS K;  dK += scale dS^T Q;  dV += P^T dY */
				GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nr, (int)D, (int)nk,
				     (REAL)scale, dP, (int)nk, K + ks * ld, (int)ld, 0, dQ + t0 * ld, (int)ld);
				GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nk, (int)D, (int)nr,
				     (REAL)scale, dP, (int)nk, Q + t0 * ld, (int)ld, 1, dK + ks * ld, (int)ld);
				GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nk, (int)D, (int)nr,
				     1, P, (int)nk, dY + t0 * ld, (int)ld, 1, dV + ks * ld, (int)ld);
			}
		}
	free(P);
	free(dP);
	free(Di);
}

/* Rows r0..r1-1 of softcap_ce (one thread's share; every row is computed
 * whole by one thread, so results do not depend on the thread count). */
static void FN(softcap_rows)(void *arg, int64_t r0, int64_t r1, int64_t *valid_out)
{
	struct softcap_job *j = arg;
	int64_t V = j->V, valid = 0;
	REAL *pl = j->logits, *po = j->loss;
	const int32_t *targets = j->targets;
	double cap = j->cap, dscale = j->dscale;
	int bf = j->bf16;
	REAL *ex = xmalloc((size_t)V * sizeof(REAL));     /* exp(z - max) of a row */
	REAL rcap = (REAL)cap, icap = (REAL)(1.0 / cap);
	for (int64_t r = r0; r < r1; r++) {
		REAL *l = pl + r * V, mx = -INFINITY;
		double sum = 0;
		for (int64_t j = 0; j < V; j++) {
			REAL lj = bf ? (REAL)bf16_round((float)l[j]) : l[j];
			REAL z = rcap * RTANH(lj * icap);
			l[j] = z;
			if (z > mx)
				mx = z;
		}
		for (int64_t j = 0; j < V; j++) {
			ex[j] = REXP(l[j] - mx);
			sum += ex[j];
		}
		double lse = mx + log(sum);
		int32_t tg = targets[r];
		if (tg < 0) {
			po[r] = 0;
			if (dscale != 0)
				memset(l, 0, (size_t)V * sizeof(REAL));
			continue;
		}
		valid++;
		po[r] = (REAL)(lse - (double)l[tg]);
		if (dscale == 0)
			continue;
		/* d/dl of dscale * loss: dscale (softmax - onehot) (1 - tanh^2) */
		REAL f = (REAL)(dscale / sum), ht = l[tg] * icap;
		for (int64_t j = 0; j < V; j++) {
			REAL th = l[j] * icap;
			l[j] = (ex[j] * f) * (1 - th * th);
		}
		l[tg] -= (REAL)dscale * (1 - ht * ht);
		if (bf)   /* the gradient through the cast to bf16 is bf16 */
			for (int64_t j = 0; j < V; j++)
				l[j] = (REAL)bf16_round((float)l[j]);
	}
	free(ex);
	*valid_out = valid;
}

static void FN(softcap_ce)(struct tensor *logits, struct tensor *loss, const int32_t *targets,
			   double cap, double dscale, int64_t *valid)
{
	struct softcap_job j = { logits->data, loss->data, targets, tensor_cols(logits), cap, dscale, 0 };
	int64_t n = rows_parallel(FN(softcap_rows), &j, tensor_rows(logits), 16);
	if (valid)
		*valid = n;
}

static void FN(softcap_ce_bf16)(struct tensor *logits, struct tensor *loss, const int32_t *targets,
				double cap, double dscale, int64_t *valid)
{
	struct softcap_job j = { logits->data, loss->data, targets, tensor_cols(logits), cap, dscale, 1 };
	int64_t n = rows_parallel(FN(softcap_rows), &j, tensor_rows(logits), 16);
	if (valid)
		*valid = n;
}

static void FN(embed_gather)(struct tensor *out, const struct tensor *table, const int32_t *idx,
			     int64_t c0, int round_bf16, int accum)
{
	int64_t N = tensor_rows(out), C = tensor_cols(out), k = tensor_cols(table);
	int64_t Vt = tensor_rows(table);
	REAL *po = out->data;
	for (int64_t n = 0; n < N; n++) {
		int64_t i = idx[n];
		bk_check(i >= 0 && i < Vt, "embed_gather index");
		REAL *o = po + n * C + c0;
		for (int64_t c = 0; c < k; c++) {
			REAL val;
			if (table->dtype == TD_BF16)
				val = (REAL)bf16_to_f32(((const bf16 *)table->data)[i * k + c]);
			else if (table->dtype == TD_F32)
				val = (REAL)((const float *)table->data)[i * k + c];
			else
				val = (REAL)((const double *)table->data)[i * k + c];
			if (round_bf16)
				val = (REAL)bf16_round((float)val);
			if (accum)
				o[c] += val;
			else
				o[c] = val;
		}
	}
}

static void FN(embed_scatter_add)(struct tensor *gtable, const struct tensor *dout,
				  const int32_t *idx, int64_t c0)
{
	int64_t N = tensor_rows(dout), C = tensor_cols(dout), k = tensor_cols(gtable);
	int64_t Vt = tensor_rows(gtable);
	REAL *pg = gtable->data;
	const REAL *pd = dout->data;
	for (int64_t n = 0; n < N; n++) {
		int64_t i = idx[n];
		bk_check(i >= 0 && i < Vt, "embed_scatter_add index");
		REAL *g = pg + i * k;
		const REAL *d = pd + n * C + c0;
		for (int64_t c = 0; c < k; c++)
			g[c] += d[c];
	}
}

static void FN(relu2_fwd)(struct tensor *out, const struct tensor *h)
{
	int64_t n = tensor_numel(h);
	const REAL *ph = h->data;
	REAL *po = out->data;
	for (int64_t i = 0; i < n; i++) {
		REAL r = ph[i] > 0 ? ph[i] : 0;
		po[i] = r * r;
	}
}

static void FN(relu2_bwd)(struct tensor *dh, const struct tensor *dout, const struct tensor *h)
{
	int64_t n = tensor_numel(h);
	const REAL *ph = h->data, *pd = dout->data;
	REAL *po = dh->data;
	/* in place (dh = dout) as its own loop: the vectoriser's overlap check
	 * would send the aliased call to the scalar, branching loop */
	if ((const REAL *)po == pd)
		for (int64_t i = 0; i < n; i++)
			po[i] = ph[i] > 0 ? 2 * ph[i] * po[i] : 0;
	else
		for (int64_t i = 0; i < n; i++)
			po[i] = ph[i] > 0 ? 2 * ph[i] * pd[i] : 0;
}

static void FN(ve_gate_fwd)(struct tensor *v, const struct tensor *glog, const struct tensor *ve)
{
	int64_t N = tensor_rows(glog), H = tensor_cols(glog), D = tensor_cols(v) / H;
	REAL *pv = v->data;
	const REAL *pg = glog->data, *pe = ve->data;
	for (int64_t n = 0; n < N; n++)
		for (int64_t h = 0; h < H; h++) {
			REAL g = (REAL)(2.0 / (1.0 + exp(-(double)pg[n * H + h])));
			REAL *o = pv + (n * H + h) * D;
			const REAL *e = pe + (n * H + h) * D;
			for (int64_t c = 0; c < D; c++)
				o[c] += g * e[c];
		}
}

static void FN(ve_gate_bwd)(struct tensor *dglog, struct tensor *dve, const struct tensor *dv,
			    const struct tensor *glog, const struct tensor *ve)
{
	int64_t N = tensor_rows(glog), H = tensor_cols(glog), D = tensor_cols(dv) / H;
	const REAL *pd = dv->data, *pg = glog->data, *pe = ve->data;
	REAL *pdg = dglog->data, *pde = dve->data;
	for (int64_t n = 0; n < N; n++)
		for (int64_t h = 0; h < H; h++) {
			double s = 1.0 / (1.0 + exp(-(double)pg[n * H + h]));
			const REAL *d = pd + (n * H + h) * D, *e = pe + (n * H + h) * D;
			REAL *o = pde + (n * H + h) * D;
			double acc = 0;
			REAL g = (REAL)(2 * s);
			for (int64_t c = 0; c < D; c++) {
				acc += (double)d[c] * e[c];
				o[c] = g * d[c];
			}
			pdg[n * H + h] = (REAL)(acc * 2 * s * (1 - s));
		}
}

static void FN(mul_cols_fwd)(struct tensor *out, const struct tensor *x, const struct tensor *s)
{
	int64_t N = tensor_rows(x), K = tensor_cols(x);
	bk_check(tensor_numel(s) == K, "mul_cols_fwd");
	const REAL *px = x->data, *ps = s->data;
	REAL *po = out->data;
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++)
			po[n * K + k] = px[n * K + k] * ps[k];
}

static void FN(mul_cols_bwd)(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
			     const struct tensor *x, const struct tensor *s)
{
	int64_t N = tensor_rows(dout), K = tensor_cols(dout);
	bk_check(tensor_numel(s) == K, "mul_cols_bwd");
	const REAL *pd = dout->data, *px = x->data, *ps = s->data;
	REAL *pdx = dx->data;
	if (ds) {
		/* fp64 sums of exact products, from ds's value, in row order */
		double *acc = FN(ds_open)(ds->data, K);
		for (int64_t n = 0; n < N; n++)
			for (int64_t k = 0; k < K; k++)
				acc[k] += (double)pd[n * K + k] * px[n * K + k];
		FN(ds_close)(ds->data, acc, K);
	}
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++)
			pdx[n * K + k] = pd[n * K + k] * ps[k];
}

static const struct backend_ops FN(ops) = {
	.name = "cpu",
	.zero = FN(zero),
	.axpby = FN(axpby),
	.dot = FN(dot),
	.cols_get = FN(cols_get),
	.cols_add = FN(cols_add),
	.matmul = FN(matmul),
	.rmsnorm_fwd = FN(rmsnorm_fwd),
	.rmsnorm_bwd = FN(rmsnorm_bwd),
	.rmsnorm_ref_fwd = FN(rmsnorm_ref_fwd),
	.rmsnorm_ref_bwd = FN(rmsnorm_ref_bwd),
	.rope_fwd = FN(rope_fwd),
	.rope_bwd = FN(rope_bwd),
	.rope_rmsnorm_fwd = FN(rope_rmsnorm_fwd),
	.rope_rmsnorm_bwd = FN(rope_rmsnorm_bwd),
	.attn_fwd = FN(attn_fwd),
	.attn_bwd = FN(attn_bwd),
	.softcap_ce = FN(softcap_ce),
	.softcap_ce_bf16 = FN(softcap_ce_bf16),
	.embed_gather = FN(embed_gather),
	.embed_scatter_add = FN(embed_scatter_add),
	.relu2_fwd = FN(relu2_fwd),
	.relu2_bwd = FN(relu2_bwd),
	.ve_gate_fwd = FN(ve_gate_fwd),
	.ve_gate_bwd = FN(ve_gate_bwd),
	.mul_cols_fwd = FN(mul_cols_fwd),
	.mul_cols_bwd = FN(mul_cols_bwd),
};

#undef FN
#undef CAT
#undef CAT_

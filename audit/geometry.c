/* geometry.c: stable rank, mean-row energy, the q_tau profile and the
 * residual scalars of checkpoints (contract in geometry.h; supkit-audit(1);
 * papers 000/001 Table 4, Table 5a, Table 8b).
 *
 * ||W||_2^2 = lambda_max(G) with G the Gram matrix of the short side: for
 * M >= N, G = W^T W (N x N) accumulated by dsyrk over row blocks converted
 * to float64 (so a bf16 table of 150k rows never sits whole in float64);
 * for M < N, G = W W^T (M x M). Its largest eigenvalue comes from Lanczos
 * on G certified by one Cholesky factorisation (top_eig), or from LAPACKE
 * dsyevr (GEOM_GRAM_EVR, and the fallback). Cost M N^2 (dsyrk) + O(k N^2)
 * + N^3/3 (Cholesky), against ~4 M N^2 + 8 N^3 for an SVD; the top
 * eigenvalue of a Gram matrix is perturbed by at most ~eps ||W||_2^2, so
 * the stable rank keeps ~1e-15 relative accuracy in practice, 1e-12 by
 * certificate (tests/unit/audit/test_geometry.c checks 1e-10 against
 * numpy's SVD for every method; bench/bench_geometry.sh times them).
 *
 * Every tensor the audit reads is scanned before any is analysed: a NaN or
 * an infinity is bad input (refused, the tensor, count and first position
 * named). Each matrix is divided by the power of two just above its largest
 * magnitude before anything is squared (exact), so entries near 1e-170 or
 * 1e200 give numpy's figures; the absolute energies are scaled back. A
 * group of Table 4 averages the members whose figures exist (not all zero)
 * and counts the others.
 *
 * The spectrum (geom_opts.spectrum) is dgesdd's on the whole matrix, scaled
 * as above: the Gram matrix squares the condition number, which would lose
 * the small singular values that a spectrum plot shows.
 *
 * Left out: tensors of unknown names are skipped; nothing is written here
 * (the command prints or writes the report).
 */
#include "geometry.h"

#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"

/* ---- one matrix ---- */

/* Running sums over row blocks of an M x N matrix. */
struct gram_acc {
	int64_t m, n;     /* full shape */
	int64_t q;        /* Gram size: min(m, n) */
	double fro2;
	double *colsum;   /* n */
	double *g;        /* q x q, upper triangle (row-major) */
	int started;
};

static void acc_init(struct gram_acc *a, int64_t m, int64_t n)
{
	memset(a, 0, sizeof *a);
	a->m = m;
	a->n = n;
	a->q = m < n ? m : n;
	a->colsum = xcalloc((size_t)(n ? n : 1), sizeof *a->colsum);
	a->g = xcalloc((size_t)(a->q ? a->q * a->q : 1), sizeof *a->g);
}

static void acc_release(struct gram_acc *a)
{
	free(a->colsum);
	free(a->g);
	memset(a, 0, sizeof *a);
}

/* Add rows r x n (row-major) to the sums; the Gram part only for the tall
 * case (M >= N). For M < N the whole matrix comes in one block. */
static void acc_rows(struct gram_acc *a, const double *w, int64_t r, int gram)
{
	int64_t n = a->n;
	double f = 0;
	for (int64_t i = 0; i < r; i++) {
		const double *row = w + i * n;
		double fr = 0;
		for (int64_t j = 0; j < n; j++) {
			fr += row[j] * row[j];
			a->colsum[j] += row[j];
		}
		f += fr;
	}
	a->fro2 += f;
	if (!gram || r == 0 || a->q == 0)   /* dsyrk refuses a leading dimension of 0 */
		return;
	if (a->m >= a->n)   /* G += B^T B, B = r x n */
		cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)n, (int)r, 1.0, w, (int)n,
			    a->started ? 1.0 : 0.0, a->g, (int)n);
	else                /* G = W W^T, W = m x n */
		cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, (int)r, (int)n, 1.0, w, (int)n,
			    0.0, a->g, (int)r);
	a->started = 1;
}

/* Largest eigenvalue of the q x q symmetric matrix g (upper triangle) by
 * LAPACK dsyevr (RANGE = 'I', IL = IU = q: bisection on the tridiagonal
 * form; the O(q^3) reduction dominates). g is overwritten. W holds q
 * values and ISUPPZ 2q, as LAPACK documents them (W: dimension N; ISUPPZ:
 * 2 max(1, M), M <= N), not the one value asked for: dsyevr hands W to
 * dstebz, which stores every eigenvalue of the split tridiagonal blocks in
 * its interval before dropping those outside IL..IU (all q of them for a
 * zero matrix). dstebz may fail for RANGE = 'I' (INFO 2 or 3: the Sturm
 * count was not monotonic in floating point, as with entries from 1 down
 * to 1e-56 and subnormals); the cure its documentation gives is
 * RANGE = 'A', every eigenvalue, which runs then on a copy of g. */
static int top_eig_evr(double *g, int64_t q, double *out, struct err *e)
{
	if (q == 0) {
		*out = 0;
		return 0;
	}
	lapack_int found = 0;
	size_t qq = (size_t)q * (size_t)q;
	double *wv = xcalloc((size_t)q, sizeof *wv), z[1] = {0};
	double *g0 = xmalloc(qq * sizeof *g0);
	memcpy(g0, g, qq * sizeof *g0);
	lapack_int *isuppz = xcalloc(2 * (size_t)q, sizeof *isuppz);
	double abstol = 2 * LAPACKE_dlamch('S');
	lapack_int info = LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'N', 'I', 'U', (lapack_int)q, g, (lapack_int)q,
					 0.0, 0.0, (lapack_int)q, (lapack_int)q, abstol, &found, wv, z, 1, isuppz);
	if (info > 0) {
		memcpy(g, g0, qq * sizeof *g);
		found = 0;
		info = LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'N', 'A', 'U', (lapack_int)q, g, (lapack_int)q, 0.0, 0.0, 0,
				      0, abstol, &found, wv, z, 1, isuppz);
	}
	double top = found >= 1 && found <= q ? wv[found - 1] : NAN;   /* ascending order */
	free(wv);
	free(g0);
	free(isuppz);
	if (info != 0 || !(found >= 1 && found <= q))
		return err_set(e, EXIT_SYS, "LAPACKE_dsyevr failed (info %d, %d eigenvalues)", (int)info,
			       (int)found);
	*out = top;
	return 0;
}

/* 1 when x I - g is positive definite (Cholesky succeeds), i.e. every
 * eigenvalue of g is below x (up to Cholesky's backward error, about
 * q eps ||g||). work: q x q. */
static int below_all(const double *g, int64_t q, double x, double *work)
{
	for (int64_t i = 0; i < q; i++)
		for (int64_t j = i; j < q; j++)
			work[i * q + j] = (i == j ? x : 0.0) - g[i * q + j];
	return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)q, work, (lapack_int)q) == 0;
}

/* Largest eigenvalue of the tridiagonal matrix (alpha, beta) of order k. */
static double tridiag_max(const double *alpha, const double *beta, int k, double *d, double *f)
{
	memcpy(d, alpha, (size_t)k * sizeof *d);
	if (k > 1)
		memcpy(f, beta, (size_t)(k - 1) * sizeof *f);
	if (LAPACKE_dsterf((lapack_int)k, d, f) != 0)
		return NAN;
	double mx = d[0];
	for (int i = 1; i < k; i++)
		mx = d[i] > mx ? d[i] : mx;
	return mx;
}

#define LANCZOS_MAX 160        /* Krylov dimension before falling back to dsyevr */
#define LANCZOS_CERT 1e-12     /* certified relative bound: lambda_max <= theta (1 + this) */

/* Largest eigenvalue of the q x q Gram matrix g (upper triangle, g intact):
 * Lanczos with full reorthogonalisation from a fixed start vector gives a
 * Ritz value theta <= lambda_max (a Rayleigh quotient); once theta is
 * stationary, Cholesky of theta (1 + 1e-12) I - g certifies that no
 * eigenvalue lies above, so theta is lambda_max to 1e-12 relative (in
 * practice to rounding). Each step is one dsymv (2 q^2 flops) against
 * dsytrd's 4/3 q^3 in dsyevr. When certification fails (the start vector
 * missed the top eigenvector, or no convergence in LANCZOS_MAX steps) the
 * answer comes from dsyevr. Returns 0 or -1. */
static int top_eig(double *g, int64_t q, double *out, struct err *e)
{
	if (q <= 16)   /* tiny: dsyevr costs nothing */
		return top_eig_evr(g, q, out, e);
	double tr = 0;
	for (int64_t i = 0; i < q; i++)
		tr += g[i * q + i];
	if (!(tr > 0)) {   /* zero matrix (or NaN: let dsyevr report it) */
		if (tr == 0) {
			*out = 0;
			return 0;
		}
		return top_eig_evr(g, q, out, e);
	}
	int kmax = q < LANCZOS_MAX ? (int)q : LANCZOS_MAX;
	double *V = xmalloc((size_t)(kmax + 1) * (size_t)q * sizeof *V);
	double *w = xmalloc((size_t)q * sizeof *w);
	double *h = xmalloc((size_t)(kmax + 1) * sizeof *h);
	double alpha[LANCZOS_MAX], beta[LANCZOS_MAX], d[LANCZOS_MAX], f[LANCZOS_MAX];
	/* Start: a fixed pseudo-random unit vector (splitmix64). */
	double nrm = 0;
	uint64_t x = 0x243F6A8885A308D3ull;
	for (int64_t i = 0; i < q; i++) {
		uint64_t z = (x += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		z ^= z >> 31;
		V[i] = (double)(z >> 11) * 0x1p-53 - 0.5;
		nrm += V[i] * V[i];
	}
	cblas_dscal((int)q, 1 / sqrt(nrm), V, 1);
	double theta = -1, prev = -2;
	int certified = 0, k = 0;
	double *work = NULL;
	for (k = 1; k <= kmax; k++) {
		double *v = V + (size_t)(k - 1) * (size_t)q;
		cblas_dsymv(CblasRowMajor, CblasUpper, (int)q, 1.0, g, (int)q, v, 1, 0.0, w, 1);
		alpha[k - 1] = cblas_ddot((int)q, v, 1, w, 1);
		/* Full reorthogonalisation against V[0..k), twice. */
		for (int pass = 0; pass < 2; pass++) {
			cblas_dgemv(CblasRowMajor, CblasNoTrans, k, (int)q, 1.0, V, (int)q, w, 1, 0.0, h, 1);
			cblas_dgemv(CblasRowMajor, CblasTrans, k, (int)q, -1.0, V, (int)q, h, 1, 1.0, w, 1);
		}
		double b = cblas_dnrm2((int)q, w, 1);
		int done = b <= 1e-14 * tr || k == kmax;
		if (k % 8 == 0 || done) {
			theta = tridiag_max(alpha, beta, k, d, f);
			if (done || fabs(theta - prev) <= 1e-15 * theta) {
				if (!work)
					work = xmalloc((size_t)(q * q) * sizeof *work);
				if (below_all(g, q, theta * (1 + LANCZOS_CERT), work)) {
					certified = 1;
					break;
				}
				if (done)
					break;
			}
			prev = theta;
		}
		if (k < kmax) {
			beta[k - 1] = b;
			double *vn = V + (size_t)k * (size_t)q;
			for (int64_t i = 0; i < q; i++)
				vn[i] = w[i] / b;
		}
	}
	free(V);
	free(w);
	free(h);
	free(work);
	if (certified) {
		*out = theta;
		return 0;
	}
	return top_eig_evr(g, q, out, e);
}

/* The figures of the accumulated matrix W / 2^k (k from scale_exp), the
 * energies scaled back by 4^k: ldexp is exact unless the result leaves
 * float64's range (infinite, or subnormal and rounded, or 0). The ratios
 * are those of the scaled matrix: they never over- or underflow. */
static void acc_finish(struct gram_acc *a, double spec2, int k, double max_abs, struct geom_stats *s)
{
	double cs2 = 0;
	for (int64_t j = 0; j < a->n; j++)
		cs2 += a->colsum[j] * a->colsum[j];
	s->max_abs = max_abs;
	s->fro2 = ldexp(a->fro2, 2 * k);
	s->spec2 = ldexp(spec2, 2 * k);
	s->stable_rank = spec2 > 0 ? a->fro2 / spec2 : NAN;
	/* M ||sum/M||^2 / fro2 = ||sum||^2 / (M fro2) */
	s->mean_row_energy = a->fro2 > 0 ? cs2 / ((double)a->m * a->fro2) : NAN;
}

/* ---- scale and refusal of non-finite values ---- */

/* The exponent k with max_abs / 2^k in [0.5, 1) (0 for 0). */
static int scale_exp(double max_abs)
{
	int k = 0;
	if (max_abs > 0)
		frexp(max_abs, &k);
	return k;
}

/* x[0..n) /= 2^k, exactly (a power of two) unless a value becomes subnormal;
 * as two factors, each a double even for k = -1073 (max_abs the smallest
 * subnormal) or k = 1024 (DBL_MAX). */
static void scale_by(double *x, size_t n, int k)
{
	if (k == 0)
		return;
	double s1 = ldexp(1.0, -(k / 2)), s2 = ldexp(1.0, -(k - k / 2));
	for (size_t i = 0; i < n; i++)
		x[i] = x[i] * s1 * s2;
}

/* Running scan of values: the largest finite magnitude, the count of NaN
 * and infinities and the flat index of the first. */
struct scan {
	double max_abs;
	uint64_t bad, first, seen;
};

static void scan_add(struct scan *sc, const double *x, size_t n)
{
	double mx = sc->max_abs;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i])) {
			if (!sc->bad++)
				sc->first = sc->seen + i;
			continue;
		}
		double a = fabs(x[i]);
		mx = a > mx ? a : mx;
	}
	sc->max_abs = mx;
	sc->seen += n;
}

/* The refusal of a scan that met NaN or infinities: "N non-finite values
 * (NaN or infinity), the first at [i, j, ...]" (the index in shape). */
static int scan_refuse(const struct scan *sc, int ndim, const int64_t *shape, struct err *e)
{
	char at[160];
	size_t o = 0;
	int64_t idx[SAFETENSORS_MAX_DIMS];
	uint64_t r = sc->first;
	for (int d = ndim - 1; d >= 0; d--) {
		idx[d] = shape[d] ? (int64_t)(r % (uint64_t)shape[d]) : 0;
		r = shape[d] ? r / (uint64_t)shape[d] : 0;
	}
	at[o++] = '[';
	for (int d = 0; d < ndim && o < sizeof at - 24; d++)
		o += (size_t)snprintf(at + o, sizeof at - o, "%s%lld", d ? ", " : "", (long long)idx[d]);
	snprintf(at + o, sizeof at - o, "]");
	return err_set(e, EXIT_USAGE, "%llu non-finite value%s (NaN or infinity), the first at %s",
		       (unsigned long long)sc->bad, sc->bad == 1 ? "" : "s", ndim ? at : "[]");
}

#define GEOM_BLOCK_ELEMS (1 << 20)   /* float64 elements converted at a time (8 MiB) */

/* Scan a float tensor block by block: 0 with the largest magnitude in
 * *max_abs, or -1 (e: the count of non-finite values and where the first
 * is; a dtype that is not float). */
static int tensor_scan(const struct st_tensor *t, double *max_abs, struct err *e)
{
	uint64_t numel = st_numel(t);
	size_t es = st_dtype_size(t->dtype);
	double *w = xmalloc((size_t)(numel < GEOM_BLOCK_ELEMS ? (numel ? numel : 1) : GEOM_BLOCK_ELEMS) *
			    sizeof *w);
	struct scan sc = {0};
	int rc = 0;
	for (uint64_t i0 = 0; i0 < numel && rc == 0; i0 += GEOM_BLOCK_ELEMS) {
		uint64_t k = numel - i0 < GEOM_BLOCK_ELEMS ? numel - i0 : GEOM_BLOCK_ELEMS;
		struct st_tensor sub = *t;
		sub.ndim = 1;
		sub.shape[0] = (int64_t)k;
		sub.data = (const unsigned char *)t->data + (size_t)i0 * es;
		rc = st_to_f64(&sub, w, e);
		if (rc == 0)
			scan_add(&sc, w, (size_t)k);
	}
	free(w);
	if (rc < 0)
		return -1;
	if (sc.bad)
		return scan_refuse(&sc, t->ndim, t->shape, e);
	*max_abs = sc.max_abs;
	return 0;
}

static int dims_ok(int64_t m, int64_t n, struct err *e)
{
	if (m < 0 || n < 0 || m > INT_MAX || n > INT_MAX || (m && n > INT64_MAX / m))
		return err_set(e, EXIT_USAGE, "matrix of %lld x %lld is too large", (long long)m,
			       (long long)n);
	return 0;
}

/* sigma_1^2 by dgesdd (values only) on a copy. */
static int svd_spec2(const double *w, int64_t m, int64_t n, double *out, struct err *e)
{
	int64_t q = m < n ? m : n;
	if (q == 0) {
		*out = 0;
		return 0;
	}
	double *a = xmalloc((size_t)(m * n) * sizeof *a);
	memcpy(a, w, (size_t)(m * n) * sizeof *a);
	double *s = xmalloc((size_t)q * sizeof *s);
	/* Row-major W (m x n) is column-major W^T (n x m): same singular values. */
	double du[1], dv[1];
	lapack_int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', (lapack_int)n, (lapack_int)m, a,
					 (lapack_int)n, s, du, 1, dv, 1);
	*out = s[0] * s[0];
	free(a);
	free(s);
	if (info != 0)
		return err_set(e, EXIT_SYS, "LAPACKE_dgesdd failed (info %d)", (int)info);
	return 0;
}

/* The singular values of w (m x n, row-major, finite, divided by 2^k;
 * destroyed), times 2^k, descending into sv (min(m, n)). */
static int spectrum_scaled(double *w, int64_t m, int64_t n, int k, double *sv, struct err *e)
{
	int64_t q = m < n ? m : n;
	if (q == 0)
		return 0;
	/* Row-major W (m x n) is column-major W^T (n x m): same singular values.
	 * JOBZ = 'N': U and VT are not referenced (LDU, LDVT >= 1). */
	double du[1], dv[1];
	lapack_int info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', (lapack_int)n, (lapack_int)m, w,
					 (lapack_int)n, sv, du, 1, dv, 1);
	if (info != 0)
		return err_set(e, EXIT_SYS, "LAPACKE_dgesdd failed (info %d)", (int)info);
	for (int64_t i = 0; i < q; i++)
		sv[i] = ldexp(sv[i], k);
	return 0;
}

int geom_matrix_spectrum(const double *w, int64_t m, int64_t n, double *sv, struct err *e)
{
	if (dims_ok(m, n, e) < 0)
		return -1;
	size_t mn = (size_t)(m * n);
	struct scan sc = {0};
	scan_add(&sc, w, mn);
	if (sc.bad)
		return scan_refuse(&sc, 2, (int64_t[2]){m, n}, e);
	int k = scale_exp(sc.max_abs);
	double *c = xmalloc((mn ? mn : 1) * sizeof *c);
	if (mn)
		memcpy(c, w, mn * sizeof *c);
	scale_by(c, mn, k);
	int rc = spectrum_scaled(c, m, n, k, sv, e);
	free(c);
	return rc;
}

/* geom_tensor_spectrum on a tensor already scanned. */
static int tensor_spectrum(const struct st_tensor *t, double max_abs, double *sv, struct err *e)
{
	int64_t m = t->ndim ? t->shape[0] : 1;
	uint64_t numel = st_numel(t);
	int64_t n = m ? (int64_t)(numel / (uint64_t)m) : 0;
	if (dims_ok(m, n, e) < 0)
		return -1;
	int k = scale_exp(max_abs);
	double *w = xmalloc((size_t)(numel ? numel : 1) * sizeof *w);
	int rc = st_to_f64(t, w, e);
	if (rc == 0) {
		scale_by(w, (size_t)numel, k);
		rc = spectrum_scaled(w, m, n, k, sv, e);
	}
	free(w);
	return rc;
}

int geom_tensor_spectrum(const struct st_tensor *t, double *sv, struct err *e)
{
	double max_abs = 0;
	if (tensor_scan(t, &max_abs, e) < 0)
		return -1;
	return tensor_spectrum(t, max_abs, sv, e);
}

/* Stats of w (m x n, row-major, finite, already divided by 2^k by
 * scale_by; read only). */
static int stats_scaled(const double *w, int64_t m, int64_t n, enum geom_method method, int k,
			double max_abs, struct geom_stats *out, struct err *e)
{
	struct gram_acc a;
	acc_init(&a, m, n);
	acc_rows(&a, w, m, method != GEOM_SVD);
	double spec2;
	int rc = method == GEOM_GRAM ? top_eig(a.g, a.q, &spec2, e)
		 : method == GEOM_GRAM_EVR ? top_eig_evr(a.g, a.q, &spec2, e)
		 : svd_spec2(w, m, n, &spec2, e);
	if (rc == 0)
		acc_finish(&a, spec2, k, max_abs, out);
	acc_release(&a);
	return rc;
}

int geom_matrix_stats(const double *w, int64_t m, int64_t n, enum geom_method method,
		      struct geom_stats *out, struct err *e)
{
	if (dims_ok(m, n, e) < 0)
		return -1;
	size_t mn = (size_t)(m * n);
	struct scan sc = {0};
	scan_add(&sc, w, mn);
	if (sc.bad)
		return scan_refuse(&sc, 2, (int64_t[2]){m, n}, e);
	int k = scale_exp(sc.max_abs);
	double *c = xmalloc((mn ? mn : 1) * sizeof *c);
	if (mn)
		memcpy(c, w, mn * sizeof *c);
	scale_by(c, mn, k);
	int rc = stats_scaled(c, m, n, method, k, sc.max_abs, out, e);
	free(c);
	return rc;
}

/* geom_tensor_stats on a tensor already scanned (max_abs its largest
 * magnitude, every value finite). */
static int tensor_stats(const struct st_tensor *t, enum geom_method method, double max_abs,
			struct geom_stats *out, struct err *e)
{
	int64_t m = t->ndim ? t->shape[0] : 1;
	uint64_t numel = st_numel(t);
	int64_t n = m ? (int64_t)(numel / (uint64_t)m) : 0;
	if (dims_ok(m, n, e) < 0)
		return -1;
	int k = scale_exp(max_abs);
	if (method == GEOM_SVD || m < n || m * n <= GEOM_BLOCK_ELEMS) {
		double *w = xmalloc((size_t)(numel ? numel : 1) * sizeof *w);
		int rc = st_to_f64(t, w, e);
		if (rc == 0) {
			scale_by(w, (size_t)numel, k);
			rc = stats_scaled(w, m, n, method, k, max_abs, out, e);
		}
		free(w);
		return rc;
	}
	/* Tall and large: convert, scale and accumulate block by block of rows. */
	int64_t br = GEOM_BLOCK_ELEMS / n;
	if (br < 1)
		br = 1;
	double *w = xmalloc((size_t)(br * n) * sizeof *w);
	struct gram_acc a;
	acc_init(&a, m, n);
	size_t es = st_dtype_size(t->dtype);
	int rc = 0;
	for (int64_t r0 = 0; r0 < m && rc == 0; r0 += br) {
		int64_t r = m - r0 < br ? m - r0 : br;
		struct st_tensor sub = *t;
		sub.ndim = 2;
		sub.shape[0] = r;
		sub.shape[1] = n;
		sub.data = (const unsigned char *)t->data + (size_t)(r0 * n) * es;
		rc = st_to_f64(&sub, w, e);
		if (rc == 0) {
			scale_by(w, (size_t)(r * n), k);
			acc_rows(&a, w, r, 1);
		}
	}
	double spec2 = 0;
	if (rc == 0)
		rc = method == GEOM_GRAM ? top_eig(a.g, a.q, &spec2, e) : top_eig_evr(a.g, a.q, &spec2, e);
	if (rc == 0)
		acc_finish(&a, spec2, k, max_abs, out);
	acc_release(&a);
	free(w);
	return rc;
}

int geom_tensor_stats(const struct st_tensor *t, enum geom_method method, struct geom_stats *out,
		      struct err *e)
{
	double max_abs = 0;
	if (tensor_scan(t, &max_abs, e) < 0)
		return -1;
	return tensor_stats(t, method, max_abs, out, e);
}

/* ---- names ---- */

static const char *const group_names[GG_NGROUPS] = {
	"wte", "lm_head", "oe_tables", "value_embeds", "attn_square", "mlp_rect", "ve_gate", "other",
};

const char *geom_group_name(enum geom_group g)
{
	return (unsigned)g < GG_NGROUPS ? group_names[g] : "?";
}

/* The name without a torch.compile or DDP prefix. */
static const char *strip_prefix(const char *name)
{
	for (;;) {
		if (!strncmp(name, "_orig_mod.", 10))
			name += 10;
		else if (!strncmp(name, "module.", 7))
			name += 7;
		else
			return name;
	}
}

/* "<prefix><digits>." at s: the index and the rest after the dot, or NULL. */
static const char *index_after(const char *s, const char *prefix, int *idx)
{
	size_t pl = strlen(prefix);
	if (strncmp(s, prefix, pl) != 0)
		return NULL;
	s += pl;
	if (!isdigit((unsigned char)*s))
		return NULL;
	long v = 0;
	while (isdigit((unsigned char)*s)) {
		v = v * 10 + (*s++ - '0');
		if (v > 1000000)
			return NULL;
	}
	if (*s != '.')
		return NULL;
	*idx = (int)v;
	return s + 1;
}

int geom_classify(const char *name, enum geom_group *g, int *layer, const char **kind)
{
	static const struct {
		const char *suffix;
		enum geom_group g;
		const char *kind;
	} blk[] = {
		{"attn.c_q.weight", GG_ATTN, "attn.c_q"},
		{"attn.c_k.weight", GG_ATTN, "attn.c_k"},
		{"attn.c_v.weight", GG_ATTN, "attn.c_v"},
		{"attn.c_proj.weight", GG_ATTN, "attn.c_proj"},
		{"mlp.c_fc.weight", GG_MLP, "mlp.c_fc"},
		{"mlp.c_proj.weight", GG_MLP, "mlp.c_proj"},
		{"attn.ve_gate.weight", GG_VE_GATE, "attn.ve_gate"},
	};
	name = strip_prefix(name);
	*layer = -1;
	*kind = NULL;
	if (!strcmp(name, "transformer.wte.weight")) {
		*g = GG_WTE;
		return 0;
	}
	if (!strcmp(name, "lm_head.weight")) {
		*g = GG_LM_HEAD;
		return 0;
	}
	int i;
	const char *rest;
	if ((rest = index_after(name, "transformer.h.", &i))) {
		for (size_t k = 0; k < sizeof blk / sizeof blk[0]; k++) {
			if (!strcmp(rest, blk[k].suffix)) {
				*g = blk[k].g;
				*layer = i;
				*kind = blk[k].kind;
				return 0;
			}
		}
		return -1;
	}
	if (((rest = index_after(name, "value_embeds.", &i))) && !strcmp(rest, "weight")) {
		*g = GG_VALUE_EMBED;
		*layer = i;
		return 0;
	}
	if ((((rest = index_after(name, "oe.", &i))) || ((rest = index_after(name, "oe_tables.", &i)))) &&
	    !strcmp(rest, "weight")) {
		*g = GG_OE;
		*layer = i;
		return 0;
	}
	return -1;
}

/* ---- arms ---- */

static char *strip_seed(char *s)
{
	size_t n = strlen(s);
	size_t k = n;
	while (k > 0 && isdigit((unsigned char)s[k - 1]))
		k--;
	if (k == n)
		return s;
	static const char *const tags[] = {"_seed", "-seed", "_s", "-s"};
	for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++) {
		size_t tl = strlen(tags[t]);
		if (k > tl && !strncmp(s + k - tl, tags[t], tl)) {
			s[k - tl] = '\0';
			break;
		}
	}
	return s;
}

/* "arm = X" in a config text file; fresh string or NULL. */
static char *arm_from_config(const char *path)
{
	char *buf;
	size_t len;
	struct err e;
	if (file_read_all(path, 1 << 20, &buf, &len, &e) < 0)
		return NULL;
	char *out = NULL;
	for (char *line = strtok(buf, "\n"); line && !out; line = strtok(NULL, "\n")) {
		while (*line == ' ' || *line == '\t')
			line++;
		if (strncmp(line, "arm", 3) != 0)
			continue;
		char *p = line + 3;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != '=')
			continue;
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		size_t l = strcspn(p, " \t\r#");
		if (l)
			out = xstrndup(p, l);
	}
	free(buf);
	return out;
}

char *geom_arm_of(const char *path, const struct st_file *f, const char **source)
{
	for (size_t i = 0; f && i < f->n_meta; i++) {
		if (!strcmp(f->meta_keys[i], "arm") && f->meta_vals[i][0]) {
			*source = "metadata";
			return xstrdup(f->meta_vals[i]);
		}
	}
	char *dir = path_dirname(path);
	char *rj = path_join(dir, "result.json");
	struct err e;
	cJSON *j = json_read_file(rj, 16u << 20, &e);
	free(rj);
	if (j) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "arm");
		if (!cJSON_IsString(a)) {
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "config");
			a = cJSON_GetObjectItemCaseSensitive(c, "arm");
		}
		if (cJSON_IsString(a) && a->valuestring[0]) {
			char *s = xstrdup(a->valuestring);
			cJSON_Delete(j);
			free(dir);
			*source = "result.json";
			return s;
		}
		cJSON_Delete(j);
	}
	static const char *const cfgs[] = {"config", "config.cfg"};
	for (size_t k = 0; k < 2; k++) {
		char *cp = path_join(dir, cfgs[k]);
		char *a = arm_from_config(cp);
		free(cp);
		if (a) {
			free(dir);
			*source = "config";
			return a;
		}
	}
	const char *base = path_basename(path);
	char *name = xstrdup(base);
	size_t bl = strlen(name);
	if (bl > 12 && !strcmp(name + bl - 12, ".safetensors"))
		name[bl - 12] = '\0';
	if (!strcmp(name, "model") || !strcmp(name, "checkpoint") || !name[0]) {
		const char *db = path_basename(dir);
		if (db[0] && strcmp(db, ".") && strcmp(db, "/")) {
			free(name);
			name = xstrdup(db);
		}
	}
	free(dir);
	*source = "file name";
	return strip_seed(name);
}

/* ---- one checkpoint ---- */

static cJSON *num(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static int need_float(const struct st_tensor *t, const char *path, struct err *e)
{
	if (t->dtype == ST_F64 || t->dtype == ST_F32 || t->dtype == ST_BF16 || t->dtype == ST_F16)
		return 0;
	return err_set(e, EXIT_USAGE, "'%s': tensor '%s': dtype %s is not a float type", path, t->name,
		       st_dtype_name(t->dtype));
}

/* A missing tensor: an error naming the table, or (allow_missing) fine. */
static int missing(const struct geom_opts *o, const char *path, const char *name, const char *table,
		   struct err *e)
{
	if (o->allow_missing)
		return 0;
	return err_set(e, EXIT_USAGE, "'%s': no tensor '%s' (%s needs it; --allow-missing skips the table)",
		       path, name, table);
}

struct mat {
	const struct st_tensor *t;
	enum geom_group g;
	int layer;
	const char *kind;
	double max_abs;          /* from the scan before the analysis */
	struct geom_stats s;
	double *sv;              /* with spectrum: min(rows, cols) singular values */
};

/* Group summary {"stable_rank", "mean_row_energy", "n", "n_undefined",
 * "width"} over the matrices of group g (NULL when there are none): n
 * matrices, the means over the n - n_undefined whose figures are defined
 * (an all-zero matrix has neither stable rank nor energy share), null when
 * none is. */
static cJSON *group_summary(const struct mat *m, size_t nm, enum geom_group g, int with_width)
{
	double sr = 0, en = 0;
	int k = 0, undef = 0;
	int64_t width = -1;
	for (size_t i = 0; i < nm; i++) {
		if (m[i].g != g)
			continue;
		int64_t c = m[i].t->ndim >= 2 ? m[i].t->shape[1] : 1;
		width = width < 0 || width == c ? c : 0;   /* 0: mixed widths */
		k++;
		if (!isfinite(m[i].s.stable_rank) || !isfinite(m[i].s.mean_row_energy)) {
			undef++;
			continue;
		}
		sr += m[i].s.stable_rank;
		en += m[i].s.mean_row_energy;
	}
	if (!k)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "stable_rank", num(k > undef ? sr / (k - undef) : NAN));
	cJSON_AddItemToObject(o, "mean_row_energy", num(k > undef ? en / (k - undef) : NAN));
	cJSON_AddNumberToObject(o, "n", k);
	cJSON_AddNumberToObject(o, "n_undefined", undef);
	if (with_width)
		cJSON_AddNumberToObject(o, "width", (double)width);
	return o;
}

/* An absolute energy of a matrix whose largest magnitude is max_abs: null
 * when scaling it back left float64's normal range (infinite, or rounded
 * into the subnormals or to 0). */
static cJSON *energy_num(double v, double max_abs)
{
	return !isfinite(v) || (max_abs > 0 && v < DBL_MIN) ? cJSON_CreateNull() : cJSON_CreateNumber(v);
}

static cJSON *vec_json(const struct st_tensor *t, struct err *e, int64_t limit)
{
	uint64_t n = st_numel(t);
	double *v = xmalloc((size_t)(n ? n : 1) * sizeof *v);
	if (st_to_f64(t, v, e) < 0) {
		free(v);
		return NULL;
	}
	cJSON *a = cJSON_CreateArray();
	for (uint64_t i = 0; i < n && (limit < 0 || (int64_t)i < limit); i++)
		cJSON_AddItemToArray(a, num(v[i]));
	free(v);
	return a;
}

/* Mean of exp(q[...]) over the entries selected by layer range and plane range. */
struct qsel {
	int64_t l0, l1, c0, c1;   /* [l0, l1) layers, [c0, c1) planes */
};

static double q_mean(const double *x, int64_t L, int64_t H, int64_t C, int64_t planes, struct qsel s,
		     int64_t *count)
{
	double sum = 0;
	int64_t k = 0;
	/* layers [l0, l1) within [0, L): the final layer L - 1 of a q_tau of
	 * no layers is none */
	for (int64_t l = s.l0 > 0 ? s.l0 : 0; l < s.l1 && l < L; l++)
		for (int64_t h = 0; h < H; h++)
			for (int64_t c = 0; c < C; c++) {
				int64_t plane = planes ? c % planes : 0;
				if (planes && (plane < s.c0 || plane >= s.c1))
					continue;
				sum += x[(l * H + h) * C + c];
				k++;
			}
	if (count)
		*count = k;
	return k ? sum / (double)k : NAN;
}

/* The q_tau profile (Table 5a). d is the model width (for the layout). */
static cJSON *q_tau_profile(const struct st_tensor *t, int64_t L, int64_t d, const char *path,
			    struct err *e)
{
	int64_t H, C;
	const char *layout;
	if (t->ndim == 3) {
		H = t->shape[1];
		C = t->shape[2];
		int64_t hd = H ? d / H : 0;
		if (hd && C * 2 == hd)
			layout = "pair";
		else if (hd && C == hd)
			layout = "untied";
		else {
			err_set(e, EXIT_USAGE, "'%s': tensor '%s': shape [%lld, %lld, %lld] is neither "
				"pair (L x H x hd/2) nor untied (L x H x hd) for width %lld", path, t->name,
				(long long)t->shape[0], (long long)H, (long long)C, (long long)d);
			return NULL;
		}
	} else if (t->ndim == 2) {
		H = t->shape[1];
		C = 1;
		layout = "head";
	} else {
		err_set(e, EXIT_USAGE, "'%s': tensor '%s': expected 2 or 3 dimensions, not %d", path,
			t->name, t->ndim);
		return NULL;
	}
	if (t->shape[0] != L) {
		err_set(e, EXIT_USAGE, "'%s': tensor '%s': %lld layers, the checkpoint has %lld", path,
			t->name, (long long)t->shape[0], (long long)L);
		return NULL;
	}
	uint64_t n = st_numel(t);
	double *x = xmalloc((size_t)(n ? n : 1) * sizeof *x);
	if (st_to_f64(t, x, e) < 0) {
		free(x);
		return NULL;
	}
	for (uint64_t i = 0; i < n; i++)
		x[i] = exp(x[i]);
	int64_t planes = !strcmp(layout, "head") ? 0 : (!strcmp(layout, "pair") ? C : C / 2);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "layout", layout);
	cJSON_AddNumberToObject(o, "planes", (double)planes);
	struct qsel all = {0, L, 0, planes};
	double mean = q_mean(x, L, H, C, planes, all, NULL);
	double ss = 0;
	for (uint64_t i = 0; i < n; i++)
		ss += (x[i] - mean) * (x[i] - mean);
	cJSON_AddItemToObject(o, "mean", num(mean));
	cJSON_AddItemToObject(o, "sd", num(n > 1 ? sqrt(ss / (double)(n - 1)) : NAN));
	if (planes) {
		int64_t b1 = planes / 4, b2 = 3 * planes / 4;
		cJSON *bands = cJSON_AddArrayToObject(o, "bands");
		int64_t lim[4] = {0, b1, b2, planes};
		for (int k = 0; k < 3; k++) {
			cJSON *b = cJSON_CreateObject();
			cJSON *r = cJSON_AddArrayToObject(b, "planes");
			cJSON_AddItemToArray(r, cJSON_CreateNumber((double)lim[k]));
			cJSON_AddItemToArray(r, cJSON_CreateNumber((double)(lim[k + 1] - 1)));
			struct qsel s = {0, L, lim[k], lim[k + 1]};
			cJSON_AddItemToObject(b, "mean", num(q_mean(x, L, H, C, planes, s, NULL)));
			cJSON_AddItemToArray(bands, b);
		}
	} else {
		cJSON_AddNullToObject(o, "bands");
	}
	cJSON *by = cJSON_AddArrayToObject(o, "by_layer");
	for (int64_t l = 0; l < L; l++) {
		struct qsel s = {l, l + 1, 0, planes};
		cJSON_AddItemToArray(by, num(q_mean(x, L, H, C, planes, s, NULL)));
	}
	struct qsel l0 = {0, 1, 0, planes}, mid = {2, L - 1, 0, planes}, fin = {L - 1, L, 0, planes};
	cJSON_AddItemToObject(o, "layer0", num(q_mean(x, L, H, C, planes, l0, NULL)));
	cJSON *ml = cJSON_AddArrayToObject(o, "middle_layers");
	if (L - 1 > 2) {
		cJSON_AddItemToArray(ml, cJSON_CreateNumber(2));
		cJSON_AddItemToArray(ml, cJSON_CreateNumber((double)(L - 2)));
	}
	cJSON_AddItemToObject(o, "middle", num(L - 1 > 2 ? q_mean(x, L, H, C, planes, mid, NULL) : NAN));
	cJSON_AddItemToObject(o, "final", num(q_mean(x, L, H, C, planes, fin, NULL)));
	free(x);
	return o;
}

static int cmp_mat(const void *a, const void *b)
{
	const struct mat *x = a, *y = b;
	if (x->g != y->g)
		return x->g < y->g ? -1 : 1;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	return strcmp(x->t->name, y->t->name);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The smallest of 0 .. n-1 not among code[0..nc) (sorted here), or -1:
 * O(nc log nc) whatever n is. */
static int64_t first_gap(int64_t *code, size_t nc, int64_t n)
{
	qsort(code, nc, sizeof *code, cmp_i64);
	int64_t want = 0;
	for (size_t i = 0; i < nc && want < n; i++) {
		if (code[i] > want)
			return want;
		if (code[i] == want)
			want++;
	}
	return want < n ? want : -1;
}

static void mats_free(struct mat *m, size_t nm)
{
	for (size_t i = 0; i < nm; i++)
		free(m[i].sv);
	free(m);
}

cJSON *geom_audit_st(const struct st_file *f, const char *path, const struct geom_opts *o,
		     int file_i, int file_n, struct err *e)
{
	struct mat *m = xcalloc(f->n ? f->n : 1, sizeof *m);
	size_t nm = 0;
	const struct st_tensor *scal[4] = {NULL, NULL, NULL, NULL};
	static const char *const scal_names[4] = {"x0_lambdas", "wte_lambdas", "resid_lambdas",
						  "out_lambdas"};
	const struct st_tensor *qt = NULL;
	int max_layer = -1, max_oe = -1;
	cJSON *out = NULL;
	for (size_t i = 0; i < f->n; i++) {
		const struct st_tensor *t = &f->t[i];
		const char *nm0 = strip_prefix(t->name);
		for (int k = 0; k < 4; k++)
			if (!strcmp(nm0, scal_names[k]))
				scal[k] = t;
		if (!strcmp(nm0, "q_tau"))
			qt = t;
		struct mat x = {.t = t};
		if (geom_classify(t->name, &x.g, &x.layer, &x.kind) < 0)
			continue;
		if (need_float(t, path, e) < 0)
			goto fail;
		if (t->ndim != 2) {
			err_set(e, EXIT_USAGE, "'%s': tensor '%s': a matrix needs 2 dimensions, not %d", path,
				t->name, t->ndim);
			goto fail;
		}
		if ((x.g == GG_ATTN || x.g == GG_MLP || x.g == GG_VE_GATE) && x.layer > max_layer)
			max_layer = x.layer;
		if (x.g == GG_OE && x.layer > max_oe)
			max_oe = x.layer;
		m[nm++] = x;
	}
	for (int k = 0; k < 4; k++)
		if (scal[k] && need_float(scal[k], path, e) < 0)
			goto fail;
	qsort(m, nm, sizeof *m, cmp_mat);

	/* Presence: the tables' tensors. */
	int L = max_layer + 1;
	int have[GG_NGROUPS] = {0};
	for (size_t i = 0; i < nm; i++)
		have[m[i].g]++;
	if (!have[GG_WTE] && missing(o, path, "transformer.wte.weight", "Table 4 (wte)", e) < 0)
		goto fail;
	if (!have[GG_LM_HEAD] && missing(o, path, "lm_head.weight", "Table 4 (lm_head)", e) < 0)
		goto fail;
	if (L == 0 && missing(o, path, "transformer.h.0.attn.c_q.weight", "Table 4 (attention and MLP)", e) < 0)
		goto fail;
	/* Every layer's six matrices and oe.0 .. oe.max, found by walking the
	 * indices present in order (a name with layer 1,000,000 costs nothing). */
	if (!o->allow_missing) {
		static const char *const kinds[6] = {"attn.c_q", "attn.c_k", "attn.c_v", "attn.c_proj",
						     "mlp.c_fc", "mlp.c_proj"};
		int64_t *code = xmalloc((nm ? nm : 1) * sizeof *code);
		size_t nc = 0;
		for (size_t i = 0; i < nm; i++)
			for (int k = 0; k < 6 && m[i].kind; k++)
				if (!strcmp(m[i].kind, kinds[k]))
					code[nc++] = (int64_t)m[i].layer * 6 + k;
		int64_t gap = first_gap(code, nc, (int64_t)L * 6);
		if (gap >= 0) {
			char nmb[96];
			snprintf(nmb, sizeof nmb, "transformer.h.%d.%s.weight", (int)(gap / 6), kinds[gap % 6]);
			missing(o, path, nmb, gap % 6 < 4 ? "Table 4 (square attention)" :
				"Table 4 (rectangular MLP)", e);
			free(code);
			goto fail;
		}
		if (!have[GG_VALUE_EMBED] && L > 0) {
			char nmb[64];
			snprintf(nmb, sizeof nmb, "value_embeds.%d.weight", L - 1);
			missing(o, path, nmb, "Table 4 (value_embeds)", e);
			free(code);
			goto fail;
		}
		nc = 0;
		for (size_t i = 0; i < nm; i++)
			if (m[i].g == GG_OE)
				code[nc++] = m[i].layer;
		gap = first_gap(code, nc, (int64_t)max_oe + 1);
		free(code);
		if (gap >= 0) {
			char nmb[64];
			snprintf(nmb, sizeof nmb, "oe.%d.weight", (int)gap);
			missing(o, path, nmb, "Table 4 (oe tables: oe.0 .. oe.3)", e);
			goto fail;
		}
	}
	if (!scal[0] && missing(o, path, "x0_lambdas", "Table 8b", e) < 0)
		goto fail;
	if (!scal[2] && missing(o, path, "resid_lambdas", "Table 8b", e) < 0)
		goto fail;
	for (int k = 0; k < 4; k++) {
		if (scal[k] && L > 0 && k != 3 && st_numel(scal[k]) != (uint64_t)L) {
			err_set(e, EXIT_USAGE, "'%s': tensor '%s': %llu entries, the checkpoint has %d layers",
				path, scal[k]->name, (unsigned long long)st_numel(scal[k]), L);
			goto fail;
		}
	}

	/* Every tensor read is checked before any is analysed: a NaN or an
	 * infinity anywhere is bad input (the matrices' largest magnitudes are
	 * kept for scaling). */
	if (qt && need_float(qt, path, e) < 0)
		goto fail;
	for (size_t i = 0; i < nm + 5; i++) {
		const struct st_tensor *t = i < nm ? m[i].t : i < nm + 4 ? scal[i - nm] : qt;
		double mx = 0;
		if (!t)
			continue;
		if (tensor_scan(t, &mx, e) < 0) {
			err_prefix(e, "'%s': tensor '%s'", path, t->name);
			goto fail;
		}
		if (i < nm)
			m[i].max_abs = mx;
	}

	/* The matrices, with progress. */
	/* Progress only once a checkpoint has taken a while (small ones stay quiet). */
	struct progress pr;
	progress_init(&pr, o->quiet);
	double t0 = now_seconds();
	for (size_t i = 0; i < nm; i++) {
		if (now_seconds() - t0 > 1.0)
			progress_update(&pr, 0, "geometry: checkpoint %d/%d, matrix %zu/%zu %s", file_i + 1,
					file_n, i + 1, nm, m[i].t->name);
		if (tensor_stats(m[i].t, o->method, m[i].max_abs, &m[i].s, e) < 0) {
			progress_done(&pr);
			err_prefix(e, "'%s': tensor '%s'", path, m[i].t->name);
			goto fail;
		}
		if (o->spectrum) {
			int64_t r = m[i].t->shape[0], c = m[i].t->shape[1];
			m[i].sv = xmalloc((size_t)((r < c ? r : c) > 0 ? (r < c ? r : c) : 1) * sizeof *m[i].sv);
			if (tensor_spectrum(m[i].t, m[i].max_abs, m[i].sv, e) < 0) {
				progress_done(&pr);
				err_prefix(e, "'%s': tensor '%s'", path, m[i].t->name);
				goto fail;
			}
		}
	}
	progress_done(&pr);

	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "path", path);
	const char *src = NULL;
	char *arm = geom_arm_of(path, f, &src);
	cJSON_AddStringToObject(out, "arm", arm);
	cJSON_AddStringToObject(out, "arm_source", src);
	free(arm);
	cJSON_AddNumberToObject(out, "depth", L);
	int64_t d = 0;
	for (size_t i = 0; i < nm && !d; i++)
		if (m[i].g == GG_WTE || m[i].g == GG_LM_HEAD)
			d = m[i].t->shape[1];
	cJSON_AddNumberToObject(out, "width", (double)d);

	cJSON *mats = cJSON_AddObjectToObject(out, "matrices");
	for (size_t i = 0; i < nm; i++) {
		cJSON *x = cJSON_AddObjectToObject(mats, strip_prefix(m[i].t->name));
		cJSON_AddStringToObject(x, "group", geom_group_name(m[i].g));
		cJSON_AddNumberToObject(x, "rows", (double)m[i].t->shape[0]);
		cJSON_AddNumberToObject(x, "cols", (double)m[i].t->shape[1]);
		cJSON_AddItemToObject(x, "stable_rank", num(m[i].s.stable_rank));
		cJSON_AddItemToObject(x, "mean_row_energy", num(m[i].s.mean_row_energy));
		cJSON_AddItemToObject(x, "fro_sq", energy_num(m[i].s.fro2, m[i].s.max_abs));
		cJSON_AddItemToObject(x, "sigma1_sq", energy_num(m[i].s.spec2, m[i].s.max_abs));
		cJSON_AddNumberToObject(x, "max_abs", m[i].s.max_abs);
		if (m[i].sv) {
			int64_t q = m[i].t->shape[0] < m[i].t->shape[1] ? m[i].t->shape[0] : m[i].t->shape[1];
			cJSON *a = cJSON_AddArrayToObject(x, "singular_values");
			for (int64_t j = 0; j < q; j++)
				cJSON_AddItemToArray(a, num(m[i].sv[j]));
		}
	}
	cJSON *t4 = cJSON_AddObjectToObject(out, "table4");
	cJSON_AddItemToObject(t4, "wte", group_summary(m, nm, GG_WTE, 1));
	cJSON_AddItemToObject(t4, "lm_head", group_summary(m, nm, GG_LM_HEAD, 1));
	cJSON_AddItemToObject(t4, "oe_tables", group_summary(m, nm, GG_OE, 1));
	cJSON_AddItemToObject(t4, "value_embeds", group_summary(m, nm, GG_VALUE_EMBED, 1));
	cJSON_AddItemToObject(t4, "attn_square", group_summary(m, nm, GG_ATTN, 0));
	cJSON_AddItemToObject(t4, "mlp_rect", group_summary(m, nm, GG_MLP, 0));

	if (qt) {
		cJSON *q = q_tau_profile(qt, L, d, path, e);
		if (!q)
			goto fail;
		cJSON_AddItemToObject(out, "q_tau", q);
	} else {
		cJSON_AddNullToObject(out, "q_tau");
	}
	cJSON *sc = cJSON_AddObjectToObject(out, "scalars");
	for (int k = 0; k < 4; k++) {
		if (!scal[k]) {
			cJSON_AddNullToObject(sc, scal_names[k]);
			continue;
		}
		cJSON *v = vec_json(scal[k], e, -1);
		if (!v)
			goto fail;
		cJSON_AddItemToObject(sc, scal_names[k], v);
	}
	mats_free(m, nm);
	return out;
fail:
	cJSON_Delete(out);
	mats_free(m, nm);
	return NULL;
}

cJSON *geom_audit_file(const char *path, const struct geom_opts *o, int file_i, int file_n,
		       struct err *e)
{
	struct st_file f;
	if (st_open(&f, path, e) < 0)
		return NULL;
	cJSON *j = geom_audit_st(&f, path, o, file_i, file_n, e);
	st_close(&f);
	return j;
}

/* ---- several checkpoints ---- */

/* Element-wise mean of k JSON values of the same structure: numbers are
 * averaged (null if any is null), arrays of equal length and objects with
 * the same keys recursively, equal strings kept; anything else is null. */
static cJSON *json_mean(cJSON *const *v, int k)
{
	if (cJSON_IsNumber(v[0])) {
		double s = 0;
		for (int i = 0; i < k; i++) {
			if (!cJSON_IsNumber(v[i]))
				return cJSON_CreateNull();
			s += v[i]->valuedouble;
		}
		return num(s / k);
	}
	if (cJSON_IsString(v[0])) {
		for (int i = 1; i < k; i++)
			if (!cJSON_IsString(v[i]) || strcmp(v[i]->valuestring, v[0]->valuestring))
				return cJSON_CreateNull();
		return cJSON_CreateString(v[0]->valuestring);
	}
	if (cJSON_IsArray(v[0]) || cJSON_IsObject(v[0])) {
		int obj = cJSON_IsObject(v[0]);
		int n = cJSON_GetArraySize(v[0]);
		for (int i = 1; i < k; i++)
			if ((obj ? !cJSON_IsObject(v[i]) : !cJSON_IsArray(v[i])) || cJSON_GetArraySize(v[i]) != n)
				return cJSON_CreateNull();
		cJSON *out = obj ? cJSON_CreateObject() : cJSON_CreateArray();
		cJSON **c = xmalloc((size_t)k * sizeof *c);
		int idx = 0;
		for (cJSON *x = v[0]->child; x; x = x->next, idx++) {
			int ok = 1;
			for (int i = 0; i < k; i++) {
				c[i] = obj ? cJSON_GetObjectItemCaseSensitive(v[i], x->string)
					   : cJSON_GetArrayItem(v[i], idx);
				ok &= c[i] != NULL;
			}
			cJSON *r = ok ? json_mean(c, k) : cJSON_CreateNull();
			if (obj)
				cJSON_AddItemToObject(out, x->string, r);
			else
				cJSON_AddItemToArray(out, r);
		}
		free(c);
		return out;
	}
	return cJSON_CreateNull();
}

cJSON *geom_audit(char *const *paths, int n, const struct geom_opts *o, struct err *e)
{
	cJSON *rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "method", o->method == GEOM_GRAM ? "gram" :
				o->method == GEOM_GRAM_EVR ? "gram-evr" : "svd");
	cJSON *cks = cJSON_AddArrayToObject(rep, "checkpoints");
	for (int i = 0; i < n; i++) {
		cJSON *c = geom_audit_file(paths[i], o, i, n, e);
		if (!c) {
			cJSON_Delete(rep);
			return NULL;
		}
		cJSON_AddItemToArray(cks, c);
	}
	cJSON *arms = cJSON_AddObjectToObject(rep, "arms");
	cJSON **v = xmalloc((size_t)(n ? n : 1) * sizeof *v);
	for (cJSON *c = cks->child; c; c = c->next) {
		const char *arm = cJSON_GetObjectItemCaseSensitive(c, "arm")->valuestring;
		if (cJSON_GetObjectItemCaseSensitive(arms, arm))
			continue;
		cJSON *a = cJSON_AddObjectToObject(arms, arm);
		cJSON *list = cJSON_AddArrayToObject(a, "checkpoints");
		int k = 0;
		for (cJSON *d = c; d; d = d->next) {
			if (strcmp(cJSON_GetObjectItemCaseSensitive(d, "arm")->valuestring, arm))
				continue;
			v[k++] = d;
			cJSON_AddItemToArray(list, cJSON_CreateString(
				cJSON_GetObjectItemCaseSensitive(d, "path")->valuestring));
		}
		cJSON_AddNumberToObject(a, "n", k);
		static const char *const parts[3] = {"table4", "q_tau", "scalars"};
		for (int p = 0; p < 3; p++) {
			cJSON **w = xmalloc((size_t)k * sizeof *w);
			for (int i = 0; i < k; i++)
				w[i] = cJSON_GetObjectItemCaseSensitive(v[i], parts[p]);
			cJSON_AddItemToObject(a, parts[p], json_mean(w, k));
			free(w);
		}
	}
	free(v);
	return rep;
}

/* ---- human tables ---- */

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* " k of n" when some of a group's n matrices are left out of its means
 * (all zero), else nothing; 1 when written. */
static int of_n(char *b, size_t size, const cJSON *g)
{
	double n = jnum(g, "n"), nu = jnum(g, "n_undefined");
	if (!(nu > 0) || size == 0)
		return 0;
	snprintf(b, size, "%g of %g", n - nu, n);
	return 1;
}

static void cell_sr_energy(FILE *fp, const cJSON *g, int width, int with_energy, int *left_out)
{
	char b[96];
	if (!cJSON_IsObject(g)) {
		snprintf(b, sizeof b, "-");
	} else {
		double sr = jnum(g, "stable_rank"), en = jnum(g, "mean_row_energy"), w = jnum(g, "width");
		int n = 0;
		if (isnan(sr))
			n = snprintf(b, sizeof b, "n/a");
		else if (!isnan(w) && w > 0)
			n = snprintf(b, sizeof b, "%.2f/%.0f", sr, w);
		else
			n = snprintf(b, sizeof b, "%.2f", sr);
		if (with_energy && n > 0 && (size_t)n < sizeof b)
			n += snprintf(b + n, sizeof b - (size_t)n, isnan(en) ? " (n/a)" : " (%.2f%%)", 100 * en);
		if (n > 0 && (size_t)n + 1 < sizeof b) {
			b[n] = ' ';
			if (of_n(b + n + 1, sizeof b - (size_t)n - 1, g))
				*left_out = 1;
			else
				b[n] = 0;
		}
	}
	fprintf(fp, "  %-*s", width, b);
}

/* A figure of Table 5a: "n/a" for null (exp(q_tau) beyond float64). */
static void cell_num(FILE *fp, const char *fmt, int width, double v)
{
	char b[48];
	if (isnan(v))
		snprintf(b, sizeof b, "n/a");
	else
		snprintf(b, sizeof b, fmt, v);
	fprintf(fp, "  %-*s", width, b);
}

static void print_vec(FILE *fp, const cJSON *a, int lo, int hi, const char *fmt)
{
	if (!cJSON_IsArray(a)) {
		fputs("-", fp);
		return;
	}
	fputc('[', fp);
	int i = 0, first = 1;
	for (const cJSON *x = a->child; x; x = x->next, i++) {
		if (i < lo || (hi >= 0 && i >= hi))
			continue;
		if (!first)
			fputs(", ", fp);
		first = 0;
		if (cJSON_IsNumber(x))
			fprintf(fp, fmt, x->valuedouble);
		else
			fputs("null", fp);
	}
	fputc(']', fp);
}

struct row {
	const char *label;
	const cJSON *t4, *q, *sc;
};

static void print_rows(FILE *fp, const struct row *r, int n, int lw)
{
	fprintf(fp, "Table 4: stable rank ||W||_F^2/||W||_2^2 (/ width) and mean-row energy share\n");
	fprintf(fp, "%-*s  %-24s  %-24s  %-24s  %-14s  %-14s  %s\n", lw, "checkpoint", "wte", "lm_head",
		"oe_tables (mean)", "value_embeds", "attn_square", "mlp_rect");
	int left_out = 0;
	for (int i = 0; i < n; i++) {
		fprintf(fp, "%-*s", lw, r[i].label);
		cell_sr_energy(fp, cJSON_GetObjectItemCaseSensitive(r[i].t4, "wte"), 24, 1, &left_out);
		cell_sr_energy(fp, cJSON_GetObjectItemCaseSensitive(r[i].t4, "lm_head"), 24, 1, &left_out);
		cell_sr_energy(fp, cJSON_GetObjectItemCaseSensitive(r[i].t4, "oe_tables"), 24, 1, &left_out);
		const char *rest[3] = {"value_embeds", "attn_square", "mlp_rect"};
		for (int k = 0; k < 3; k++) {
			const cJSON *g = cJSON_GetObjectItemCaseSensitive(r[i].t4, rest[k]);
			char b[64], kn[40];
			double sr = cJSON_IsObject(g) ? jnum(g, "stable_rank") : NAN;
			int some = cJSON_IsObject(g) && of_n(kn, sizeof kn, g);
			left_out |= some;
			if (!cJSON_IsObject(g))
				snprintf(b, sizeof b, "-");
			else if (isnan(sr))
				snprintf(b, sizeof b, some ? "n/a (%s)" : "n/a", kn);
			else if (some)
				snprintf(b, sizeof b, "%.2f (%s)", sr, kn);
			else
				snprintf(b, sizeof b, "%.2f (%g)", sr, jnum(g, "n"));
			fprintf(fp, k < 2 ? "  %-14s" : "  %s", b);
		}
		fputc('\n', fp);
	}
	if (left_out)
		fprintf(fp, "k of n: the mean over the k of a group's n matrices that are not all zero "
			"(a zero matrix has no stable rank or energy share)\n");
	int anyq = 0;
	for (int i = 0; i < n; i++)
		anyq |= cJSON_IsObject(r[i].q);
	fputc('\n', fp);
	if (!anyq) {
		fprintf(fp, "Table 5a: no q_tau in these checkpoints\n");
	} else {
		fprintf(fp, "Table 5a: exp(q_tau) profile (mean +- SD; plane bands; layers)\n");
		fprintf(fp, "%-*s  %-16s  %-9s  %-9s  %-9s  %-8s  %-8s  %-8s  %s\n", lw, "checkpoint",
			"overall", "band 1", "band 2", "band 3", "layer 0", "middle", "final", "by layer");
		for (int i = 0; i < n; i++) {
			fprintf(fp, "%-*s", lw, r[i].label);
			if (!cJSON_IsObject(r[i].q)) {
				fprintf(fp, "  -\n");
				continue;
			}
			char b[48];
			double mean = jnum(r[i].q, "mean"), sd = jnum(r[i].q, "sd");
			if (isnan(mean))
				snprintf(b, sizeof b, "n/a");
			else if (isnan(sd))
				snprintf(b, sizeof b, "%.4f +- n/a", mean);
			else
				snprintf(b, sizeof b, "%.4f +- %.4f", mean, sd);
			fprintf(fp, "  %-16s", b);
			const cJSON *bands = cJSON_GetObjectItemCaseSensitive(r[i].q, "bands");
			for (int k = 0; k < 3; k++) {
				const cJSON *bk = cJSON_GetArrayItem(bands, k);
				if (bk)
					cell_num(fp, "%.4f", 9, jnum(bk, "mean"));
				else
					fprintf(fp, "  %-9s", "-");
			}
			cell_num(fp, "%.4f", 8, jnum(r[i].q, "layer0"));
			cell_num(fp, "%.4f", 8, jnum(r[i].q, "middle"));
			cell_num(fp, "%.4f", 8, jnum(r[i].q, "final"));
			fputs("  ", fp);
			print_vec(fp, cJSON_GetObjectItemCaseSensitive(r[i].q, "by_layer"), 0, -1, "%.3f");
			fputc('\n', fp);
		}
		/* Band limits from the first profile with bands. */
		for (int i = 0; i < n; i++) {
			const cJSON *bands = cJSON_IsObject(r[i].q) ?
				cJSON_GetObjectItemCaseSensitive(r[i].q, "bands") : NULL;
			if (!cJSON_IsArray(bands))
				continue;
			fprintf(fp, "bands: planes c in");
			for (int k = 0; k < 3; k++) {
				const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(bands, k),
										 "planes");
				fprintf(fp, " [%d, %d]%s", (int)cJSON_GetArrayItem(p, 0)->valuedouble,
					(int)cJSON_GetArrayItem(p, 1)->valuedouble, k < 2 ? "," : "");
			}
			fprintf(fp, "; middle = layers 2 .. L-2\n");
			break;
		}
	}
	fputc('\n', fp);
	fprintf(fp, "Table 8b: residual scalars\n");
	for (int i = 0; i < n; i++) {
		fprintf(fp, "%s\n", r[i].label);
		fprintf(fp, "  x0_lambdas         ");
		print_vec(fp, cJSON_GetObjectItemCaseSensitive(r[i].sc, "x0_lambdas"), 0, -1, "%+.2f");
		fprintf(fp, "\n  wte_lambdas        ");
		print_vec(fp, cJSON_GetObjectItemCaseSensitive(r[i].sc, "wte_lambdas"), 0, -1, "%+.2f");
		fprintf(fp, "\n  resid_lambdas[0:2] ");
		print_vec(fp, cJSON_GetObjectItemCaseSensitive(r[i].sc, "resid_lambdas"), 0, 2, "%.3f");
		fprintf(fp, "\n  out_lambdas        ");
		print_vec(fp, cJSON_GetObjectItemCaseSensitive(r[i].sc, "out_lambdas"), 0, -1, "%+.2f");
		fputc('\n', fp);
	}
}

void geom_print(FILE *fp, const cJSON *rep)
{
	const cJSON *cks = cJSON_GetObjectItemCaseSensitive(rep, "checkpoints");
	const cJSON *arms = cJSON_GetObjectItemCaseSensitive(rep, "arms");
	int n = cJSON_GetArraySize(cks), na = cJSON_GetArraySize(arms);
	struct row *r = xcalloc((size_t)(n + na + 1), sizeof *r);
	int lw = 10, k = 0;
	for (const cJSON *c = cks->child; c; c = c->next, k++) {
		r[k].label = cJSON_GetObjectItemCaseSensitive(c, "path")->valuestring;
		r[k].t4 = cJSON_GetObjectItemCaseSensitive(c, "table4");
		r[k].q = cJSON_GetObjectItemCaseSensitive(c, "q_tau");
		r[k].sc = cJSON_GetObjectItemCaseSensitive(c, "scalars");
		int l = (int)strlen(r[k].label);
		lw = l > lw ? l : lw;
	}
	print_rows(fp, r, n, lw);
	if (n > 1) {
		char **labels = xcalloc((size_t)na + 1, sizeof *labels);
		k = 0;
		lw = 10;
		for (const cJSON *a = arms->child; a; a = a->next, k++) {
			labels[k] = xasprintf("%s (n=%d)", a->string, (int)jnum(a, "n"));
			r[k].label = labels[k];
			r[k].t4 = cJSON_GetObjectItemCaseSensitive(a, "table4");
			r[k].q = cJSON_GetObjectItemCaseSensitive(a, "q_tau");
			r[k].sc = cJSON_GetObjectItemCaseSensitive(a, "scalars");
			int l = (int)strlen(labels[k]);
			lw = l > lw ? l : lw;
		}
		fprintf(fp, "\nPer-arm means\n\n");
		print_rows(fp, r, na, lw);
		for (int i = 0; i < na; i++)
			free(labels[i]);
		free(labels);
	}
	free(r);
}

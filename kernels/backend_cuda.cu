/* backend_cuda.cu: the CUDA backend object (trainer/backend.h), registered
 * as "cuda" and exported to C through kernels/cuda_api.h: device setup,
 * memory (managed allocations, staging of host operands, accounting),
 * cuBLAS GEMMs and own kernels for every other op but attention
 * (kernels/attention*.cu), the OE tables' n-gram hashing and visit counts
 * (integer atomics) included. An op tells its operands apart (managed,
 * pinned, pageable to stage) from a registry of the backend's own blocks,
 * and asks the driver only for other memory.
 *
 * Numerics: fp32 storage and fp32 arithmetic unless bf16 storage is on
 * (below); row reductions (RMS, dot products, softmax sums) accumulate in
 * fp64 like the CPU reference; GEMMs run on bf16 tensor cores with fp32
 * accumulation (CUDA_MM_BF16, the benchmark's autocast: fp32 operands cast
 * to bf16 here, round to nearest even, bf16 ones used as they are;
 * CUDA_MM_BF16_FAST: fp32 operands through cuBLAS's
 * COMPUTE_32F_FAST_16BF, whose down-conversion is cuBLAS's own) or in full
 * fp32 (CUDA_MM_F32, no TF32). Inside the model's pass scope (backend.h
 * scope) an operand's cast is kept until an op writes the operand (a GEMM
 * on a part of it, a chunk of hN, uses that part); RMSNorm and its
 * gradient, the fused RoPE/QK-norm forward and gradient, the
 * cross-entropy's logit gradient, relu^2 and the mma attention's y and dv
 * write their outputs' casts as they go (g_cc), relu2_fwd_gemm writes the
 * model's u as its cast alone, and the mma attention reads q, k and v
 * through the same store, so the forward's casts serve the backward too.
 * With bf16 GEMMs the model stores the MLP's h, u, du and dh in bf16
 * (c_mlp_bf16, backend.h mlp_bf16), the attention's q, k, v, q_tau's qn, y
 * and their gradients where the mma attention runs (c_attn_bf16,
 * attn_bf16), and the layers' norm outputs (norm_bf16): cuBLAS writes
 * bf16 outputs, the element-wise kernels read and write bf16, and no fp32
 * copies sit beside the kept casts. Every op is deterministic: fixed
 * launch shapes, fixed reduction trees, no float atomics; the embedding
 * scatter-add sorts the indices on the device (CUB's stable radix sort,
 * kept inside a pass scope for the next call on the same index array: wte
 * and the value-embedding tables of one micro-batch share it) and sums
 * each table row's contributions in token order, as the CPU loop does.
 *
 * Inside the pass scope an op returns once its kernels are queued (on a
 * device with concurrent managed access; ctx_done says when it waits).
 * On hardware: kernels/README.md says what ran on a GPU, and with what
 * results.
 *
 * Left out: fp64 tensors (abort: the CPU backend does fp64), bf16 storage
 * of the residual stream and of the gradients but the MLP's and the
 * attention's, asynchronous ops outside the pass scope, cuBLASLt
 * epilogues, a cross-entropy kernel keeping a row in registers (tried:
 * 227 registers a thread left one block an SM and it ran 4x slower on an
 * H200), the optimizer (Polar Express: kernels/polar.cu; the element-wise
 * passes: kernels/optim.cu; the rest in trainer/optim.c on the host).
 * Reference: trainer/backend.h, trainer/backend_cpu_ops.h (the reference
 * loops), docs/model.md; cuBLAS cublasGemmEx (row-major via C^T = B^T A^T).
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cuda_api.h"
#include "kernels/cuda_internal.h"
extern "C" {
#include "lib/err.h"
#include "trainer/backend_select.h"   /* peak_bf16_flops */
#include "trainer/optim.h"            /* struct optim_device */
}
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

/* ---- state ---- */

static struct {
	int ready;
	cudaStream_t st;
	cublasHandle_t blas;
	enum cuda_mm_mode mm;
	enum cuda_attn_mode attn;
	size_t in_use, peak;
	size_t dev_peak, dev_total;
	uint64_t ops;
	int async;       /* a pass's ops may run on without waiting: the device's
	                    concurrentManagedAccess */
	int dev;         /* the device's index (open's, --device N) */
	int opened;      /* open has run (the device is fixed) */
	int in_scope;    /* between the model's scope(1) and scope(0) */
	int *bad;        /* pinned, mapped: [0] embed_gather, [1] embed_scatter_add saw an
	                    index outside its table, [2] softcap_ce a target >= V */
} g_cu;

/* The pass scope's bf16 casts of fp32 matmul operands (backend.h scope):
 * key = the operand's address and element count; dropped when an op maps
 * an output overlapping the operand, when its block is freed, and at the
 * scope's end. */
struct ccast {
	const char *p;   /* the fp32 operand */
	int64_t n;       /* its elements */
	void *bf;        /* n bf16 values (device scratch) */
	int stale;       /* the fp32 values were never written (relu2_fwd_gemm) */
};
static struct {
	int on;          /* in a scope */
	int nstale;      /* entries with stale set */
	int n, cap;
	struct ccast *e;
	uint64_t made, reused;   /* while cuda_profile counts */
} g_cc;

/* cuda_profile's counts */
#define PROF_MAX 96
static struct {
	int on;
	double mark, last_end, host;   /* mark: start of the op in flight (0: none) */
	int n;
	struct {
		const char *op;
		uint64_t calls;
		double sec;
	} e[PROF_MAX];
} g_prof;

static double prof_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cuda_prof_begin(void)
{
	if (!g_prof.on || g_prof.mark > 0)   /* an op in flight: nested, counted in it */
		return;
	double t = prof_now();
	if (g_prof.last_end > 0 && t > g_prof.last_end)
		g_prof.host += t - g_prof.last_end;
	g_prof.mark = t;
}

void cuda_prof_end(const char *op)
{
	if (!g_prof.on)
		return;
	double t = prof_now(), t0 = g_prof.mark > 0 ? g_prof.mark : g_prof.last_end;
	int i = 0;
	while (i < g_prof.n && strcmp(g_prof.e[i].op, op) != 0)
		i++;
	if (i == g_prof.n) {
		if (g_prof.n == PROF_MAX)
			i = PROF_MAX - 1;   /* (never here: the ops are fewer) */
		else
			g_prof.e[g_prof.n++].op = op;
	}
	g_prof.e[i].calls++;
	if (t0 > 0)
		g_prof.e[i].sec += t - t0;
	g_prof.mark = 0;
	g_prof.last_end = t;
}

static void bk_fail(const char *op, const char *what)
{
	fprintf(stderr, "backend_cuda: %s: %s\n", op, what);
	abort();
}

static void bk_check(int ok, const char *op)
{
	if (!ok)
		bk_fail(op, "bad shapes or dtypes");
}

#define BLAS_CK(op, call)                                                              \
	do {                                                                           \
		cublasStatus_t bs_ = (call);                                           \
		if (bs_ != CUBLAS_STATUS_SUCCESS) {                                    \
			fprintf(stderr, "backend_cuda: %s: cuBLAS status %d (%s:%d)\n", \
				(op), (int)bs_, __FILE__, __LINE__);                   \
			abort();                                                       \
		}                                                                      \
	} while (0)

static void mem_note(void)
{
	if (g_cu.in_use > g_cu.peak)
		g_cu.peak = g_cu.in_use;
}

static void dev_sample(void)
{
	size_t fr = 0, tot = 0;
	if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) {
		g_cu.dev_total = tot;
		if (tot - fr > g_cu.dev_peak)
			g_cu.dev_peak = tot - fr;
	} else {
		cudaGetLastError();
	}
}

/* The modes' names, as the environment variables and gpu_bench spell them,
 * in enum order. */
static const char *const attn_names[] = { "f32", "mma" };
static const char *const mm_names[] = { "bf16", "f32", "fast16bf" };   /* gpu_bench's */

/* The index in names (n of them) of the environment variable var's value;
 * dflt when it is unset or none of them. */
static int env_mode(const char *var, const char *const *names, int n, int dflt)
{
	const char *v = getenv(var);
	for (int i = 0; v && i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	return dflt;
}

/* The attention mode SUPKIT_CUDA_ATTN names (mma when unset or empty); another
 * value (the kernel variants of dev/cuda are not in the backend) stops the
 * setup with a message naming it. */
static enum cuda_attn_mode attn_env(void)
{
	const char *v = getenv("SUPKIT_CUDA_ATTN");
	int m = env_mode("SUPKIT_CUDA_ATTN", attn_names, 2, CUDA_ATTN_MMA);
	if (v && *v && strcmp(v, attn_names[m]) != 0) {
		fprintf(stderr, "backend_cuda: init: SUPKIT_CUDA_ATTN: '%s' is not mma or f32\n", v);
		abort();
	}
	return (enum cuda_attn_mode)m;
}

static void cuda_init(void)
{
	if (g_cu.ready)
		return;
	int n = cuda_device_count();
	if (n < 1)
		bk_fail("init", "no CUDA device");
	CUDA_CK("init", cudaSetDevice(g_cu.dev));
	CUDA_CK("init", cudaStreamCreateWithFlags(&g_cu.st, cudaStreamNonBlocking));
	/* keep freed scratch in the pool instead of returning it at every sync */
	cudaMemPool_t pool;
	CUDA_CK("init", cudaDeviceGetDefaultMemPool(&pool, g_cu.dev));
	uint64_t thr = UINT64_MAX;
	CUDA_CK("init", cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr));
	BLAS_CK("init", cublasCreate(&g_cu.blas));
	BLAS_CK("init", cublasSetStream(g_cu.blas, g_cu.st));
	BLAS_CK("init", cublasSetPointerMode(g_cu.blas, CUBLAS_POINTER_MODE_HOST));
	/* the defaults: mma attention (head width 128; others run fp32), bf16 GEMMs */
	g_cu.attn = attn_env();
	CUDA_CK("init", cudaDeviceGetAttribute(&g_cu.async, cudaDevAttrConcurrentManagedAccess, g_cu.dev));
	g_cu.async = g_cu.async != 0;
	CUDA_CK("init", cudaHostAlloc((void **)&g_cu.bad, 3 * sizeof(int), cudaHostAllocMapped));
	g_cu.bad[0] = g_cu.bad[1] = g_cu.bad[2] = 0;
	g_cu.ready = 1;
	dev_sample();
}

cudaStream_t cuda_stream(void)
{
	cuda_init();
	return g_cu.st;
}

void *cuda_scratch_alloc(const char *op, size_t n)
{
	void *p = NULL;
	CUDA_CK(op, cudaMallocAsync(&p, n ? n : 1, cuda_stream()));
	g_cu.in_use += n;
	mem_note();
	return p;
}

void cuda_scratch_free(void *p, size_t n)
{
	if (!p)
		return;
	CUDA_CK("free", cudaFreeAsync(p, g_cu.st));
	g_cu.in_use -= n;
}

static void cc_drop(int i)
{
	g_cc.nstale -= g_cc.e[i].stale;
	cuda_scratch_free(g_cc.e[i].bf, (size_t)g_cc.e[i].n * 2);
	g_cc.e[i] = g_cc.e[--g_cc.n];
}

/* Forget every cast of an operand overlapping [p, p + bytes). */
static void cc_forget(const void *p, size_t bytes)
{
	const char *a = (const char *)p;
	for (int i = g_cc.n - 1; i >= 0; i--) {
		const struct ccast *c = &g_cc.e[i];
		if (a < c->p + (size_t)c->n * 4 && c->p < a + bytes)
			cc_drop(i);
	}
}

/* Keep bf as the cast of the n fp32 values at p; stale: those values were
 * never written (relu2_fwd_gemm), so a later fp32 read of them aborts. */
static void cc_put(const char *op, const void *p, int64_t n, void *bf, int stale)
{
	if (g_cc.n == g_cc.cap) {
		int cap = g_cc.cap ? 2 * g_cc.cap : 64;
		struct ccast *e = (struct ccast *)realloc(g_cc.e, (size_t)cap * sizeof *e);
		if (!e)
			bk_fail(op, "out of host memory");
		g_cc.e = e;
		g_cc.cap = cap;
	}
	g_cc.e[g_cc.n].p = (const char *)p;
	g_cc.e[g_cc.n].n = n;
	g_cc.e[g_cc.n].bf = bf;
	g_cc.e[g_cc.n].stale = stale;
	g_cc.nstale += stale;
	g_cc.n++;
}

/* Abort when [p, p + bytes) overlaps an output of relu2_fwd_gemm whose
 * fp32 values were never written and that is about to be read as fp32. */
static void cc_stale_check(const char *op, const void *p, size_t bytes)
{
	const char *a = (const char *)p;
	for (int i = 0; i < g_cc.n && g_cc.nstale > 0; i++)
		if (g_cc.e[i].stale && a < g_cc.e[i].p + (size_t)g_cc.e[i].n * 4 &&
		    g_cc.e[i].p < a + bytes)
			bk_fail(op, "reads the output of relu2_fwd_gemm, which only GEMMs may read");
}

static void cc_clear(void)
{
	while (g_cc.n > 0)
		cc_drop(g_cc.n - 1);
}

/* the embedding scatter's kept plan (below) */
static void dplan_drop(void);
static void dplan_forget(const void *p, size_t bytes);

static void c_scope(int begin)
{
	if (!begin)
		cuda_sync();   /* the host reads the pass's results next (backend.h scope) */
	cc_clear();
	dplan_drop();
	g_cc.on = begin != 0;
	g_cu.in_scope = begin != 0;
}

extern "C" int cuda_get_async(void)
{
	cuda_init();
	return g_cu.async;
}

/* ---- the C API ---- */

extern "C" int cuda_device_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError();
		return 0;
	}
	return n;
}

extern "C" int cuda_device_name(char *buf, size_t n)
{
	cudaDeviceProp pr;
	if (cuda_device_count() <= g_cu.dev || cudaGetDeviceProperties(&pr, g_cu.dev) != cudaSuccess) {
		cudaGetLastError();
		return -1;
	}
	snprintf(buf, n, "%s", pr.name);
	return 0;
}

extern "C" void cuda_set_matmul_mode(enum cuda_mm_mode mode)
{
	g_cu.mm = mode;
}

extern "C" void cuda_set_attn_mode(enum cuda_attn_mode mode)
{
	cuda_init();
	g_cu.attn = mode;
}

extern "C" enum cuda_attn_mode cuda_get_attn_mode(void)
{
	cuda_init();
	return g_cu.attn;
}

extern "C" enum cuda_mm_mode cuda_get_matmul_mode(void)
{
	cuda_init();
	return g_cu.mm;
}

extern "C" const char *cuda_attn_mode_name(enum cuda_attn_mode m)
{
	return (unsigned)m < sizeof attn_names / sizeof *attn_names ? attn_names[m] : "?";
}

extern "C" const char *cuda_matmul_mode_name(enum cuda_mm_mode m)
{
	return (unsigned)m < 3 ? mm_names[m] : "?";
}

/* The blocks of cuda_mem_alloc and their sizes, sorted by address, so
 * that an op finds that an operand is managed memory without asking the
 * driver (cudaPointerGetAttributes: a driver call per operand per op, some
 * 25,000 a depth-8 step, with the GPU idle meanwhile when ops wait), and
 * cuda_mem_free finds the size without reading managed memory on the host;
 * lookups counted while cuda_profile counts. */
static struct {
	const char **lo;   /* block starts, ascending */
	size_t *n;         /* their bytes (as asked: a block of 0 holds 1) */
	int cnt, cap;
	uint64_t fast, driver;
} g_reg;

/* the registry index of the block holding p, or -1 */
static int reg_find(const void *p)
{
	const char *c = (const char *)p;
	int a = 0, b = g_reg.cnt - 1, hit = -1;
	while (a <= b) {   /* the last block starting at or below p */
		int m = (a + b) / 2;
		if (g_reg.lo[m] <= c)
			hit = m, a = m + 1;
		else
			b = m - 1;
	}
	return hit >= 0 && c < g_reg.lo[hit] + (g_reg.n[hit] ? g_reg.n[hit] : 1) ? hit : -1;
}

static void reg_add(const char *lo, size_t n)
{
	if (g_reg.cnt == g_reg.cap) {
		int cap = g_reg.cap ? 2 * g_reg.cap : 64;
		const char **l = (const char **)realloc(g_reg.lo, (size_t)cap * sizeof *l);
		size_t *nn = l ? (size_t *)realloc(g_reg.n, (size_t)cap * sizeof *nn) : NULL;
		if (l)
			g_reg.lo = l;
		if (!l || !nn)
			bk_fail("alloc", "out of host memory");
		g_reg.n = nn;
		g_reg.cap = cap;
	}
	int i = g_reg.cnt;
	while (i > 0 && g_reg.lo[i - 1] > lo) {
		g_reg.lo[i] = g_reg.lo[i - 1];
		g_reg.n[i] = g_reg.n[i - 1];
		i--;
	}
	g_reg.lo[i] = lo;
	g_reg.n[i] = n;
	g_reg.cnt++;
}

/* drops the block starting at lo; returns its size */
static size_t reg_drop(const char *lo)
{
	int i = reg_find(lo);
	if (i < 0 || g_reg.lo[i] != lo)
		bk_fail("free", "not a block of cuda_mem_alloc");
	size_t n = g_reg.n[i];
	memmove(g_reg.lo + i, g_reg.lo + i + 1, (size_t)(g_reg.cnt - i - 1) * sizeof *g_reg.lo);
	memmove(g_reg.n + i, g_reg.n + i + 1, (size_t)(g_reg.cnt - i - 1) * sizeof *g_reg.n);
	g_reg.cnt--;
	return n;
}

/* p's memory type and device address: the registry's managed blocks, else
 * the driver's answer (Unregistered when it has none) */
static void ptr_attr(const void *p, cudaPointerAttributes *a)
{
	if (reg_find(p) >= 0) {
		g_reg.fast += g_prof.on;
		a->type = cudaMemoryTypeManaged;
		a->devicePointer = (void *)p;
		return;
	}
	g_reg.driver += g_prof.on;
	if (cudaPointerGetAttributes(a, p) != cudaSuccess) {
		cudaGetLastError();
		a->type = cudaMemoryTypeUnregistered;
		a->devicePointer = NULL;
	}
}

extern "C" void *cuda_mem_alloc(size_t n)
{
	cuda_init();
	char *p = NULL;
	size_t s = n ? n : 1;
	if (cudaMallocManaged((void **)&p, s, cudaMemAttachGlobal) != cudaSuccess) {
		cudaGetLastError();
		return NULL;
	}
	CUDA_CK("alloc", cudaMemsetAsync(p, 0, s, g_cu.st));
	CUDA_CK("alloc", cudaStreamSynchronize(g_cu.st));
	reg_add(p, n);
	g_cu.in_use += n;
	mem_note();
	dev_sample();
	return p;
}

extern "C" void cuda_mem_free(void *q)
{
	if (!q)
		return;
	cuda_sync();   /* the GPU is done with it */
	size_t n = reg_drop((const char *)q);
	cc_forget(q, n);
	dplan_forget(q, n);
	CUDA_CK("free", cudaFree(q));
	g_cu.in_use -= n;
}

extern "C" int cuda_mem_is_device(const void *p)
{
	if (!p)
		return 0;
	cudaPointerAttributes a;
	ptr_attr(p, &a);
	return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* After a stream synchronisation: the checks deferred to it. */
static void synced(void)
{
	static const char *const op[3] = { "embed_gather", "embed_scatter_add", "softcap_ce" };
	static const char *const what[3] = { "an index is outside the table",
					     "an index is outside the table",
					     "a target is not below the vocabulary size" };
	for (int i = 0; i < 3; i++)
		if (((volatile int *)g_cu.bad)[i]) {
			g_cu.bad[i] = 0;
			bk_fail(op[i], what[i]);
		}
}

extern "C" void cuda_sync(void)
{
	if (g_cu.ready) {
		CUDA_CK("sync", cudaStreamSynchronize(g_cu.st));
		synced();
		dplan_drop();   /* the host may write indices next */
	}
}

extern "C" void cuda_mem_stats(struct cuda_mem_stats *s)
{
	if (g_cu.ready)
		dev_sample();
	s->in_use = g_cu.in_use;
	s->peak = g_cu.peak;
	size_t fr = 0, tot = 0;
	s->device_used = 0;
	if (g_cu.ready && cudaMemGetInfo(&fr, &tot) == cudaSuccess)
		s->device_used = tot - fr;
	else
		cudaGetLastError();
	s->device_peak = g_cu.dev_peak;
	s->device_total = g_cu.dev_total;
}

/* ---- operand mapping: device/managed used in place, host staged ---- */

#define CTX_MAX 16

struct stage {
	const char *host;
	void *dev;
	size_t bytes;
	int out;
};

struct opctx {
	const char *op;
	struct stage s[CTX_MAX];
	int n;
	int wait;   /* the host reads a result when the op returns */
};

static void ctx_init(struct opctx *c, const char *op)
{
	cuda_init();
	c->op = op;
	c->n = 0;
	c->wait = 0;
	cuda_prof_begin();
}

/* The device address of bytes at p; out = 1 when the op writes them. */
static void *ctx_map(struct opctx *c, const void *p, size_t bytes, int out)
{
	if (!p || !bytes)
		return (void *)p;
	cudaPointerAttributes a;
	ptr_attr(p, &a);
	if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) {
		if (out && g_cc.n > 0)
			cc_forget(p, bytes);
		if (out)
			dplan_forget(p, bytes);
		return a.devicePointer ? a.devicePointer : (void *)p;
	}
	if (a.type == cudaMemoryTypeHost && a.devicePointer) {
		c->wait |= out;   /* pinned host output: read in place by the host */
		return a.devicePointer;
	}
	const char *h = (const char *)p;
	for (int i = 0; i < c->n; i++) {
		struct stage *s = &c->s[i];
		if (s->host == h && s->bytes == bytes) {
			s->out |= out;
			return s->dev;
		}
		if (h < s->host + s->bytes && s->host < h + bytes)
			bk_fail(c->op, "host operands overlap");
	}
	if (c->n == CTX_MAX)
		bk_fail(c->op, "too many host operands");
	struct stage *s = &c->s[c->n++];
	s->host = h;
	s->bytes = bytes;
	s->out = out;
	c->wait |= out;
	s->dev = cuda_scratch_alloc(c->op, bytes);
	CUDA_CK(c->op, cudaMemcpyAsync(s->dev, p, bytes, cudaMemcpyHostToDevice, g_cu.st));
	return s->dev;
}

/* Finish the op: copy staged outputs back, release the staging, wait for
 * the GPU unless the op may run on asynchronously: in a pass scope, on a
 * device with concurrent managed access, not profiling, and no result for
 * the host (a staged or pinned output, a returned value: c->wait).
 * CUDA_LAUNCH_BLOCKING=1 makes every launch wait (for debugging). */
static void ctx_done(struct opctx *c)
{
	CUDA_CK(c->op, cudaGetLastError());
	for (int i = 0; i < c->n; i++)
		if (c->s[i].out)
			CUDA_CK(c->op, cudaMemcpyAsync((void *)c->s[i].host, c->s[i].dev, c->s[i].bytes,
						       cudaMemcpyDeviceToHost, g_cu.st));
	for (int i = 0; i < c->n; i++)
		cuda_scratch_free(c->s[i].dev, c->s[i].bytes);
	if (c->wait || !g_cu.in_scope || !g_cu.async || g_prof.on) {
		CUDA_CK(c->op, cudaStreamSynchronize(g_cu.st));
		synced();
	}
	cuda_prof_end(c->op);
	c->n = 0;
	if (++g_cu.ops % 64 == 0)   /* the device's own figure, sampled */
		dev_sample();
}

static size_t tbytes(const struct tensor *t)
{
	return (size_t)tensor_numel(t) * tdtype_size(t->dtype);
}

static const float *fin(struct opctx *c, const struct tensor *t)
{
	bk_check(t->dtype == TD_F32, c->op);
	if (g_cc.nstale > 0)
		cc_stale_check(c->op, t->data, tbytes(t));
	return (const float *)ctx_map(c, t->data, tbytes(t), 0);
}

static float *fout(struct opctx *c, struct tensor *t)
{
	bk_check(t->dtype == TD_F32, c->op);
	return (float *)ctx_map(c, t->data, tbytes(t), 1);
}

/* bf16 operands (backend.h mlp_bf16): no cast is kept of them */
static const __nv_bfloat16 *bin(struct opctx *c, const struct tensor *t)
{
	bk_check(t->dtype == TD_BF16, c->op);
	return (const __nv_bfloat16 *)ctx_map(c, t->data, tbytes(t), 0);
}

static __nv_bfloat16 *bout(struct opctx *c, struct tensor *t)
{
	bk_check(t->dtype == TD_BF16, c->op);
	return (__nv_bfloat16 *)ctx_map(c, t->data, tbytes(t), 1);
}

static const int32_t *iin(struct opctx *c, const int32_t *idx, int64_t n)
{
	return (const int32_t *)ctx_map(c, idx, (size_t)n * sizeof(int32_t), 0);
}

/* A host-readable copy of n indices (tmp is set when one was made): device
 * and managed indices are copied (reading managed ones in place would move
 * their pages to the host, and back at the next kernel's touch). */
static const int32_t *idx_host(const char *op, const int32_t *idx, int64_t n, int32_t **tmp)
{
	*tmp = NULL;
	cudaPointerAttributes a;
	ptr_attr(idx, &a);
	if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
		return idx;
	*tmp = (int32_t *)malloc((size_t)(n ? n : 1) * sizeof(int32_t));
	if (!*tmp)
		bk_fail(op, "out of host memory");
	CUDA_CK(op, cudaMemcpyAsync(*tmp, idx, (size_t)n * sizeof(int32_t), cudaMemcpyDefault,
				    g_cu.st));
	CUDA_CK(op, cudaStreamSynchronize(g_cu.st));
	return *tmp;
}

/* ---- launch shapes; the kernels (backend_kernels.cuh) ---- */

#include "kernels/backend_kernels.cuh"

static unsigned grid_for(int64_t n, int bs)
{
	int64_t b = (n + bs - 1) / bs;
	if (b < 1)
		b = 1;
	if (b > (1 << 20))
		b = 1 << 20;
	return (unsigned)b;
}

/* blocks of NT threads, one warp per row */
static unsigned grid_rows(int64_t rows)
{
	int64_t b = (rows + NT / 32 - 1) / (NT / 32);
	bk_check(b < (int64_t)1 << 31, "rows");
	return (unsigned)(b < 1 ? 1 : b);
}

static int al16(const void *p)
{
	return ((uintptr_t)p & 15) == 0;
}

/* ---- the ops ---- */

static void c_zero(struct tensor *x)
{
	struct opctx c;
	ctx_init(&c, "zero");
	void *p = ctx_map(&c, x->data, tbytes(x), 1);   /* any dtype */
	CUDA_CK(c.op, cudaMemsetAsync(p, 0, tbytes(x), g_cu.st));
	ctx_done(&c);
}

static void c_axpby(struct tensor *y, double a, const struct tensor *x, double b)
{
	struct opctx c;
	ctx_init(&c, "axpby");
	bk_check(tensor_numel(x) == tensor_numel(y), c.op);
	int64_t n = tensor_numel(y);
	const float *px = fin(&c, x);
	float *py = fout(&c, y);
	enum axpby_mode mode = b == 0 ? AXPBY_SET : b == 1 ? AXPBY_ADD : AXPBY_BLEND;
	k_axpby<<<grid_for(n, NT), NT, 0, g_cu.st>>>(py, px, (float)a, (float)b, mode, n);
	ctx_done(&c);
}

/* k_dot_part's blocks for n elements: DOT_PER_THREAD a thread or more, at
 * most DOT_BLOCKS (a function of n alone, so a dot's sum order is fixed) */
static int dot_blocks(int64_t n)
{
	int64_t b = (n + (int64_t)NT * DOT_PER_THREAD - 1) / ((int64_t)NT * DOT_PER_THREAD);
	return b < 1 ? 1 : b > DOT_BLOCKS ? DOT_BLOCKS : (int)b;
}

static double c_dot(const struct tensor *x, const struct tensor *y)
{
	struct opctx c;
	ctx_init(&c, "dot");
	bk_check(tensor_numel(x) == tensor_numel(y), c.op);
	int64_t n = tensor_numel(x);
	const float *px = fin(&c, x), *py = fin(&c, y);
	int nb = dot_blocks(n);
	double *part = (double *)cuda_scratch_alloc(c.op, (size_t)(nb + 1) * sizeof(double));
	k_dot_part<<<nb, NT, 0, g_cu.st>>>(px, py, n, part);
	k_dot_final<<<1, NT, 0, g_cu.st>>>(part, nb, part + nb, NULL);
	double r = 0;
	CUDA_CK(c.op, cudaMemcpyAsync(&r, part + nb, sizeof r, cudaMemcpyDeviceToHost, g_cu.st));
	cuda_scratch_free(part, (size_t)(nb + 1) * sizeof(double));
	c.wait = 1;
	ctx_done(&c);
	return r;
}

static void c_dot_acc(struct tensor *acc, int64_t i, const struct tensor *x,
		      const struct tensor *y)
{
	struct opctx c;
	ctx_init(&c, "dot_acc");
	bk_check(tensor_numel(x) == tensor_numel(y) && i >= 0 && i < tensor_numel(acc), c.op);
	int64_t n = tensor_numel(x);
	const float *px = fin(&c, x), *py = fin(&c, y);
	float *pa = fout(&c, acc);
	int nb = dot_blocks(n);
	double *part = (double *)cuda_scratch_alloc(c.op, (size_t)nb * sizeof(double));
	k_dot_part<<<nb, NT, 0, g_cu.st>>>(px, py, n, part);
	k_dot_final<<<1, NT, 0, g_cu.st>>>(part, nb, NULL, pa + i);
	cuda_scratch_free(part, (size_t)nb * sizeof(double));
	ctx_done(&c);
}

static void c_cols_get(struct tensor *out, const struct tensor *x, int64_t c0, int accum)
{
	struct opctx c;
	ctx_init(&c, "cols_get");
	int64_t N = tensor_rows(x), C = tensor_cols(x), k = tensor_cols(out);
	bk_check(tensor_rows(out) == N && c0 >= 0 && c0 + k <= C, c.op);
	float *po = fout(&c, out);
	if (x->dtype == TD_BF16)   /* backend.h norm_bf16 */
		k_cols_get<__nv_bfloat16><<<grid_for(N * k, NT), NT, 0, g_cu.st>>>(
			po, bin(&c, x), N, C, k, c0, accum);
	else
		k_cols_get<float><<<grid_for(N * k, NT), NT, 0, g_cu.st>>>(po, fin(&c, x), N, C, k,
									   c0, accum);
	ctx_done(&c);
}

static void c_cols_add(struct tensor *out, const struct tensor *x, int64_t c0)
{
	struct opctx c;
	ctx_init(&c, "cols_add");
	int64_t N = tensor_rows(out), C = tensor_cols(out), k = tensor_cols(x);
	bk_check(tensor_rows(x) == N && c0 >= 0 && c0 + k <= C, c.op);
	const float *px = fin(&c, x);
	float *po = fout(&c, out);
	k_cols_add<<<grid_for(N * k, NT), NT, 0, g_cu.st>>>(po, px, N, C, k, c0);
	ctx_done(&c);
}

void cuda_cast_bf16(void *o, const float *x, int64_t n)
{
	int v4 = al16(x) && ((uintptr_t)o & 7) == 0;
	k_f32_to_bf16<<<grid_for(v4 ? n / 4 : n, NT), NT, 0, cuda_stream()>>>((__nv_bfloat16 *)o, x,
										n, v4);
}

/* A bf16 device copy of operand t (already mapped at p); *tmp to free
 * after the GEMM. Inside a pass scope the copy of a device-resident
 * operand is kept (g_cc) and reused until the operand is written; *cast
 * says whether a cast ran. */
static const void *as_bf16(struct opctx *c, const struct tensor *t, const void *p, void **tmp,
			   size_t *tmpn, int *cast)
{
	*tmp = NULL;
	*tmpn = 0;
	if (t->dtype == TD_BF16)
		return p;
	int64_t n = tensor_numel(t);
	int keep = g_cc.on && p == t->data;   /* device or managed: not staged */
	if (keep)   /* a kept cast of the operand, or of a tensor it is a part of (a chunk of hN) */
		for (int i = 0; i < g_cc.n; i++) {
			const struct ccast *e = &g_cc.e[i];
			const char *a = (const char *)t->data;
			if (a >= e->p && (a - e->p) % 4 == 0 && a + (size_t)n * 4 <= e->p + (size_t)e->n * 4) {
				g_cc.reused += g_prof.on;
				return (const __nv_bfloat16 *)e->bf + (a - e->p) / 4;
			}
		}
	if (g_cc.nstale > 0)   /* a part of a cast-only output with no cast of its own */
		cc_stale_check(c->op, t->data, (size_t)n * 4);
	void *bf = cuda_scratch_alloc(c->op, (size_t)n * 2);
	cuda_cast_bf16(bf, (const float *)p, n);
	*cast = 1;
	g_cc.made += g_prof.on;
	if (keep) {
		cc_put(c->op, t->data, n, bf, 0);
		return bf;
	}
	*tmp = bf;
	*tmpn = (size_t)n * 2;
	return bf;
}

/* For an op whose fp32 output t (mapped at p, after ctx_map has dropped
 * its old casts) GEMMs read: inside a pass scope with bf16 GEMMs, a bf16
 * buffer kept as t's cast, for the op to fill with its output rounded to
 * nearest even (the GEMMs then find it); NULL otherwise. stale: the op
 * writes the cast alone (cc_put). */
static __nv_bfloat16 *cc_make(struct opctx *c, const struct tensor *t, const void *p, int stale)
{
	if (!g_cc.on || g_cu.mm != CUDA_MM_BF16 || t->dtype != TD_F32 || p != t->data)
		return NULL;
	int64_t n = tensor_numel(t);
	void *bf = cuda_scratch_alloc(c->op, (size_t)n * 2);
	cc_put(c->op, t->data, n, bf, stale);
	g_cc.made += g_prof.on;
	return (__nv_bfloat16 *)bf;
}

static __nv_bfloat16 *cc_fresh(struct opctx *c, const struct tensor *t, const void *p)
{
	return cc_make(c, t, p, 0);
}

/* out (M,N) = op(a) (M,K) op(b) (K,N): the shapes agree, fit cuBLAS's
 * int, and the dtypes are fp32 or bf16; ac, bc: a's and b's columns (their
 * leading dimensions) */
static void mm_dims(const char *op, const struct tensor *out, const struct tensor *a,
		    const struct tensor *b, int ta, int tb, int64_t *M, int64_t *N, int64_t *K,
		    int64_t *ac, int64_t *bc)
{
	*M = tensor_rows(out), *N = tensor_cols(out);
	int64_t ar = tensor_rows(a), br = tensor_rows(b);
	*ac = tensor_cols(a), *bc = tensor_cols(b);
	*K = ta ? ar : *ac;
	bk_check((ta ? *ac : ar) == *M && (tb ? br : *bc) == *N && (tb ? *bc : br) == *K, op);
	bk_check(*M < INT32_MAX && *N < INT32_MAX && *K < INT32_MAX && *ac < INT32_MAX &&
		 *bc < INT32_MAX, op);
	bk_check((out->dtype == TD_F32 || out->dtype == TD_BF16) &&
		 (a->dtype == TD_F32 || a->dtype == TD_BF16) &&
		 (b->dtype == TD_F32 || b->dtype == TD_BF16), op);
}

/* Row-major out (M,N) = alpha op(a) op(b) + beta out, as the column-major
 * product out^T = op(b)^T op(a)^T (no data movement). */
static void c_matmul(struct tensor *out, const struct tensor *a, const struct tensor *b, int ta,
		     int tb, double alpha, double beta)
{
	struct opctx c;
	ctx_init(&c, "matmul");
	int64_t M, N, K, ac, bc;
	mm_dims(c.op, out, a, b, ta, tb, &M, &N, &K, &ac, &bc);
	const void *pa = ctx_map(&c, a->data, tbytes(a), 0);
	const void *pb = ctx_map(&c, b->data, tbytes(b), 0);
	void *po = ctx_map(&c, out->data, tbytes(out), 1);
	float fa = (float)alpha, fb = (float)beta;
	cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	int any_bf = a->dtype == TD_BF16 || b->dtype == TD_BF16 || out->dtype == TD_BF16;
	cudaDataType_t ct = out->dtype == TD_BF16 ? CUDA_R_16BF : CUDA_R_32F;
	if (M == 0 || N == 0) {
		ctx_done(&c);
		return;
	}
	if (!any_bf && g_cu.mm != CUDA_MM_BF16) {
		cublasComputeType_t comp = g_cu.mm == CUDA_MM_F32 ? CUBLAS_COMPUTE_32F
								   : CUBLAS_COMPUTE_32F_FAST_16BF;
		BLAS_CK(c.op, cublasGemmEx(g_cu.blas, ob, oa, (int)N, (int)M, (int)K, &fa, pb,
					   CUDA_R_32F, (int)bc, pa, CUDA_R_32F, (int)ac, &fb, po, ct,
					   (int)N, comp, CUBLAS_GEMM_DEFAULT));
	} else {
		void *ta_ = NULL, *tb_ = NULL;
		size_t na = 0, nb = 0;
		int cast = 0;
		const void *qa = as_bf16(&c, a, pa, &ta_, &na, &cast);
		const void *qb = as_bf16(&c, b, pb, &tb_, &nb, &cast);
		if (g_prof.on && cast) {   /* profiling: the casts on their own line */
			CUDA_CK(c.op, cudaStreamSynchronize(g_cu.st));
			cuda_prof_end("matmul: fp32->bf16 casts");
			cuda_prof_begin();
		}
		BLAS_CK(c.op, cublasGemmEx(g_cu.blas, ob, oa, (int)N, (int)M, (int)K, &fa, qb,
					   CUDA_R_16BF, (int)bc, qa, CUDA_R_16BF, (int)ac, &fb, po, ct,
					   (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		cuda_scratch_free(ta_, na);
		cuda_scratch_free(tb_, nb);
	}
	ctx_done(&c);
}

/* backend.h matmul_n: n products of one shape as one batched GEMM
 * (cublasGemmBatchedEx over arrays of the operands' bf16 copies) where the
 * GEMMs run in bf16 and the operands agree in shape and dtype; else n
 * matmul calls.
 * A shared a (the same tensor for every i) is cast once. */
#define MM_N_MAX 4
static void c_matmul_n(int n, struct tensor *const *out, const struct tensor *const *a,
		       const struct tensor *const *b, int ta, int tb, double alpha, double beta)
{
	bk_check(n >= 1 && n <= MM_N_MAX, "matmul_n");
	int same = 1;
	for (int i = 1; i < n; i++) {
		const struct tensor *t[3][2] = { { out[i], out[0] }, { a[i], a[0] },
						 { b[i], b[0] } };
		for (int j = 0; j < 3; j++)
			same &= t[j][0]->dtype == t[j][1]->dtype &&
				tensor_rows(t[j][0]) == tensor_rows(t[j][1]) &&
				tensor_cols(t[j][0]) == tensor_cols(t[j][1]);
	}
	int any_bf = a[0]->dtype == TD_BF16 || b[0]->dtype == TD_BF16 || out[0]->dtype == TD_BF16;
	if (n == 1 || !same || (!any_bf && g_cu.mm != CUDA_MM_BF16)) {
		for (int i = 0; i < n; i++)
			c_matmul(out[i], a[i], b[i], ta, tb, alpha, beta);
		return;
	}
	struct opctx c;
	ctx_init(&c, "matmul");
	int64_t M, N, K, ac, bc;
	mm_dims(c.op, out[0], a[0], b[0], ta, tb, &M, &N, &K, &ac, &bc);
	const void *pa[MM_N_MAX], *pb[MM_N_MAX];
	void *po[MM_N_MAX];
	for (int i = 0; i < n; i++) {
		pa[i] = ctx_map(&c, a[i]->data, tbytes(a[i]), 0);
		pb[i] = ctx_map(&c, b[i]->data, tbytes(b[i]), 0);
	}
	for (int i = 0; i < n; i++)
		po[i] = ctx_map(&c, out[i]->data, tbytes(out[i]), 1);
	if (M == 0 || N == 0) {
		ctx_done(&c);
		return;
	}
	/* the bf16 operands, then the pointer arrays (B's, A's, C's: the
	 * column-major product out^T = op(b)^T op(a)^T, as c_matmul) */
	const void *ptr[3 * MM_N_MAX];
	void *tmp[2 * MM_N_MAX];
	size_t tmpn[2 * MM_N_MAX];
	int cast = 0;
	for (int i = 0; i < n; i++) {
		tmp[2 * i] = tmp[2 * i + 1] = NULL;
		tmpn[2 * i] = tmpn[2 * i + 1] = 0;
		ptr[n + i] = i && a[i]->data == a[0]->data ? ptr[n]
			   : as_bf16(&c, a[i], pa[i], &tmp[2 * i], &tmpn[2 * i], &cast);
		ptr[i] = i && b[i]->data == b[0]->data ? ptr[0]
		       : as_bf16(&c, b[i], pb[i], &tmp[2 * i + 1], &tmpn[2 * i + 1], &cast);
		ptr[2 * n + i] = po[i];
	}
	if (g_prof.on && cast) {   /* profiling: the casts on their own line */
		CUDA_CK(c.op, cudaStreamSynchronize(g_cu.st));
		cuda_prof_end("matmul: fp32->bf16 casts");
		cuda_prof_begin();
	}
	size_t pbytes = (size_t)(3 * n) * sizeof(void *);
	void **dp = (void **)cuda_scratch_alloc(c.op, pbytes);
	CUDA_CK(c.op, cudaMemcpyAsync(dp, ptr, pbytes, cudaMemcpyHostToDevice, g_cu.st));
	float fa = (float)alpha, fb = (float)beta;
	cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	cudaDataType_t ct = out[0]->dtype == TD_BF16 ? CUDA_R_16BF : CUDA_R_32F;
	BLAS_CK(c.op, cublasGemmBatchedEx(g_cu.blas, ob, oa, (int)N, (int)M, (int)K, &fa,
					  (const void *const *)dp, CUDA_R_16BF, (int)bc,
					  (const void *const *)(dp + n), CUDA_R_16BF, (int)ac, &fb,
					  dp + 2 * n, ct, (int)N, n, CUBLAS_COMPUTE_32F,
					  CUBLAS_GEMM_DEFAULT));
	cuda_scratch_free(dp, pbytes);
	for (int i = 0; i < 2 * n; i++)
		cuda_scratch_free(tmp[i], tmpn[i]);
	ctx_done(&c);
}

/* An RMSNorm's output: bf16 alone (backend.h norm_bf16: *po NULL), or
 * fp32 at *po and (a GEMM operand: a, m, hN) its kept cast in *ob */
static void norm_out(struct opctx *c, struct tensor *out, float **po, __nv_bfloat16 **ob)
{
	*po = NULL;
	if (out->dtype == TD_BF16) {
		*ob = bout(c, out);
	} else {
		*po = fout(c, out);
		*ob = cc_fresh(c, out, *po);
	}
}

static void c_rmsnorm_fwd(struct tensor *out, struct tensor *rstd, const struct tensor *x,
			  double eps)
{
	struct opctx c;
	ctx_init(&c, "rmsnorm_fwd");
	int64_t N = tensor_rows(x), C = tensor_cols(x);
	bk_check(tensor_numel(out) == tensor_numel(x) && tensor_numel(rstd) == N, c.op);
	const float *px = fin(&c, x);
	float *pr = fout(&c, rstd), *po;
	__nv_bfloat16 *ob;
	norm_out(&c, out, &po, &ob);
	k_rms_fwd<<<grid_rows(N), NT, 0, g_cu.st>>>(po, ob, pr, px, N, C, eps);
	ctx_done(&c);
}

/* backend.h mix_rmsnorm_fwd: one kernel (k_mix_rms_fwd) */
static void c_mix_rmsnorm_fwd(struct tensor *x, struct tensor *out, struct tensor *rstd,
			      const struct tensor *xin, const struct tensor *x0,
			      const struct tensor *x0w, const double *cf, double eps)
{
	struct opctx c;
	ctx_init(&c, "mix_rmsnorm_fwd");
	int64_t N = tensor_rows(x), C = tensor_cols(x), n = tensor_numel(x);
	bk_check(tensor_numel(xin) == n && tensor_numel(x0) == n && (!x0w || tensor_numel(x0w) == n) &&
		 tensor_numel(out) == n && tensor_numel(rstd) == N, c.op);
	const float *pi = fin(&c, xin), *p0 = fin(&c, x0), *pw = x0w ? fin(&c, x0w) : NULL;
	float *px = fout(&c, x), *pr = fout(&c, rstd), *po;
	__nv_bfloat16 *ob;
	norm_out(&c, out, &po, &ob);
	k_mix_rms_fwd<<<grid_rows(N), NT, 0, g_cu.st>>>(px, po, ob, pr, pi, p0, pw, (float)cf[0],
							 (float)cf[1], x0w ? (float)cf[2] : 0.0f,
							 N, C, eps);
	ctx_done(&c);
}

static void c_rmsnorm_bwd(struct tensor *dx, const struct tensor *dout, const struct tensor *out,
			  const struct tensor *rstd, int accum)
{
	struct opctx c;
	ctx_init(&c, "rmsnorm_bwd");
	int64_t N = tensor_rows(out), C = tensor_cols(out);
	bk_check(tensor_numel(dx) == tensor_numel(out) && tensor_numel(dout) == tensor_numel(out) &&
		 tensor_numel(rstd) == N, c.op);
	const float *pd = fin(&c, dout), *pr = fin(&c, rstd);
	float *px = fout(&c, dx);
	__nv_bfloat16 *ob = cc_fresh(&c, dx, px);    /* dx: the next GEMMs' operand */
	if (out->dtype == TD_BF16)   /* backend.h norm_bf16 */
		k_rms_bwd<__nv_bfloat16><<<grid_rows(N), NT, 0, g_cu.st>>>(px, ob, pd, bin(&c, out),
									    pr, N, C, accum);
	else
		k_rms_bwd<float><<<grid_rows(N), NT, 0, g_cu.st>>>(px, ob, pd, fin(&c, out), pr, N,
								    C, accum);
	ctx_done(&c);
}

/* backend.h mix_bwd: one pass over the elements (k_mix_bwd, on k_dot_part's
 * grid) and a k_dot_final a gradient entry. The new dx's bf16 cast is kept
 * (the next layer's GEMMs read dx first). */
static void c_mix_bwd(struct tensor *dx, struct tensor *dx0, struct tensor *dx0w,
		      struct tensor *g, int64_t gi, const struct tensor *xin,
		      const struct tensor *x0, const struct tensor *x0w, const double *cf)
{
	int nk = x0w ? 3 : 2;
	struct opctx c;
	ctx_init(&c, "mix_bwd");
	int64_t n = tensor_numel(dx);
	bk_check(tensor_numel(xin) == n && tensor_numel(x0) == n && tensor_numel(dx0) == n &&
		 (!x0w || (tensor_numel(x0w) == n && tensor_numel(dx0w) == n)), c.op);
	float *pg[3] = { NULL, NULL, NULL };
	for (int k = 0; k < nk; k++) {
		bk_check(gi >= 0 && gi < tensor_numel(&g[k]), c.op);
		pg[k] = fout(&c, &g[k]);
	}
	const float *pi = fin(&c, xin), *p0 = fin(&c, x0), *pw = x0w ? fin(&c, x0w) : NULL;
	float *pd0 = fout(&c, dx0), *pdw = x0w ? fout(&c, dx0w) : NULL;
	float *pdx = fout(&c, dx);
	__nv_bfloat16 *ob = cc_fresh(&c, dx, pdx);
	int nb = dot_blocks(n);
	double *part = (double *)cuda_scratch_alloc(c.op, (size_t)(3 * nb) * sizeof(double));
	k_mix_bwd<<<nb, NT, 0, g_cu.st>>>(pdx, ob, pd0, pdw, pi, p0, pw, (float)cf[0], (float)cf[1],
					   x0w ? (float)cf[2] : 0.0f, n, part);
	for (int k = 0; k < nk; k++)
		k_dot_final<<<1, NT, 0, g_cu.st>>>(part + (size_t)k * nb, nb, NULL, pg[k] + gi);
	cuda_scratch_free(part, (size_t)(3 * nb) * sizeof(double));
	ctx_done(&c);
}

static void c_rmsnorm_ref_fwd(struct tensor *out, struct tensor *r, const struct tensor *x,
			      const struct tensor *s, double eps)
{
	struct opctx c;
	ctx_init(&c, "rmsnorm_ref_fwd");
	int64_t N = tensor_rows(x), C = tensor_cols(x);
	bk_check(tensor_numel(out) == tensor_numel(x) && tensor_numel(s) == tensor_numel(x) &&
		 tensor_numel(r) == N, c.op);
	const float *px = fin(&c, x), *ps = fin(&c, s);
	float *po = fout(&c, out), *pr = fout(&c, r);
	k_rms_ref_fwd<<<grid_rows(N), NT, 0, g_cu.st>>>(po, pr, px, ps, N, C, eps);
	ctx_done(&c);
}

static void c_rmsnorm_ref_bwd(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
			      const struct tensor *x, const struct tensor *s,
			      const struct tensor *r, int accum)
{
	struct opctx c;
	ctx_init(&c, "rmsnorm_ref_bwd");
	int64_t N = tensor_rows(x), C = tensor_cols(x);
	bk_check(tensor_numel(dx) == tensor_numel(x) && tensor_numel(ds) == tensor_numel(x) &&
		 tensor_numel(dout) == tensor_numel(x) && tensor_numel(s) == tensor_numel(x) &&
		 tensor_numel(r) == N, c.op);
	const float *pdy = fin(&c, dout), *px = fin(&c, x), *ps = fin(&c, s), *pr = fin(&c, r);
	float *pdx = fout(&c, dx), *pds = fout(&c, ds);
	k_rms_ref_bwd<<<grid_rows(N), NT, 0, g_cu.st>>>(pdx, pds, pdy, px, ps, pr, N, C, accum);
	ctx_done(&c);
}

static void rope_apply(const char *op, struct tensor *x, const struct tensor *cs,
		       const struct tensor *sn, int64_t T, float sgn)
{
	struct opctx c;
	ctx_init(&c, op);
	bk_check(x->ndim >= 2 && T > 0, op);
	int64_t D = x->shape[x->ndim - 1], H = x->shape[x->ndim - 2];
	int64_t N = tensor_numel(x) / (H * D);
	bk_check(D % 2 == 0 && tensor_numel(x) % (T * H * D) == 0, op);
	bk_check(tensor_cols(cs) == D / 2 && tensor_rows(cs) >= T && tensor_numel(sn) ==
		 tensor_numel(cs), op);
	const float *pc = fin(&c, cs), *ps = fin(&c, sn);
	float *px = fout(&c, x);
	k_rope<<<grid_for(N * H * (D / 2), NT), NT, 0, g_cu.st>>>(px, pc, ps, N, H, D, T, sgn);
	ctx_done(&c);
}

static void c_rope_fwd(struct tensor *x, const struct tensor *cs, const struct tensor *sn,
		       int64_t T)
{
	rope_apply("rope_fwd", x, cs, sn, T, 1);
}

static void c_rope_bwd(struct tensor *dx, const struct tensor *cs, const struct tensor *sn,
		       int64_t T)
{
	rope_apply("rope_bwd", dx, cs, sn, T, -1);
}

/* ds[k] += sum over the N rows of d[n][k] * x[n][k] (K columns): fp64
 * partial sums over fixed blocks of MC_ROWS rows, then added in block
 * order (deterministic). */
template <typename G, typename E>   /* G: d's storage, E: x's */
static void colsum_dot(struct opctx *c, float *ds, const G *d, const E *x, int64_t N, int64_t K)
{
	if (N <= 0)
		return;
	int64_t nch = (N + MC_ROWS - 1) / MC_ROWS;
	bk_check(nch < 65536, c->op);
	size_t pb = (size_t)(nch * K) * sizeof(double);
	double *part = (double *)cuda_scratch_alloc(c->op, pb);
	dim3 gr((unsigned)((K + NT - 1) / NT), (unsigned)nch);
	k_mul_cols_part<G, E><<<gr, NT, 0, g_cu.st>>>(part, d, x, N, K);
	k_mul_cols_sum<<<grid_for(K, NT), NT, 0, g_cu.st>>>(ds, part, nch, K);
	cuda_scratch_free(part, pb);
}

/* x (..., H, D): D even and at most 128 (two pairs a lane), whole sequences
 * of T, rstd one value a (token, head); cos, sin (T' >= T, D/2). */
static void rope_rms_dims(const char *op, const struct tensor *x, const struct tensor *rstd,
			  const struct tensor *cs, const struct tensor *sn, int64_t T, int64_t *rows,
			  int64_t *H, int64_t *D)
{
	bk_check(x->ndim >= 2 && T > 0, op);
	*D = tensor_cols(x);
	*H = x->shape[x->ndim - 2];
	*rows = tensor_numel(x) / *D;
	bk_check(*D % 2 == 0 && *D <= 64 * ROPE_RMS_J && tensor_numel(x) % (T * *H * *D) == 0 &&
		 tensor_numel(rstd) == *rows, op);
	bk_check(tensor_cols(cs) == *D / 2 && tensor_rows(cs) >= T && tensor_numel(sn) ==
		 tensor_numel(cs), op);
}

static void c_rope_rmsnorm_fwd(struct tensor *out, struct tensor *rstd, struct tensor *xn,
			       const struct tensor *x, const struct tensor *sc,
			       const struct tensor *cs, const struct tensor *sn, int64_t T,
			       double eps)
{
	struct opctx c;
	ctx_init(&c, "rope_rmsnorm_fwd");
	int64_t rows, H, D;
	rope_rms_dims(c.op, x, rstd, cs, sn, T, &rows, &H, &D);
	bk_check(tensor_numel(out) == tensor_numel(x) && tensor_cols(out) == D && !sc == !xn &&
		 (!sc || (tensor_numel(sc) == H * D && tensor_numel(xn) == tensor_numel(x) &&
			  xn->data != out->data)), c.op);
	const float *pc = fin(&c, cs), *ps = fin(&c, sn), *pk = sc ? fin(&c, sc) : NULL;
	float *pr = fout(&c, rstd);
	if (x->dtype == TD_BF16) {   /* backend.h attn_bf16: x, out, xn bf16 */
		bk_check(out->dtype == TD_BF16 && (!xn || xn->dtype == TD_BF16), c.op);
		const __nv_bfloat16 *px = bin(&c, x);
		__nv_bfloat16 *po = bout(&c, out), *pn = sc ? bout(&c, xn) : NULL;
		k_rope_rms_fwd<__nv_bfloat16><<<grid_rows(rows), NT, 0, g_cu.st>>>(
			po, NULL, pr, pn, px, pk, pc, ps, rows, H, D, T, eps);
		ctx_done(&c);
		return;
	}
	const float *px = fin(&c, x);
	float *po = fout(&c, out), *pn = sc ? fout(&c, xn) : NULL;
	/* out is q or k: the mma attention's operand (attn_qkv_casts finds the copy) */
	__nv_bfloat16 *ob = attn_has_cast(g_cu.attn, (int)D) ? cc_fresh(&c, out, po) : NULL;
	k_rope_rms_fwd<float><<<grid_rows(rows), NT, 0, g_cu.st>>>(po, ob, pr, pn, px, pk, pc, ps,
								   rows, H, D, T, eps);
	ctx_done(&c);
}

/* rope_rmsnorm_bwd on xn's values (py, mapped; E: its storage) with dout
 * and dx in G (float, or bf16: backend.h attn_bf16) */
template <typename E, typename G>
static void rope_rms_bwd_run(struct opctx *c, G *px, const G *pd, struct tensor *ds,
			     const E *py, const struct tensor *rstd, const struct tensor *sc,
			     const struct tensor *cs, const struct tensor *sn, int64_t rows,
			     int64_t H, int64_t D, int64_t T, __nv_bfloat16 *ob)
{
	const float *pr = fin(c, rstd);
	const float *pc = fin(c, cs), *ps = fin(c, sn), *pk = sc ? fin(c, sc) : NULL;
	/* ds first: dx may alias dout (same stream, so in order) */
	if (ds)
		colsum_dot(c, fout(c, ds), pd, py, rows / H, H * D);
	k_rope_rms_bwd<E, G><<<grid_rows(rows), NT, 0, g_cu.st>>>(px, ob, pd, py, pr, pk, pc, ps,
								   rows, H, D, T);
}

template <typename E>
static void rope_rms_bwd_dx(struct opctx *c, struct tensor *dx, struct tensor *ds,
			    const struct tensor *dout, const E *py, const struct tensor *rstd,
			    const struct tensor *sc, const struct tensor *cs,
			    const struct tensor *sn, int64_t rows, int64_t H, int64_t D, int64_t T)
{
	if (dout->dtype == TD_BF16) {   /* backend.h attn_bf16: the attention's bf16 dq, dk */
		const __nv_bfloat16 *pd = bin(c, dout);
		rope_rms_bwd_run(c, bout(c, dx), pd, ds, py, rstd, sc, cs, sn, rows, H, D, T,
				 (__nv_bfloat16 *)NULL);
		return;
	}
	const float *pd = fin(c, dout);
	float *px = fout(c, dx);
	__nv_bfloat16 *ob = cc_fresh(c, dx, px);    /* dq, dk: GEMM operands */
	rope_rms_bwd_run(c, px, pd, ds, py, rstd, sc, cs, sn, rows, H, D, T, ob);
}

static void c_rope_rmsnorm_bwd(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
			       const struct tensor *xn, const struct tensor *rstd,
			       const struct tensor *sc, const struct tensor *cs,
			       const struct tensor *sn, int64_t T)
{
	struct opctx c;
	ctx_init(&c, "rope_rmsnorm_bwd");
	int64_t rows, H, D;
	rope_rms_dims(c.op, xn, rstd, cs, sn, T, &rows, &H, &D);
	bk_check(tensor_numel(dx) == tensor_numel(xn) && tensor_numel(dout) == tensor_numel(xn) &&
		 (!sc || tensor_numel(sc) == H * D) && (!ds || (sc && tensor_numel(ds) == H * D)),
		 c.op);
	if (dout->dtype != dx->dtype || (dout->dtype == TD_BF16 && xn->dtype != TD_BF16))
		bk_fail(c.op, "dout and dx must share a dtype, bf16 only beside a bf16 xn");
	if (xn->dtype == TD_BF16)   /* backend.h attn_bf16: the forward's bf16 out */
		rope_rms_bwd_dx(&c, dx, ds, dout, bin(&c, xn), rstd, sc, cs, sn, rows, H, D, T);
	else
		rope_rms_bwd_dx(&c, dx, ds, dout, fin(&c, xn), rstd, sc, cs, sn, rows, H, D, T);
	ctx_done(&c);
}

static void attn_dims(const char *op, const struct tensor *q, int *B, int *T, int *H, int *D)
{
	bk_check(q->ndim == 4, op);
	for (int i = 0; i < 4; i++)
		bk_check(q->shape[i] > 0 && q->shape[i] < INT32_MAX, op);
	*B = (int)q->shape[0];
	*T = (int)q->shape[1];
	*H = (int)q->shape[2];
	*D = (int)q->shape[3];
	if (*D > ATTN_MAX_D)
		bk_fail(op, "head width above 128");
}

/* The bf16 copies of q, k, v that the mma attention reads (attn_has_cast
 * modes), from the pass's cast store, into b: inside a pass scope with the
 * cast reuse on, the forward makes and keeps them and the backward finds
 * them (q, k, v are not written in between: about 6 bytes an element saved,
 * three tensors, twice a layer, for 6 bytes an element kept); NULL
 * otherwise, or when one of q, k, v overlaps one of the op's outputs
 * (out[0..nout-1]), and the kernels cast q, k, v themselves. */
static const void *const *attn_qkv_casts(struct opctx *c, const void **b,
					  const struct tensor *const *in, const float *const *pin,
					  const struct tensor *const *out, int nout)
{
	if (!g_cc.on || !attn_has_cast(g_cu.attn, (int)tensor_cols(in[0])))
		return NULL;
	for (int i = 0; i < 3; i++) {
		if (pin[i] != in[i]->data)   /* staged host memory: no kept cast */
			return NULL;
		const char *a = (const char *)in[i]->data;
		for (int j = 0; j < nout; j++) {
			const char *o = (const char *)out[j]->data;
			if (a < o + tbytes(out[j]) && o < a + tbytes(in[i]))
				return NULL;
		}
	}
	for (int i = 0; i < 3; i++) {
		void *tmp;   /* NULL: in a scope an unstaged operand's cast is kept */
		size_t tn;
		int cast = 0;
		b[i] = as_bf16(c, in[i], pin[i], &tmp, &tn, &cast);
	}
	return b;
}

/* q, k, v and y in bf16 (backend.h attn_bf16): all four or none, and only
 * where the mma kernels run (they read and write bf16) */
static int attn_b16(const char *op, const struct tensor *q, const struct tensor *k,
		    const struct tensor *v, const struct tensor *y, int D)
{
	int n = (q->dtype == TD_BF16) + (k->dtype == TD_BF16) + (v->dtype == TD_BF16) +
		(y->dtype == TD_BF16);
	if (n == 0)
		return 0;
	if (n != 4)
		bk_fail(op, "q, k, v and y must be all bf16 or all fp32");
	if (!attn_has_cast(g_cu.attn, D))
		bk_fail(op, "bf16 q, k, v, y need the mma attention (SUPKIT_CUDA_ATTN=mma) "
			    "and head width 128");
	return 1;
}

static void c_attn_fwd(struct tensor *y, struct tensor *lse, const struct tensor *q,
		       const struct tensor *k, const struct tensor *v, int64_t window, double scale)
{
	struct opctx c;
	ctx_init(&c, "attn_fwd");
	int B, T, H, D;
	attn_dims(c.op, q, &B, &T, &H, &D);
	int64_t n = tensor_numel(q);
	bk_check(tensor_numel(k) == n && tensor_numel(v) == n && tensor_numel(y) == n &&
		 tensor_numel(lse) == (int64_t)B * H * T && window >= 0, c.op);
	const struct attn_shape sh = { B, T, H, D, window, (float)scale, g_cu.attn };
	float *pl = fout(&c, lse);
	if (attn_b16(c.op, q, k, v, y, D)) {   /* backend.h attn_bf16 */
		const void *b[3] = { bin(&c, q), bin(&c, k), bin(&c, v) };
		attn_fwd_launch(&sh, NULL, bout(&c, y), pl, NULL, NULL, NULL, b);
		ctx_done(&c);
		return;
	}
	const float *pq = fin(&c, q), *pk = fin(&c, k), *pv = fin(&c, v);
	float *py = fout(&c, y);
	void *ob = attn_has_cast(g_cu.attn, D) ? cc_fresh(&c, y, py) : NULL;   /* y: proj's */
	const struct tensor *in[3] = { q, k, v }, *out[2] = { y, lse };
	const float *pin[3] = { pq, pk, pv };
	const void *b[3];
	const void *const *qkvb = attn_qkv_casts(&c, b, in, pin, out, 2);
	attn_fwd_launch(&sh, py, ob, pl, pq, pk, pv, qkvb);
	ctx_done(&c);
}

static void c_attn_bwd(struct tensor *dq, struct tensor *dk, struct tensor *dv,
		       const struct tensor *dy, const struct tensor *q, const struct tensor *k,
		       const struct tensor *v, const struct tensor *y, const struct tensor *lse,
		       int64_t window, double scale)
{
	struct opctx c;
	ctx_init(&c, "attn_bwd");
	int B, T, H, D;
	attn_dims(c.op, q, &B, &T, &H, &D);
	int64_t n = tensor_numel(q);
	bk_check(tensor_numel(dq) == n && tensor_numel(dk) == n && tensor_numel(dv) == n &&
		 tensor_numel(dy) == n && tensor_numel(k) == n && tensor_numel(v) == n &&
		 tensor_numel(y) == n, c.op);
	bk_check(tensor_numel(lse) == (int64_t)B * H * T && window >= 0, c.op);
	const struct attn_shape sh = { B, T, H, D, window, (float)scale, g_cu.attn };
	const float *pl = fin(&c, lse);
	if (attn_b16(c.op, q, k, v, y, D)) {   /* backend.h attn_bf16 */
		const void *b[3] = { bin(&c, q), bin(&c, k), bin(&c, v) };
		const void *yb = bin(&c, y);
		const float *pdy = dy->dtype == TD_BF16 ? NULL : fin(&c, dy);
		const void *dyb = pdy ? NULL : bin(&c, dy);   /* the model's, as autocast's */
		int nb = (dq->dtype == TD_BF16) + (dk->dtype == TD_BF16) + (dv->dtype == TD_BF16);
		if (nb == 3) {   /* dq, dk, dv in bf16 too, as autocast's: rounded once */
			void *gb[3] = { bout(&c, dq), bout(&c, dk), bout(&c, dv) };
			attn_bwd_launch(&sh, NULL, NULL, NULL, gb, pdy, dyb, NULL, NULL, NULL, NULL,
					yb, pl, b);
			ctx_done(&c);
			return;
		}
		if (nb != 0)
			bk_fail(c.op, "dq, dk and dv must be all bf16 or all fp32");
		float *pdq = fout(&c, dq), *pdk = fout(&c, dk), *pdv = fout(&c, dv);
		void *gb[3] = { NULL, NULL, cc_fresh(&c, dv, pdv) };   /* dv: the GEMMs' */
		attn_bwd_launch(&sh, pdq, pdk, pdv, gb, pdy, dyb, NULL, NULL, NULL, NULL, yb, pl, b);
		ctx_done(&c);
		return;
	}
	const float *pq = fin(&c, q), *pk = fin(&c, k), *pv = fin(&c, v), *py = fin(&c, y);
	const float *pdy = fin(&c, dy);
	float *pdq = fout(&c, dq), *pdk = fout(&c, dk), *pdv = fout(&c, dv);
	void *gb[3] = { NULL, NULL, NULL };
	if (attn_has_cast(g_cu.attn, D))
		gb[2] = cc_fresh(&c, dv, pdv);   /* dv: the GEMMs' */
	const struct tensor *in[3] = { q, k, v }, *out[3] = { dq, dk, dv };
	const float *pin[3] = { pq, pk, pv };
	const void *b[3];
	const void *const *qkvb = attn_qkv_casts(&c, b, in, pin, out, 3);
	attn_bwd_launch(&sh, pdq, pdk, pdv, gb, pdy, NULL, pq, pk, pv, py, NULL, pl, qkvb);
	ctx_done(&c);
}

static void softcap_run(const char *op, struct tensor *logits, struct tensor *loss,
			const int32_t *targets, double cap, double dscale, int64_t *valid, int bf)
{
	struct opctx c;
	ctx_init(&c, op);
	int64_t R = tensor_rows(logits), V = tensor_cols(logits);
	bk_check(tensor_numel(loss) == R && R < INT32_MAX, c.op);
	if (valid) {   /* the count needs the targets on the host (a wait) */
		int32_t *tmp;
		const int32_t *th = idx_host(c.op, targets, R, &tmp);
		*valid = 0;
		for (int64_t r = 0; r < R; r++) {
			bk_check(th[r] < V, bf ? "softcap_ce_bf16 target" : "softcap_ce target");
			*valid += th[r] >= 0;
		}
		free(tmp);
	}
	const int32_t *pt = iin(&c, targets, R);
	float *pl = fout(&c, logits), *po = fout(&c, loss);
	/* the gradient's cast, for the two GEMMs that read it */
	__nv_bfloat16 *ob = dscale != 0 ? cc_fresh(&c, logits, pl) : NULL;
	if (R > 0)
		k_softcap_ce<<<(unsigned)R, NT, 0, g_cu.st>>>(pl, ob, po, pt, V, cap, dscale,
							       g_cu.bad + 2, bf);
	ctx_done(&c);
}

static void c_softcap_ce(struct tensor *logits, struct tensor *loss, const int32_t *targets,
			 double cap, double dscale, int64_t *valid)
{
	softcap_run("softcap_ce", logits, loss, targets, cap, dscale, valid, 0);
}

static void c_softcap_ce_bf16(struct tensor *logits, struct tensor *loss, const int32_t *targets,
			      double cap, double dscale, int64_t *valid)
{
	softcap_run("softcap_ce_bf16", logits, loss, targets, cap, dscale, valid, 1);
}

static void c_embed_gather(struct tensor *out, const struct tensor *table, const int32_t *idx,
			   int64_t c0, int round_bf16, int accum)
{
	struct opctx c;
	ctx_init(&c, "embed_gather");
	int64_t N = tensor_rows(out), C = tensor_cols(out), k = tensor_cols(table);
	int64_t Vt = tensor_rows(table);
	bk_check(table->dtype == TD_F32 || table->dtype == TD_BF16, c.op);
	bk_check(c0 >= 0 && c0 + k <= C, c.op);
	/* the indices are checked on the device: reading managed indices on
	 * the host would move their pages there and back at every call */
	const void *pt = ctx_map(&c, table->data, tbytes(table), 0);
	const int32_t *pi = iin(&c, idx, N);
	float *po = fout(&c, out);
	/* a bad index sets the pinned flag g_cu.bad (the row is skipped); the
	 * op's end or, for an asynchronous op, the next synchronisation aborts */
	k_gather<<<grid_rows(N), NT, 0, g_cu.st>>>(po, pt, table->dtype == TD_BF16, pi, N, C,
							  k, c0, round_bf16, accum, Vt, g_cu.bad);
	ctx_done(&c);
}

/* The scatter's plan for one index array, made on the device (no host copy
 * of the indices, no synchronisation): the positions 0..N-1 sorted stably
 * by index (CUB's radix sort of (index, position) pairs, over the bits of
 * the table's rows), the starts of the runs of equal indices (CUB's select
 * of the positions where the sorted index changes), their count U and each
 * run's index. The same order as a stable sort on the host, so the same
 * sums as the CPU loop. Inside a pass scope the plan of a device-resident index
 * array is kept for the next scatter of the same array (a micro-batch
 * scatters its tokens into wte and every value-embedding table) until an op
 * writes the array, its block is freed, the host synchronises or the scope
 * ends. An index outside the table sets the pinned flag bad[1] (checked at
 * the next synchronisation) and its run is skipped. */
struct dplan {
	const char *idx;     /* the indices it was made from */
	int64_t N;
	int bits, kept;      /* kept: for the next scatter of the same indices */
	void *buf;           /* order N, ks N, start N + 1, keys N, U 1, flags N bytes */
	size_t bytes;
	int32_t *order, *start, *keys;   /* in buf: what the scatter reads */
	int *Up;                         /* the run count U */
};
static struct dplan g_dplan;

static void dplan_drop(void)
{
	if (g_dplan.buf)
		cuda_scratch_free(g_dplan.buf, g_dplan.bytes);
	memset(&g_dplan, 0, sizeof g_dplan);
}

/* Drop the kept plan if [p, p + bytes) overlaps its indices. */
static void dplan_forget(const void *p, size_t bytes)
{
	const char *a = (const char *)p;
	if (g_dplan.kept && a < g_dplan.idx + (size_t)g_dplan.N * 4 && g_dplan.idx < a + bytes)
		dplan_drop();
}

__global__ static void k_plan_init(int32_t *pos, const int32_t *idx, int64_t N, int64_t Vt,
				   int *bad)
{
	GSTRIDE(i, N) {
		pos[i] = (int32_t)i;
		if (idx[i] < 0 || idx[i] >= Vt)
			*bad = 1;
	}
}

__global__ static void k_plan_flags(char *f, const int32_t *ks, int64_t N)
{
	GSTRIDE(i, N)
		f[i] = i == 0 || ks[i] != ks[i - 1];
}

__global__ static void k_plan_keys(int32_t *keys, int32_t *start, const int32_t *ks, const int *Up,
				   int64_t N)
{
	int64_t U = *Up;
	GSTRIDE(u, U)
		keys[u] = ks[start[u]];
	if (blockIdx.x == 0 && threadIdx.x == 0)
		start[U] = (int32_t)N;
}

/* The plan of N indices at pi (device; idx: the caller's pointer, kept as
 * the key when keep) for a table of Vt rows. */
static const struct dplan *dplan_get(const char *op, const int32_t *idx, const int32_t *pi,
				     int64_t N, int64_t Vt, int keep)
{
	int bits = 1;
	while (bits < 31 && ((int64_t)1 << bits) < Vt)
		bits++;
	if (keep && g_dplan.kept && g_dplan.idx == (const char *)idx && g_dplan.N == N &&
	    g_dplan.bits == bits)
		return &g_dplan;
	dplan_drop();
	struct dplan p = { (const char *)idx, N, bits, keep, NULL, (size_t)(4 * N + 2) * 4 + (size_t)N,
			   NULL, NULL, NULL, NULL };
	p.buf = cuda_scratch_alloc(op, p.bytes);
	int32_t *b = (int32_t *)p.buf, *ks = b + N;   /* ks: the sorted indices */
	p.order = b;
	p.start = b + 2 * N;
	p.keys = b + 3 * N + 1;
	p.Up = (int *)(b + 4 * N + 1);
	char *flags = (char *)(b + 4 * N + 2);
	int32_t *pos = p.keys;   /* the sort's values in (0..N-1); the keys are made last */
	k_plan_init<<<grid_for(N, NT), NT, 0, g_cu.st>>>(pos, pi, N, Vt, g_cu.bad + 1);
	size_t t1 = 0, t2 = 0;
	CUDA_CK(op, cub::DeviceRadixSort::SortPairs(NULL, t1, pi, ks, pos, p.order, (int)N, 0, bits,
						     g_cu.st));
	CUDA_CK(op, cub::DeviceSelect::Flagged(NULL, t2, pos, flags, p.start, p.Up, (int)N, g_cu.st));
	size_t tb = t1 > t2 ? t1 : t2;
	void *tmp = cuda_scratch_alloc(op, tb);
	CUDA_CK(op, cub::DeviceRadixSort::SortPairs(tmp, t1, pi, ks, pos, p.order, (int)N, 0, bits,
						     g_cu.st));
	k_plan_flags<<<grid_for(N, NT), NT, 0, g_cu.st>>>(flags, ks, N);
	/* the positions j where the sorted index changes, selected from pos
	 * (still 0..N-1: the sort reads its values in place) */
	CUDA_CK(op, cub::DeviceSelect::Flagged(tmp, t2, pos, flags, p.start, p.Up, (int)N, g_cu.st));
	k_plan_keys<<<grid_for(N, NT), NT, 0, g_cu.st>>>(p.keys, p.start, ks, p.Up, N);
	cuda_scratch_free(tmp, tb);
	g_dplan = p;
	return &g_dplan;
}

static void c_embed_scatter_add(struct tensor *gtable, const struct tensor *dout,
				const int32_t *idx, int64_t c0)
{
	struct opctx c;
	ctx_init(&c, "embed_scatter_add");
	int64_t N = tensor_rows(dout), C = tensor_cols(dout), k = tensor_cols(gtable);
	int64_t Vt = tensor_rows(gtable);
	bk_check(c0 >= 0 && c0 + k <= C && N < INT32_MAX && Vt < INT32_MAX &&
		 (gtable->dtype == TD_F32 || gtable->dtype == TD_BF16), c.op);
	const int32_t *pi = iin(&c, idx, N);
	const float *pd = fin(&c, dout);
	void *pg = ctx_map(&c, gtable->data, tbytes(gtable), 1);   /* drops a plan on gtable */
	if (N > 0) {
		/* keep the plan only for device-resident indices inside a pass scope */
		int keep = g_cu.in_scope && pi == idx;
		const struct dplan *p = dplan_get(c.op, idx, pi, N, Vt, keep);
		const sc_shape sh = sc_launch(k);
		const unsigned gr = grid_for((N < Vt ? N : Vt) * sh.S, 1);   /* U <= min(N, Vt) runs */
		if (gtable->dtype == TD_BF16)
			k_scatter<__nv_bfloat16><<<gr, sh.nt, 0, g_cu.st>>>(
				(__nv_bfloat16 *)pg, pd, p->order, p->start, p->keys, p->Up, k, C, c0, Vt, sh.S);
		else
			k_scatter<float><<<gr, sh.nt, 0, g_cu.st>>>((float *)pg, pd, p->order, p->start,
								  p->keys, p->Up, k, C, c0, Vt, sh.S);
		if (!keep)
			dplan_drop();   /* made for this call only */
	}
	ctx_done(&c);
}

static void c_ngram_rows(int32_t *rows, const int32_t *idx, int64_t B, int64_t T, int64_t V,
			 int order, int64_t nrows)
{
	struct opctx c;
	ctx_init(&c, "ngram_rows");
	bk_check(B >= 0 && T >= 0 && V > 0 && order >= 1 && nrows > 0 && nrows <= INT32_MAX, c.op);
	int64_t n = B * T;
	if (n > 0) {
		const int32_t *pi = iin(&c, idx, n);
		int32_t *po = (int32_t *)ctx_map(&c, rows, (size_t)n * sizeof(int32_t), 1);
		k_ngram_rows<<<grid_for(n, NT), NT, 0, g_cu.st>>>(po, pi, n, T, (uint64_t)V, order,
								   (uint64_t)nrows);
	}
	ctx_done(&c);
}

static void c_count_rows(uint32_t *counts, int64_t nrows, const int32_t *rows, int64_t N)
{
	struct opctx c;
	ctx_init(&c, "count_rows");
	bk_check(nrows > 0 && N >= 0, c.op);
	if (N > 0) {
		const int32_t *pr = iin(&c, rows, N);
		unsigned int *pc = (unsigned int *)ctx_map(&c, counts, (size_t)nrows * sizeof(uint32_t), 1);
		k_count_rows<<<grid_for(N, NT), NT, 0, g_cu.st>>>(pc, pr, N);
	}
	ctx_done(&c);
}

/* relu^2 into out and, inside a pass scope with bf16 GEMMs, its bf16 cast
 * (kept for the GEMMs); cast_only: the cast alone, marked stale, so that a
 * later fp32 read of out aborts (relu2_fwd_gemm). */
static void relu2_run(struct tensor *out, const struct tensor *h, int cast_only)
{
	struct opctx c;
	ctx_init(&c, "relu2_fwd");
	int64_t n = tensor_numel(h);
	bk_check(tensor_numel(out) == n, c.op);
	if (h->dtype == TD_BF16) {   /* backend.h mlp_bf16: bf16 storage, no cast to keep */
		const __nv_bfloat16 *ph = bin(&c, h);
		__nv_bfloat16 *po = bout(&c, out);
		k_relu2_fwd_bf<<<grid_for(n, 8 * NT), NT, 0, g_cu.st>>>(po, ph, n,
									  al16(po) && al16(ph));
		ctx_done(&c);
		return;
	}
	const float *ph = fin(&c, h);
	float *po = fout(&c, out);
	__nv_bfloat16 *ob = cc_make(&c, out, po, cast_only);   /* the model's u: read by GEMMs only */
	int v4 = al16(po) && al16(ph);
	k_relu2_fwd<<<grid_for(v4 ? n / 4 : n, NT), NT, 0, g_cu.st>>>(ob && cast_only ? NULL : po,
									ob, ph, n, v4);
	ctx_done(&c);
}

static void c_relu2_fwd(struct tensor *out, const struct tensor *h)
{
	relu2_run(out, h, 0);
}

/* backend.h relu2_fwd_gemm: the model's u, which only GEMMs read */
static void c_relu2_fwd_gemm(struct tensor *out, const struct tensor *h)
{
	relu2_run(out, h, 1);
}

static void c_relu2_bwd(struct tensor *dh, const struct tensor *dout, const struct tensor *h)
{
	struct opctx c;
	ctx_init(&c, "relu2_bwd");
	int64_t n = tensor_numel(h);
	bk_check(tensor_numel(dh) == n && tensor_numel(dout) == n, c.op);
	if (h->dtype == TD_BF16) {   /* backend.h mlp_bf16 */
		const __nv_bfloat16 *ph = bin(&c, h), *pd = bin(&c, dout);
		__nv_bfloat16 *po = bout(&c, dh);
		int v8 = al16(po) && al16(pd) && al16(ph);
		k_relu2_bwd_bf<<<grid_for(n, 8 * NT), NT, 0, g_cu.st>>>(po, pd, ph, n, v8);
		ctx_done(&c);
		return;
	}
	const float *ph = fin(&c, h), *pd = fin(&c, dout);
	float *po = fout(&c, dh);
	__nv_bfloat16 *ob = cc_fresh(&c, dh, po);    /* the model's dh: read by GEMMs only */
	int v4 = al16(po) && al16(pd) && al16(ph);
	k_relu2_bwd<<<grid_for(v4 ? n / 4 : n, NT), NT, 0, g_cu.st>>>(po, ob, pd, ph, n, v4);
	ctx_done(&c);
}

/* The gate's kernels on src (a materialised ve, or rows of a table) */
static void ve_gate_fwd_run(struct opctx *c, struct tensor *v, const struct tensor *glog,
			    const ve_src &src)
{
	int64_t H = tensor_cols(glog), NH = tensor_numel(glog), D = tensor_cols(v) / H;
	const float *pg = fin(c, glog);
	if (v->dtype == TD_BF16)   /* backend.h attn_bf16 */
		k_ve_gate_fwd<__nv_bfloat16><<<grid_rows(NH), NT, 0, g_cu.st>>>(bout(c, v), pg, src,
										 NH, H, D);
	else
		k_ve_gate_fwd<float><<<grid_rows(NH), NT, 0, g_cu.st>>>(fout(c, v), pg, src, NH, H,
									D);
}

static void ve_gate_bwd_run(struct opctx *c, struct tensor *dglog, struct tensor *dve,
			    const struct tensor *dv, const struct tensor *glog, const ve_src &src)
{
	int64_t H = tensor_cols(glog), NH = tensor_numel(glog), D = tensor_cols(dv) / H;
	const float *pg = fin(c, glog);
	if (dv->dtype == TD_BF16) {   /* backend.h attn_bf16: the attention's bf16 dv */
		const __nv_bfloat16 *pd = bin(c, dv);
		float *pdg = fout(c, dglog), *pde = fout(c, dve);
		k_ve_gate_bwd<__nv_bfloat16><<<grid_rows(NH), NT, 0, g_cu.st>>>(pdg, pde, pd, pg, src,
										NH, H, D);
	} else {
		const float *pd = fin(c, dv);
		float *pdg = fout(c, dglog), *pde = fout(c, dve);
		k_ve_gate_bwd<float><<<grid_rows(NH), NT, 0, g_cu.st>>>(pdg, pde, pd, pg, src, NH, H,
									D);
	}
}

static ve_src ve_of(struct opctx *c, const struct tensor *ve)
{
	ve_src s = { fin(c, ve), NULL, NULL, 0, 0, 0, NULL };
	return s;
}

static void c_ve_gate_fwd(struct tensor *v, const struct tensor *glog, const struct tensor *ve)
{
	struct opctx c;
	ctx_init(&c, "ve_gate_fwd");
	int64_t H = tensor_cols(glog);
	bk_check(tensor_numel(ve) == tensor_numel(v) && tensor_rows(glog) == tensor_rows(v) &&
		 tensor_cols(v) % H == 0, c.op);
	ve_gate_fwd_run(&c, v, glog, ve_of(&c, ve));
	ctx_done(&c);
}

static void c_ve_gate_bwd(struct tensor *dglog, struct tensor *dve, const struct tensor *dv,
			  const struct tensor *glog, const struct tensor *ve)
{
	struct opctx c;
	ctx_init(&c, "ve_gate_bwd");
	int64_t n = tensor_numel(dv), H = tensor_cols(glog), NH = tensor_numel(glog);
	bk_check(tensor_numel(ve) == n && tensor_numel(dve) == n && tensor_numel(dglog) == NH &&
		 tensor_rows(glog) == tensor_rows(dv) && tensor_cols(dv) % H == 0, c.op);
	ve_gate_bwd_run(&c, dglog, dve, dv, glog, ve_of(&c, ve));
	ctx_done(&c);
}

/* backend.h ve_gate_fwd_rows / ve_gate_bwd_rows: the gate reads the value
 * embeddings from their table's rows, not from a gathered (N, C) ve (8
 * bytes an element less, one op fewer). */
static ve_src ve_rows_src(struct opctx *c, const struct tensor *table, const int32_t *idx,
			  int64_t N, int64_t C, int round_bf16)
{
	bk_check((table->dtype == TD_F32 || table->dtype == TD_BF16) && tensor_cols(table) == C,
		 c->op);
	ve_src s = { NULL, ctx_map(c, table->data, tbytes(table), 0), iin(c, idx, N),
		     tensor_rows(table), table->dtype == TD_BF16, round_bf16, g_cu.bad };
	return s;
}

static void c_ve_gate_fwd_rows(struct tensor *v, const struct tensor *glog,
			       const struct tensor *table, const int32_t *idx, int round_bf16,
			       struct tensor *scratch)
{
	(void)scratch;   /* the rows are read in place */
	int64_t N = tensor_rows(v), C = tensor_cols(v), H = tensor_cols(glog);
	struct opctx c;
	ctx_init(&c, "ve_gate_fwd");
	bk_check(tensor_rows(glog) == N && C % H == 0, c.op);
	ve_gate_fwd_run(&c, v, glog, ve_rows_src(&c, table, idx, N, C, round_bf16));
	ctx_done(&c);
}

static void c_ve_gate_bwd_rows(struct tensor *dglog, struct tensor *dve, const struct tensor *dv,
			       const struct tensor *glog, const struct tensor *table,
			       const int32_t *idx, int round_bf16, struct tensor *scratch)
{
	(void)scratch;
	int64_t N = tensor_rows(dv), C = tensor_cols(dv), H = tensor_cols(glog);
	struct opctx c;
	ctx_init(&c, "ve_gate_bwd");
	bk_check(tensor_numel(dve) == N * C && tensor_numel(dglog) == tensor_numel(glog) &&
		 tensor_rows(glog) == N && C % H == 0, c.op);
	ve_gate_bwd_run(&c, dglog, dve, dv, glog, ve_rows_src(&c, table, idx, N, C, round_bf16));
	ctx_done(&c);
}

static void c_mul_cols_fwd(struct tensor *out, const struct tensor *x, const struct tensor *s)
{
	struct opctx c;
	ctx_init(&c, "mul_cols_fwd");
	int64_t n = tensor_numel(x), K = tensor_cols(x);
	bk_check(tensor_numel(out) == n && tensor_numel(s) == K, c.op);
	const float *px = fin(&c, x), *ps = fin(&c, s);
	float *po = fout(&c, out);
	k_mul_cols<<<grid_for(n, NT), NT, 0, g_cu.st>>>(po, px, ps, n, K);
	ctx_done(&c);
}

static void c_mul_cols_bwd(struct tensor *dx, struct tensor *ds, const struct tensor *dout,
			   const struct tensor *x, const struct tensor *s)
{
	struct opctx c;
	ctx_init(&c, "mul_cols_bwd");
	int64_t N = tensor_rows(dout), K = tensor_cols(dout), n = tensor_numel(dout);
	bk_check(tensor_numel(dx) == n && tensor_numel(x) == n && tensor_numel(s) == K &&
		 (!ds || tensor_numel(ds) == K), c.op);
	const float *pd = fin(&c, dout), *px = fin(&c, x), *ps = fin(&c, s);
	float *pdx = fout(&c, dx);
	if (ds)
		colsum_dot(&c, fout(&c, ds), pd, px, N, K);
	/* dx may alias dout: written after the column sums read it (same stream) */
	k_mul_cols<<<grid_for(n, NT), NT, 0, g_cu.st>>>(pdx, pd, ps, n, K);
	ctx_done(&c);
}

/* backend.h mlp_bf16: with bf16 GEMMs (precision = autocast; their
 * operands are rounded to bf16 anyway) */
static int c_mlp_bf16(void)
{
	return g_cu.mm == CUDA_MM_BF16;
}

/* backend.h attn_bf16: with bf16 GEMMs and the mma attention (which reads
 * bf16 copies of q, k, v and writes one of y anyway) */
static int c_attn_bf16(int head_dim)
{
	return g_cu.mm == CUDA_MM_BF16 && attn_has_cast(g_cu.attn, head_dim);
}

/* backend.h norm_bf16: with bf16 GEMMs (which read the norms' outputs
 * rounded to bf16 anyway) */
static int c_norm_bf16(void)
{
	return g_cu.mm == CUDA_MM_BF16;
}

/* backend.h modes */
static const char *c_modes(void)
{
	static char buf[64];
	snprintf(buf, sizeof buf, "attn=%s async=%d", attn_names[g_cu.attn], g_cu.async);
	return buf;
}

/* ---- the device entries of the backend object ---- */

static int c_open(const struct backend_options *o, struct err *e)
{
	int n = cuda_device_count();
	if (o->device < 0 || o->device >= n)
		return err_set(e, EXIT_USAGE, "device %d: no such CUDA device (%d visible%s)",
			       o->device, n, getenv("CUDA_VISIBLE_DEVICES") ?
			       " under CUDA_VISIBLE_DEVICES" : "");
	if (g_cu.opened && o->device != g_cu.dev)
		return err_set(e, EXIT_USAGE, "device %d: this process already runs on CUDA device %d",
			       o->device, g_cu.dev);
	g_cu.dev = o->device;
	g_cu.opened = 1;
	cuda_init();
	/* config key precision; auto keeps the mode in force (autocast unless
	 * a test set another with cuda_set_matmul_mode) */
	if (o->precision == BK_PRECISION_FP32)
		g_cu.mm = CUDA_MM_F32;
	else if (o->precision == BK_PRECISION_AUTOCAST)
		g_cu.mm = CUDA_MM_BF16;
	return 0;
}

/* backend.h precision: the GEMMs' arithmetic in force */
static const char *c_precision(void)
{
	return g_cu.mm == CUDA_MM_F32 ? "fp32" : g_cu.mm == CUDA_MM_BF16 ? "autocast" : "fast16bf";
}

static void *c_state_alloc(size_t n)
{
	return cuda_mem_alloc(n ? n : 1);
}

static const struct optim_device cuda_optim = {
	/* .alloc = */ c_state_alloc,
	/* .free = */ cuda_mem_free,
	/* .nesterov = */ cuda_opt_nesterov,
	/* .sumsq = */ cuda_opt_sumsq,
	/* .muon_update = */ cuda_opt_muon_update,
	/* .adamw = */ cuda_opt_adamw,
	/* .step_w = */ cuda_opt_step_w,
	/* .oe_sumsq = */ cuda_opt_oe_sumsq,
	/* .oe_step = */ cuda_opt_oe_step,
	/* .sumsq64 = */ cuda_opt_sumsq64,
	/* .scale64 = */ cuda_opt_scale64,
	/* .widen = */ cuda_opt_widen,
	/* .narrow = */ cuda_opt_narrow,
	/* .colsum64 = */ cuda_opt_colsum64,
	/* .ng_project = */ cuda_opt_ng_project,
	/* .gram64 = */ cuda_opt_gram64,
	/* .ng_whiten = */ cuda_opt_ng_whiten,
	/* .ng_combine = */ cuda_opt_ng_combine,
};

static const struct optim_device *c_optim(void)
{
	return &cuda_optim;
}

static double c_peak_flops(void)
{
	char name[256];
	return cuda_device_name(name, sizeof name) == 0 ? peak_bf16_flops(name) : 0;
}

static size_t c_device_bytes(size_t *peak)
{
	struct cuda_mem_stats s;
	cuda_mem_stats(&s);
	*peak = s.device_peak;
	return s.device_used;
}

static const struct backend_ops cuda_ops = {
	/* .name = */ "cuda",
	/* .zero = */ c_zero,
	/* .axpby = */ c_axpby,
	/* .dot = */ c_dot,
	/* .dot_acc = */ c_dot_acc,
	/* .cols_get = */ c_cols_get,
	/* .cols_add = */ c_cols_add,
	/* .matmul = */ c_matmul,
	/* .rmsnorm_fwd = */ c_rmsnorm_fwd,
	/* .rmsnorm_bwd = */ c_rmsnorm_bwd,
	/* .rmsnorm_ref_fwd = */ c_rmsnorm_ref_fwd,
	/* .rmsnorm_ref_bwd = */ c_rmsnorm_ref_bwd,
	/* .rope_fwd = */ c_rope_fwd,
	/* .rope_bwd = */ c_rope_bwd,
	/* .rope_rmsnorm_fwd = */ c_rope_rmsnorm_fwd,
	/* .rope_rmsnorm_bwd = */ c_rope_rmsnorm_bwd,
	/* .attn_fwd = */ c_attn_fwd,
	/* .attn_bwd = */ c_attn_bwd,
	/* .softcap_ce = */ c_softcap_ce,
	/* .embed_gather = */ c_embed_gather,
	/* .embed_scatter_add = */ c_embed_scatter_add,
	/* .ngram_rows = */ c_ngram_rows,
	/* .count_rows = */ c_count_rows,
	/* .relu2_fwd = */ c_relu2_fwd,
	/* .relu2_bwd = */ c_relu2_bwd,
	/* .ve_gate_fwd = */ c_ve_gate_fwd,
	/* .ve_gate_bwd = */ c_ve_gate_bwd,
	/* .mul_cols_fwd = */ c_mul_cols_fwd,
	/* .mul_cols_bwd = */ c_mul_cols_bwd,
	/* .scope = */ c_scope,
	/* .sync = */ cuda_sync,
	/* .relu2_fwd_gemm = */ c_relu2_fwd_gemm,
	/* .mlp_bf16 = */ c_mlp_bf16,
	/* .modes = */ c_modes,
	/* .attn_bf16 = */ c_attn_bf16,
	/* .norm_bf16 = */ c_norm_bf16,
	/* .mix_rmsnorm_fwd = */ c_mix_rmsnorm_fwd,
	/* .mix_bwd = */ c_mix_bwd,
	/* .matmul_n = */ c_matmul_n,
	/* .ve_gate_fwd_rows = */ c_ve_gate_fwd_rows,
	/* .ve_gate_bwd_rows = */ c_ve_gate_bwd_rows,
	/* .softcap_ce_bf16 = */ c_softcap_ce_bf16,
	/* .device_count = */ cuda_device_count,
	/* .open = */ c_open,
	/* .alloc = */ cuda_mem_alloc,
	/* .free = */ cuda_mem_free,
	/* .host_memory = */ 0,
	/* .optim = */ c_optim,
	/* .polar_express = */ cuda_polar_express,
	/* .device_name = */ cuda_device_name,
	/* .peak_flops = */ c_peak_flops,
	/* .device_bytes = */ c_device_bytes,
	/* .act_budget = */ (size_t)15 << 30,
	/* .ce_rows = */ 4096,
	/* .precision = */ c_precision,
};

/* kernels/ registers itself: linking these objects in is what makes
 * backend = cuda exist (trainer/backend.h backend_find). */
__attribute__((used)) static const int cuda_registered = (backend_register(&cuda_ops), 1);

extern "C" void cuda_profile(int on)
{
	if (on) {
		memset(&g_prof, 0, sizeof g_prof);
		g_cc.made = g_cc.reused = 0;
		g_reg.fast = g_reg.driver = 0;
	}
	g_prof.on = on;
}

extern "C" void cuda_profile_print(FILE *f, const char *title, int top)
{
	int n = g_prof.n, ord[PROF_MAX];
	double tot = g_prof.host;
	for (int i = 0; i < n; i++) {
		ord[i] = i;
		tot += g_prof.e[i].sec;
	}
	for (int i = 1; i < n; i++)   /* insertion sort, largest first */
		for (int j = i; j > 0 && g_prof.e[ord[j]].sec > g_prof.e[ord[j - 1]].sec; j--) {
			int t = ord[j];
			ord[j] = ord[j - 1];
			ord[j - 1] = t;
		}
	double other = 0;
	uint64_t ocalls = 0;
	for (int k = 0; k < n; k++) {
		int i = ord[k];
		if (k < top)
			fprintf(f, "profile %s %-22s calls %8llu ms %10.2f share %5.1f%%\n", title,
				g_prof.e[i].op, (unsigned long long)g_prof.e[i].calls, 1e3 * g_prof.e[i].sec,
				tot > 0 ? 100 * g_prof.e[i].sec / tot : 0);
		else {
			other += g_prof.e[i].sec;
			ocalls += g_prof.e[i].calls;
		}
	}
	if (ocalls)
		fprintf(f, "profile %s %-22s calls %8llu ms %10.2f share %5.1f%%\n", title, "(other)",
			(unsigned long long)ocalls, 1e3 * other, tot > 0 ? 100 * other / tot : 0);
	fprintf(f, "profile %s %-22s calls %8s ms %10.2f share %5.1f%%\n", title, "(host, between ops)", "-",
		1e3 * g_prof.host, tot > 0 ? 100 * g_prof.host / tot : 0);
	fprintf(f, "profile %s %-22s calls %8s ms %10.2f\n", title, "(total)", "-", 1e3 * tot);
	fprintf(f, "profile %s bf16 operand casts: %llu made, %llu reused (pass scope)\n", title,
		(unsigned long long)g_cc.made, (unsigned long long)g_cc.reused);
	fprintf(f, "profile %s operand lookups: %llu in the allocation registry, %llu by the driver\n",
		title, (unsigned long long)g_reg.fast, (unsigned long long)g_reg.driver);
}

extern "C" const struct backend_ops *backend_cuda(void)
{
	cuda_init();
	return &cuda_ops;
}

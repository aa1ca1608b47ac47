/* simt.cc: the SIMT emulator of tests/emu/simt.h (fibers, collectives,
 * the PTX instructions the tensor-core kernels use). */
#include "tests/emu/simt.h"

#include <ucontext.h>

#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
alignas(128) unsigned char emu_smem[EMU_SMEM];
uint64_t emu_collectives;

namespace {

enum { RUN, WAIT, DONE };
enum { C_NONE, C_SYNC, C_SHFL, C_LDSM, C_MMA };

const size_t STACK = 64 * 1024;   /* 4x what the kernels ran in under ASan (16 KiB) */

struct fiber {
	ucontext_t ctx;
	std::vector<char> stack;
	int state;
};

/* A warp's collective in progress: what each lane brought, what it gets. */
struct warp {
	int arrived, kind, n;
	bool trans;
	const void *addr[32];
	uint32_t in[32][6];
	float c[32][4];
	uint32_t out[32][4];
	float fout[32][4];
};

ucontext_t g_main;
std::vector<fiber> g_f;
std::vector<warp> g_w;
int g_cur, g_nthr, g_bar;
const std::function<void()> *g_body;

void die(const char *what)
{
	fprintf(stderr, "simt: block (%u, %u) thread %d: %s\n", blockIdx.x, blockIdx.y, g_cur, what);
	abort();
}

void entry()
{
	(*g_body)();
	g_f[g_cur].state = DONE;   /* back to g_main through uc_link */
}

/* Wait here until released (the scheduler runs the others meanwhile). */
void park()
{
	g_f[g_cur].state = WAIT;
	if (swapcontext(&g_f[g_cur].ctx, &g_main) != 0)
		die("swapcontext failed");
}

/* Arrive at the warp's collective `kind`; returns true for the last lane
 * (which then computes every lane's result and calls release). */
bool arrive(int kind)
{
	warp &w = g_w[g_cur / 32];
	if (w.arrived == 0)
		w.kind = kind;
	else if (w.kind != kind)
		die("lanes of a warp at different collectives (divergence)");
	if (++w.arrived < 32) {
		park();
		return false;
	}
	return true;
}

void release()
{
	int w0 = g_cur / 32 * 32;
	g_w[g_cur / 32].arrived = 0;
	for (int i = w0; i < w0 + 32; i++)
		if (i != g_cur)
			g_f[i].state = RUN;
	emu_collectives++;
}

float bf_lo(uint32_t v)
{
	__nv_bfloat16 b;
	b.x = (uint16_t)(v & 0xffffu);
	return __bfloat162float(b);
}

float bf_hi(uint32_t v)
{
	__nv_bfloat16 b;
	b.x = (uint16_t)(v >> 16);
	return __bfloat162float(b);
}

} // namespace

void __syncthreads(void)
{
	if (++g_bar < g_nthr) {
		park();
		return;
	}
	g_bar = 0;
	for (int i = 0; i < g_nthr; i++)
		if (i != g_cur)
			g_f[i].state = RUN;
	emu_collectives++;
}

double __shfl_xor_sync(unsigned mask, double v, int lane_mask)
{
	/* two 32-bit halves, as the hardware moves a double */
	uint64_t u;
	memcpy(&u, &v, 8);
	float lo, hi;
	uint32_t a = (uint32_t)u, b = (uint32_t)(u >> 32);
	memcpy(&lo, &a, 4);
	memcpy(&hi, &b, 4);
	lo = __shfl_xor_sync(mask, lo, lane_mask);
	hi = __shfl_xor_sync(mask, hi, lane_mask);
	memcpy(&a, &lo, 4);
	memcpy(&b, &hi, 4);
	u = (uint64_t)a | (uint64_t)b << 32;
	memcpy(&v, &u, 8);
	return v;
}

float __shfl_xor_sync(unsigned mask, float v, int lane_mask)
{
	if (mask != 0xffffffffu)
		die("shfl with a partial mask");
	int lane = g_cur & 31;
	warp &w = g_w[g_cur / 32];
	memcpy(&w.in[lane][0], &v, 4);
	if (arrive(C_SHFL)) {
		for (int i = 0; i < 32; i++)
			w.out[i][0] = w.in[i ^ (lane_mask & 31)][0];
		release();
	}
	float r;
	memcpy(&r, &w.out[lane][0], 4);
	return r;
}

void emu_cp16(void *dst, const void *src, bool valid)
{
	if (valid)
		memcpy(dst, src, 16);
	else
		memset(dst, 0, 16);
}

void emu_ldsm(uint32_t *r, const void *p, int n, bool trans)
{
	int lane = g_cur & 31;
	warp &w = g_w[g_cur / 32];
	w.addr[lane] = p;
	if (arrive(C_LDSM)) {
		w.n = n;
		w.trans = trans;
		for (int i = 0; i < 32; i++)
			for (int j = 0; j < n; j++) {
				/* matrix j: row q at addr[8 j + q], 8 bf16 values each */
				uint16_t e[2];
				for (int h = 0; h < 2; h++) {
					int row = trans ? 2 * (i & 3) + h : i >> 2;
					int col = trans ? i >> 2 : 2 * (i & 3) + h;
					const unsigned char *a = (const unsigned char *)w.addr[8 * j + row];
					if (a < emu_smem || a + 16 > emu_smem + EMU_SMEM)
						die("ldmatrix row address outside shared memory");
					memcpy(&e[h], a + 2 * col, 2);
				}
				w.out[i][j] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
			}
		release();
	}
	if (w.n != n || w.trans != trans)
		die("ldmatrix shapes differ between lanes");
	for (int j = 0; j < n; j++)
		r[j] = w.out[lane][j];
}

void emu_mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
	int lane = g_cur & 31;
	warp &w = g_w[g_cur / 32];
	for (int k = 0; k < 4; k++) {
		w.in[lane][k] = a[k];
		w.c[lane][k] = c[k];
	}
	w.in[lane][4] = b0;
	w.in[lane][5] = b1;
	if (arrive(C_MMA)) {
		/* rebuild A (16 x 16, row), B (16 x 8, k x n) and C (16 x 8) from
		 * the fragments: g = lane / 4, t = lane % 4 */
		float A[16][16], B[16][8], C[16][8];
		for (int i = 0; i < 32; i++) {
			int g = i >> 2, t = i & 3;
			const uint32_t *f = w.in[i];
			A[g][2 * t] = bf_lo(f[0]), A[g][2 * t + 1] = bf_hi(f[0]);
			A[g + 8][2 * t] = bf_lo(f[1]), A[g + 8][2 * t + 1] = bf_hi(f[1]);
			A[g][2 * t + 8] = bf_lo(f[2]), A[g][2 * t + 9] = bf_hi(f[2]);
			A[g + 8][2 * t + 8] = bf_lo(f[3]), A[g + 8][2 * t + 9] = bf_hi(f[3]);
			B[2 * t][g] = bf_lo(f[4]), B[2 * t + 1][g] = bf_hi(f[4]);
			B[2 * t + 8][g] = bf_lo(f[5]), B[2 * t + 9][g] = bf_hi(f[5]);
			C[g][2 * t] = w.c[i][0], C[g][2 * t + 1] = w.c[i][1];
			C[g + 8][2 * t] = w.c[i][2], C[g + 8][2 * t + 1] = w.c[i][3];
		}
		float D[16][8];
		for (int r = 0; r < 16; r++)
			for (int n = 0; n < 8; n++) {
				double s = C[r][n];
				for (int k = 0; k < 16; k++)
					s += (double)A[r][k] * B[k][n];
				D[r][n] = (float)s;
			}
		for (int i = 0; i < 32; i++) {
			int g = i >> 2, t = i & 3;
			w.fout[i][0] = D[g][2 * t], w.fout[i][1] = D[g][2 * t + 1];
			w.fout[i][2] = D[g + 8][2 * t], w.fout[i][3] = D[g + 8][2 * t + 1];
		}
		release();
	}
	for (int k = 0; k < 4; k++)
		c[k] = w.fout[lane][k];
}

void emu_launch(dim3 grid, int threads, size_t smem, const std::function<void()> &body)
{
	if (threads % 32 != 0 || threads > 1024 || smem > EMU_SMEM) {
		fprintf(stderr, "simt: launch of %d threads, %zu bytes of shared memory\n", threads, smem);
		abort();
	}
	emu_collectives = 0;
	g_body = &body;
	g_nthr = threads;
	g_f.resize((size_t)threads);
	g_w.assign((size_t)threads / 32, warp());
	for (fiber &f : g_f)
		if (f.stack.empty())
			f.stack.resize(STACK);
	blockDim = dim3((unsigned)threads);
	gridDim = grid;
	for (unsigned by = 0; by < grid.y; by++)
		for (unsigned bx = 0; bx < grid.x; bx++) {
			blockIdx.x = bx, blockIdx.y = by, blockIdx.z = 0;
			memset(emu_smem, 0xA5, smem);   /* stale bytes, not zeros: a missing load shows */
			g_bar = 0;
			for (warp &w : g_w)
				w.arrived = 0;
			for (int i = 0; i < threads; i++) {
				fiber &f = g_f[(size_t)i];
				getcontext(&f.ctx);
				f.ctx.uc_stack.ss_sp = f.stack.data();
				f.ctx.uc_stack.ss_size = STACK;
				f.ctx.uc_link = &g_main;
				makecontext(&f.ctx, entry, 0);
				f.state = RUN;
			}
			for (;;) {
				int ran = 0, done = 0;
				for (int i = 0; i < threads; i++) {
					if (g_f[(size_t)i].state == DONE) {
						done++;
						continue;
					}
					if (g_f[(size_t)i].state != RUN)
						continue;
					g_cur = i;
					threadIdx.x = (unsigned)i, threadIdx.y = 0, threadIdx.z = 0;
					swapcontext(&g_main, &g_f[(size_t)i].ctx);
					ran++;
				}
				if (done == threads)
					break;
				if (!ran) {
					g_cur = -1;
					die("every thread waits and none can run (deadlock: a missed "
					    "collective or __syncthreads)");
				}
			}
		}
}

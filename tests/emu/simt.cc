/* simt.cc: the SIMT emulator of tests/emu/simt.h (fibers, collectives,
 * the PTX instructions the tensor-core kernels use). */
#include "tests/emu/simt.h"
extern "C" {
#include "lib/progress.h"   /* now_seconds */
}

#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_ASM_SWITCH 1   /* own context switch: swapcontext makes two syscalls a switch */
#else
#include <ucontext.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#endif

#include <sys/mman.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
alignas(128) unsigned char emu_smem[EMU_SMEM];
uint64_t emu_collectives;

namespace {

enum { RUN, WAIT, DONE };
enum { C_NONE, C_SYNC, C_SHFL, C_SHFL64, C_SYNCWARP, C_LDSM, C_MMA, C_WGMMA };

const size_t STACK = 64 * 1024;   /* 4x what the kernels ran in under ASan (16 KiB) */

struct fiber {
#ifdef EMU_ASM_SWITCH
	void *sp;   /* saved stack pointer (emu_switch's frame) */
#else
	ucontext_t ctx;
	bool init;   /* ctx made by getcontext once (a syscall); makecontext per block */
#endif
	char *stack;   /* STACK bytes of the arena (stack_arena) */
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
	float *wd[32];             /* C_WGMMA: each lane's accumulators */
	uint64_t wdesc[32][2];     /* C_WGMMA: each lane's descriptors of A (or 0) and B */
	float c2[32][64];          /* C_WGMMA: each lane's accumulators at issue */
	int wn[32], wscale[32];    /* C_WGMMA: each lane's N and scale-d */
};

#ifdef EMU_ASM_SWITCH
void *g_main_sp;
#else
ucontext_t g_main;
#endif
#ifdef EMU_ASAN
const void *g_main_bottom;   /* the scheduler's stack, for ASan's fiber switches */
size_t g_main_size;
#define EMU_MAIN_BOTTOM g_main_bottom
#define EMU_MAIN_SIZE g_main_size
#else
#define EMU_MAIN_BOTTOM NULL
#define EMU_MAIN_SIZE 0
#endif
std::vector<fiber> g_f;
std::vector<warp> g_w;
int g_cur, g_nthr, g_bar;
bool g_direct;   /* emu_run_kernel's direct mode: threads one after another, no fibers */

/* cp.async in flight (EMU_CPASYNC=wait, the default): per thread of the
 * block, the copies issued and not yet landed, in issue order, each with
 * its commit group (0: not committed yet), and the groups committed. A
 * copy lands (its 16 bytes reach shared memory) at the issuing thread's
 * cp.async.wait_group that covers its group, the latest moment PTX
 * allows, so that a kernel reading a tile before waiting for it, or
 * before the barrier after the wait, reads the block's old bytes (shared
 * memory starts 0xA5 in every block). EMU_CPASYNC=now lands each copy at
 * issue. */
struct cpcopy {
	unsigned char *dst;
	unsigned char data[16];
	unsigned group;
};

/* A thread's asynchronous operations in flight (cp.async copies, wgmma
 * results), each with its commit group (0: not committed yet), and the
 * groups committed so far: commit puts the uncommitted ones in a new
 * group; wait(n, land) lands (in issue order) every one whose group is
 * among all but the newest n committed, and keeps the rest. */
template <class T> struct inflight {
	std::vector<T> flying;
	unsigned groups;
	void reset()
	{
		flying.clear();
		groups = 0;
	}
	void commit()
	{
		groups++;
		for (T &x : flying)
			if (!x.group)
				x.group = groups;
	}
	template <class F> void wait(int n, F land)
	{
		size_t keep = 0;
		for (size_t i = 0; i < flying.size(); i++) {
			const T &x = flying[i];
			if (x.group && x.group + (unsigned)n <= groups)
				land(x);
			else
				flying[keep++] = x;
		}
		flying.resize(keep);
	}
};
typedef inflight<cpcopy> cpthread;
std::vector<cpthread> g_cp;

/* wgmma.mma_async in flight: per thread, the accumulator values each
 * wgmma computed at issue, written to the thread's registers (the kernel's
 * variables) at its wgmma.wait_group that covers their group, the latest
 * moment PTX allows, so that a kernel reading its accumulators before the
 * wait reads old values. A later wgmma on the same accumulators before
 * that (a k loop) starts from the pending values, as the hardware chains
 * them. */
struct wgpend {
	float *d;
	int cnt;
	float v[64];
	unsigned group;   /* 0: not committed yet */
};
typedef inflight<wgpend> wgthread;
std::vector<wgthread> g_wg;

/* The tile pipelines' race check (EMU_RACECHECK=1, the default): per 16
 * bytes of shared memory, which warps read them by ldmatrix or wgmma in
 * which barrier interval (epoch: __syncthreads passed in the block), the
 * cp.async copies to them in flight, and the interval in which the last
 * one landed. Aborts, whatever order the emulator runs threads in, on
 *   a cp.async to bytes another warp read by ldmatrix or wgmma in the same
 *     interval (the refill of a buffer with no barrier after its last reads),
 *   a cp.async to bytes another copy is still in flight to,
 *   an ldmatrix or wgmma read of bytes a copy is in flight to (no wait),
 *     or whose copy landed in the same interval (no barrier after the
 *     wait).
 * Plain loads and stores of shared memory are not seen. Entries carry the
 * block's serial number, so that a new block starts clean without a reset. */
struct gran {
	uint64_t blk;
	int read_epoch, land_epoch, pending;
	uint32_t read_warps;
};
std::vector<gran> g_gran(EMU_SMEM / 16);
uint64_t g_blk;   /* blocks run so far */
int g_epoch;      /* the running block's barrier intervals so far */

bool racecheck()
{
	static int on = -1;
	if (on < 0) {
		const char *v = getenv("EMU_RACECHECK");
		on = !(v && strcmp(v, "0") == 0);
	}
	return on;
}

/* the entry of the 16 bytes at p (in emu_smem, 16-byte aligned) */
gran &gran_at(const unsigned char *p)
{
	gran &g = g_gran[(size_t)(p - emu_smem) / 16];
	if (g.blk != g_blk) {
		g.blk = g_blk;
		g.read_epoch = g.land_epoch = -1;
		g.pending = 0;
		g.read_warps = 0;
	}
	return g;
}

bool cp_now()
{
	static int now = -1;
	if (now < 0) {
		const char *v = getenv("EMU_CPASYNC");
		now = v && strcmp(v, "now") == 0;
		if (v && !now && strcmp(v, "wait") != 0) {
			fprintf(stderr, "simt: EMU_CPASYNC=%s: not now or wait\n", v);
			exit(2);
		}
	}
	return now;
}

/* a new block: nothing in flight */
void cp_reset(unsigned threads)
{
	g_blk++;
	g_epoch = 0;
	g_cp.resize(threads);
	for (cpthread &t : g_cp)
		t.reset();
	g_wg.resize(threads);
	for (wgthread &t : g_wg)
		t.reset();
}

void die(const char *what);

/* p as 16 bytes of shared memory (a cp.async destination, an ldmatrix
 * row): aborts with `what` when they lie outside it or p is not 16-byte
 * aligned */
const unsigned char *smem16(const void *p, const char *what)
{
	const unsigned char *a = (const unsigned char *)p;
	if (a < emu_smem || a + 16 > emu_smem + EMU_SMEM || ((uintptr_t)a & 15))
		die(what);
	return a;
}

/* copy c's 16 bytes reach shared memory (from_flight: it was in flight) */
void land(const cpcopy &c, bool from_flight)
{
	memcpy(c.dst, c.data, 16);
	if (racecheck()) {
		gran &g = gran_at(c.dst);
		g.pending -= from_flight;
		g.land_epoch = g_epoch;
	}
}
const std::function<void()> *g_body;

void die(const char *what)
{
	fprintf(stderr, "simt: block (%u, %u) thread %d: %s\n", blockIdx.x, blockIdx.y, g_cur, what);
	abort();
}

#ifdef EMU_ASM_SWITCH
/* Save the callee-saved registers (the System V x86-64 ABI's) on this
 * stack, store its pointer in *save, switch to the stack `to` and restore
 * its registers. MXCSR and the x87 control word are not switched: no
 * kernel changes them, so every fiber runs in the scheduler's. */
extern "C" void emu_switch(void **save, void *to);
asm(".text\n"
    ".globl emu_switch\n"
    ".type emu_switch,@function\n"
    "emu_switch:\n"
    "	pushq %rbp\n"
    "	pushq %rbx\n"
    "	pushq %r12\n"
    "	pushq %r13\n"
    "	pushq %r14\n"
    "	pushq %r15\n"
    "	movq %rsp, (%rdi)\n"
    "	movq %rsi, %rsp\n"
    "	popq %r15\n"
    "	popq %r14\n"
    "	popq %r13\n"
    "	popq %r12\n"
    "	popq %rbx\n"
    "	popq %rbp\n"
    "	ret\n"
    ".size emu_switch,.-emu_switch\n");
#endif

/* ASan's view of the stack switches (nothing without ASan): leave for the
 * stack [bottom, bottom + size) (fake NULL: this stack is left for good) ... */
void asan_leave(void **fake, const void *bottom, size_t size)
{
#ifdef EMU_ASAN
	__sanitizer_start_switch_fiber(fake, bottom, size);
#else
	(void)fake, (void)bottom, (void)size;
#endif
}

/* ... and arrive on it (from_main: the stack left is the scheduler's, kept
 * for the way back) */
void asan_arrived(void *fake, bool from_main)
{
#ifdef EMU_ASAN
	if (from_main)
		__sanitizer_finish_switch_fiber(fake, &g_main_bottom, &g_main_size);
	else
		__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
	(void)fake, (void)from_main;
#endif
}

/* The block's threads run in a cycle over the positions 0 .. g_nthr - 1 of
 * the order in force (nth): a thread that waits or finishes hands over
 * straight to the next runnable one after its position (one switch, not two
 * through the scheduler: the same sequence as sweeping the positions again
 * and again); the scheduler gets control back only when none can run. */
int g_pos, g_done;
bool g_from_main;   /* the switch in progress left the scheduler */

unsigned nth(unsigned k, unsigned n);

/* the runnable thread next after g_pos in the cycle (g_pos moves there), or -1 */
int next_runnable()
{
	for (int s = 1; s <= g_nthr; s++) {
		int k = g_pos + s >= g_nthr ? g_pos + s - g_nthr : g_pos + s;
		int i = (int)nth((unsigned)k, (unsigned)g_nthr);
		if (g_f[(size_t)i].state == RUN) {
			g_pos = k;
			return i;
		}
	}
	return -1;
}

/* this fiber waits (done: has finished, its stack left for good: the
 * block's fibers are made anew): on to the next runnable thread, else back
 * to the scheduler; returns when this fiber is switched to again */
void hand_over(bool done)
{
	int me = g_cur, nx = next_runnable();
	void *fake = NULL;
	fiber &f = g_f[(size_t)me];
	g_from_main = false;
	if (nx < 0) {
		asan_leave(done ? NULL : &fake, EMU_MAIN_BOTTOM, EMU_MAIN_SIZE);
#ifdef EMU_ASM_SWITCH
		emu_switch(&f.sp, g_main_sp);
#else
		if (swapcontext(&f.ctx, &g_main) != 0)
			die("swapcontext failed");
#endif
	} else {
		fiber &n = g_f[(size_t)nx];
		g_cur = nx;
		threadIdx.x = (unsigned)nx, threadIdx.y = 0, threadIdx.z = 0;
		asan_leave(done ? NULL : &fake, n.stack, STACK);
#ifdef EMU_ASM_SWITCH
		emu_switch(&f.sp, n.sp);
#else
		if (swapcontext(&f.ctx, &n.ctx) != 0)
			die("swapcontext failed");
#endif
	}
	asan_arrived(fake, g_from_main);
}

void entry()
{
	asan_arrived(NULL, g_from_main);
	(*g_body)();
	g_f[(size_t)g_cur].state = DONE;
	g_done++;
	hand_over(true);
	die("a finished fiber resumed");
}

/* scheduler -> the thread at position 0, back when none can run */
void run_fibers()
{
	void *fake = NULL;
	g_pos = 0;
	int i = (int)nth(0, (unsigned)g_nthr);
	fiber &f = g_f[(size_t)i];
	g_cur = i;
	threadIdx.x = (unsigned)i, threadIdx.y = 0, threadIdx.z = 0;
	g_from_main = true;
	asan_leave(&fake, f.stack, STACK);
#ifdef EMU_ASM_SWITCH
	emu_switch(&g_main_sp, f.sp);
#else
	swapcontext(&g_main, &f.ctx);
#endif
	asan_arrived(fake, false);
}

/* fiber f starts at entry() when next switched to */
void fiber_make(fiber &f)
{
#ifdef EMU_ASAN
	/* a fiber that ended left its frames' redzones poisoned (it never
	 * returned from them): a new kernel on the same stack starts clean */
	__asan_unpoison_memory_region(f.stack, STACK);
#endif
#ifdef EMU_ASM_SWITCH
	/* emu_switch's frame, read upwards from sp: r15, r14, r13, r12, rbx,
	 * rbp (zeros), then the return address (entry) on a 16-byte boundary,
	 * so that entry starts 8 below one as a called function does, and a
	 * zero return address above it */
	uintptr_t top = ((uintptr_t)f.stack + STACK) & ~(uintptr_t)15;
	uint64_t *q = (uint64_t *)(top - 32);
	q[0] = (uint64_t)(uintptr_t)&entry;
	q[1] = 0;
	uint64_t *sp = q - 6;
	for (int k = 0; k < 6; k++)
		sp[k] = 0;
	f.sp = sp;
#else
	if (!f.init) {
		getcontext(&f.ctx);
		f.init = true;
	}
	f.ctx.uc_stack.ss_sp = f.stack;
	f.ctx.uc_stack.ss_size = STACK;
	f.ctx.uc_link = &g_main;
	makecontext(&f.ctx, entry, 0);
#endif
}

/* EMU_ORDER: the order blocks and a block's threads run in: forward (the
 * default), reverse (last to first) or shuffle (a fixed interleaving,
 * k -> (a k + n/3) mod n with a near 0.618 n and prime to n: neighbours
 * run far apart, neither first to last nor last to first). A kernel whose
 * result depends on the order, as with a missing __syncthreads or a block
 * reading another's output, gives different results in some of them. */
enum run_order { ORDER_FORWARD, ORDER_REVERSE, ORDER_SHUFFLE };

run_order order_in_force()
{
	static int o = -1;
	if (o < 0) {
		const char *v = getenv("EMU_ORDER");
		if (!v || !*v || strcmp(v, "forward") == 0)
			o = ORDER_FORWARD;
		else if (strcmp(v, "reverse") == 0)
			o = ORDER_REVERSE;
		else if (strcmp(v, "shuffle") == 0)
			o = ORDER_SHUFFLE;
		else {
			fprintf(stderr, "simt: EMU_ORDER=%s: forward, reverse or shuffle\n", v);
			exit(2);
		}
	}
	return (run_order)o;
}

unsigned gcd(unsigned a, unsigned b)
{
	while (b) {
		unsigned t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* index k of n in the order in force */
unsigned nth(unsigned k, unsigned n)
{
	switch (order_in_force()) {
	case ORDER_FORWARD:
		return k;
	case ORDER_REVERSE:
		return n - 1 - k;
	case ORDER_SHUFFLE:
		break;
	}
	static unsigned last_n, a;   /* the stride for n (the scheduler asks for one n at a time) */
	if (n != last_n) {
		a = (unsigned)(0.618 * n) | 1;
		while (gcd(a, n) != 1)
			a += 2;
		last_n = n;
	}
	return (unsigned)(((uint64_t)a * k + n / 3) % n);
}

/* The fibers' stacks, 1024 x STACK bytes in one mapping on transparent
 * huge pages where the kernel offers them: a switch touches another
 * fiber's stack, and with 4 KiB pages that was a TLB miss each time. */
char *stack_arena()
{
	static char *a;
	if (!a) {
		size_t n = 1024 * STACK, huge = (size_t)2 << 20;
		void *p = mmap(NULL, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED)
			die("cannot map the fibers' stacks");
		a = (char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
		madvise(a, n, MADV_HUGEPAGE);   /* a hint: without it, 4 KiB pages */
	}
	return a;
}

/* Wait here until released (the scheduler runs the others meanwhile). */
void park()
{
	g_f[(size_t)g_cur].state = WAIT;
	hand_over(false);
}

/* Arrive at the warp's collective `kind`; returns true for the last lane
 * (which then computes every lane's result and calls release). */
bool arrive(int kind)
{
	if (g_direct)
		die("a collective in a kernel whose first launch used none (set EMU_FIBERS=1)");
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
	if (g_direct)
		die("__syncthreads in a kernel whose first launch used none (set EMU_FIBERS=1)");
	if (++g_bar < g_nthr) {
		park();
		return;
	}
	g_bar = 0;
	g_epoch++;
	for (int i = 0; i < g_nthr; i++)
		if (i != g_cur)
			g_f[i].state = RUN;
	emu_collectives++;
}

/* The warp's shuffle of 64 bits (the hardware moves a double as two
 * 32-bit halves; here one collective carries both): lane src's v. */
double __shfl_xor_sync(unsigned mask, double v, int lane_mask)
{
	if (mask != 0xffffffffu)
		die("shfl with a partial mask");
	int lane = g_cur & 31;
	warp &w = g_w[g_cur / 32];
	memcpy(&w.in[lane][0], &v, 8);
	w.in[lane][2] = (uint32_t)(lane ^ lane_mask) & 31;
	if (arrive(C_SHFL64)) {
		for (int i = 0; i < 32; i++) {
			w.out[i][0] = w.in[w.in[i][2]][0];
			w.out[i][1] = w.in[w.in[i][2]][1];
		}
		release();
	}
	double r;
	memcpy(&r, &w.out[lane][0], 8);
	return r;
}

/* The warp's barrier: every lane waits until all 32 have arrived. */
void __syncwarp(unsigned mask)
{
	if (mask != 0xffffffffu)
		die("__syncwarp with a partial mask");
	if (arrive(C_SYNCWARP))
		release();
}

/* The warp's shuffle: this lane gets lane src's v (src in 0..31). */
static float shfl_from(unsigned mask, float v, int src)
{
	if (mask != 0xffffffffu)
		die("shfl with a partial mask");
	int lane = g_cur & 31;
	warp &w = g_w[g_cur / 32];
	memcpy(&w.in[lane][0], &v, 4);
	w.in[lane][1] = (uint32_t)src & 31;
	if (arrive(C_SHFL)) {
		for (int i = 0; i < 32; i++)
			w.out[i][0] = w.in[w.in[i][1]][0];
		release();
	}
	float r;
	memcpy(&r, &w.out[lane][0], 4);
	return r;
}

float __shfl_xor_sync(unsigned mask, float v, int lane_mask)
{
	return shfl_from(mask, v, (int)(g_cur & 31) ^ lane_mask);
}

float __shfl_sync(unsigned mask, float v, int src)
{
	return shfl_from(mask, v, src);
}

void emu_cp16(void *dst, const void *src, bool valid)
{
	smem16(dst, "cp.async destination outside shared memory or not 16-byte aligned");
	if ((uintptr_t)src & 15)   /* PTX: both addresses aligned to the copy's size */
		die("cp.async source not 16-byte aligned");
	cpcopy c;
	c.dst = (unsigned char *)dst;
	c.group = 0;
	if (valid)
		memcpy(c.data, src, 16);   /* the source is read at issue */
	else
		memset(c.data, 0, 16);
	if (racecheck()) {
		gran &g = gran_at(c.dst);
		if (g.read_epoch == g_epoch && (g.read_warps & ~(1u << (g_cur / 32))))
			die("cp.async race: overwrites shared memory another warp read (ldmatrix, wgmma) "
			    "since the last __syncthreads");
		if (g.pending)
			die("cp.async race: another copy to the same shared memory is in flight");
		g.pending += !cp_now();
	}
	if (cp_now())
		land(c, false);
	else
		g_cp[(size_t)g_cur].flying.push_back(c);
}

void emu_cp_commit(void)
{
	if (cp_now())
		return;
	g_cp[(size_t)g_cur].commit();
}

void emu_cp_wait(int n)
{
	if (cp_now())
		return;
	g_cp[(size_t)g_cur].wait(n, [](const cpcopy &c) { land(c, true); });
}

namespace {
/* The race check of a tile read by the running warp (ldmatrix, wgmma) of
 * the 16 bytes at a: none in flight, none landed since the last barrier. */
void tile_read(const unsigned char *a, const char *who)
{
	if (!racecheck())
		return;
	gran &g = gran_at(a);
	char msg[160];
	if (g.pending) {
		snprintf(msg, sizeof msg, "cp.async race: %s reads shared memory a cp.async copy "
					  "has not landed in (no cp.async.wait_group for it)", who);
		die(msg);
	}
	if (g.land_epoch == g_epoch) {
		snprintf(msg, sizeof msg, "cp.async race: %s reads shared memory a cp.async copy "
					  "landed in since the last __syncthreads (none after the wait)", who);
		die(msg);
	}
	if (g.read_epoch != g_epoch)
		g.read_warps = 0;
	g.read_epoch = g_epoch;
	g.read_warps |= 1u << (g_cur / 32);
}
} // namespace

void emu_ldsm(uint32_t *r, const void *p, int n, bool trans)
{
	int lane = g_cur & 31;
	warp &w = g_w[g_cur / 32];
	w.addr[lane] = p;
	if (arrive(C_LDSM)) {
		w.n = n;
		w.trans = trans;
		for (int i = 0; i < 8 * n; i++) {
			const unsigned char *a = smem16(w.addr[i], "ldmatrix row address outside "
							       "shared memory or not 16-byte aligned");
			tile_read(a, "ldmatrix");
		}
		for (int i = 0; i < 32; i++)
			for (int j = 0; j < n; j++) {
				/* matrix j: row q at addr[8 j + q], 8 bf16 values each */
				uint16_t e[2];
				for (int h = 0; h < 2; h++) {
					int row = trans ? 2 * (i & 3) + h : i >> 2;
					int col = trans ? i >> 2 : 2 * (i & 3) + h;
					const unsigned char *a = (const unsigned char *)w.addr[8 * j + row];
					memcpy(&e[h], a + 2 * col, 2);   /* checked above */
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

unsigned emu_smem_addr(const void *p)
{
	const unsigned char *a = (const unsigned char *)p;
	if (a < emu_smem || a > emu_smem + EMU_SMEM)
		die("a shared-memory address outside shared memory");
	return (unsigned)(a - emu_smem);
}

namespace {
/* Element (row, k) of the k16 slice a wgmma descriptor gives: K-major,
 * 128-byte swizzle (layout type 1, bits 62-63), 8-row groups 1024 bytes
 * apart (stride byte offset 64 x 16, bits 32-45), start address (bits
 * 0-13, x 16) inside a 1024-byte-aligned swizzle atom at a 32-byte k step
 * (base offset 0, bits 49-51): logical byte L = start + 1024 (row / 8) +
 * 128 (row % 8) + 2 k, stored at L ^ (((L >> 7) & 7) << 4) (16-byte chunk
 * c of an atom's row r at chunk c ^ r). The other layouts are not
 * emulated (abort). */
const unsigned char *wg_elem(uint64_t desc, int row, int k)
{
	if ((desc >> 62) != 1 || ((desc >> 32) & 0x3fff) != 64 || ((desc >> 49) & 7) != 0)
		die("wgmma descriptor: only K-major 128-byte swizzle with 1024-byte row groups is "
		    "emulated");
	unsigned start = (unsigned)(desc & 0x3fff) << 4;
	if ((start & 0x380) != 0 || (start & 31) != 0)
		die("wgmma descriptor: start address not a 32-byte k step of a 1024-byte-aligned "
		    "swizzle atom");
	unsigned L = start + 1024u * (unsigned)(row >> 3) + 128u * (unsigned)(row & 7) +
		     2u * (unsigned)k;
	unsigned P = L ^ (((L >> 7) & 7u) << 4);
	if (P + 2 > EMU_SMEM)
		die("wgmma operand outside shared memory");
	return emu_smem + P;
}

float wg_get(uint64_t desc, int row, int k)
{
	__nv_bfloat16 b;
	memcpy(&b.x, wg_elem(desc, row, k), 2);
	return __bfloat162float(b);
}

/* the accumulators' values d of this thread as its next wgmma starts from
 * them: the latest pending result for d, else d's own */
const float *wg_current(float *d)
{
	wgthread &t = g_wg[(size_t)g_cur];
	for (size_t i = t.flying.size(); i-- > 0;)
		if (t.flying[i].d == d)
			return t.flying[i].v;
	return d;
}
} // namespace

void emu_wgmma(float *d, int n, const uint32_t *a, uint64_t da, uint64_t db, int scale_d)
{
	int lane = g_cur & 31;
	warp &w = g_w[g_cur / 32];
	if (blockDim.x % 128 != 0)
		die("wgmma in a block that is not whole warpgroups");
	if (n % 8 != 0 || n < 8 || n > 128)
		die("wgmma: N not a multiple of 8 in 8 .. 128");
	w.wd[lane] = d;
	w.wdesc[lane][0] = a ? 0 : da;
	w.wdesc[lane][1] = db;
	w.wn[lane] = n;
	w.wscale[lane] = scale_d;
	const float *cur = wg_current(d);
	for (int e = 0; e < n / 2; e++)
		w.c2[lane][e] = cur[e];
	for (int k = 0; k < 4; k++)
		w.in[lane][k] = a ? a[k] : 0;
	if (arrive(C_WGMMA)) {
		for (int i = 1; i < 32; i++)
			if (w.wdesc[i][0] != w.wdesc[0][0] || w.wdesc[i][1] != w.wdesc[0][1] ||
			    w.wn[i] != n || w.wscale[i] != scale_d)
				die("wgmma: lanes of a warp give different descriptors, N or scale-d");
		/* this warp's 16 rows of the warpgroup's 64: rows 16 (warp % 4) .. */
		const int r0 = 16 * ((g_cur / 32) & 3);
		float A[16][16], B[16][128];
		for (int i = 0; i < 32; i++) {
			int g = i >> 2, t = i & 3;
			const uint32_t *f = w.in[i];
			if (w.wdesc[0][0]) {
				if (i < 16)
					for (int k = 0; k < 16; k++)
						A[i][k] = wg_get(w.wdesc[0][0], r0 + i, k);
				continue;
			}
			A[g][2 * t] = bf_lo(f[0]), A[g][2 * t + 1] = bf_hi(f[0]);
			A[g + 8][2 * t] = bf_lo(f[1]), A[g + 8][2 * t + 1] = bf_hi(f[1]);
			A[g][2 * t + 8] = bf_lo(f[2]), A[g][2 * t + 9] = bf_hi(f[2]);
			A[g + 8][2 * t + 8] = bf_lo(f[3]), A[g + 8][2 * t + 9] = bf_hi(f[3]);
		}
		/* B (16 x N, k x n) is the N x 16 K-major slice: element (k, n) = row n */
		for (int nn = 0; nn < n; nn++)
			for (int k = 0; k < 16; k++) {
				if (k % 8 == 0)   /* k .. k + 7: one 16-byte chunk */
					tile_read(wg_elem(db, nn, k), "wgmma");
				B[k][nn] = wg_get(db, nn, k);
			}
		if (w.wdesc[0][0])
			for (int r = 0; r < 16; r++)
				for (int k = 0; k < 16; k += 8)
					tile_read(wg_elem(w.wdesc[0][0], r0 + r, k), "wgmma");
		/* D = A B (+ C): lane (g, t)'s values 4 j + e are (row g + 8 (e / 2),
		 * column 8 j + 2 t + e % 2), as mma's C fragments, one an 8-column block */
		for (int i = 0; i < 32; i++) {
			int g = i >> 2, t = i & 3;
			wgthread &th = g_wg[(size_t)(g_cur / 32 * 32 + i)];
			wgpend pd;
			pd.d = w.wd[i];
			pd.cnt = n / 2;
			pd.group = 0;
			for (int j = 0; j < n / 8; j++)
				for (int e = 0; e < 4; e++) {
					int r = g + 8 * (e >> 1), col = 8 * j + 2 * t + (e & 1);
					double acc = scale_d ? w.c2[i][4 * j + e] : 0.0;
					for (int k = 0; k < 16; k++)
						acc += (double)A[r][k] * B[k][col];
					pd.v[4 * j + e] = (float)acc;
				}
			th.flying.push_back(pd);
		}
		release();
	}
}

void emu_wgmma_fence(void) {}

void emu_wgmma_commit(void)
{
	g_wg[(size_t)g_cur].commit();
}

void emu_wgmma_wait(int n)
{
	g_wg[(size_t)g_cur].wait(n, [](const wgpend &p) {
		memcpy(p.d, p.v, (size_t)p.cnt * sizeof(float));
	});
}

static void check_launch(int threads, size_t smem)
{
	if (threads % 32 != 0 || threads > 1024 || smem > EMU_SMEM) {
		fprintf(stderr, "simt: launch of %d threads, %zu bytes of shared memory\n", threads, smem);
		abort();
	}
}

/* run(), with blockIdx set, for every block of grid in the order in force,
 * over smem bytes of stale shared memory (not zeros: a missing load shows) */
template <class F> static void each_block(dim3 grid, size_t smem, F run)
{
	for (unsigned by = 0; by < grid.y; by++)
		for (unsigned bx = 0; bx < grid.x; bx++) {
			blockIdx.x = nth(bx, grid.x), blockIdx.y = nth(by, grid.y), blockIdx.z = 0;
			memset(emu_smem, 0xA5, smem);
			cp_reset(blockDim.x);
			run();
		}
}

void emu_launch(dim3 grid, int threads, size_t smem, const std::function<void()> &body)
{
	check_launch(threads, smem);
	emu_collectives = 0;
	g_body = &body;
	g_nthr = threads;
	g_f.resize((size_t)threads);
	g_w.assign((size_t)threads / 32, warp());
	for (fiber &f : g_f)
		if (!f.stack)
			f.stack = stack_arena() + (&f - g_f.data()) * STACK;
	blockDim = dim3((unsigned)threads);
	gridDim = grid;
	each_block(grid, smem, [&] {
			g_bar = 0;
			g_done = 0;
			for (warp &w : g_w)
				w.arrived = 0;
			for (int i = 0; i < threads; i++) {
				fiber &f = g_f[(size_t)i];
				fiber_make(f);
				f.state = RUN;
			}
			run_fibers();
			if (g_done != threads) {
				g_cur = -1;
				die("every thread waits and none can run (deadlock: a missed "
				    "collective or __syncthreads)");
			}
		});
}

namespace {

/* EMU_PROFILE's table: per kernel, its launches, collectives and seconds */
struct kprof {
	const char *name;
	uint64_t launches, collectives;
	double sec;
};
std::unordered_map<const void *, kprof> *g_prof;

void print_profile()
{
	std::vector<kprof> v;
	double total = 0;
	for (auto &e : *g_prof)
		v.push_back(e.second), total += e.second.sec;
	std::sort(v.begin(), v.end(), [](const kprof &a, const kprof &b) { return a.sec > b.sec; });
	fprintf(stderr, "simt profile: %.2f s in kernels\n%10s %12s %14s  %s\n", total, "seconds",
		"launches", "collectives", "kernel");
	for (const kprof &k : v)
		fprintf(stderr, "%10.3f %12llu %14llu  %s\n", k.sec, (unsigned long long)k.launches,
			(unsigned long long)k.collectives, k.name);
}

bool profiling()
{
	static int on = -1;
	if (on < 0) {
		const char *v = getenv("EMU_PROFILE");
		on = v && *v && strcmp(v, "0") != 0;
		if (on) {
			g_prof = new std::unordered_map<const void *, kprof>;
			atexit(print_profile);
		}
	}
	return on;
}

void run_kernel(const void *key, dim3 grid, dim3 block, size_t smem,
		const std::function<void()> &body)
{
	static std::unordered_map<const void *, int> seen;   /* 1: direct, 2: fibers */
	static const bool fibers = getenv("EMU_FIBERS") && strcmp(getenv("EMU_FIBERS"), "0");
	if (block.y != 1 || block.z != 1 || grid.z != 1) {
		fprintf(stderr, "simt: a launch with a 3-D grid or a 2-D block\n");
		abort();
	}
	int &m = seen[key];
	if (m != 1 || fibers) {
		emu_launch(grid, (int)block.x, smem, body);
		if (m == 0)
			m = emu_collectives == 0 ? 1 : 2;
		return;
	}
	check_launch((int)block.x, smem);
	blockDim = block;
	gridDim = grid;
	g_direct = true;
	each_block(grid, smem, [&] {
		for (unsigned k = 0; k < block.x; k++) {
			unsigned i = nth(k, block.x);
			g_cur = (int)i;
			threadIdx.x = i, threadIdx.y = 0, threadIdx.z = 0;
			body();
		}
	});
	g_direct = false;
}

} // namespace

/* each kernel's cudaFuncAttributeMaxDynamicSharedMemorySize */
static std::unordered_map<const void *, int> &smem_limits()
{
	static std::unordered_map<const void *, int> m;
	return m;
}

int emu_set_smem_limit(const void *key, int bytes)
{
	if (bytes < 0 || bytes > EMU_SMEM)
		return -1;
	smem_limits()[key] = bytes;
	return 0;
}

void emu_run_kernel(const void *key, const char *name, dim3 grid, dim3 block, size_t smem,
		    const std::function<void()> &body)
{
	/* what the hardware refuses as an invalid configuration */
	if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || grid.y > 65535 ||
	    grid.z > 65535 || grid.x > 2147483647u) {
		fprintf(stderr, "simt: launch of %s on a grid of %u x %u x %u blocks of %u threads: "
				"an invalid configuration on the hardware\n",
			name, grid.x, grid.y, grid.z, block.x);
		abort();
	}
	if (smem > EMU_SMEM_DEFAULT) {
		auto it = smem_limits().find(key);
		size_t lim = it == smem_limits().end() ? EMU_SMEM_DEFAULT : (size_t)it->second;
		if (smem > lim) {
			fprintf(stderr,
				"simt: launch of %s with %zu bytes of dynamic shared memory, over "
				"its limit of %zu (cudaFuncSetAttribute "
				"MaxDynamicSharedMemorySize): the hardware refuses it\n",
				name, smem, lim);
			abort();
		}
	}
	if (!profiling()) {
		run_kernel(key, grid, block, smem, body);
		return;
	}
	double t0 = now_seconds();
	emu_collectives = 0;
	run_kernel(key, grid, block, smem, body);
	kprof &k = (*g_prof)[key];
	k.name = name;
	k.launches++;
	k.collectives += emu_collectives;
	k.sec += now_seconds() - t0;
}

/* test_simt_emu.cc: the SIMT emulator itself (tests/emu/simt.cc): the
 * order its fibers run in, that __syncthreads and a warp's shuffles hold
 * every thread until all have arrived, that each lane gets its partner's
 * value, and that a deadlock (a thread that skips a __syncthreads) and a
 * divergence (lanes at different collectives) abort with their message
 * (child processes: this binary with the argument deadlock or diverge),
 * and that EMU_PROFILE=1 counts each kernel's launches and collectives
 * (a child with the argument profile); that a cp.async copy lands in
 * shared memory at its thread's wait_group that covers its group, not
 * before (EMU_CPASYNC=wait, the default) or at issue (EMU_CPASYNC=now, a
 * child), and that one to memory outside shared memory, or from a source
 * not 16-byte aligned, aborts; that the
 * race check of the tile pipelines (EMU_RACECHECK) aborts on a refill of
 * bytes another warp read since the last barrier and on a read of landed
 * bytes with no barrier after the wait, passes the same kernels with
 * their barriers, and is off with EMU_RACECHECK=0 (children); that wgmma
 * reads its operands in the K-major 128-byte-swizzle layout and gives its
 * result only at the wait; that a launch of more than 48 KiB of dynamic
 * shared memory aborts unless its kernel's limit was raised to cover it,
 * and so does a grid of no blocks or of over 65,535 rows (children).
 * The emulator's hand-over from a waiting thread straight to the next
 * runnable one must run the threads in the sequence of sweeping the block's
 * positions again and again: the sequence is checked entry by entry.
 */
#include "t.h"
#include "tests/emu/emu_test.h"

#include <string>
#include <vector>

namespace {

std::vector<int> g_log;   /* (phase << 16) | thread, in the order run */

/* 64 threads (two warps): phase 0, __syncthreads, phase 1, a warp sum by
 * shuffles, phase 2 */
void k_phases(float *sum)
{
	int t = (int)threadIdx.x;
	g_log.push_back(t);
	__syncthreads();
	g_log.push_back(1 << 16 | t);
	float v = (float)(t + 1);
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	g_log.push_back(2 << 16 | t);
	sum[t] = v;
}

} // namespace

TEST(barrier_and_shuffle_order)
{
	const int n = 64;
	std::vector<float> sum(n, 0);
	g_log.clear();
	emu_launch(dim3(1), n, 0, [&] { k_phases(sum.data()); });
	/* the sweep's sequence: phase 0 by 0 .. 63; the last to arrive (63)
	 * goes on through phase 1 to its shuffle, then 0 .. 62 in turn each to
	 * theirs; warp 0's last lane (31) completes the first shuffle round,
	 * and so on: every phase-k record of a thread after all phase-(k-1)
	 * records of its barrier's threads (all 64 for phase 1, its warp's 32
	 * for phase 2) */
	std::vector<int> want;
	for (int t = 0; t < n; t++)
		want.push_back(t);
	want.push_back(1 << 16 | 63);
	for (int t = 0; t < 63; t++)
		want.push_back(1 << 16 | t);
	CHECK(g_log.size() == 3 * (size_t)n);
	CHECKF(g_log.size() >= 2 * (size_t)n &&
		       std::equal(want.begin(), want.end(), g_log.begin()),
	       "phase 0 and 1 records out of the sweep's order");
	for (int w = 0; w < 2; w++) {
		size_t last1 = 0, first2 = g_log.size();
		for (size_t i = 0; i < g_log.size(); i++) {
			int ph = g_log[i] >> 16, t = g_log[i] & 0xffff;
			if (t / 32 != w)
				continue;
			if (ph == 1)
				last1 = std::max(last1, i);
			if (ph == 2)
				first2 = std::min(first2, i);
		}
		CHECKF(last1 < first2, "warp %d: a lane passed the shuffles before all arrived", w);
	}
	for (int t = 0; t < n; t++) {
		float w = t < 32 ? 32 * 33 / 2.0f : (32 * 33 / 2.0f + 32 * 32);
		CHECKF(sum[(size_t)t] == w, "thread %d: warp sum %g, not %g", t, sum[(size_t)t], w);
	}
}

namespace {

void k_skip_barrier()
{
	if (threadIdx.x != 5)
		__syncthreads();
}

/* lane 3 at an ldmatrix while the others shuffle */
void k_diverge(float *o)
{
	float v = 1;
	if (threadIdx.x == 3) {
		uint32_t r[1];
		emu_ldsm(r, emu_smem + 16 * threadIdx.x, 1, false);
		v = (float)r[0];
	} else {
		v = __shfl_xor_sync(0xffffffffu, v, 1);
	}
	o[threadIdx.x] = v;
}

} // namespace

TEST(deadlock_and_divergence_abort)
{
	bool sig = false;
	std::string out = child("deadlock", &sig);
	CHECKF(aborted_with(out, sig, "deadlock"), "a skipped __syncthreads: %s", out.c_str());
	out = child("diverge", &sig);
	CHECKF(aborted_with(out, sig, "divergence"), "lanes at different collectives: %s",
	       out.c_str());
}

namespace {

void k_plain(float *o)
{
	o[threadIdx.x] = (float)threadIdx.x;
}

/* the profile's row for kernel name: launches and collectives (false: none) */
bool profile_row(const std::string &out, const char *name, unsigned long long *launches,
		 unsigned long long *coll)
{
	size_t at = 0;
	while (at < out.size()) {
		size_t nl = out.find('\n', at);
		std::string line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
		at = nl == std::string::npos ? out.size() : nl + 1;
		double sec;
		char nm[64];
		if (sscanf(line.c_str(), "%lf %llu %llu %63s", &sec, launches, coll, nm) == 4 &&
		    !strcmp(nm, name))
			return true;
	}
	return false;
}

} // namespace

TEST(profile_counts)
{
	bool sig = true;
	unsigned long long n = 0, c = 0;
	std::string out = child("profile", &sig, "EMU_PROFILE=1");
	CHECKF(!sig && out.find("simt profile:") != std::string::npos, "no profile table: %s",
	       out.c_str());
	/* a launch of k_phases: one __syncthreads and 5 shuffle rounds in each of 2 warps */
	CHECKF(profile_row(out, "k_phases", &n, &c) && n == 3 && c == 3 * (1 + 2 * 5),
	       "k_phases: %llu launches, %llu collectives (want 3, 33): %s", n, c, out.c_str());
	CHECKF(profile_row(out, "k_plain", &n, &c) && n == 2 && c == 0,
	       "k_plain: %llu launches, %llu collectives (want 2, 0): %s", n, c, out.c_str());
	out = child("profile", &sig, "EMU_PROFILE=0");
	CHECKF(!sig && out.find("simt profile") == std::string::npos, "EMU_PROFILE=0 printed: %s",
	       out.c_str());
}

namespace {

/* 32 threads, each with three 16-byte slots of shared memory: A (group 1),
 * B (group 2; zeros for odd threads, !valid), C (never committed). obs[t]
 * gets the first byte of A, B, C after the issues, after wait_group 1 and
 * after wait_group 0, 9 values a thread. */
void k_cp(const unsigned char *src, int *obs)
{
	int t = (int)threadIdx.x;
	unsigned char *a = emu_smem + 16 * t, *b = a + 512, *c = a + 1024;
	int *o = obs + 9 * t;
	emu_cp16(a, src + 16 * t, true);
	emu_cp_commit();
	emu_cp16(b, src + 512 + 16 * t, t % 2 == 0);
	emu_cp_commit();
	emu_cp16(c, src + 16 * t, true);
	for (int k = 0; k < 3; k++) {
		if (k)
			emu_cp_wait(2 - k);
		o[3 * k] = a[0], o[3 * k + 1] = b[0], o[3 * k + 2] = c[0];
	}
}

std::vector<int> cp_observe()
{
	std::vector<unsigned char> src(1024);
	for (size_t i = 0; i < src.size(); i++)
		src[i] = (unsigned char)(i / 16 + 1);   /* 1 .. 64: a slot's own byte */
	std::vector<int> obs(32 * 9, -1);
	emu_launch(dim3(1), 32, 2048, [&] { k_cp(src.data(), obs.data()); });
	return obs;
}

/* the observations that mode now (every copy at issue) or wait (each at its
 * group's wait; C never) must give: the number of threads that differ */
int cp_misses(const std::vector<int> &obs, bool now)
{
	int bad = 0;
	for (int t = 0; t < 32; t++) {
		int A = t + 1, B = t % 2 ? 0 : 33 + t, C = t + 1, old = 0xA5;
		int want[9] = { now ? A : old, now ? B : old, now ? C : old,   /* issued */
				A,         now ? B : old, now ? C : old,   /* wait_group 1 */
				A,         B,             now ? C : old }; /* wait_group 0 */
		bad += !std::equal(want, want + 9, obs.begin() + 9 * t);
	}
	return bad;
}

} // namespace

namespace {

unsigned char g_src[512];

/* warp 0 reads 512 bytes by ldmatrix while warp 1 refills them by
 * cp.async, no barrier between (sync: with one) */
void k_race_war(bool sync)
{
	int lane = threadIdx.x & 31;
	uint32_t r[4];
	if (threadIdx.x < 32)
		emu_ldsm(r, emu_smem + 16 * lane, 4, false);
	if (sync)
		__syncthreads();
	if (threadIdx.x >= 32) {
		emu_cp16(emu_smem + 16 * lane, g_src + 16 * lane, true);
		emu_cp_commit();
		emu_cp_wait(0);
	}
	__syncthreads();
}

/* a warp loads 512 bytes by cp.async, waits, and reads them by ldmatrix,
 * no barrier after the wait (sync: with one) */
void k_race_raw(bool sync)
{
	int lane = threadIdx.x & 31;
	uint32_t r[4];
	emu_cp16(emu_smem + 16 * lane, g_src + 16 * lane, true);
	emu_cp_commit();
	emu_cp_wait(0);
	if (sync)
		__syncthreads();
	emu_ldsm(r, emu_smem + 16 * lane, 4, false);
}

} // namespace

TEST(racecheck_pipelines)
{
	bool sig = false;
	std::string out = child("race_war", &sig);
	CHECKF(aborted_with(out, sig, "cp.async race"),
	       "a refill with no barrier after another warp's reads: %s", out.c_str());
	out = child("race_raw", &sig);
	CHECKF(aborted_with(out, sig, "since the last __syncthreads (none after the wait)"),
	       "a read with no barrier after the wait: %s", out.c_str());
	out = child("race_ok", &sig);
	CHECKF(returned(out, sig), "the same with barriers: %s", out.c_str());
	out = child("race_war", &sig, "EMU_RACECHECK=0");
	CHECKF(returned(out, sig), "EMU_RACECHECK=0: %s", out.c_str());
}

TEST(cp_async_lands_at_wait)
{
	int bad = cp_misses(cp_observe(), false);
	CHECKF(bad == 0, "EMU_CPASYNC=wait: %d threads saw their copies land out of turn", bad);
	bool sig = true;
	std::string out = child("cpnow", &sig, "EMU_CPASYNC=now");
	CHECKF(!sig && out.find("cpnow 0 threads off") != std::string::npos, "EMU_CPASYNC=now: %s",
	       out.c_str());
	out = child("cpbad", &sig);
	CHECKF(aborted_with(out, sig, "cp.async destination outside shared memory"),
	       "a cp.async to global memory: %s", out.c_str());
	out = child("cpsrc", &sig);
	CHECKF(aborted_with(out, sig, "cp.async source not 16-byte aligned"),
	       "a cp.async from 8 bytes off alignment: %s", out.c_str());
}

namespace {

/* element (r, k) of a 64-column bf16 atom, K-major, 128-byte swizzle: the
 * 16-byte chunk k / 8 of row r at chunk (k / 8) ^ (r % 8), rows 128 bytes
 * apart, 8-row groups 1024 */
size_t sw_off(int r, int k)
{
	return (size_t)(r / 8) * 1024 + (size_t)(r % 8) * 128 + (size_t)(((k / 8) ^ (r % 8)) * 16) +
	       (size_t)(k % 8) * 2;
}

float wa(int r, int k) { return (float)((r * 3 + k) % 7 - 3); }
float wb(int n, int k) { return (float)((n + 2 * k) % 5 - 2); }

uint64_t desc_at(size_t off)
{
	return (uint64_t)(off >> 4) | (uint64_t)1 << 16 | (uint64_t)64 << 32 | (uint64_t)1 << 62;
}

uint32_t pk(float lo, float hi)
{
	return (uint32_t)__float2bfloat16_rn(lo).x | (uint32_t)__float2bfloat16_rn(hi).x << 16;
}

/* one warpgroup: A (64 x 64) at 0 and B^T (64 x 64) at 8192 in shared
 * memory; d = 1 + A B over four k steps by descriptor, then a fifth step
 * with A's columns 0-15 from registers (mma's A fragment); what each
 * thread's accumulators held before the wait (early) and after (out) */
void k_wgmma(float *early, float *out)
{
	int t = (int)threadIdx.x, lane = t & 31, w = t >> 5, g = lane >> 2, c = lane & 3;
	if (t == 0)
		for (int r = 0; r < 64; r++)
			for (int k = 0; k < 64; k++) {
				__nv_bfloat16 a = __float2bfloat16_rn(wa(r, k)), b = __float2bfloat16_rn(wb(r, k));
				memcpy(emu_smem + sw_off(r, k), &a.x, 2);
				memcpy(emu_smem + 8192 + sw_off(r, k), &b.x, 2);
			}
	__syncthreads();
	float d[8][4];
	for (int j = 0; j < 8; j++)
		for (int e = 0; e < 4; e++)
			d[j][e] = 1.f;
	for (int kk = 0; kk < 4; kk++)
		emu_wgmma(&d[0][0], 64, NULL, desc_at((size_t)kk * 32), desc_at(8192 + (size_t)kk * 32), 1);
	emu_wgmma_commit();
	for (int i = 0; i < 32; i++)
		early[t * 32 + i] = d[i / 4][i % 4];
	emu_wgmma_wait(0);
	int r = 16 * w + g;
	uint32_t a[4] = { pk(wa(r, 2 * c), wa(r, 2 * c + 1)), pk(wa(r + 8, 2 * c), wa(r + 8, 2 * c + 1)),
			  pk(wa(r, 2 * c + 8), wa(r, 2 * c + 9)),
			  pk(wa(r + 8, 2 * c + 8), wa(r + 8, 2 * c + 9)) };
	emu_wgmma(&d[0][0], 64, a, 0, desc_at(8192), 1);
	emu_wgmma_commit();
	emu_wgmma_wait(0);
	for (int i = 0; i < 32; i++)
		out[t * 32 + i] = d[i / 4][i % 4];
}

} // namespace

/* The emulator's wgmma: B by descriptor as the N x K K-major slice, A by
 * descriptor or from registers, a warp's rows 16 (warp % 4) .., the
 * accumulators in mma's C layout, the result only at the wait. */
TEST(wgmma_layout_and_wait)
{
	std::vector<float> early(128 * 32), out(128 * 32);
	emu_launch(dim3(1), 128, 16384, [&] { k_wgmma(early.data(), out.data()); });
	size_t bad_early = 0, bad = 0;
	for (int t = 0; t < 128; t++)
		for (int i = 0; i < 32; i++) {
			int w = t / 32, g = (t % 32) / 4, c = t % 4, j = i / 4, e = i % 4;
			int r = 16 * w + g + 8 * (e / 2), n = 8 * j + 2 * c + e % 2;
			double want = 1;
			for (int k = 0; k < 64; k++)
				want += (double)wa(r, k) * wb(n, k);
			for (int k = 0; k < 16; k++)
				want += (double)wa(r, k) * wb(n, k);
			bad_early += early[t * 32 + i] != 1.f;
			bad += out[t * 32 + i] != (float)want;
		}
	CHECKF(bad_early == 0, "%zu accumulators changed before the wait", bad_early);
	CHECKF(bad == 0, "%zu of 4096 results differ from 1 + A B", bad);
}

/* What the hardware refuses to launch, the emulator aborts on: more than
 * 48 KiB of dynamic shared memory unless the kernel's
 * cudaFuncAttributeMaxDynamicSharedMemorySize covers it (the attribute
 * itself stops at EMU_SMEM, 227 KiB), a grid without blocks, and more than
 * 65,535 rows of blocks. */
TEST(launch_limits)
{
	std::vector<float> o(64);
	CHECKF(emu_set_smem_limit((const void *)&k_plain, EMU_SMEM + 1) != 0,
	       "a limit over %d bytes was taken", EMU_SMEM);
	/* 48 KiB needs no attribute; 64 KiB with the attribute at 64 KiB runs */
	emu_run_kernel((const void *)&k_phases, "k_phases", dim3(1), dim3(64), EMU_SMEM_DEFAULT,
		       [&] { k_phases(o.data()); });
	CHECK(emu_set_smem_limit((const void *)&k_phases, 64 * 1024) == 0);
	emu_run_kernel((const void *)&k_phases, "k_phases", dim3(1), dim3(64), 64 * 1024,
		       [&] { k_phases(o.data()); });
	CHECKF(o[0] == 528.f, "k_phases ran: %g", o[0]);
	bool sig = false;
	for (const char *mode : { "smem_unset", "smem_low" }) {
		std::string out = child(mode, &sig);
		CHECKF(aborted_with(out, sig, "the hardware refuses it"), "%s: %s", mode, out.c_str());
	}
	for (const char *mode : { "grid0", "gridy" }) {
		std::string out = child(mode, &sig);
		CHECKF(aborted_with(out, sig, "an invalid configuration"), "%s: %s", mode, out.c_str());
	}
}

int main(int argc, char **argv)
{
	self = argv[0];
	if (argc > 1) {
		std::vector<float> o(64);
		if (!strcmp(argv[1], "deadlock"))
			emu_launch(dim3(2), 64, 0, [&] { k_skip_barrier(); });
		else if (!strcmp(argv[1], "diverge"))
			emu_launch(dim3(1), 32, 512, [&] { k_diverge(o.data()); });
		else if (!strcmp(argv[1], "profile")) {
			for (int i = 0; i < 3; i++)
				emu_run_kernel((const void *)&k_phases, "k_phases", dim3(1), dim3(64), 0,
					       [&] { k_phases(o.data()); });
			for (int i = 0; i < 2; i++)
				emu_run_kernel((const void *)&k_plain, "k_plain", dim3(1), dim3(64), 0,
					       [&] { k_plain(o.data()); });
		} else if (!strcmp(argv[1], "cpnow")) {
			printf("cpnow %d threads off\n", cp_misses(cp_observe(), true));
		} else if (!strcmp(argv[1], "race_war")) {
			emu_launch(dim3(2), 64, 512, [&] { k_race_war(false); });
		} else if (!strcmp(argv[1], "race_raw")) {
			emu_launch(dim3(2), 32, 512, [&] { k_race_raw(false); });
		} else if (!strcmp(argv[1], "race_ok")) {
			emu_launch(dim3(2), 64, 512, [&] { k_race_war(true); });
			emu_launch(dim3(2), 32, 512, [&] { k_race_raw(true); });
		} else if (!strcmp(argv[1], "smem_unset") || !strcmp(argv[1], "smem_low")) {
			/* 64 KiB of dynamic shared memory: allowed only to a kernel
			 * given at least that much; k_plain gets 64 KiB - 16 bytes in
			 * smem_low, nothing in smem_unset */
			if (argv[1][5] == 'l')
				emu_set_smem_limit((const void *)&k_plain, 64 * 1024 - 16);
			emu_run_kernel((const void *)&k_plain, "k_plain", dim3(1), dim3(64), 64 * 1024,
				       [&] { k_plain(o.data()); });
		} else if (!strcmp(argv[1], "grid0") || !strcmp(argv[1], "gridy")) {
			/* no blocks, or 65,536 rows of blocks: an invalid configuration */
			dim3 g = argv[1][4] == '0' ? dim3(0) : dim3(1, 65536);
			emu_run_kernel((const void *)&k_plain, "k_plain", g, dim3(64), 0,
				       [&] { k_plain(o.data()); });
		} else if (!strcmp(argv[1], "cpsrc")) {
			/* a source 8 bytes off 16-byte alignment */
			alignas(16) unsigned char g[64] = { 1 };
			emu_launch(dim3(1), 32, 512, [&] { emu_cp16(emu_smem + 16 * threadIdx.x, g + 8, true); });
		} else if (!strcmp(argv[1], "cpbad")) {
			std::vector<unsigned char> g(64, 1), d(64, 0);
			emu_launch(dim3(1), 32, 0, [&] { emu_cp16(d.data() + 16 * (threadIdx.x & 1), g.data(), true); });
		}
		printf("returned\n");
		return 0;
	}
	RUN(barrier_and_shuffle_order);
	RUN(deadlock_and_divergence_abort);
	RUN(profile_counts);
	RUN(cp_async_lands_at_wait);
	RUN(racecheck_pipelines);
	RUN(wgmma_layout_and_wait);
	RUN(launch_limits);
	return t_done();
}

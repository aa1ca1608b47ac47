/* emu_test.h: what the emulator tests (tests/emu/test_*.cc) share: random
 * inputs, the check of a kernel's bf16 copy of its output, and child runs
 * for the tests of an abort. Include t.h first. */
#ifndef SUPKIT_EMU_TEST_H
#define SUPKIT_EMU_TEST_H

extern "C" {
#include "lib/rng.h"
}
#include "tests/emu/simt.h"

#include <string>
#include <vector>

#include <sys/wait.h>

/* n values drawn from N(0, s^2) */
static inline std::vector<float> normals(struct rng *r, size_t n, double s)
{
	std::vector<float> x(n);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(s * rng_normal(r));
	return x;
}

/* entries of b that are not a's values rounded to bf16 (nearest even) */
static inline size_t cast_misses(const std::vector<float> &a,
				 const std::vector<__nv_bfloat16> &b)
{
	size_t bad = 0;
	for (size_t i = 0; i < a.size(); i++)
		bad += __float2bfloat16_rn(a[i]).x != b[i].x;
	return bad;
}

/* Tests of an abort run this binary again (t.h's t_run_self, included
 * first): main sets self to argv[0], and a child given its argument does
 * the one thing that should abort, then prints "returned". */
inline std::string self;

/* run this binary with arg (env: assignments before it): its stdout and
 * stderr, and whether it died of a signal */
static inline std::string child(const char *arg, bool *signalled, const char *env = "")
{
	char out[8192];
	int st = t_run_self(self.c_str(), env, arg, out, sizeof out);
	/* the shell reports a child killed by SIGABRT as exit status 128 + 6 */
	*signalled = st != -1 && ((WIFSIGNALED(st)) || (WIFEXITED(st) && WEXITSTATUS(st) > 128));
	return out;
}

/* a child's output (sig: it died of a signal) says it aborted with `what`
 * before it could return */
static inline bool aborted_with(const std::string &out, bool sig, const char *what)
{
	return sig && out.find(what) != std::string::npos && out.find("returned") == std::string::npos;
}

/* ... or that it returned */
static inline bool returned(const std::string &out, bool sig)
{
	return !sig && out.find("returned") != std::string::npos;
}

#endif

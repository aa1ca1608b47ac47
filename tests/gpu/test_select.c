/* test_select.c: trainer/backend_select.c in whatever build it is linked
 * with: backend = cpu | cuda | auto gives the table the build and machine
 * allow, or a usage error that says why; backend memory is zeroed.
 * Built and run by tests/gpu/select.sh (no GPU needed).
 * Reference: supkit-formats(5) (the backend key), trainer/backend_select.h.
 */
#include <string.h>

#include "t.h"
#include "lib/err.h"
#include "trainer/backend_select.h"
#include "trainer/config.h"

static int cfg_with(struct config *c, const char *backend, const char *dtype)
{
	struct err e = {0};
	char kv[64];
	config_defaults(c);
	snprintf(kv, sizeof kv, "backend=%s", backend);
	if (config_set(c, kv, &e) != 0)
		return -1;
	snprintf(kv, sizeof kv, "dtype=%s", dtype);
	return config_set(c, kv, &e);
}

TEST(cpu_always)
{
	struct config c;
	struct err e = {0};
	CHECK(cfg_with(&c, "cpu", "fp32") == 0);
	const struct backend_ops *b = backend_select(&c, &e);
	CHECK(b && strcmp(b->name, "cpu") == 0);
	CHECK(cfg_with(&c, "cpu", "fp64") == 0);
	b = backend_select(&c, &e);
	CHECK(b && strcmp(b->name, "cpu") == 0);
}

TEST(cuda_or_reason)
{
	struct config c;
	struct err e = {0};
	CHECK(cfg_with(&c, "cuda", "fp32") == 0);
	const struct backend_ops *b = backend_select(&c, &e);
	if (!backend_cuda_built()) {
		CHECK(b == NULL && e.code == EXIT_USAGE && strstr(e.msg, "GPU=1") != NULL);
		CHECK(!backend_cuda_present());
	} else if (!backend_cuda_present()) {
		CHECK(b == NULL && e.code == EXIT_USAGE && strstr(e.msg, "no CUDA device") != NULL);
	} else {
		CHECK(b && strcmp(b->name, "cuda") == 0);
	}
	struct err e2 = {0};
	CHECK(cfg_with(&c, "cuda", "fp64") == 0);
	CHECK(backend_select(&c, &e2) == NULL && e2.code == EXIT_USAGE);
}

TEST(auto_pick)
{
	struct config c;
	struct err e = {0};
	CHECK(cfg_with(&c, "auto", "fp32") == 0);
	const struct backend_ops *b = backend_select(&c, &e);
	CHECK(b && strcmp(b->name, backend_cuda_present() ? "cuda" : "cpu") == 0);
	CHECK(cfg_with(&c, "auto", "fp64") == 0);
	b = backend_select(&c, &e);
	CHECK(b && strcmp(b->name, "cpu") == 0);
}

TEST(memory)
{
	const struct backend_ops *b = backend_cpu();
	unsigned char *p = backend_alloc(b, 4096);
	int nz = 0;
	for (int i = 0; i < 4096; i++)
		nz += p[i] != 0;
	CHECK(nz == 0);
	backend_free(b, p);
	size_t peak = 1;
	CHECK(b->device_bytes(&peak) == 0 && peak == 0);
}

/* --device N (config field device): a device the backend does not have is a
 * usage error naming it, on the CPU backend (device 0 only) and on CUDA
 * (1,000 devices are more than any machine shows) */
TEST(device_index)
{
	struct config c;
	struct err e = {0};
	CHECK(cfg_with(&c, "cpu", "fp32") == 0);
	c.device = 3;
	CHECK(backend_select(&c, &e) == NULL && e.code == EXIT_USAGE && strstr(e.msg, "device 3"));
	c.device = 0;
	err_clear(&e);
	CHECK(backend_select(&c, &e) == backend_cpu());
	if (backend_cuda_present()) {
		CHECK(cfg_with(&c, "cuda", "fp32") == 0);
		c.device = 1000;
		err_clear(&e);
		CHECKF(backend_select(&c, &e) == NULL && e.code == EXIT_USAGE &&
		       strstr(e.msg, "device 1000: no such CUDA device"), "%s", e.msg);
	}
}

int main(void)
{
	RUN(cpu_always);
	RUN(cuda_or_reason);
	RUN(auto_pick);
	RUN(memory);
	RUN(device_index);
	return t_done();
}

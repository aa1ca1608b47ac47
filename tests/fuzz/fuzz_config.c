/* fuzz_config.c: libFuzzer harness for the trainer config parser
 * (trainer/config.c config_load_text, config_validate, config_print).
 *
 * Invariants: a refusal carries a one-line message naming the input; an
 * accepted text prints a canonical form that parses back (from defaults) to
 * a config printing the same bytes, with the same SHA-256; config_validate
 * either accepts or gives a one-line reason.
 *
 * Leaves out: config_load_file (it reads at most 1 MiB, then calls
 * config_load_text) and --set (config_set is apply_line on one line, which
 * every line here goes through).
 * Seeds: configs/baseline.cfg, configs/arms/d8/ *.cfg, tests/fixtures/train/tiny.cfg
 * (tests/fuzz/seeds.txt). Reference: trainer/config.h, supkit-formats(5). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_one_line(const struct err *e)
{
	if (!e->msg[0] || strchr(e->msg, '\n'))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c, c2;
	struct err e = {0};
	config_defaults(&c);
	if (config_load_text(&c, (const char *)data, size, "fuzz.cfg", &e) != 0) {
		fuzz_one_line(&e);
		return 0;
	}
	if (config_validate(&c, &e) != 0)
		fuzz_one_line(&e);
	char *p = config_print(&c);
	config_defaults(&c2);
	if (config_load_text(&c2, p, strlen(p), "fuzz-reprint", &e) != 0)
		abort(); /* the canonical form of an accepted config must parse */
	char *p2 = config_print(&c2);
	if (strcmp(p, p2) != 0)
		abort();
	char h1[65], h2[65];
	config_sha256(&c, h1);
	config_sha256(&c2, h2);
	if (strcmp(h1, h2) != 0)
		abort();
	free(p);
	free(p2);
	return 0;
}

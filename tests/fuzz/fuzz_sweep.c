/* fuzz_sweep.c: libFuzzer harness for the sweep file (sweep/sweep.c
 * sweep_parse_text) and the job array script made from it
 * (sweep/slurm.c sweep_sbatch_script).
 *
 * Invariants: a refusal carries a one-line message naming the input; an
 * accepted file has arms and seeds, no duplicate arm or seed, overrides that
 * are config keys other than arm and seed; every #SBATCH line of its script
 * is `#SBATCH --NAME=VALUE` with VALUE of letters, digits and _ . , : % / -
 * only (a sweep file cannot put a shell or sbatch word into the script).
 *
 * Leaves out: sweep_expand (it reads the files the sweep names, which a
 * fuzzer must not choose; its configs go through config_set_at, the
 * config harness's parser).
 * Seeds: tests/fixtures/sweep/ *.cfg (tests/fuzz/seeds.txt). Reference:
 * sweep/sweep.h, supkit-sweep(1). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/sweep.h"
#include "trainer/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sbatch_value_ok(const char *v, const char *end)
{
	if (v == end)
		return 0;
	for (; v < end; v++) {
		char c = *v;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("_.,:%/-", c)))
			return 0;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sweep s;
	struct err e = {0};
	if (sweep_parse_text(&s, (const char *)data, size, "fuzz.cfg", "/w", &e) != 0) {
		if (!e.msg[0] || strchr(e.msg, '\n') || !strstr(e.msg, "fuzz.cfg"))
			abort();
		sweep_free(&s);
		return 0;
	}
	if (s.n_arms < 1 || s.n_seeds < 1)
		abort();
	for (int i = 0; i < s.n_arms; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(s.arms[i], s.arms[j]))
				abort();
	for (int i = 0; i < s.n_seeds; i++)
		for (int j = 0; j < i; j++)
			if (s.seeds[i] == s.seeds[j])
				abort();
	for (int i = 0; i < s.n_over; i++)
		if (!config_has_key(s.over[i].key) || !strcmp(s.over[i].key, "arm") || !strcmp(s.over[i].key, "seed"))
			abort();
	const char *names[] = {"a_d8_s1"};
	char *t = sweep_sbatch_script(&s, "/w/out", "/w/bin/supkit-sweep", names, 1, sweep_gres(&s), &e);
	if (!t)
		abort();
	for (char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *end = strchr(l, '\n');
		if (!end)
			end = l + strlen(l);
		if (strncmp(l, "#SBATCH", 7))
			continue;
		char *eq = memchr(l, '=', (size_t)(end - l));
		if (strncmp(l, "#SBATCH --", 10) || !eq || !sbatch_value_ok(eq + 1, end))
			abort();
		for (char *p = l + 10; p < eq; p++)
			if (!((*p >= 'a' && *p <= 'z') || *p == '-'))
				abort();
	}
	free(t);
	sweep_free(&s);
	return 0;
}

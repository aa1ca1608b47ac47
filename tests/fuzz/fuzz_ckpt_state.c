/* fuzz_ckpt_state.c: libFuzzer harness for the resume state reader
 * (trainer/checkpoint.c ckpt_state_read), which reads RUNDIR/checkpoint/
 * state.json on --resume.
 *
 * The run has 20 steps. Invariants: a refusal carries a one-line message
 * naming the file; an accepted state has step in [0, 20), a curve of step
 * objects whose "step" is their index and whose loss is finite, finite
 * seconds with training_seconds <= training_loop_seconds, blas_threads in
 * [1, CKPT_BLAS_THREADS_MAX], and 64 lower-case hex digits for
 * config_sha256 and every file; written back (ckpt_state_write) it reads
 * back the same.
 * Seed: tests/fuzz/corpus/ckpt_state/step3.json; FUZZ_WRITE_SEED=PATH makes
 * the harness write it (tests/fuzz/README.md). Reference:
 * trainer/checkpoint.h. Needs a path: the bytes go to a file in a private
 * temporary folder. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "trainer/checkpoint.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { FZ_STEPS = 20 };
static char fuzz_dir[64];

static void fuzz_cleanup(void)
{
	if (fuzz_dir[0])
		dir_remove_tree(fuzz_dir);
}

static int hex64(const char *s)
{
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[64] == 0;
}

/* The seed: a state at step 3 of a run. */
static void fuzz_write_seed(const char *path)
{
	struct ckpt_state st;
	struct err e = {0};
	memset(&st, 0, sizeof st);
	st.step = 3;
	st.training_seconds = 0.5;
	st.training_loop_seconds = 0.75;
	st.blas_threads = 1;
	memset(st.config_sha256, 'c', 64);
	for (int i = 0; i < CKPT_NFILES; i++)
		memset(st.sha256[i], '0' + i, 64);
	st.curve = cJSON_CreateArray();
	for (int i = 0; i < 3; i++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddNumberToObject(c, "step", i);
		cJSON_AddNumberToObject(c, "loss", 6.25 - i);
		cJSON_AddNumberToObject(c, "lrm", 1);
		cJSON_AddItemToArray(st.curve, c);
	}
	if (ckpt_state_write(path, &st, &e) != 0) {
		fprintf(stderr, "fuzz_ckpt_state: %s\n", e.msg);
		abort();
	}
	cJSON_Delete(st.curve);
}

static void fuzz_init(void)
{
	snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/supkit-fuzz-state-XXXXXX");
	if (!mkdtemp(fuzz_dir))
		abort();
	atexit(fuzz_cleanup);
	const char *seed = getenv("FUZZ_WRITE_SEED");
	if (seed)
		fuzz_write_seed(seed);
}

static void fuzz_check(const struct ckpt_state *st)
{
	if (st->step < 0 || st->step >= FZ_STEPS || !st->curve || cJSON_GetArraySize(st->curve) != st->step)
		abort();
	int64_t i = 0;
	for (const cJSON *c = st->curve->child; c; c = c->next, i++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "step");
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, "loss");
		if (!cJSON_IsNumber(s) || s->valuedouble != (double)i || !cJSON_IsNumber(l) || !isfinite(l->valuedouble))
			abort();
	}
	if (!isfinite(st->training_seconds) || !isfinite(st->training_loop_seconds) || st->training_seconds < 0 ||
	    st->training_loop_seconds < st->training_seconds)
		abort();
	if (st->blas_threads < 1 || st->blas_threads > CKPT_BLAS_THREADS_MAX || !hex64(st->config_sha256))
		abort();
	for (int k = 0; k < CKPT_NFILES; k++)
		if (!hex64(st->sha256[k]))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!fuzz_dir[0])
		fuzz_init();
	char *path = path_join(fuzz_dir, "state.json");
	char *back = path_join(fuzz_dir, "back.json");
	struct err e = {0};
	struct ckpt_state st, st2;
	fuzz_write_file(path, data, size);
	if (ckpt_state_read(path, FZ_STEPS, &st, &e) != 0) {
		if (!e.msg[0] || strchr(e.msg, '\n') || !strstr(e.msg, path))
			abort();
	} else {
		fuzz_check(&st);
		if (ckpt_state_write(back, &st, &e) != 0 || ckpt_state_read(back, FZ_STEPS, &st2, &e) != 0)
			abort();
		if (st2.step != st.step || st2.training_seconds != st.training_seconds ||
		    st2.training_loop_seconds != st.training_loop_seconds || st2.blas_threads != st.blas_threads ||
		    strcmp(st2.config_sha256, st.config_sha256) || memcmp(st2.sha256, st.sha256, sizeof st.sha256))
			abort();
		ckpt_state_release(&st2);
		ckpt_state_release(&st);
		unlink(back);
	}
	unlink(path);
	free(path);
	free(back);
	return 0;
}

/* fuzz_ckpt_state.c: libFuzzer harness for the resume state, as supkit
 * train --resume reads RUNDIR/checkpoint/state.json (trainer/checkpoint.c
 * ckpt_state_read_mem, behind ckpt_state_read) and checks the checkpoint's
 * files against it (ckpt_state_verify).
 *
 * Each input is read for a run of 20 steps and for a run of 1 step.
 * Invariants: a refusal carries a one-line message naming the file; an
 * accepted state has step in [0, steps), a curve of step objects whose
 * "step" is their index and whose loss is finite, finite seconds with
 * 0 <= training_seconds <= training_loop_seconds, blas_threads in
 * [1, CKPT_BLAS_THREADS_MAX], and 64 lower-case hex digits for
 * config_sha256 and every file; written back (ckpt_state_text) it reads
 * back the same, curve included. The checkpoint folder the harness made at
 * start holds the three files with fixed contents: ckpt_state_verify passes
 * exactly when the state records their SHA-256s, and otherwise names the
 * first file that differs, in one line.
 * Seed: tests/fuzz/corpus/ckpt_state/step3.json (the real SHA-256s of the
 * fixed files); FUZZ_WRITE_SEED=PATH makes the harness write it
 * (tests/fuzz/README.md). Reference: trainer/checkpoint.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/sha256.h"
#include "trainer/checkpoint.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[64];
static char fuzz_sha[CKPT_NFILES][SHA256_HEX_LEN + 1];   /* of the fixed files */

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

/* The seed: a state at step 3 of a run, recording the fixed files. */
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
	memcpy(st.sha256, fuzz_sha, sizeof st.sha256);
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

/* The checkpoint folder: each file holds its own name. */
static void fuzz_init(void)
{
	struct err e = {0};
	fuzz_temp_dir(fuzz_dir, sizeof fuzz_dir, "state");
	atexit(fuzz_cleanup);
	for (int i = 0; i < CKPT_NFILES; i++) {
		char *p = path_join(fuzz_dir, ckpt_files[i]);
		if (file_write_atomic(p, ckpt_files[i], strlen(ckpt_files[i]), &e) != 0)
			abort();
		sha256_buf_hex(ckpt_files[i], strlen(ckpt_files[i]), fuzz_sha[i]);
		free(p);
	}
	const char *seed = getenv("FUZZ_WRITE_SEED");
	if (seed)
		fuzz_write_seed(seed);
}

static void fuzz_check(const struct ckpt_state *st, int64_t steps)
{
	if (st->step < 0 || st->step >= steps || !st->curve || cJSON_GetArraySize(st->curve) != st->step)
		abort();
	int64_t i = 0;
	for (const cJSON *c = st->curve->child; c; c = c->next, i++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "step");
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, "loss");
		if (!cJSON_IsObject(c) || !cJSON_IsNumber(s) || s->valuedouble != (double)i || !cJSON_IsNumber(l) ||
		    !isfinite(l->valuedouble))
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

/* ckpt_state_verify against the fixed folder: passes exactly when every
 * recorded SHA-256 is the file's; else one line naming the first file
 * that differs. */
static void fuzz_verify(const struct ckpt_state *st)
{
	struct err e = {0};
	int first = -1;
	for (int k = 0; k < CKPT_NFILES && first < 0; k++)
		if (strcmp(st->sha256[k], fuzz_sha[k]))
			first = k;
	int r = ckpt_state_verify(fuzz_dir, st, &e);
	if ((r == 0) != (first < 0))
		abort();
	if (r != 0 && (e.code != EXIT_USAGE || !e.msg[0] || strchr(e.msg, '\n') || !strstr(e.msg, ckpt_files[first])))
		abort();
}

static void fuzz_one(const uint8_t *data, size_t size, int64_t steps)
{
	static const char name[] = "run/checkpoint/state.json";
	struct err e = {0};
	struct ckpt_state st, st2;
	if (ckpt_state_read_mem((const char *)data, size, name, steps, &st, &e) != 0) {
		if (!e.msg[0] || strchr(e.msg, '\n') || !strstr(e.msg, name))
			abort();
		return;
	}
	fuzz_check(&st, steps);
	fuzz_verify(&st);
	char *text = ckpt_state_text(&st);
	if (ckpt_state_read_mem(text, strlen(text), name, steps, &st2, &e) != 0)
		abort();
	if (st2.step != st.step || st2.training_seconds != st.training_seconds ||
	    st2.training_loop_seconds != st.training_loop_seconds || st2.blas_threads != st.blas_threads ||
	    strcmp(st2.config_sha256, st.config_sha256) || memcmp(st2.sha256, st.sha256, sizeof st.sha256))
		abort();
	char *c1 = json_print(st.curve, 0), *c2 = json_print(st2.curve, 0);
	if (strcmp(c1, c2))
		abort();
	free(c1);
	free(c2);
	free(text);
	ckpt_state_release(&st2);
	ckpt_state_release(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t empty[1];
	if (!data)
		data = empty;   /* libFuzzer's empty input */
	if (!fuzz_dir[0])
		fuzz_init();
	fuzz_one(data, size, 20);
	fuzz_one(data, size, 1);
	return 0;
}

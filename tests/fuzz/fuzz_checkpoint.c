/* fuzz_checkpoint.c: libFuzzer harness for the checkpoint reader
 * (trainer/checkpoint.c checkpoint_load over lib/safetensors.c), the reader
 * behind init_from = FILE.safetensors, where the file may come from anyone.
 *
 * The table is a small fixed model (depth 1, d 32, V 16, T 8, OE, paired QK
 * scales with the l0_hf16 mask). Invariants: a refusal carries a one-line
 * message; on success every bf16-stored parameter holds bf16 values (low 16
 * bits zero, NaN aside) and every masked entry is 0.
 * Leaves out: the safetensors grammar itself (fuzz_safetensors.c).
 * Seed: tests/fuzz/corpus/checkpoint/model.safetensors, the model's own
 * checkpoint; FUZZ_WRITE_SEED=PATH makes the harness write it (see
 * tests/fuzz/README.md). Reference: trainer/checkpoint.h, supkit-formats(5).
 * Needs a path: the bytes go to a file in a private temporary folder. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "trainer/checkpoint.h"
#include "trainer/model.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct model *fuzz_model;
static char fuzz_dir[64];

static void fuzz_cleanup(void)
{
	if (fuzz_dir[0])
		dir_remove_tree(fuzz_dir);
	model_free(fuzz_model);
}

static void fuzz_init(void)
{
	static const char *const kv[] = {"depth=1", "model_dim=32", "head_dim=32", "vocab_size=16",
					 "seq_len=8", "window_pattern=L", "ve_gate_channels=8",
					 "init=dense", "oe=1", "oe_m=5", "qk_scale=pair",
					 "qk_mask=l0_hf16", NULL};
	struct config c;
	struct err e = {0};
	config_defaults(&c);
	for (size_t i = 0; kv[i]; i++)
		if (config_set(&c, kv[i], &e) != 0)
			goto fail;
	if (config_validate(&c, &e) != 0 || model_create(&c, &fuzz_model, &e) != 0)
		goto fail;
	snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/supkit-fuzz-ckpt-XXXXXX");
	if (!mkdtemp(fuzz_dir))
		abort();
	atexit(fuzz_cleanup);
	const char *seed = getenv("FUZZ_WRITE_SEED");
	if (seed && model_save(fuzz_model, seed, NULL, &e) != 0)
		goto fail;
	return;
fail:
	fprintf(stderr, "fuzz_checkpoint: %s\n", e.msg);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!fuzz_model)
		fuzz_init();
	char *path = path_join(fuzz_dir, "in.safetensors");
	struct err e = {0};
	fuzz_write_file(path, data, size);
	struct param_table *t = model_params(fuzz_model);
	if (checkpoint_load(t, path, &e) != 0) {
		if (!e.msg[0] || strchr(e.msg, '\n'))
			abort();
	} else {
		for (size_t i = 0; i < t->n; i++) {
			const struct param *p = &t->p[i];
			for (size_t j = 0; j < p->numel; j++) {
				float v = param_w_at(p, j);   /* OE tables: bf16 storage */
				uint32_t u;
				memcpy(&u, &v, sizeof u);
				if (p->store == PARAM_BF16 && (u & 0xffff) && !isnan(v))
					abort();
				if (p->mask && p->mask[j] && v != 0)
					abort();
			}
		}
	}
	unlink(path);
	free(path);
	return 0;
}

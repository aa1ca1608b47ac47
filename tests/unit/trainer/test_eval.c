/* test_eval.c: trainer/eval.c's reading of a checkpoint without a config
 * (eval_infer_config): for models of every arm, a file holding exactly the
 * parameter table's tensors (trainer/paramspec.c), plain or with
 * torch.compile's "_orig_mod." prefix, gives back the model keys of the
 * config that made it; keys a config or --set gives are kept; what no shape
 * shows (oe_n and oe_k, anchor) is asked for, and a file without the
 * tensors the shapes come from is refused, each in one line naming the file.
 * The BPB itself is checked end to end in tests/cli/eval.sh (against the
 * trainer's figures and PyTorch's). Files go to a fresh temporary folder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"
#include "lib/fileio.h"
#include "lib/safetensors.h"
#include "trainer/config.h"
#include "trainer/eval.h"
#include "trainer/paramspec.h"

static char dir[] = "/tmp/supkit-eval-XXXXXX";

static int cfg_of(struct config *c, const char *const *kv)
{
	struct err e = {0};
	config_defaults(c);
	for (size_t i = 0; kv && kv[i]; i++)
		if (config_set(c, kv[i], &e) < 0) {
			printf("  %s: %s\n", kv[i], e.msg);
			return -1;
		}
	return config_validate(c, &e);
}

/* The parameter table of c as a safetensors file at path (zeros, F32),
 * each name prefixed by pre, the tensor named drop (NULL: none) left out. */
static int write_table(const struct config *c, const char *path, const char *pre, const char *drop)
{
	struct param_spec *s;
	size_t n, most = 1;
	struct err e = {0};
	if (paramspec_build(c, &s, &n, &e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		most = s[i].numel > most ? s[i].numel : most;
	float *z = calloc(most, sizeof *z);
	char **names = calloc(n, sizeof *names);
	struct st_writer w;
	st_writer_init(&w);
	for (size_t i = 0; i < n; i++) {
		if (drop && !strcmp(s[i].name, drop))
			continue;
		names[i] = xasprintf("%s%s", pre, s[i].name);
		st_writer_add(&w, names[i], ST_F32, s[i].ndim, s[i].shape, z);
	}
	int r = st_write(&w, path, &e);
	st_writer_release(&w);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(z);
	free(s);
	return r;
}

/* The keys eval_infer_config derives, as config_print writes them. */
static const char *const model_keys[] = {"depth", "model_dim", "head_dim", "vocab_size", "ve_gate_channels",
					 "qk_scale", "oe", "oe_m", "wte_lambdas", "out_lambdas", "sub_gains",
					 "rope_tau", NULL};

/* The line "key = value" of config_print(c) (fresh string). */
static char *line_of(const struct config *c, const char *key)
{
	char *t = config_print(c);
	char *want = xasprintf("\n%s = ", key), *at = strstr(t, want), *r = NULL;
	if (at) {
		at++;
		r = xstrndup(at, strcspn(at, "\n"));
	}
	free(want);
	free(t);
	return r ? r : xstrdup("(none)");
}

TEST(infers_every_arm)
{
	static const char *const cases[][10] = {
		{"depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", NULL},
		{"depth=3", "model_dim=96", "head_dim=16", "vocab_size=80", "ve_gate_channels=12", NULL},
		{"depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "oe=1", "oe_m=13", "qk_scale=pair",
		 "wte_lambdas=1", "out_lambdas=1", NULL},
		{"depth=4", "model_dim=64", "head_dim=16", "vocab_size=64", "qk_scale=untied", "wte_lambdas=1",
		 "anchor=shared", NULL},
		{"depth=1", "model_dim=64", "head_dim=32", "vocab_size=50", "qk_scale=head", NULL},
		{"depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "sub_gains=1", "qk_scale=pair", NULL},
		{"depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "sub_gains=1", "rope_tau=shared", NULL},
		{"depth=3", "model_dim=64", "head_dim=16", "vocab_size=64", "rope_tau=head", "qk_scale=pair", NULL},
		{"depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "oe=1", "oe_m=7", "oe_n=2", "oe_k=4",
		 NULL},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
		for (int pre = 0; pre < 2; pre++) {
			struct config want, got;
			if (cfg_of(&want, cases[k]) < 0) {
				CHECKF(0, "case %zu: bad config", k);
				continue;
			}
			char *p = xasprintf("%s/c%zu_%d.safetensors", dir, k, pre);
			CHECK(write_table(&want, p, pre ? "_orig_mod." : "", NULL) == 0);
			/* what no shape shows, given as --set would */
			const char *given[4] = {NULL};
			int ng = 0;
			char nk[2][32];
			if (want.oe) {
				snprintf(nk[0], sizeof nk[0], "oe_n=%d", want.oe_n);
				snprintf(nk[1], sizeof nk[1], "oe_k=%d", want.oe_k);
				given[ng++] = nk[0];
				given[ng++] = nk[1];
			}
			if (want.wte_lambdas)
				given[ng++] = want.anchor == ANCHOR_SHARED ? "anchor=shared" : "anchor=separate";
			struct err e = {0};
			config_defaults(&got);
			for (int i = 0; i < ng; i++)
				CHECK(config_set(&got, given[i], &e) == 0);
			int rc = eval_infer_config(p, &got, &e);
			CHECKF(rc == 0, "case %zu prefix %d: %s", k, pre, e.msg);
			if (rc == 0) {
				CHECKF(config_validate(&got, &e) == 0, "case %zu: %s", k, e.msg);
				for (int i = 0; model_keys[i]; i++) {
					char *a = line_of(&want, model_keys[i]), *b = line_of(&got, model_keys[i]);
					CHECKF(!strcmp(a, b), "case %zu prefix %d: '%s', want '%s'", k, pre, b, a);
					free(a);
					free(b);
				}
				CHECK(config_model_dim(&got) == config_model_dim(&want));
				CHECK(got.anchor == want.anchor && got.oe_n == want.oe_n && got.oe_k == want.oe_k);
			}
			free(p);
		}
}

TEST(keeps_given_keys_and_asks_for_the_rest)
{
	static const char *const arms[] = {"depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "oe=1",
					   "oe_m=13", "wte_lambdas=1", NULL};
	struct config c, got;
	CHECK(cfg_of(&c, arms) == 0);
	char *p = xasprintf("%s/arms.safetensors", dir);
	CHECK(write_table(&c, p, "", NULL) == 0);
	struct err e = {0};
	/* oe_n and oe_k: 4 tables are 3 x 2, 2 x 4 or 5 x 1 */
	config_defaults(&got);
	CHECK(config_set(&got, "anchor=separate", &e) == 0);
	CHECK(eval_infer_config(p, &got, &e) == -1 && e.code == EXIT_USAGE);
	CHECKF(strstr(e.msg, "arms.safetensors': OE tables") && strstr(e.msg, "--set oe_n=N") &&
	       !strchr(e.msg, '\n'), "%s", e.msg);
	/* anchor */
	config_defaults(&got);
	CHECK(config_set(&got, "oe_n=3", &e) == 0 && config_set(&got, "oe_k=2", &e) == 0);
	CHECK(eval_infer_config(p, &got, &e) == -1);
	CHECKF(strstr(e.msg, "'wte_lambdas'") && strstr(e.msg, "anchor=separate|shared"), "%s", e.msg);
	/* a key given stays: depth 3 here (the checkpoint then will not load) */
	config_defaults(&got);
	CHECK(config_set(&got, "oe_n=3", &e) == 0 && config_set(&got, "oe_k=2", &e) == 0 &&
	      config_set(&got, "anchor=separate", &e) == 0 && config_set(&got, "depth=3", &e) == 0);
	CHECKF(eval_infer_config(p, &got, &e) == 0, "%s", e.msg);
	CHECK(got.depth == 3 && got.vocab_size == 64 && got.model_dim == 64 && got.oe && got.oe_m == 13);
	free(p);
}

TEST(refuses_what_shapes_cannot_say)
{
	static const char *const base[] = {"depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", NULL};
	struct config c, got;
	CHECK(cfg_of(&c, base) == 0);
	static const struct {
		const char *drop, *want;
	} cases[] = {
		{"transformer.wte.weight", "no tensor 'transformer.wte.weight'"},
		{"resid_lambdas", "no tensor 'resid_lambdas'"},
		{"transformer.h.1.attn.ve_gate.weight", "head_dim cannot be inferred"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char *p = xasprintf("%s/drop%zu.safetensors", dir, k);
		CHECK(write_table(&c, p, "", cases[k].drop) == 0);
		struct err e = {0};
		config_defaults(&got);
		CHECK(eval_infer_config(p, &got, &e) == -1 && e.code == EXIT_USAGE);
		CHECKF(strstr(e.msg, p) && strstr(e.msg, cases[k].want) && strstr(e.msg, "--config"), "%s", e.msg);
		free(p);
	}
	/* not safetensors at all */
	char *p = xasprintf("%s/x.pt", dir);
	struct err e = {0};
	CHECK(file_write_atomic(p, "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8", 12, &e) == 0);
	config_defaults(&got);
	CHECK(eval_infer_config(p, &got, &e) == -1);
	CHECKF(strstr(e.msg, "this is a PyTorch pickle"), "%s", e.msg);
	free(p);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(infers_every_arm);
	RUN(keeps_given_keys_and_asks_for_the_rest);
	RUN(refuses_what_shapes_cannot_say);
	dir_remove_tree(dir);
	return t_done();
}

/* test_config.c: trainer/config.c (key = value format, overrides, validation,
 * canonical form, arms) and trainer/paramspec.c (the parameter table).
 *
 * Parameter counts are checked against numbers derived by hand from the
 * architecture (docs/model.md and the arms), written out in the comments beside them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"
#include "lib/fileio.h"
#include "trainer/config.h"
#include "trainer/paramspec.h"

static int load(struct config *c, const char *text, struct err *e)
{
	config_defaults(c);
	if (config_load_text(c, text, strlen(text), "t.cfg", e) != 0)
		return -1;
	return config_validate(c, e);
}

TEST(defaults_are_benchmark)
{
	struct config c;
	config_defaults(&c);
	CHECK(c.depth == 8 && c.vocab_size == 8192 && c.seq_len == 2048);
	CHECK(c.batch_rows == 64 && c.grad_accum == 4 && c.steps == 953);
	CHECK_STREQ(c.arm, "00_dense_native");
	CHECK(c.oe_m == 150855 && c.oe_n == 3 && c.oe_k == 2);
	CHECK(c.norm_eps == 1.0 / 8388608.0);
	CHECK(c.qk_scale == QK_SCALE_NONE && c.muoneq == MUONEQ_OFF && c.embed_state == EMBED_STATE_BF16);
	/* the benchmark's arithmetic as it ran (torch.compile, autocast on CUDA) */
	CHECK(c.logits == LOGITS_BF16 && c.polar == POLAR_BF16 && c.polar_arith == POLAR_ARITH_COMPILED);
	struct err e;
	CHECK(config_validate(&c, &e) == 0);
}

TEST(baseline_file_equals_defaults)
{
	struct config a, b;
	struct err e;
	config_defaults(&a);
	config_defaults(&b);
	CHECKF(config_load_file(&b, "configs/baseline.cfg", &e) == 0, "%s", e.msg);
	char *pa = config_print(&a), *pb = config_print(&b);
	CHECK_STREQ(pb, pa);
	free(pa);
	free(pb);
	/* every key of the table appears in baseline.cfg */
	for (int i = 0; i < config_key_count(); i++)
		CHECKF(b.origin.key_src[i] != 0, "key '%s' missing from baseline.cfg", config_key_name(i));
}

TEST(syntax)
{
	struct config c;
	struct err e;
	const char *t = "# comment\n\n  depth=6   # trailing comment\r\n"
			"vocab_size =\t512\nvocab_size = 1024\ninit_from = a#b.safetensors\n"
			"muoneq = rc\n";
	CHECKF(load(&c, t, &e) == 0, "%s", e.msg);
	CHECK(c.depth == 6);
	CHECK(c.vocab_size == 1024); /* later lines win */
	CHECK_STREQ(c.init_from, "a#b.safetensors");
	CHECK(c.muoneq == MUONEQ_RC);
	CHECK(config_model_dim(&c) == 384 && config_heads(&c) == 3);
}

/* A line ends at LF, CR LF or a lone CR: a CR-only file that opens with a
 * comment is not one long comment (which left every key at its default),
 * and errors count lines the same way. */
TEST(line_ends_cr_crlf_lf)
{
	const char *texts[] = {
		"# comment\rdepth = 6\rvocab_size = 512\r",
		"# comment\r\ndepth = 6\r\nvocab_size = 512\r\n",
		"# comment\ndepth = 6\r\nvocab_size = 512",
		"# comment\r\r\ndepth = 6\n\rvocab_size = 512\r",
	};
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		struct config c;
		struct err e;
		CHECKF(load(&c, texts[i], &e) == 0, "case %zu: %s", i, e.msg);
		CHECKF(c.depth == 6 && c.vocab_size == 512, "case %zu: depth %d vocab_size %d", i, c.depth,
		       c.vocab_size);
	}
	struct config c;
	struct err e;
	/* line numbers: CR LF is one line end, CR CR two */
	CHECK(load(&c, "depth = 6\rfoo = 1\r", &e) != 0 && strstr(e.msg, "t.cfg:2: unknown key 'foo'"));
	CHECK(load(&c, "depth = 6\r\nfoo = 1\r\n", &e) != 0 && strstr(e.msg, "t.cfg:2: unknown key 'foo'"));
	CHECK(load(&c, "depth = 6\r\rfoo = 1", &e) != 0 && strstr(e.msg, "t.cfg:3: unknown key 'foo'"));
	/* a value cannot hold a line end: the printed config would read back otherwise */
	config_defaults(&c);
	CHECK(config_set(&c, "init_from=a\rb", &e) != 0 && strstr(e.msg, "holds a line end"));
	CHECK(config_set(&c, "init_from=a\nb", &e) != 0 && strstr(e.msg, "holds a line end"));
}

static void expect_err(const char *text, const char *want)
{
	struct config c;
	struct err e = {0};
	int rc = load(&c, text, &e);
	CHECKF(rc != 0, "accepted: %s", text);
	CHECKF(rc != 0 && strstr(e.msg, want) != NULL, "message '%s' lacks '%s'", e.msg, want);
	CHECK(rc == 0 || e.code == EXIT_USAGE);
}

TEST(bad_lines_name_file_and_line)
{
	expect_err("depth = 6\nfoo = 1\n", "t.cfg:2: unknown key 'foo'");
	expect_err("depth = six\n", "t.cfg:1: depth: 'six' is not an integer");
	expect_err("\n\ndepth = 0\n", "t.cfg:3: depth: 0 is out of range [1, 64]");
	expect_err("depth = 65\n", "t.cfg:1: depth: 65 is out of range");
	expect_err("depth = 6x\n", "is not an integer");
	expect_err("oe = 2\n", "t.cfg:1: oe: '2' is not 0 or 1");
	expect_err("oe = yes\n", "is not 0 or 1");
	expect_err("muoneq = bi\n", "t.cfg:1: muoneq: 'bi' is not one of off, bieq, r, rc");
	expect_err("softcap = 0\n", "t.cfg:1: softcap: 0 is out of range (0,");
	expect_err("lr_matrix = nan\n", "is not a finite number");
	expect_err("lr_matrix = 1e999\n", "is not a finite number");
	expect_err("lr_matrix = -0.1\n", "out of range");
	expect_err("seed = -1\n", "is not an unsigned integer");
	expect_err("seed = 18446744073709551616\n", "is not an unsigned integer");
	expect_err("depth 6\n", "t.cfg:1: expected 'key = value'");
	expect_err(" = 6\n", "t.cfg:1: missing key");
	expect_err("muon_beta2 = 1\n", "out of range");
}

TEST(conflicts_name_file_and_line)
{
	expect_err("depth = 6\nqk_mask = l0_hf16\n", "t.cfg:2: qk_mask = l0_hf16 needs qk_scale");
	expect_err("qk_scale = head\nqk_mask = l0_hf16\n", "t.cfg:2: qk_mask = l0_hf16 masks RoPE planes");
	expect_err("depth = 6\nqk_param = stop_exp\n", "t.cfg:2: qk_param = stop_exp needs qk_scale");
	expect_err("out_lambdas = 1\n", "t.cfg:1: out_lambdas = 1 needs wte_lambdas = 1");
	expect_err("depth = 6\nsub_form = unfused\n", "t.cfg:2: sub_form = unfused needs sub_gains = 1");
	expect_err("sub_form = gate_scaled\n", "t.cfg:1: sub_form = gate_scaled needs sub_gains = 1");
	expect_err("sub_gains = 1\nsub_form = scaled\n", "t.cfg:2");
	expect_err("table_neumann = 1\n", "t.cfg:1: table_neumann = 1 needs oe = 1");
	expect_err("step0 = nostep0\n", "t.cfg:1: step0 = nostep0");
	expect_err("anchor = shared\n", "t.cfg:1: anchor = shared");
	expect_err("head_dim = 96\n", "t.cfg:1: derived model_dim 512 is not a multiple of head_dim 96");
	expect_err("model_dim = 500\n", "t.cfg:1: model_dim 500 is not a multiple of head_dim 128");
	expect_err("steps = 5\n", "t.cfg:1: warmup_steps 11 must be below steps 5");
	expect_err("seq_len = 33\n", "t.cfg:1: seq_len 33 is odd");
	expect_err("window_pattern = SSXL\n", "t.cfg:1: window_pattern: 'SSXL' may hold only S and L");
	expect_err("init = dense\ninit_from = a.safetensors\n", "t.cfg:2: init = dense conflicts with init_from");
	expect_err("logits = fp16\n", "t.cfg:1: logits: 'fp16' is not one of bf16, fp32");
	expect_err("polar_arith = fused\n", "t.cfg:1: polar_arith: 'fused' is not one of compiled, eager");
	expect_err("bieq_passes = 1\n", "t.cfg:1: bieq_passes and bieq_sides shape BiEq: need muoneq = bieq");
	expect_err("muoneq = r\nbieq_sides = rows\n", "t.cfg:2: bieq_passes and bieq_sides shape BiEq");
	expect_err("equil_scope = square\n", "t.cfg:1: equil_scope = square limits the equilibrator");
	expect_err("zeta = 1\nmuoneq = bieq\n", "t.cfg:2: zeta = 1 and muoneq = bieq are two pre-polar conditioners: use one");
	expect_err("zeta = 2\n", "t.cfg:1: zeta");
	expect_err("malt = 1\nmuoneq = r\n", "t.cfg:2: malt = 1 and an equilibrator (muoneq) are two pre-polar conditioners: use one");
	expect_err("zeta = 1\nmalt = 1\n", "t.cfg:2: malt = 1 and zeta = 1 are two pre-polar conditioners: use one");
	expect_err("malt_beta = 1\n", "t.cfg:1: malt_beta");
	expect_err("muon2f = 1\nmuoneq = bieq\n", "t.cfg:2: muon2f = 1 and an equilibrator (muoneq) are two pre-polar conditioners: use one");
	expect_err("malt = 1\nmuon2f = 1\n", "t.cfg:2: muon2f = 1 and malt = 1 are two pre-polar conditioners: use one");
	expect_err("normpre_g = 1\nzeta = 1\n", "t.cfg:2: normpre_g = 1 and zeta = 1 are two pre-polar conditioners: use one");
	expect_err("normpre_g = 1\nmuon2f = 1\n", "t.cfg:2: muon2f = 1 and normpre_g = 1 are two pre-polar conditioners: use one");
	expect_err("normpre_tangent = 0\n", "t.cfg:1: normpre_tangent = 0 shapes NormPre-G: needs normpre_g = 1");
	expect_err("malt_input = momentum\n", "t.cfg:1: malt_input = momentum shapes MALT: needs malt = 1");
	expect_err("malt = 1\nmalt_input = moment\n", "t.cfg:2: malt_input");
	/* matrix_optim = adamw: the Muon-side switches have nothing to shape */
	expect_err("matrix_optim = adamw\nmuoneq = bieq\n", "t.cfg:2: muoneq shapes the Muon step: matrix_optim = adamw has none");
	expect_err("malt = 1\nmatrix_optim = adamw\n", "t.cfg:2: malt shapes the Muon step: matrix_optim = adamw has none");
	expect_err("matrix_optim = adamw\nnormuon = 0\n", "t.cfg:2: normuon shapes the Muon step");
	expect_err("matrix_optim = adamw\npolar = fp32\n", "t.cfg:2: polar shapes the Muon step");
	expect_err("matrix_optim = adamw\ncooldown = 1\n", "t.cfg:2: cooldown shapes the Muon step");
	expect_err("matrix_optim = adamw\npolar_steps = 4\n", "t.cfg:2: polar_steps shapes the Muon step");
	expect_err("matrix_optim = sgd\n", "t.cfg:1: matrix_optim");
	expect_err("polar_steps = 6\n", "t.cfg:1: polar_steps");
	expect_err("polar_norm = fp16\n", "t.cfg:1: polar_norm: 'fp16' is not one of polar, fp32, aol");
	expect_err("precision = bf16\n", "t.cfg:1: precision: 'bf16' is not one of auto, autocast, fp32");
	expect_err("backend = cpu\nprecision = autocast\n",
		   "t.cfg:2: precision = autocast: the cpu backend multiplies in fp32, not in bf16");
	expect_err("precision = fp32\ndtype = fp64\n",
		   "t.cfg:2: precision = fp32: dtype = fp64 runs multiply in fp64 (precision = auto)");
	/* the later of the two lines is blamed */
	expect_err("qk_mask = l0_hf16\n\nqk_scale = none\n", "t.cfg:3: ");
	/* fixed by a later line: accepted */
	struct config c;
	struct err e;
	CHECK(load(&c, "qk_mask = l0_hf16\nqk_scale = pair\n", &e) == 0);
}

TEST(set_overrides)
{
	struct config c;
	struct err e = {0};
	config_defaults(&c);
	CHECK(config_set(&c, "depth=6", &e) == 0 && c.depth == 6);
	CHECK(config_set(&c, " qk_scale = pair ", &e) == 0 && c.qk_scale == QK_SCALE_PAIR);
	CHECK(config_set(&c, "nokey=1", &e) != 0);
	CHECK_STREQ(e.msg, "--set: unknown key 'nokey'");
	CHECK(config_set(&c, "depth", &e) != 0 && strstr(e.msg, "--set: expected") == e.msg);
	CHECK(config_set(&c, "depth=7\n", &e) != 0);
	CHECK(config_set(&c, "out_lambdas=1", &e) == 0);
	CHECK(config_validate(&c, &e) != 0);
	CHECK_STREQ(e.msg, "--set: out_lambdas = 1 needs wte_lambdas = 1");
}

/* The string limits supkit-formats(5) documents: arm 63 bytes,
 * window_pattern 31, init_from and data_dir 511; one more is refused. */
TEST(string_limits_as_documented)
{
	static const struct { const char *key; size_t max; } lim[] = {
		{"arm", 63}, {"window_pattern", 31}, {"init_from", 511}, {"data_dir", 511},
	};
	for (size_t i = 0; i < sizeof lim / sizeof *lim; i++) {
		struct config c;
		struct err e = {0};
		config_defaults(&c);
		char kv[600];
		int n = snprintf(kv, sizeof kv, "%s=", lim[i].key);
		memset(kv + n, 'L', lim[i].max);
		kv[n + lim[i].max] = 0;
		CHECKF(config_set(&c, kv, &e) == 0, "%s of %zu bytes refused: %s", lim[i].key,
		       lim[i].max, e.msg);
		kv[n + lim[i].max] = 'L';
		kv[n + lim[i].max + 1] = 0;
		CHECKF(config_set(&c, kv, &e) != 0 && strstr(e.msg, "bytes long") != NULL,
		       "%s of %zu bytes accepted", lim[i].key, lim[i].max + 1);
	}
}

TEST(canonical_form_and_sha)
{
	struct config a, b;
	struct err e;
	config_defaults(&a);
	CHECK(config_set(&a, "depth=6", &e) == 0);
	CHECK(config_set(&a, "lr_scale=1.41421356", &e) == 0);
	CHECK(config_set(&a, "init_from=x.safetensors", &e) == 0);
	/* a string that would not read back (fuzz finding: 'arm=#') is refused */
	CHECK(config_set(&a, "arm=#", &e) == -1 && strstr(e.msg, "'#'") != NULL);
	CHECK(config_set(&a, "data_dir=a #b", &e) == -1);
	CHECK(config_set(&a, "data_dir=a#b", &e) == 0); /* not a comment: reads back */
	CHECK(config_set(&a, "data_dir=", &e) == 0);
	char *t = config_print(&a);
	CHECK(strstr(t, "arm = 00_dense_native\nseed = 42\ndepth = 6\n") == t);
	CHECK(strstr(t, "\nlr_scale = 1.41421356\n") != NULL);
	CHECK(strstr(t, "\nnorm_eps = 1.1920928955078125e-07\n") != NULL);
	CHECK(strstr(t, "\ndata_dir =\n") != NULL);
	/* the printed form reads back to the same config */
	config_defaults(&b);
	CHECKF(config_load_text(&b, t, strlen(t), "printed", &e) == 0, "%s", e.msg);
	char *t2 = config_print(&b);
	CHECK_STREQ(t2, t);
	char ha[65], hb[65];
	config_sha256(&a, ha);
	config_sha256(&b, hb);
	CHECK_STREQ(ha, hb);
	CHECK(strlen(ha) == 64);
	CHECK(config_set(&b, "seed=43", &e) == 0);
	config_sha256(&b, hb);
	CHECK(strcmp(ha, hb) != 0);
	/* a line count equal to the key count */
	int lines = 0;
	for (const char *p = t; *p; p++)
		lines += *p == '\n';
	CHECK(lines == config_key_count());
	free(t);
	free(t2);
}

TEST(derived_sizes)
{
	struct config c;
	config_defaults(&c);
	CHECK(config_model_dim(&c) == 512 && config_heads(&c) == 4);
	/* d8 windows: SSSL SSSL with the last layer T */
	int want8[8] = {1024, 1024, 1024, 2048, 1024, 1024, 1024, 2048};
	for (int i = 0; i < 8; i++)
		CHECK(config_window(&c, i) == want8[i]);
	/* ve layers: odd layers at depth 8 */
	for (int i = 0; i < 8; i++)
		CHECK(config_is_ve_layer(&c, i) == (i % 2 == 1));
	CHECK_NEAR(config_lr_k(&c), 1.224744871391589, 1e-12); /* (512/768)^-0.5 */
	c.depth = 6;
	int want6[6] = {1024, 1024, 1024, 2048, 1024, 2048};
	for (int i = 0; i < 6; i++)
		CHECK(config_window(&c, i) == want6[i]);
	CHECK(config_model_dim(&c) == 384 && config_heads(&c) == 3);
	c.depth = 5; /* d = ceil(320/128)*128 = 384; ve layers 0, 2, 4 */
	CHECK(config_model_dim(&c) == 384);
	CHECK(config_is_ve_layer(&c, 0) && !config_is_ve_layer(&c, 1) && config_is_ve_layer(&c, 4));
	c.oe = 1;
	CHECK(config_oe_tables(&c) == 4);
	CHECK(config_oe_rows(&c, 3) == 150861);
}

static size_t total_params(const struct config *c, size_t *ntensors)
{
	struct param_spec *p;
	size_t n, tot = 0;
	struct err e;
	if (paramspec_build(c, &p, &n, &e) != 0) {
		printf("  paramspec_build: %s\n", e.msg);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		tot += p[i].numel;
	if (ntensors)
		*ntensors = n;
	free(p);
	return tot;
}

TEST(paramspec_published_totals)
{
	struct config c;
	size_t nt;
	config_defaults(&c);
	CHECK(total_params(&c, &nt) == 50332176); /* the papers' figure, depth 8 */
	/* 1 wte + 8 x 6 matrices + 4 ve_gate + 4 value_embeds + lm_head + 2 */
	CHECK(nt == 60);
	c.depth = 6;
	CHECK(total_params(&c, &nt) == 26345772); /* the papers' figure, depth 6 */
	CHECK(nt == 1 + 36 + 3 + 3 + 1 + 2);
}

/* Hand derivations, V = 8192: params = V d (wte) + V d (lm_head) + n_ve V d
 * + 12 L d^2 (4 d x d attention, 4d x d and d x 4d MLP) + n_ve * H * 32
 * (ve_gate) + 2 L (resid, x0); n_ve = ceil(L/2). */
TEST(paramspec_other_depths)
{
	struct config c;
	config_defaults(&c);
	/* L=1: d=128, H=1, n_ve=1: 3*1048576 + 12*16384 + 32 + 2 */
	c.depth = 1;
	CHECK(total_params(&c, NULL) == 3342370);
	/* L=2: d=128, H=1, n_ve=1: 3145728 + 393216 + 32 + 4 */
	c.depth = 2;
	CHECK(total_params(&c, NULL) == 3538980);
	/* L=3: d=256, H=2, n_ve=2: 4*2097152 + 36*65536 + 2*2*32 + 6 */
	c.depth = 3;
	CHECK(total_params(&c, NULL) == 10748038);
	/* L=10: d=640, H=5, n_ve=5: 7*5242880 + 120*409600 + 5*5*32 + 20 */
	c.depth = 10;
	CHECK(total_params(&c, NULL) == 85852980);
	/* L=12: d=768, H=6, n_ve=6: 8*6291456 + 144*589824 + 6*6*32 + 24 */
	c.depth = 12;
	CHECK(total_params(&c, NULL) == 135267480);
	/* L=2, V=512: d=128: 3*65536 + 393216 + 32 + 4 */
	c.depth = 2;
	c.vocab_size = 512;
	CHECK(total_params(&c, NULL) == 589860);
}

TEST(paramspec_arm_parameters)
{
	struct config c;
	config_defaults(&c);
	c.depth = 6;
	c.oe = 1;
	c.qk_scale = QK_SCALE_PAIR;
	/* OE: 4 tables of 150855+2j rows x 96 = 603432*96 = 57929472;
	 * q_tau 6*3*64 = 1152 */
	CHECK(total_params(&c, NULL) == 26345772 + 57929472 + 1152);
	c.wte_lambdas = 1;
	c.out_lambdas = 1;
	CHECK(total_params(&c, NULL) == 26345772 + 57929472 + 1152 + 6 + 2);
	c.qk_scale = QK_SCALE_UNTIED; /* 6*3*128 */
	CHECK(total_params(&c, NULL) == 26345772 + 57929472 + 2304 + 8);
	c.qk_scale = QK_SCALE_HEAD; /* 6*3 */
	CHECK(total_params(&c, NULL) == 26345772 + 57929472 + 18 + 8);
	/* another modulus: m = 1000: rows 1000+1002+1004+1006 = 4012, x 96 */
	c.qk_scale = QK_SCALE_NONE;
	c.wte_lambdas = c.out_lambdas = 0;
	c.oe_m = 1000;
	CHECK(total_params(&c, NULL) == 26345772 + 4012 * 96);
	/* n = 2, k = 3: 3 tables of 1000, 1002, 1004 rows */
	c.oe_n = 2;
	c.oe_k = 3;
	CHECK(total_params(&c, NULL) == 26345772 + 3006 * 96);
}

/* Every name the table writes reads back as its kind and index; other
 * names are no parameter's; "oe_tables.<j>" is another spelling of an OE
 * table's name. */
TEST(paramspec_names_read_back)
{
	struct config c;
	struct err e;
	struct param_spec *p;
	size_t n;
	config_defaults(&c);
	c.oe = 1;
	c.qk_scale = QK_SCALE_UNTIED;
	c.wte_lambdas = c.out_lambdas = 1;
	CHECK(paramspec_build(&c, &p, &n, &e) == 0);
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		enum param_kind k;
		int idx;
		char again[PARAM_NAME_MAX];
		if (paramspec_name_kind(p[i].name, &k, &idx) != 0 || k != p[i].kind ||
		    idx != (paramspec_kind_indexed(k) ? p[i].layer : -1))
			bad++, printf("  %s does not read back\n", p[i].name);
		paramspec_name(p[i].kind, p[i].layer, again, sizeof again);
		if (strcmp(again, p[i].name))
			bad++, printf("  %s written again as %s\n", p[i].name, again);
	}
	CHECK(bad == 0);
	free(p);
	enum param_kind k;
	int idx;
	CHECK(paramspec_name_kind("oe_tables.3.weight", &k, &idx) == 0 && k == PK_OE_TABLE && idx == 3);
	CHECK(paramspec_name_kind("transformer.h.007.mlp.c_fc.weight", &k, &idx) == 0 && k == PK_MLP_FC && idx == 7);
	CHECK(paramspec_name_kind("transformer.h.1000000.attn.c_q.weight", &k, &idx) == 0 && idx == 1000000);
	CHECK(paramspec_name_kind("transformer.h.1000001.attn.c_q.weight", &k, &idx) == -1 && idx == -1);
	CHECK(paramspec_name_kind("transformer.h.-1.attn.c_q.weight", &k, &idx) == -1);
	CHECK(paramspec_name_kind("transformer.h.1.attn.c_q.bias", &k, &idx) == -1);
	CHECK(paramspec_name_kind("transformer.h..attn.c_q.weight", &k, &idx) == -1);
	CHECK(paramspec_name_kind("q_tau.weight", &k, &idx) == -1);
	CHECK(paramspec_name_kind("x0_lambdas", &k, &idx) == 0 && k == PK_X0_LAMBDAS && idx == -1);
}

TEST(paramspec_names_order_groups)
{
	struct config c;
	struct err e;
	struct param_spec *p;
	size_t n;
	config_defaults(&c);
	c.oe = 1;
	c.qk_scale = QK_SCALE_PAIR;
	c.wte_lambdas = c.out_lambdas = 1;
	CHECK(paramspec_build(&c, &p, &n, &e) == 0);
	CHECK(n == 60 + 4 + 3);
	CHECK_STREQ(p[0].name, "transformer.wte.weight");
	CHECK(p[0].store == PARAM_BF16 && p[0].group == PG_EMBED && p[0].init == INITK_NORMAL);
	CHECK_STREQ(p[1].name, "transformer.h.0.attn.c_q.weight");
	CHECK_STREQ(p[4].name, "transformer.h.0.attn.c_proj.weight");
	CHECK(p[4].init == INITK_ZERO);
	CHECK_STREQ(p[6].name, "transformer.h.0.mlp.c_proj.weight");
	CHECK(p[6].shape[0] == 512 && p[6].shape[1] == 2048);
	CHECK_STREQ(p[7].name, "transformer.h.1.attn.c_q.weight"); /* layer 0 has no ve */
	CHECK_STREQ(p[13].name, "transformer.h.1.attn.ve_gate.weight");
	CHECK(p[13].shape[0] == 4 && p[13].shape[1] == 32 && p[13].group == PG_MATRIX);
	CHECK_STREQ(p[53].name, "value_embeds.1.weight");
	CHECK_STREQ(p[56].name, "value_embeds.7.weight");
	CHECK_STREQ(p[57].name, "lm_head.weight");
	CHECK(p[57].store == PARAM_F32 && p[57].group == PG_LM_HEAD && p[57].init_a == 0.001);
	CHECK_STREQ(p[58].name, "resid_lambdas");
	CHECK(p[58].init == INITK_CONST && p[58].init_a == 1.0 && p[58].group == PG_RESID);
	CHECK_STREQ(p[59].name, "x0_lambdas");
	CHECK(p[59].init_a == 0.1 && p[59].group == PG_SCALAR);
	CHECK_STREQ(p[60].name, "oe.0.weight");
	CHECK(p[63].shape[0] == 150861 && p[63].shape[1] == 128 && p[63].group == PG_OE);
	CHECK_STREQ(p[64].name, "q_tau");
	CHECK(p[64].ndim == 3 && p[64].shape[2] == 64 && p[64].group == PG_QTAU);
	CHECK_STREQ(p[65].name, "wte_lambdas");
	CHECK_STREQ(p[66].name, "out_lambdas");
	CHECK(p[66].group == PG_SCALAR && p[66].numel == 2);
	CHECK_NEAR(p[1].init_a, 0.07654655446197430, 1e-15); /* sqrt(3)/sqrt(512) */
	CHECK_STREQ(param_kind_name(p[13].kind), "attn.ve_gate");
	free(p);
	c.init = INIT_DENSE;
	CHECK(paramspec_build(&c, &p, &n, &e) == 0);
	CHECK(p[4].init == INITK_UNIFORM && p[6].init == INITK_UNIFORM);
	free(p);
	c.model_dim = 500;
	CHECK(paramspec_build(&c, &p, &n, &e) != 0);
}

TEST(arms)
{
	struct config c;
	struct err e;
	CHECK(config_arm_count() >= 20);
	for (int i = 0; i < config_arm_count(); i++) {
		config_defaults(&c);
		CHECKF(config_arm_apply(&c, config_arm_name(i), &e) == 0, "%s", e.msg);
		CHECKF(config_validate(&c, &e) == 0, "%s: %s", config_arm_name(i), e.msg);
		CHECK_STREQ(c.arm, config_arm_name(i));
	}
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "12do", &e) == 0);
	CHECK_STREQ(c.arm, "12do_oe_decoupled_x0_out");
	CHECK(c.oe && c.wte_lambdas && c.out_lambdas && c.qk_scale == QK_SCALE_PAIR);
	CHECK(c.muoneq == MUONEQ_BIEQ && c.bieq_tau == 25 && c.neumann && c.cooldown);
	CHECK(c.embed_state == EMBED_STATE_FP32 && c.polar == POLAR_FP32);
	CHECK(c.muon_wd_schedule == WD_COSINE && c.depth == 8);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "#4a", &e) == 0 && c.embed_state == EMBED_STATE_BF16 && c.oe);
	CHECK(config_arm_apply(&c, "nosuch", &e) != 0);
	/* the papers' short names */
	const char *spec[] = {"00", "01", "02", "10", "11", "12", "12m", "12d", "12do", "12do_shared", "4a", NULL};
	for (int i = 0; spec[i]; i++)
		CHECKF(config_arm_find(spec[i]) >= 0, "%s", spec[i]);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "12m", &e) == 0 && c.qk_mask == QK_MASK_L0_HF16 && c.oe);
	CHECK(config_arm_apply(&c, "12do_shared", &e) == 0 && c.anchor == ANCHOR_SHARED);
	/* paper 004's NorMuon-free and post-polar controls on the native backbone */
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exact_muoneq_r_no_normuon", &e) == 0);
	CHECK(c.muoneq == MUONEQ_R && !c.normuon && c.post_polar == POST_POLAR_AS_POLAR && !c.oe);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "noguard_postpolar_fp32_only", &e) == 0);
	CHECK(c.post_polar == POST_POLAR_FP32 && c.normuon && c.muoneq == MUONEQ_OFF);
	CHECK(c.polar == POLAR_BF16 && c.polar_norm == POLAR_NORM_AS_POLAR);
	/* paper 002's Zeta arm: exp17's metric (gains, pair stopped-exponential QK
	 * scaling) and Zeta on the native optimizer */
	config_defaults(&c);
	CHECK(!c.zeta);
	CHECK(config_arm_apply(&c, "zeta_prepolar_coord_whitening", &e) == 0);
	CHECK(c.zeta && c.qk_scale == QK_SCALE_PAIR && c.muoneq == MUONEQ_OFF && c.normuon && !c.oe);
	CHECK(c.sub_gains && c.sub_lr == 0.02 && c.qk_param == QK_PARAM_STOP_EXP && c.lr_qtau == 0.02);
	CHECK(c.polar == POLAR_BF16 && c.post_polar == POST_POLAR_AS_POLAR && !c.neumann);
	/* paper 002's post-QK-norm forms (exp64, exp03) */
	config_defaults(&c);
	CHECK(c.qk_param == QK_PARAM_EXP);
	CHECK(config_arm_apply(&c, "exp64", &e) == 0);
	CHECK(c.qk_scale == QK_SCALE_PAIR && c.qk_param == QK_PARAM_STOP_EXP && c.lr_qtau == 0.02);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp03_linear_qk_only", &e) == 0);
	CHECK(c.qk_scale == QK_SCALE_PAIR && c.qk_param == QK_PARAM_LINEAR && c.lr_qtau == 0.05);
	CHECK(!c.sub_gains && c.sub_lr == 0.02);
	/* ... and its pre-sublayer channel gains (exp07, exp05, exp17, exp41, exp19) */
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp07", &e) == 0);
	CHECK(c.sub_gains && c.sub_lr == 0.025 && c.qk_scale == QK_SCALE_NONE);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp05", &e) == 0);
	CHECK(c.sub_gains && c.sub_lr == 0.025 && c.qk_scale == QK_SCALE_PAIR &&
	      c.qk_param == QK_PARAM_LINEAR && c.lr_qtau == 0.05);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp17", &e) == 0);
	CHECK(c.sub_gains && c.sub_lr == 0.02 && c.qk_scale == QK_SCALE_PAIR &&
	      c.qk_param == QK_PARAM_STOP_EXP && c.lr_qtau == 0.02);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp41", &e) == 0);
	CHECK(c.sub_gains && c.qk_scale == QK_SCALE_UNTIED && c.qk_param == QK_PARAM_STOP_EXP);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp19_head_temperature", &e) == 0);
	CHECK(c.sub_gains && c.qk_scale == QK_SCALE_HEAD && c.qk_param == QK_PARAM_EXP);
	/* ... and Table 1's depth-6 runs: exp05's model, the run's seed and form */
	static const struct {
		const char *name;
		uint64_t seed;
		enum cfg_sub_form form;
		int bieq;
	} t1[] = { {"exp24", 42, SUB_FORM_FUSED, 0}, {"exp11", 47, SUB_FORM_FUSED, 0},
		   {"exp28", 47, SUB_FORM_UNFUSED, 0}, {"exp54", 42, SUB_FORM_FUSED, 1},
		   {"exp55", 47, SUB_FORM_FUSED, 1} };
	for (size_t i = 0; i < sizeof t1 / sizeof t1[0]; i++) {
		config_defaults(&c);
		c.seed = 1;
		CHECK(config_arm_apply(&c, t1[i].name, &e) == 0);
		CHECKF(c.seed == t1[i].seed && c.sub_form == t1[i].form && c.sub_gains && c.sub_lr == 0.025 &&
		       c.qk_scale == QK_SCALE_PAIR && c.qk_param == QK_PARAM_LINEAR && c.lr_qtau == 0.05,
		       "%s", t1[i].name);
		CHECKF(t1[i].bieq ? c.muoneq == MUONEQ_BIEQ && c.bieq_tau == 80 && c.post_polar == POST_POLAR_FP32
				  : c.muoneq == MUONEQ_OFF && c.post_polar == POST_POLAR_AS_POLAR, "%s", t1[i].name);
	}
	/* paper 004's MALT arms on the native backbone */
	config_defaults(&c);
	CHECK(!c.malt && c.malt_beta == 0.95 && c.malt_eps == 1e-8);
	CHECK(config_arm_apply(&c, "published_malt", &e) == 0);
	CHECK(c.malt && c.normuon && c.muoneq == MUONEQ_OFF && !c.zeta && c.qk_scale == QK_SCALE_NONE);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exact_malt_no_normuon", &e) == 0);
	CHECK(c.malt && !c.normuon && c.muoneq == MUONEQ_OFF);
	/* paper 002's Muon2-F arm and paper 004's NormPre-G arms */
	config_defaults(&c);
	CHECK(!c.muon2f && !c.normpre_g && c.normpre_tangent);
	CHECK(config_arm_apply(&c, "muon2_f_prepolar_v", &e) == 0);
	CHECK(c.muon2f && c.qk_scale == QK_SCALE_PAIR && c.normuon && !c.zeta && !c.malt && !c.normpre_g);
	CHECK(c.sub_gains && c.qk_param == QK_PARAM_STOP_EXP);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "published_normpre_g", &e) == 0);
	CHECK(c.normpre_g && c.normpre_tangent && c.normuon && !c.muon2f && c.qk_scale == QK_SCALE_NONE);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "noguard_normpre_g_fp32", &e) == 0);
	CHECK(c.normpre_g && !c.normpre_tangent && c.normuon && c.polar_norm == POLAR_NORM_AS_POLAR);
	/* paper 002's Table 3 / 4A arms: BiEq tau 80 on exp17's metric; the run
	 * name natural_grad_geodesic is exp17 */
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "natural_grad_geodesic", &e) == 0);
	CHECK(c.sub_gains && c.qk_scale == QK_SCALE_PAIR && c.qk_param == QK_PARAM_STOP_EXP && c.muoneq == MUONEQ_OFF);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "square_attn_only_bieq_bf16", &e) == 0);
	CHECK(c.muoneq == MUONEQ_BIEQ && c.bieq_tau == 80 && c.equil_scope == EQUIL_SQUARE && c.qk_scale == QK_SCALE_PAIR);
	CHECK(c.sub_gains && c.qk_param == QK_PARAM_STOP_EXP);
	CHECK(c.post_polar == POST_POLAR_AS_POLAR && c.bieq_passes == 2);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "one_sided_row_rms_bf16", &e) == 0);
	CHECK(c.bieq_passes == 1 && c.bieq_sides == BIEQ_ROWS && c.bieq_tau == 80 && c.equil_scope == EQUIL_ALL);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "undamped_bieq_bf16", &e) == 0);
	CHECK(c.muoneq == MUONEQ_BIEQ && c.bieq_tau == 0 && c.qk_scale == QK_SCALE_PAIR);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "turbo_muon_aol_precond", &e) == 0);
	CHECK(c.polar_norm == POLAR_NORM_AOL && c.polar_steps == 5 && c.muoneq == MUONEQ_OFF);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "homotopy_bieq_only", &e) == 0);
	CHECK(c.post_polar == POST_POLAR_FP32 && c.qk_scale == QK_SCALE_NONE && c.bieq_tau == 80);
	CHECK(!c.sub_gains);
	/* paper 004's noguard family: fp32 pre-polar normalisation */
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "noguard_full", &e) == 0);
	CHECK(c.muoneq == MUONEQ_BIEQ && c.bieq_tau == 80 && c.cooldown && c.neumann && c.neumann_tau == 80);
	CHECK(c.polar_norm == POLAR_NORM_FP32 && c.polar == POLAR_BF16 && c.embed_state == EMBED_STATE_FP32);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "noguard_fp32norm_control", &e) == 0);
	CHECK(c.polar_norm == POLAR_NORM_FP32 && c.muoneq == MUONEQ_OFF && !c.cooldown && !c.neumann);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "muoneq_rc_full_pkg", &e) == 0);
	CHECK(c.muoneq == MUONEQ_RC && c.cooldown && c.neumann && c.polar_norm == POLAR_NORM_FP32);
	CHECK(c.embed_state == EMBED_STATE_FP32);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp15_tau25_joint", &e) == 0);
	CHECK(c.qk_scale == QK_SCALE_PAIR && c.bieq_tau == 25 && c.neumann_tau == 25 && c.cooldown);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp16_ngpt_coord_bieq", &e) == 0);
	CHECK(c.qk_scale == QK_SCALE_UNTIED && c.bieq_tau == 80 && c.neumann_tau == 80);
	/* paper 004 #2d: MALT from this step's momentum, no EMA, no precision switch */
	config_defaults(&c);
	CHECK(c.malt_input == MALT_INPUT_GRAD);
	CHECK(config_arm_apply(&c, "noguard_malt_fp32", &e) == 0);
	CHECK(c.malt && c.malt_input == MALT_INPUT_MOMENTUM && c.malt_beta == 0 && c.malt_eps == 1e-8);
	CHECK(c.normuon && c.muoneq == MUONEQ_OFF && c.polar_norm == POLAR_NORM_AS_POLAR);
	CHECK(c.embed_state == EMBED_STATE_BF16 && c.post_polar == POST_POLAR_AS_POLAR);
	/* paper 004's pure AdamW run: matrix_optim = adamw alone */
	config_defaults(&c);
	CHECK(c.matrix_optim == MATRIX_OPTIM_MUON);
	CHECK(config_arm_apply(&c, "baseline_pure_adamw", &e) == 0);
	CHECK(c.matrix_optim == MATRIX_OPTIM_ADAMW && c.lr_matrix == 0.04 && c.muoneq == MUONEQ_OFF);
	CHECK(c.embed_state == EMBED_STATE_BF16 && !c.malt && c.normuon && c.polar_norm == POLAR_NORM_AS_POLAR);
	CHECK(config_validate(&c, &e) == 0);
	CHECK(config_set(&c, "arm=my#arm", &e) == 0); /* '#' after a letter is not a comment... */
	CHECK(config_validate(&c, &e) != 0);          /* ...but not an arm name either */
}

/* Mutated baseline files (bytes flipped, inserted, lines cut): never a
 * crash (ASan in SAN=1), and every refusal is one line naming "m.cfg:N". */
TEST(mutations)
{
	char *text;
	size_t len;
	struct err e;
	if (file_read_all("configs/baseline.cfg", 0, &text, &len, &e) != 0)
		T_SKIP(e.msg);
	uint64_t x = 88172645463325252ull;
	const char pool[] = "=#\n\r \t0123456789.-+eE_abcxyz\x01\xff";
	int refused = 0, accepted = 0;
	for (int it = 0; it < 3000; it++) {
		char *m = xmalloc(len + 16);
		memcpy(m, text, len);
		size_t n = len;
		int edits = 1 + (int)(x % 4);
		for (int k = 0; k < edits; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t at = (size_t)(x >> 8) % n;
			switch (x % 3) {
			case 0:
				m[at] = pool[(x >> 40) % (sizeof pool - 1)];
				break;
			case 1:
				if (n < len + 15) {
					memmove(m + at + 1, m + at, n - at);
					m[at] = pool[(x >> 40) % (sizeof pool - 1)];
					n++;
				}
				break;
			default:
				n = at; /* truncate */
				break;
			}
			if (!n)
				break;
		}
		if (!n) {
			free(m);
			continue;
		}
		struct config c;
		config_defaults(&c);
		int rc = config_load_text(&c, m, n, "m.cfg", &e);
		if (rc == 0)
			rc = config_validate(&c, &e);
		if (rc == 0) {
			accepted++;
			char *t = config_print(&c);
			CHECK(t != NULL && strlen(t) > 0);
			free(t);
		} else {
			refused++;
			CHECKF(strchr(e.msg, '\n') == NULL, "two lines: %s", e.msg);
			CHECKF(!strncmp(e.msg, "m.cfg:", 6), "%s", e.msg);
			CHECK(e.code == EXIT_USAGE);
		}
		free(m);
	}
	printf("  %d refused, %d accepted\n", refused, accepted);
	CHECK(refused > 100 && accepted > 100);
	free(text);
}

/* config_scan_text: the file syntax without the key table (supkit sweep's
 * sweep file): every key, known or not, with its trimmed value and line */
struct scanned {
	int n;
	char key[8][32], value[8][64];
	int line[8];
};

static int on_scan(const char *key, const char *value, const char *name, int line, void *ctx, struct err *e)
{
	struct scanned *s = ctx;
	if (!strcmp(key, "stop"))
		return err_set(e, EXIT_USAGE, "%s:%d: stop here", name, line);
	if (s->n < 8) {
		snprintf(s->key[s->n], sizeof s->key[0], "%s", key);
		snprintf(s->value[s->n], sizeof s->value[0], "%s", value);
		s->line[s->n] = line;
		s->n++;
	}
	return 0;
}

TEST(scan_text_and_set_at)
{
	struct scanned s = {0};
	struct err e;
	const char *t = "# head\nseeds = 1 2  3 \n\n  steps=5 # why\r\nbase =\nx = a#b\n";
	CHECKF(config_scan_text(t, strlen(t), "s.cfg", on_scan, &s, &e) == 0, "%s", e.msg);
	CHECK(s.n == 4);
	CHECK(!strcmp(s.key[0], "seeds") && !strcmp(s.value[0], "1 2  3") && s.line[0] == 2);
	CHECK(!strcmp(s.key[1], "steps") && !strcmp(s.value[1], "5") && s.line[1] == 4);
	CHECK(!strcmp(s.key[2], "base") && !strcmp(s.value[2], "") && s.line[2] == 5);
	CHECK(!strcmp(s.key[3], "x") && !strcmp(s.value[3], "a#b"));
	const char *bad = "a = 1\nno equals\n";
	CHECK(config_scan_text(bad, strlen(bad), "s.cfg", on_scan, &s, &e) == -1);
	CHECK_STREQ(e.msg, "s.cfg:2: expected 'key = value'");
	const char *stop = "a = 1\nstop = 1\nb = 2\n";
	s.n = 0;
	CHECK(config_scan_text(stop, strlen(stop), "s.cfg", on_scan, &s, &e) == -1 && s.n == 1);
	CHECK_STREQ(e.msg, "s.cfg:2: stop here");
	/* config_set_at: a key as a file's line sets it, origin and messages included */
	struct config c;
	config_defaults(&c);
	CHECK(config_set_at(&c, "steps", "7", "s.cfg", 4, &e) == 0 && c.steps == 7);
	CHECK(config_set_at(&c, "steps", "x", "s.cfg", 9, &e) == -1 && c.steps == 7);
	CHECK_STREQ(e.msg, "s.cfg:9: steps: 'x' is not an integer");
	CHECK(config_set_at(&c, "stepz", "1", "s.cfg", 3, &e) == -1);
	CHECK_STREQ(e.msg, "s.cfg:3: unknown key 'stepz'");
	CHECK(config_has_key("steps") && !config_has_key("seeds"));
	CHECK(config_set_at(&c, "warmup_steps", "7", "s.cfg", 5, &e) == 0);
	CHECK(config_validate(&c, &e) == -1);
	CHECKF(strstr(e.msg, "s.cfg:5: warmup_steps 7 must be below steps 7") == e.msg, "%s", e.msg);
}

/* config_apply_switches with no base file: the keys the arm file sets to
 * other values than the defaults */
TEST(switches_against_defaults)
{
	char dir[] = "/tmp/test_config.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *p = path_join(dir, "arm.cfg");
	struct err e;
	const char *t = "oe = 1\ndepth = 8\nqk_scale = pair\n";   /* depth 8 is the default: no switch */
	CHECK(file_write_atomic(p, t, strlen(t), &e) == 0);
	struct config c;
	config_defaults(&c);
	config_set(&c, "depth=3", &e);
	CHECKF(config_apply_switches(&c, NULL, p, &e) == 0, "%s", e.msg);
	CHECK(c.oe == 1 && c.qk_scale == QK_SCALE_PAIR && c.depth == 3);
	unlink(p);
	rmdir(dir);
	free(p);
}

/* paper 002's LeRoPE comparators: gains at sub_lr 0.02, learned RoPE
 * frequencies at rope_lr 0.02, no QK scaling; rope_tau's tensor */
TEST(lerope_arms)
{
	struct config c;
	struct err e = {0};
	config_defaults(&c);
	CHECK(c.rope_tau == ROPE_TAU_OFF && c.rope_trig == ROPE_TRIG_BF16 && c.rope_lr == 0.02);
	CHECK(config_arm_apply(&c, "exp31", &e) == 0);
	CHECK(!strcmp(c.arm, "exp31_lerope_shared64"));
	CHECK(c.sub_gains && c.sub_lr == 0.02 && c.rope_tau == ROPE_TAU_SHARED &&
	      c.rope_trig == ROPE_TRIG_FP32 && c.rope_lr == 0.02 && c.qk_scale == QK_SCALE_NONE);
	config_defaults(&c);
	CHECK(config_arm_apply(&c, "exp21_lerope_2048", &e) == 0);
	CHECK(c.sub_gains && c.sub_lr == 0.02 && c.rope_tau == ROPE_TAU_HEAD &&
	      c.rope_trig == ROPE_TRIG_BF16 && c.rope_lr == 0.02 && c.qk_scale == QK_SCALE_NONE);
	/* the tensor: 64 (shared) or L x H x 64 (head) at head_dim 128, PG_ROPE */
	for (int f = 0; f < 2; f++) {
		config_defaults(&c);
		c.rope_tau = f ? ROPE_TAU_HEAD : ROPE_TAU_SHARED;
		struct param_spec *ps = NULL;
		size_t n = 0;
		CHECK(paramspec_build(&c, &ps, &n, &e) == 0);
		const struct param_spec *r = n ? &ps[n - 1] : NULL;
		CHECK(r && r->kind == PK_ROPE_TAU && !strcmp(r->name, "rope_tau") &&
		      r->group == PG_ROPE && r->init == INITK_ZERO);
		CHECK(r && r->numel == (f ? 8u * 4 * 64 : 64u) && r->ndim == (f ? 3 : 1));
		free(ps);
	}
	CHECK(config_set(&c, "rope_tau=both", &e) != 0);
	CHECK(config_set(&c, "rope_trig=fp16", &e) != 0);
}

int main(void)
{
	RUN(defaults_are_benchmark);
	RUN(baseline_file_equals_defaults);
	RUN(syntax);
	RUN(line_ends_cr_crlf_lf);
	RUN(bad_lines_name_file_and_line);
	RUN(conflicts_name_file_and_line);
	RUN(set_overrides);
	RUN(string_limits_as_documented);
	RUN(canonical_form_and_sha);
	RUN(derived_sizes);
	RUN(paramspec_published_totals);
	RUN(paramspec_other_depths);
	RUN(paramspec_arm_parameters);
	RUN(paramspec_names_order_groups);
	RUN(paramspec_names_read_back);
	RUN(arms);
	RUN(mutations);
	RUN(scan_text_and_set_at);
	RUN(switches_against_defaults);
	RUN(lerope_arms);
	return t_done();
}

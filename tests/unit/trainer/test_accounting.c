/* test_accounting.c: trainer/accounting.c, the accounting of every arm,
 * against the papers' published figures (papers 000/001 Table 1b and
 * section 2, paper 004 Table 5), each to the digits printed.
 * tests/unit/audit/test_compute.c checks the same figures as
 * `supkit audit compute` reports them, and the vectors of
 * tests/fixtures/compute.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "trainer/accounting.h"
#include "trainer/config.h"

static const struct acct_opts FULL = {ACCT_NEUMANN_FULL, 0};

/* The accounting of arm at depth under o (0 on success). */
static int acct(const char *arm, int depth, const struct acct_opts *o, struct accounting *a)
{
	struct config c;
	struct err e = {0};
	config_defaults(&c);
	c.depth = depth;
	if (config_arm_apply(&c, arm, &e) != 0 || config_validate(&c, &e) != 0 ||
	    accounting_of(&c, o, a, &e) != 0) {
		printf("  %s d%d: %s\n", arm, depth, e.msg);
		return -1;
	}
	return 0;
}

/* x printed with dec decimals is `printed`. */
static int prints_as(double x, const char *printed, int dec)
{
	char b[64];
	snprintf(b, sizeof b, "%.*f", dec, x);
	if (strcmp(b, printed))
		printf("  %s, published %s\n", b, printed);
	return !strcmp(b, printed);
}

TEST(baseline_params_and_flops)
{
	struct accounting a;
	CHECK(acct("00_dense_native", 6, &FULL, &a) == 0);
	CHECK(a.counts.backbone == 26345772 && a.counts.total == 26345772);
	CHECK(acct("00_dense_native", 8, &FULL, &a) == 0);
	CHECK(a.counts.backbone == 50332176);
	CHECK(a.flops_token == 239078400.0);
	CHECK(a.tokens_per_step == 524288);
	CHECK(a.extra_total == 0 && a.mem_total == 0);
	/* paper 004 Table 5: 322.12 GFLOPs/step of native Polar Express */
	CHECK(prints_as(a.polar_step / 1e9, "322.12", 2));
}

TEST(component_figures_paper001)
{
	struct accounting a;
	CHECK(acct("10_oe_native", 8, &FULL, &a) == 0);
	CHECK(prints_as(a.extra[AX_OE_LOOKUP] / 1e9, "2.1475", 4));
	CHECK(prints_as(a.extra[AX_OE_UPDATE] / 1e9, "0.3862", 4));
	CHECK(prints_as(a.mem[AM_OE] / 1048576, "296.95", 2));
	CHECK(acct("01_dense_opt", 8, &FULL, &a) == 0);
	CHECK(prints_as(a.extra[AX_BIEQ] / 1e9, "0.4027", 4));
	CHECK(prints_as(a.extra_total / 1e9, "52.2993", 4));
	CHECK(prints_as(a.mem[AM_FP32_STATE] / 1048576, "160.00", 2));
	CHECK(acct("02_dense_joint", 6, &FULL, &a) == 0);
	CHECK(prints_as(a.extra[AX_QK_SCALING] / 1e9, "4.8318", 4));
	CHECK(acct("12_oe_joint", 8, &FULL, &a) == 0);
	CHECK(prints_as(a.extra_total / 1e9, "63.4229", 4));
	CHECK(acct("12_oe_joint", 6, &FULL, &a) == 0);
	CHECK(prints_as(a.extra_total / 1e9, "31.2836", 4));
}

TEST(paper004_conventions)
{
	struct accounting a;
	struct acct_opts l2 = {ACCT_NEUMANN_LEMMA2, 0};
	/* Table 5: 4c 52.0429 under the Lemma-2 count, MuonEq-R 0.1007, -RC 0.2013 */
	CHECK(acct("01_dense_opt", 8, &l2, &a) == 0);
	CHECK(prints_as(a.extra_total / 1e9, "52.0429", 4));
	struct config c;
	struct err e;
	config_defaults(&c);
	c.muoneq = MUONEQ_R;
	CHECK(accounting_of(&c, &l2, &a, &e) == 0);
	CHECK(prints_as(a.extra[AX_MUONEQ] / 1e9, "0.1007", 4));
	c.muoneq = MUONEQ_RC;
	CHECK(accounting_of(&c, &l2, &a, &e) == 0);
	CHECK(prints_as(a.extra[AX_MUONEQ] / 1e9, "0.2013", 4));
}

TEST(table_neumann_rows)
{
	struct accounting all, some;
	struct acct_opts r = {ACCT_NEUMANN_FULL, 506900};
	CHECK(acct("3a_oe_table_neumann_native", 6, &FULL, &all) == 0);
	CHECK(acct("3a_oe_table_neumann_native", 6, &r, &some) == 0);
	double k = 96, per_row = 4 * k * k + 14 * k;
	CHECK(acct_tabneu_per_row(384, ACCT_NEUMANN_FULL) == per_row);
	CHECK(fabs(all.extra[AX_TABLE_NEUMANN] - some.extra[AX_TABLE_NEUMANN] -
		   per_row * (double)(all.counts.oe_rows_total - 506900)) < 1);
}

/* The polar and equilibrator arms scale the counts by what they run: at
 * depth 8, 32 square 512 x 512 attention matrices, 8 + 8 2048 x 512 and
 * 512 x 2048 MLP matrices, 4 ve_gate 4 x 32. */
static int acct_set(const char *sets, struct accounting *a)
{
	struct config c;
	struct err e = {0};
	config_defaults(&c);
	if (config_load_text(&c, sets, strlen(sets), "test", &e) != 0 || config_validate(&c, &e) != 0 ||
	    accounting_of(&c, &FULL, a, &e) != 0) {
		printf("  %s\n", e.msg);
		return -1;
	}
	return 0;
}

TEST(polar_and_equilibrator_arms)
{
	struct accounting a;
	const double sq = 512.0 * 512, mlp = 2048.0 * 512, gate = 4.0 * 32;
	const double all = 32 * sq + 16 * mlp + 4 * gate;
	CHECK(acct_set("muoneq = bieq\n", &a) == 0);
	CHECK(a.extra[AX_BIEQ] == 16 * all);
	CHECK(acct_set("muoneq = bieq\nbieq_passes = 1\nbieq_sides = rows\n", &a) == 0);
	CHECK(a.extra[AX_BIEQ] == 4 * all);
	CHECK(acct_set("muoneq = bieq\nequil_scope = square\n", &a) == 0);
	CHECK(a.extra[AX_BIEQ] == 16 * 32 * sq);
	CHECK(acct_set("muoneq = r\nequil_scope = square\n", &a) == 0);
	CHECK(a.extra[AX_MUONEQ] == 4 * 32 * sq);
	/* Polar Express: steps (4 m n q + 2 q^3); AOL adds 2 m n q + q^2 + m n */
	const double it = 32 * (4 * sq * 512 + 2 * 512.0 * 512 * 512) +
			  16 * (4 * mlp * 512 + 2 * 512.0 * 512 * 512) + 4 * (4 * gate * 4 + 2 * 64.0);
	const double aol = 32 * (2 * sq * 512 + 512.0 * 512 + sq) + 16 * (2 * mlp * 512 + 512.0 * 512 + mlp) +
			   4 * (2 * gate * 4 + 16 + gate);
	CHECK(acct_set("polar_steps = 5\n", &a) == 0);
	CHECK(fabs(a.polar_step - 5 * it) <= 1e-12 * it);
	CHECK(acct_set("polar_steps = 4\n", &a) == 0);
	CHECK(fabs(a.polar_step - 4 * it) <= 1e-12 * it);
	CHECK(acct_set("polar_norm = aol\npolar_steps = 4\n", &a) == 0);
	CHECK(fabs(a.polar_step - 4 * it - aol) <= 1e-12 * it);
	CHECK(a.extra_total == 0);   /* the polar step is the Muon cost, not an extra */
	/* dtype-only arms and NorMuon change no count */
	CHECK(acct_set("polar_norm = fp32\npost_polar = fp32\nnormuon = 0\n", &a) == 0);
	CHECK(fabs(a.polar_step - 5 * it) <= 1e-12 * it && a.extra_total == 0 && a.mem_total == 0);
}

/* Zeta: 8 m n a block matrix a step, 4 bytes a block-matrix entry; the
 * depth-8 arm's state is paper 002's measured +96.0 MiB (22900.6 vs 22804.6
 * MiB peak) */
TEST(zeta_flops_and_memory)
{
	struct accounting a;
	const double all = 32 * 512.0 * 512 + 16 * 2048.0 * 512 + 4 * 4.0 * 32;
	CHECK(acct_set("zeta = 1\n", &a) == 0);
	CHECK(a.extra[AX_ZETA] == 8 * all && a.extra_total == 8 * all);
	CHECK(a.mem[AM_ZETA] == 4 * all && a.mem_total == 4 * all);
	CHECK(acct_set("zeta = 0\n", &a) == 0);
	CHECK(a.extra[AX_ZETA] == 0 && a.mem[AM_ZETA] == 0);
	CHECK(acct("zeta_prepolar_coord_whitening", 8, &FULL, &a) == 0);
	CHECK(prints_as(a.mem[AM_ZETA] / 1048576, "96.0", 1));
	CHECK(a.extra[AX_ZETA] == 8 * all && a.extra[AX_QK_SCALING] > 0);
}

/* MALT: 12 m n + 6 (m + n) FLOPs and 4 (m + n) bytes a block matrix */
TEST(malt_flops_and_memory)
{
	struct accounting a;
	const double mn = 32 * 512.0 * 512 + 16 * 2048.0 * 512 + 4 * 4.0 * 32;
	const double mpn = 32 * 1024.0 + 16 * 2560.0 + 4 * 36.0;
	CHECK(acct_set("malt = 1\n", &a) == 0);
	CHECK(a.extra[AX_MALT] == 12 * mn + 6 * mpn && a.extra_total == a.extra[AX_MALT]);
	CHECK(a.mem[AM_MALT] == 4 * mpn && a.mem_total == 4 * mpn);
	CHECK(acct_set("malt = 1\nnormuon = 0\n", &a) == 0);
	CHECK(a.extra[AX_MALT] == 12 * mn + 6 * mpn);
	CHECK(acct_set("malt = 0\n", &a) == 0);
	CHECK(a.extra[AX_MALT] == 0 && a.mem[AM_MALT] == 0);
	/* paper 004 #2d: no EMAs, so no state and no EMA updates */
	CHECK(acct_set("malt = 1\nmalt_input = momentum\nmalt_beta = 0\n", &a) == 0);
	CHECK(a.extra[AX_MALT] == 12 * mn + 3 * mpn && a.mem[AM_MALT] == 0 && a.mem_total == 0);
}

/* matrix_optim = adamw (paper 004's pure AdamW run): the AdamW update of
 * every block-matrix entry (13 FLOPs), no Polar Express, and AdamW's second
 * moment (4 bytes an entry) in the extra memory and the memory floor */
TEST(matrix_adamw_flops_and_memory)
{
	struct accounting a, b;
	const double mn = 32 * 512.0 * 512 + 16 * 2048.0 * 512 + 4 * 4.0 * 32;
	CHECK(acct_set("", &b) == 0);
	CHECK(b.polar_step > 0 && b.extra_total == 0 && b.mem_total == 0);
	CHECK(acct_set("matrix_optim = adamw\n", &a) == 0);
	CHECK(a.counts.block_matrices == (int64_t)mn);
	CHECK(a.extra[AX_MATRIX_ADAMW] == 13 * mn && a.extra_total == 13 * mn);
	CHECK(a.polar_step == 0);
	CHECK(a.mem[AM_MATRIX_ADAMW] == 4 * mn && a.mem_total == 4 * mn);
	CHECK(a.flops_step == b.flops_step && a.counts.total == b.counts.total);
	struct config c;
	struct err e;
	struct param_spec *p;
	size_t n;
	struct memory_floor f0, f1;
	config_defaults(&c);
	CHECK(paramspec_build(&c, &p, &n, &e) == 0);
	memory_floor_of(&c, p, n, &f0);
	c.matrix_optim = MATRIX_OPTIM_ADAMW;
	memory_floor_of(&c, p, n, &f1);
	CHECK(f1.optim == f0.optim + 4 * mn && f1.total == f0.total + 4 * mn);
	free(p);
}

/* paper 002's model-side arms: Table 3's parameter counts (50,342,416 for
 * the pair-tied exp17, 50,344,464 for the untied exp41; baseline
 * 50,332,176), 8,192 gains at depth 8 (2 L d), their fusion FLOPs and state */
TEST(sub_gains_paper002)
{
	struct accounting a;
	CHECK(acct("exp17", 8, &FULL, &a) == 0);
	CHECK(a.counts.total == 50342416 && a.counts.sub_gains == 8192 && a.counts.q_tau == 2048);
	CHECK(acct("exp41", 8, &FULL, &a) == 0);
	CHECK(a.counts.total == 50344464 && a.counts.q_tau == 4096);
	CHECK(acct("exp07", 8, &FULL, &a) == 0);
	CHECK(a.counts.total == 50332176 + 8192 && a.counts.q_tau == 0);
	CHECK(a.extra[AX_SUB_GAINS] == 28.0 * 8 * 512 * 512 * 4 && a.extra_total == a.extra[AX_SUB_GAINS]);
	CHECK(a.mem[AM_SUB_GAINS] == 16.0 * 8192 && a.mem_total == a.mem[AM_SUB_GAINS]);
	CHECK(acct("exp19", 8, &FULL, &a) == 0);
	CHECK(a.counts.total == 50332176 + 8192 + 32);
	CHECK(acct("exp64", 8, &FULL, &a) == 0);
	CHECK(a.counts.total == 50332176 + 2048 && a.extra[AX_SUB_GAINS] == 0);
	CHECK(acct("00", 8, &FULL, &a) == 0);
	CHECK(a.counts.sub_gains == 0 && a.mem[AM_SUB_GAINS] == 0);
	/* every pair-tied run of Table 3 and the forward-metric rows of Table
	 * 4A: 50,342,416; exp33 (no metric): the baseline's count */
	static const char *const pair_tied[] = {
		"zeta_prepolar_coord_whitening", "undamped_bieq_bf16", "metric_plus_fp32_postpolar_only",
		"natural_grad_geodesic", "turbo_muon_aol_precond", "metric_plus_bieq_bf16_postpolar",
		"metric_plus_homotopy_bieq", "muon2_f_prepolar_v", "one_sided_row_rms_bf16",
		"square_attn_only_bieq_bf16",
	};
	for (size_t i = 0; i < sizeof pair_tied / sizeof pair_tied[0]; i++) {
		CHECK(acct(pair_tied[i], 8, &FULL, &a) == 0);
		CHECK(a.counts.total == 50342416);
	}
	CHECK(acct("homotopy_bieq_only", 8, &FULL, &a) == 0);
	CHECK(a.counts.total == 50332176);
}

/* paper 002 Table 1: the activation storage of the unfused forms over the
 * weight-fused one, n_ve B T d 2 bytes for the slice view (unfused) and n_ve
 * B T 32 2 for the gate's copy (unfused_gate_copy, gate_scaled): 256.0 /
 * 512.0 MiB and 16.0 / 32.0 MiB at depth 8 with B = 32 / 64, 288.0 MiB for
 * exp28 at depth 6 (B = 64); none for the fused form and the baseline */
static double sub_form_mib(const char *arm, int depth, enum cfg_sub_form form, int B)
{
	struct config c;
	struct err e = {0};
	struct accounting a;
	config_defaults(&c);
	c.depth = depth;
	if (config_arm_apply(&c, arm, &e) != 0)
		return -1;
	if (form != SUB_FORM_FUSED || c.sub_gains)
		c.sub_form = form;
	c.batch_rows = B;
	if (config_validate(&c, &e) != 0 || accounting_of(&c, &FULL, &a, &e) != 0) {
		printf("  %s d%d: %s\n", arm, depth, e.msg);
		return -1;
	}
	return a.mem[AM_SUB_FORM] / 1048576.0;
}

TEST(sub_form_memory_paper002)
{
	CHECK(sub_form_mib("exp07", 8, SUB_FORM_UNFUSED, 32) == 256.0);
	CHECK(sub_form_mib("exp07", 8, SUB_FORM_UNFUSED_GATE_COPY, 32) == 16.0);
	CHECK(sub_form_mib("exp07", 8, SUB_FORM_GATE_SCALED, 32) == 16.0);
	CHECK(sub_form_mib("exp07", 8, SUB_FORM_UNFUSED, 64) == 512.0);
	CHECK(sub_form_mib("exp07", 8, SUB_FORM_UNFUSED_GATE_COPY, 64) == 32.0);
	CHECK(sub_form_mib("exp07", 8, SUB_FORM_GATE_SCALED, 64) == 32.0);
	CHECK(sub_form_mib("exp07", 8, SUB_FORM_FUSED, 64) == 0);
	CHECK(sub_form_mib("00", 8, SUB_FORM_FUSED, 64) == 0);
	CHECK(sub_form_mib("exp11", 6, SUB_FORM_FUSED, 64) == 0);
	struct accounting a;
	CHECK(acct("exp28", 6, &FULL, &a) == 0);
	CHECK(a.mem[AM_SUB_FORM] == 288.0 * 1048576 && a.n_ve == 3);
	/* the activation figure is in the memory total, the gains' state apart */
	CHECK(a.mem_total == a.mem[AM_SUB_FORM] + a.mem[AM_SUB_GAINS] + a.mem[AM_QK_SCALING]);
	CHECK(acct_figure_formula("memory_mib.sub_form") != NULL);
}

/* Muon2-F: 3 m n + 4 max(m, n) FLOPs and 4 max(m, n) bytes a block matrix;
 * NormPre-G: 7 m n (3 m n without the tangent) + (m + n) / 2 FLOPs, no state */
TEST(muon2f_normpre_g_flops_and_memory)
{
	struct accounting a;
	const double mn = 32 * 512.0 * 512 + 16 * 2048.0 * 512 + 4 * 4.0 * 32;
	const double mx = 32 * 512.0 + 16 * 2048.0 + 4 * 32.0;
	const double mpn = 32 * 1024.0 + 16 * 2560.0 + 4 * 36.0;
	CHECK(acct_set("muon2f = 1\n", &a) == 0);
	CHECK(a.extra[AX_MUON2F] == 3 * mn + 4 * mx && a.extra_total == a.extra[AX_MUON2F]);
	CHECK(a.mem[AM_MUON2F] == 4 * mx && a.mem_total == 4 * mx);
	CHECK(acct_set("muon2f = 0\n", &a) == 0);
	CHECK(a.extra[AX_MUON2F] == 0 && a.mem[AM_MUON2F] == 0);
	CHECK(acct_set("normpre_g = 1\n", &a) == 0);
	CHECK(a.extra[AX_NORMPRE_G] == 7 * mn + mpn / 2 && a.extra_total == a.extra[AX_NORMPRE_G]);
	CHECK(a.mem_total == 0);
	CHECK(acct_set("normpre_g = 1\nnormpre_tangent = 0\n", &a) == 0);
	CHECK(a.extra[AX_NORMPRE_G] == 3 * mn + mpn / 2);
	CHECK(acct_set("normpre_g = 0\n", &a) == 0);
	CHECK(a.extra[AX_NORMPRE_G] == 0);
}

TEST(formulas_named)
{
	for (int i = 0; i < AX_N; i++) {
		char p[96];
		snprintf(p, sizeof p, "flops.extra_gflops_step.%s", acct_extra_key(i));
		CHECK(acct_figure_formula(p) == acct_extra_formula(i));
	}
	for (int i = 0; i < AM_N; i++) {
		char p[96];
		snprintf(p, sizeof p, "memory_mib.%s", acct_mem_key(i));
		CHECK(acct_figure_formula(p) == acct_mem_formula(i));
	}
	CHECK(acct_figure_formula("params.backbone") != NULL);
	CHECK(acct_figure_formula("flops.nope") == NULL);
}

/* paper 002 Table 2's LeRoPE comparators: 8,192 gains + 64 (exp31) or
 * 2,048 (exp21) log-frequencies over the baseline's 50,332,176; the
 * frequency gradient and the tables' FLOPs, the AdamW state and exp21's
 * per-layer tables */
TEST(lerope_paper002)
{
	struct accounting a;
	const double tok = 64.0 * 2048 * 4, L = 8, d = 512;
	CHECK(acct("exp31", 8, &FULL, &a) == 0);
	CHECK(a.counts.total == 50332176 + 8192 + 64 && a.counts.rope_tau == 64 &&
	      a.counts.q_tau == 0 && a.counts.backbone == a.counts.total);
	CHECK(a.extra[AX_ROPE_TAU] == 14 * L * d * tok + 3.0 * 2048 * 64 * 4);
	CHECK(a.mem[AM_ROPE_TAU] == 16.0 * 64);
	CHECK(acct("exp21", 8, &FULL, &a) == 0);
	CHECK(a.counts.total == 50332176 + 8192 + 2048 && a.counts.rope_tau == 2048);
	CHECK(a.extra[AX_ROPE_TAU] == 14 * L * d * tok + 3.0 * 2048 * (L * d / 2) * 4);
	CHECK(a.mem[AM_ROPE_TAU] == 16.0 * 2048 + 8.0 * 2048 * (L * d / 2 - 64));
	CHECK(a.extra_total == a.extra[AX_SUB_GAINS] + a.extra[AX_ROPE_TAU]);
	CHECK(acct("00", 8, &FULL, &a) == 0);
	CHECK(a.counts.rope_tau == 0 && a.extra[AX_ROPE_TAU] == 0 && a.mem[AM_ROPE_TAU] == 0);
	CHECK(acct_figure_formula("params.rope_tau") != NULL &&
	      acct_figure_formula("flops.extra_gflops_step.rope_tau") != NULL &&
	      acct_figure_formula("memory_mib.rope_tau") != NULL);
}

int main(void)
{
	RUN(baseline_params_and_flops);
	RUN(component_figures_paper001);
	RUN(paper004_conventions);
	RUN(table_neumann_rows);
	RUN(polar_and_equilibrator_arms);
	RUN(zeta_flops_and_memory);
	RUN(malt_flops_and_memory);
	RUN(sub_gains_paper002);
	RUN(sub_form_memory_paper002);
	RUN(muon2f_normpre_g_flops_and_memory);
	RUN(matrix_adamw_flops_and_memory);
	RUN(formulas_named);
	RUN(lerope_paper002);
	return t_done();
}

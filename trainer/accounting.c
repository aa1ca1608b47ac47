/* accounting.c: the accounting of every arm (see accounting.h): parameter
 * counts over the paramspec table, FLOPs a token and a step, the extra
 * FLOPs and persistent memory of each arm component, and the trainer's
 * memory floor.
 *
 * Leaves out: activation memory of the arms (persistent state only; a run's
 * measured peak covers the rest), kernel-level FLOP counts of the baseline
 * optimizer other than Polar Express, and wall-clock modelling.
 *
 * Reference: papers 000/001 Table 1b and section 2 (OE lookup and update,
 * BiEq, Neumann-Gram, QK scaling, routing and Table-Neumann counts), paper
 * 004 Table 5 (MuonEq-R/RC and the Lemma-2 Neumann-Gram count). The polar
 * arms (polar_steps, polar_norm = aol), BiEq's passes and sides and the
 * equilibrators' square-only scope scale those counts by what they run;
 * polar_norm = fp32, post_polar = fp32 and normuon = 0 change no count
 * (dtype only, or NorMuon, which is not counted). Zeta (paper 002 section
 * 3.3) adds its element-wise passes and its fp32 second moment, whose 96 MiB
 * at depth 8 is the paper's measured +96.0 MiB; MALT (paper 004 #2c) its
 * element-wise passes and fp32 row and column EMAs (none with malt_beta = 0); Muon2-F (paper 002
 * exp53) its passes and its fp32 factored buffer (one value per row or
 * column, the longer side); NormPre-G (paper 004 #2e/#2f) its passes and no
 * state. Pre-sublayer channel gains (paper 002 sections 3.1 and 4.2) count
 * their weight fusion W (1 alpha^T) and its backward, and their AdamW state.
 * AdamW on the block matrices (paper 004's pure AdamW run) counts its
 * update and its second moment, and no Polar Express.
 */
#include "trainer/accounting.h"
#include "trainer/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void param_counts_of(const struct param_spec *s, size_t n, struct param_counts *c)
{
	memset(c, 0, sizeof *c);
	for (size_t i = 0; i < n; i++) {
		int64_t k = (int64_t)s[i].numel;
		switch (s[i].kind) {
		case PK_WTE: c->wte += k; break;
		case PK_VALUE_EMBED: c->value_embeds += k; break;
		case PK_LM_HEAD: c->lm_head += k; break;
		case PK_ATTN_Q: case PK_ATTN_K: case PK_ATTN_V: case PK_ATTN_PROJ:
		case PK_MLP_FC: case PK_MLP_PROJ: case PK_VE_GATE:
			c->block_matrices += k;
			break;
		case PK_RESID_LAMBDAS: case PK_X0_LAMBDAS: c->scalars += k; break;
		case PK_Q_TAU: c->q_tau += k; break;
		case PK_WTE_LAMBDAS: case PK_OUT_LAMBDAS: c->routing_lambdas += k; break;
		case PK_SUB_GAINS: c->sub_gains += k; break;
		case PK_ROPE_TAU: c->rope_tau += k; break;
		case PK_OE_TABLE:
			c->oe += k;
			c->oe_rows_total += s[i].shape[0];
			if (c->oe_tables < ACCOUNTING_OE_TABLES_MAX)
				c->oe_rows[c->oe_tables] = s[i].shape[0];
			c->oe_tables++;
			break;
		case PK_NKINDS: break;
		}
	}
	c->backbone = c->wte + c->value_embeds + c->lm_head + c->block_matrices + c->scalars + c->q_tau + c->routing_lambdas;
	c->backbone += c->sub_gains;
	c->backbone += c->rope_tau;
	c->total = c->backbone + c->oe;
}

cJSON *param_counts_json(const struct param_counts *c)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "wte", (double)c->wte);
	cJSON_AddNumberToObject(j, "value_embeds", (double)c->value_embeds);
	cJSON_AddNumberToObject(j, "lm_head", (double)c->lm_head);
	cJSON_AddNumberToObject(j, "block_matrices", (double)c->block_matrices);
	cJSON_AddNumberToObject(j, "scalars", (double)c->scalars);
	cJSON_AddNumberToObject(j, "q_tau", (double)c->q_tau);
	cJSON_AddNumberToObject(j, "routing_lambdas", (double)c->routing_lambdas);
	cJSON_AddNumberToObject(j, "sub_gains", (double)c->sub_gains);
	cJSON_AddNumberToObject(j, "rope_tau", (double)c->rope_tau);
	cJSON_AddNumberToObject(j, "backbone", (double)c->backbone);
	cJSON_AddNumberToObject(j, "oe", (double)c->oe);
	cJSON *rows = cJSON_AddArrayToObject(j, "oe_rows");
	for (int t = 0; t < c->oe_tables && t < ACCOUNTING_OE_TABLES_MAX; t++)
		cJSON_AddItemToArray(rows, cJSON_CreateNumber((double)c->oe_rows[t]));
	cJSON_AddNumberToObject(j, "oe_rows_total", (double)c->oe_rows_total);
	cJSON_AddNumberToObject(j, "oe_tables", c->oe_tables);
	cJSON_AddNumberToObject(j, "total", (double)c->total);
	return j;
}

double flops_per_token(const struct config *c, const struct param_counts *pc)
{
	double attn = 0;
	for (int i = 0; i < c->depth; i++) {
		int w = config_window(c, i);
		attn += 12.0 * config_heads(c) * c->head_dim * (w < c->seq_len ? w : c->seq_len);
	}
	return 6.0 * (double)(pc->lm_head + pc->block_matrices) + attn;
}

void memory_floor_of(const struct config *c, const struct param_spec *s, size_t n, struct memory_floor *m)
{
	int fp64 = c->dtype == DTYPE_F64;
	double es = fp64 ? 8.0 : 4.0;
	memset(m, 0, sizeof *m);
	for (size_t i = 0; i < n; i++) {
		m->params += (double)paramspec_block_bytes(&s[i], fp64);
		if (s[i].kind != PK_OE_TABLE)
			m->optim += es * (double)s[i].numel;
		if (s[i].group == PG_MATRIX && c->matrix_optim == MATRIX_OPTIM_ADAMW)
			m->optim += es * (double)s[i].numel;   /* AdamW's second moment */
	}
	double N = (double)c->batch_rows * c->seq_len;
	m->activations = es * (c->depth + 1.0) * N * config_model_dim(c);
	double rows = (double)c->batch_rows * (c->seq_len + 1.0);   /* a loader's */
	m->tokens = 4.0 * (2.0 * N + rows);
	if (c->eval_tokens + c->heldout_tokens > 0)
		m->tokens += 4.0 * (3.0 * N + rows);
	m->total = m->params + m->optim + m->activations + m->tokens;
}

/* ---- the arms' FLOPs and memory ---- */

static const char *const extra_keys[AX_N] = {
	"oe_lookup", "oe_update", "bieq", "muoneq", "neumann", "table_neumann", "qk_scaling", "routing",
	"zeta", "malt", "sub_gains", "muon2f", "normpre_g",
	"matrix_adamw", "rope_tau",
};
static const char *const extra_formulas[AX_N] = {
	"8 d per token x tokens/step",
	"5 per OE parameter",
	"4 m n per row or column step, bieq_passes x (2 | 1 with bieq_sides = rows) steps (16 m n at 2 passes, both sides) per equilibrated block matrix (ve_gate included; equil_scope = square: square ones only)",
	"MuonEq-R 4 m n, MuonEq-RC 8 m n per equilibrated block matrix (equil_scope = square: square ones only)",
	"per V x d table (wte, lm_head, each value_embeds): full 4Vd^2+14Vd+3d^2+3d | lemma2 4Vd^2+4Vd",
	"per OE table j, k = d/4, R_j visited rows: 4 R_j k^2 + 14 R_j k + 3k^2 + 3k (lemma2: 4 R_j k^2 + 4 R_j k)",
	"4 L d per token x tokens/step",
	"(4 d per lambda site (L wte_lambdas + 2 out_lambdas) + 4 d separate anchor | -2 d shared anchor) per token x tokens/step",
	"8 m n per block matrix (ve_gate included): 4 for the second moment V = 0.99 V + 0.01 g^2, 4 for G / (sqrt(V / (1 - 0.99^t)) + 1e-8)",
	"12 m n + 6 (m + n) per block matrix (ve_gate included): 3 m n for the squared row and column sums of g, 2 m n for P G Q, 2 m n for P X Q, 5 m n for the two Frobenius norms and the grafting scale; 3 (m + n) for the EMAs (none with malt_beta = 0), 3 (m + n) for the -1/8 powers",
	"28 d^2 per layer per micro-step x grad_accum: W (1 alpha^T) of W_Q, W_K, W_V, W_fc (7 d^2), their gradient times alpha (7 d^2), dalpha = sum of gradient x W (14 d^2)",
	"3 m n + 4 max(m, n) per block matrix (ve_gate included): 2 m n for the mean squares of G, m n for the scaling; 4 max(m, n) for the mean, the EMA and the inverse square root",
	"7 m n + (m + n) / 2 per block matrix (ve_gate included; 3 m n + (m + n) / 2 with normpre_tangent = 0): 4 m n for <g_i, w_i> w_i and its subtraction, 2 m n for the squared sums, m n for the scaling; m or n inverse square roots on alternate steps",
	"13 m n per block matrix (ve_gate included) with matrix_optim = adamw, in place of Polar Express (flops.polar_express_step 0): 3 for m's lerp, 4 for g^2 and v's lerp, 4 for sqrt(v / bias2) + eps and m / denom, 2 for the step p -= lr / bias1 u",
	"14 L d per token x tokens/step for the frequency gradient (per RoPE plane of q and of k: g = R dx 6, y = xn / rstd 2, g1 y2 - g2 y1 3, x t theta exp(tau) 2, the sum 1) + 3 T x (hd/2 shared | L d/2 head) x grad_accum for the tables (the angle, its cos and sin, each counted 1, at each micro-step's forward)",
};
static const char *const mem_keys[AM_N] = {"oe", "fp32_state", "qk_scaling", "routing", "zeta", "malt",
					   "sub_gains", "muon2f", "matrix_adamw", "rope_tau", "sub_form"};
static const char *const mem_formulas[AM_N] = {
	"4 bytes per OE parameter + 4 bytes per OE row",
	"8 bytes per wte and value_embeds parameter (embed_state = fp32)",
	"16 bytes per q_tau entry",
	"16 bytes per routing lambda",
	"4 bytes per block-matrix parameter (Zeta's fp32 second moment)",
	"4 (m + n) bytes per block matrix (MALT's fp32 row and column EMAs; 0 with malt_beta = 0)",
	"16 bytes per sub_gains entry",
	"4 max(m, n) bytes per block matrix (Muon2-F's fp32 factored second moment)",
	"4 bytes per block-matrix parameter (matrix_optim = adamw: AdamW's fp32 second moment v; its first moment m takes the place of Muon's momentum buffer, and NorMuon's buffer goes)",
	"16 bytes per rope_tau entry + 2 x 4 x T (L d/2 - hd/2) bytes with rope_tau = head (a cos and a sin table per layer, over the one table without)",
	"activation storage of paper 002's PyTorch graph over the weight-fused form: n_ve x B x T x d x 2 bytes with sub_form = unfused (the gate's 32-channel slice view keeps the unscaled bf16 x_hat of each value-embedding layer), n_ve x B x T x ve_gate_channels x 2 with unfused_gate_copy or gate_scaled (the gate's own input), 0 fused; B = batch_rows",
};

const char *acct_extra_key(enum acct_extra k)
{
	return k < AX_N ? extra_keys[k] : "?";
}

const char *acct_extra_formula(enum acct_extra k)
{
	return k < AX_N ? extra_formulas[k] : "?";
}

const char *acct_mem_key(enum acct_mem k)
{
	return k < AM_N ? mem_keys[k] : "?";
}

const char *acct_mem_formula(enum acct_mem k)
{
	return k < AM_N ? mem_formulas[k] : "?";
}

const char *acct_neumann_name(enum acct_neumann n)
{
	return n == ACCT_NEUMANN_LEMMA2 ? "lemma2" : "full";
}

const char *acct_figure_formula(const char *path)
{
	static const struct {
		const char *path, *formula;
	} f[] = {
		{"params.wte", "V d"},
		{"params.value_embeds", "n_ve V d"},
		{"params.lm_head", "V d"},
		{"params.block_matrices", "12 L d^2 + n_ve H 32 (ve_gate)"},
		{"params.scalars", "2 L (resid_lambdas, x0_lambdas)"},
		{"params.q_tau", "L H hd/2 (pair) | L H hd (untied) | L H (head)"},
		{"params.routing_lambdas", "L (wte_lambdas) + 2 (out_lambdas)"},
		{"params.sub_gains", "2 L d (sub_gains: attention and MLP input gains)"},
		{"params.rope_tau", "hd/2 (rope_tau = shared) | L H hd/2 (head)"},
		{"params.backbone", "wte + value_embeds + lm_head + block matrices + scalars + q_tau + routing lambdas + sub_gains + rope_tau"},
		{"params.oe_tables", "(oe_n - 1) oe_k"},
		{"params.oe_rows_total", "sum_j (m + 2j) = 4m + 12"},
		{"params.oe", "OE rows x d/4"},
		{"params.total", "backbone + OE"},
		{"flops.per_token", "6 (lm_head + block matrices) + sum_layers 12 H hd min(window, T)"},
		{"flops.per_step", "FLOPs/token x tokens/step"},
		{"flops.polar_express_step", "sum over block matrices polar_steps (4 m n q + 2 q^3), plus 2 m n q + q^2 + m n with polar_norm = aol, q = min(m, n)"},
		{"flops.extra_gflops_step_total", "sum of the extra components / 1e9"},
		{"memory_mib.total", "sum of the memory components / 2^20"},
	};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (!strcmp(f[i].path, path))
			return f[i].formula;
	for (int i = 0; i < AX_N; i++) {
		char p[96];
		snprintf(p, sizeof p, "flops.extra_gflops_step.%s", extra_keys[i]);
		if (!strcmp(p, path))
			return extra_formulas[i];
	}
	for (int i = 0; i < AM_N; i++) {
		char p[96];
		snprintf(p, sizeof p, "memory_mib.%s", mem_keys[i]);
		if (!strcmp(p, path))
			return mem_formulas[i];
	}
	return NULL;
}

static double neumann_table_flops(double V, double d, enum acct_neumann n)
{
	if (n == ACCT_NEUMANN_LEMMA2)
		return 4 * V * d * d + 4 * V * d;
	return 4 * V * d * d + 14 * V * d + 3 * d * d + 3 * d;
}

double acct_tabneu_per_row(double d, enum acct_neumann n)
{
	double k = d / 4;
	return n == ACCT_NEUMANN_LEMMA2 ? 4 * k * k + 4 * k : 4 * k * k + 14 * k;
}

int accounting_of(const struct config *c, const struct acct_opts *o, struct accounting *a,
		  struct err *e)
{
	struct param_spec *p;
	size_t n;
	memset(a, 0, sizeof *a);
	if (paramspec_build(c, &p, &n, e) != 0)
		return -1;
	a->tokens_per_step = (int64_t)c->batch_rows * c->seq_len * c->grad_accum;
	const double tok = (double)a->tokens_per_step, d = config_model_dim(c), L = c->depth;

	double bieq = 0, muoneq = 0, neumann = 0, polar = 0, tabneu = 0, zeta = 0, malt = 0, malt_mem = 0;
	double m2f = 0, m2f_mem = 0, npg = 0;
	const double k = d / 4;
	for (size_t i = 0; i < n; i++) {
		const struct param_spec *s = &p[i];
		if (s->kind == PK_VALUE_EMBED)
			a->n_ve++;
		if (s->group == PG_MATRIX) {
			double m = (double)s->shape[0], nn = (double)s->shape[1], q = m < nn ? m : nn;
			polar += c->polar_steps * (4 * m * nn * q + 2 * q * q * q);
			zeta += 8 * m * nn;
			malt += 12 * m * nn + (c->malt_beta > 0 ? 6 : 3) * (m + nn);
			malt_mem += c->malt_beta > 0 ? 4 * (m + nn) : 0;   /* malt_beta = 0: no EMAs */
			m2f += 3 * m * nn + 4 * (m > nn ? m : nn);
			m2f_mem += 4 * (m > nn ? m : nn);
			npg += (c->normpre_tangent ? 7 : 3) * m * nn + (m + nn) / 2;
			if (c->polar_norm == POLAR_NORM_AOL)   /* Gram, row sums, scaling */
				polar += 2 * m * nn * q + q * q + m * nn;
			if (c->equil_scope == EQUIL_ALL || m == nn) {
				bieq += 4.0 * c->bieq_passes * (c->bieq_sides == BIEQ_ROWS ? 1 : 2) * m * nn;
				muoneq += (c->muoneq == MUONEQ_RC ? 8 : 4) * m * nn;
			}
		}
		if (s->kind == PK_WTE || s->kind == PK_LM_HEAD || s->kind == PK_VALUE_EMBED)
			neumann += neumann_table_flops((double)s->shape[0], (double)s->shape[1], o->neumann);
		if (s->kind == PK_OE_TABLE) {
			/* per-table constant here; the row-dependent part below */
			if (o->neumann == ACCT_NEUMANN_FULL)
				tabneu += 3 * k * k + 3 * k;
		}
	}
	param_counts_of(p, n, &a->counts);
	free(p);
	const struct param_counts *pc = &a->counts;

	a->flops_token = flops_per_token(c, pc);
	a->flops_step = a->flops_token * tok;
	a->polar_step = polar;

	if (c->oe) {
		a->extra[AX_OE_LOOKUP] = 8 * d * tok;
		a->extra[AX_OE_UPDATE] = 5 * (double)pc->oe;
		if (c->table_neumann) {
			double rows = o->tabneu_rows > 0 ? (double)o->tabneu_rows : (double)pc->oe_rows_total;
			a->extra[AX_TABLE_NEUMANN] = acct_tabneu_per_row(d, o->neumann) * rows + tabneu;
		}
	}
	if (c->muoneq == MUONEQ_BIEQ)
		a->extra[AX_BIEQ] = bieq;
	if (c->muoneq == MUONEQ_R || c->muoneq == MUONEQ_RC)
		a->extra[AX_MUONEQ] = muoneq;
	if (c->neumann)
		a->extra[AX_NEUMANN] = neumann;
	if (c->zeta)
		a->extra[AX_ZETA] = zeta;
	if (c->malt)
		a->extra[AX_MALT] = malt;
	if (c->muon2f)
		a->extra[AX_MUON2F] = m2f;
	if (c->normpre_g)
		a->extra[AX_NORMPRE_G] = npg;
	if (c->matrix_optim == MATRIX_OPTIM_ADAMW) {   /* AdamW in place of Muon */
		a->extra[AX_MATRIX_ADAMW] = 13.0 * (double)pc->block_matrices;
		a->polar_step = 0;
	}
	if (c->qk_scale != QK_SCALE_NONE)
		a->extra[AX_QK_SCALING] = 4 * L * d * tok;
	if (c->wte_lambdas) {
		double sites = L + (c->out_lambdas ? 2 : 0);
		double anchor = c->anchor == ANCHOR_SHARED ? -2 : 4;
		a->extra[AX_ROUTING] = (4 * sites + anchor) * d * tok;
	}
	if (c->sub_gains)
		a->extra[AX_SUB_GAINS] = 28.0 * L * d * d * c->grad_accum;
	if (c->rope_tau != ROPE_TAU_OFF) {
		double planes = c->rope_tau == ROPE_TAU_HEAD ? L * d / 2 : c->head_dim / 2;
		a->extra[AX_ROPE_TAU] = 14 * L * d * tok + 3.0 * c->seq_len * planes * c->grad_accum;
	}
	for (int i = 0; i < AX_N; i++)
		a->extra_total += a->extra[i];

	if (c->oe)
		a->mem[AM_OE] = 4.0 * (double)pc->oe + 4.0 * (double)pc->oe_rows_total;
	if (c->embed_state == EMBED_STATE_FP32)
		a->mem[AM_FP32_STATE] = 8.0 * (double)(pc->wte + pc->value_embeds);
	a->mem[AM_QK_SCALING] = 16.0 * (double)pc->q_tau;
	a->mem[AM_ROUTING] = 16.0 * (double)pc->routing_lambdas;
	a->mem[AM_SUB_GAINS] = 16.0 * (double)pc->sub_gains;
	a->mem[AM_ROPE_TAU] = 16.0 * (double)pc->rope_tau;
	if (c->rope_tau == ROPE_TAU_HEAD)
		a->mem[AM_ROPE_TAU] += 8.0 * c->seq_len * (L * d / 2 - c->head_dim / 2);
	if (c->zeta)
		a->mem[AM_ZETA] = 4.0 * (double)pc->block_matrices;
	if (c->malt)
		a->mem[AM_MALT] = malt_mem;
	if (c->muon2f)
		a->mem[AM_MUON2F] = m2f_mem;
	if (c->matrix_optim == MATRIX_OPTIM_ADAMW)
		a->mem[AM_MATRIX_ADAMW] = 4.0 * (double)pc->block_matrices;
	if (c->sub_gains && c->sub_form != SUB_FORM_FUSED) {
		double w = c->sub_form == SUB_FORM_UNFUSED ? d : (double)c->ve_gate_channels;
		a->mem[AM_SUB_FORM] = 2.0 * a->n_ve * c->batch_rows * (double)c->seq_len * w;
	}
	for (int i = 0; i < AM_N; i++)
		a->mem_total += a->mem[i];
	return 0;
}

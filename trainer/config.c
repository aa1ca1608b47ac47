/* config.c: the trainer configuration: key = value files, --set overrides,
 * cross-key validation, the canonical printed form and its SHA-256, derived
 * sizes, and the named arms.
 *
 * One table of keys (keys[] below) drives parsing, defaults, range checks and
 * printing, so the four cannot drift apart. Leaves out: what the keys do
 * (the trainer), and any file search path (callers name files).
 *
 * Format: one `key = value` a line; `#` at the start of a line or after
 * white space starts a comment; blank lines ignored; white space around key
 * and value ignored; a line ends at LF, CR LF or a lone CR (so a file saved
 * with old Mac line ends is not one long comment). Integers are decimal;
 * numbers are C strtod syntax, finite; switches are 0 or 1; enumerations
 * are one of their listed words; strings are the rest of the line (may be
 * empty).
 *
 * Reference: supkit-formats(5), TRAINER CONFIG (keys, defaults, format);
 * supkit-train(1), THE ARMS.
 */
#include "trainer/config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/sha256.h"
#include "lib/stream.h"

enum key_type { KT_INT, KT_I64, KT_U64, KT_DOUBLE, KT_BOOL, KT_ENUM, KT_STR };

struct key_def {
	const char *name;
	enum key_type type;
	size_t off;
	size_t size;           /* KT_STR: buffer size */
	const char *def;       /* default, in the file's syntax */
	double lo, hi;         /* inclusive range (numbers) */
	int lo_open;           /* 1: value must be > lo */
	const char *const *words; /* KT_ENUM: NULL-terminated, index = enum value */
};

static const char *const w_init[] = {"benchmark", "dense", NULL};
static const char *const w_dtype[] = {"fp32", "fp64", NULL};
static const char *const w_backend[] = {"auto", "cpu", "cuda", NULL};
static const char *const w_precision[] = {"auto", "autocast", "fp32", NULL};
static const char *const w_polar[] = {"bf16", "fp32", NULL};
static const char *const w_parith[] = {"compiled", "eager", NULL};
static const char *const w_logits[] = {"bf16", "fp32", NULL};
static const char *const w_muoneq[] = {"off", "bieq", "r", "rc", NULL};
static const char *const w_bsides[] = {"both", "rows", NULL};
static const char *const w_escope[] = {"all", "square", NULL};
static const char *const w_ppolar[] = {"polar", "fp32", NULL};
static const char *const w_pnorm[] = {"polar", "fp32", "aol", NULL};
static const char *const w_neusite[] = {"direction", "gradient", NULL};
static const char *const w_estate[] = {"bf16", "fp32", NULL};
static const char *const w_wdsched[] = {"linear", "cosine", NULL};
static const char *const w_qkscale[] = {"none", "pair", "untied", "head", NULL};
static const char *const w_qkmask[] = {"none", "l0_hf16", NULL};
static const char *const w_qkparam[] = {"exp", "stop_exp", "linear", NULL};
static const char *const w_anchor[] = {"separate", "shared", NULL};
static const char *const w_ropetau[] = {"off", "shared", "head", NULL};
static const char *const w_subform[] = {"fused", "unfused", "unfused_gate_copy", "gate_scaled", NULL};
static const char *const w_ropetrig[] = {"bf16", "fp32", NULL};
static const char *const w_step0[] = {"none", "nostep0", "mom_only_nodisp", "disp_only_nomom",
				      "disp_stepcount_nomom", "nostep0_all", NULL};
static const char *const w_maltin[] = {"grad", "momentum", NULL};
static const char *const w_mopt[] = {"muon", "adamw", NULL};

#define OFF(f) offsetof(struct config, f)
#define SZ(f) sizeof(((struct config *)0)->f)
#define I(n, f, d, lo, hi) {n, KT_INT, OFF(f), 0, d, lo, hi, 0, NULL}
#define I64(n, f, d, lo, hi) {n, KT_I64, OFF(f), 0, d, lo, hi, 0, NULL}
#define D(n, f, d, lo, hi) {n, KT_DOUBLE, OFF(f), 0, d, lo, hi, 0, NULL}
#define DP(n, f, d, hi) {n, KT_DOUBLE, OFF(f), 0, d, 0, hi, 1, NULL} /* > 0 */
#define B(n, f, d) {n, KT_BOOL, OFF(f), 0, d, 0, 1, 0, NULL}
#define E(n, f, d, w) {n, KT_ENUM, OFF(f), 0, d, 0, 0, 0, w}
#define S(n, f, d) {n, KT_STR, OFF(f), SZ(f), d, 0, 0, 0, NULL}

/* Table order is the canonical print order. Ranges are the values the
 * trainer accepts; documented in supkit-formats(5), CONFIG. */
static const struct key_def keys[] = {
	S("arm", arm, "00_dense_native"),
	{"seed", KT_U64, OFF(seed), 0, "42", 0, 0, 0, NULL},
	/* model */
	I("depth", depth, "8", 1, 64),
	I("model_dim", model_dim, "0", 0, 16384),
	I("head_dim", head_dim, "128", 2, 1024),
	I("vocab_size", vocab_size, "8192", 2, 65536),
	I("seq_len", seq_len, "2048", 1, 1048576),
	S("window_pattern", window_pattern, "SSSL"),
	I("ve_gate_channels", ve_gate_channels, "32", 1, 16384),
	D("norm_eps", norm_eps, "1.1920928955078125e-07", 0, 1),
	DP("softcap", softcap, "15", 1e6),
	E("logits", logits, "bf16", w_logits),
	DP("rope_base", rope_base, "10000", 1e12),
	E("init", init, "benchmark", w_init),
	S("init_from", init_from, ""),
	/* batch and schedule */
	I("batch_rows", batch_rows, "64", 1, 1048576),
	I("grad_accum", grad_accum, "4", 1, 65536),
	I("steps", steps, "953", 1, 1000000000),
	I("warmup_steps", warmup_steps, "11", 0, 1000000000),
	D("warmdown_ratio", warmdown_ratio, "0.5", 0, 1),
	DP("max_loss", max_loss, "100", 1e300),
	/* optimizer */
	D("lr_lm_head", lr_lm_head, "0.004", 0, 1e6),
	D("lr_embed", lr_embed, "0.6", 0, 1e6),
	D("lr_resid", lr_resid, "0.005", 0, 1e6),
	D("lr_scalar", lr_scalar, "0.5", 0, 1e6),
	D("lr_matrix", lr_matrix, "0.04", 0, 1e6),
	D("lr_qtau", lr_qtau, "0.02", 0, 1e6),
	D("sub_lr", sub_lr, "0.02", 0, 1e6),
	D("muon_wd", muon_wd, "0.2", 0, 1e6),
	D("muon_beta2", muon_beta2, "0.95", 0, 0.999999),
	D("momentum_start", momentum_start, "0.85", 0, 0.999999),
	D("momentum_end", momentum_end, "0.95", 0, 0.999999),
	I("momentum_warmup", momentum_warmup, "300", 0, 1000000000),
	DP("lr_scale", lr_scale, "1", 1e6),
	D("muon_wd_scale", muon_wd_scale, "1", 0, 1e6),
	/* arms */
	B("oe", oe, "0"),
	I64("oe_m", oe_m, "150855", 1, 1099511627776.0),
	I("oe_n", oe_n, "3", 2, 4),
	I("oe_k", oe_k, "2", 1, 4),
	D("oe_lr", oe_lr, "0.6", 0, 1e6),
	E("muoneq", muoneq, "off", w_muoneq),
	D("bieq_tau", bieq_tau, "25", 0, 1e9),
	I("bieq_passes", bieq_passes, "2", 1, 8),
	E("bieq_sides", bieq_sides, "both", w_bsides),
	E("equil_scope", equil_scope, "all", w_escope),
	B("cooldown", cooldown, "0"),
	E("polar", polar, "bf16", w_polar),
	E("polar_arith", polar_arith, "compiled", w_parith),
	E("polar_norm", polar_norm, "polar", w_pnorm),
	I("polar_steps", polar_steps, "5", 1, 5),
	E("post_polar", post_polar, "polar", w_ppolar),
	B("normuon", normuon, "1"),
	B("zeta", zeta, "0"),
	B("malt", malt, "0"),
	D("malt_beta", malt_beta, "0.95", 0, 0.999999),
	D("malt_eps", malt_eps, "1e-8", 1e-30, 1),
	B("muon2f", muon2f, "0"),
	B("normpre_g", normpre_g, "0"),
	B("normpre_tangent", normpre_tangent, "1"),
	B("neumann", neumann, "0"),
	D("neumann_tau", neumann_tau, "80", 0, 1e9),
	E("neumann_site", neumann_site, "direction", w_neusite),
	B("table_neumann", table_neumann, "0"),
	E("embed_state", embed_state, "bf16", w_estate),
	E("muon_wd_schedule", muon_wd_schedule, "linear", w_wdsched),
	E("qk_scale", qk_scale, "none", w_qkscale),
	E("qk_mask", qk_mask, "none", w_qkmask),
	E("qk_param", qk_param, "exp", w_qkparam),
	B("sub_gains", sub_gains, "0"),
	E("sub_form", sub_form, "fused", w_subform),
	B("wte_lambdas", wte_lambdas, "0"),
	B("out_lambdas", out_lambdas, "0"),
	E("anchor", anchor, "separate", w_anchor),
	D("shared_eps", shared_eps, "1e-6", 0, 1),
	E("step0", step0, "none", w_step0),
	E("rope_tau", rope_tau, "off", w_ropetau),
	E("rope_trig", rope_trig, "bf16", w_ropetrig),
	D("rope_lr", rope_lr, "0.02", 0, 1e6),
	/* data and evaluation */
	S("data_dir", data_dir, ""),
	I64("eval_tokens", eval_tokens, "20971520", 0, 1e15),
	I64("heldout_tokens", heldout_tokens, "20971520", 0, 1e15),
	I("loader_buffer", loader_buffer, "1000", 1, 100000000),
	/* run */
	E("backend", backend, "auto", w_backend),
	E("dtype", dtype, "fp32", w_dtype),
	E("precision", precision, "auto", w_precision),
	I("threads", threads, "0", 0, 4096),
	I("pass_rows", pass_rows, "0", 0, 1000000),
	I("checkpoint_every", checkpoint_every, "0", 0, 1000000000),
	I("eval_every", eval_every, "0", 0, 1000000000),
	/* optimizer arms of paper 004 (#2d; pure AdamW) */
	E("malt_input", malt_input, "grad", w_maltin),
	E("matrix_optim", matrix_optim, "muon", w_mopt),
};

#define NKEYS ((int)(sizeof keys / sizeof keys[0]))
_Static_assert(sizeof keys / sizeof keys[0] <= CONFIG_KEYS_MAX, "raise CONFIG_KEYS_MAX");

int config_key_count(void)
{
	return NKEYS;
}

const char *config_key_name(int i)
{
	return i >= 0 && i < NKEYS ? keys[i].name : NULL;
}

static int key_index(const char *name)
{
	for (int i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].name, name))
			return i;
	return -1;
}

static void *field(struct config *c, const struct key_def *k)
{
	return (char *)c + k->off;
}

static const void *cfield(const struct config *c, const struct key_def *k)
{
	return (const char *)c + k->off;
}

static void fmt_double(double v, char *buf, size_t n)
{
	json_format_number(v, buf, n);
}

static void range_text(const struct key_def *k, char *buf, size_t n)
{
	char a[40], b[40];
	if (k->type == KT_DOUBLE) {
		fmt_double(k->lo, a, sizeof a);
		fmt_double(k->hi, b, sizeof b);
		snprintf(buf, n, "%s%s, %s]", k->lo_open ? "(" : "[", a, b);
	} else {
		snprintf(buf, n, "[%.0f, %.0f]", k->lo, k->hi);
	}
}

/* Parse value text v (NUL-terminated, trimmed) into c's field for key k.
 * On error e holds a message without location. */
static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

static int key_parse(struct config *c, const struct key_def *k, const char *v, struct err *e)
{
	char *end;
	char rng[100];
	switch (k->type) {
	case KT_INT:
	case KT_I64: {
		errno = 0;
		long long x = strtoll(v, &end, 10);
		if (!*v || *end || errno == ERANGE)
			return err_set(e, EXIT_USAGE, "%s: '%s' is not an integer", k->name, v);
		if ((double)x < k->lo || (double)x > k->hi) {
			range_text(k, rng, sizeof rng);
			return err_set(e, EXIT_USAGE, "%s: %lld is out of range %s", k->name, x, rng);
		}
		if (k->type == KT_INT)
			*(int *)field(c, k) = (int)x;
		else
			*(int64_t *)field(c, k) = x;
		return 0;
	}
	case KT_U64: {
		errno = 0;
		if (*v == '-' || *v == '+')
			return err_set(e, EXIT_USAGE, "%s: '%s' is not an unsigned integer", k->name, v);
		unsigned long long x = strtoull(v, &end, 10);
		if (!*v || *end || errno == ERANGE)
			return err_set(e, EXIT_USAGE, "%s: '%s' is not an unsigned integer", k->name, v);
		*(uint64_t *)field(c, k) = x;
		return 0;
	}
	case KT_DOUBLE: {
		errno = 0;
		double x = strtod(v, &end);
		if (!*v || *end || errno == ERANGE || !isfinite(x))
			return err_set(e, EXIT_USAGE, "%s: '%s' is not a finite number", k->name, v);
		if (x < k->lo || x > k->hi || (k->lo_open && x <= k->lo)) {
			range_text(k, rng, sizeof rng);
			return err_set(e, EXIT_USAGE, "%s: %s is out of range %s", k->name, v, rng);
		}
		*(double *)field(c, k) = x;
		return 0;
	}
	case KT_BOOL:
		if (!strcmp(v, "0") || !strcmp(v, "1")) {
			*(int *)field(c, k) = v[0] - '0';
			return 0;
		}
		return err_set(e, EXIT_USAGE, "%s: '%s' is not 0 or 1", k->name, v);
	case KT_ENUM:
		for (int i = 0; k->words[i]; i++)
			if (!strcmp(v, k->words[i])) {
				*(int *)field(c, k) = i;
				return 0;
			}
		{
			char list[256] = "";
			for (int i = 0; k->words[i]; i++) {
				if (i)
					strncat(list, ", ", sizeof list - strlen(list) - 1);
				strncat(list, k->words[i], sizeof list - strlen(list) - 1);
			}
			return err_set(e, EXIT_USAGE, "%s: '%s' is not one of %s", k->name, v, list);
		}
	case KT_STR: {
		size_t n = strlen(v);
		if (n >= k->size)
			return err_set(e, EXIT_USAGE, "%s: value is %zu bytes long, at most %zu", k->name, n,
				       k->size - 1);
		for (size_t i = 0; i < n; i++) {
			if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
				return err_set(e, EXIT_USAGE, "%s: value holds a control character",
					       k->name);
			/* '#' at the start or after white space would start a comment when
			 * the canonical form is read back (the loader's comment rule) */
			if (v[i] == '#' && (i == 0 || is_space(v[i - 1])))
				return err_set(e, EXIT_USAGE, "%s: value holds '#' at its start or after a "
					       "space, which would start a comment", k->name);
		}
		memcpy(field(c, k), v, n + 1);
		return 0;
	}
	}
	return err_set(e, EXIT_SYS, "%s: bad key type", k->name);
}

static void key_format(const struct config *c, const struct key_def *k, char *buf, size_t n)
{
	switch (k->type) {
	case KT_INT:
	case KT_BOOL:
		snprintf(buf, n, "%d", *(const int *)cfield(c, k));
		break;
	case KT_I64:
		snprintf(buf, n, "%" PRId64, *(const int64_t *)cfield(c, k));
		break;
	case KT_U64:
		snprintf(buf, n, "%" PRIu64, *(const uint64_t *)cfield(c, k));
		break;
	case KT_DOUBLE:
		fmt_double(*(const double *)cfield(c, k), buf, n);
		break;
	case KT_ENUM:
		snprintf(buf, n, "%s", k->words[*(const int *)cfield(c, k)]);
		break;
	case KT_STR:
		snprintf(buf, n, "%s", (const char *)cfield(c, k));
		break;
	}
}

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof *c);
	for (int i = 0; i < NKEYS; i++) {
		struct err e;
		if (key_parse(c, &keys[i], keys[i].def, &e) != 0)
			die(EXIT_SYS, "config default of '%s': %s", keys[i].name, e.msg);
	}
}

/* Source index (1-based) for name, adding it when new. */
static unsigned char origin_source(struct config *c, const char *name)
{
	struct config_origin *o = &c->origin;
	for (int i = 0; i < o->nsrc; i++)
		if (!strcmp(o->src[i], name))
			return (unsigned char)(i + 1);
	int slot = o->nsrc < CONFIG_SOURCES_MAX ? o->nsrc++ : CONFIG_SOURCES_MAX - 1;
	snprintf(o->src[slot], sizeof o->src[slot], "%s", name);
	return (unsigned char)(slot + 1);
}


/* Set key (a name of the table) to value text, recording src and line as
 * where it was set; errors are "WHERE: message". */
static int set_key(struct config *c, const char *key, const char *value, const char *src, int line,
		   const char *where, struct err *e)
{
	int ki = key_index(key);
	if (ki < 0)
		return err_set(e, EXIT_USAGE, "%s: unknown key '%s'", where, key);
	struct config tmp = *c;
	if (key_parse(&tmp, &keys[ki], value, e) != 0) {
		err_prefix(e, "%s", where);
		return -1;
	}
	*c = tmp;
	c->origin.key_src[ki] = origin_source(c, src);
	c->origin.key_line[ki] = line;
	return 0;
}

static void where_text(char *where, size_t n, const char *src, int line)
{
	if (line > 0)
		snprintf(where, n, "%s:%d", src, line);
	else
		snprintf(where, n, "%s", src);
}

/* Apply one logical line (already comment-stripped, not trimmed): "key = value".
 * line 0 means an override. Errors are "WHERE: message". With fn, the key
 * and value go to fn instead of c (config_scan_text). */
static int apply_line_fn(struct config *c, char *s, const char *src, int line, config_line_fn fn,
			 void *ctx, struct err *e)
{
	char where[300];
	where_text(where, sizeof where, src, line);
	char *eq = strchr(s, '=');
	if (!eq)
		return err_set(e, EXIT_USAGE, "%s: expected 'key = value'", where);
	char *kb = s, *ke = eq;
	while (is_space(*kb))
		kb++;
	while (ke > kb && is_space(ke[-1]))
		ke--;
	*ke = 0;
	char *vb = eq + 1, *ve = vb + strlen(vb);
	while (is_space(*vb))
		vb++;
	while (ve > vb && is_space(ve[-1]))
		ve--;
	*ve = 0;
	if (!*kb)
		return err_set(e, EXIT_USAGE, "%s: missing key before '='", where);
	if (fn)
		return fn(kb, vb, src, line, ctx, e);
	return set_key(c, kb, vb, src, line, where, e);
}

static int apply_line(struct config *c, char *s, const char *src, int line, struct err *e)
{
	return apply_line_fn(c, s, src, line, NULL, NULL, e);
}

int config_set_at(struct config *c, const char *key, const char *value, const char *src, int line,
		  struct err *e)
{
	char where[300];
	where_text(where, sizeof where, src, line);
	return set_key(c, key, value, src, line, where, e);
}

int config_has_key(const char *name)
{
	return key_index(name) >= 0;
}

/* The file syntax over text: each line to c (fn NULL) or to fn. */
static int load_text(struct config *c, const char *text, size_t len, const char *name, config_line_fn fn,
		     void *ctx, struct err *e)
{
	size_t pos = 0;
	int line = 0;
	while (pos < len) {
		size_t end = pos;
		while (end < len && text[end] != '\n' && text[end] != '\r')
			end++;
		line++;
		size_t n = end - pos;
		if (memchr(text + pos, 0, n))
			return err_set(e, EXIT_USAGE, "%s:%d: NUL byte in line", name, line);
		char *s = xstrndup(text + pos, n);
		/* comment: '#' at line start or after white space */
		for (size_t i = 0; s[i]; i++)
			if (s[i] == '#' && (i == 0 || is_space(s[i - 1]))) {
				s[i] = 0;
				break;
			}
		size_t j = 0;
		while (s[j] && is_space(s[j]))
			j++;
		int rc = 0;
		if (s[j])
			rc = apply_line_fn(c, s, name, line, fn, ctx, e);
		free(s);
		if (rc)
			return -1;
		/* a line ends at LF, CR LF or a lone CR */
		pos = end + (end + 1 < len && text[end] == '\r' && text[end + 1] == '\n' ? 2 : 1);
	}
	return 0;
}

int config_load_text(struct config *c, const char *text, size_t len, const char *name, struct err *e)
{
	return load_text(c, text, len, name, NULL, NULL, e);
}

int config_scan_text(const char *text, size_t len, const char *name, config_line_fn fn, void *ctx,
		     struct err *e)
{
	return load_text(NULL, text, len, name, fn, ctx, e);
}

int config_load_file(struct config *c, const char *path, struct err *e)
{
	char *text;
	size_t len;
	if (stream_read_all(path, 1u << 20, &text, &len, e) != 0)
		return -1;
	int rc = config_load_text(c, text, len, path, e);
	free(text);
	return rc;
}

int config_apply_switches(struct config *c, const char *base_path, const char *arm_path, struct err *e)
{
	struct config *b = xmalloc(sizeof *b), *a = xmalloc(sizeof *a);
	config_defaults(b);
	config_defaults(a);
	int rc = -1;
	if ((base_path && config_load_file(b, base_path, e) != 0) || config_load_file(a, arm_path, e) != 0)
		goto out;
	for (int i = 0; i < NKEYS; i++) {
		char vb[1024], va[1024];
		key_format(b, &keys[i], vb, sizeof vb);
		key_format(a, &keys[i], va, sizeof va);
		if (!strcmp(va, vb))
			continue;
		/* the canonical text reads back as the same value */
		struct config tmp = *c;
		if (key_parse(&tmp, &keys[i], va, e) != 0) {
			err_prefix(e, "%s", arm_path);
			goto out;
		}
		*c = tmp;
		c->origin.key_src[i] = origin_source(c, arm_path);
		c->origin.key_line[i] = a->origin.key_line[i];
	}
	rc = 0;
out:
	free(b);
	free(a);
	return rc;
}

int config_set(struct config *c, const char *kv, struct err *e)
{
	if (strpbrk(kv, "\n\r"))   /* a line end: the printed config would read back otherwise */
		return err_set(e, EXIT_USAGE, "--set: '%s' holds a line end", kv);
	char *s = xstrdup(kv);
	int rc = apply_line(c, s, "--set", 0, e);
	free(s);
	return rc;
}

/* "FILE:LINE: " (or "--set: ", or "" for a default) for key name. */
static void key_where(const struct config *c, const char *name, char *buf, size_t n)
{
	int ki = key_index(name);
	buf[0] = 0;
	if (ki < 0 || !c->origin.key_src[ki])
		return;
	const char *src = c->origin.src[c->origin.key_src[ki] - 1];
	if (c->origin.key_line[ki] > 0)
		snprintf(buf, n, "%s:%d: ", src, c->origin.key_line[ki]);
	else
		snprintf(buf, n, "%s: ", src);
}

/* Blame the key set last among a and b (the later line, or --set). */
static const char *blame(const struct config *c, const char *a, const char *b)
{
	int ia = key_index(a), ib = key_index(b);
	int sa = c->origin.key_src[ia], sb = c->origin.key_src[ib];
	if (!sa)
		return b;
	if (!sb)
		return a;
	if (sa != sb)
		return sa > sb ? a : b;
	return c->origin.key_line[ia] >= c->origin.key_line[ib] ? a : b;
}

static int conflict(const struct config *c, const char *a, const char *b, struct err *e,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int conflict(const struct config *c, const char *a, const char *b, struct err *e,
		    const char *fmt, ...)
{
	char where[320], msg[600];
	const char *who = b ? blame(c, a, b) : a;
	key_where(c, who, where, sizeof where);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set(e, EXIT_USAGE, "%s%s", where, msg);
}

int config_validate(const struct config *c, struct err *e)
{
	if (!c->arm[0])
		return conflict(c, "arm", NULL, e, "arm: must not be empty");
	for (const char *p = c->arm; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '-' || *p == '.'))
			return conflict(c, "arm", NULL, e,
					"arm: '%s' may hold only letters, digits and _ - .", c->arm);
	if (c->head_dim % 2)
		return conflict(c, "head_dim", NULL, e, "head_dim: %d is odd (RoPE needs pairs)",
				c->head_dim);
	int d = config_model_dim(c);
	if (c->model_dim && c->model_dim % c->head_dim)
		return conflict(c, "model_dim", "head_dim", e,
				"model_dim %d is not a multiple of head_dim %d", c->model_dim, c->head_dim);
	if (!c->model_dim && d % c->head_dim)
		return conflict(c, "head_dim", "depth", e,
				"derived model_dim %d is not a multiple of head_dim %d (set model_dim)", d,
				c->head_dim);
	if (d % 4 && c->oe)
		return conflict(c, "oe", "model_dim", e, "oe needs model_dim divisible by 4 (d = %d)", d);
	if (c->ve_gate_channels > d)
		return conflict(c, "ve_gate_channels", "model_dim", e,
				"ve_gate_channels %d exceeds model_dim %d", c->ve_gate_channels, d);
	if (!c->window_pattern[0])
		return conflict(c, "window_pattern", NULL, e, "window_pattern: must not be empty");
	int has_s = 0;
	for (const char *p = c->window_pattern; *p; p++) {
		if (*p != 'S' && *p != 'L')
			return conflict(c, "window_pattern", NULL, e,
					"window_pattern: '%s' may hold only S and L", c->window_pattern);
		has_s |= *p == 'S';
	}
	if (has_s && c->seq_len % 2)
		return conflict(c, "seq_len", "window_pattern", e,
				"seq_len %d is odd: S windows are seq_len/2", c->seq_len);
	if (c->warmup_steps >= c->steps)
		return conflict(c, "warmup_steps", "steps", e,
				"warmup_steps %d must be below steps %d (schedule p_t divides by S - warmup)",
				c->warmup_steps, c->steps);
	if (c->qk_mask != QK_MASK_NONE && c->qk_scale == QK_SCALE_NONE)
		return conflict(c, "qk_mask", "qk_scale", e, "qk_mask = %s needs qk_scale (it is none)",
				w_qkmask[c->qk_mask]);
	if (c->qk_param != QK_PARAM_EXP && c->qk_scale == QK_SCALE_NONE)
		return conflict(c, "qk_param", "qk_scale", e, "qk_param = %s needs qk_scale (it is none)",
				w_qkparam[c->qk_param]);
	if (c->sub_form != SUB_FORM_FUSED && !c->sub_gains)
		return conflict(c, "sub_form", "sub_gains", e, "sub_form = %s needs sub_gains = 1",
				w_subform[c->sub_form]);
	if (c->qk_mask == QK_MASK_L0_HF16 && c->qk_scale == QK_SCALE_HEAD)
		return conflict(c, "qk_mask", "qk_scale", e,
				"qk_mask = l0_hf16 masks RoPE planes, which qk_scale = head does not have");
	if (c->qk_mask == QK_MASK_L0_HF16 && c->head_dim < 32)
		return conflict(c, "qk_mask", "head_dim", e,
				"qk_mask = l0_hf16 needs head_dim >= 32 (16 planes), head_dim is %d",
				c->head_dim);
	if (c->out_lambdas && !c->wte_lambdas)
		return conflict(c, "out_lambdas", "wte_lambdas", e,
				"out_lambdas = 1 needs wte_lambdas = 1");
	if ((c->bieq_passes != 2 || c->bieq_sides != BIEQ_BOTH) && c->muoneq != MUONEQ_BIEQ)
		return conflict(c, c->bieq_passes != 2 ? "bieq_passes" : "bieq_sides", "muoneq", e,
				"bieq_passes and bieq_sides shape BiEq: need muoneq = bieq");
	if (c->equil_scope != EQUIL_ALL && c->muoneq == MUONEQ_OFF)
		return conflict(c, "equil_scope", "muoneq", e,
				"equil_scope = square limits the equilibrator: needs muoneq other than off");
	if (c->zeta && c->muoneq != MUONEQ_OFF)
		return conflict(c, "zeta", "muoneq", e,
				"zeta = 1 and muoneq = %s are two pre-polar conditioners: use one",
				c->muoneq == MUONEQ_BIEQ ? "bieq" : c->muoneq == MUONEQ_R ? "r" : "rc");
	if (c->malt && (c->muoneq != MUONEQ_OFF || c->zeta))
		return conflict(c, "malt", c->zeta ? "zeta" : "muoneq", e,
				"malt = 1 and %s are two pre-polar conditioners: use one",
				c->zeta ? "zeta = 1" : "an equilibrator (muoneq)");
	if ((c->muon2f || c->normpre_g) && (c->muoneq != MUONEQ_OFF || c->zeta || c->malt ||
					    (c->muon2f && c->normpre_g))) {
		const char *a = c->muon2f ? "muon2f" : "normpre_g";
		const char *b = c->muon2f && c->normpre_g ? "normpre_g" : c->malt ? "malt" : c->zeta ? "zeta" : "muoneq";
		return conflict(c, a, b, e, "%s = 1 and %s are two pre-polar conditioners: use one", a,
				!strcmp(b, "muoneq") ? "an equilibrator (muoneq)" : !strcmp(b, "normpre_g") ? "normpre_g = 1"
				: !strcmp(b, "malt") ? "malt = 1" : "zeta = 1");
	}
	if (!c->normpre_tangent && !c->normpre_g)
		return conflict(c, "normpre_tangent", "normpre_g", e,
				"normpre_tangent = 0 shapes NormPre-G: needs normpre_g = 1");
	if (c->table_neumann && !c->oe)
		return conflict(c, "table_neumann", "oe", e, "table_neumann = 1 needs oe = 1");
	if (c->step0 != STEP0_NONE && c->step0 != STEP0_NOSTEP0_ALL && !c->wte_lambdas)
		return conflict(c, "step0", "wte_lambdas", e,
				"step0 = %s acts on wte/out lambdas: needs wte_lambdas = 1",
				w_step0[c->step0]);
	if (c->anchor == ANCHOR_SHARED && !c->wte_lambdas)
		return conflict(c, "anchor", "wte_lambdas", e,
				"anchor = shared is the x0_wte anchor of routing: needs wte_lambdas = 1");
	if (c->precision == PRECISION_AUTOCAST && c->backend == BACKEND_CPU)
		return conflict(c, "precision", "backend", e,
				"precision = autocast: the cpu backend multiplies in fp32, not in bf16");
	if (c->precision != PRECISION_AUTO && c->dtype == DTYPE_F64)
		return conflict(c, "precision", "dtype", e,
				"precision = %s: dtype = fp64 runs multiply in fp64 (precision = auto)",
				w_precision[c->precision]);
	if (c->init_from[0] && c->init == INIT_DENSE)
		return conflict(c, "init", "init_from", e, "init = dense conflicts with init_from");
	if (c->momentum_end < c->momentum_start && c->cooldown)
		return conflict(c, "cooldown", "momentum_end", e,
				"cooldown anneals momentum_end down to momentum_start: needs momentum_end >= momentum_start");
	/* optimizer arms of paper 004 (#2d; pure AdamW) */
	if (c->malt_input != MALT_INPUT_GRAD && !c->malt)
		return conflict(c, "malt_input", "malt", e,
				"malt_input = %s shapes MALT: needs malt = 1", w_maltin[c->malt_input]);
	if (c->matrix_optim == MATRIX_OPTIM_ADAMW) {   /* the Muon-side switches would do nothing */
		const char *k = c->muoneq != MUONEQ_OFF ? "muoneq" : c->zeta ? "zeta" : c->malt ? "malt"
			      : c->muon2f ? "muon2f" : c->normpre_g ? "normpre_g" : c->cooldown ? "cooldown"
			      : !c->normuon ? "normuon" : c->polar != POLAR_BF16 ? "polar"
			      : c->polar_norm != POLAR_NORM_AS_POLAR ? "polar_norm" : c->polar_steps != 5 ? "polar_steps"
			      : c->post_polar != POST_POLAR_AS_POLAR ? "post_polar" : NULL;
		if (k)
			return conflict(c, k, "matrix_optim", e,
					"%s shapes the Muon step: matrix_optim = adamw has none", k);
	}
	return 0;
}

char *config_print(const struct config *c)
{
	size_t cap = 4096, n = 0;
	char *out = xmalloc(cap);
	out[0] = 0;
	for (int i = 0; i < NKEYS; i++) {
		char val[1024], line[1200];
		key_format(c, &keys[i], val, sizeof val);
		int m = val[0] ? snprintf(line, sizeof line, "%s = %s\n", keys[i].name, val)
			       : snprintf(line, sizeof line, "%s =\n", keys[i].name);
		if (n + (size_t)m + 1 > cap) {
			while (n + (size_t)m + 1 > cap)
				cap *= 2;
			out = xrealloc(out, cap);
		}
		memcpy(out + n, line, (size_t)m + 1);
		n += (size_t)m;
	}
	return out;
}

void config_sha256(const struct config *c, char *hex)
{
	char *t = config_print(c);
	sha256_buf_hex(t, strlen(t), hex);
	free(t);
}

int config_model_dim(const struct config *c)
{
	if (c->model_dim > 0)
		return c->model_dim;
	return (64 * c->depth + 127) / 128 * 128;
}

int config_heads(const struct config *c)
{
	return config_model_dim(c) / c->head_dim;
}

int config_window(const struct config *c, int layer)
{
	if (layer == c->depth - 1)
		return c->seq_len;
	size_t n = strlen(c->window_pattern);
	if (!n)
		return c->seq_len;
	char ch = c->window_pattern[(size_t)layer % n];
	return ch == 'S' ? c->seq_len / 2 : c->seq_len;
}

int config_is_ve_layer(const struct config *c, int layer)
{
	return layer % 2 == (c->depth - 1) % 2;
}

double config_lr_k(const struct config *c)
{
	return 1.0 / sqrt(config_model_dim(c) / 768.0);
}

int config_oe_tables(const struct config *c)
{
	return c->oe ? (c->oe_n - 1) * c->oe_k : 0;
}

int64_t config_oe_rows(const struct config *c, int j)
{
	return c->oe_m + 2 * (int64_t)j;
}

/* ---- named arms (configs/arms/README) ---- */

#define OPT_PKG "muoneq = bieq\nbieq_tau = 25\ncooldown = 1\nneumann = 1\nneumann_tau = 80\n" \
		"polar = fp32\nembed_state = fp32\nmuon_wd_schedule = cosine\n"
#define QK_PAIR "qk_scale = pair\n"
#define LR141 "lr_scale = 1.41421356\nmuon_wd_scale = 0.70710678\n"
#define ROUTE_D "wte_lambdas = 1\n"
#define ROUTE_DO "wte_lambdas = 1\nout_lambdas = 1\n"
#define P002_BIEQ "muoneq = bieq\nbieq_tau = 80\n"   /* papers 002 and 004: tau 80 */
/* paper 004: the fp32 pre-polar normalisation (Table 3b) and the fp32 vocabulary-table
 * state (Table 5: +160.0 MiB) of its #1b control and the runs compared with it */
#define FP32N "polar_norm = fp32\nembed_state = fp32\n"
/* paper 002: the forward metric of its Tables 3 and 4A (exp17's, 50,342,416 parameters):
 * weight-fused pre-sublayer gains and pair-tied stopped-exponential QK scaling */
#define P002_METRIC "sub_gains = 1\n" QK_PAIR "qk_param = stop_exp\n"
/* paper 002 exp05 (gains and linear pair-tied QK scaling): the weight-fused model
 * of Table 1's depth-6 runs */
#define P002_EXP05 "sub_gains = 1\nsub_lr = 0.025\n" QK_PAIR "qk_param = linear\nlr_qtau = 0.05\n"

static const struct {
	const char *name, *summary, *overrides;
} arms[] = {
	{"00_dense_native", "baseline", ""},
	{"01_dense_opt", "optimizer package: BiEq 25, cooldown, Neumann-Gram 80, fp32 polar, fp32 embed state, cosine wd",
	 OPT_PKG},
	{"02_dense_joint", "01 + post-QK-norm pair scaling", OPT_PKG QK_PAIR},
	{"02m_dense_masked_qk", "02 with q_tau masked on layer 0 and planes 0..15", OPT_PKG QK_PAIR "qk_mask = l0_hf16\n"},
	{"10_oe_native", "moment-free hashed n-gram tables (OE)", "oe = 1\n"},
	{"11_oe_opt", "OE + optimizer package", "oe = 1\n" OPT_PKG},
	{"12_oe_joint", "OE + optimizer package + pair scaling", "oe = 1\n" OPT_PKG QK_PAIR},
	{"12m_oe_masked_qk", "12 with masked q_tau", "oe = 1\n" OPT_PKG QK_PAIR "qk_mask = l0_hf16\n"},
	{"12d_oe_decoupled_x0", "12 + wte_lambdas (separate anchor)", "oe = 1\n" OPT_PKG QK_PAIR ROUTE_D},
	{"12do_oe_decoupled_x0_out", "12d + out_lambdas", "oe = 1\n" OPT_PKG QK_PAIR ROUTE_DO},
	{"12do_shared_denom", "12do with the shared anchor, eps 1e-6",
	 "oe = 1\n" OPT_PKG QK_PAIR ROUTE_DO "anchor = shared\n"},
	{"12do_shared_denom_f32eps", "12do with the shared anchor, eps 2^-23",
	 "oe = 1\n" OPT_PKG QK_PAIR ROUTE_DO "anchor = shared\nshared_eps = 1.1920928955078125e-07\n"},
	{"12_oe_joint_bf16", "12 with bf16 embedding state", "oe = 1\n" OPT_PKG QK_PAIR "embed_state = bf16\n"},
	{"4a_oe_joint_bf16state", "control #4a: 12 with bf16 embedding state (same switches as 12_oe_joint_bf16)",
	 "oe = 1\n" OPT_PKG QK_PAIR "embed_state = bf16\n"},
	{"12d_oe_bf16_decoupled_x0", "12d with bf16 embedding state",
	 "oe = 1\n" OPT_PKG QK_PAIR "embed_state = bf16\n" ROUTE_D},
	{"12do_oe_bf16_decoupled_x0_out", "12do with bf16 embedding state",
	 "oe = 1\n" OPT_PKG QK_PAIR "embed_state = bf16\n" ROUTE_DO},
	{"12d_bf16_shared_denom", "12d with bf16 embedding state and the shared anchor, eps 1e-6",
	 "oe = 1\n" OPT_PKG QK_PAIR "embed_state = bf16\n" ROUTE_D "anchor = shared\n"},
	{"12do_nostep0", "12do, no lambda update at step 0", "oe = 1\n" OPT_PKG QK_PAIR ROUTE_DO "step0 = nostep0\n"},
	{"12do_mom_only_nodisp", "12do, step-0 state kept, displacement undone",
	 "oe = 1\n" OPT_PKG QK_PAIR ROUTE_DO "step0 = mom_only_nodisp\n"},
	{"12do_disp_only_nomom", "12do, step-0 displacement kept, state cleared",
	 "oe = 1\n" OPT_PKG QK_PAIR ROUTE_DO "step0 = disp_only_nomom\n"},
	{"12do_disp_stepcount_nomom", "12do, step-0 displacement and counter kept, moments zeroed",
	 "oe = 1\n" OPT_PKG QK_PAIR ROUTE_DO "step0 = disp_stepcount_nomom\n"},
	{"12do_nostep0_all", "12do, no step-0 update of all four scalar families",
	 "oe = 1\n" OPT_PKG QK_PAIR ROUTE_DO "step0 = nostep0_all\n"},
	{"3a_oe_table_neumann_native", "control #3a: OE + Table-Neumann", "oe = 1\ntable_neumann = 1\n"},
	{"3b_oe_table_neumann_joint", "control #3b: 12 + Table-Neumann", "oe = 1\n" OPT_PKG QK_PAIR "table_neumann = 1\n"},
	{"00_dense_native_lr141", "00 with every lr x sqrt(2), Muon wd x 1/sqrt(2)", LR141},
	{"01_dense_opt_lr141", "01 with every lr x sqrt(2), Muon wd x 1/sqrt(2)", OPT_PKG LR141},
	{"02_dense_joint_lr141", "02 with every lr x sqrt(2), Muon wd x 1/sqrt(2)", OPT_PKG QK_PAIR LR141},
	{"noguard_postpolar_fp32_only", "paper 004 control #1a: NorMuon and the update in fp32 after the bf16 polar step",
	 "post_polar = fp32\n"},
	{"exact_muoneq_r_no_normuon", "paper 004 #2a-noNM: MuonEq-R without post-polar NorMuon",
	 "muoneq = r\nnormuon = 0\n"},
	{"exp64_stopped_exp_qk_only", "paper 002 exp64: pair-tied post-QK-norm scaling, stopped exponential, lr 0.04 x lr_scalar",
	 QK_PAIR "qk_param = stop_exp\n"},
	{"exp03_linear_qk_only", "paper 002 exp03: pair-tied post-QK-norm scaling, linear s on q and k, lr 0.10 x lr_scalar",
	 QK_PAIR "qk_param = linear\nlr_qtau = 0.05\n"},
	{"exp07_presublayer_only", "paper 002 exp07: pre-sublayer channel gains (W (1 alpha^T)) alone, sub_lr 0.05 x lr_scalar",
	 "sub_gains = 1\nsub_lr = 0.025\n"},
	{"exp05_linear_combined", "paper 002 exp05: exp07 + exp03 (gains, linear pair-tied QK scaling)",
	 P002_EXP05},
	{"exp17_natural_grad_geodesic", "paper 002 exp17 (exp18/22 other seeds): gains + pair-tied stopped-exponential QK scaling, both lrs 0.04 x lr_scalar",
	 P002_METRIC},
	{"exp41_untied_ngpt_stopped_exp", "paper 002 exp41 (exp43/46 other seeds): gains + untied per-coordinate stopped-exponential QK scaling",
	 "sub_gains = 1\nqk_scale = untied\nqk_param = stop_exp\n"},
	{"exp19_head_temperature", "paper 002 exp19: gains + per-head softmax temperature q exp(tau_{l,h})",
	 "sub_gains = 1\nqk_scale = head\n"},
	{"zeta_prepolar_coord_whitening", "paper 002 exp58/59/60: Zeta's entrywise second-moment whitening before the polar step, on exp17's metric",
	 P002_METRIC "zeta = 1\n"},
	{"published_malt", "paper 004 #2c: MALT's two-sided -1/8-power preconditioning, map-back and grafting, with NorMuon",
	 "malt = 1\n"},
	{"exact_malt_no_normuon", "paper 004 #2c-noNM: MALT without post-polar NorMuon",
	 "malt = 1\nnormuon = 0\n"},
	{"muon2_f_prepolar_v", "paper 002 exp53: Muon2-F's factored one-sided second moment before the polar step, on exp17's metric",
	 P002_METRIC "muon2f = 1\n"},
	{"published_normpre_g", "paper 004 #2e: NormPre-G's relaxed weight tangent and alternating marginal normalisation, with NorMuon",
	 "normpre_g = 1\n"},
	{"noguard_normpre_g_fp32", "paper 004 #2f: NormPre-G without the tangent term (alternating marginal normalisation only)",
	 "normpre_g = 1\nnormpre_tangent = 0\n"},
	/* paper 002 Tables 3 and 4A (exp-number prefix and seed suffix dropped); all but
	 * homotopy_bieq_only on exp17's forward metric (natural_grad_geodesic is exp17) */
	{"metric_plus_fp32_postpolar_only", "paper 002 exp40/42/45: exp17's metric with fp32 post-polar",
	 P002_METRIC "post_polar = fp32\n"},
	{"metric_plus_bieq_bf16_postpolar", "paper 002 exp44/48/49: exp17's metric + 2-pass Homotopy-BiEq (tau 80), bf16 post-polar",
	 P002_METRIC P002_BIEQ},
	{"metric_plus_homotopy_bieq", "paper 002 exp27/26/32: exp17's metric + 2-pass Homotopy-BiEq (tau 80), fp32 post-polar",
	 P002_METRIC P002_BIEQ "post_polar = fp32\n"},
	{"homotopy_bieq_only", "paper 002 exp33: 2-pass Homotopy-BiEq (tau 80), fp32 post-polar, no QK scaling",
	 P002_BIEQ "post_polar = fp32\n"},
	{"undamped_bieq_bf16", "paper 002 exp50/56/57: exp17's metric + undamped 2-pass BiEq (a = 1)",
	 P002_METRIC "muoneq = bieq\nbieq_tau = 0\n"},
	{"one_sided_row_rms_bf16", "paper 002 exp51: exp17's metric + 1-pass one-sided row-RMS (tau 80)",
	 P002_METRIC P002_BIEQ "bieq_passes = 1\nbieq_sides = rows\n"},
	{"square_attn_only_bieq_bf16", "paper 002 exp47: exp17's metric + 2-pass Homotopy-BiEq (tau 80) on the square attention matrices only",
	 P002_METRIC P002_BIEQ "equil_scope = square\n"},
	{"turbo_muon_aol_precond", "paper 002 exp52/62/63: exp17's metric + Turbo-Muon's AOL scaling in the 5-step polar step",
	 P002_METRIC "polar_norm = aol\n"},
	/* paper 004 section 4.1 (#-rows) and Tables 3b, 3c, with FP32N (above) */
	{"noguard_fp32norm_control", "paper 004 #1b: fp32 pre-polar normalisation and fp32 embed state alone",
	 "polar_norm = fp32\n"},
	{"published_muoneq_r", "paper 004 #2a: MuonEq-R (1-pass row-only) with NorMuon, fp32 norm and embed state", "muoneq = r\n" FP32N},
	{"published_muoneq_rc", "paper 004 #2b: MuonEq-RC (1-pass simultaneous rows and columns) with NorMuon, fp32 norm and embed state",
	 "muoneq = rc\n" FP32N},
	{"noguard_muoneq_rc_fp32", "paper 004 #2g: undamped 2-pass sequential BiEq (tau 0), fp32 norm and embed state",
	 "muoneq = bieq\nbieq_tau = 0\n" FP32N},
	{"noguard_homotopy_bieq_fp32", "paper 004 #2h: 2-pass Homotopy-BiEq (tau 80), fp32 norm and embed state",
	 P002_BIEQ FP32N},
	{"noguard_homotopy_bieq_tau25", "paper 004 #2i: 2-pass Homotopy-BiEq (tau 25), fp32 norm and embed state",
	 "muoneq = bieq\nbieq_tau = 25\n" FP32N},
	{"noguard_bieq_cooldown_fp32", "paper 004 #3: Homotopy-BiEq (tau 80) + cooldown, fp32 norm and embed state",
	 P002_BIEQ "cooldown = 1\n" FP32N},
	{"muoneq_r_full_pkg", "paper 004 #4a: MuonEq-R + cooldown + Neumann-Gram (tau 80), fp32 norm and embed state",
	 "muoneq = r\ncooldown = 1\nneumann = 1\n" FP32N},
	{"muoneq_rc_full_pkg", "paper 004 #4a-RC: MuonEq-RC + cooldown + Neumann-Gram (tau 80), fp32 norm and embed state",
	 "muoneq = rc\ncooldown = 1\nneumann = 1\n" FP32N},
	{"noguard_full", "paper 004 #4b: Homotopy-BiEq (tau 80) + cooldown + Neumann-Gram (tau 80), fp32 norm and embed state",
	 P002_BIEQ "cooldown = 1\nneumann = 1\n" FP32N},
	{"noguard_full_bieq_tau25", "paper 004 #4c: Homotopy-BiEq (tau 25) + cooldown + Neumann-Gram (tau 80), fp32 norm and embed state",
	 "muoneq = bieq\nbieq_tau = 25\ncooldown = 1\nneumann = 1\n" FP32N},
	{"noguard_neumann_no_bieq", "paper 004 Table 3b (0,0,1): Neumann-Gram (tau 80), fp32 norm and embed state",
	 "neumann = 1\n" FP32N},
	{"noguard_cooldown_fp32norm", "paper 004 Table 3b (0,1,0): cooldown, fp32 norm and embed state",
	 "cooldown = 1\n" FP32N},
	{"noguard_neumann_cooldown_no_bieq", "paper 004 Table 3b (0,1,1): cooldown + Neumann-Gram (tau 80), fp32 norm and embed state",
	 "cooldown = 1\nneumann = 1\n" FP32N},
	{"noguard_neumann_only", "paper 004 Table 3b/3c (1,0,1): Homotopy-BiEq (tau 80) + Neumann-Gram (tau 80), fp32 norm and embed state",
	 P002_BIEQ "neumann = 1\n" FP32N},
	/* paper 004 Tables 4a and 4b: post-QK-norm scaling (its exp(q_tau) is supkit's) alone
	 * and on #4b's optimizer */
	{"exp13_rope_only", "paper 004 Table 4a #1: pair QK scaling alone", QK_PAIR},
	{"exp13_joint_rope_bieq", "paper 004 Tables 4a #3a, 4b #3: pair QK scaling + noguard_full (tau 80 / 80)",
	 QK_PAIR P002_BIEQ "cooldown = 1\nneumann = 1\n" FP32N},
	{"exp15_tau25_joint", "paper 004 Tables 4a #3b, 4b #4: pair QK scaling + noguard_full with BiEq and Neumann-Gram tau 25",
	 QK_PAIR "muoneq = bieq\nbieq_tau = 25\ncooldown = 1\nneumann = 1\nneumann_tau = 25\n" FP32N},
	{"exp15_bieq_tau25_only_joint", "paper 004 Table 4b #5: pair QK scaling + noguard_full with BiEq tau 25 (Neumann-Gram 80)",
	 QK_PAIR "muoneq = bieq\nbieq_tau = 25\ncooldown = 1\nneumann = 1\n" FP32N},
	{"exp16_head_temp_bieq", "paper 004 Table 4b #1: per-head QK temperature + noguard_full",
	 "qk_scale = head\n" P002_BIEQ "cooldown = 1\nneumann = 1\n" FP32N},
	{"exp16_ngpt_coord_bieq", "paper 004 Table 4b #2: untied per-coordinate QK scaling + noguard_full",
	 "qk_scale = untied\n" P002_BIEQ "cooldown = 1\nneumann = 1\n" FP32N},
	/* paper 004 #2d and the pure AdamW run */
	{"noguard_malt_fp32", "paper 004 #2d: instantaneous MALT, P and Q from this step's Nesterov momentum (no EMA), map-back and grafting, with NorMuon",
	 "malt = 1\nmalt_input = momentum\nmalt_beta = 0\n"},
	{"baseline_pure_adamw", "paper 004's pure AdamW run (seed 46): AdamW in place of Muon on the block matrices, lr 0.04, betas (0.8, 0.95), eps 1e-10, no weight decay",
	 "matrix_optim = adamw\n"},
	/* paper 002 Table 2's adapted LeRoPE comparators: gains (sub_lr 0.02) and
	 * learned RoPE log-frequencies (rope_lr 0.02), no QK scaling */
	{"exp31_lerope_shared64", "paper 002 exp31: gains + Shared-64 LeRoPE, theta_c exp(tau_c) for every layer and head, fp32 tables",
	 "sub_gains = 1\nrope_tau = shared\nrope_trig = fp32\n"},
	{"exp21_lerope_2048", "paper 002 exp21: gains + Adapted-2048 LeRoPE, theta_c exp(tau_{l,h,c}), bf16 tables",
	 "sub_gains = 1\nrope_tau = head\n"},
	/* paper 002 Table 1's depth-6 runs (configs/arms/d6), each with its run's seed:
	 * exp05's model weight-fused, exact unfused, and weight-fused + Homotopy-BiEq
	 * (tau 80, fp32 post-polar, as the paper's other Homotopy-BiEq runs) */
	{"exp24_depth6_seed42", "paper 002 exp24: exp05 (weight-fused gains) at depth 6, seed 42",
	 P002_EXP05 "seed = 42\n"},
	{"exp11_exp05_depth6_seed47", "paper 002 exp11: exp05 (weight-fused gains) at depth 6, seed 47",
	 P002_EXP05 "seed = 47\n"},
	{"exp28_exact_unfused", "paper 002 exp28: exp05 with the gains unfused, x_hat alpha fed to W_Q, W_K, W_V, W_fc (the ve gate reads x_hat), depth 6, seed 47",
	 P002_EXP05 "sub_form = unfused\nseed = 47\n"},
	{"exp54_fused_homotopy_bieq", "paper 002 exp54: exp24 + 2-pass Homotopy-BiEq (tau 80), fp32 post-polar, depth 6, seed 42",
	 P002_EXP05 P002_BIEQ "post_polar = fp32\nseed = 42\n"},
	{"exp55_fused_homotopy_bieq", "paper 002 exp55: exp11 + 2-pass Homotopy-BiEq (tau 80), fp32 post-polar, depth 6, seed 47",
	 P002_EXP05 P002_BIEQ "post_polar = fp32\nseed = 47\n"},
};

/* Short names used in the papers' prose. */
static const struct {
	const char *alias, *name;
} aliases[] = {
	{"00", "00_dense_native"}, {"01", "01_dense_opt"}, {"02", "02_dense_joint"},
	{"02m", "02m_dense_masked_qk"}, {"10", "10_oe_native"}, {"11", "11_oe_opt"},
	{"12", "12_oe_joint"}, {"12m", "12m_oe_masked_qk"}, {"12d", "12d_oe_decoupled_x0"},
	{"12do", "12do_oe_decoupled_x0_out"}, {"12do_shared", "12do_shared_denom"},
	{"12do_shared_f32eps", "12do_shared_denom_f32eps"}, {"4a", "4a_oe_joint_bf16state"},
	{"3a", "3a_oe_table_neumann_native"}, {"3b", "3b_oe_table_neumann_joint"},
	{"exp64", "exp64_stopped_exp_qk_only"}, {"exp03", "exp03_linear_qk_only"},
	{"exp07", "exp07_presublayer_only"}, {"exp05", "exp05_linear_combined"},
	{"exp17", "exp17_natural_grad_geodesic"}, {"exp41", "exp41_untied_ngpt_stopped_exp"},
	{"exp19", "exp19_head_temperature"}, {"natural_grad_geodesic", "exp17_natural_grad_geodesic"},
	{"exp31", "exp31_lerope_shared64"}, {"exp21", "exp21_lerope_2048"},
	{"exp24", "exp24_depth6_seed42"}, {"exp11", "exp11_exp05_depth6_seed47"},
	{"exp28", "exp28_exact_unfused"}, {"exp54", "exp54_fused_homotopy_bieq"},
	{"exp55", "exp55_fused_homotopy_bieq"},
	{NULL, NULL},
};

#define NARMS ((int)(sizeof arms / sizeof arms[0]))

int config_arm_count(void)
{
	return NARMS;
}

const char *config_arm_name(int i)
{
	return i >= 0 && i < NARMS ? arms[i].name : NULL;
}

const char *config_arm_overrides(int i)
{
	return i >= 0 && i < NARMS ? arms[i].overrides : NULL;
}

const char *config_arm_summary(int i)
{
	return i >= 0 && i < NARMS ? arms[i].summary : NULL;
}

int config_arm_find(const char *name)
{
	if (name[0] == '#')
		name++;
	for (int i = 0; i < NARMS; i++)
		if (!strcmp(arms[i].name, name))
			return i;
	for (int i = 0; aliases[i].alias; i++)
		if (!strcmp(aliases[i].alias, name))
			return config_arm_find(aliases[i].name);
	return -1;
}

int config_arm_apply(struct config *c, const char *name, struct err *e)
{
	int i = config_arm_find(name);
	if (i < 0)
		return err_set(e, EXIT_USAGE, "unknown arm '%s' (supkit audit compute --list-arms)", name);
	char src[96];
	snprintf(src, sizeof src, "arm %s", arms[i].name);
	if (config_load_text(c, arms[i].overrides, strlen(arms[i].overrides), src, e) != 0)
		return -1;
	snprintf(c->arm, sizeof c->arm, "%s", arms[i].name);
	return 0;
}

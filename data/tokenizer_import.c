/* tokenizer_import.c: autoresearch's tokenizer.pkl (+ token_bytes.pt) to a
 * supkit tokenizer folder (see tokenizer_import.h). Reference:
 * karpathy/autoresearch prepare.py (train_tokenizer, get_token_bytes). */
#include "data/tokenizer_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/torch_pt.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/utf8.h"
#include "data/data.h"

int tokenizer_from_tiktoken(const struct tt_encoding *t, const char *name, struct tokenizer *tk,
			    struct err *e)
{
	memset(tk, 0, sizeof *tk);
	if (t->n_mergeable != t->n_ranks) {
		uint32_t r = 0;
		while (r < t->n_ranks && t->tok[r])
			r++;
		return err_set(e, EXIT_USAGE, "'%s': rank %u is missing (supkit's ranks are 0..n-1)", name, r);
	}
	if (t->n_ranks < 1)
		return err_set(e, EXIT_USAGE, "'%s': mergeable_ranks is empty", name);
	if (t->n_ranks > TOKENIZER_MAX_RANKS - TOKENIZER_N_SPECIAL)
		return err_set(e, EXIT_USAGE, "'%s': %u ranks; at most %u", name, t->n_ranks,
			       TOKENIZER_MAX_RANKS - TOKENIZER_N_SPECIAL);
	int seen[TOKENIZER_N_SPECIAL] = {0};
	for (uint32_t k = 0; k < t->n_special; k++) {
		int i = -1;
		for (int j = 0; j < TOKENIZER_N_SPECIAL; j++) {
			char nm[32];
			snprintf(nm, sizeof nm, "<|reserved_%d|>", j);
			if (!strcmp(t->special[k], nm))
				i = j;
		}
		if (i < 0)
			return err_set(e, EXIT_USAGE,
				       "'%s': special token '%s' is not one of <|reserved_0|>..<|reserved_3|> "
				       "(the only specials supkit's tokenizers have)", name, t->special[k]);
		if (t->special_id[k] != t->n_ranks + (uint32_t)i)
			return err_set(e, EXIT_USAGE,
				       "'%s': special token '%s' has id %u, not %u (the ids after the ranks)", name,
				       t->special[k], t->special_id[k], t->n_ranks + (uint32_t)i);
		seen[i]++;
	}
	for (int j = 0; j < TOKENIZER_N_SPECIAL; j++)
		if (seen[j] != 1)
			return err_set(e, EXIT_USAGE, "'%s': special token <|reserved_%d|> is %s", name, j,
				       seen[j] ? "given twice" : "missing");
	if (tokenizer_init(tk, t->tok, t->tok_len, t->n_ranks, t->pat_str, e) < 0) {
		err_prefix(e, "'%s'", name);
		return -1;
	}
	return 0;
}

void tokenizer_benchmark_token_bytes(const struct tokenizer *tk, uint32_t *tb)
{
	for (uint32_t t = 0; t < tk->n_vocab; t++) {
		if (t >= tk->n_ranks || !tk->tok[t]) {
			tb[t] = 0;
			continue;
		}
		const char *s = (const char *)tk->tok[t];
		size_t n = tk->tok_len[t];
		int special = 0;
		for (int j = 0; j < TOKENIZER_N_SPECIAL && !special; j++) {
			char nm[32];
			int k = snprintf(nm, sizeof nm, "<|reserved_%d|>", j);
			special = (size_t)k == n && !memcmp(nm, s, n);
		}
		tb[t] = special ? 0 : (uint32_t)utf8_replaced_len(s, n);
	}
}

void tokenizer_import_report_free(struct tokenizer_import_report *r)
{
	free(r->name);
	free(r->pattern);
	memset(r, 0, sizeof *r);
}

cJSON *tokenizer_import_json(const struct tokenizer_import_opts *o,
			     const struct tokenizer_import_report *r)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "name", r->name);
	cJSON_AddStringToObject(j, "pattern", r->pattern);
	cJSON_AddNumberToObject(j, "mergeable_ranks", r->n_ranks);
	cJSON_AddNumberToObject(j, "vocab_size", r->n_vocab);
	cJSON_AddNumberToObject(j, "bos_id", r->bos_id);
	cJSON *sp = cJSON_AddArrayToObject(j, "special_tokens");
	for (int s = 0; s < TOKENIZER_N_SPECIAL; s++) {
		char name[32];
		snprintf(name, sizeof name, "<|reserved_%d|>", s);
		cJSON_AddItemToArray(sp, cJSON_CreateString(name));
	}
	cJSON *src = cJSON_AddObjectToObject(j, "imported_from");
	cJSON_AddStringToObject(src, "tokenizer", o->pkl);
	cJSON_AddStringToObject(src, "tokenizer_sha256", r->pkl_sha256);
	cJSON_AddNumberToObject(src, "pickle_protocol", r->protocol);
	if (o->token_bytes) {
		cJSON_AddStringToObject(src, "token_bytes", o->token_bytes);
		cJSON_AddStringToObject(src, "token_bytes_sha256", r->token_bytes_sha256);
	} else {
		cJSON_AddNullToObject(src, "token_bytes");
		cJSON_AddNullToObject(src, "token_bytes_sha256");
	}
	cJSON_AddStringToObject(j, "token_bytes_rule", "utf8_replaced");
	json_sort(j);
	return j;
}

/* Require the table of token_bytes.pt to equal tb. */
static int check_pt(const char *path, const uint32_t *tb, uint32_t n_vocab, struct err *e)
{
	int32_t *v;
	size_t n;
	if (pt_read_int32(path, &v, &n, e) < 0)
		return -1;
	int rc = 0;
	if (n != n_vocab)
		rc = err_set(e, EXIT_USAGE, "'%s': %zu entries, but the tokenizer has %u ids", path, n, n_vocab);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (v[i] < 0 || (uint32_t)v[i] != tb[i])
			rc = err_set(e, EXIT_USAGE,
				     "'%s': entry %zu is %d, but the tokenizer's token gives %u "
				     "(not the token_bytes of this tokenizer)", path, i, (int)v[i], tb[i]);
	free(v);
	return rc;
}

int tokenizer_import(const struct tokenizer_import_opts *o, struct tokenizer_import_report *r,
		     struct err *e)
{
	memset(r, 0, sizeof *r);
	struct stat st;
	if (!o->force && stat(o->out, &st) == 0)
		return err_set(e, EXIT_USAGE, "'%s' already exists (use --force to replace it)", o->out);
	char *buf;
	size_t len;
	if (file_read_all(o->pkl, PK_MAX_FILE, &buf, &len, e) < 0)
		return -1;
	sha256_buf_hex(buf, len, r->pkl_sha256);
	struct tt_encoding t;
	int rc = tt_read_mem(buf, len, o->pkl, &t, e);
	free(buf);
	if (rc < 0)
		return -1;
	struct tokenizer tk;
	rc = tokenizer_from_tiktoken(&t, o->pkl, &tk, e);
	r->name = xstrdup(t.name);
	r->protocol = t.protocol;
	tt_free(&t);
	if (rc < 0) {
		tokenizer_import_report_free(r);
		return -1;
	}
	r->pattern = xstrdup(tk.pattern);
	r->pattern_default = !strcmp(tk.pattern, TOKENIZER_PATTERN_DEFAULT);
	r->n_ranks = tk.n_ranks;
	r->n_vocab = tk.n_vocab;
	r->bos_id = tk.bos_id;
	uint32_t *tb = xcalloc(tk.n_vocab, sizeof *tb);
	tokenizer_benchmark_token_bytes(&tk, tb);
	for (uint32_t i = 0; i < tk.n_ranks; i++)
		r->non_utf8_tokens += tb[i] != tk.tok_len[i];
	char *tmp = NULL, *p = NULL;
	cJSON *j = NULL;
	if (o->token_bytes) {
		uint64_t sz;
		rc = check_pt(o->token_bytes, tb, tk.n_vocab, e);
		if (rc == 0)
			rc = sha256_file_hex(o->token_bytes, r->token_bytes_sha256, &sz, e);
		r->token_bytes_checked = rc == 0;
	}
	if (rc == 0 && !(tmp = dir_temp_beside(o->out, e)))
		rc = -1;
	if (rc == 0) {
		p = path_join(tmp, "ranks.tiktoken");
		rc = tokenizer_save_ranks(&tk, p, e);
		free(p);
	}
	if (rc == 0) {
		p = path_join(tmp, "token_bytes.bin");
		rc = tokenizer_write_token_bytes(p, tb, tk.n_vocab, e);
		free(p);
	}
	if (rc == 0) {
		p = path_join(tmp, "tokenizer.json");
		j = tokenizer_import_json(o, r);
		rc = json_write_file(p, j, e);
		free(p);
	}
	if (rc == 0)
		rc = data_replace_dir(tmp, o->out, o->force, e);
	if (rc < 0 && tmp)
		dir_remove_tree(tmp);
	free(tmp);
	cJSON_Delete(j);
	free(tb);
	tokenizer_free(&tk);
	if (rc < 0)
		tokenizer_import_report_free(r);
	return rc;
}

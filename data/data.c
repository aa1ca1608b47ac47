/* data.c: corpus -> shards, corpus collection, shard and corpus statistics,
 * train/validation overlap. Contract in data.h. Leaves out: threads.
 */
#include "data/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/cli.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"
#include "lib/sha256.h"
#include "lib/stream.h"
#include "data/shard.h"
#include "lib/utf8.h"

/* ---- tokenize ---- */

struct tok_ctx {
	struct tokenizer *tk;
	const struct tokenize_opts *o;
	struct tokenize_report *r;
	const char *dir;           /* temporary output folder */
	struct shard_writer w[2];
	uint64_t shard_tok[2];     /* tokens in the open shard */
	int to_val;                /* current file goes to validation */
	uint64_t kept;             /* documents kept so far */
	struct ids ids;
	struct progress pg;
	const char *file;
	uint64_t in_done;          /* input bytes of the files finished */
	uint64_t in_size;          /* size of the current file (corpus_opts.at) */
};

static int open_shard(struct tok_ctx *c, int split, struct err *e)
{
	char name[64];
	snprintf(name, sizeof name, "%s_%04d.bin", split ? "val" : "train", c->r->shards[split]);
	char *p = path_join(c->dir, name);
	int rc = shard_writer_open(&c->w[split], p, c->tk->n_vocab, c->tk->bos_id, e);
	free(p);
	if (rc == 0) {
		c->r->shards[split]++;
		c->shard_tok[split] = 0;
	}
	return rc;
}

static int tok_doc(const char *doc, size_t len, int valid, void *vctx, struct err *e)
{
	struct tok_ctx *c = vctx;
	if (!valid && c->o->skip_invalid) {
		c->r->skipped_invalid++;
		return 0;
	}
	c->kept++;
	int split = c->to_val;
	if (!c->o->val_files && c->o->val_every)
		split = c->kept % c->o->val_every == 0;
	c->ids.n = 0;
	if (tokenizer_encode(c->tk, doc, len, &c->ids, e) < 0)
		return -1;
	if (c->w[split].open && c->shard_tok[split] >= c->o->shard_tokens) {
		if (shard_writer_commit(&c->w[split], e) < 0)
			return -1;
	}
	if (!c->w[split].open && open_shard(c, split, e) < 0)
		return -1;
	if (shard_writer_add_doc(&c->w[split], c->ids.v, c->ids.n, e) < 0)
		return -1;
	c->shard_tok[split] += c->ids.n + 1;
	c->r->docs[split]++;
	c->r->tokens[split] += c->ids.n + 1;
	c->r->bytes[split] += len;
	return 0;
}

/* corpus_opts.at: input read, the finished files and pos of this one (after
 * each document; after each row group of a parquet file) */
static void tok_at(uint64_t pos, uint64_t size, void *vctx)
{
	struct tok_ctx *c = vctx;
	c->in_size = size;
	progress_at(&c->pg, 0, (double)(c->in_done + pos), "data: %s: %llu documents, %llu tokens", c->file,
		    (unsigned long long)(c->r->docs[0] + c->r->docs[1]),
		    (unsigned long long)(c->r->tokens[0] + c->r->tokens[1]));
}

int data_replace_dir(const char *tmp, const char *out, int force, struct err *e)
{
	struct stat st;
	char *old = NULL;
	if (stat(out, &st) == 0) {
		if (!force)
			return err_set(e, EXIT_USAGE, "'%s' already exists (use --force to replace it)", out);
		old = xasprintf("%s.old-%ld", out, (long)getpid());
		if (rename(out, old) != 0) {
			err_errno(e, EXIT_SYS, "cannot move '%s' aside", out);
			free(old);
			return -1;
		}
	}
	mode_t um = umask(0);  /* mkdtemp made it 0700; outputs get the usual mode */
	umask(um);
	chmod(tmp, 0777 & ~um);
	if (rename(tmp, out) != 0) {
		err_errno(e, EXIT_SYS, "cannot rename '%s' to '%s'", tmp, out);
		if (old)
			rename(old, out);
		free(old);
		return -1;
	}
	char *parent = path_dirname(out);
	dir_sync(parent);
	free(parent);
	if (old)
		dir_remove_tree(old);
	free(old);
	return 0;
}

cJSON *tokenize_report_json(const struct tokenize_report *r)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "vocab_size", r->vocab_size);
	cJSON_AddNumberToObject(j, "bos_id", r->bos_id);
	cJSON_AddNumberToObject(j, "documents_read", (double)(r->counts.docs + r->counts.empty));
	cJSON_AddNumberToObject(j, "empty_documents", (double)r->counts.empty);
	cJSON_AddNumberToObject(j, "null_rows", (double)r->counts.nulls);
	cJSON_AddNumberToObject(j, "invalid_utf8_documents", (double)r->counts.invalid_utf8);
	cJSON_AddNumberToObject(j, "skipped_invalid_utf8", (double)r->skipped_invalid);
	const char *names[2] = {"train", "val"};
	for (int s = 0; s < 2; s++) {
		cJSON *o = cJSON_AddObjectToObject(j, names[s]);
		cJSON_AddNumberToObject(o, "documents", (double)r->docs[s]);
		cJSON_AddNumberToObject(o, "tokens", (double)r->tokens[s]);
		cJSON_AddNumberToObject(o, "bytes", (double)r->bytes[s]);
		cJSON_AddNumberToObject(o, "shards", r->shards[s]);
	}
	json_sort(j);
	return j;
}

int data_tokenize(struct tokenizer *tk, const struct tokenize_opts *o, const char *out_dir,
		  struct tokenize_report *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	r->vocab_size = tk->n_vocab;
	r->bos_id = tk->bos_id;
	if (tk->n_vocab > SHARD_MAX_VOCAB)
		return err_set(e, EXIT_USAGE,
			       "vocabulary of %u tokens does not fit uint16 shards (at most %u)", tk->n_vocab,
			       SHARD_MAX_VOCAB);
	if (o->val_files > o->n_inputs)
		return err_set(e, EXIT_USAGE, "--val-files %d but only %d inputs", o->val_files, o->n_inputs);
	struct stat st;
	if (!o->force && stat(out_dir, &st) == 0)
		return err_set(e, EXIT_USAGE, "'%s' already exists (use --force to replace it)", out_dir);
	char *tmp = dir_temp_beside(out_dir, e);
	if (!tmp)
		return -1;
	struct tok_ctx c = {0};
	c.tk = tk;
	c.o = o;
	c.r = r;
	c.dir = tmp;
	/* progress over the input bytes: the files' sizes (none known with "-") */
	uint64_t total = 0;
	int sized = 1;
	for (int i = 0; i < o->n_inputs; i++) {
		if (stat(o->inputs[i], &st) == 0 && S_ISREG(st.st_mode) && !stream_is_std(o->inputs[i]))
			total += (uint64_t)st.st_size;
		else
			sized = 0;
	}
	progress_init(&c.pg, o->quiet);
	progress_start(&c.pg, sized ? (double)total : 0, 0, NULL);
	int rc = 0;
	struct corpus_opts co = o->corpus;
	co.at = tok_at;
	for (int i = 0; i < o->n_inputs && rc == 0; i++) {
		c.to_val = o->val_files && i >= o->n_inputs - o->val_files;
		c.file = o->inputs[i];
		c.in_size = 0;
		rc = corpus_read_file(o->inputs[i], &co, tok_doc, &c, &r->counts, e);
		c.in_done += c.in_size;
	}
	for (int s = 0; s < 2 && rc == 0; s++)
		if (c.w[s].open)
			rc = shard_writer_commit(&c.w[s], e);
	/* the tokenizer's token_bytes beside the shards: the trainer's default */
	if (rc == 0) {
		char *p = path_join(tmp, "token_bytes.bin");
		rc = tokenizer_save_token_bytes(tk, p, e);
		free(p);
	}
	if (rc == 0 && r->docs[0] == 0)
		rc = err_set(e, EXIT_USAGE, "no training documents (%llu read, %llu empty)",
			     (unsigned long long)(r->counts.docs + r->counts.empty),
			     (unsigned long long)r->counts.empty);
	if (rc == 0) {
		cJSON *j = tokenize_report_json(r);
		char *p = path_join(tmp, "data.json");
		rc = json_write_file(p, j, e);
		free(p);
		cJSON_Delete(j);
	}
	progress_at(&c.pg, 1, (double)c.in_done, "data: %llu train + %llu val documents, %llu + %llu tokens",
		    (unsigned long long)r->docs[0], (unsigned long long)r->docs[1],
		    (unsigned long long)r->tokens[0], (unsigned long long)r->tokens[1]);
	progress_done(&c.pg);
	for (int s = 0; s < 2; s++)
		shard_writer_abort(&c.w[s]);
	ids_free(&c.ids);
	if (rc == 0)
		rc = data_replace_dir(tmp, out_dir, o->force, e);
	if (rc < 0)
		dir_remove_tree(tmp);
	free(tmp);
	return rc;
}

/* ---- collect (train-tokenizer) ---- */

struct collect_ctx {
	struct corpus_texts *t;
	struct progress pg;
	const char *file;
	uint64_t in_done, in_size;
};

static int collect_doc(const char *doc, size_t len, int valid, void *vctx, struct err *e)
{
	(void)valid;
	(void)e;
	struct corpus_texts *t = ((struct collect_ctx *)vctx)->t;
	if (t->k == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->v = xrealloc(t->v, t->cap * sizeof *t->v);
		t->n = xrealloc(t->n, t->cap * sizeof *t->n);
	}
	t->v[t->k] = xmalloc(len ? len : 1);
	memcpy(t->v[t->k], doc, len);
	t->n[t->k++] = len;
	return 0;
}

static void collect_at(uint64_t pos, uint64_t size, void *vctx)
{
	struct collect_ctx *c = vctx;
	c->in_size = size;
	progress_at(&c->pg, 0, (double)(c->in_done + pos), "data: reading %s: %zu documents", c->file, c->t->k);
}

/* The files' sizes (0 when one is not known: standard input, not a file). */
static uint64_t inputs_size(const char *const *inputs, int n)
{
	uint64_t total = 0;
	struct stat st;
	for (int i = 0; i < n; i++) {
		if (stream_is_std(inputs[i]) || stat(inputs[i], &st) != 0 || !S_ISREG(st.st_mode))
			return 0;
		total += (uint64_t)st.st_size;
	}
	return total;
}

int data_collect(const char *const *inputs, int n, const struct corpus_opts *o, int quiet, struct corpus_texts *t,
		 struct corpus_counts *c, struct err *e)
{
	struct collect_ctx cc = {.t = t};
	struct corpus_opts co = *o;
	co.at = collect_at;
	progress_init(&cc.pg, quiet);
	cc.pg.delay = 1.0;   /* a small corpus reads without a line */
	progress_start(&cc.pg, (double)inputs_size(inputs, n), 0, NULL);
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		cc.file = inputs[i];
		cc.in_size = 0;
		rc = corpus_read_file(inputs[i], &co, collect_doc, &cc, c, e);
		cc.in_done += cc.in_size;
	}
	progress_done(&cc.pg);
	return rc;
}

void corpus_texts_free(struct corpus_texts *t)
{
	for (size_t k = 0; k < t->k; k++)
		free(t->v[k]);
	free(t->v);
	free(t->n);
	memset(t, 0, sizeof *t);
}

/* ---- stats ---- */

int data_stats(const char *path, const uint32_t *tb, uint32_t ntb, struct shard_stats *s,
	       struct err *e)
{
	memset(s, 0, sizeof *s);
	struct shard sh;
	if (shard_open(&sh, path, e) < 0)
		return -1;
	if (tb && ntb != sh.vocab_size) {
		err_set(e, EXIT_USAGE, "'%s': vocab size %u but the token_bytes file has %u entries", path,
			sh.vocab_size, ntb);
		shard_close(&sh);
		return -1;
	}
	s->tokens = sh.n_tokens;
	s->docs = sh.n_docs;
	s->vocab_size = sh.vocab_size;
	s->bos_id = sh.bos_id;
	uint64_t start = 0;
	for (uint64_t i = 0; i <= sh.n_tokens; i++) {
		if (i == sh.n_tokens || (sh.tokens[i] == sh.bos_id && i > 0)) {
			if (i - start > s->max_doc)
				s->max_doc = i - start;
			start = i;
		}
		if (i < sh.n_tokens && tb && tb[sh.tokens[i]]) {
			s->bytes += tb[sh.tokens[i]];
			s->text_tokens++;
		}
	}
	shard_close(&sh);
	return 0;
}

int data_is_shard(const char *path)
{
	char m[sizeof SHARD_MAGIC - 1];
	FILE *f = stream_is_std(path) ? NULL : fopen(path, "rb");
	int r = f && fread(m, 1, sizeof m, f) == sizeof m && !memcmp(m, SHARD_MAGIC, sizeof m);
	if (f)
		fclose(f);
	return r;
}

/* A corpus read through a tokenizer: fn(ids after BOS, count, ctx) for
 * each document (as a shard would hold it), progress over the file. */
struct corpus_tok {
	struct tokenizer *tk;
	struct ids ids;
	uint16_t *u16;             /* the ids as a shard stores them */
	size_t u16_cap;
	void (*fn)(const uint16_t *t, uint64_t n, void *ctx);
	void *ctx;
	struct progress *pg;
	const char *file;
	uint64_t docs;
};

static int corpus_tok_doc(const char *doc, size_t len, int valid, void *vc, struct err *e)
{
	(void)valid;
	struct corpus_tok *c = vc;
	c->ids.n = 0;
	if (tokenizer_encode(c->tk, doc, len, &c->ids, e) < 0)
		return -1;
	if (c->ids.n > c->u16_cap) {
		c->u16_cap = c->ids.n;
		c->u16 = xrealloc(c->u16, c->u16_cap * sizeof *c->u16);
	}
	for (size_t i = 0; i < c->ids.n; i++)
		c->u16[i] = (uint16_t)c->ids.v[i];
	c->docs++;
	c->fn(c->u16, c->ids.n, c->ctx);
	return 0;
}

static void corpus_tok_at(uint64_t pos, uint64_t size, void *vc)
{
	struct corpus_tok *c = vc;
	progress_at(c->pg, 0, (double)pos, "data: %s: %llu documents", c->file, (unsigned long long)c->docs);
	(void)size;
}

/* Read the corpus at path through tk, fn for each document (its ids after
 * the BOS a shard would give it), with progress unless quiet. */
static int corpus_docs(const char *path, const struct corpus_opts *o, struct tokenizer *tk, int quiet,
		       void (*fn)(const uint16_t *t, uint64_t n, void *ctx), void *ctx, struct corpus_counts *cc,
		       struct err *e)
{
	if (tk->n_vocab > SHARD_MAX_VOCAB)
		return err_set(e, EXIT_USAGE, "vocabulary of %u tokens: token shards and their statistics hold "
			       "uint16 ids (at most %u)", tk->n_vocab, SHARD_MAX_VOCAB);
	struct progress pg;
	progress_init(&pg, quiet);
	pg.delay = 1.0;
	const char *one[1] = {path};
	progress_start(&pg, (double)inputs_size(one, 1), 0, NULL);
	struct corpus_tok c = {.tk = tk, .fn = fn, .ctx = ctx, .pg = &pg, .file = path};
	struct corpus_opts co = *o;
	co.at = corpus_tok_at;
	int rc = corpus_read_file(path, &co, corpus_tok_doc, &c, cc, e);
	progress_done(&pg);
	ids_free(&c.ids);
	free(c.u16);
	return rc;
}

struct cstats {
	struct shard_stats *s;
	const uint32_t *tb;
	uint32_t ntb;
};

static void cstats_doc(const uint16_t *t, uint64_t n, void *vc)
{
	struct cstats *c = vc;
	c->s->docs++;
	c->s->tokens += n + 1;   /* BOS too */
	if (n + 1 > c->s->max_doc)
		c->s->max_doc = n + 1;
	for (uint64_t i = 0; c->tb && i < n; i++)
		if (c->tb[t[i]]) {
			c->s->bytes += c->tb[t[i]];
			c->s->text_tokens++;
		}
}

int data_stats_corpus(const char *path, const struct corpus_opts *o, struct tokenizer *tk, const uint32_t *tb,
		      uint32_t ntb, int quiet, struct shard_stats *s, struct corpus_counts *cc, struct err *e)
{
	memset(s, 0, sizeof *s);
	memset(cc, 0, sizeof *cc);
	s->vocab_size = tk->n_vocab;
	s->bos_id = tk->bos_id;
	if (tb && ntb != tk->n_vocab)
		return err_set(e, EXIT_USAGE, "'%s': the tokenizer's vocab size is %u but the token_bytes file has %u "
			       "entries", path, tk->n_vocab, ntb);
	struct cstats c = {s, tb, ntb};
	return corpus_docs(path, o, tk, quiet, cstats_doc, &c, cc, e);
}

/* ---- overlap ---- */

struct hset {
	uint64_t *v;   /* 0 = empty */
	size_t n, cap;
};

static int hset_has(const struct hset *h, uint64_t k)
{
	if (!h->cap)
		return 0;
	for (size_t i = k & (h->cap - 1); h->v[i]; i = (i + 1) & (h->cap - 1))
		if (h->v[i] == k)
			return 1;
	return 0;
}

static void hset_add(struct hset *h, uint64_t k)
{
	if (2 * (h->n + 1) > h->cap) {
		struct hset old = *h;
		h->cap = old.cap ? 2 * old.cap : 1 << 16;
		h->v = xcalloc(h->cap, sizeof *h->v);
		h->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.v[i])
				hset_add(h, old.v[i]);
		free(old.v);
	}
	size_t i = k & (h->cap - 1);
	for (; h->v[i]; i = (i + 1) & (h->cap - 1))
		if (h->v[i] == k)
			return;
	h->v[i] = k;
	h->n++;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	return x ^ (x >> 33);
}

static uint64_t gram_hash(const uint16_t *t, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < n; i++)
		h = mix(h ^ t[i]) + (uint64_t)i;
	return h ? h : 1;
}

static uint64_t doc_hash(const uint16_t *t, uint64_t n)
{
	uint8_t d[SHA256_LEN];
	sha256_buf(t, n * sizeof *t, d);
	uint64_t h;
	memcpy(&h, d, 8);
	return h ? h : 1;
}

/* Walk the documents of the shards (or, with src->tk, of the corpora that
 * are not shards): fn(tokens after BOS, count, ctx). */
static int for_docs(const char *const *paths, int n, const struct overlap_src *src, uint32_t *vocab,
		    void (*fn)(const uint16_t *t, uint64_t n, void *ctx), void *ctx, struct err *e)
{
	for (int i = 0; i < n; i++) {
		if (src && src->tk && !data_is_shard(paths[i])) {
			if (*vocab && src->tk->n_vocab != *vocab)
				return err_set(e, EXIT_USAGE, "'%s': the tokenizer's vocab size %u differs from the "
					       "shards' %u", paths[i], src->tk->n_vocab, *vocab);
			*vocab = src->tk->n_vocab;
			struct corpus_counts cc = {0};
			if (corpus_docs(paths[i], &src->corpus, src->tk, src->quiet, fn, ctx, &cc, e) < 0)
				return -1;
			continue;
		}
		struct shard s;
		if (shard_open(&s, paths[i], e) < 0)
			return -1;
		if (*vocab && s.vocab_size != *vocab) {
			err_set(e, EXIT_USAGE, "'%s': offset 16: vocab size %u differs from %u", paths[i],
				s.vocab_size, *vocab);
			shard_close(&s);
			return -1;
		}
		*vocab = s.vocab_size;
		uint64_t start = 0;
		for (uint64_t t = 1; t <= s.n_tokens; t++)
			if (t == s.n_tokens || s.tokens[t] == s.bos_id) {
				fn(s.tokens + start + 1, t - start - 1, ctx);
				start = t;
			}
		shard_close(&s);
	}
	return 0;
}

struct ov_ctx {
	struct hset docs, grams;
	struct overlap_report *r;
	int n;
};

static void ov_train(const uint16_t *t, uint64_t n, void *vc)
{
	struct ov_ctx *c = vc;
	c->r->train_docs++;
	hset_add(&c->docs, doc_hash(t, n));
	for (uint64_t i = 0; i + (uint64_t)c->n <= n; i++)
		hset_add(&c->grams, gram_hash(t + i, c->n));
}

static void ov_val(const uint16_t *t, uint64_t n, void *vc)
{
	struct ov_ctx *c = vc;
	c->r->val_docs++;
	if (hset_has(&c->docs, doc_hash(t, n)))
		c->r->dup_docs++;
	for (uint64_t i = 0; i + (uint64_t)c->n <= n; i++) {
		c->r->val_grams++;
		if (hset_has(&c->grams, gram_hash(t + i, c->n)))
			c->r->shared_grams++;
	}
}

int data_overlap(const char *const *train, int n_train, const char *const *val, int n_val, int n,
		 const struct overlap_src *src, struct overlap_report *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	r->n = n;
	if (n < 1)
		return err_set(e, EXIT_USAGE, "n-gram length must be at least 1");
	struct ov_ctx c = {{0}, {0}, r, n};
	uint32_t vocab = 0;
	int rc = for_docs(train, n_train, src, &vocab, ov_train, &c, e);
	if (rc == 0)
		rc = for_docs(val, n_val, src, &vocab, ov_val, &c, e);
	free(c.docs.v);
	free(c.grams.v);
	return rc;
}

/* ---- decode's input and output ---- */

int data_ids_parse(const char *path, const char *d, size_t n, int u32, struct ids *out, struct err *e)
{
	if (u32) {
		if (n % 4)
			return err_set(e, EXIT_USAGE, "'%s': offset %zu: length is not a multiple of 4", path,
				       n - n % 4);
		for (size_t i = 0; i < n; i += 4) {
			const unsigned char *p = (const unsigned char *)d + i;
			ids_push(out, (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
					      (uint32_t)p[3] << 24);
		}
		return 0;
	}
	size_t line = 0, i = 0;
	while (i < n) {
		const char *nl = memchr(d + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - d) : n;
		line++;
		size_t len = end - i;
		if (len && d[i + len - 1] == '\r')
			len--;
		if (len) {
			char buf[24];
			int64_t v;
			struct err pe;
			/* decimal digits only: strtoll would take a sign, blanks, and
			 * stop at a NUL with bytes after it */
			int digits = len < sizeof buf;
			for (size_t k = 0; digits && k < len; k++)
				digits = d[i + k] >= '0' && d[i + k] <= '9';
			if (!digits)
				return err_set(e, EXIT_USAGE, "'%s': line %zu: not a token id", path, line);
			memcpy(buf, d + i, len);
			buf[len] = 0;
			if (cli_parse_i64(buf, 0, UINT32_MAX, &v, "id", &pe) < 0)
				return err_set(e, EXIT_USAGE, "'%s': line %zu: not a token id", path, line);
			ids_push(out, (uint32_t)v);
		}
		i = end + 1;
	}
	return 0;
}

cJSON *data_text_json(const unsigned char *b, size_t n)
{
	struct bytes t = {0};
	for (size_t i = 0; i < n;) {
		size_t k = b[i] ? utf8_seq(b + i, n - i) : 0;
		if (k) {
			bytes_append(&t, b + i, k);
			i += k;
		} else {
			bytes_append(&t, "\xef\xbf\xbd", 3);
			i++;
		}
	}
	bytes_append(&t, "", 1);
	cJSON *s = cJSON_CreateString((const char *)t.v);
	bytes_free(&t);
	return s;
}

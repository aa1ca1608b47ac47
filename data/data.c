/* data.c: corpus -> shards, shard statistics, train/validation overlap.
 * Contract in data.h (issue 6, SPEC sections 4 and 9). Leaves out: threads.
 */
#include "data/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"
#include "lib/sha256.h"
#include "lib/stream.h"
#include "data/shard.h"

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
	uint64_t in_size;          /* size of the current file (0: not known) */
	uint64_t in_docs;          /* document bytes of the current file so far */
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
	/* input read: the finished files, and within this one its documents'
	 * bytes (markup and delimiters are not counted, so the share lags a bit) */
	c->in_docs += len;
	uint64_t here = c->in_size && c->in_docs > c->in_size ? c->in_size : c->in_docs;
	progress_at(&c->pg, 0, (double)(c->in_done + here), "data: %s: %llu documents, %llu tokens",
		    c->file, (unsigned long long)(c->r->docs[0] + c->r->docs[1]),
		    (unsigned long long)(c->r->tokens[0] + c->r->tokens[1]));
	return 0;
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
	for (int i = 0; i < o->n_inputs && rc == 0; i++) {
		c.to_val = o->val_files && i >= o->n_inputs - o->val_files;
		c.file = o->inputs[i];
		c.in_size = 0;
		c.in_docs = 0;
		if (!stream_is_std(o->inputs[i]) && stat(o->inputs[i], &st) == 0 && S_ISREG(st.st_mode))
			c.in_size = (uint64_t)st.st_size;
		rc = corpus_read_file(o->inputs[i], &o->corpus, tok_doc, &c, &r->counts, e);
		c.in_done += c.in_size ? c.in_size : c.in_docs;
	}
	for (int s = 0; s < 2 && rc == 0; s++)
		if (c.w[s].open)
			rc = shard_writer_commit(&c.w[s], e);
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

/* Walk the documents of the shards: fn(tokens after BOS, count, ctx). */
static int for_docs(const char *const *paths, int n, uint32_t *vocab,
		    void (*fn)(const uint16_t *t, uint64_t n, void *ctx), void *ctx, struct err *e)
{
	for (int i = 0; i < n; i++) {
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
		 struct overlap_report *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	r->n = n;
	if (n < 1)
		return err_set(e, EXIT_USAGE, "n-gram length must be at least 1");
	struct ov_ctx c = {{0}, {0}, r, n};
	uint32_t vocab = 0;
	int rc = for_docs(train, n_train, &vocab, ov_train, &c, e);
	if (rc == 0)
		rc = for_docs(val, n_val, &vocab, ov_val, &c, e);
	free(c.docs.v);
	free(c.grams.v);
	return rc;
}

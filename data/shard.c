/* shard.c: token shard reader (mmap + full validation) and streaming writer.
 *
 * Implements the format in shard.h (supkit-formats(5)). Leaves out:
 * big-endian hosts (ids are read in place), compression. Every problem is
 * reported with the file and the byte offset where it was found.
 */
#include "data/shard.h"
#include "lib/derivation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void wr32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void wr64(unsigned char *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}

/* Validate a header (64 bytes) against the file size. */
static int header_check(const unsigned char *h, uint64_t file_size, const char *path,
			uint32_t *vocab, uint32_t *bos, uint64_t *nt, uint64_t *nd, struct err *e)
{
	if (memcmp(h, SHARD_MAGIC, 8) != 0)
		return err_set(e, EXIT_USAGE, "'%s': offset 0: not a token shard (bad magic)", path);
	uint32_t ver = rd32(h + 8), hb = rd32(h + 12);
	if (ver != SHARD_VERSION)
		return err_set(e, EXIT_USAGE, "'%s': offset 8: unsupported shard version %u (expected %u)",
			       path, ver, SHARD_VERSION);
	if (hb != SHARD_HEADER_BYTES)
		return err_set(e, EXIT_USAGE, "'%s': offset 12: header size %u (expected %u)", path, hb,
			       SHARD_HEADER_BYTES);
	*vocab = rd32(h + 16);
	*bos = rd32(h + 20);
	*nt = rd64(h + 24);
	*nd = rd64(h + 32);
	if (*vocab < 2 || *vocab > SHARD_MAX_VOCAB)
		return err_set(e, EXIT_USAGE, "'%s': offset 16: vocab size %u outside 2..%u", path,
			       *vocab, SHARD_MAX_VOCAB);
	if (*bos >= *vocab)
		return err_set(e, EXIT_USAGE, "'%s': offset 20: BOS id %u not below vocab size %u", path,
			       *bos, *vocab);
	if (*nt > SHARD_MAX_TOKENS)
		return err_set(e, EXIT_USAGE, "'%s': offset 24: token count %llu over the limit", path,
			       (unsigned long long)*nt);
	if (*nd > *nt)
		return err_set(e, EXIT_USAGE, "'%s': offset 32: %llu documents but %llu tokens", path,
			       (unsigned long long)*nd, (unsigned long long)*nt);
	for (int i = 40; i < 64; i++)
		if (h[i])
			return err_set(e, EXIT_USAGE, "'%s': offset %d: reserved header byte not zero",
				       path, i);
	if (file_size != SHARD_HEADER_BYTES + 2 * *nt)
		return err_set(e, EXIT_USAGE,
			       "'%s': offset %llu: file is %llu bytes, header says %llu tokens (%llu bytes)",
			       path, (unsigned long long)(file_size < SHARD_HEADER_BYTES + 2 * *nt
							  ? file_size : SHARD_HEADER_BYTES + 2 * *nt),
			       (unsigned long long)file_size, (unsigned long long)*nt,
			       (unsigned long long)(SHARD_HEADER_BYTES + 2 * *nt));
	return 0;
}

int shard_read_header(const char *path, uint32_t *vocab_size, uint32_t *bos_id,
		      uint64_t *n_tokens, uint64_t *n_docs, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, EXIT_SYS, "cannot open '%s'", path);
	struct stat st;
	unsigned char h[SHARD_HEADER_BYTES];
	if (fstat(fd, &st) < 0) {
		err_errno(e, EXIT_SYS, "cannot stat '%s'", path);
		close(fd);
		return -1;
	}
	ssize_t r = pread(fd, h, sizeof h, 0);
	close(fd);
	deriv_log_file(path);
	if (r < 0)
		return err_errno(e, EXIT_SYS, "cannot read '%s'", path);
	if (r < (ssize_t)sizeof h)
		return err_set(e, EXIT_USAGE, "'%s': offset %zd: file ends inside the %u-byte header",
			       path, r, SHARD_HEADER_BYTES);
	return header_check(h, (uint64_t)st.st_size, path, vocab_size, bos_id, n_tokens, n_docs, e);
}

int shard_open(struct shard *s, const char *path, struct err *e)
{
	memset(s, 0, sizeof *s);
	uint32_t vocab, bos;
	uint64_t nt, nd;
	if (shard_read_header(path, &vocab, &bos, &nt, &nd, e) < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, EXIT_SYS, "cannot open '%s'", path);
	size_t len = SHARD_HEADER_BYTES + 2 * (size_t)nt;
	void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return err_errno(e, EXIT_SYS, "cannot map '%s'", path);
	const uint16_t *tok = (const uint16_t *)((const unsigned char *)map + SHARD_HEADER_BYTES);
	uint64_t docs = 0;
	for (uint64_t i = 0; i < nt; i++) {
		uint16_t t = tok[i];
		if (t >= vocab) {
			err_set(e, EXIT_USAGE, "'%s': offset %llu: token %u not below vocab size %u",
				path, (unsigned long long)(SHARD_HEADER_BYTES + 2 * i), t, vocab);
			goto fail;
		}
		if (t == bos)
			docs++;
		else if (i == 0) {
			err_set(e, EXIT_USAGE, "'%s': offset %u: first token %u is not BOS %u", path,
				SHARD_HEADER_BYTES, t, bos);
			goto fail;
		}
	}
	if (docs != nd) {
		err_set(e, EXIT_USAGE, "'%s': offset 32: header says %llu documents, found %llu BOS tokens",
			path, (unsigned long long)nd, (unsigned long long)docs);
		goto fail;
	}
	s->path = xstrdup(path);
	s->vocab_size = vocab;
	s->bos_id = bos;
	s->n_tokens = nt;
	s->n_docs = nd;
	s->tokens = tok;
	s->map = map;
	s->map_len = len;
	return 0;
fail:
	munmap(map, len);
	return -1;
}

void shard_close(struct shard *s)
{
	if (s->map)
		munmap(s->map, s->map_len);
	free(s->path);
	memset(s, 0, sizeof *s);
}

int shard_writer_open(struct shard_writer *w, const char *path, uint32_t vocab_size,
		      uint32_t bos_id, struct err *e)
{
	memset(w, 0, sizeof *w);
	if (vocab_size > SHARD_MAX_VOCAB)
		return err_set(e, EXIT_USAGE,
			       "'%s': vocabulary of %u tokens does not fit uint16 shards (at most %u)",
			       path, vocab_size, SHARD_MAX_VOCAB);
	if (vocab_size < 2 || bos_id >= vocab_size)
		return err_set(e, EXIT_USAGE, "'%s': BOS id %u not below vocab size %u", path, bos_id,
			       vocab_size);
	if (atomic_open(&w->af, path, e) < 0)
		return -1;
	unsigned char h[SHARD_HEADER_BYTES] = {0};
	if (fwrite(h, 1, sizeof h, w->af.fp) != sizeof h) {
		err_errno(e, EXIT_SYS, "cannot write '%s'", w->af.tmp_path);
		atomic_abort(&w->af);
		return -1;
	}
	w->vocab_size = vocab_size;
	w->bos_id = bos_id;
	w->open = 1;
	return 0;
}

int shard_writer_add_doc(struct shard_writer *w, const uint32_t *ids, size_t n, struct err *e)
{
	uint16_t buf[4096];
	size_t k = 0;
	buf[k++] = (uint16_t)w->bos_id;
	for (size_t i = 0; i <= n; i++) {
		if (k == 4096 || i == n) {
			if (fwrite(buf, 2, k, w->af.fp) != k)
				return err_errno(e, EXIT_SYS, "cannot write '%s'", w->af.tmp_path);
			k = 0;
		}
		if (i == n)
			break;
		if (ids[i] >= w->vocab_size || ids[i] == w->bos_id)
			return err_set(e, EXIT_USAGE, "'%s': document %llu token %zu: id %u is %s",
				       w->af.path, (unsigned long long)w->n_docs, i, ids[i],
				       ids[i] == w->bos_id ? "BOS" : "not below the vocab size");
		buf[k++] = (uint16_t)ids[i];
	}
	w->n_tokens += n + 1;
	w->n_docs++;
	return 0;
}

int shard_writer_commit(struct shard_writer *w, struct err *e)
{
	unsigned char h[SHARD_HEADER_BYTES] = {0};
	memcpy(h, SHARD_MAGIC, 8);
	wr32(h + 8, SHARD_VERSION);
	wr32(h + 12, SHARD_HEADER_BYTES);
	wr32(h + 16, w->vocab_size);
	wr32(h + 20, w->bos_id);
	wr64(h + 24, w->n_tokens);
	wr64(h + 32, w->n_docs);
	if (fflush(w->af.fp) != 0 || fseek(w->af.fp, 0, SEEK_SET) != 0 ||
	    fwrite(h, 1, sizeof h, w->af.fp) != sizeof h) {
		err_errno(e, EXIT_SYS, "cannot write '%s'", w->af.tmp_path);
		shard_writer_abort(w);
		return -1;
	}
	w->open = 0;
	return atomic_commit(&w->af, e);
}

void shard_writer_abort(struct shard_writer *w)
{
	if (w->open)
		atomic_abort(&w->af);
	w->open = 0;
}

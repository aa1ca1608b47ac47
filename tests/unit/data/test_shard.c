/* test_shard.c: data/shard.c: writer/reader round trip, a shard packed by
 * Python (tests/fixtures/loader/make_loader_ref.py) read back, and every
 * malformed header or token refused with the file and offset named. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "data/shard.h"
#include "t.h"

static char tmpdir[] = "/tmp/supkit-shard-XXXXXX";

static char *tpath(const char *name)
{
	return path_join(tmpdir, name);
}

TEST(write_read_round_trip)
{
	struct err e;
	char *p = tpath("s.bin");
	struct shard_writer w;
	CHECK(shard_writer_open(&w, p, 1000, 996, &e) == 0);
	uint32_t d1[] = {1, 2, 3}, d2[] = {999};
	CHECK(shard_writer_add_doc(&w, d1, 3, &e) == 0);
	CHECK(shard_writer_add_doc(&w, NULL, 0, &e) == 0);
	CHECK(shard_writer_add_doc(&w, d2, 1, &e) == 0);
	CHECK(access(p, F_OK) != 0);  /* nothing visible before commit */
	CHECK(shard_writer_commit(&w, &e) == 0);
	struct shard s;
	CHECK(shard_open(&s, p, &e) == 0);
	CHECK(s.vocab_size == 1000 && s.bos_id == 996 && s.n_tokens == 7 && s.n_docs == 3);
	uint16_t want[] = {996, 1, 2, 3, 996, 996, 999};
	CHECK(memcmp(s.tokens, want, sizeof want) == 0);
	shard_close(&s);
	uint32_t v, b;
	uint64_t nt, nd;
	CHECK(shard_read_header(p, &v, &b, &nt, &nd, &e) == 0 && nt == 7 && nd == 3);
	unlink(p);
	free(p);
}

TEST(writer_refuses)
{
	struct err e;
	char *p = tpath("r.bin");
	struct shard_writer w;
	CHECK(shard_writer_open(&w, p, 70000, 0, &e) < 0 && strstr(e.msg, "does not fit"));
	CHECK(shard_writer_open(&w, p, 100, 100, &e) < 0);
	CHECK(shard_writer_open(&w, p, 100, 96, &e) == 0);
	uint32_t bad[] = {5, 100};
	CHECK(shard_writer_add_doc(&w, bad, 2, &e) < 0 && strstr(e.msg, "token 1"));
	uint32_t bos[] = {96};
	CHECK(shard_writer_add_doc(&w, bos, 1, &e) < 0 && strstr(e.msg, "BOS"));
	shard_writer_abort(&w);
	CHECK(access(p, F_OK) != 0);
	free(p);
}

TEST(python_packed_shard_reads)
{
	char *p = xasprintf("%s/loader/a.bin", t_fixtures());
	struct shard s;
	struct err e;
	int rc = shard_open(&s, p, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECK(s.vocab_size == 300 && s.bos_id == 296 && s.n_docs == 1500);
		CHECK(s.tokens[0] == 296);
		shard_close(&s);
	}
	free(p);
}

/* Write raw bytes and check the error names the offset. */
static void expect_bad(const void *data, size_t n, const char *want)
{
	struct err e;
	char *p = tpath("bad.bin");
	CHECK(file_write_atomic(p, data, n, &e) == 0);
	struct shard s;
	int rc = shard_open(&s, p, &e);
	CHECKF(rc < 0 && strstr(e.msg, want) && strstr(e.msg, "bad.bin"), "want '%s', got '%s'", want,
	       rc < 0 ? e.msg : "success");
	if (rc == 0)
		shard_close(&s);
	unlink(p);
	free(p);
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

TEST(reader_refuses)
{
	unsigned char f[64 + 8];
	memset(f, 0, sizeof f);
	memcpy(f, "SKTOKENS", 8);
	put32(f + 8, 1);
	put32(f + 12, 64);
	put32(f + 16, 100);
	put32(f + 20, 96);
	put64(f + 24, 4);
	put64(f + 32, 2);
	uint16_t good[4] = {96, 1, 96, 2};
	memcpy(f + 64, good, 8);
	unsigned char g[sizeof f];

	memcpy(g, f, sizeof f);
	expect_bad(g, 10, "offset 10");                   /* truncated header */
	g[0] = 'X';
	expect_bad(g, sizeof g, "offset 0");              /* magic */
	memcpy(g, f, sizeof f);
	put32(g + 8, 2);
	expect_bad(g, sizeof g, "offset 8");              /* version */
	memcpy(g, f, sizeof f);
	put32(g + 16, 70000);
	expect_bad(g, sizeof g, "offset 16");             /* vocab too large */
	memcpy(g, f, sizeof f);
	put32(g + 20, 100);
	expect_bad(g, sizeof g, "offset 20");             /* BOS >= V */
	memcpy(g, f, sizeof f);
	put64(g + 24, 5);
	expect_bad(g, sizeof g, "offset 72");             /* size mismatch: ends at 72 */
	memcpy(g, f, sizeof f);
	put64(g + 32, 3);
	expect_bad(g, sizeof g, "offset 32");             /* doc count */
	memcpy(g, f, sizeof f);
	g[50] = 1;
	expect_bad(g, sizeof g, "offset 50");             /* reserved */
	memcpy(g, f, sizeof f);
	uint16_t big = 100;
	memcpy(g + 64 + 6, &big, 2);
	expect_bad(g, sizeof g, "offset 70");             /* id >= V */
	memcpy(g, f, sizeof f);
	uint16_t notbos = 5;
	memcpy(g + 64, &notbos, 2);
	expect_bad(g, sizeof g, "offset 64");             /* first token not BOS */
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(write_read_round_trip);
	RUN(writer_refuses);
	RUN(python_packed_shard_reads);
	RUN(reader_refuses);
	rmdir(tmpdir);
	return t_done();
}

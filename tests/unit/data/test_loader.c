/* test_loader.c: data/loader.c against an independent Python rendering of
 * the best-fit packing loader (tests/fixtures/loader/make_loader_ref.py:
 * 500 batches over two shards, through two epoch wraps), plus the
 * invariants with a shuffling seed, checkpoint resume and refused inputs. */
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/sha256.h"
#include "data/loader.h"
#include "t.h"

static char *shard_a, *shard_b;

TEST(matches_python_reference)
{
	struct err e;
	char *refp = xasprintf("%s/loader/loader_ref.json", t_fixtures());
	cJSON *ref = json_read_file(refp, 0, &e);
	free(refp);
	CHECKF(ref != NULL, "%s", e.msg);
	if (!ref)
		return;
	int T = (int)cJSON_GetObjectItem(ref, "T")->valuedouble;
	int B = (int)cJSON_GetObjectItem(ref, "B")->valuedouble;
	int nb = (int)cJSON_GetObjectItem(ref, "batches")->valuedouble;
	const char *paths[2] = {shard_a, shard_b};
	struct loader ld;
	int rc = loader_open(paths, 2, T, B, 0, &ld, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc) {
		cJSON_Delete(ref);
		return;
	}
	int32_t *in = xmalloc(sizeof(int32_t) * B * T), *tg = xmalloc(sizeof(int32_t) * B * T);
	struct sha256 h;
	sha256_init(&h);
	const cJSON *epochs = cJSON_GetObjectItem(ref, "epochs");
	const cJSON *first = cJSON_GetObjectItem(ref, "first");
	int epoch_ok = 1;
	for (int i = 0; i < nb; i++) {
		uint64_t ep = loader_next(&ld, in, tg);
		if (ep != (uint64_t)cJSON_GetArrayItem(epochs, i)->valuedouble)
			epoch_ok = 0;
		if (i == 0) {
			int same = 1;
			for (int b = 0; b < B; b++)
				for (int t = 0; t < T; t++) {
					const cJSON *ri = cJSON_GetArrayItem(cJSON_GetObjectItem(first, "inputs"), b);
					const cJSON *rt = cJSON_GetArrayItem(cJSON_GetObjectItem(first, "targets"), b);
					same &= in[b * T + t] == (int32_t)cJSON_GetArrayItem(ri, t)->valuedouble;
					same &= tg[b * T + t] == (int32_t)cJSON_GetArrayItem(rt, t)->valuedouble;
				}
			CHECKF(same, "first batch differs from the reference");
			for (int b = 0; b < B; b++)
				CHECK(in[b * T] == (int32_t)ld.bos_id);
		}
		sha256_update(&h, in, sizeof(int32_t) * B * T);
		sha256_update(&h, tg, sizeof(int32_t) * B * T);
	}
	CHECKF(epoch_ok, "epochs differ from the reference");
	CHECK(ld.epoch == 3);
	uint8_t d[SHA256_LEN];
	char hex[SHA256_HEX_LEN + 1];
	sha256_final(&h, d);
	sha256_to_hex(d, hex);
	CHECK_STREQ(hex, cJSON_GetObjectItem(ref, "sha256")->valuestring);
	free(in);
	free(tg);
	loader_close(&ld);
	cJSON_Delete(ref);
}

/* Every row starts with BOS, targets are inputs shifted by one, and two
 * loaders with the same seed agree; another seed gives another stream. */
TEST(seeded_invariants_and_determinism)
{
	struct err e;
	const char *paths[2] = {shard_a, shard_b};
	const int T = 24, B = 3;
	struct loader a, b, c;
	CHECK(loader_open(paths, 2, T, B, 7, &a, &e) == 0);
	CHECK(loader_open(paths, 2, T, B, 7, &b, &e) == 0);
	CHECK(loader_open(paths, 2, T, B, 8, &c, &e) == 0);
	int32_t ia[3 * 24], ta[3 * 24], ib[3 * 24], tb[3 * 24], ic[3 * 24], tc[3 * 24];
	int same_ab = 1, same_ac = 1, rows_ok = 1;
	for (int i = 0; i < 300; i++) {
		loader_next(&a, ia, ta);
		loader_next(&b, ib, tb);
		loader_next(&c, ic, tc);
		same_ab &= !memcmp(ia, ib, sizeof ia) && !memcmp(ta, tb, sizeof ta);
		same_ac &= !memcmp(ia, ic, sizeof ia);
		for (int r = 0; r < B; r++) {
			rows_ok &= ia[r * T] == (int32_t)a.bos_id;
			for (int t = 0; t + 1 < T; t++)
				rows_ok &= ta[r * T + t] == ia[r * T + t + 1];
			for (int t = 0; t < T; t++)
				rows_ok &= ia[r * T + t] >= 0 && ia[r * T + t] < (int32_t)a.vocab_size;
		}
	}
	CHECK(same_ab);
	CHECK(!same_ac);
	CHECK(rows_ok);
	CHECK(a.epoch >= 2);
	loader_close(&a);
	loader_close(&b);
	loader_close(&c);
}

TEST(state_resume_continues_the_stream)
{
	struct err e;
	const char *paths[2] = {shard_a, shard_b};
	for (uint64_t seed = 0; seed < 2; seed++) {
		struct loader a, b;
		CHECK(loader_open(paths, 2, 16, 2, seed, &a, &e) == 0);
		CHECK(loader_open(paths, 2, 16, 2, seed, &b, &e) == 0);
		int32_t ia[32], ta[32], ib[32], tb[32];
		for (int i = 0; i < 123; i++)
			loader_next(&a, ia, ta);
		size_t n;
		uint8_t *st = loader_state(&a, &n);
		CHECK(loader_restore(&b, st, n, &e) == 0);
		int same = 1;
		for (int i = 0; i < 800; i++) {
			uint64_t ea = loader_next(&a, ia, ta), eb = loader_next(&b, ib, tb);
			same &= ea == eb && !memcmp(ia, ib, sizeof ia) && !memcmp(ta, tb, sizeof ta);
		}
		CHECK(same);
		CHECK(a.epoch >= 2);
		/* refused: truncated, other T, corrupt id */
		CHECK(loader_restore(&b, st, n - 1, &e) < 0);
		struct loader c;
		CHECK(loader_open(paths, 2, 8, 2, seed, &c, &e) == 0);
		CHECK(loader_restore(&c, st, n, &e) < 0 && strstr(e.msg, "T=16"));
		loader_close(&c);
		st[72] = 0xff;
		st[79] = 0xff;
		CHECK(loader_restore(&b, st, n, &e) < 0 && strstr(e.msg, "offset 72"));
		free(st);
		loader_close(&a);
		loader_close(&b);
	}
}

static void put64le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A state whose position its batch count cannot reach is refused: each
 * batch takes B to B (T + 1) documents from the order. */
TEST(state_position_must_follow_the_batches)
{
	struct err e;
	const char *paths[2] = {shard_a, shard_b};
	struct loader a, b;
	CHECK(loader_open(paths, 2, 16, 2, 7, &a, &e) == 0);
	CHECK(loader_open(paths, 2, 16, 2, 7, &b, &e) == 0);
	int32_t in[32], tg[32];
	for (int i = 0; i < 40; i++)
		loader_next(&a, in, tg);
	size_t n;
	uint8_t *st = loader_state(&a, &n);
	uint8_t *x = malloc(n);
	CHECKF(loader_restore(&b, st, n, &e) == 0, "%s", e.msg);
	struct { size_t off; uint64_t v; const char *want; } bad[] = {
		{40, (uint64_t)1 << 63, "offset 40: epoch 9223372036854775808 is beyond what 40 batches reach"},
		{40, a.epoch + 1, "offset 40"},
		{56, 0, "do not follow from 0 batches"},
		{56, (uint64_t)1 << 62, "offset 56"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		memcpy(x, st, n);
		put64le(x + bad[i].off, bad[i].v);
		CHECKF(loader_restore(&b, x, n, &e) < 0 && strstr(e.msg, bad[i].want), "case %zu: %s", i, e.msg);
	}
	free(x);
	free(st);
	loader_close(&a);
	loader_close(&b);
}

TEST(open_refuses)
{
	struct err e;
	struct loader ld;
	const char *none[1] = {"/nonexistent/shard.bin"};
	CHECK(loader_open(none, 1, 8, 1, 0, &ld, &e) < 0 && e.code == EXIT_SYS);
	const char *one[1] = {shard_a};
	CHECK(loader_open(one, 1, 0, 1, 0, &ld, &e) < 0 && e.code == EXIT_USAGE);
	CHECK(loader_open(one, 0, 8, 1, 0, &ld, &e) < 0);
}

int main(void)
{
	shard_a = xasprintf("%s/loader/a.bin", t_fixtures());
	shard_b = xasprintf("%s/loader/b.bin", t_fixtures());
	RUN(matches_python_reference);
	RUN(seeded_invariants_and_determinism);
	RUN(state_resume_continues_the_stream);
	RUN(state_position_must_follow_the_batches);
	RUN(open_refuses);
	free(shard_a);
	free(shard_b);
	return t_done();
}

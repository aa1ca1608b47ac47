/* test_safetensors.c: lib/safetensors.c against files built byte by byte in
 * Python (tests/fixtures/safetensors/make.py: struct + json, BF16 through
 * PyTorch, F16 through numpy): values of every dtype, the content digest,
 * the writer's exact bytes, and hostile files each refused with a message
 * naming the file and the tensor. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bf16.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/rng.h"
#include "lib/safetensors.h"
#include "t.h"
#include "tfix.h"

static char *fix(const char *name)
{
	return t_fix_path("safetensors", name);
}

static cJSON *expected(void)
{
	return t_fix_json("safetensors", "expected.json");
}

/* Compare every tensor of f with expected.json's "tensors". */
static void check_values(const struct st_file *f, const cJSON *tens)
{
	CHECK(f->n == (size_t)cJSON_GetArraySize(tens));
	for (const cJSON *ent = tens->child; ent; ent = ent->next) {
		const struct st_tensor *t = st_find(f, ent->string);
		CHECKF(t != NULL, "tensor %s missing", ent->string);
		if (!t)
			continue;
		const cJSON *dt = cJSON_GetObjectItem(ent, "dtype");
		CHECK_STREQ(st_dtype_name(t->dtype), dt->valuestring);
		const cJSON *sh = cJSON_GetObjectItem(ent, "shape");
		CHECK(t->ndim == cJSON_GetArraySize(sh));
		int k = 0;
		for (const cJSON *d = sh->child; d; d = d->next, k++)
			CHECK(t->shape[k] == (int64_t)d->valuedouble);
		const cJSON *vals = cJSON_GetObjectItem(ent, "values");
		uint64_t n = st_numel(t);
		CHECK(n == (uint64_t)cJSON_GetArraySize(vals));
		double *v = xmalloc((n + 1) * sizeof *v);
		float *vf = xmalloc((n + 1) * sizeof *vf);
		struct err e;
		int isfloat = dt->valuestring[0] == 'F' || !strcmp(dt->valuestring, "BF16");
		if (isfloat) {
			CHECK(st_to_f64(t, v, &e) == 0);
			CHECK(st_to_f32(t, vf, &e) == 0);
			size_t i = 0;
			for (const cJSON *x = vals->child; x; x = x->next, i++) {
				double want = strtod(x->valuestring, NULL);
				CHECKF(memcmp(&v[i], &want, 8) == 0, "%s[%zu] = %a, want %a", t->name, i,
				       v[i], want);
				CHECKF(vf[i] == (float)want || (vf[i] != vf[i] && want != want),
				       "%s[%zu] f32", t->name, i);
			}
		} else {
			CHECK(st_to_f64(t, v, &e) == -1);
			CHECK(strstr(e.msg, t->name) != NULL);
			size_t i = 0, es = st_dtype_size(t->dtype);
			const unsigned char *p = t->data;
			for (const cJSON *x = vals->child; x; x = x->next, i++) {
				int64_t got = 0;
				switch (t->dtype) {
				case ST_I64: memcpy(&got, p + es * i, 8); break;
				case ST_I32: { int32_t q; memcpy(&q, p + es * i, 4); got = q; break; }
				case ST_U16: { uint16_t q; memcpy(&q, p + es * i, 2); got = q; break; }
				default: got = p[i]; break;
				}
				CHECKF((double)got == x->valuedouble, "%s[%zu] = %lld", t->name, i,
				       (long long)got);
			}
		}
		free(v);
		free(vf);
	}
}

TEST(reads_python_built_file)
{
	cJSON *x = expected();
	CHECK(x != NULL);
	if (!x)
		return;
	struct err e;
	struct st_file f;
	char *p = fix("ref_small.safetensors");
	int rc = st_open(&f, p, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		check_values(&f, cJSON_GetObjectItem(x, "tensors"));
		CHECK(f.n_meta == 2);
		const cJSON *m = cJSON_GetObjectItem(x, "metadata");
		for (size_t i = 0; i < f.n_meta; i++)
			CHECK_STREQ(f.meta_vals[i], cJSON_GetObjectItem(m, f.meta_keys[i])->valuestring);
		char hex[65];
		st_digest(&f, hex);
		CHECK_STREQ(hex, cJSON_GetObjectItem(x, "digest")->valuestring);
		CHECK(st_find(&f, "nope") == NULL);
		st_close(&f);
	}
	free(p);
	cJSON_Delete(x);
}

TEST(digest_ignores_order_layout_padding)
{
	cJSON *x = expected();
	if (!x)
		return;
	struct err e;
	struct st_file f;
	char *p = fix("ref_reordered.safetensors");
	int rc = st_open(&f, p, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		check_values(&f, cJSON_GetObjectItem(x, "tensors"));
		char hex[65];
		st_digest(&f, hex);
		CHECK_STREQ(hex, cJSON_GetObjectItem(x, "digest")->valuestring);
		CHECK(f.n_meta == 0);
		st_close(&f);
	}
	free(p);
	cJSON_Delete(x);
}

/* torch.compile's "_orig_mod." prefix: a file whose every name carries it
 * has the digest of the same tensors without it; a file that mixes keeps
 * its names (and st_compile_prefix refuses it, naming two tensors). */
TEST(digest_of_compiled_names)
{
	cJSON *x = expected();
	if (!x)
		return;
	struct err e;
	struct st_file f;
	char hex[65];
	char *p = fix("ref_compiled.safetensors");
	int rc = st_open(&f, p, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECK(st_compile_prefix(&f, p, &e) == 1);
		st_digest(&f, hex);
		CHECK_STREQ(hex, cJSON_GetObjectItem(x, "compiled_digest")->valuestring);
		CHECK_STREQ(hex, cJSON_GetObjectItem(x, "digest")->valuestring);
		st_close(&f);
	}
	free(p);
	p = fix("ref_mixed.safetensors");
	rc = st_open(&f, p, &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		err_clear(&e);
		CHECK(st_compile_prefix(&f, "mixed.st", &e) == -1 && e.code == EXIT_USAGE);
		CHECKF(strstr(e.msg, "'mixed.st'") && strstr(e.msg, "'_orig_mod.a.f32'") && strstr(e.msg, "mixes"),
		       "%s", e.msg);
		st_digest(&f, hex);
		CHECK_STREQ(hex, cJSON_GetObjectItem(x, "mixed_digest")->valuestring);
		CHECK(strcmp(hex, cJSON_GetObjectItem(x, "digest")->valuestring) != 0);
		st_close(&f);
	}
	free(p);
	p = fix("ref_small.safetensors");
	if (st_open(&f, p, &e) == 0) {
		CHECK(st_compile_prefix(&f, p, &e) == 0);
		st_close(&f);
	}
	free(p);
	/* "_orig_mod.w" beside "w": one parameter twice */
	const char hdr[] = "{\"_orig_mod.w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
			   "\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}";
	char buf[8 + sizeof hdr + 2];
	uint64_t hl = sizeof hdr - 1;
	memcpy(buf, &hl, 8);
	memcpy(buf + 8, hdr, hl);
	buf[8 + hl] = buf[9 + hl] = 0;
	rc = st_open_mem(&f, buf, 10 + hl, "dup.st", &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		CHECK(st_compile_prefix(&f, "dup.st", &e) == -1);
		CHECKF(strstr(e.msg, "'dup.st': tensors '_orig_mod.w' and 'w' are one parameter"), "%s", e.msg);
		st_close(&f);
	}
	cJSON_Delete(x);
}

TEST(open_mem_matches_open)
{
	char *p = fix("ref_small.safetensors");
	char *buf;
	size_t len;
	struct err e;
	CHECK(file_read_all(p, 0, &buf, &len, &e) == 0);
	struct st_file a, b;
	CHECK(st_open(&a, p, &e) == 0);
	CHECK(st_open_mem(&b, buf, len, "mem", &e) == 0);
	char ha[65], hb[65];
	st_digest(&a, ha);
	st_digest(&b, hb);
	CHECK_STREQ(ha, hb);
	CHECK(a.n == b.n && a.data_start == b.data_start);
	st_close(&a);
	st_close(&b);
	/* Every proper prefix is refused (the data runs to the last byte). */
	int refused = 0;
	for (size_t n = 0; n < len; n++) {
		struct st_file f;
		if (st_open_mem(&f, buf, n, "cut.safetensors", &e) == 0) {
			st_close(&f);
			continue;
		}
		refused++;
		if (!strstr(e.msg, "'cut.safetensors'"))
			CHECKF(0, "prefix %zu: %s", n, e.msg);
	}
	CHECKF(refused == (int)len, "%d of %zu prefixes refused", refused, len);
	free(buf);
	free(p);
}

TEST(hostile_files_refused)
{
	cJSON *x = expected();
	if (!x)
		return;
	const cJSON *h = cJSON_GetObjectItem(x, "hostile");
	CHECK(cJSON_GetArraySize(h) >= 15);
	for (const cJSON *c = h->child; c; c = c->next) {
		const char *fn = cJSON_GetObjectItem(c, "file")->valuestring;
		const cJSON *tn = cJSON_GetObjectItem(c, "tensor");
		const char *phrase = cJSON_GetObjectItem(c, "contains")->valuestring;
		char *p = fix(fn);
		struct st_file f;
		struct err e;
		err_clear(&e);
		int rc = st_open(&f, p, &e);
		CHECKF(rc == -1, "%s accepted", fn);
		if (rc == 0) {
			st_close(&f);
		} else {
			CHECKF(e.code == EXIT_USAGE, "%s: code %d", fn, e.code);
			CHECKF(strstr(e.msg, fn) != NULL, "%s: message lacks the file: %s", fn, e.msg);
			CHECKF(strstr(e.msg, phrase) != NULL, "%s: message lacks '%s': %s", fn, phrase, e.msg);
			CHECKF(!strchr(e.msg, '\n'), "%s: message not one line", fn);
			if (cJSON_IsString(tn)) {
				char *q = xasprintf("tensor '%s'", tn->valuestring);
				CHECKF(strstr(e.msg, q) != NULL, "%s: message lacks %s: %s", fn, q, e.msg);
				free(q);
			}
		}
		free(p);
	}
	cJSON_Delete(x);
}

/* A header of n empty U8 tensors. */
static char *many_tensors(size_t n, size_t *len)
{
	size_t cap = 64 + n * 64;
	char *b = xmalloc(cap);
	size_t o = 8;
	b[o++] = '{';
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(b + o, cap - o, "%s\"t%zu\":{\"dtype\":\"U8\",\"shape\":[0],"
				      "\"data_offsets\":[0,0]}", i ? "," : "", i);
	b[o++] = '}';
	uint64_t hl = o - 8;
	for (int i = 0; i < 8; i++)
		b[i] = (char)(hl >> (8 * i));
	*len = o;
	return b;
}

TEST(too_many_tensors)
{
	size_t len;
	struct err e;
	struct st_file f;
	char *b = many_tensors(SAFETENSORS_MAX_TENSORS, &len);
	CHECKF(st_open_mem(&f, b, len, "max.safetensors", &e) == 0, "%s", e.msg);
	CHECK(f.n == SAFETENSORS_MAX_TENSORS);
	st_close(&f);
	free(b);
	b = many_tensors(SAFETENSORS_MAX_TENSORS + 1, &len);
	CHECK(st_open_mem(&f, b, len, "many.safetensors", &e) == -1);
	CHECK(strstr(e.msg, "'many.safetensors'") && strstr(e.msg, "more than 65536 tensors"));
	CHECK(strstr(e.msg, "tensor 't65536'") != NULL);
	free(b);
}

TEST(writer_matches_python_bytes)
{
	float w[6];
	bf16 bb[4];
	double mid = 3.5;
	for (int i = 0; i < 6; i++)
		w[i] = (float)i * 0.25f - 1.0f;
	for (int i = 0; i < 4; i++)
		bb[i] = bf16_from_f32((float)i - 2.0f);
	int64_t s23[2] = {2, 3}, s4[1] = {4};
	char dir[] = "/tmp/supkit-st-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	const char *dump = getenv("SUPKIT_ST_WRITE");  /* for make.py check */
	char *out = dump ? xstrdup(dump) : path_join(dir, "w.safetensors");
	struct st_writer wr;
	struct err e;
	st_writer_init(&wr);
	st_writer_add(&wr, "zeta", ST_F32, 2, s23, w);
	st_writer_add(&wr, "alpha.bf16", ST_BF16, 1, s4, bb);
	st_writer_add(&wr, "mid", ST_F64, 0, NULL, &mid);
	st_writer_meta(&wr, "step", "7");
	st_writer_meta(&wr, "format", "pt");
	CHECKF(st_write(&wr, out, &e) == 0, "%s", e.msg);
	st_writer_release(&wr);
	char *got, *want;
	size_t gl, wl;
	char *wp = fix("written_expected.safetensors");
	CHECK(file_read_all(out, 0, &got, &gl, &e) == 0);
	CHECK(file_read_all(wp, 0, &want, &wl, &e) == 0);
	CHECKF(gl == wl && memcmp(got, want, gl) == 0, "written bytes differ from %s", wp);
	struct st_file f;
	CHECK(st_open(&f, out, &e) == 0);
	cJSON *x = expected();
	char hex[65];
	st_digest(&f, hex);
	if (x)
		CHECK_STREQ(hex, cJSON_GetObjectItem(x, "written_digest")->valuestring);
	double back[6];
	CHECK(st_to_f64(st_find(&f, "zeta"), back, &e) == 0);
	CHECK(back[5] == 0.25);
	st_close(&f);
	cJSON_Delete(x);
	free(got);
	free(want);
	free(wp);

	/* Duplicate names refused, nothing written; a missing folder is a system error. */
	char *out2 = path_join(dir, "dup.safetensors");
	st_writer_init(&wr);
	st_writer_add(&wr, "a", ST_F32, 1, s4, w);
	st_writer_add(&wr, "a", ST_F32, 1, s4, w);
	CHECK(st_write(&wr, out2, &e) == -1 && strstr(e.msg, "'a'"));
	st_writer_release(&wr);
	struct stat sb;
	CHECK(stat(out2, &sb) != 0);
	st_writer_init(&wr);
	st_writer_add(&wr, "a", ST_F32, 1, s4, w);
	CHECK(st_write(&wr, "/nonexistent-dir/x.safetensors", &e) == -1 && e.code == EXIT_SYS);
	st_writer_release(&wr);
	/* An empty file (no tensors) round-trips. */
	st_writer_init(&wr);
	CHECK(st_write(&wr, out2, &e) == 0);
	st_writer_release(&wr);
	CHECK(st_open(&f, out2, &e) == 0 && f.n == 0);
	st_close(&f);
	unlink(out2);
	free(out2);
	if (!dump)
		unlink(out);
	free(out);
	rmdir(dir);
}

/* A file of one empty U8 tensor per name (JSON text, inserted as is) and
 * the given __metadata__ text (NULL: none). */
static char *names_file(const char *const *names, int n, const char *meta, size_t *len)
{
	char *b = xmalloc(4096);
	size_t o = 8;
	o += (size_t)snprintf(b + o, 4096 - o, "{");
	if (meta)
		o += (size_t)snprintf(b + o, 4096 - o, "\"__metadata__\": %s%s", meta, n ? ", " : "");
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(b + o, 4096 - o, "%s\"%s\": {\"dtype\": \"U8\", \"shape\": [0], "
				      "\"data_offsets\": [0, 0]}", i ? ", " : "", names[i]);
	o += (size_t)snprintf(b + o, 4096 - o, "}");
	for (int i = 0; i < 8; i++)
		b[i] = (char)((uint64_t)(o - 8) >> (8 * i));
	*len = o;
	return b;
}

/* Names and metadata: UTF-8 in every spelling JSON allows is read back
 * byte for byte (escapes that look like \u0000 or a closing quote
 * included); invalid UTF-8 and NUL are refused with the string's offset
 * (the fixtures of hostile_files_refused have the whole set). */
TEST(names_utf8)
{
	static const char *const ok[] = {
		"w\\u00e9", "w\xc3\xa9", "\\ud83d\\ude00", "\xf0\x9f\x98\x80", "a\\\\u0000",
		"q\\\"{[\\\"", "\xef\xbf\xbd",
	};
	static const char *const want[] = {
		"w\xc3\xa9", "w\xc3\xa9x", "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80y", "a\\u0000",
		"q\"{[\"", "\xef\xbf\xbd",
	};
	size_t len;
	struct err e;
	struct st_file f;
	/* Two spellings of one name are a duplicate: give the second of each pair a suffix. */
	const char *names[7] = {ok[0], "w\xc3\xa9x", ok[2], "\xf0\x9f\x98\x80y", ok[4], ok[5], ok[6]};
	char *b = names_file(names, 7, "{\"arm\": \"\xc3\xa9t\xc3\xa9\", \"k\\u00e9\": \"a\\\\u0000b\"}", &len);
	int rc = st_open_mem(&f, b, len, "names.safetensors", &e);
	CHECKF(rc == 0, "%s", e.msg);
	if (rc == 0) {
		for (int i = 0; i < 7; i++)
			CHECKF(st_find(&f, want[i]) != NULL, "name %d ('%s') not read back", i, want[i]);
		CHECK(f.n_meta == 2);
		CHECK_STREQ(f.meta_vals[0], "\xc3\xa9t\xc3\xa9");
		CHECK_STREQ(f.meta_keys[1], "k\xc3\xa9");
		CHECK_STREQ(f.meta_vals[1], "a\\u0000b");
		st_close(&f);
	}
	free(b);
	/* After a name holding an escaped quote and brackets, a bad metadata value is still one. */
	const char *q[1] = {ok[5]};
	b = names_file(q, 1, "{\"arm\": \"x\xff\"}", &len);
	CHECK(st_open_mem(&f, b, len, "bad.safetensors", &e) == -1);
	char want_msg[160];
	snprintf(want_msg, sizeof want_msg, "'bad.safetensors': __metadata__ value at byte %zu of the "
		 "header is not valid UTF-8", (size_t)(strstr(b + 8, "\"x\xff") - (b + 8)));
	CHECKF(strstr(e.msg, want_msg), "%s (want %s)", e.msg, want_msg);
	free(b);
	const char *nul[2] = {"a", "b\\u0000"};
	b = names_file(nul, 2, NULL, &len);
	CHECK(st_open_mem(&f, b, len, "nul.safetensors", &e) == -1);
	snprintf(want_msg, sizeof want_msg, "'nul.safetensors': tensor name at byte %zu of the header "
		 "holds a NUL character", (size_t)(strstr(b + 8, "\"b\\u") - (b + 8)));
	CHECKF(strstr(e.msg, want_msg), "%s (want %s)", e.msg, want_msg);
	free(b);
	/* Cut short inside a sequence: the last byte of a name is a lead byte. */
	const char *cut[1] = {"ab\xe2\x82"};
	b = names_file(cut, 1, NULL, &len);
	CHECK(st_open_mem(&f, b, len, "cut.safetensors", &e) == -1);
	CHECKF(strstr(e.msg, "tensor name at byte 1 of the header is not valid UTF-8"), "%s", e.msg);
	free(b);
}

/* Random byte flips in the header: every result is accepted or refused with a
 * message naming the file, never a crash (run under SAN=1 too). */
TEST(mutations_never_crash)
{
	char *p = fix("ref_small.safetensors");
	char *buf;
	size_t len;
	struct err e;
	CHECK(file_read_all(p, 0, &buf, &len, &e) == 0);
	struct rng r;
	rng_seed(&r, 9);
	size_t hl = 8 + (unsigned char)buf[0] + 256u * (unsigned char)buf[1];
	int accepted = 0;
	for (int it = 0; it < 3000; it++) {
		char *m = xmalloc(len);
		memcpy(m, buf, len);
		int flips = 1 + (int)(rng_u64(&r) % 3);
		for (int k = 0; k < flips; k++)
			m[rng_u64(&r) % hl] = (char)(rng_u64(&r) & 0xff);
		struct st_file f;
		if (st_open_mem(&f, m, len, "mut.safetensors", &e) == 0) {
			accepted++;
			char hex[65];
			st_digest(&f, hex);
			for (size_t i = 0; i < f.n; i++)
				CHECK(f.t[i].end <= len - f.data_start);
			st_close(&f);
		} else if (!strstr(e.msg, "'mut.safetensors")) {
			CHECKF(0, "message lacks the file: %s", e.msg);
		}
		free(m);
	}
	printf("  %d of 3000 mutated files accepted\n", accepted);
	free(buf);
	free(p);
}

int main(void)
{
	RUN(reads_python_built_file);
	RUN(digest_ignores_order_layout_padding);
	RUN(digest_of_compiled_names);
	RUN(open_mem_matches_open);
	RUN(hostile_files_refused);
	RUN(too_many_tensors);
	RUN(writer_matches_python_bytes);
	RUN(mutations_never_crash);
	RUN(names_utf8);
	return t_done();
}

/* safetensors.c: the safetensors reader, writer and content digest
 * (contract in safetensors.h; format: supkit-formats(5), CHECKPOINTS, and
 * the safetensors format description by Hugging Face).
 *
 * Reader: the file is mapped read-only (mmap), the header is parsed with
 * cJSON and validated before any tensor is handed out: header length within
 * SAFETENSORS_MAX_HEADER and the file, header a JSON object whose first byte
 * is '{', every entry an object with a known dtype, a shape of at most
 * SAFETENSORS_MAX_DIMS non-negative integers, data_offsets [begin, end] with
 * begin <= end <= data length and end - begin == numel x dtype size, no two
 * non-empty spans overlapping, no duplicate names, at most
 * SAFETENSORS_MAX_TENSORS tensors, __metadata__ (if present) an object of
 * strings, every string of the header valid UTF-8 without NUL (raw or
 * \u0000). Every error names the file and, where there is one, the tensor
 * (or the offending string's byte offset in the header).
 *
 * Left out: gaps between spans and bytes after the last span are accepted
 * (the reference refuses them; they are harmless here and the digest ignores
 * them); dtypes beyond the eight of the header (BOOL, I8, U32, F8...) are
 * refused as unknown. Values are read in the host's byte order, which must be
 * little-endian (as on every machine supkit targets).
 */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include "bf16.h"
#include "derivation.h"
#include "fileio.h"
#include "json.h"
#include "sha256.h"
#include "utf8.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "supkit's safetensors reader assumes a little-endian host"
#endif

static const char *const dtype_names[ST_NDTYPES] = {
	"F64", "F32", "BF16", "F16", "I64", "I32", "U16", "U8",
};
static const size_t dtype_sizes[ST_NDTYPES] = { 8, 4, 2, 2, 8, 4, 2, 1 };

const char *st_dtype_name(enum st_dtype d)
{
	return (unsigned)d < ST_NDTYPES ? dtype_names[d] : "?";
}

int st_dtype_from_name(const char *s, enum st_dtype *out)
{
	for (int i = 0; i < ST_NDTYPES; i++) {
		if (!strcmp(s, dtype_names[i])) {
			*out = (enum st_dtype)i;
			return 0;
		}
	}
	return -1;
}

size_t st_dtype_size(enum st_dtype d)
{
	return (unsigned)d < ST_NDTYPES ? dtype_sizes[d] : 0;
}

uint64_t st_numel(const struct st_tensor *t)
{
	uint64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= (uint64_t)t->shape[i];
	return n;
}

/* ---- reader ---- */

static void file_clear(struct st_file *f)
{
	memset(f, 0, sizeof *f);
}

void st_close(struct st_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->t[i].name);
	free(f->t);
	for (size_t i = 0; i < f->n_meta; i++) {
		free(f->meta_keys[i]);
		free(f->meta_vals[i]);
	}
	free(f->meta_keys);
	free(f->meta_vals);
	if (f->map && f->map_len)
		munmap(f->map, f->map_len);
	file_clear(f);
}

/* A JSON number that is an exact integer in [0, 2^53]; 0 or -1. */
static int json_u53(const cJSON *j, uint64_t *out)
{
	if (!cJSON_IsNumber(j))
		return -1;
	double v = j->valuedouble;
	if (!(v >= 0) || v > 9007199254740992.0 || v != floor(v))
		return -1;
	*out = (uint64_t)v;
	return 0;
}

/* Sort keys: a tensor's name and span with its index (thread-safe, no globals). */
struct st_key {
	const char *name;
	uint64_t begin, end;
	size_t i;
};

static int cmp_key_name(const void *a, const void *b)
{
	return strcmp(((const struct st_key *)a)->name, ((const struct st_key *)b)->name);
}

static int cmp_key_begin(const void *a, const void *b)
{
	const struct st_key *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static struct st_key *keys_make(const struct st_tensor *t, size_t n)
{
	struct st_key *k = xmalloc((n ? n : 1) * sizeof *k);
	for (size_t i = 0; i < n; i++)
		k[i] = (struct st_key){ t[i].name, t[i].begin, t[i].end, i };
	return k;
}

/* Parse one header entry into t; name is the entry's key. */
static int entry_parse(const cJSON *ent, struct st_tensor *t, uint64_t data_len, const char *fname,
		       struct err *e)
{
	const char *name = ent->string;
	if (!cJSON_IsObject(ent))
		return err_set(e, EXIT_USAGE, "'%s': tensor '%s': entry is not an object", fname, name);
	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(ent, "dtype");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(ent, "shape");
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(ent, "data_offsets");
	if (!cJSON_IsString(dt))
		return err_set(e, EXIT_USAGE, "'%s': tensor '%s': missing or non-string \"dtype\"", fname, name);
	if (st_dtype_from_name(dt->valuestring, &t->dtype) < 0)
		return err_set(e, EXIT_USAGE, "'%s': tensor '%s': unknown dtype '%.32s'", fname, name,
			       dt->valuestring);
	if (!cJSON_IsArray(sh))
		return err_set(e, EXIT_USAGE, "'%s': tensor '%s': missing or non-array \"shape\"", fname, name);
	int nd = cJSON_GetArraySize(sh);
	if (nd > SAFETENSORS_MAX_DIMS)
		return err_set(e, EXIT_USAGE, "'%s': tensor '%s': %d dimensions (at most %d)", fname, name,
			       nd, SAFETENSORS_MAX_DIMS);
	t->ndim = nd;
	uint64_t numel = 1;
	int overflow = 0;
	int k = 0;
	for (const cJSON *d = sh->child; d; d = d->next, k++) {
		uint64_t v;
		if (json_u53(d, &v) < 0)
			return err_set(e, EXIT_USAGE,
				       "'%s': tensor '%s': shape dimension %d is not a non-negative integer",
				       fname, name, k);
		t->shape[k] = (int64_t)v;
		if (v && numel > UINT64_MAX / v)
			overflow = 1;
		else
			numel *= v;
	}
	if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
		return err_set(e, EXIT_USAGE, "'%s': tensor '%s': \"data_offsets\" is not [begin, end]", fname,
			       name);
	if (json_u53(off->child, &t->begin) < 0 || json_u53(off->child->next, &t->end) < 0)
		return err_set(e, EXIT_USAGE,
			       "'%s': tensor '%s': data_offsets are not non-negative integers", fname, name);
	if (t->begin > t->end)
		return err_set(e, EXIT_USAGE, "'%s': tensor '%s': data_offsets [%llu, %llu] run backwards",
			       fname, name, (unsigned long long)t->begin, (unsigned long long)t->end);
	if (t->end > data_len)
		return err_set(e, EXIT_USAGE,
			       "'%s': tensor '%s': data_offsets [%llu, %llu] beyond the data (%llu bytes; "
			       "file truncated?)",
			       fname, name, (unsigned long long)t->begin, (unsigned long long)t->end,
			       (unsigned long long)data_len);
	size_t es = st_dtype_size(t->dtype);
	if (overflow || (numel && numel > UINT64_MAX / es) || numel * es != t->end - t->begin)
		return err_set(e, EXIT_USAGE,
			       "'%s': tensor '%s': shape x %s size does not match its span of %llu bytes",
			       fname, name, dtype_names[t->dtype], (unsigned long long)(t->end - t->begin));
	return 0;
}

/* Every string of the header h (len bytes of well-formed JSON, parsed as
 * root) is valid UTF-8 (RFC 3629) and holds no NUL: cJSON copies invalid
 * bytes as they are (into --json output, then not UTF-8) and decodes \u0000
 * into a NUL that cuts the name short ("a\u0000evil" would read, and
 * digest, as "a"). Escapes other than \u0000 are plain ASCII here, and
 * cJSON refuses unpaired surrogates. The error names the file, the
 * string's role and its byte offset in the header (at its opening quote). */
static int header_strings_check(const unsigned char *s, size_t len, const cJSON *root,
				const char *fname, struct err *e)
{
	int depth = 0, key = 0;
	char t2 = 0;                   /* '{' or '[': the container at depth 2 */
	const cJSON *member = NULL;    /* the top-level member being read */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];
		if (c == '{' || c == '[') {
			if (++depth == 2)
				t2 = (char)c;
			key = c == '{';
		} else if (c == '}' || c == ']') {
			if (--depth == 0)
				break;
		} else if (c == ',') {
			key = depth == 1 || (depth == 2 && t2 == '{');
		} else if (c == ':') {
			key = 0;
		} else if (c == '"') {
			size_t start = i++;
			const char *why = NULL;
			while (i < len && s[i] != '"' && !why) {
				if (s[i] == '\\') {
					if (i + 5 < len && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4))
						why = "holds a NUL character (\\u0000)";
					i += 2;
				} else if (s[i] == 0) {
					why = "holds a NUL byte";
				} else if (s[i] < 0x80) {
					i++;
				} else {
					size_t k = utf8_seq(s + i, len - i);
					if (!k)
						why = "is not valid UTF-8";
					i += k;
				}
			}
			int is_key = key && depth <= 2;
			if (depth == 1 && is_key)
				member = member ? member->next : root->child;
			key = 0;
			if (!why)
				continue;
			if (depth == 1 && is_key)
				return err_set(e, EXIT_USAGE, "'%s': tensor name at byte %zu of the header %s",
					       fname, start, why);
			if (member && !strcmp(member->string, "__metadata__"))
				return err_set(e, EXIT_USAGE, "'%s': __metadata__ %s at byte %zu of the header %s",
					       fname, depth == 2 ? (is_key ? "key" : "value") : "string", start,
					       why);
			return err_set(e, EXIT_USAGE, "'%s': tensor '%s': string at byte %zu of the header %s",
				       fname, member ? member->string : "?", start, why);
		}
	}
	return 0;
}

/* What a file with an impossible header length is when it is a PyTorch
 * pickle or a zip archive (by their magic bytes): -1 with e saying so, else
 * 0. torch.save writes a zip whose first member is <name>/data.pkl, or,
 * before PyTorch 1.6 (and with _use_new_zipfile_serialization=False), a
 * bare pickle: protocol 2 or later opens with 0x80 and the protocol. */
static int not_safetensors(const unsigned char *p, size_t n, const char *fname, struct err *e)
{
	static const char torch_msg[] = "this is a PyTorch pickle, not safetensors: save with "
					"safetensors.torch.save_file";
	if (n >= 4 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5)
		return err_set(e, EXIT_USAGE, "'%s': %s", fname, torch_msg);
	if (n >= 4 && p[0] == 'P' && p[1] == 'K' &&
	    ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6))) {
		size_t nl = n >= 30 ? (size_t)p[26] | (size_t)p[27] << 8 : 0;
		static const char pkl[] = "data.pkl";
		if (p[2] == 3 && nl >= sizeof pkl - 1 && 30 + nl <= n &&
		    !memcmp(p + 30 + nl - (sizeof pkl - 1), pkl, sizeof pkl - 1))
			return err_set(e, EXIT_USAGE, "'%s': %s", fname, torch_msg);
		return err_set(e, EXIT_USAGE, "'%s': a zip archive, not a safetensors file", fname);
	}
	return 0;
}

/* Validate and index the mapped bytes f->map[0..map_len). */
static int file_parse(struct st_file *f, const char *fname, struct err *e)
{
	const unsigned char *p = f->map;
	if (f->map_len < 8)
		return err_set(e, EXIT_USAGE, "'%s': too short for a safetensors file (%zu bytes)", fname,
			       f->map_len);
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = (hlen << 8) | p[i];
	if ((hlen > SAFETENSORS_MAX_HEADER || hlen > f->map_len - 8) &&
	    not_safetensors(p, f->map_len, fname, e) < 0)
		return -1;
	if (hlen > SAFETENSORS_MAX_HEADER)
		return err_set(e, EXIT_USAGE, "'%s': header length %llu exceeds the limit of %u bytes", fname,
			       (unsigned long long)hlen, SAFETENSORS_MAX_HEADER);
	if (hlen > f->map_len - 8)
		return err_set(e, EXIT_USAGE, "'%s': header length %llu runs past the end of the file "
			       "(%zu bytes)", fname, (unsigned long long)hlen, f->map_len);
	if (hlen < 2 || p[8] != '{')
		return err_set(e, EXIT_USAGE, "'%s': header is not a JSON object", fname);
	f->data_start = 8 + hlen;
	uint64_t data_len = f->map_len - f->data_start;

	char *name_hdr = xasprintf("%s (header)", fname);
	cJSON *h = json_parse((const char *)p + 8, hlen, name_hdr, e);
	free(name_hdr);
	if (!h)
		return -1;
	int rc = -1;
	struct st_key *idx = NULL;
	if (!cJSON_IsObject(h)) {
		err_set(e, EXIT_USAGE, "'%s': header is not a JSON object", fname);
		goto out;
	}
	if (header_strings_check(p + 8, hlen, h, fname, e) < 0)
		goto out;
	size_t n = 0;
	int have_meta = 0;
	for (const cJSON *c = h->child; c; c = c->next) {
		if (!strcmp(c->string, "__metadata__")) {
			if (have_meta++) {
				err_set(e, EXIT_USAGE, "'%s': __metadata__ appears twice", fname);
				goto out;
			}
			continue;
		}
		if (++n > SAFETENSORS_MAX_TENSORS) {
			err_set(e, EXIT_USAGE, "'%s': more than %d tensors (at tensor '%.200s')", fname,
				SAFETENSORS_MAX_TENSORS, c->string);
			goto out;
		}
	}
	f->t = xcalloc(n ? n : 1, sizeof *f->t);
	for (const cJSON *c = h->child; c; c = c->next) {
		if (!strcmp(c->string, "__metadata__")) {
			if (!cJSON_IsObject(c)) {
				err_set(e, EXIT_USAGE, "'%s': __metadata__ is not an object", fname);
				goto out;
			}
			size_t m = (size_t)cJSON_GetArraySize(c);
			f->meta_keys = xcalloc(m ? m : 1, sizeof *f->meta_keys);
			f->meta_vals = xcalloc(m ? m : 1, sizeof *f->meta_vals);
			for (const cJSON *kv = c->child; kv; kv = kv->next) {
				if (!cJSON_IsString(kv)) {
					err_set(e, EXIT_USAGE, "'%s': __metadata__ value '%.200s' is not a string",
						fname, kv->string);
					goto out;
				}
				f->meta_keys[f->n_meta] = xstrdup(kv->string);
				f->meta_vals[f->n_meta] = xstrdup(kv->valuestring);
				f->n_meta++;
			}
			continue;
		}
		struct st_tensor *t = &f->t[f->n];
		if (entry_parse(c, t, data_len, fname, e) < 0)
			goto out;
		t->name = xstrdup(c->string);
		t->data = p + f->data_start + t->begin;
		f->n++;
	}
	/* Duplicate names, then overlapping spans, through sorted index arrays. */
	idx = keys_make(f->t, n);
	qsort(idx, n, sizeof *idx, cmp_key_name);
	for (size_t i = 1; i < n; i++) {
		if (!strcmp(idx[i].name, idx[i - 1].name)) {
			err_set(e, EXIT_USAGE, "'%s': tensor '%s' appears twice in the header", fname,
				idx[i].name);
			goto out;
		}
	}
	qsort(idx, n, sizeof *idx, cmp_key_begin);
	const struct st_tensor *prev = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct st_tensor *t = &f->t[idx[i].i];
		if (t->begin == t->end)
			continue;
		if (prev && t->begin < prev->end) {
			err_set(e, EXIT_USAGE,
				"'%s': tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' [%llu, %llu]",
				fname, t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
				prev->name, (unsigned long long)prev->begin, (unsigned long long)prev->end);
			goto out;
		}
		prev = t;
	}
	rc = 0;
out:
	free(idx);
	cJSON_Delete(h);
	return rc;
}

int st_open(struct st_file *f, const char *path, struct err *e)
{
	file_clear(f);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, EXIT_SYS, "cannot open '%s'", path);
	int rc = st_open_fd(f, fd, path, e);
	close(fd);
	if (rc == 0)
		deriv_log_file(path);
	return rc;
}

int st_open_fd(struct st_file *f, int fd, const char *name, struct err *e)
{
	file_clear(f);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(e, EXIT_SYS, "cannot stat '%s'", name);
	if (!S_ISREG(st.st_mode))
		return err_set(e, EXIT_USAGE, "'%s': not a regular file", name);
	if (st.st_size < 8)
		return err_set(e, EXIT_USAGE, "'%s': too short for a safetensors file (%lld bytes)", name,
			       (long long)st.st_size);
	if ((uint64_t)st.st_size > SIZE_MAX)
		return err_set(e, EXIT_SYS, "'%s': too large to map", name);
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return err_errno(e, EXIT_SYS, "cannot map '%s'", name);
	f->map = m;
	f->map_len = (size_t)st.st_size;
	if (file_parse(f, name, e) < 0) {
		st_close(f);
		return -1;
	}
	return 0;
}

int st_open_mem(struct st_file *f, const void *buf, size_t len, const char *name, struct err *e)
{
	file_clear(f);
	if (len < 8)
		return err_set(e, EXIT_USAGE, "'%s': too short for a safetensors file (%zu bytes)", name, len);
	/* An anonymous mapping, so st_close releases both kinds the same way. */
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return err_errno(e, EXIT_SYS, "cannot allocate %zu bytes for '%s'", len, name);
	memcpy(m, buf, len);
	f->map = m;
	f->map_len = len;
	if (file_parse(f, name, e) < 0) {
		st_close(f);
		return -1;
	}
	return 0;
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->t[i].name, name))
			return &f->t[i];
	return NULL;
}

/* IEEE binary16 to double (subnormals, infinities and NaN included). */
static double f16_to_f64(uint16_t h)
{
	int s = h >> 15, ex = (h >> 10) & 0x1f, man = h & 0x3ff;
	double v;
	if (ex == 0)
		v = ldexp((double)man, -24);
	else if (ex == 31)
		v = man ? NAN : INFINITY;
	else
		v = ldexp((double)(man | 0x400), ex - 25);
	return s ? -v : v;
}

static int not_float(const struct st_tensor *t, struct err *e)
{
	return err_set(e, EXIT_USAGE, "tensor '%s': dtype %s is not a float type", t->name,
		       st_dtype_name(t->dtype));
}

/* Element i of float data p of dtype d, as a double (exact for every
 * float dtype: binary16, bfloat16 and binary32 all fit binary64). */
static inline double st_elem(enum st_dtype d, const unsigned char *p, uint64_t i)
{
	uint16_t h;
	float f;
	double v;
	switch (d) {
	case ST_F64:
		memcpy(&v, p + 8 * i, 8);
		return v;
	case ST_F32:
		memcpy(&f, p + 4 * i, 4);
		return f;
	case ST_BF16:
		memcpy(&h, p + 2 * i, 2);
		return bf16_to_f32(h);
	default:   /* ST_F16 */
		memcpy(&h, p + 2 * i, 2);
		return f16_to_f64(h);
	}
}

static int is_float(enum st_dtype d)
{
	return d == ST_F64 || d == ST_F32 || d == ST_BF16 || d == ST_F16;
}

int st_to_f64(const struct st_tensor *t, double *out, struct err *e)
{
	uint64_t n = st_numel(t);
	if (!is_float(t->dtype))
		return not_float(t, e);
	if (t->dtype == ST_F64) {
		if (n)
			memcpy(out, t->data, n * 8);
		return 0;
	}
	for (uint64_t i = 0; i < n; i++)
		out[i] = st_elem(t->dtype, t->data, i);
	return 0;
}

int st_to_f32(const struct st_tensor *t, float *out, struct err *e)
{
	uint64_t n = st_numel(t);
	if (!is_float(t->dtype))
		return not_float(t, e);
	if (t->dtype == ST_F32) {
		if (n)
			memcpy(out, t->data, n * 4);
		return 0;
	}
	/* one rounding (F64) or none (BF16, F16: they fit binary32) */
	for (uint64_t i = 0; i < n; i++)
		out[i] = (float)st_elem(t->dtype, t->data, i);
	return 0;
}

/* ---- writer ---- */

void st_writer_init(struct st_writer *w)
{
	memset(w, 0, sizeof *w);
}

void st_writer_add(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim,
		   const int64_t *shape, const void *data)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 16;
		w->t = xrealloc(w->t, w->cap * sizeof *w->t);
	}
	struct st_tensor *t = &w->t[w->n++];
	memset(t, 0, sizeof *t);
	t->name = xstrdup(name);
	t->dtype = dtype;
	t->ndim = ndim;
	for (int i = 0; i < ndim && i < SAFETENSORS_MAX_DIMS; i++)
		t->shape[i] = shape[i];
	t->data = data;
}

void st_writer_meta(struct st_writer *w, const char *key, const char *val)
{
	w->meta_keys = xrealloc(w->meta_keys, (w->n_meta + 1) * sizeof *w->meta_keys);
	w->meta_vals = xrealloc(w->meta_vals, (w->n_meta + 1) * sizeof *w->meta_vals);
	w->meta_keys[w->n_meta] = xstrdup(key);
	w->meta_vals[w->n_meta] = xstrdup(val);
	w->n_meta++;
}

void st_writer_release(struct st_writer *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->t[i].name);
	free(w->t);
	for (size_t i = 0; i < w->n_meta; i++) {
		free(w->meta_keys[i]);
		free(w->meta_vals[i]);
	}
	free(w->meta_keys);
	free(w->meta_vals);
	memset(w, 0, sizeof *w);
}

static int cmp_tensor_name(const void *a, const void *b)
{
	return strcmp(((const struct st_tensor *)a)->name, ((const struct st_tensor *)b)->name);
}

int st_write(struct st_writer *w, const char *path, struct err *e)
{
	if (w->n > SAFETENSORS_MAX_TENSORS)
		return err_set(e, EXIT_USAGE, "'%s': %zu tensors (at most %d)", path, w->n,
			       SAFETENSORS_MAX_TENSORS);
	if (w->n)
		qsort(w->t, w->n, sizeof *w->t, cmp_tensor_name);
	cJSON *h = cJSON_CreateObject();
	uint64_t off = 0;
	for (size_t i = 0; i < w->n; i++) {
		struct st_tensor *t = &w->t[i];
		if (i && !strcmp(t->name, w->t[i - 1].name)) {
			cJSON_Delete(h);
			return err_set(e, EXIT_USAGE, "'%s': tensor '%s' added twice", path, t->name);
		}
		if (!strcmp(t->name, "__metadata__") || (unsigned)t->dtype >= ST_NDTYPES || t->ndim < 0 ||
		    t->ndim > SAFETENSORS_MAX_DIMS) {
			cJSON_Delete(h);
			return err_set(e, EXIT_USAGE, "'%s': tensor '%s': bad name, dtype or rank", path,
				       t->name);
		}
		for (int k = 0; k < t->ndim; k++) {
			if (t->shape[k] < 0) {
				cJSON_Delete(h);
				return err_set(e, EXIT_USAGE, "'%s': tensor '%s': negative dimension", path,
					       t->name);
			}
		}
		uint64_t bytes = st_numel(t) * st_dtype_size(t->dtype);
		if (bytes && !t->data) {
			cJSON_Delete(h);
			return err_set(e, EXIT_USAGE, "'%s': tensor '%s': no data", path, t->name);
		}
		t->begin = off;
		t->end = off + bytes;
		off = t->end;
		cJSON *ent = cJSON_AddObjectToObject(h, t->name);
		cJSON_AddStringToObject(ent, "dtype", dtype_names[t->dtype]);
		cJSON *sh = cJSON_AddArrayToObject(ent, "shape");
		for (int k = 0; k < t->ndim; k++)
			cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t->shape[k]));
		cJSON *of = cJSON_AddArrayToObject(ent, "data_offsets");
		cJSON_AddItemToArray(of, cJSON_CreateNumber((double)t->begin));
		cJSON_AddItemToArray(of, cJSON_CreateNumber((double)t->end));
	}
	if (w->n_meta) {
		cJSON *m = cJSON_AddObjectToObject(h, "__metadata__");
		for (size_t i = 0; i < w->n_meta; i++) {
			cJSON_DeleteItemFromObjectCaseSensitive(m, w->meta_keys[i]); /* last one wins */
			cJSON_AddStringToObject(m, w->meta_keys[i], w->meta_vals[i]);
		}
	}
	char *txt = json_print(h, 0);
	cJSON_Delete(h);
	size_t tl = strlen(txt);
	size_t hl = (tl + 7) & ~(size_t)7;   /* pad with spaces to a multiple of 8 */
	unsigned char len8[8];
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)hl >> (8 * i));
	struct atomic_file af;
	if (atomic_open(&af, path, e) < 0) {
		free(txt);
		return -1;
	}
	int bad = fwrite(len8, 1, 8, af.fp) != 8 || fwrite(txt, 1, tl, af.fp) != tl;
	free(txt);
	for (size_t i = tl; i < hl && !bad; i++)
		bad = fputc(' ', af.fp) == EOF;
	for (size_t i = 0; i < w->n && !bad; i++) {
		size_t bytes = (size_t)(w->t[i].end - w->t[i].begin);
		if (bytes)
			bad = fwrite(w->t[i].data, 1, bytes, af.fp) != bytes;
	}
	if (bad) {
		err_errno(e, EXIT_SYS, "cannot write '%s'", path);
		atomic_abort(&af);
		return -1;
	}
	return atomic_commit(&af, e);
}

/* ---- digest ---- */

static void put_u64(struct sha256 *s, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	sha256_update(s, b, 8);
}

static int has_compile_prefix(const char *name)
{
	return !strncmp(name, ST_COMPILE_PREFIX, sizeof ST_COMPILE_PREFIX - 1);
}

static int cmp_name_key(const void *k, const void *x)
{
	return strcmp((const char *)k, ((const struct st_key *)x)->name);
}

int st_compile_prefix(const struct st_file *f, const char *fname, struct err *e)
{
	const size_t pl = sizeof ST_COMPILE_PREFIX - 1;
	const char *with = NULL, *without = NULL;
	for (size_t i = 0; i < f->n; i++) {
		if (has_compile_prefix(f->t[i].name))
			with = with ? with : f->t[i].name;
		else
			without = without ? without : f->t[i].name;
	}
	if (!with)
		return 0;
	if (!without)
		return 1;
	/* a prefixed name whose plain form is in the file too */
	struct st_key *idx = keys_make(f->t, f->n);
	qsort(idx, f->n, sizeof *idx, cmp_key_name);
	const char *dup = NULL;
	for (size_t i = 0; i < f->n && !dup; i++)
		if (has_compile_prefix(f->t[i].name) &&
		    bsearch(f->t[i].name + pl, idx, f->n, sizeof *idx, cmp_name_key))
			dup = f->t[i].name;
	free(idx);
	if (dup)
		return err_set(e, EXIT_USAGE, "'%s': tensors '%s' and '%s' are one parameter once torch.compile's '"
			       ST_COMPILE_PREFIX "' prefix is removed", fname, dup, dup + pl);
	return err_set(e, EXIT_USAGE, "'%s': tensor '%s' has torch.compile's '" ST_COMPILE_PREFIX "' prefix but "
		       "'%s' has not: the file mixes a compiled model's names with plain ones", fname, with, without);
}

void st_digest(const struct st_file *f, char *hex)
{
	size_t n = f->n;
	struct st_key *idx = keys_make(f->t, n);
	qsort(idx, n, sizeof *idx, cmp_key_name);
	struct err pe;
	size_t skip = st_compile_prefix(f, "", &pe) == 1 ? sizeof ST_COMPILE_PREFIX - 1 : 0;
	struct sha256 s;
	sha256_init(&s);
	for (size_t i = 0; i < n; i++) {
		const struct st_tensor *t = &f->t[idx[i].i];
		const char *dn = st_dtype_name(t->dtype);
		sha256_update(&s, t->name + skip, strlen(t->name + skip) + 1);
		sha256_update(&s, dn, strlen(dn) + 1);
		put_u64(&s, (uint64_t)t->ndim);
		for (int k = 0; k < t->ndim; k++)
			put_u64(&s, (uint64_t)t->shape[k]);
		uint64_t bytes = t->end - t->begin;
		put_u64(&s, bytes);
		if (bytes)
			sha256_update(&s, t->data, (size_t)bytes);
	}
	uint8_t d[SHA256_LEN];
	sha256_final(&s, d);
	sha256_to_hex(d, hex);
	free(idx);
}

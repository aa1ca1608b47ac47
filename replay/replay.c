/* replay.c: the diffs-file runner and maker of supkit replay (see replay.h).
 *
 * Implements: the shape check of a diffs file (supkit-formats(5)), replaying each
 * run (udiff_parse + udiff_apply + SHA-256), the JSON report, writing the
 * matching files atomically, and the inverse (replay_make_diffs, through
 * mkdiff). Leaves out: reading files (the caller passes bytes), printing.
 * Reference: supkit-replay(1); supkit-formats(5), DIFFS FILES.
 */
#include "replay/replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "replay/mkdiff.h"
#include "replay/udiff.h"

int replay_name_safe(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > REPLAY_MAX_NAME || !strcmp(s, ".") || strstr(s, "..") || strchr(s, '/'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return 0;
	}
	return 1;
}

char *replay_name_quote(const char *s)
{
	size_t n = strlen(s);
	if (n > 4 * REPLAY_MAX_NAME)
		n = 4 * REPLAY_MAX_NAME; /* long enough to recognise */
	char *q = xmalloc(4 * n + 4);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\')
			o += (size_t)sprintf(q + o, "\\x%02x", c);
		else
			q[o++] = (char)c;
	}
	if (n < strlen(s)) {
		memcpy(q + o, "...", 3);
		o += 3;
	}
	q[o] = '\0';
	return q;
}

void replay_report_release(struct replay_report *rep)
{
	for (size_t i = 0; i < rep->n_runs; i++) {
		free(rep->runs[i].name);
		free(rep->runs[i].target);
		free(rep->runs[i].error);
		free(rep->runs[i].data);
	}
	free(rep->runs);
	for (size_t i = 0; i < rep->n_extra_keys; i++)
		free(rep->extra_keys[i]);
	free(rep->extra_keys);
	memset(rep, 0, sizeof *rep);
}

static int run_cmp(const void *x, const void *y)
{
	return strcmp(((const struct replay_run *)x)->name, ((const struct replay_run *)y)->name);
}

static void hex_lower(char *dst, const char *src)
{
	for (size_t i = 0; i < SHA256_HEX_LEN; i++)
		dst[i] = (char)(src[i] >= 'A' && src[i] <= 'F' ? src[i] - 'A' + 'a' : src[i]);
	dst[SHA256_HEX_LEN] = '\0';
}

/* Check the shape of the diffs object; fills rep->runs with names and the
 * expected digests (sorted). 0 or -1 with e set. */
static void extra_key(struct replay_report *rep, const char *k)
{
	for (size_t i = 0; i < rep->n_extra_keys; i++)
		if (!strcmp(rep->extra_keys[i], k))
			return;
	rep->extra_keys = xrealloc(rep->extra_keys, (rep->n_extra_keys + 1) * sizeof *rep->extra_keys);
	rep->extra_keys[rep->n_extra_keys++] = xstrdup(k);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int shape_check(const cJSON *root, const char *dname, int strict, struct replay_report *rep,
		       struct err *e)
{
	if (!cJSON_IsObject(root))
		return err_set(e, EXIT_USAGE, "'%s': expected a JSON object {run: {\"diff\", \"sha256\"}}", dname);
	size_t n = (size_t)cJSON_GetArraySize(root);
	if (n == 0)
		return err_set(e, EXIT_USAGE, "'%s': no runs in the diffs file", dname);
	if (n > REPLAY_MAX_RUNS)
		return err_set(e, EXIT_USAGE, "'%s': %zu runs, over the limit of %d", dname, n, REPLAY_MAX_RUNS);
	rep->runs = xcalloc(n, sizeof *rep->runs);
	const cJSON *it;
	cJSON_ArrayForEach(it, root)
	{
		const char *name = it->string ? it->string : "";
		if (!replay_name_safe(name)) {
			char *q = replay_name_quote(name);
			err_set(e, EXIT_USAGE,
				"'%s': run '%s': unsafe run name (empty, '/', '..', control characters or over "
				"%d bytes)", dname, q, REPLAY_MAX_NAME);
			free(q);
			return -1;
		}
		struct replay_run *r = &rep->runs[rep->n_runs++];
		r->name = xstrdup(name);
		if (!cJSON_IsObject(it))
			return err_set(e, EXIT_USAGE, "'%s': run '%s': expected an object {\"diff\", \"sha256\"}",
				       dname, name);
		const cJSON *f;
		int have_diff = 0, have_sha = 0;
		cJSON_ArrayForEach(f, it)
		{
			const char *k = f->string ? f->string : "";
			if (!strcmp(k, "diff") && !have_diff) {
				if (!cJSON_IsString(f))
					return err_set(e, EXIT_USAGE, "'%s': run '%s': \"diff\" is not a string", dname,
						       name);
				have_diff = 1;
			} else if (!strcmp(k, "sha256") && !have_sha) {
				if (!cJSON_IsString(f) || !sha256_hex_valid(f->valuestring))
					return err_set(e, EXIT_USAGE,
						       "'%s': run '%s': \"sha256\" is not 64 hexadecimal digits", dname,
						       name);
				hex_lower(r->sha_expected, f->valuestring);
				have_sha = 1;
			} else if (!strict && strcmp(k, "diff") && strcmp(k, "sha256")) {
				extra_key(rep, k);
			} else {
				char *q = replay_name_quote(k);
				err_set(e, EXIT_USAGE, "'%s': run '%s': %s key '%s'%s", dname, name,
					strcmp(k, "diff") && strcmp(k, "sha256") ? "unexpected" : "repeated", q,
					strict && strcmp(k, "diff") && strcmp(k, "sha256") ? " (strict)" : "");
				free(q);
				return -1;
			}
		}
		if (!have_diff || !have_sha)
			return err_set(e, EXIT_USAGE, "'%s': run '%s': missing \"%s\"", dname, name,
				       have_diff ? "sha256" : "diff");
	}
	qsort(rep->runs, rep->n_runs, sizeof *rep->runs, run_cmp);
	if (rep->n_extra_keys > 1)
		qsort(rep->extra_keys, rep->n_extra_keys, sizeof *rep->extra_keys, str_cmp);
	for (size_t i = 1; i < rep->n_runs; i++)
		if (!strcmp(rep->runs[i].name, rep->runs[i - 1].name))
			return err_set(e, EXIT_USAGE, "'%s': run '%s' appears twice", dname, rep->runs[i].name);
	return 0;
}

static void run_fail(struct replay_run *r, struct err *e)
{
	r->status = REPLAY_FAILED;
	r->ok = 0;
	r->error = xstrdup(e->msg);
}

static void run_one(struct replay_run *r, const char *diff, const char *base, size_t blen, const char *dname)
{
	struct err e = {0};
	char *where = xasprintf("'%s': run '%s'", dname, r->name);
	struct udiff_limits lim = {REPLAY_MAX_DIFF_BYTES, REPLAY_MAX_HUNKS};
	struct udiff d;
	if (udiff_parse(diff, strlen(diff), where, &lim, &d, &e) < 0) {
		run_fail(r, &e);
		free(where);
		return;
	}
	r->hunks = d.n_hunks;
	r->added = d.added;
	r->removed = d.removed;
	if (d.new_label) {
		const char *t = path_basename(d.new_label);
		if (!strcmp(d.new_label, "/dev/null") || !replay_name_safe(t)) {
			char *q = replay_name_quote(d.new_label);
			err_set(&e, EXIT_USAGE, "%s: line 2: unsafe or missing file name in '+++ %s'", where, q);
			free(q);
			run_fail(r, &e);
			goto out;
		}
		r->target = xstrdup(t);
	}
	if (udiff_apply(&d, base, blen, where, &r->data, &r->len, &e) < 0) {
		run_fail(r, &e);
		goto out;
	}
	sha256_buf_hex(r->data, r->len, r->sha_actual);
	if (!strcmp(r->sha_actual, r->sha_expected)) {
		r->status = REPLAY_OK;
		r->ok = 1;
	} else {
		r->status = REPLAY_MISMATCH;
		r->error = xasprintf("%s: SHA-256 mismatch: rebuilt %s, recorded %s", where, r->sha_actual,
				     r->sha_expected);
	}
out:
	udiff_release(&d);
	free(where);
}

int replay_diffs(const char *baseline, size_t blen, const char *diffs_json, size_t jlen,
		 const char *diffs_name, struct replay_report *rep, struct err *e)
{
	return replay_diffs_strict(baseline, blen, diffs_json, jlen, diffs_name, 0, rep, e);
}

int replay_diffs_strict(const char *baseline, size_t blen, const char *diffs_json, size_t jlen,
			const char *diffs_name, int strict, struct replay_report *rep, struct err *e)
{
	memset(rep, 0, sizeof *rep);
	if (blen > REPLAY_MAX_BASELINE_BYTES)
		return err_set(e, EXIT_USAGE, "the baseline is %zu bytes, over the limit of %zu", blen,
			       REPLAY_MAX_BASELINE_BYTES);
	if (jlen > REPLAY_MAX_DIFFS_BYTES)
		return err_set(e, EXIT_USAGE, "'%s' is %zu bytes, over the limit of %zu", diffs_name, jlen,
			       REPLAY_MAX_DIFFS_BYTES);
	cJSON *root = json_parse(diffs_json, jlen, diffs_name, e);
	if (!root)
		return -1;
	if (shape_check(root, diffs_name, strict, rep, e) < 0) {
		cJSON_Delete(root);
		replay_report_release(rep);
		return -1;
	}
	sha256_buf_hex(baseline, blen, rep->baseline_sha);
	rep->baseline_len = blen;
	for (size_t i = 0; i < rep->n_runs; i++) {
		struct replay_run *r = &rep->runs[i];
		const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, r->name);
		const cJSON *diff = cJSON_GetObjectItemCaseSensitive(obj, "diff");
		run_one(r, diff->valuestring, baseline, blen, diffs_name);
		rep->n_ok += r->status == REPLAY_OK;
		rep->n_mismatch += r->status == REPLAY_MISMATCH;
		rep->n_failed += r->status == REPLAY_FAILED;
	}
	cJSON_Delete(root);
	return 0;
}

/* mkdir that accepts an existing real folder (not a symlink). */
static int dir_make_one(const char *p, struct err *e)
{
	if (mkdir(p, 0777) == 0)
		return 0;
	if (errno != EEXIST)
		return err_errno(e, EXIT_SYS, "cannot create folder '%s'", p);
	struct stat st;
	if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
		return err_set(e, EXIT_SYS, "'%s' exists and is not a folder", p);
	return 0;
}

int replay_report_write(const struct replay_report *rep, const char *dir, const char *fallback_target,
			struct err *e)
{
	if (!replay_name_safe(fallback_target))
		return err_set(e, EXIT_USAGE, "unsafe file name '%s'", fallback_target);
	if (dir_make_all(dir, e) < 0)
		return -1;
	for (size_t i = 0; i < rep->n_runs; i++) {
		const struct replay_run *r = &rep->runs[i];
		if (r->status != REPLAY_OK)
			continue;
		const char *t = r->target ? r->target : fallback_target;
		if (!replay_name_safe(r->name) || !replay_name_safe(t))
			return err_set(e, EXIT_USAGE, "run '%s': unsafe name", r->name);
		char *rd = path_join(dir, r->name);
		char *path = path_join(rd, t);
		int rc = dir_make_one(rd, e);
		if (rc == 0)
			rc = file_write_atomic(path, r->data, r->len, e);
		free(rd);
		free(path);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static const char *status_word(enum replay_status s)
{
	return s == REPLAY_OK ? "ok" : s == REPLAY_MISMATCH ? "mismatch" : "failed";
}

cJSON *replay_report_json(const struct replay_report *rep, const char *diffs_name)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *b = cJSON_AddObjectToObject(root, "baseline");
	cJSON_AddNumberToObject(b, "bytes", (double)rep->baseline_len);
	cJSON_AddStringToObject(b, "sha256", rep->baseline_sha);
	cJSON_AddStringToObject(root, "diffs", diffs_name);
	cJSON *xk = cJSON_AddArrayToObject(root, "extra_keys");
	for (size_t i = 0; i < rep->n_extra_keys; i++)
		cJSON_AddItemToArray(xk, cJSON_CreateString(rep->extra_keys[i]));
	cJSON *runs = cJSON_AddArrayToObject(root, "runs");
	for (size_t i = 0; i < rep->n_runs; i++) {
		const struct replay_run *r = &rep->runs[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", r->name);
		if (r->target)
			cJSON_AddStringToObject(o, "target", r->target);
		else
			cJSON_AddNullToObject(o, "target");
		cJSON_AddNumberToObject(o, "hunks", (double)r->hunks);
		cJSON_AddNumberToObject(o, "added", (double)r->added);
		cJSON_AddNumberToObject(o, "removed", (double)r->removed);
		cJSON_AddStringToObject(o, "sha256_expected", r->sha_expected);
		if (r->sha_actual[0])
			cJSON_AddStringToObject(o, "sha256_actual", r->sha_actual);
		else
			cJSON_AddNullToObject(o, "sha256_actual");
		cJSON_AddStringToObject(o, "status", status_word(r->status));
		if (r->error)
			cJSON_AddStringToObject(o, "error", r->error);
		else
			cJSON_AddNullToObject(o, "error");
		cJSON_AddItemToArray(runs, o);
	}
	cJSON *s = cJSON_AddObjectToObject(root, "summary");
	cJSON_AddNumberToObject(s, "runs", (double)rep->n_runs);
	cJSON_AddNumberToObject(s, "ok", (double)rep->n_ok);
	cJSON_AddNumberToObject(s, "mismatch", (double)rep->n_mismatch);
	cJSON_AddNumberToObject(s, "failed", (double)rep->n_failed);
	json_sort(root);
	return root;
}

/* A label written verbatim into a header must stay on one line and must not
 * read as a quoted name. */
static int label_ok(const char *s)
{
	if (!*s || s[0] == '"')
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

int replay_make_diff(const char *baseline, size_t blen, const char *base_label, const char *data,
		     size_t len, const char *label, char **out, size_t *out_len, struct err *e)
{
	if (!label_ok(base_label) || !label_ok(label) || !replay_name_safe(path_basename(label))) {
		char *q = replay_name_quote(label_ok(base_label) ? label : base_label);
		err_set(e, EXIT_USAGE, "unsafe file label '%s' (empty, control characters, '..' or a leading quote)", q);
		free(q);
		return -1;
	}
	if (memchr(baseline, '\0', blen) || memchr(data, '\0', len)) {
		char *q = replay_name_quote(memchr(baseline, '\0', blen) ? base_label : label);
		err_set(e, EXIT_USAGE, "'%s' contains a NUL byte (binary files are not supported)", q);
		free(q);
		return -1;
	}
	char *diff, *back = NULL;
	size_t dlen, back_len = 0;
	mkdiff_unified(baseline, blen, data, len, base_label, label, 0, &diff, &dlen);
	/* Check the inverse before handing the diff out. */
	struct err e2 = {0};
	if (udiff_patch(baseline, blen, diff, dlen, "generated diff", NULL, &back, &back_len, &e2) < 0 ||
	    back_len != len || memcmp(back, data, len) != 0) {
		err_set(e, EXIT_SYS, "internal error: the diff generated for '%s' does not apply back%s%s", label,
			e2.msg[0] ? ": " : "", e2.msg);
		free(back);
		free(diff);
		return -1;
	}
	free(back);
	*out = diff;
	*out_len = dlen;
	return 0;
}

cJSON *replay_make_diffs(const char *baseline, size_t blen, const char *base_label,
			 const struct replay_input *in, size_t n, struct err *e)
{
	if (n > REPLAY_MAX_RUNS) {
		err_set(e, EXIT_USAGE, "%zu runs, over the limit of %d", n, REPLAY_MAX_RUNS);
		return NULL;
	}
	cJSON *root = cJSON_CreateObject();
	for (size_t i = 0; i < n; i++) {
		char *q = replay_name_quote(in[i].run);
		char *diff;
		size_t dlen;
		if (!replay_name_safe(in[i].run)) {
			err_set(e, EXIT_USAGE, "run '%s': unsafe run name (empty, '/', '..' or control characters)", q);
			goto fail;
		}
		if (cJSON_GetObjectItemCaseSensitive(root, in[i].run)) {
			err_set(e, EXIT_USAGE, "run '%s' given twice (name the runs with --name)", q);
			goto fail;
		}
		if (replay_make_diff(baseline, blen, base_label, in[i].data, in[i].len, in[i].label, &diff, &dlen,
				     e) < 0) {
			err_prefix(e, "run '%s'", q);
			goto fail;
		}
		char hex[SHA256_HEX_LEN + 1];
		sha256_buf_hex(in[i].data, in[i].len, hex);
		cJSON *o = cJSON_AddObjectToObject(root, in[i].run);
		cJSON_AddStringToObject(o, "diff", diff);
		cJSON_AddStringToObject(o, "sha256", hex);
		free(diff);
		free(q);
		continue;
fail:
		free(q);
		cJSON_Delete(root);
		return NULL;
	}
	json_sort(root);
	return root;
}

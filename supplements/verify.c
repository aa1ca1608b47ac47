/* verify.c: manifest check and replay of a supplement (see verify.h).
 *
 * Leaves out: reading archives (scan.c) and the diff engine (replay/).
 * Reference: supkit-verify(1); supkit-formats(5), SUPPLEMENT MANIFEST.
 */
#include "supplements/verify.h"

#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/sha256.h"
#include "lib/utf8.h"
#include "supplements/derive.h"

static const char *baseline_defaults[] = {"baseline.cfg", "baseline/train.py", "baseline_train.py"};
#define N_BASELINE_DEFAULTS (sizeof baseline_defaults / sizeof *baseline_defaults)

void verify_report_release(struct verify_report *r)
{
	scan_release(&r->scan);
	manifest_release(&r->expected);
	manifest_release(&r->listed);
	manifest_cmp_release(&r->cmp);
	free(r->manifest_note);
	rd_report_release(&r->rd);
	free(r->replay_note);
	free(r->opt_diffs);
	free(r->opt_baseline);
	for (size_t i = 0; i < N_BASELINE_DEFAULTS; i++) {
		free(r->baseline_cands[i]);
		free(r->found_cands[i]);
	}
	replay_report_release(&r->rep);
	memset(r, 0, sizeof *r);
}

static const struct scan_capture *captured(const struct scan *s, const char *path)
{
	if (!path)
		return NULL;
	for (size_t i = 0; i < s->n_cap; i++)
		if (!strcmp(s->cap[i].path, path) && s->cap[i].data)
			return &s->cap[i];
	for (size_t i = 0; i < s->n_extra; i++)
		if (!strcmp(s->extra[i].path, path) && s->extra[i].data)
			return &s->extra[i];
	return NULL;
}

/* What verify's scan keeps: derive.h's entries, and baselines anywhere. */
static int verify_capture(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(path);
	return derive_capture(path) || !strcmp(b, "baseline.cfg") || !strcmp(b, "baseline_train.py") ||
	       !strcmp(path, "baseline/train.py") || (n > 18 && !strcmp(path + n - 18, "/baseline/train.py"));
}

/* The one entry whose name ends in "diffs.json" (NULL when none or several). */
static const char *diffs_found(const struct manifest *m)
{
	const char *found = NULL;
	for (size_t i = 0; i < m->n; i++) {
		size_t n = strlen(m->e[i].path);
		if (n >= 10 && !strcmp(m->e[i].path + n - 10, "diffs.json")) {
			if (found)
				return NULL;
			found = m->e[i].path;
		}
	}
	return found;
}

/* Default baselines beside the diffs file dp (owned strings into c, which
 * holds N_BASELINE_DEFAULTS NULL or owned pointers). */
static void baseline_candidates(char **c, const char *dp)
{
	const char *slash = strrchr(dp, '/');
	for (size_t i = 0; i < N_BASELINE_DEFAULTS; i++) {
		free(c[i]);
		c[i] = slash ? xasprintf("%.*s/%s", (int)(slash - dp), dp, baseline_defaults[i])
			     : xstrdup(baseline_defaults[i]);
	}
}

static void do_replay(const struct verify_opts *o, struct verify_report *r)
{
	const struct scan *s = &r->scan;
	r->diffs_path = o->diffs ? o->diffs : VERIFY_DEFAULT_DIFFS;
	char **cands = r->baseline_cands;
	if (!o->diffs && !manifest_find(&s->actual, r->diffs_path) && diffs_found(&s->actual)) {
		r->diffs_path = diffs_found(&s->actual);
		baseline_candidates(r->found_cands, r->diffs_path);
		cands = r->found_cands;
	}
	const struct scan_capture *d = captured(s, r->diffs_path), *b = NULL;
	if (!d) {
		/* absent, or present but refused by the scan (listed as an issue) */
		int present = manifest_find(&s->actual, r->diffs_path) != NULL;
		if (o->diffs || present || o->baseline) {
			r->replay = VR_MISSING;
			r->replay_note = xasprintf("diffs file '%s' %s", r->diffs_path,
						   present ? "could not be read into memory" : "is not in the supplement");
		}
		return;
	}
	if (o->baseline) {
		r->baseline_path = o->baseline;
		b = captured(s, o->baseline);
		if (!b) {
			r->replay = VR_MISSING;
			r->replay_note = xasprintf("baseline '%s' is not in the supplement", o->baseline);
			return;
		}
	} else {
		for (size_t i = 0; i < N_BASELINE_DEFAULTS && !b; i++)
			if ((b = captured(s, cands[i])))
				r->baseline_path = cands[i];
		if (!b) {
			r->replay = VR_SKIPPED;
			r->replay_note = xasprintf("'%s' found but no baseline ('%s', '%s' or '%s'); name it with --baseline",
						   r->diffs_path, cands[0], cands[1], cands[2]);
			return;
		}
	}
	struct err e = {0};
	if (replay_diffs_strict(b->data, b->len, d->data, d->len, r->diffs_path, o->strict, &r->rep, &e) < 0) {
		r->replay = VR_REFUSED;
		r->replay_note = xstrdup(e.msg);
		return;
	}
	r->replay = VR_DONE;
	if (r->rep.n_extra_keys) {
		size_t len = 0;
		for (size_t i = 0; i < r->rep.n_extra_keys; i++)
			len += strlen(r->rep.extra_keys[i]) + 2;
		char *keys = xmalloc(len + 1), *p = keys;
		*p = '\0';
		for (size_t i = 0; i < r->rep.n_extra_keys; i++)
			p += sprintf(p, "%s%s", i ? ", " : "", r->rep.extra_keys[i]);
		char *q = replay_name_quote(keys);
		r->replay_note = xasprintf("keys of runs other than \"diff\" and \"sha256\" ignored: %s (--strict refuses "
					   "them)", q);
		free(q);
		free(keys);
	}
}

/* An entry path as the scan names entries: in NFC (a copy of s when it is
 * not valid UTF-8, which then matches nothing). */
static char *nfc_or_copy(const char *s)
{
	char *n = utf8_nfc(s, strlen(s), NULL);
	return n ? n : xstrdup(s);
}

/* A sha256sum manifest file: top-level SHA256SUMS or *.sha256. */
static int is_sums(const char *path)
{
	size_t n = strlen(path);
	return !strchr(path, '/') && (!strcmp(path, "SHA256SUMS") || (n > 7 && !strcmp(path + n - 7, ".sha256")));
}

static int hex_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int verify_sums_parse(const char *text, size_t len, const char *name, struct manifest *m, struct err *e)
{
	manifest_init(m);
	char *buf = xmalloc(len + 1);
	memcpy(buf, text, len);
	buf[len] = '\0';
	int line = 0, rc = 0;
	for (char *l = buf, *next; l && rc == 0; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		line++;
		size_t ll = strlen(l);
		if (ll && l[ll - 1] == '\r')
			l[--ll] = '\0';
		if (!ll)
			continue;
		char hex[65], *pth = NULL;
		int esc = 0;
		if (!strncmp(l, "SHA256 (", 8)) {
			/* BSD form: SHA256 (path) = hex */
			char *eq = strstr(l, ") = ");
			if (!eq || strlen(eq + 4) != 64) {
				rc = err_set(e, EXIT_USAGE, "'%s': line %d: not 'SHA256 (<path>) = <sha256>'", name, line);
				break;
			}
			memcpy(hex, eq + 4, 65);
			*eq = '\0';
			pth = l + 8;
		} else {
			if (l[0] == '\\') {
				esc = 1;
				l++;
			}
			int ok = strlen(l) > 66 && l[64] == ' ' && (l[65] == ' ' || l[65] == '*');
			for (int i = 0; ok && i < 64; i++)
				ok = hex_char(l[i]);
			if (!ok) {
				rc = err_set(e, EXIT_USAGE, "'%s': line %d: not '<sha256>  <path>'", name, line);
				break;
			}
			memcpy(hex, l, 64);
			hex[64] = '\0';
			pth = l + 66;
		}
		for (char *h = hex; *h; h++)
			if (*h >= 'A' && *h <= 'F')
				*h = (char)(*h - 'A' + 'a');
		if (!sha256_hex_valid(hex)) {
			rc = err_set(e, EXIT_USAGE, "'%s': line %d: not a SHA-256", name, line);
			break;
		}
		if (esc) { /* GNU: "\\" and "\n" in an escaped name */
			char *w = pth;
			for (char *q = pth; *q; q++) {
				if (*q == '\\' && q[1] == '\\')
					*w++ = '\\', q++;
				else if (*q == '\\' && q[1] == 'n')
					*w++ = '\n', q++;
				else
					*w++ = *q;
			}
			*w = '\0';
		}
		while (!strncmp(pth, "./", 2))
			pth += 2;
		struct err pe;
		char *nfc = utf8_nfc(pth, strlen(pth), NULL);
		if (!nfc || manifest_path_check(nfc, &pe) < 0) {
			char *q = scan_quote(pth, strlen(pth));
			rc = err_set(e, EXIT_USAGE, "'%s': line %d: '%s': %s", name, line, q,
				     nfc ? pe.msg : "not valid UTF-8");
			free(q);
			free(nfc);
			break;
		}
		manifest_add(m, nfc, 0, hex, NULL);
		free(nfc);
	}
	free(buf);
	if (rc == 0) {
		manifest_sort(m);
		for (size_t i = 1; i < m->n && rc == 0; i++)
			if (!strcmp(m->e[i - 1].path, m->e[i].path))
				rc = err_set(e, EXIT_USAGE, "'%s': '%s' is listed twice", name, m->e[i].path);
	}
	if (rc < 0) {
		manifest_release(m);
		manifest_init(m);
	}
	return rc;
}

/* The sha256sum manifests among the entries, merged into r->expected; the
 * entries less them into r->listed. 0, 1 when there are none, -1 on a bad one. */
static int sums_manifest(const char *path, struct verify_report *r, struct err *e)
{
	const struct scan *s = &r->scan;
	int found = 0;
	manifest_release(&r->expected);
	manifest_init(&r->expected);
	for (size_t i = 0; i < s->actual.n; i++) {
		const char *p = s->actual.e[i].path;
		if (!is_sums(p))
			continue;
		const struct scan_capture *c = captured(s, p);
		if (!c)
			return err_set(e, EXIT_USAGE, "'%s': entry '%s' could not be read into memory", path, p);
		char *name = xasprintf("%s:%s", path, p);
		struct manifest one;
		int rc = verify_sums_parse(c->data, c->len, name, &one, e);
		free(name);
		if (rc < 0) {
			manifest_release(&one);
			return -1;
		}
		for (size_t k = 0; k < one.n; k++) {
			const struct manifest_entry *x = manifest_find(&r->expected, one.e[k].path);
			if (x && strcmp(x->sha256, one.e[k].sha256)) {
				manifest_release(&one);
				return err_set(e, EXIT_USAGE, "'%s': '%s' is listed with two SHA-256s", path, x->path);
			}
			if (!x) {
				manifest_add(&r->expected, one.e[k].path, 0, one.e[k].sha256, NULL);
				manifest_sort(&r->expected);
			}
		}
		manifest_release(&one);
		found++;
	}
	if (!found)
		return 1;
	/* no sizes in a sha256sum manifest: an entry's own size stands */
	for (size_t i = 0; i < r->expected.n; i++) {
		const struct manifest_entry *a = manifest_find(&s->actual, r->expected.e[i].path);
		if (a)
			r->expected.e[i].size = a->size;
	}
	return 0;
}

int verify_path(const char *path, const struct verify_opts *opts, struct verify_report *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	manifest_init(&r->expected);
	manifest_init(&r->listed);
	/* --diffs and --baseline name entries: compared in NFC, as entries are */
	struct verify_opts on = *opts;
	const struct verify_opts *o = &on;
	if (opts->diffs)
		on.diffs = r->opt_diffs = nfc_or_copy(opts->diffs);
	if (opts->baseline)
		on.baseline = r->opt_baseline = nfc_or_copy(opts->baseline);
	const char *cap[2 + N_BASELINE_DEFAULTS];
	size_t nc = 0;
	/* default baselines sit beside the diffs file */
	baseline_candidates(r->baseline_cands, o->diffs ? o->diffs : VERIFY_DEFAULT_DIFFS);
	if (!o->no_replay) {
		cap[nc++] = o->diffs ? o->diffs : VERIFY_DEFAULT_DIFFS;
		if (o->baseline)
			cap[nc++] = o->baseline;
		else
			for (size_t i = 0; i < N_BASELINE_DEFAULTS; i++)
				cap[nc++] = r->baseline_cands[i];
	}
	struct scan_opts so = {.capture = cap, .n_capture = nc, .quiet = o->quiet,
			       .capture_if = verify_capture, .capture_if_max = DERIVE_CAPTURE_MAX,
			       .safetensors_digest = !o->no_rederive};
	if (scan_path(path, &so, &r->scan, e) < 0)
		return -1;
	if (r->scan.has_manifest) {
		char *name = xasprintf("%s:%s", path, MANIFEST_NAME);
		manifest_release(&r->expected);
		int rc = manifest_parse(r->scan.manifest_data, r->scan.manifest_len, name, &r->expected, e);
		free(name);
		if (rc < 0)
			return -1;
		r->manifest_kind = VM_SUPKIT;
	} else {
		/* a refused manifest.json entry was listed as an issue; say why */
		for (size_t i = 0; i < r->scan.n_issues; i++)
			if (!strcmp(r->scan.issues[i].path, MANIFEST_NAME))
				return err_set(e, EXIT_CHECK, "'%s': entry '%s': %s", path, MANIFEST_NAME,
					       r->scan.issues[i].reason);
		int rc = sums_manifest(path, r, e);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			r->manifest_kind = VM_SHA256SUMS;
			r->manifest_note = xstrdup("a sha256sum manifest (no sizes)");
		} else if (r->scan.is_zip) {
			return err_set(e, EXIT_CHECK, "'%s' has no %s (--no-manifest lists and hashes it)", path,
				       MANIFEST_NAME);
		} else {
			r->manifest_kind = VM_NONE;
			r->manifest_note = xasprintf("no manifest: %zu entries hashed, nothing to compare them with",
						     r->scan.actual.n);
		}
	}
	for (size_t i = 0; i < r->scan.actual.n; i++) {
		const struct manifest_entry *a = &r->scan.actual.e[i];
		if (r->manifest_kind == VM_SHA256SUMS && is_sums(a->path))
			continue;
		manifest_add(&r->listed, a->path, a->size, a->sha256, a->st_digest[0] ? a->st_digest : NULL);
	}
	manifest_sort(&r->listed);
	manifest_compare(r->manifest_kind == VM_NONE ? &r->listed : &r->expected, &r->listed, &r->cmp);
	if (!o->no_replay)
		do_replay(o, r);
	int replay_ok = r->replay == VR_NONE || r->replay == VR_SKIPPED ||
			(r->replay == VR_DONE && r->rep.n_ok == r->rep.n_runs);
	if (!o->no_rederive) {
		struct rd_opts ro = {.data_dir = o->data_dir, .quiet = o->quiet};
		if (rederive(path, &r->scan, &r->expected, &ro, &r->rd, e) < 0)
			return -1;
		r->rederived = 1;
	}
	r->verified = r->cmp.n_ok == r->cmp.n && r->scan.n_issues == 0 && replay_ok &&
		      (!r->rederived || r->rd.disagreed == 0);
	return 0;
}

void verify_report_print(FILE *f, const struct verify_report *r, const char *path)
{
	fprintf(f, "%-8s %12s  %s\n", "status", "size", "entry");
	for (size_t i = 0; i < r->cmp.n; i++) {
		const struct manifest_cmp_item *it = &r->cmp.items[i];
		const struct manifest_entry *m = it->got ? it->got : it->want;
		char *q = scan_quote(m->path, strlen(m->path));
		char sz[40];
		snprintf(sz, sizeof sz, "%llu", (unsigned long long)m->size);
		fprintf(f, "%-8s %12s  %s", manifest_status_name(it->status), sz, q);
		if (it->status == MS_CHANGED) {
			if (it->want->size != it->got->size)
				fprintf(f, "  (size %llu in the manifest)", (unsigned long long)it->want->size);
			else
				fprintf(f, "  (SHA-256 differs from the manifest)");
		}
		fputc('\n', f);
		free(q);
	}
	for (size_t i = 0; i < r->scan.n_issues; i++)
		fprintf(f, "%-8s %12s  %s  (%s)\n", "refused", "-", r->scan.issues[i].path, r->scan.issues[i].reason);
	if (r->replay == VR_DONE) {
		fprintf(f, "\n%-8s %-10s %s\n", "replay", "status", "run");
		for (size_t i = 0; i < r->rep.n_runs; i++) {
			const struct replay_run *u = &r->rep.runs[i];
			const char *st = u->status == REPLAY_OK ? "ok" : u->status == REPLAY_MISMATCH ? "mismatch" : "failed";
			char *q = replay_name_quote(u->name);
			fprintf(f, "%-8s %-10s %s", "run", st, q);
			if (u->target)
				fprintf(f, "/%s", u->target);
			if (u->status == REPLAY_OK)
				fprintf(f, "  (%zu hunks, sha256 %.12s)", u->hunks, u->sha_actual);
			else if (u->error)
				fprintf(f, "  (%s)", u->error);
			else
				fprintf(f, "  (sha256 %.12s, expected %.12s)", u->sha_actual, u->sha_expected);
			fputc('\n', f);
			free(q);
		}
		if (r->replay_note)
			fprintf(f, "replay: note: %s\n", r->replay_note);
	} else if (r->replay_note) {
		fprintf(f, "\nreplay: %s\n", r->replay_note);
	}
	if (r->rederived)
		rd_report_print(f, &r->rd);
	if (r->manifest_note)
		fprintf(f, "manifest: %s\n", r->manifest_note);
	fprintf(f, "%s: %s: %zu entries ok, %zu changed, %zu missing, %zu extra, %zu refused",
		r->verified ? "verified" : "FAILED", path, r->cmp.n_ok, r->cmp.n_changed, r->cmp.n_missing,
		r->cmp.n_extra, r->scan.n_issues);
	if (r->manifest_kind == VM_NONE)
		fprintf(f, " (no manifest)");
	if (r->replay == VR_DONE)
		fprintf(f, "; %zu of %zu runs replayed ok", r->rep.n_ok, r->rep.n_runs);
	else if (r->replay == VR_MISSING || r->replay == VR_REFUSED)
		fprintf(f, "; replay failed");
	if (r->rederived && r->rd.n) {
		if (r->rd.disagreed)
			fprintf(f, "; %zu of %zu re-derived numbers disagree", r->rd.disagreed, r->rd.done);
		else if (r->rd.done)
			fprintf(f, "; %zu numbers re-derived, all agree", r->rd.done);
		else
			fprintf(f, "; no number re-derived");
		if (r->rd.not_rederived)
			fprintf(f, " (%zu entries not fully re-derived)", r->rd.not_rederived);
	}
	fputc('\n', f);
}

cJSON *verify_report_json(const struct verify_report *r, const char *path)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "supplement", path);
	cJSON_AddStringToObject(root, "kind", r->scan.is_zip ? "zip" : "folder");
	cJSON *arr = cJSON_AddArrayToObject(root, "entries");
	for (size_t i = 0; i < r->cmp.n; i++) {
		const struct manifest_cmp_item *it = &r->cmp.items[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", (it->got ? it->got : it->want)->path);
		cJSON_AddStringToObject(o, "status", manifest_status_name(it->status));
		if (it->got) {
			cJSON_AddNumberToObject(o, "size", (double)it->got->size);
			cJSON_AddStringToObject(o, "sha256", it->got->sha256);
		} else {
			cJSON_AddNullToObject(o, "size");
			cJSON_AddNullToObject(o, "sha256");
		}
		if (it->want) {
			cJSON_AddNumberToObject(o, "expected_size", (double)it->want->size);
			cJSON_AddStringToObject(o, "expected_sha256", it->want->sha256);
		} else {
			cJSON_AddNullToObject(o, "expected_size");
			cJSON_AddNullToObject(o, "expected_sha256");
		}
		cJSON_AddItemToArray(arr, o);
	}
	cJSON *iss = cJSON_AddArrayToObject(root, "refused");
	for (size_t i = 0; i < r->scan.n_issues; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", r->scan.issues[i].path);
		cJSON_AddStringToObject(o, "reason", r->scan.issues[i].reason);
		cJSON_AddItemToArray(iss, o);
	}
	static const char *state[] = {"none", "skipped", "missing", "refused", "done"};
	cJSON *rp = cJSON_AddObjectToObject(root, "replay");
	cJSON_AddStringToObject(rp, "state", state[r->replay]);
	if (r->replay_note)
		cJSON_AddStringToObject(rp, "note", r->replay_note);
	else
		cJSON_AddNullToObject(rp, "note");
	if (r->diffs_path && r->replay != VR_NONE)
		cJSON_AddStringToObject(rp, "diffs", r->diffs_path);
	else
		cJSON_AddNullToObject(rp, "diffs");
	if (r->baseline_path)
		cJSON_AddStringToObject(rp, "baseline", r->baseline_path);
	else
		cJSON_AddNullToObject(rp, "baseline");
	if (r->replay == VR_DONE)
		cJSON_AddItemToObject(rp, "report", replay_report_json(&r->rep, r->diffs_path));
	else
		cJSON_AddNullToObject(rp, "report");
	if (r->rederived)
		cJSON_AddItemToObject(root, "rederive", rd_report_json(&r->rd));
	else
		cJSON_AddNullToObject(root, "rederive");
	static const char *mk[] = {"manifest.json", "sha256sums", "none"};
	cJSON_AddStringToObject(root, "manifest", mk[r->manifest_kind]);
	if (r->replay == VR_DONE) {
		cJSON *xk = cJSON_AddArrayToObject(rp, "extra_keys");
		for (size_t i = 0; i < r->rep.n_extra_keys; i++)
			cJSON_AddItemToArray(xk, cJSON_CreateString(r->rep.extra_keys[i]));
	}
	cJSON *sm = cJSON_AddObjectToObject(root, "summary");
	cJSON_AddNumberToObject(sm, "ok", (double)r->cmp.n_ok);
	cJSON_AddNumberToObject(sm, "changed", (double)r->cmp.n_changed);
	cJSON_AddNumberToObject(sm, "missing", (double)r->cmp.n_missing);
	cJSON_AddNumberToObject(sm, "extra", (double)r->cmp.n_extra);
	cJSON_AddNumberToObject(sm, "refused", (double)r->scan.n_issues);
	cJSON_AddNumberToObject(sm, "runs", r->replay == VR_DONE ? (double)r->rep.n_runs : 0);
	cJSON_AddNumberToObject(sm, "runs_ok", r->replay == VR_DONE ? (double)r->rep.n_ok : 0);
	cJSON_AddBoolToObject(root, "verified", r->verified);
	json_sort(root);
	return root;
}

/* verify.c: manifest check and replay of a supplement (see verify.h).
 *
 * Leaves out: reading archives (scan.c) and the diff engine (replay/).
 * Reference: issue 3; SPEC section 9.
 */
#include "supplements/verify.h"

#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/utf8.h"

static const char *baseline_defaults[] = {"baseline.cfg", "baseline/train.py"};
#define N_BASELINE_DEFAULTS (sizeof baseline_defaults / sizeof *baseline_defaults)

void verify_report_release(struct verify_report *r)
{
	scan_release(&r->scan);
	manifest_release(&r->expected);
	manifest_cmp_release(&r->cmp);
	free(r->replay_note);
	free(r->opt_diffs);
	free(r->opt_baseline);
	for (size_t i = 0; i < N_BASELINE_DEFAULTS; i++)
		free(r->baseline_cands[i]);
	replay_report_release(&r->rep);
	memset(r, 0, sizeof *r);
}

static const struct scan_capture *captured(const struct scan *s, const char *path)
{
	for (size_t i = 0; i < s->n_cap; i++)
		if (!strcmp(s->cap[i].path, path) && s->cap[i].data)
			return &s->cap[i];
	return NULL;
}

static void do_replay(const struct verify_opts *o, struct verify_report *r)
{
	const struct scan *s = &r->scan;
	r->diffs_path = o->diffs ? o->diffs : VERIFY_DEFAULT_DIFFS;
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
			if ((b = captured(s, r->baseline_cands[i])))
				r->baseline_path = r->baseline_cands[i];
		if (!b) {
			r->replay = VR_SKIPPED;
			r->replay_note = xasprintf("'%s' found but no baseline ('%s' or '%s'); name it with --baseline",
						   r->diffs_path, r->baseline_cands[0], r->baseline_cands[1]);
			return;
		}
	}
	struct err e = {0};
	if (replay_diffs(b->data, b->len, d->data, d->len, r->diffs_path, &r->rep, &e) < 0) {
		r->replay = VR_REFUSED;
		r->replay_note = xstrdup(e.msg);
		return;
	}
	r->replay = VR_DONE;
}

/* An entry path as the scan names entries: in NFC (a copy of s when it is
 * not valid UTF-8, which then matches nothing). */
static char *nfc_or_copy(const char *s)
{
	char *n = utf8_nfc(s, strlen(s), NULL);
	return n ? n : xstrdup(s);
}

int verify_path(const char *path, const struct verify_opts *opts, struct verify_report *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	manifest_init(&r->expected);
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
	const char *dp = o->diffs ? o->diffs : VERIFY_DEFAULT_DIFFS, *slash = strrchr(dp, '/');
	for (size_t i = 0; i < N_BASELINE_DEFAULTS; i++)
		r->baseline_cands[i] = slash ? xasprintf("%.*s/%s", (int)(slash - dp), dp, baseline_defaults[i])
					     : xstrdup(baseline_defaults[i]);
	if (!o->no_replay) {
		cap[nc++] = o->diffs ? o->diffs : VERIFY_DEFAULT_DIFFS;
		if (o->baseline)
			cap[nc++] = o->baseline;
		else
			for (size_t i = 0; i < N_BASELINE_DEFAULTS; i++)
				cap[nc++] = r->baseline_cands[i];
	}
	struct scan_opts so = {.capture = cap, .n_capture = nc, .quiet = o->quiet};
	if (scan_path(path, &so, &r->scan, e) < 0)
		return -1;
	if (!r->scan.has_manifest) {
		/* a refused manifest.json entry was listed as an issue; say why */
		for (size_t i = 0; i < r->scan.n_issues; i++)
			if (!strcmp(r->scan.issues[i].path, MANIFEST_NAME))
				return err_set(e, EXIT_CHECK, "'%s': entry '%s': %s", path, MANIFEST_NAME,
					       r->scan.issues[i].reason);
		return err_set(e, EXIT_CHECK, "'%s' has no %s (--no-manifest lists and hashes it)", path,
			       MANIFEST_NAME);
	}
	char *name = xasprintf("%s:%s", path, MANIFEST_NAME);
	manifest_release(&r->expected);
	int rc = manifest_parse(r->scan.manifest_data, r->scan.manifest_len, name, &r->expected, e);
	free(name);
	if (rc < 0)
		return -1;
	manifest_compare(&r->expected, &r->scan.actual, &r->cmp);
	if (!o->no_replay)
		do_replay(o, r);
	int replay_ok = r->replay == VR_NONE || r->replay == VR_SKIPPED ||
			(r->replay == VR_DONE && r->rep.n_ok == r->rep.n_runs);
	r->verified = r->cmp.n_ok == r->cmp.n && r->scan.n_issues == 0 && replay_ok;
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
	} else if (r->replay_note) {
		fprintf(f, "\nreplay: %s\n", r->replay_note);
	}
	fprintf(f, "%s: %s: %zu entries ok, %zu changed, %zu missing, %zu extra, %zu refused",
		r->verified ? "verified" : "FAILED", path, r->cmp.n_ok, r->cmp.n_changed, r->cmp.n_missing,
		r->cmp.n_extra, r->scan.n_issues);
	if (r->replay == VR_DONE)
		fprintf(f, "; %zu of %zu runs replayed ok", r->rep.n_ok, r->rep.n_runs);
	else if (r->replay == VR_MISSING || r->replay == VR_REFUSED)
		fprintf(f, "; replay failed");
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

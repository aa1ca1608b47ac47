/* stats_input.c: the inputs of supkit audit stats: run records (result.json
 * files under folders, results JSON files in the flat and the papers' nested
 * layout), naming rules (PCRE2 with named groups) and contrast specs.
 *
 * Reference: supkit-formats(5), RUN RECORDS AND CONTRAST SPECS
 * (man/src/supkit-formats-records.mdoc), which documents every layout
 * read here. Left out: records in any other format (CSV, curves); naming by
 * anything but the run name (or its folder's name).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "audit/stats.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/stream.h"

#define STATS_MAX_FILE (64u << 20)

/* ---- naming rules --------------------------------------------------------- */

struct stats_rule {
	char *arm;   /* NULL: from the group "arm" */
	int depth;   /* 0: from the group "depth" */
	int line;
	pcre2_code *re;
};

struct stats_rules {
	char *name;
	struct stats_rule *r;
	size_t n;
};

void stats_rules_free(struct stats_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->r[i].arm);
		pcre2_code_free(r->r[i].re);
	}
	free(r->r);
	free(r->name);
	free(r);
}

static int valid_arm(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '.'))
			return 0;
	return 1;
}

static int parse_depth(const char *s, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 1 || v > 4096)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_seed(const char *s, long *out)
{
	char *end;
	errno = 0;
	if (!(*s >= '0' && *s <= '9'))
		return -1;
	long v = strtol(s, &end, 10);
	if (*end || errno || v < 0)
		return -1;
	*out = v;
	return 0;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* The line at *p as a fresh string without its trailing CR, blanks and tabs;
 * *p moves past it and its newline. NULL at the end of the text. */
static char *next_line(const char **p)
{
	if (!**p)
		return NULL;
	const char *eol = strchr(*p, '\n');
	size_t len = eol ? (size_t)(eol - *p) : strlen(*p);
	char *l = xstrndup(*p, len);
	*p += len + (eol ? 1 : 0);
	size_t k = strlen(l);
	while (k && (l[k - 1] == '\r' || l[k - 1] == ' ' || l[k - 1] == '\t'))
		l[--k] = '\0';
	return l;
}

int stats_rules_parse(struct stats_rules **out, const char *text, const char *name, struct err *e)
{
	struct stats_rules *rs = xcalloc(1, sizeof *rs);
	rs->name = xstrdup(name);
	int line = 0;
	const char *p = text;
	for (char *l; (l = next_line(&p));) {
		line++;
		const char *q = skip_ws(l);
		if (!*q || *q == '#') {
			free(l);
			continue;
		}
		/* ARM DEPTH REGEX */
		char f[2][256];
		int bad = 0;
		for (int i = 0; i < 2; i++) {
			size_t n = strcspn(q, " \t");
			if (!n || n >= sizeof f[i] || !q[n]) {
				bad = 1;
				break;
			}
			memcpy(f[i], q, n);
			f[i][n] = '\0';
			q = skip_ws(q + n);
		}
		if (bad || !*q) {
			free(l);
			stats_rules_free(rs);
			return err_set(e, EXIT_USAGE, "'%s': line %d: expected 'ARM DEPTH REGEX'", name, line);
		}
		struct stats_rule r = {0};
		r.line = line;
		if (strcmp(f[0], "*") && !valid_arm(f[0])) {
			free(l);
			stats_rules_free(rs);
			return err_set(e, EXIT_USAGE, "'%s': line %d: arm '%s' is not '*' or a name of "
				       "letters, digits, '_' and '.'", name, line, f[0]);
		}
		if (strcmp(f[1], "*") && parse_depth(f[1], &r.depth) < 0) {
			free(l);
			stats_rules_free(rs);
			return err_set(e, EXIT_USAGE, "'%s': line %d: depth '%s' is not '*' or a positive "
				       "integer", name, line, f[1]);
		}
		int ec;
		PCRE2_SIZE eo;
		r.re = pcre2_compile((PCRE2_SPTR)q, PCRE2_ZERO_TERMINATED,
				     PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_UTF, &ec, &eo, NULL);
		if (!r.re) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(ec, msg, sizeof msg);
			int col = (int)(q - l) + (int)eo + 1;
			free(l);
			stats_rules_free(rs);
			return err_set(e, EXIT_USAGE, "'%s': line %d, column %d: %s", name, line, col,
				       (char *)msg);
		}
		const char *need[3] = {"seed", strcmp(f[0], "*") ? NULL : "arm",
				       strcmp(f[1], "*") ? NULL : "depth"};
		for (int i = 0; i < 3; i++)
			if (need[i] && pcre2_substring_number_from_name(r.re, (PCRE2_SPTR)need[i]) < 0) {
				pcre2_code_free(r.re);
				free(l);
				stats_rules_free(rs);
				return err_set(e, EXIT_USAGE, "'%s': line %d: the pattern needs a named "
					       "group (?<%s>...)", name, line, need[i]);
			}
		r.arm = strcmp(f[0], "*") ? xstrdup(f[0]) : NULL;
		rs->r = xrealloc(rs->r, (rs->n + 1) * sizeof *rs->r);
		rs->r[rs->n++] = r;
		free(l);
	}
	if (!rs->n) {
		stats_rules_free(rs);
		return err_set(e, EXIT_USAGE, "'%s': no naming rules", name);
	}
	*out = rs;
	return 0;
}

/* A text file of at most 1 MiB with no NUL byte (caller frees); NULL with e. */
static char *text_load(const char *path, struct err *e)
{
	char *text;
	size_t len;
	if (stream_read_all(path, 1u << 20, &text, &len, e) < 0)
		return NULL;
	if (strlen(text) != len) {
		free(text);
		err_set(e, EXIT_USAGE, "'%s': contains a NUL byte", path);
		return NULL;
	}
	return text;
}

int stats_rules_load(struct stats_rules **out, const char *path, struct err *e)
{
	char *text = text_load(path, e);
	if (!text)
		return -1;
	int rc = stats_rules_parse(out, text, path, e);
	free(text);
	return rc;
}

static char *group(pcre2_match_data *md, const pcre2_code *re, const char *name)
{
	PCRE2_UCHAR *s;
	PCRE2_SIZE n;
	if (pcre2_substring_get_byname(md, (PCRE2_SPTR)name, &s, &n) != 0)
		return NULL;
	char *out = xstrndup((const char *)s, n);
	pcre2_substring_free(s);
	(void)re;
	return out;
}

int stats_rules_match(const struct stats_rules *rs, const char *run, char **arm, int *depth,
		      long *seed, struct err *e)
{
	for (size_t i = 0; rs && i < rs->n; i++) {
		const struct stats_rule *r = &rs->r[i];
		pcre2_match_data *md = pcre2_match_data_create_from_pattern(r->re, NULL);
		int rc = pcre2_match(r->re, (PCRE2_SPTR)run, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
		if (rc < 0) {
			pcre2_match_data_free(md);
			continue;
		}
		char *a = r->arm ? xstrdup(r->arm) : group(md, r->re, "arm");
		char *d = r->depth ? NULL : group(md, r->re, "depth");
		char *s = group(md, r->re, "seed");
		pcre2_match_data_free(md);
		int ok = 0;
		if (!a || !valid_arm(a))
			err_set(e, EXIT_USAGE, "'%s': line %d: run '%s': arm '%s' is not a name", rs->name,
				r->line, run, a ? a : "");
		else if (!r->depth && (!d || parse_depth(d, depth) < 0))
			err_set(e, EXIT_USAGE, "'%s': line %d: run '%s': depth '%s' is not a positive "
				"integer", rs->name, r->line, run, d ? d : "");
		else if (!s || parse_seed(s, seed) < 0)
			err_set(e, EXIT_USAGE, "'%s': line %d: run '%s': seed '%s' is not an integer",
				rs->name, r->line, run, s ? s : "");
		else
			ok = 1;
		if (r->depth)
			*depth = r->depth;
		free(d);
		free(s);
		if (!ok) {
			free(a);
			return -1;
		}
		*arm = a;
		return 1;
	}
	return 0;
}

/* ---- records -------------------------------------------------------------- */

void stats_records_init(struct stats_records *r)
{
	memset(r, 0, sizeof *r);
}

void stats_records_free(struct stats_records *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->runs[i].arm);
		free(r->runs[i].where);
	}
	free(r->runs);
	for (size_t i = 0; i < r->n_ignored; i++)
		free(r->ignored[i]);
	free(r->ignored);
	memset(r, 0, sizeof *r);
}

/* A BPB value: a JSON number, or an object holding "bpb" (or key2). */
static int bpb_value(const cJSON *v, const char *key, const char *key2, double *out,
		     const char *where, struct err *e)
{
	if (cJSON_IsObject(v)) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, "bpb");
		if (!w && key2)
			w = cJSON_GetObjectItemCaseSensitive(v, key2);
		if (!w)
			return err_set(e, EXIT_USAGE, "%s: '%s' has no 'bpb'", where, key);
		v = w;
	}
	if (!cJSON_IsNumber(v))
		return err_set(e, EXIT_USAGE, "%s: '%s' is not a number", where, key);
	if (!isfinite(v->valuedouble) || v->valuedouble <= 0)
		return err_set(e, EXIT_USAGE, "%s: '%s' is %g, not a positive BPB", where, key,
			       v->valuedouble);
	*out = v->valuedouble;
	return 0;
}

static const cJSON *key2(const cJSON *a, const cJSON *b, const char *k)
{
	const cJSON *v = a ? cJSON_GetObjectItemCaseSensitive(a, k) : NULL;
	if (!v && b)
		v = cJSON_GetObjectItemCaseSensitive(b, k);
	return v;
}

static void add_ignored(struct stats_records *r, const char *name)
{
	if (r->n_ignored == r->cap_ignored) {
		r->cap_ignored = r->cap_ignored ? 2 * r->cap_ignored : 16;
		r->ignored = xrealloc(r->ignored, r->cap_ignored * sizeof *r->ignored);
	}
	r->ignored[r->n_ignored++] = xstrdup(name);
}

/* One record object (flat or nested) named run, from file. */
static int add_record(struct stats_records *r, const cJSON *obj, const char *file, const char *run,
		      const struct stats_rules *rules, struct err *e)
{
	char *where = run ? xasprintf("'%s': run '%s'", file, run) : xasprintf("'%s'", file);
	if (!cJSON_IsObject(obj)) {
		err_set(e, EXIT_USAGE, "%s: the record is not a JSON object", where);
		goto fail;
	}
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(obj, "result");
	if (res && !cJSON_IsObject(res)) {
		err_set(e, EXIT_USAGE, "%s: 'result' is not an object", where);
		goto fail;
	}
	struct stats_run x = {0};
	/* BPB: flat keys, or result.val_bpb / validation_loss and heldout_loss. */
	const cJSON *v = key2(obj, res, "val_bpb");
	const char *vk = "val_bpb";
	if (!v) {
		v = cJSON_GetObjectItemCaseSensitive(obj, "validation_loss");
		vk = "validation_loss";
	}
	const cJSON *h = key2(obj, res, "heldout_bpb");
	const char *hk = "heldout_bpb";
	if (!h) {
		h = cJSON_GetObjectItemCaseSensitive(obj, "heldout_loss");
		hk = "heldout_loss";
	}
	/* Identity: the record's keys first, then the naming rules. */
	const cJSON *ja = key2(obj, res, "arm"), *jd = key2(obj, res, "depth"),
		    *js = key2(obj, res, "seed");
	char *rarm = NULL;
	int rdepth = 0;
	long rseed = 0;
	int m = run ? stats_rules_match(rules, run, &rarm, &rdepth, &rseed, e) : 0;
	if (m < 0)
		goto fail;
	if (!m && !ja && !jd && !js) {
		if (!v && !h) { /* not a run record at all */
			err_set(e, EXIT_USAGE, "%s: not a run record (no 'val_bpb' or 'result')", where);
			goto fail;
		}
		add_ignored(r, run ? run : file);
		free(where);
		return 0;
	}
	if (ja) {
		if (!cJSON_IsString(ja) || !valid_arm(ja->valuestring)) {
			err_set(e, EXIT_USAGE, "%s: 'arm' is not a name of letters, digits, '_' and '.'",
				where);
			free(rarm);
			goto fail;
		}
		free(rarm);
		rarm = xstrdup(ja->valuestring);
	}
	if (!rarm) {
		err_set(e, EXIT_USAGE, "%s: missing 'arm' (and no naming rule matched)", where);
		goto fail;
	}
	x.arm = rarm;
	if (jd) {
		if (!cJSON_IsNumber(jd) || jd->valuedouble != floor(jd->valuedouble) ||
		    jd->valuedouble < 1 || jd->valuedouble > 4096) {
			err_set(e, EXIT_USAGE, "%s: 'depth' is not a positive integer", where);
			goto fail_arm;
		}
		rdepth = (int)jd->valuedouble;
	} else if (!m) {
		err_set(e, EXIT_USAGE, "%s: missing 'depth' (and no naming rule matched)", where);
		goto fail_arm;
	}
	if (js) {
		if (!cJSON_IsNumber(js) || js->valuedouble != floor(js->valuedouble) ||
		    js->valuedouble < 0 || js->valuedouble > 1e15) {
			err_set(e, EXIT_USAGE, "%s: 'seed' is not a non-negative integer", where);
			goto fail_arm;
		}
		rseed = (long)js->valuedouble;
	} else if (!m) {
		err_set(e, EXIT_USAGE, "%s: missing 'seed' (and no naming rule matched)", where);
		goto fail_arm;
	}
	x.depth = rdepth;
	x.seed = rseed;
	if (!v) {
		err_set(e, EXIT_USAGE, "%s: missing 'val_bpb'", where);
		goto fail_arm;
	}
	if (!h) {
		err_set(e, EXIT_USAGE, "%s: missing 'heldout_bpb'", where);
		goto fail_arm;
	}
	if (bpb_value(v, vk, "val_bpb", &x.bpb[STATS_VAL], where, e) < 0 ||
	    bpb_value(h, hk, "heldout_bpb", &x.bpb[STATS_HO], where, e) < 0)
		goto fail_arm;
	for (size_t i = 0; i < r->n; i++) {
		const struct stats_run *o = &r->runs[i];
		if (o->depth == x.depth && o->seed == x.seed && !strcmp(o->arm, x.arm)) {
			err_set(e, EXIT_USAGE, "%s: duplicate run: d%d/%s seed %ld is also %s", where,
				x.depth, x.arm, x.seed, o->where);
			goto fail_arm;
		}
	}
	x.where = where;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 32;
		r->runs = xrealloc(r->runs, r->cap * sizeof *r->runs);
	}
	r->runs[r->n++] = x;
	return 0;
fail_arm:
	free(x.arm);
fail:
	free(where);
	return -1;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int stats_records_add_json(struct stats_records *r, const cJSON *root, const char *name,
			   const struct stats_rules *rules, struct err *e)
{
	/* an array of records, each named by its "run_name", "run" or "name" */
	if (cJSON_IsArray(root)) {
		int i = 0;
		if (!root->child)
			return err_set(e, EXIT_USAGE, "'%s': no runs", name);
		for (const cJSON *c = root->child; c; c = c->next, i++) {
			static const char *const keys[] = {"run_name", "run", "name"};
			const char *run = NULL;
			for (int k = 0; k < 3 && !run; k++) {
				const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, keys[k]);
				if (cJSON_IsString(v) && v->valuestring[0])
					run = v->valuestring;
			}
			char idx[32];
			snprintf(idx, sizeof idx, "[%d]", i);
			if (add_record(r, c, name, run ? run : idx, rules, e) < 0)
				return -1;
		}
		return 0;
	}
	if (!cJSON_IsObject(root))
		return err_set(e, EXIT_USAGE, "'%s': expected a JSON object (a record, or run names "
			       "mapped to records) or an array of records", name);
	/* A single record (a result.json): named by its folder. */
	if (cJSON_GetObjectItemCaseSensitive(root, "val_bpb") ||
	    cJSON_GetObjectItemCaseSensitive(root, "result")) {
		if (stream_is_std(name))
			return err_set(e, EXIT_USAGE, "'-': a single record on standard input has no run "
				       "name (give {\"<run>\": <record>, ...})");
		char *dir = path_dirname(name);
		char *abs = realpath(dir, NULL);
		const char *run = path_basename(abs ? abs : dir);
		int rc = add_record(r, root, name, run, rules, e);
		free(abs);
		free(dir);
		return rc;
	}
	size_t n = 0;
	for (const cJSON *c = root->child; c; c = c->next)
		n++;
	if (!n)
		return err_set(e, EXIT_USAGE, "'%s': no runs", name);
	const char **names = xmalloc(n * sizeof *names);
	n = 0;
	for (const cJSON *c = root->child; c; c = c->next)
		names[n++] = c->string;
	qsort(names, n, sizeof *names, name_cmp);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(names[i], names[i - 1])) {
			err_set(e, EXIT_USAGE, "'%s': duplicate run '%s'", name, names[i]);
			free(names);
			return -1;
		}
	free(names);
	for (const cJSON *c = root->child; c; c = c->next)
		if (add_record(r, c, name, c->string, rules, e) < 0)
			return -1;
	return 0;
}

static int add_file(struct stats_records *r, const char *path, const struct stats_rules *rules,
		    struct err *e)
{
	cJSON *j = json_read_input(path, STATS_MAX_FILE, e);
	if (!j)
		return -1;
	int rc = stats_records_add_json(r, j, path, rules, e);
	cJSON_Delete(j);
	return rc;
}

static int add_dir(struct stats_records *r, const char *dir, const struct stats_rules *rules,
		   int level, struct err *e)
{
	if (level > 32)
		return err_set(e, EXIT_USAGE, "'%s': folders nested too deeply", dir);
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort);
	if (n < 0)
		return err_errno(e, EXIT_SYS, "cannot read folder '%s'", dir);
	int rc = 0;
	for (int i = 0; i < n; i++) {
		const char *nm = list[i]->d_name;
		if (rc == 0 && strcmp(nm, ".") && strcmp(nm, "..")) {
			char *p = path_join(dir, nm);
			struct stat st;
			if (lstat(p, &st) < 0)
				rc = err_errno(e, EXIT_SYS, "cannot stat '%s'", p);
			else if (S_ISDIR(st.st_mode))
				rc = add_dir(r, p, rules, level + 1, e);
			else if (S_ISREG(st.st_mode) && !strcmp(nm, "result.json"))
				rc = add_file(r, p, rules, e);
			free(p);
		}
		free(list[i]);
	}
	free(list);
	return rc;
}

int stats_records_add_path(struct stats_records *r, const char *path,
			   const struct stats_rules *rules, struct err *e)
{
	struct stat st;
	int rc;
	if (stream_is_std(path))
		rc = add_file(r, path, rules, e);
	else if (stat(path, &st) < 0)
		return err_errno(e, errno == ENOENT ? EXIT_USAGE : EXIT_SYS, "cannot open '%s'", path);
	else
		rc = S_ISDIR(st.st_mode) ? add_dir(r, path, rules, 0, e) : add_file(r, path, rules, e);
	if (rc == 0 && r->n_ignored > 1)
		qsort(r->ignored, r->n_ignored, sizeof *r->ignored, name_cmp);
	return rc;
}

/* ---- contrast specs --------------------------------------------------------- */

const char stats_spec_builtin_text[] =
	"# The 2x3 factorial {dense, OE} x {native, opt, joint}: Table 3 of papers\n"
	"# 000/001. Arms by code: 00 dense native, 01 dense opt, 02 dense joint,\n"
	"# 10 OE native, 11 OE opt, 12 OE joint (\"01\" also names \"01_dense_opt\").\n"
	"contrast 1. Opt | Dense (01 - 00) = 01 - 00\n"
	"contrast 2. QK | Opt, Dense (02 - 01) = 02 - 01\n"
	"contrast 3. Joint | Dense (02 - 00) = 02 - 00\n"
	"contrast 4. OE | Native (10 - 00) = 10 - 00\n"
	"contrast 5. Opt | OE (11 - 10) = 11 - 10\n"
	"contrast 6. QK | Opt, OE (12 - 11) = 12 - 11\n"
	"contrast 7. Joint | OE (12 - 10) = 12 - 10\n"
	"contrast 8. Total Combined (12 - 00) = 12 - 00\n"
	"contrast 9. DoD(OE x Opt) = (11 - 10) - (01 - 00)\n"
	"contrast 10. DoD(OE x QK|Opt) = (12 - 11) - (02 - 01)\n"
	"contrast 11. DoD(OE x Joint) = (12 - 10) - (02 - 00)\n"
	"# Retention: the conditional OE gains over the dense ones.\n"
	"ratio 1. Opt | Dense (01 - 00) / 1. Opt | Dense (01 - 00)\n"
	"ratio 2. QK | Opt, Dense (02 - 01) / 2. QK | Opt, Dense (02 - 01)\n"
	"ratio 3. Joint | Dense (02 - 00) / 3. Joint | Dense (02 - 00)\n"
	"ratio 5. Opt | OE (11 - 10) / 1. Opt | Dense (01 - 00)\n"
	"ratio 6. QK | Opt, OE (12 - 11) / 2. QK | Opt, Dense (02 - 01)\n"
	"ratio 7. Joint | OE (12 - 10) / 3. Joint | Dense (02 - 00)\n";

void stats_spec_free(struct stats_spec *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->c[i].name);
		free(s->c[i].expr);
		for (size_t t = 0; t < s->c[i].n_terms; t++)
			free(s->c[i].terms[t].arm);
		free(s->c[i].terms);
	}
	free(s->c);
	free(s->r);
	free(s->name);
	memset(s, 0, sizeof *s);
}

struct expr_parser {
	const char *s, *p;     /* line text, cursor */
	const char *file;
	int line;
	struct stats_term *t;
	size_t n;
	struct err *e;
};

static int ep_fail(struct expr_parser *x, const char *what)
{
	return err_set(x->e, EXIT_USAGE, "'%s': line %d, column %d: %s", x->file, x->line,
		       (int)(x->p - x->s) + 1, what);
}

static void ep_add(struct expr_parser *x, int coef, const char *arm, int depth)
{
	for (size_t i = 0; i < x->n; i++)
		if (x->t[i].depth == depth && !strcmp(x->t[i].arm, arm)) {
			x->t[i].coef += coef;
			return;
		}
	x->t = xrealloc(x->t, (x->n + 1) * sizeof *x->t);
	x->t[x->n].coef = coef;
	x->t[x->n].arm = xstrdup(arm);
	x->t[x->n].depth = depth;
	x->n++;
}

static int ep_expr(struct expr_parser *x, int sign, int level);

static int ep_term(struct expr_parser *x, int sign, int level)
{
	x->p = skip_ws(x->p);
	if (*x->p == '(') {
		x->p++;
		if (ep_expr(x, sign, level + 1) < 0)
			return -1;
		x->p = skip_ws(x->p);
		if (*x->p != ')')
			return ep_fail(x, "expected ')'");
		x->p++;
		return 0;
	}
	/* [dN/]ARM */
	int depth = 0;
	const char *q = x->p;
	if (*q == 'd' && q[1] >= '0' && q[1] <= '9') {
		const char *r = q + 1;
		while (*r >= '0' && *r <= '9')
			r++;
		if (*r == '/') {
			char num[16];
			size_t k = (size_t)(r - q - 1);
			if (k >= sizeof num)
				return ep_fail(x, "depth too large");
			memcpy(num, q + 1, k);
			num[k] = '\0';
			if (parse_depth(num, &depth) < 0)
				return ep_fail(x, "depth is not a positive integer");
			x->p = r + 1;
		}
	}
	size_t n = 0;
	while ((x->p[n] >= 'a' && x->p[n] <= 'z') || (x->p[n] >= 'A' && x->p[n] <= 'Z') ||
	       (x->p[n] >= '0' && x->p[n] <= '9') || x->p[n] == '_' || x->p[n] == '.')
		n++;
	if (!n)
		return ep_fail(x, "expected an arm name or '('");
	char *arm = xstrndup(x->p, n);
	x->p += n;
	ep_add(x, sign, arm, depth);
	free(arm);
	return 0;
}

static int ep_expr(struct expr_parser *x, int sign, int level)
{
	if (level > 16)
		return ep_fail(x, "parentheses nested too deeply");
	x->p = skip_ws(x->p);
	int s = 1;
	if (*x->p == '+' || *x->p == '-') {
		s = *x->p == '-' ? -1 : 1;
		x->p++;
	}
	for (;;) {
		if (ep_term(x, sign * s, level) < 0)
			return -1;
		x->p = skip_ws(x->p);
		if (*x->p != '+' && *x->p != '-')
			return 0;
		s = *x->p == '-' ? -1 : 1;
		x->p++;
	}
}

static char *trim_dup(const char *a, const char *b)
{
	while (a < b && (*a == ' ' || *a == '\t'))
		a++;
	while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
		b--;
	return xstrndup(a, (size_t)(b - a));
}

static ptrdiff_t spec_find(const struct stats_spec *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->c[i].name, name))
			return (ptrdiff_t)i;
	return -1;
}

static int spec_line(struct stats_spec *s, const char *l, const char *file, int line,
		     struct err *e)
{
	const char *q = skip_ws(l);
	if (!strncmp(q, "contrast", 8) && (q[8] == ' ' || q[8] == '\t')) {
		const char *eq = strchr(q + 8, '=');
		if (!eq)
			return err_set(e, EXIT_USAGE, "'%s': line %d: expected 'contrast NAME = "
				       "EXPRESSION'", file, line);
		char *name = trim_dup(q + 8, eq);
		if (!*name) {
			free(name);
			return err_set(e, EXIT_USAGE, "'%s': line %d: the contrast has no name", file, line);
		}
		if (spec_find(s, name) >= 0) {
			err_set(e, EXIT_USAGE, "'%s': line %d: contrast '%s' is defined twice", file, line,
				name);
			free(name);
			return -1;
		}
		struct expr_parser x = {.s = l, .p = eq + 1, .file = file, .line = line, .e = e};
		if (ep_expr(&x, 1, 0) == 0) {
			x.p = skip_ws(x.p);
			if (*x.p)
				ep_fail(&x, "unexpected text after the expression");
		}
		if (e->code == 0) {
			/* Drop cancelled terms. */
			size_t k = 0;
			for (size_t i = 0; i < x.n; i++) {
				if (x.t[i].coef)
					x.t[k++] = x.t[i];
				else
					free(x.t[i].arm);
			}
			x.n = k;
			if (!k) {
				x.p = l + strlen(l);
				err_set(e, EXIT_USAGE, "'%s': line %d: the expression of '%s' cancels to "
					"nothing", file, line, name);
			}
		}
		if (e->code) {
			for (size_t i = 0; i < x.n; i++)
				free(x.t[i].arm);
			free(x.t);
			free(name);
			return -1;
		}
		s->c = xrealloc(s->c, (s->n + 1) * sizeof *s->c);
		struct stats_contrast_def *d = &s->c[s->n++];
		d->name = name;
		d->expr = trim_dup(eq + 1, l + strlen(l));
		d->line = line;
		d->terms = x.t;
		d->n_terms = x.n;
		return 0;
	}
	if (!strncmp(q, "ratio", 5) && (q[5] == ' ' || q[5] == '\t')) {
		const char *sl = strstr(q + 5, " / ");
		if (!sl)
			return err_set(e, EXIT_USAGE, "'%s': line %d: expected 'ratio NAME / NAME'", file,
				       line);
		char *a = trim_dup(q + 5, sl), *b = trim_dup(sl + 3, q + strlen(q));
		ptrdiff_t ia = spec_find(s, a), ib = spec_find(s, b);
		if (ia < 0 || ib < 0) {
			err_set(e, EXIT_USAGE, "'%s': line %d: ratio: no contrast '%s' defined above",
				file, line, ia < 0 ? a : b);
			free(a);
			free(b);
			return -1;
		}
		free(a);
		free(b);
		s->r = xrealloc(s->r, (s->n_r + 1) * sizeof *s->r);
		s->r[s->n_r].num = (size_t)ia;
		s->r[s->n_r].den = (size_t)ib;
		s->r[s->n_r].line = line;
		s->n_r++;
		return 0;
	}
	return err_set(e, EXIT_USAGE, "'%s': line %d: expected 'contrast NAME = EXPRESSION' or "
		       "'ratio NAME / NAME'", file, line);
}

int stats_spec_parse(struct stats_spec *s, const char *text, const char *name, struct err *e)
{
	struct err local;
	if (!e)
		e = &local;
	memset(s, 0, sizeof *s);
	s->name = xstrdup(name);
	err_clear(e);
	int line = 0;
	const char *p = text;
	for (char *l; (l = next_line(&p));) {
		line++;
		const char *q = skip_ws(l);
		int rc = 0;
		if (*q && *q != '#')
			rc = spec_line(s, l, name, line, e);
		free(l);
		if (rc < 0) {
			stats_spec_free(s);
			return -1;
		}
	}
	if (!s->n) {
		stats_spec_free(s);
		return err_set(e, EXIT_USAGE, "'%s': no contrasts", name);
	}
	return 0;
}

int stats_spec_load(struct stats_spec *s, const char *path, struct err *e)
{
	char *text = text_load(path, e);
	if (!text)
		return -1;
	int rc = stats_spec_parse(s, text, path, e);
	free(text);
	return rc;
}

int stats_spec_builtin(struct stats_spec *s, struct err *e)
{
	if (stats_spec_parse(s, stats_spec_builtin_text, "built-in", e) < 0)
		return -1;
	s->builtin = 1;
	return 0;
}

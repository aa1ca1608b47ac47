/* rederive.c: supkit verify's re-derivation of a supplement's derived
 * entries (see rederive.h).
 *
 * Leaves out: what each number means (the commands' own code, which this
 * runs as child processes) and which entries are derived (derive.c).
 * Reference: supkit-verify(1), RE-DERIVATION; supkit-formats(5).
 */
#define _GNU_SOURCE
#include "supplements/rederive.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/claims.h"
#include "lib/cli.h"
#include "lib/derivation.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"
#include "lib/sha256.h"
#include "lib/stream.h"
#include "supplements/derive.h"
#include "supplements/unpack.h"

#define OUT_MAX ((size_t)256 << 20)  /* a child's JSON output */

/* ---- the commands verify runs, and their rules ---- */

enum { A_FLAG, A_VALUE, A_PATH };
struct opt_rule {
	const char *name;
	int kind;
	int keep_in_check;   /* carried into a --check run of claims */
};
struct tool_rule {
	const char *command;
	const struct opt_rule *opts;
	int operands_in_check;   /* operands carried into a --check run */
	double rel, abs;         /* numbers agree within these */
	const char *rule;        /* the rule, as findings name it */
};

static const struct opt_rule compute_opts[] = {
	{"--json", A_FLAG, 0}, {"--table", A_FLAG, 0}, {"--depth", A_VALUE, 0}, {"--arm", A_VALUE, 0},
	{"--set", A_VALUE, 0}, {"--neumann-count", A_VALUE, 0}, {"--denominator", A_VALUE, 0},
	{"--tabneu-rows", A_VALUE, 0}, {"--runs", A_PATH, 0}, {NULL, 0, 0}};
static const struct opt_rule stats_opts[] = {
	{"--json", A_FLAG, 0}, {"--input-decimals", A_VALUE, 1}, {"--names", A_PATH, 1},
	{"--contrasts", A_PATH, 0}, {NULL, 0, 0}};
static const struct opt_rule geometry_opts[] = {
	{"--json", A_FLAG, 0}, {"--allow-missing", A_FLAG, 0}, {"--method", A_VALUE, 0},
	{"--spectrum", A_FLAG, 0}, {NULL, 0, 0}};
static const struct opt_rule digest_opts[] = {{"--json", A_FLAG, 0}, {NULL, 0, 0}};
static const struct opt_rule step0_opts[] = {
	{"--json", A_FLAG, 0}, {"--config", A_PATH, 0}, {"--data", A_PATH, 0}, {"--set", A_VALUE, 0},
	{"--init-from", A_PATH, 0}, {"--tokens", A_VALUE, 0}, {NULL, 0, 0}};
static const struct opt_rule trajectory_opts[] = {
	{"--json", A_FLAG, 0}, {"--config", A_PATH, 0}, {"--data", A_PATH, 0}, {"--set", A_VALUE, 0},
	{"--init-from", A_PATH, 0}, {"--steps", A_VALUE, 0}, {NULL, 0, 0}};

#define RULE_EXACT "exact: the command is deterministic"
#define RULE_BF16 "within 1e-2 relative: the trainer's bf16 arithmetic"
static const struct tool_rule tools[] = {
	{"compute", compute_opts, 0, 0, 0, RULE_EXACT},
	{"digest", digest_opts, 0, 0, 0, RULE_EXACT},
	{"stats", stats_opts, 1, 1e-12, 0, "within 1e-12 relative: t quantiles from GSL"},
	{"geometry", geometry_opts, 0, 1e-9, 1e-300, "within 1e-9 relative: LAPACK and BLAS"},
	{"step0", step0_opts, 0, 1e-9, 1e-300, "within 1e-9 relative: float64 through BLAS"},
	{"trajectory", trajectory_opts, 0, 1e-9, 1e-300, "within 1e-9 relative: float64 through BLAS"},
	{NULL, NULL, 0, 0, 0, NULL},
};

static const struct tool_rule *tool_rule(const char *tool, const char *command)
{
	if (strcmp(tool, "supkit-audit"))
		return NULL;
	for (int i = 0; tools[i].command; i++)
		if (!strcmp(tools[i].command, command))
			return &tools[i];
	return NULL;
}

static const struct opt_rule *opt_rule(const struct tool_rule *t, const char *name)
{
	for (int i = 0; t->opts[i].name; i++)
		if (!strcmp(t->opts[i].name, name))
			return &t->opts[i];
	return NULL;
}

/* Check recorded arguments against the command's table: 0, or a reason
 * (static or in buf). */
static const char *args_refused(const struct tool_rule *t, char *const *args, size_t n, char *buf, size_t bn)
{
	for (size_t i = 0; i < n; i++) {
		const char *a = args[i];
		if (a[0] == '-') {
			const struct opt_rule *r = opt_rule(t, a);
			if (!r) {
				snprintf(buf, bn, "its argument '%.200s' is not one supkit verify runs", a);
				return buf;
			}
			if (r->kind == A_FLAG)
				continue;
			if (++i == n) {
				snprintf(buf, bn, "its option '%.200s' has no value", a);
				return buf;
			}
			if (r->kind == A_PATH && (!deriv_path_safe(args[i], 1) || args[i][0] == '-')) {
				snprintf(buf, bn, "its path '%.200s' is not a safe relative path", args[i]);
				return buf;
			}
			continue;
		}
		if (!deriv_path_safe(a, 1)) {
			snprintf(buf, bn, "its path '%.200s' is not a safe relative path", a);
			return buf;
		}
	}
	return NULL;
}

/* ---- the report ---- */

static struct rd_entry *add_entry(struct rd_report *r, const char *path, const char *kind, const char *what)
{
	r->e = xrealloc(r->e, (r->n + 1) * sizeof *r->e);
	struct rd_entry *x = &r->e[r->n++];
	memset(x, 0, sizeof *x);
	x->path = xstrdup(path);
	x->kind = xstrdup(kind);
	x->what = xstrdup(what);
	return x;
}

static void set_why(struct rd_entry *x, char *why)
{
	if (!x->why) {
		x->why = why;
		return;
	}
	char *j = xasprintf("%s; %s", x->why, why);
	free(x->why);
	free(why);
	x->why = j;
}

static void add_note(struct rd_entry *x, char *note)
{
	if (!x->note) {
		x->note = note;
		return;
	}
	char *j = xasprintf("%s; %s", x->note, note);
	free(x->note);
	free(note);
	x->note = j;
}

/* One number compared: agree or a finding. */
static void number(struct rd_report *r, struct rd_entry *x, int agree, const char *where, const char *pub,
		   const char *re, const char *rule)
{
	x->checked++;
	x->done++;
	if (agree) {
		x->agreed++;
		return;
	}
	x->disagreed++;
	r->f = xrealloc(r->f, (r->nf + 1) * sizeof *r->f);
	struct rd_finding *f = &r->f[r->nf++];
	f->entry = xstrdup(x->path);
	f->where = xstrdup(where);
	f->published = xstrdup(pub);
	f->rederived = xstrdup(re);
	f->rule = xstrdup(rule);
}

void rd_report_release(struct rd_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->e[i].path);
		free(r->e[i].kind);
		free(r->e[i].what);
		free(r->e[i].why);
		free(r->e[i].note);
	}
	free(r->e);
	for (size_t i = 0; i < r->nf; i++) {
		free(r->f[i].entry);
		free(r->f[i].where);
		free(r->f[i].published);
		free(r->f[i].rederived);
		free(r->f[i].rule);
	}
	free(r->f);
	free(r->data_note);
	memset(r, 0, sizeof *r);
}

/* ---- JSON trees ---- */

static int is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/* Numbers (and booleans and digests) under node, the derivation block aside. */
static size_t count_leaves(const cJSON *node, int top)
{
	size_t n = 0;
	for (const cJSON *c = node ? node->child : NULL; c; c = c->next) {
		if (top && c->string && !strcmp(c->string, DERIV_KEY))
			continue;
		if (cJSON_IsNumber(c) || cJSON_IsBool(c) || (cJSON_IsString(c) && is_hex64(c->valuestring)))
			n++;
		else if (cJSON_IsArray(c) || cJSON_IsObject(c))
			n += count_leaves(c, 0);
	}
	return n;
}

static int key_plain(const char *k)
{
	if (!*k)
		return 0;
	for (const char *p = k; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '-'))
			return 0;
	return 1;
}

struct tree_cmp {
	struct rd_report *r;
	struct rd_entry *x;
	const struct tool_rule *t;
};

static void fmt_num(const cJSON *v, char *buf, size_t n)
{
	if (!v)
		snprintf(buf, n, "absent");
	else if (cJSON_IsNumber(v))
		json_format_number(v->valuedouble, buf, n);
	else if (cJSON_IsBool(v))
		snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNull(v))
		snprintf(buf, n, "null");
	else if (cJSON_IsString(v))
		snprintf(buf, n, "%.200s", v->valuestring);
	else
		snprintf(buf, n, "not a number");
}

static int close_enough(double x, double p, double rel, double abs)
{
	if (x == p)
		return 1;
	double m = fabs(x) > fabs(p) ? fabs(x) : fabs(p);
	return fabs(x - p) <= rel * m || fabs(x - p) <= abs;
}

static void cmp_leaf(struct tree_cmp *k, const char *path, const char *key, const cJSON *pub, const cJSON *re)
{
	char ps[256], rs[256];
	fmt_num(pub, ps, sizeof ps);
	fmt_num(re, rs, sizeof rs);
	double rel = k->t ? k->t->rel : 0, abs = k->t ? k->t->abs : 0;
	const char *rule = k->t ? k->t->rule : RULE_EXACT;
	/* the trainer's bf16 arithmetic in step0 and trajectory */
	if (k->t && (!strcmp(k->t->command, "step0") || !strcmp(k->t->command, "trajectory")) && key &&
	    (strstr(key, "bf16") || !strcmp(key, "ratio") || !strcmp(key, "sign_agree"))) {
		rel = 1e-2;
		rule = RULE_BF16;
	}
	int agree;
	if (cJSON_IsNumber(pub))
		agree = cJSON_IsNumber(re) && close_enough(re->valuedouble, pub->valuedouble, rel, abs);
	else if (cJSON_IsBool(pub))
		agree = cJSON_IsBool(re) && cJSON_IsTrue(pub) == cJSON_IsTrue(re);
	else
		agree = cJSON_IsString(re) && !strcmp(pub->valuestring, re->valuestring);
	if (cJSON_IsString(pub))
		rule = "exact: a SHA-256 digest";
	number(k->r, k->x, agree, path, ps, rs, rule);
}

static void cmp_tree(struct tree_cmp *k, const cJSON *pub, const cJSON *re, const char *path, int top)
{
	int i = 0;
	for (const cJSON *c = pub->child; c; c = c->next, i++) {
		if (top && c->string && !strcmp(c->string, DERIV_KEY))
			continue;
		char *p;
		const cJSON *rc;
		if (cJSON_IsArray(pub)) {
			p = xasprintf("%s[%d]", path, i);
			rc = cJSON_IsArray(re) ? cJSON_GetArrayItem(re, i) : NULL;
		} else {
			if (key_plain(c->string))
				p = *path ? xasprintf("%s.%s", path, c->string) : xstrdup(c->string);
			else
				p = xasprintf("%s[\"%.200s\"]", path, c->string);
			rc = cJSON_IsObject(re) ? cJSON_GetObjectItemCaseSensitive(re, c->string) : NULL;
		}
		/* strings: the digests (a published string where the re-derivation
		 * has a digest is one too, however it was changed) */
		int digest = cJSON_IsString(c) && (is_hex64(c->valuestring) || (cJSON_IsString(rc) && is_hex64(rc->valuestring)));
		if (cJSON_IsNumber(c) || cJSON_IsBool(c) || digest)
			cmp_leaf(k, p, cJSON_IsArray(pub) ? pub->string : c->string, c, rc);
		else if (cJSON_IsArray(c) || cJSON_IsObject(c))
			cmp_tree(k, c, rc, p, 0);
		free(p);
	}
}

/* ---- the scratch folder and the entries' bytes ---- */

struct ctx {
	const char *path;           /* the supplement */
	const struct scan *s;
	const struct rd_opts *o;
	char *scratch;              /* private temporary folder */
	char *unpacked;             /* a zip's entries, extracted on first need; NULL before */
	char *unpack_error;         /* why extraction failed, once it did */
	int n_tasks;
	char *audit_bin, *eval_bin; /* NULL: not found */
	int eval_looked;
	struct progress pg;
	size_t done_entries, n_entries;
};

/* supkit-<tool> beside this program, else on PATH; NULL when neither. */
static char *find_tool(const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			char *p = xasprintf("%s/%s", self, name);
			if (access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	const char *path = getenv("PATH");
	if (!path)
		return NULL;
	char *dup = xstrdup(path), *save = NULL;
	for (char *d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/%s", *d ? d : ".", name);
		if (access(p, X_OK) == 0) {
			free(dup);
			return p;
		}
		free(p);
	}
	free(dup);
	return NULL;
}

static const struct manifest_entry *actual(const struct ctx *c, const char *entry)
{
	return manifest_find(&c->s->actual, entry);
}

/* An open descriptor on an entry's bytes. */
static int entry_open(struct ctx *c, const char *entry, int *fd, struct err *e)
{
	if (!c->s->is_zip)
		return scan_open(c->s, c->path, entry, fd, e);
	if (c->unpack_error)
		return err_set(e, EXIT_USAGE, "%s", c->unpack_error);
	if (!c->unpacked) {
		char *dir = path_join(c->scratch, "entries");
		struct unpack_limits l;
		unpack_limits_default(&l);
		l.quiet = 1;
		struct unpack_result ur;
		if (unpack_zip(c->path, dir, &l, &ur, e) < 0) {
			c->unpack_error = xasprintf("cannot extract the supplement: %s", e->msg);
			free(dir);
			return err_set(e, EXIT_USAGE, "%s", c->unpack_error);
		}
		c->unpacked = dir;
	}
	char *p = path_join(c->unpacked, entry);
	*fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int rc = *fd < 0 ? err_errno(e, EXIT_SYS, "cannot open entry '%s'", entry) : 0;
	free(p);
	return rc;
}

/* mkdir -p of the folder of rel under root (both ours). */
static int make_parents(const char *root, const char *rel, struct err *e)
{
	char *full = path_join(root, rel);
	char *dir = path_dirname(full);
	int rc = dir_make_all(dir, e);
	free(dir);
	free(full);
	return rc;
}

/* Copy an entry (its bytes checked against the scan's SHA-256) to dest
 * (a new file), or into memory (*buf, NUL-terminated) when dest is NULL. */
static int entry_copy(struct ctx *c, const char *entry, const char *dest, char **buf, size_t *len,
		      struct err *e)
{
	const struct manifest_entry *a = actual(c, entry);
	if (!a)
		return err_set(e, EXIT_USAGE, "entry '%s' is not in the supplement", entry);
	if (!dest && a->size > OUT_MAX)
		return err_set(e, EXIT_USAGE, "entry '%s' is larger than %zu bytes", entry, OUT_MAX);
	int fd, out = -1;
	if (entry_open(c, entry, &fd, e) < 0)
		return -1;
	if (dest) {
		out = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0) {
			close(fd);
			return err_errno(e, EXIT_SYS, "cannot create '%s'", dest);
		}
	} else {
		*buf = xmalloc((size_t)a->size + 1);
	}
	struct sha256 h;
	sha256_init(&h);
	char *chunk = xmalloc(1 << 20);
	uint64_t n = 0;
	int rc = 0;
	for (;;) {
		ssize_t k = read(fd, chunk, 1 << 20);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = err_errno(e, EXIT_SYS, "cannot read entry '%s'", entry);
			break;
		}
		if (k == 0)
			break;
		if (n + (uint64_t)k > a->size) {
			rc = err_set(e, EXIT_SYS, "entry '%s' changed since it was hashed", entry);
			break;
		}
		sha256_update(&h, chunk, (size_t)k);
		if (dest) {
			for (ssize_t w = 0; w < k;) {
				ssize_t q = write(out, chunk + w, (size_t)(k - w));
				if (q < 0 && errno == EINTR)
					continue;
				if (q < 0) {
					rc = err_errno(e, EXIT_SYS, "cannot write '%s'", dest);
					break;
				}
				w += q;
			}
			if (rc)
				break;
		} else {
			memcpy(*buf + n, chunk, (size_t)k);
		}
		n += (uint64_t)k;
	}
	free(chunk);
	close(fd);
	if (out >= 0 && close(out) != 0 && rc == 0)
		rc = err_errno(e, EXIT_SYS, "cannot write '%s'", dest);
	uint8_t d[SHA256_LEN];
	char hex[65];
	sha256_final(&h, d);
	sha256_to_hex(d, hex);
	if (rc == 0 && (n != a->size || strcmp(hex, a->sha256)))
		rc = err_set(e, EXIT_SYS, "entry '%s' changed since it was hashed", entry);
	if (!dest) {
		if (rc == 0) {
			(*buf)[n] = '\0';
			*len = (size_t)n;
		} else {
			free(*buf);
			*buf = NULL;
		}
	}
	return rc;
}

/* A JSON entry: the scan's captured bytes, else read. NULL with why set. */
static cJSON *entry_json(struct ctx *c, const char *entry, char **why)
{
	struct err e = {0};
	for (size_t i = 0; i < c->s->n_extra; i++)
		if (!strcmp(c->s->extra[i].path, entry) && c->s->extra[i].data) {
			cJSON *j = json_parse(c->s->extra[i].data, c->s->extra[i].len, entry, &e);
			if (!j)
				*why = xasprintf("%s", e.msg);
			return j;
		}
	char *buf;
	size_t len;
	if (entry_copy(c, entry, NULL, &buf, &len, &e) < 0) {
		*why = xstrdup(e.msg);
		return NULL;
	}
	cJSON *j = json_parse(buf, len, entry, &e);
	free(buf);
	if (!j)
		*why = xstrdup(e.msg);
	return j;
}

/* A fresh task folder. */
static char *task_dir(struct ctx *c, struct err *e)
{
	char *d = xasprintf("%s/t%d", c->scratch, c->n_tasks++);
	if (mkdir(d, 0700) != 0) {
		err_errno(e, EXIT_SYS, "cannot create '%s'", d);
		free(d);
		return NULL;
	}
	return d;
}

/* Place entry at rel under dir. */
static int place(struct ctx *c, const char *dir, const char *rel, const char *entry, struct err *e)
{
	if (make_parents(dir, rel, e) < 0)
		return -1;
	char *dest = path_join(dir, rel);
	int rc = entry_copy(c, entry, dest, NULL, NULL, e);
	free(dest);
	return rc;
}

/* Run bin with argv in dir, its standard output and error into files beside
 * dir (not in it: no input can be named like them); the JSON it printed
 * (NULL with *why set when it failed or printed none). *status: its exit
 * status (-1 when it did not exit). */
static cJSON *run_json(const char *bin, char *const argv[], const char *dir, int *status, char **why)
{
	char *outp = xasprintf("%s.stdout", dir), *errp = xasprintf("%s.stderr", dir);
	*status = -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		*why = xasprintf("cannot start '%s': %s", bin, strerror(errno));
		free(outp);
		free(errp);
		return NULL;
	}
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int er = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in < 0 || o < 0 || er < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(er, 2) < 0 || chdir(dir) != 0)
			_exit(127);
		execv(bin, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			*why = xasprintf("cannot wait for '%s': %s", bin, strerror(errno));
			free(outp);
			free(errp);
			return NULL;
		}
	if (WIFEXITED(st))
		*status = WEXITSTATUS(st);
	char *text = NULL;
	size_t len = 0;
	struct err e = {0};
	cJSON *j = NULL;
	if (file_read_all(outp, OUT_MAX, &text, &len, &e) == 0 && len)
		j = json_parse(text, len, "its output", &e);
	free(text);
	if (!j || (*status != 0 && *status != 1)) {
		char *et = NULL;
		size_t el = 0;
		struct err e2;
		file_read_all(errp, 1 << 16, &et, &el, &e2);
		char *nl = et ? strchr(et, '\n') : NULL;
		if (nl)
			*nl = '\0';
		const char *base = path_basename(bin);
		if (*status < 0)
			*why = xasprintf("%s did not exit (a signal)", base);
		else if (*status == 127 && (!et || !*et))
			*why = xasprintf("%s could not be run", base);
		else
			*why = xasprintf("%s exited %d%s%s", base, *status, et && *et ? ": " : "", et ? et : "");
		free(et);
		cJSON_Delete(j);
		j = NULL;
	}
	free(outp);
	free(errp);
	return j;
}

/* The audit tool, found once. */
static const char *audit_bin(struct ctx *c)
{
	if (!c->audit_bin)
		c->audit_bin = find_tool("supkit-audit");
	return c->audit_bin;
}

/* ---- derivations recorded as commands ---- */

/* Copy a parsed derivation's inputs into dir under their recorded paths;
 * NULL, or why not (owned). Notes inputs whose bytes differ from those the
 * derivation read. */
static char *place_inputs(struct ctx *c, const struct deriv *d, const char *dir, struct rd_entry *x)
{
	int step0 = !strcmp(d->command, "step0") || !strcmp(d->command, "trajectory");
	for (size_t i = 0; i < d->n_in; i++) {
		const struct deriv_input *in = &d->in[i];
		if (!strcmp(in->path, "-"))
			return xstrdup("it read standard input");
		if (!in->entry || !actual(c, in->entry)) {
			size_t l = strlen(in->path);
			if (step0 && l > 4 && !strcmp(in->path + l - 4, ".bin"))
				return xasprintf("%s: no token sample packed ('%s')", d->command, in->path);
			return xasprintf("its input '%s' is not in the supplement", in->path);
		}
		const struct manifest_entry *a = actual(c, in->entry);
		if (in->sha256[0] && strcmp(a->sha256, in->sha256))
			add_note(x, xasprintf("input '%s' holds other bytes than the derivation read", in->entry));
		struct err e = {0};
		if (place(c, dir, in->path, in->entry, &e) < 0)
			return xasprintf("%s", e.msg);
	}
	return NULL;
}

static char **argv_new(const char *bin, const char *command, size_t extra)
{
	char **v = xcalloc(extra + 3, sizeof *v);
	v[0] = (char *)bin;
	v[1] = (char *)command;
	return v;
}

static void do_command(struct ctx *c, struct rd_report *r, const struct manifest_entry *m, const cJSON *dv)
{
	struct deriv d;
	struct err e = {0};
	char ctx[600];
	snprintf(ctx, sizeof ctx, "'%s': derivation", m->path);
	int ok = deriv_parse(dv, ctx, &d, &e) == 0;
	char *what = ok ? xasprintf("supkit audit %s", d.command) : xstrdup("?");
	if (ok && strcmp(d.tool, "supkit-audit"))
		free(what), what = xasprintf("%s %s", d.tool, d.command);
	struct rd_entry *x = add_entry(r, m->path, "command", what);
	free(what);
	char *why = NULL;
	cJSON *pub = entry_json(c, m->path, &why);
	if (pub)
		x->checked = count_leaves(pub, 1);
	const struct tool_rule *t = ok ? tool_rule(d.tool, d.command) : NULL;
	char buf[400];
	const char *refused = t ? args_refused(t, d.args, d.n_args, buf, sizeof buf) : NULL;
	char *dir = NULL;
	if (!ok) {
		free(why);
		why = xasprintf("its derivation record is not readable: %s", e.msg);
	} else if (!why && !t)
		why = xasprintf("'%s %s' is not a command supkit verify runs", d.tool, d.command);
	else if (!why && refused)
		why = xstrdup(refused);
	else if (!why && !audit_bin(c))
		why = xstrdup("supkit-audit not found (beside supkit-verify or on PATH)");
	if (!why && !(dir = task_dir(c, &e)))
		why = xstrdup(e.msg);
	if (!why)
		why = place_inputs(c, &d, dir, x);
	if (!why && strcmp(d.version, SUPKIT_VERSION))
		add_note(x, xasprintf("derived by supkit %s, re-derived by %s", d.version, SUPKIT_VERSION));
	if (!why) {
		char **argv = argv_new(c->audit_bin, d.command, d.n_args + 1);
		size_t k = 2;
		int has_json = 0;
		for (size_t i = 0; i < d.n_args; i++) {
			argv[k++] = d.args[i];
			has_json |= !strcmp(d.args[i], "--json");
		}
		if (!has_json)
			argv[k++] = "--json";
		int st;
		cJSON *re = run_json(c->audit_bin, argv, dir, &st, &why);
		free(argv);
		if (re && st != 0) {
			why = xasprintf("supkit-audit %s exited %d", d.command, st);
			cJSON_Delete(re);
			re = NULL;
		}
		if (re) {
			x->rederived = 1;
			x->checked = 0;
			struct tree_cmp k2 = {r, x, t};
			cmp_tree(&k2, pub, re, "", 1);
			cJSON_Delete(re);
		}
	}
	if (why)
		set_why(x, why);
	cJSON_Delete(pub);
	free(dir);
	deriv_release(&d);
}

/* ---- compute --check of a foreign compute audit ---- */

static void do_check(struct ctx *c, struct rd_report *r, const struct manifest_entry *m)
{
	struct rd_entry *x = add_entry(r, m->path, "check", "supkit audit compute --check");
	char *why = NULL;
	struct err e = {0};
	cJSON *pub = entry_json(c, m->path, &why);
	if (pub)
		x->checked = count_leaves(cJSON_GetObjectItemCaseSensitive(pub, "arms"), 0);
	char *dir = NULL;
	if (!why && !audit_bin(c))
		why = xstrdup("supkit-audit not found (beside supkit-verify or on PATH)");
	if (!why && !(dir = task_dir(c, &e)))
		why = xstrdup(e.msg);
	if (!why && place(c, dir, "published.json", m->path, &e) < 0)
		why = xstrdup(e.msg);
	if (!why) {
		char *argv[] = {c->audit_bin, "compute", "--check", "published.json", "--json", NULL};
		int st;
		cJSON *re = run_json(c->audit_bin, argv, dir, &st, &why);
		const cJSON *figs = cJSON_GetObjectItemCaseSensitive(re, "figures");
		if (re && !cJSON_IsArray(figs))
			why = xstrdup("supkit-audit compute --check printed no figures");
		if (re && cJSON_IsArray(figs)) {
			x->rederived = 1;
			x->checked = 0;
			for (const cJSON *f = figs->child; f; f = f->next) {
				const cJSON *lb = cJSON_GetObjectItemCaseSensitive(f, "label");
				const cJSON *pa = cJSON_GetObjectItemCaseSensitive(f, "path");
				const cJSON *pu = cJSON_GetObjectItemCaseSensitive(f, "published");
				const cJSON *rc = cJSON_GetObjectItemCaseSensitive(f, "recomputed");
				const cJSON *ag = cJSON_GetObjectItemCaseSensitive(f, "agrees");
				const cJSON *no = cJSON_GetObjectItemCaseSensitive(f, "note");
				char *where = xasprintf("%s %s", cJSON_IsString(lb) ? lb->valuestring : "?",
							cJSON_IsString(pa) ? pa->valuestring : "?");
				char *rule = xasprintf("rounding to the printed decimals%s%s", cJSON_IsString(no) ? "; " : "",
						       cJSON_IsString(no) ? no->valuestring : "");
				number(r, x, cJSON_IsTrue(ag), where, cJSON_IsString(pu) ? pu->valuestring : "?",
				       cJSON_IsString(rc) ? rc->valuestring : "?", rule);
				free(where);
				free(rule);
			}
		}
		cJSON_Delete(re);
	}
	if (why)
		set_why(x, why);
	cJSON_Delete(pub);
	free(dir);
}

/* ---- claims ---- */

static void do_claims(struct ctx *c, struct rd_report *r, const struct manifest_entry *m, const cJSON *dv)
{
	struct rd_entry *x = add_entry(r, m->path, "claims", "claims (each by its command's --check)");
	char *why = NULL;
	cJSON *pub = entry_json(c, m->path, &why);
	struct err e = {0};
	if (pub && claims_validate(pub, m->path, &e) < 0) {
		why = xstrdup(e.msg);
		cJSON_Delete(pub);
		pub = NULL;
	}
	if (!pub) {
		set_why(x, why);
		return;
	}
	const cJSON *list = claims_list(pub);
	size_t nc = (size_t)cJSON_GetArraySize(list);
	/* each claim's group: the manifest's derivation with the same key */
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(dv, "derivations");
	size_t ng = cJSON_IsArray(groups) ? (size_t)cJSON_GetArraySize(groups) : 0;
	struct deriv *gd = xcalloc(ng + 1, sizeof *gd);
	char **gk = xcalloc(ng + 1, sizeof *gk);
	int *gok = xcalloc(ng + 1, sizeof *gok);
	size_t gi = 0;
	for (const cJSON *g = ng ? groups->child : NULL; g; g = g->next, gi++) {
		gok[gi] = deriv_parse(g, m->path, &gd[gi], &e) == 0;
		gk[gi] = gok[gi] ? deriv_key(&gd[gi]) : xstrdup("");
	}
	int *claim_group = xmalloc((nc + 1) * sizeof *claim_group);
	size_t ci = 0;
	for (const cJSON *cl = list->child; cl; cl = cl->next, ci++) {
		claim_group[ci] = -1;
		struct deriv d;
		if (deriv_parse(claims_derivation(pub, cl), m->path, &d, &e) == 0) {
			char *key = deriv_key(&d);
			for (size_t q = 0; q < ng && claim_group[ci] < 0; q++)
				if (gok[q] && !strcmp(gk[q], key))
					claim_group[ci] = (int)q;
			free(key);
		}
		deriv_release(&d);
	}
	size_t ungrouped = 0;
	for (size_t i = 0; i < nc; i++)
		ungrouped += claim_group[i] < 0;
	if (ungrouped)
		set_why(x, xasprintf("%zu claims have a derivation the manifest does not record", ungrouped));
	for (size_t q = 0; q < ng; q++) {
		size_t members = 0;
		for (size_t i = 0; i < nc; i++)
			members += claim_group[i] == (int)q;
		if (!members)
			continue;
		const struct tool_rule *t = gok[q] ? tool_rule(gd[q].tool, gd[q].command) : NULL;
		char buf[400];
		const char *refused = t ? args_refused(t, gd[q].args, gd[q].n_args, buf, sizeof buf) : NULL;
		char *gwhy = NULL, *dir = NULL;
		if (!t || (strcmp(t->command, "stats") && strcmp(t->command, "compute")))
			gwhy = xasprintf("claims of '%s %s': not a command whose claims supkit verify checks",
					 gok[q] ? gd[q].tool : "?", gok[q] ? gd[q].command : "?");
		else if (refused)
			gwhy = xasprintf("claims of supkit audit %s: %s", t->command, refused);
		else if (!audit_bin(c))
			gwhy = xstrdup("supkit-audit not found (beside supkit-verify or on PATH)");
		if (!gwhy && !(dir = task_dir(c, &e)))
			gwhy = xstrdup(e.msg);
		/* a compute claim names its arm, depth and set: its check reads no file */
		if (!gwhy && t->operands_in_check)
			gwhy = place_inputs(c, &gd[q], dir, x);
		/* the group's claims, in a file of their own beside the folder */
		char *cname = dir ? xasprintf("%s.claims.json", dir) : NULL;
		int *orig = xmalloc((members + 1) * sizeof *orig);
		if (!gwhy) {
			cJSON *f = claims_new();
			cJSON *fl = cJSON_GetObjectItemCaseSensitive(f, "claims");
			size_t k = 0;
			ci = 0;
			for (const cJSON *cl = list->child; cl; cl = cl->next, ci++)
				if (claim_group[ci] == (int)q) {
					orig[k++] = (int)ci;
					cJSON *one = cJSON_Duplicate(cl, 1);
					cJSON_ReplaceItemInObjectCaseSensitive(
						one, "derivation", cJSON_Duplicate(claims_derivation(pub, cl), 1));
					cJSON_AddItemToArray(fl, one);
				}
			if (json_write_file(cname, f, &e) < 0)
				gwhy = xstrdup(e.msg);
			cJSON_Delete(f);
		}
		if (!gwhy) {
			char **argv = argv_new(c->audit_bin, t->command, gd[q].n_args + 4);
			size_t k = 2;
			argv[k++] = "--check";
			argv[k++] = cname;
			argv[k++] = "--json";
			for (size_t i = 0; i < gd[q].n_args; i++) {
				const char *a = gd[q].args[i];
				if (a[0] == '-') {
					const struct opt_rule *o = opt_rule(t, a);
					int keep = o && o->keep_in_check;
					if (keep)
						argv[k++] = gd[q].args[i];
					if (o && o->kind != A_FLAG && ++i < gd[q].n_args && keep)
						argv[k++] = gd[q].args[i];
				} else if (t->operands_in_check) {
					argv[k++] = gd[q].args[i];
				}
			}
			int st;
			cJSON *re = run_json(c->audit_bin, argv, dir, &st, &gwhy);
			free(argv);
			const cJSON *figs = cJSON_GetObjectItemCaseSensitive(re, "figures");
			if (re && !cJSON_IsArray(figs))
				gwhy = xasprintf("supkit-audit %s --check printed no figures", t->command);
			for (const cJSON *f = cJSON_IsArray(figs) ? figs->child : NULL; f; f = f->next) {
				const cJSON *cl = cJSON_GetObjectItemCaseSensitive(f, "claim");
				if (!cJSON_IsNumber(cl) || cl->valuedouble < 0 || cl->valuedouble >= (double)members)
					continue;
				int oi = orig[(int)cl->valuedouble];
				const cJSON *claim = cJSON_GetArrayItem(list, oi);
				const char *wh = cJSON_GetObjectItemCaseSensitive(claim, "where")->valuestring;
				const char *val = cJSON_GetObjectItemCaseSensitive(claim, "value")->valuestring;
				const cJSON *st2 = cJSON_GetObjectItemCaseSensitive(f, "status");
				const cJSON *ag = cJSON_GetObjectItemCaseSensitive(f, "agrees");
				const cJSON *rv = cJSON_GetObjectItemCaseSensitive(f, "computed");
				if (!rv)
					rv = cJSON_GetObjectItemCaseSensitive(f, "recomputed");
				char *where = xasprintf("claims[%d] (%s)", oi, wh);
				if (cJSON_IsString(st2) && !strcmp(st2->valuestring, "missing")) {
					const cJSON *wy = cJSON_GetObjectItemCaseSensitive(f, "why");
					set_why(x, xasprintf("%s: not re-derived: %s", where,
							     cJSON_IsString(wy) ? wy->valuestring : "missing"));
					free(where);
					continue;
				}
				int agree = cJSON_IsString(st2) ? strcmp(st2->valuestring, "inconsistent") != 0 : cJSON_IsTrue(ag);
				const cJSON *idec = cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(claim, "figure"), "input_decimals");
				char *rule;
				if (!strcmp(t->command, "stats") && cJSON_IsNumber(idec))
					rule = xasprintf("rounding to the printed decimals, from inputs printed to %d decimals",
							 (int)idec->valuedouble);
				else
					rule = xstrdup("rounding of the re-derived value to the printed decimals");
				number(r, x, agree, where, val, cJSON_IsString(rv) ? rv->valuestring : "?", rule);
				free(rule);
				free(where);
			}
			if (re)
				x->rederived = 1;
			cJSON_Delete(re);
		}
		if (gwhy)
			set_why(x, xasprintf("%zu claims: %s", members, gwhy)), free(gwhy);
		free(orig);
		free(cname);
		free(dir);
	}
	/* checked counts every claim; those not re-derived stay out of done */
	if (x->checked < nc)
		x->checked = nc;
	for (size_t q = 0; q < ng; q++) {
		deriv_release(&gd[q]);
		free(gk[q]);
	}
	free(gd);
	free(gk);
	free(gok);
	free(claim_group);
	cJSON_Delete(pub);
}

/* ---- run records ---- */

static const char *role_entry(const cJSON *dv, const char *role)
{
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(dv, "inputs");
	for (const cJSON *x = cJSON_IsArray(in) ? in->child : NULL; x; x = x->next) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(x, "role");
		const cJSON *en = cJSON_GetObjectItemCaseSensitive(x, "entry");
		if (cJSON_IsString(r) && !strcmp(r->valuestring, role) && cJSON_IsString(en) &&
		    deriv_path_safe(en->valuestring, 0))
			return en->valuestring;
	}
	return NULL;
}

/* "key = value" of a config text (the canonical form the trainer writes). */
static int config_value(const char *text, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) || (l[kl] != ' ' && l[kl] != '='))
			continue;
		const char *p = l + kl;
		while (*p == ' ')
			p++;
		if (*p != '=')
			continue;
		p++;
		while (*p == ' ')
			p++;
		size_t m = strcspn(p, " \t\r\n#");
		snprintf(out, n, "%.*s", (int)m, p);
		return 0;
	}
	return -1;
}

static void cmp_num_json(struct rd_report *r, struct rd_entry *x, const char *where, const cJSON *pub,
			 const cJSON *re, double rel, const char *rule)
{
	char ps[256], rs[256];
	fmt_num(pub, ps, sizeof ps);
	fmt_num(re, rs, sizeof rs);
	int agree;
	if (cJSON_IsNumber(pub))
		agree = cJSON_IsNumber(re) && close_enough(re->valuedouble, pub->valuedouble, rel, 0);
	else if (cJSON_IsString(pub))
		agree = cJSON_IsString(re) && !strcmp(re->valuestring, pub->valuestring);
	else
		agree = cJSON_IsNull(pub) ? cJSON_IsNull(re) : 0;
	number(r, x, agree, where, ps, rs, rule);
}

/* The run record's numbers that follow from its config, curve and checkpoint. */
static const char *const run_accounting[][2] = {
	{"num_params", "params.backbone"}, {"flops_per_token", "flops.per_token"},
	{"tokens_per_step", "model.tokens_per_step"}, {"config_sha256", "config_sha256"}, {"depth", "depth"},
};

static const cJSON *jpath(const cJSON *j, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	char *save, *tok = strtok_r(buf, ".", &save);
	while (tok && j) {
		j = cJSON_GetObjectItemCaseSensitive(j, tok);
		tok = strtok_r(NULL, ".", &save);
	}
	return j;
}

static void do_run(struct ctx *c, struct rd_report *r, const struct manifest_entry *m, const cJSON *dv)
{
	struct rd_entry *x = add_entry(r, m->path, "run", "supkit train (its accounting, config and curve)");
	char *why = NULL;
	struct err e = {0};
	cJSON *pub = entry_json(c, m->path, &why);
	if (!pub) {
		set_why(x, why);
		return;
	}
	const char *cfg = role_entry(dv, "config"), *curve = role_entry(dv, "curve"),
		   *ckpt = role_entry(dv, "checkpoint");
	/* what is derived, and so counted */
	const cJSON *pa = cJSON_GetObjectItemCaseSensitive(pub, "parameter_accounting");
	size_t n_acc = 0;
	for (size_t i = 0; i < sizeof run_accounting / sizeof *run_accounting; i++)
		n_acc += cJSON_GetObjectItemCaseSensitive(pub, run_accounting[i][0]) != NULL;
	n_acc += count_leaves(pa, 0);
	static const char *const cfg_keys[] = {"seed", "steps", "eval_tokens", "heldout_tokens"};
	size_t n_cfg = 1; /* tokens */
	for (size_t i = 0; i < 4; i++)
		n_cfg += cJSON_GetObjectItemCaseSensitive(pub, cfg_keys[i]) != NULL;
	size_t n_bpb = (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(pub, "val_bpb")) ? 1 : 0) +
		       (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(pub, "heldout_bpb")) ? 1 : 0);
	size_t planned = n_acc + n_cfg + 1 + n_bpb;
	char *dir = task_dir(c, &e);
	if (!dir) {
		set_why(x, xstrdup(e.msg));
		x->checked = planned;
		cJSON_Delete(pub);
		return;
	}
	const char *rule_exact = "exact: supkit audit compute is deterministic";
	/* the accounting, from the config */
	char *cfg_text = NULL;
	size_t cfg_len = 0;
	if (!cfg) {
		set_why(x, xstrdup("no config.cfg beside it"));
	} else if (!audit_bin(c)) {
		set_why(x, xstrdup("supkit-audit not found (beside supkit-verify or on PATH)"));
	} else if (place(c, dir, "config.cfg", cfg, &e) < 0 || entry_copy(c, cfg, NULL, &cfg_text, &cfg_len, &e) < 0) {
		set_why(x, xstrdup(e.msg));
	} else {
		char *argv[] = {c->audit_bin, "compute", "--json", "--neumann-count", "full", "--denominator", "formula",
				"config.cfg", NULL};
		int st;
		char *w = NULL;
		cJSON *re = run_json(c->audit_bin, argv, dir, &st, &w);
		const cJSON *arm0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(re, "arms"), 0);
		if (!arm0) {
			set_why(x, w ? w : xstrdup("supkit-audit compute printed no arms"));
		} else {
			x->rederived = 1;
			for (size_t i = 0; i < sizeof run_accounting / sizeof *run_accounting; i++) {
				const cJSON *p = cJSON_GetObjectItemCaseSensitive(pub, run_accounting[i][0]);
				if (p)
					cmp_num_json(r, x, run_accounting[i][0], p, jpath(arm0, run_accounting[i][1]), 0,
						     rule_exact);
			}
			const cJSON *params = cJSON_GetObjectItemCaseSensitive(arm0, "params");
			for (const cJSON *k = pa ? pa->child : NULL; k; k = k->next) {
				char *where = xasprintf("parameter_accounting.%s", k->string);
				const cJSON *q = cJSON_GetObjectItemCaseSensitive(params, k->string);
				if (cJSON_IsArray(k)) {
					int i = 0;
					for (const cJSON *v = k->child; v; v = v->next, i++) {
						char *w2 = xasprintf("%s[%d]", where, i);
						cmp_num_json(r, x, w2, v, cJSON_GetArrayItem(q, i), 0, rule_exact);
						free(w2);
					}
				} else {
					cmp_num_json(r, x, where, k, q, 0, rule_exact);
				}
				free(where);
			}
			/* the keys copied from the config, and tokens */
			const char *rule_cfg = "exact: as its config.cfg says";
			double steps = NAN;
			for (size_t i = 0; i < 4; i++) {
				const cJSON *p = cJSON_GetObjectItemCaseSensitive(pub, cfg_keys[i]);
				char v[128];
				if (!p)
					continue;
				cJSON *re2 = NULL;
				if (config_value(cfg_text, cfg_keys[i], v, sizeof v) == 0) {
					char *end;
					double d = strtod(v, &end);
					if (!*end && *v)
						re2 = cJSON_CreateNumber(d);
				}
				if (!strcmp(cfg_keys[i], "steps") && re2)
					steps = re2->valuedouble;
				cmp_num_json(r, x, cfg_keys[i], p, re2, 0, rule_cfg);
				cJSON_Delete(re2);
			}
			const cJSON *tk = cJSON_GetObjectItemCaseSensitive(pub, "tokens");
			const cJSON *tps = jpath(arm0, "model.tokens_per_step");
			if (tk) {
				cJSON *re2 = isfinite(steps) && cJSON_IsNumber(tps) ? cJSON_CreateNumber(steps * tps->valuedouble)
										  : NULL;
				cmp_num_json(r, x, "tokens", tk, re2, 0, "exact: steps x tokens_per_step");
				cJSON_Delete(re2);
			}
			if (w)
				free(w);
		}
		cJSON_Delete(re);
	}
	free(cfg_text);
	/* final_loss: the curve's last line */
	const cJSON *fl = cJSON_GetObjectItemCaseSensitive(pub, "final_loss");
	if (fl && !curve) {
		set_why(x, xstrdup("final_loss: no curve.jsonl beside it"));
	} else if (fl) {
		char *text = NULL;
		size_t len = 0;
		if (entry_copy(c, curve, NULL, &text, &len, &e) < 0) {
			set_why(x, xstrdup(e.msg));
		} else {
			char *last = NULL;
			for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
				if (*l != '\n')
					last = l;
			char *nl = last ? strchr(last, '\n') : NULL;
			if (nl)
				*nl = '\0';
			cJSON *j = last ? json_parse(last, strlen(last), curve, &e) : NULL;
			x->rederived = 1;
			cmp_num_json(r, x, "final_loss", fl, cJSON_GetObjectItemCaseSensitive(j, "loss"), 0,
				     "exact: the loss of the curve's last step");
			cJSON_Delete(j);
			free(text);
		}
	}
	/* val_bpb and heldout_bpb: re-scored with --data (re-scoring is its
	 * own line of the report: it needs the data, which no supplement holds) */
	if (n_bpb) {
		if (!c->o->data_dir) {
			r->rescore_runs++;
			if (!r->data_note)
				r->data_note = xstrdup("not run: re-scoring needs --data DIR");
		} else {
			if (!c->eval_looked) {
				c->eval_bin = find_tool("supkit-eval");
				c->eval_looked = 1;
			}
			char *data = realpath(c->o->data_dir, NULL);
			if (!c->eval_bin) {
				r->rescore_runs++;
				if (!r->data_note)
					r->data_note = xstrdup("not run: supkit-eval not found");
			} else if (!data) {
				set_why(x, xasprintf("val_bpb, heldout_bpb: cannot resolve '%s': %s", c->o->data_dir,
						     strerror(errno)));
			} else if (!cfg || !ckpt) {
				set_why(x, xstrdup(!cfg ? "val_bpb, heldout_bpb: no config.cfg beside it"
						       : "val_bpb, heldout_bpb: no checkpoint packed for it"));
			} else if (place(c, dir, "model.safetensors", ckpt, &e) < 0) {
				set_why(x, xstrdup(e.msg));
			} else {
				/* the evaluation command: supkit-eval --json --config CFG --data DIR CHECKPOINT,
				 * printing {"val_bpb", "heldout_bpb"} */
				char *argv[] = {c->eval_bin, "--json", "--config", "config.cfg", "--data", data,
						"model.safetensors", NULL};
				int st;
				char *w = NULL;
				cJSON *re = run_json(c->eval_bin, argv, dir, &st, &w);
				if (!re || st != 0) {
					set_why(x, xasprintf("val_bpb, heldout_bpb: %s", w ? w : "supkit-eval failed"));
				} else {
					x->rederived = 1;
					static const char *const k[] = {"val_bpb", "heldout_bpb"};
					for (int i = 0; i < 2; i++) {
						const cJSON *p = cJSON_GetObjectItemCaseSensitive(pub, k[i]);
						if (cJSON_IsNumber(p))
							cmp_num_json(r, x, k[i], p, cJSON_GetObjectItemCaseSensitive(re, k[i]),
								     1e-6, "within 1e-6 relative: the checkpoint re-scored by supkit eval");
					}
				}
				free(w);
				cJSON_Delete(re);
			}
			free(data);
		}
	}
	if (x->checked < planned)
		x->checked = planned;
	free(dir);
	cJSON_Delete(pub);
}

/* ---- checkpoint digests ---- */

static void do_digests(struct rd_report *r, const struct manifest *expected, const struct scan *s)
{
	for (size_t i = 0; i < expected->n; i++) {
		const struct manifest_entry *w = &expected->e[i];
		if (!w->st_digest[0])
			continue;
		const struct manifest_entry *a = manifest_find(&s->actual, w->path);
		struct rd_entry *x = add_entry(r, w->path, "digest", "the safetensors content digest");
		if (!a || !a->st_digest[0]) {
			x->checked = 1;
			set_why(x, xstrdup(a ? "not a readable safetensors file" : "the entry is missing"));
			continue;
		}
		x->rederived = 1;
		number(r, x, !strcmp(a->st_digest, w->st_digest), "safetensors_digest", w->st_digest, a->st_digest,
		       "exact: SHA-256 of the tensors' names, dtypes, shapes and bytes");
	}
}

/* ---- the whole ---- */

int rederive(const char *path, const struct scan *s, const struct manifest *expected, const struct rd_opts *o,
	     struct rd_report *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	/* the records: the manifest's, else found in the entries */
	struct manifest inferred;
	const struct manifest *m = expected;
	manifest_init(&inferred);
	if (!manifest_n_derived(expected)) {
		for (size_t i = 0; i < s->actual.n; i++) {
			const struct manifest_entry *a = &s->actual.e[i];
			manifest_add(&inferred, a->path, a->size, a->sha256, a->st_digest[0] ? a->st_digest : NULL);
		}
		manifest_sort(&inferred);
		char **notes = NULL;
		size_t nn = 0;
		derive_lift(s, &inferred, &notes, &nn);
		for (size_t i = 0; i < nn; i++)
			free(notes[i]);
		free(notes);
		m = &inferred;
		r->inferred = manifest_n_derived(&inferred) > 0;
	}
	struct ctx c = {.path = path, .s = s, .o = o};
	size_t nd = manifest_n_derived(m);
	if (nd) {
		if (!(c.scratch = stream_temp_dir(e))) {
			manifest_release(&inferred);
			return -1;
		}
	}
	progress_init(&c.pg, o->quiet);
	c.pg.delay = 1.0;
	size_t k = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *x = &m->e[i];
		if (!x->derivation)
			continue;
		k++;
		progress_update(&c.pg, 0, "re-deriving %zu of %zu: %s", k, nd, x->path);
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(x->derivation, "kind");
		const char *kd = cJSON_IsString(kind) ? kind->valuestring : "";
		if (!manifest_find(&s->actual, x->path)) {
			struct rd_entry *y = add_entry(r, x->path, kd, "?");
			set_why(y, xstrdup("the entry is missing"));
			continue;
		}
		if (!strcmp(kd, "command"))
			do_command(&c, r, x, x->derivation);
		else if (!strcmp(kd, "claims"))
			do_claims(&c, r, x, x->derivation);
		else if (!strcmp(kd, "run"))
			do_run(&c, r, x, x->derivation);
		else if (!strcmp(kd, "check"))
			do_check(&c, r, x);
		else
			set_why(add_entry(r, x->path, kd, "?"), xasprintf("derivation kind '%.100s' is not known", kd));
	}
	progress_done(&c.pg);
	do_digests(r, expected, s);
	for (size_t i = 0; i < r->n; i++) {
		const struct rd_entry *y = &r->e[i];
		r->checked += y->checked;
		r->done += y->done;
		r->agreed += y->agreed;
		r->disagreed += y->disagreed;
		r->not_rederived += y->why != NULL;
	}
	if (c.scratch) {
		dir_remove_tree(c.scratch);
		free(c.scratch);
	}
	free(c.unpacked);
	free(c.unpack_error);
	free(c.audit_bin);
	free(c.eval_bin);
	manifest_release(&inferred);
	return 0;
}

/* ---- output ---- */

void rd_report_print(FILE *f, const struct rd_report *r)
{
	if (!r->n)
		return;
	fprintf(f, "\n");
	for (size_t i = 0; i < r->nf; i++) {
		const struct rd_finding *x = &r->f[i];
		fprintf(f, "derived  %s  %s: published %s, re-derived %s [%s]\n", x->entry, x->where, x->published,
			x->rederived, x->rule);
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct rd_entry *x = &r->e[i];
		if (x->why)
			fprintf(f, "%-8s %s  (%s: %s)\n", x->rederived ? "partly" : "not", x->path, x->what, x->why);
		if (x->note)
			fprintf(f, "note     %s  (%s)\n", x->path, x->note);
	}
	if (r->rescore_runs)
		fprintf(f, "re-scoring: %s (val_bpb and heldout_bpb of %zu run record%s)\n",
			r->data_note ? r->data_note : "not run", r->rescore_runs, r->rescore_runs == 1 ? "" : "s");
	fprintf(f, "re-derived: %zu numbers checked in %zu derived entries%s, %zu re-derived, %zu agree, %zu disagree",
		r->checked, r->n, r->inferred ? " (found in the entries: the manifest records none)" : "", r->done,
		r->agreed, r->disagreed);
	if (r->not_rederived)
		fprintf(f, "; %zu entries not (fully) re-derived", r->not_rederived);
	fputc('\n', f);
}

cJSON *rd_report_json(const struct rd_report *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *en = cJSON_AddArrayToObject(o, "entries");
	for (size_t i = 0; i < r->n; i++) {
		const struct rd_entry *x = &r->e[i];
		cJSON *y = cJSON_CreateObject();
		cJSON_AddStringToObject(y, "path", x->path);
		cJSON_AddStringToObject(y, "kind", x->kind);
		cJSON_AddStringToObject(y, "derivation", x->what);
		cJSON_AddBoolToObject(y, "rederived", x->rederived);
		if (x->why)
			cJSON_AddStringToObject(y, "not_rederived", x->why);
		else
			cJSON_AddNullToObject(y, "not_rederived");
		if (x->note)
			cJSON_AddStringToObject(y, "note", x->note);
		else
			cJSON_AddNullToObject(y, "note");
		cJSON_AddNumberToObject(y, "checked", (double)x->checked);
		cJSON_AddNumberToObject(y, "rederived_numbers", (double)x->done);
		cJSON_AddNumberToObject(y, "agreed", (double)x->agreed);
		cJSON_AddNumberToObject(y, "disagreed", (double)x->disagreed);
		cJSON_AddItemToArray(en, y);
	}
	cJSON *fa = cJSON_AddArrayToObject(o, "disagreements");
	for (size_t i = 0; i < r->nf; i++) {
		const struct rd_finding *x = &r->f[i];
		cJSON *y = cJSON_CreateObject();
		cJSON_AddStringToObject(y, "entry", x->entry);
		cJSON_AddStringToObject(y, "where", x->where);
		cJSON_AddStringToObject(y, "published", x->published);
		cJSON_AddStringToObject(y, "rederived", x->rederived);
		cJSON_AddStringToObject(y, "rule", x->rule);
		cJSON_AddItemToArray(fa, y);
	}
	cJSON *sm = cJSON_AddObjectToObject(o, "summary");
	cJSON_AddNumberToObject(sm, "entries", (double)r->n);
	cJSON_AddNumberToObject(sm, "checked", (double)r->checked);
	cJSON_AddNumberToObject(sm, "rederived", (double)r->done);
	cJSON_AddNumberToObject(sm, "agreed", (double)r->agreed);
	cJSON_AddNumberToObject(sm, "disagreed", (double)r->disagreed);
	cJSON_AddNumberToObject(sm, "not_rederived_entries", (double)r->not_rederived);
	cJSON_AddBoolToObject(sm, "inferred", r->inferred);
	cJSON *rs = cJSON_AddObjectToObject(o, "rescoring");
	cJSON_AddNumberToObject(rs, "runs_not_rescored", (double)r->rescore_runs);
	if (r->data_note)
		cJSON_AddStringToObject(rs, "note", r->data_note);
	else
		cJSON_AddNullToObject(rs, "note");
	json_sort(o);
	return o;
}

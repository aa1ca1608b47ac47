/* derivation.c: derivation records and the log of files read (see
 * derivation.h).
 *
 * Leaves out: what a supplement does with a record (supplements/), and which
 * arguments a command records (each command's own file).
 * Reference: supkit-formats(5), DERIVATIONS.
 */
#define _GNU_SOURCE
#include "derivation.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "sha256.h"

/* ---- the log ---- */

static struct {
	int on;
	char **p;
	size_t n, cap;
} g_log;

void deriv_log_start(void)
{
	g_log.on = 1;
}

void deriv_log_reset(void)
{
	for (size_t i = 0; i < g_log.n; i++)
		free(g_log.p[i]);
	g_log.n = 0;
}

void deriv_log_file(const char *path)
{
	if (!g_log.on || !path)
		return;
	for (size_t i = 0; i < g_log.n; i++)
		if (!strcmp(g_log.p[i], path))
			return;
	if (g_log.n == g_log.cap) {
		g_log.cap = g_log.cap ? 2 * g_log.cap : 16;
		g_log.p = xrealloc(g_log.p, g_log.cap * sizeof *g_log.p);
	}
	g_log.p[g_log.n++] = xstrdup(path);
}

/* ---- building ---- */

void deriv_init(struct deriv *d, const char *tool, const char *command)
{
	memset(d, 0, sizeof *d);
	d->tool = xstrdup(tool);
	d->command = xstrdup(command);
	d->version = xstrdup(SUPKIT_VERSION);
}

void deriv_release(struct deriv *d)
{
	free(d->tool);
	free(d->command);
	free(d->version);
	for (size_t i = 0; i < d->n_args; i++)
		free(d->args[i]);
	free(d->args);
	free(d->is_path);
	for (size_t i = 0; i < d->n_in; i++) {
		free(d->in[i].path);
		free(d->in[i].entry);
	}
	free(d->in);
	memset(d, 0, sizeof *d);
}

static void push_arg(struct deriv *d, const char *s, int is_path)
{
	if (d->n_args == d->cap_args) {
		d->cap_args = d->cap_args ? 2 * d->cap_args : 8;
		d->args = xrealloc(d->args, d->cap_args * sizeof *d->args);
		d->is_path = xrealloc(d->is_path, d->cap_args);
	}
	d->is_path[d->n_args] = (unsigned char)is_path;
	d->args[d->n_args++] = xstrdup(s);
}

void deriv_arg(struct deriv *d, const char *s)
{
	push_arg(d, s, 0);
}

void deriv_path_arg(struct deriv *d, const char *path)
{
	push_arg(d, path, 1);
}

static struct deriv_input *push_input(struct deriv *d)
{
	if (d->n_in == d->cap_in) {
		d->cap_in = d->cap_in ? 2 * d->cap_in : 8;
		d->in = xrealloc(d->in, d->cap_in * sizeof *d->in);
	}
	struct deriv_input *x = &d->in[d->n_in++];
	memset(x, 0, sizeof *x);
	return x;
}

/* path lexically tidied: "." and empty components dropped, ".." taking one
 * off (kept at the front of a relative path; dropped at "/"). "/" or "." when
 * nothing is left. Caller frees. */
static char *tidy(const char *path)
{
	int abs = path[0] == '/';
	size_t len = strlen(path), n = 0, lead = 0; /* lead: leading ".." kept */
	const char **cs = xcalloc(len + 1, sizeof *cs);
	size_t *cl = xcalloc(len + 1, sizeof *cl);
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t k = (size_t)(p - s);
		if (k == 1 && s[0] == '.')
			continue;
		if (k == 2 && s[0] == '.' && s[1] == '.') {
			if (n > lead)
				n--;
			else if (!abs)
				cs[n] = s, cl[n] = k, n++, lead++;
			continue;
		}
		cs[n] = s, cl[n] = k, n++;
	}
	char *out = xmalloc(len + 3), *o = out;
	if (abs)
		*o++ = '/';
	for (size_t i = 0; i < n; i++) {
		if (i)
			*o++ = '/';
		memcpy(o, cs[i], cl[i]);
		o += cl[i];
	}
	if (o == out)
		*o++ = '.';
	*o = '\0';
	free(cs);
	free(cl);
	return out;
}

/* The absolute, tidy form of path (relative to cwd). */
static char *absolute(const char *path, const char *cwd)
{
	if (path[0] == '/')
		return tidy(path);
	char *j = xasprintf("%s/%s", cwd, path);
	char *t = tidy(j);
	free(j);
	return t;
}

/* 1 when tidy relative path t stays below its folder. */
static int stays_below(const char *t)
{
	return t[0] != '/' && strcmp(t, "..") != 0 && strncmp(t, "../", 3) != 0;
}

/* Parent of an absolute tidy path ("/" stays "/"). */
static char *parent_of(const char *a)
{
	const char *s = strrchr(a, '/');
	if (!s || s == a)
		return xstrdup("/");
	return xstrndup(a, (size_t)(s - a));
}

/* Longest common ancestor of two absolute tidy folders (in place into *acc). */
static void common(char **acc, const char *b)
{
	if (!*acc) {
		*acc = xstrdup(b);
		return;
	}
	char *a = *acc;
	size_t i = 0, last = 0;
	while (a[i] && b[i] && a[i] == b[i]) {
		if (a[i] == '/')
			last = i;
		i++;
	}
	if ((!a[i] && (b[i] == '/' || !b[i])) || (!b[i] && a[i] == '/'))
		last = i; /* one is an ancestor of the other (or equal) */
	a[last ? last : 1] = '\0';
	if (!last)
		a[0] = '/', a[1] = '\0';
}

/* Path a relative to base ("." when equal); both absolute and tidy, a below base. */
static char *rel_to(const char *a, const char *base)
{
	if (!strcmp(a, base))
		return xstrdup(".");
	size_t n = !strcmp(base, "/") ? 0 : strlen(base);
	return xstrdup(a + n + 1);
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int input_cmp(const void *x, const void *y)
{
	return strcmp(((const struct deriv_input *)x)->path, ((const struct deriv_input *)y)->path);
}

int deriv_finish(struct deriv *d, struct err *e)
{
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return err_errno(e, EXIT_SYS, "cannot name the current folder");
	size_t np = d->n_args, nl = g_log.n;
	/* every path: the path arguments, then the files read */
	const char **raw = xcalloc(np + nl + 1, sizeof *raw);
	int *dir = xcalloc(np + nl + 1, sizeof *dir);
	size_t n = 0;
	for (size_t i = 0; i < np; i++)
		if (d->is_path[i] && strcmp(d->args[i], "-")) {
			dir[n] = is_dir(d->args[i]);
			raw[n++] = d->args[i];
		}
	size_t first_log = n;
	for (size_t i = 0; i < nl; i++)
		if (strcmp(g_log.p[i], "-"))
			raw[n++] = g_log.p[i];
	int all_rel = 1;
	for (size_t i = 0; i < n && all_rel; i++) {
		char *t = tidy(raw[i]);
		all_rel = stays_below(t);
		free(t);
	}
	char **rec = xcalloc(n + 1, sizeof *rec);
	if (all_rel) {
		for (size_t i = 0; i < n; i++)
			rec[i] = tidy(raw[i]);
	} else {
		char **abs = xcalloc(n + 1, sizeof *abs);
		char *base = NULL;
		for (size_t i = 0; i < n; i++) {
			abs[i] = absolute(raw[i], cwd);
			char *f = dir[i] ? xstrdup(abs[i]) : parent_of(abs[i]);
			common(&base, f);
			free(f);
		}
		int up = 0;
		for (size_t i = 0; base && i < n && !up; i++) {
			char *f = dir[i] ? xstrdup(abs[i]) : parent_of(abs[i]);
			up = !strcmp(f, base);
			free(f);
		}
		if (up && strcmp(base, "/")) {
			char *b = parent_of(base);
			free(base);
			base = b;
		}
		for (size_t i = 0; i < n; i++) {
			rec[i] = rel_to(abs[i], base);
			free(abs[i]);
		}
		free(abs);
		free(base);
	}
	/* arguments rewritten in place */
	size_t k = 0;
	for (size_t i = 0; i < np; i++)
		if (d->is_path[i] && strcmp(d->args[i], "-")) {
			free(d->args[i]);
			d->args[i] = xstrdup(rec[k++]);
		}
	/* inputs: the files read, each once */
	int rc = 0;
	for (size_t i = first_log; i < n && rc == 0; i++) {
		int seen = 0;
		for (size_t j = 0; j < d->n_in && !seen; j++)
			seen = !strcmp(d->in[j].path, rec[i]);
		if (seen)
			continue;
		struct deriv_input *x = push_input(d);
		x->path = xstrdup(rec[i]);
		rc = sha256_file_hex(raw[i], x->sha256, &x->size, e);
	}
	for (size_t i = 0; i < nl && rc == 0; i++)
		if (!strcmp(g_log.p[i], "-")) {
			int seen = 0;
			for (size_t j = 0; j < d->n_in && !seen; j++)
				seen = !strcmp(d->in[j].path, "-");
			if (!seen)
				push_input(d)->path = xstrdup("-");
		}
	for (size_t i = 0; i < n; i++)
		free(rec[i]);
	free(rec);
	free(raw);
	free(dir);
	if (d->n_in > 1)
		qsort(d->in, d->n_in, sizeof *d->in, input_cmp);
	return rc;
}

int deriv_attach(struct deriv *d, cJSON *obj, struct err *e)
{
	if (deriv_finish(d, e) < 0)
		return -1;
	cJSON_DeleteItemFromObjectCaseSensitive(obj, DERIV_KEY);
	cJSON_AddItemToObject(obj, DERIV_KEY, deriv_to_json(d));
	return 0;
}

cJSON *deriv_to_json(const struct deriv *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "tool", d->tool);
	cJSON_AddStringToObject(o, "command", d->command);
	cJSON_AddStringToObject(o, "version", d->version);
	cJSON *a = cJSON_AddArrayToObject(o, "args");
	for (size_t i = 0; i < d->n_args; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(d->args[i]));
	cJSON *in = cJSON_AddArrayToObject(o, "inputs");
	for (size_t i = 0; i < d->n_in; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", d->in[i].path);
		if (d->in[i].sha256[0]) {
			cJSON_AddStringToObject(x, "sha256", d->in[i].sha256);
			cJSON_AddNumberToObject(x, "size", (double)d->in[i].size);
		}
		if (d->in[i].entry)
			cJSON_AddStringToObject(x, "entry", d->in[i].entry);
		cJSON_AddItemToArray(in, x);
	}
	json_sort(o);
	return o;
}

/* ---- reading ---- */

int deriv_path_safe(const char *p, int dot_ok)
{
	if (!p || !*p)
		return 0;
	if (dot_ok && !strcmp(p, "."))
		return 1;
	if (p[0] == '/' || strlen(p) > 4096)
		return 0;
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\')
			return 0;
	const char *s = p;
	for (;;) {
		const char *t = strchr(s, '/');
		size_t n = t ? (size_t)(t - s) : strlen(s);
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		if (!t)
			break;
		s = t + 1;
	}
	return 1;
}

static int hex_ok(const char *s)
{
	if (!sha256_hex_valid(s))
		return 0;
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'F')
			return 0;
	return 1;
}

static int get_str(const cJSON *j, const char *key, char **out, const char *ctx, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (!cJSON_IsString(v))
		return err_set(e, EXIT_USAGE, "%s: '%s' is missing or not a string", ctx, key);
	for (const char *c = v->valuestring; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return err_set(e, EXIT_USAGE, "%s: '%s' holds a control character", ctx, key);
	*out = xstrdup(v->valuestring);
	return 0;
}

int deriv_parse(const cJSON *j, const char *ctx, struct deriv *d, struct err *e)
{
	memset(d, 0, sizeof *d);
	if (!cJSON_IsObject(j))
		return err_set(e, EXIT_USAGE, "%s: not an object", ctx);
	if (get_str(j, "tool", &d->tool, ctx, e) < 0 || get_str(j, "command", &d->command, ctx, e) < 0 ||
	    get_str(j, "version", &d->version, ctx, e) < 0)
		return -1;
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "args");
	if (!cJSON_IsArray(a))
		return err_set(e, EXIT_USAGE, "%s: 'args' is missing or not an array", ctx);
	if (cJSON_GetArraySize(a) > DERIV_MAX_ARGS)
		return err_set(e, EXIT_USAGE, "%s: more than %d arguments", ctx, DERIV_MAX_ARGS);
	int i = 0;
	for (const cJSON *x = a->child; x; x = x->next, i++) {
		if (!cJSON_IsString(x))
			return err_set(e, EXIT_USAGE, "%s: args[%d] is not a string", ctx, i);
		for (const char *c = x->valuestring; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return err_set(e, EXIT_USAGE, "%s: args[%d] holds a control character", ctx, i);
		deriv_arg(d, x->valuestring);
	}
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "inputs");
	if (!cJSON_IsArray(in))
		return err_set(e, EXIT_USAGE, "%s: 'inputs' is missing or not an array", ctx);
	if (cJSON_GetArraySize(in) > DERIV_MAX_INPUTS)
		return err_set(e, EXIT_USAGE, "%s: more than %d inputs", ctx, DERIV_MAX_INPUTS);
	i = 0;
	for (const cJSON *x = in->child; x; x = x->next, i++) {
		char c2[300];
		snprintf(c2, sizeof c2, "%s: inputs[%d]", ctx, i);
		if (!cJSON_IsObject(x))
			return err_set(e, EXIT_USAGE, "%s: not an object", c2);
		struct deriv_input *y = push_input(d);
		if (get_str(x, "path", &y->path, c2, e) < 0)
			return -1;
		if (strcmp(y->path, "-") && !deriv_path_safe(y->path, 0))
			return err_set(e, EXIT_USAGE, "%s: path '%s' is not a safe relative path", c2, y->path);
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(x, "sha256");
		if (s) {
			if (!cJSON_IsString(s) || !hex_ok(s->valuestring))
				return err_set(e, EXIT_USAGE, "%s: 'sha256' is not 64 lower-case hex digits", c2);
			snprintf(y->sha256, sizeof y->sha256, "%s", s->valuestring);
			const cJSON *z = cJSON_GetObjectItemCaseSensitive(x, "size");
			if (!cJSON_IsNumber(z) || z->valuedouble < 0 || z->valuedouble > 9007199254740992.0 ||
			    z->valuedouble != (double)(uint64_t)z->valuedouble)
				return err_set(e, EXIT_USAGE, "%s: 'size' is not a non-negative integer", c2);
			y->size = (uint64_t)z->valuedouble;
		} else if (strcmp(y->path, "-")) {
			return err_set(e, EXIT_USAGE, "%s: 'sha256' is missing", c2);
		}
		const cJSON *en = cJSON_GetObjectItemCaseSensitive(x, "entry");
		if (en && !cJSON_IsNull(en)) {
			if (get_str(x, "entry", &y->entry, c2, e) < 0)
				return -1;
			if (!deriv_path_safe(y->entry, 0))
				return err_set(e, EXIT_USAGE, "%s: entry '%s' is not a safe relative path", c2,
					       y->entry);
		}
	}
	if (d->n_in > 1)
		qsort(d->in, d->n_in, sizeof *d->in, input_cmp);
	for (size_t k = 1; k < d->n_in; k++)
		if (!strcmp(d->in[k].path, d->in[k - 1].path))
			return err_set(e, EXIT_USAGE, "%s: input '%s' is listed twice", ctx, d->in[k].path);
	return 0;
}

char *deriv_key(const struct deriv *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "tool", d->tool);
	cJSON_AddStringToObject(o, "command", d->command);
	cJSON *a = cJSON_AddArrayToObject(o, "args");
	for (size_t i = 0; i < d->n_args; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(d->args[i]));
	cJSON *in = cJSON_AddArrayToObject(o, "inputs");
	for (size_t i = 0; i < d->n_in; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", d->in[i].path);
		cJSON_AddStringToObject(x, "sha256", d->in[i].sha256);
		cJSON_AddItemToArray(in, x);
	}
	char *s = json_print(o, 0);
	cJSON_Delete(o);
	return s;
}

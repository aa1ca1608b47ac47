/* sweep.c: the sweep file (sweep.h has its keys) and its expansion into
 * runs, each with its resolved config. The file syntax is the config's own
 * (config_scan_text); config keys are checked by the config's table
 * (config_set_at), so an override that supkit train would refuse is refused
 * here, with the sweep file's line, before anything runs.
 */
#define _GNU_SOURCE
#include "sweep/sweep.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"
#include "trainer/arm_file.h"
#include "trainer/config.h"

#define SWEEP_FILE_MAX (1u << 20)
#define SWEEP_RUNS_MAX 10000

/* the words of a list value, split at white space; fresh array of fresh strings */
static char **split_words(const char *v, int *n)
{
	char **w = NULL;
	*n = 0;
	const char *p = v;
	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		const char *q = p;
		while (*q && *q != ' ' && *q != '\t')
			q++;
		w = xrealloc(w, (size_t)(*n + 1) * sizeof *w);
		w[(*n)++] = xstrndup(p, (size_t)(q - p));
		p = q;
	}
	return w;
}

static void free_words(char **w, int n)
{
	for (int i = 0; i < n; i++)
		free(w[i]);
	free(w);
}

/* a value of only the characters of ok (and not empty) */
static int only_chars(const char *v, const char *ok)
{
	if (!*v)
		return 0;
	for (const char *p = v; *p; p++) {
		int alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
		if (!alnum && !strchr(ok, *p))
			return 0;
	}
	return 1;
}

static int all_digits(const char *b, const char *e)
{
	if (b == e)
		return 0;
	for (; b < e; b++)
		if (*b < '0' || *b > '9')
			return 0;
	return 1;
}

/* Slurm's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (digits each) */
static int slurm_time_ok(const char *v)
{
	if (!strcmp(v, "UNLIMITED") || !strcmp(v, "INFINITE"))
		return 1;
	const char *dash = strchr(v, '-');
	const char *p = v;
	if (dash) {
		if (!all_digits(v, dash))
			return 0;
		p = dash + 1;
	}
	int parts = 0;
	while (1) {
		const char *c = strchr(p, ':');
		const char *end = c ? c : p + strlen(p);
		if (!all_digits(p, end))
			return 0;
		parts++;
		if (!c)
			break;
		p = c + 1;
	}
	return parts <= 3;
}

static int slurm_mem_ok(const char *v)
{
	size_t n = strlen(v);
	if (n && strchr("KMGTkmgt", v[n - 1]))
		n--;
	return all_digits(v, v + n);
}

static int parse_int(const char *v, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (!*v || *end || errno || x < lo || x > hi)
		return -1;
	*out = x;
	return 0;
}

static int copy_value(char *dst, size_t n, const char *v, const char *name, int line, const char *key,
		      const char *ok, const char *what, struct err *e)
{
	if (strlen(v) >= n || !only_chars(v, ok))
		return err_set(e, EXIT_USAGE, "%s:%d: %s: '%s' is not %s", name, line, key, v, what);
	snprintf(dst, n, "%s", v);
	return 0;
}

static int on_line(const char *key, const char *value, const char *name, int line, void *ctx, struct err *e)
{
	struct sweep *s = ctx;
	if (!strcmp(key, "base")) {
		if (!*value)
			return err_set(e, EXIT_USAGE, "%s:%d: base: needs a config file", name, line);
		free(s->base);
		s->base = xstrdup(value);
		s->base_line = line;
		return 0;
	}
	if (!strcmp(key, "arms")) {
		free_words(s->arms, s->n_arms);
		s->arms = split_words(value, &s->n_arms);
		s->arms_line = line;
		if (!s->n_arms)
			return err_set(e, EXIT_USAGE, "%s:%d: arms: needs at least one arm", name, line);
		for (int i = 0; i < s->n_arms; i++)
			for (int j = 0; j < i; j++)
				if (!strcmp(s->arms[i], s->arms[j]))
					return err_set(e, EXIT_USAGE, "%s:%d: arms: '%s' is given twice", name, line,
						       s->arms[i]);
		return 0;
	}
	if (!strcmp(key, "seeds") || !strcmp(key, "depths")) {
		int seeds = key[0] == 's';
		int n;
		char **w = split_words(value, &n);
		if (!n) {
			free_words(w, n);
			return err_set(e, EXIT_USAGE, "%s:%d: %s: needs at least one value", name, line, key);
		}
		/* each value as the config key seed or depth takes it (type, range) */
		uint64_t *sv = seeds ? xcalloc((size_t)n, sizeof *sv) : NULL;
		int *dv = seeds ? NULL : xcalloc((size_t)n, sizeof *dv);
		struct config c;
		config_defaults(&c);
		int rc = 0;
		for (int i = 0; i < n && rc == 0; i++) {
			rc = config_set_at(&c, seeds ? "seed" : "depth", w[i], name, line, e);
			if (rc == 0 && seeds)
				sv[i] = c.seed;
			else if (rc == 0)
				dv[i] = c.depth;
			for (int j = 0; rc == 0 && j < i; j++)
				if (seeds ? sv[j] == sv[i] : dv[j] == dv[i])
					rc = err_set(e, EXIT_USAGE, "%s:%d: %s: %s is given twice", name, line, key, w[i]);
		}
		free_words(w, n);
		if (rc) {
			free(sv);
			free(dv);
			return -1;
		}
		if (seeds) {
			free(s->seeds);
			s->seeds = sv;
			s->n_seeds = n;
			s->seeds_line = line;
		} else {
			free(s->depths);
			s->depths = dv;
			s->n_depths = n;
			s->depths_line = line;
		}
		return 0;
	}
	struct sweep_slurm *sl = &s->slurm;
	if (!strcmp(key, "slurm_partition"))
		return copy_value(sl->partition, sizeof sl->partition, value, name, line, key, "_.-,",
				  "a partition name (letters, digits, _ . - and commas)", e);
	if (!strcmp(key, "slurm_time")) {
		if (strlen(value) >= sizeof sl->time || !slurm_time_ok(value))
			return err_set(e, EXIT_USAGE,
				       "%s:%d: slurm_time: '%s' is not a Slurm time (MINUTES, H:M:S, D-H:M:S, ...)",
				       name, line, value);
		snprintf(sl->time, sizeof sl->time, "%s", value);
		return 0;
	}
	if (!strcmp(key, "slurm_gres"))
		return copy_value(sl->gres, sizeof sl->gres, value, name, line, key, "_.-,:",
				  "a gres (none, or name[:type][:count], commas between)", e);
	if (!strcmp(key, "slurm_mem")) {
		if (strlen(value) >= sizeof sl->mem || !slurm_mem_ok(value))
			return err_set(e, EXIT_USAGE, "%s:%d: slurm_mem: '%s' is not a size (a number, then K, M, G or T)",
				       name, line, value);
		snprintf(sl->mem, sizeof sl->mem, "%s", value);
		return 0;
	}
	if (!strcmp(key, "slurm_cpus") || !strcmp(key, "slurm_throttle")) {
		long x;
		if (parse_int(value, 1, 1000000, &x) < 0)
			return err_set(e, EXIT_USAGE, "%s:%d: %s: '%s' is not an integer in [1, 1000000]", name, line,
				       key, value);
		*(key[6] == 'c' ? &sl->cpus : &sl->throttle) = (int)x;
		return 0;
	}
	if (!strncmp(key, "slurm_", 6))
		return err_set(e, EXIT_USAGE,
			       "%s:%d: unknown key '%s' (Slurm keys: slurm_partition, slurm_time, slurm_gres, "
			       "slurm_cpus, slurm_mem, slurm_throttle)", name, line, key);
	if (!config_has_key(key))
		return err_set(e, EXIT_USAGE, "%s:%d: unknown key '%s' (neither a sweep key nor a config key)", name,
			       line, key);
	if (!strcmp(key, "arm") || !strcmp(key, "seed"))
		return err_set(e, EXIT_USAGE, "%s:%d: %s: set by %s, not an override", name, line, key,
			       key[0] == 'a' ? "arms" : "seeds");
	/* the value as the config takes it */
	struct config c;
	config_defaults(&c);
	if (config_set_at(&c, key, value, name, line, e) != 0)
		return -1;
	for (int i = 0; i < s->n_over; i++)
		if (!strcmp(s->over[i].key, key)) {   /* a later line wins */
			free(s->over[i].value);
			s->over[i].value = xstrdup(value);
			s->over[i].line = line;
			return 0;
		}
	s->over = xrealloc(s->over, (size_t)(s->n_over + 1) * sizeof *s->over);
	s->over[s->n_over].key = xstrdup(key);
	s->over[s->n_over].value = xstrdup(value);
	s->over[s->n_over].line = line;
	s->n_over++;
	return 0;
}

int sweep_parse_text(struct sweep *s, const char *text, size_t len, const char *name, const char *workdir,
		     struct err *e)
{
	memset(s, 0, sizeof *s);
	s->path = xstrdup(name);
	s->workdir = xstrdup(workdir);
	if (config_scan_text(text, len, name, on_line, s, e) != 0)
		return -1;
	if (!s->n_arms)
		return err_set(e, EXIT_USAGE, "%s: no arms (arms = NAME ...)", name);
	if (!s->n_seeds)
		return err_set(e, EXIT_USAGE, "%s: no seeds (seeds = N ...)", name);
	for (int i = 0; i < s->n_over; i++)
		if (s->n_depths && !strcmp(s->over[i].key, "depth"))
			return err_set(e, EXIT_USAGE, "%s:%d: depth: set by depths (line %d), not an override", name,
				       s->over[i].line, s->depths_line);
	long n = (long)s->n_arms * s->n_seeds * (s->n_depths ? s->n_depths : 1);
	if (n > SWEEP_RUNS_MAX)
		return err_set(e, EXIT_USAGE, "%s: %ld runs, more than %d", name, n, SWEEP_RUNS_MAX);
	return 0;
}

int sweep_parse(struct sweep *s, const char *path, struct err *e)
{
	memset(s, 0, sizeof *s);
	char real[PATH_MAX];
	if (!realpath(path, real)) {
		s->path = xstrdup(path);
		return err_errno(e, EXIT_USAGE, "cannot open '%s'", path);
	}
	char *text;
	size_t len;
	if (file_read_all(path, SWEEP_FILE_MAX, &text, &len, e) != 0) {
		s->path = xstrdup(path);
		return -1;
	}
	char *dir = path_dirname(real);
	int rc = sweep_parse_text(s, text, len, path, dir, e);
	free(dir);
	free(text);
	return rc;
}

/* path from the sweep's working folder when relative; fresh */
static char *from_workdir(const struct sweep *s, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : path_join(s->workdir, p);
}

static int is_arm_file(const char *a)
{
	size_t n = strlen(a);
	return strchr(a, '/') || (n > 4 && !strcmp(a + n - 4, ".cfg"));
}

static int key_of(const char *name)
{
	for (int i = 0; i < config_key_count(); i++)
		if (!strcmp(config_key_name(i), name))
			return i;
	return 0;
}

/* One arm resolved: the file whose switches apply, the file they are
 * measured against (NULL: the defaults), the arm's name. */
struct arm_src {
	char *file, *against;
	char name[64];
};

static int resolve_arm(const struct sweep *s, const char *arm, char **configs_dir, const char *configs_env,
		       const char *exe, struct arm_src *a, struct err *e)
{
	memset(a, 0, sizeof *a);
	struct config c;
	config_defaults(&c);
	if (is_arm_file(arm)) {
		a->file = from_workdir(s, arm);
		if (config_load_file(&c, a->file, e) != 0)
			goto fail;
		if (c.origin.key_src[key_of("arm")]) {   /* the file names itself */
			snprintf(a->name, sizeof a->name, "%s", c.arm);
		} else {
			const char *b = path_basename(arm);
			size_t n = strlen(b);
			if (n > 4 && !strcmp(b + n - 4, ".cfg"))
				n -= 4;
			if (n >= sizeof a->name) {
				err_set(e, EXIT_USAGE, "arm file '%s': its name is longer than %zu characters (set arm =)",
					a->file, sizeof a->name - 1);
				goto fail;
			}
			snprintf(a->name, sizeof a->name, "%.*s", (int)n, b);
		}
		return 0;
	}
	if (!*configs_dir) {
		*configs_dir = arm_configs_dir(configs_env, exe, e);
		if (!*configs_dir)
			goto fail;
	}
	a->file = arm_file_path(*configs_dir, arm, e);
	if (!a->file)
		goto fail;
	a->against = path_join(*configs_dir, "baseline.cfg");
	if (config_load_file(&c, a->file, e) != 0)
		goto fail;
	snprintf(a->name, sizeof a->name, "%s", c.arm);
	return 0;
fail:
	err_prefix(e, "%s:%d: arms: '%s'", s->path, s->arms_line, arm);
	free(a->file);
	free(a->against);
	a->file = a->against = NULL;
	return -1;
}

/* config_set_at with a printf value */
static int set_num(struct config *c, const char *key, const char *src, int line, struct err *e,
		   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int set_num(struct config *c, const char *key, const char *src, int line, struct err *e,
		   const char *fmt, ...)
{
	char v[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v, sizeof v, fmt, ap);
	va_end(ap);
	return config_set_at(c, key, v, src, line, e);
}

int sweep_expand(struct sweep *s, const char *configs_env, const char *exe, struct err *e)
{
	struct config base;
	config_defaults(&base);
	char *base_path = s->base ? from_workdir(s, s->base) : NULL;
	if (base_path && config_load_file(&base, base_path, e) != 0) {
		err_prefix(e, "%s:%d: base", s->path, s->base_line);
		free(base_path);
		return -1;
	}
	free(base_path);
	char *configs_dir = NULL;
	struct arm_src *arms = xcalloc((size_t)s->n_arms, sizeof *arms);
	int rc = -1;
	for (int i = 0; i < s->n_arms; i++) {
		if (resolve_arm(s, s->arms[i], &configs_dir, configs_env, exe, &arms[i], e) != 0)
			goto out;
		for (int j = 0; j < i; j++)
			if (!strcmp(arms[i].name, arms[j].name)) {
				err_set(e, EXIT_USAGE, "%s:%d: arms: '%s' and '%s' are both the arm '%s'", s->path,
					s->arms_line, s->arms[j], s->arms[i], arms[i].name);
				goto out;
			}
	}
	int nd = s->n_depths ? s->n_depths : 1;
	s->n_runs = s->n_arms * nd * s->n_seeds;
	s->runs = xcalloc((size_t)s->n_runs, sizeof *s->runs);
	struct config *c = xmalloc(sizeof *c);
	int k = 0;
	for (int i = 0; i < s->n_arms; i++)
		for (int d = 0; d < nd; d++)
			for (int j = 0; j < s->n_seeds; j++, k++) {
				*c = base;
				struct sweep_run *r = &s->runs[k];
				int bad = config_apply_switches(c, arms[i].against, arms[i].file, e) != 0 ||
					  config_set_at(c, "arm", arms[i].name, s->path, s->arms_line, e) != 0;
				for (int o = 0; !bad && o < s->n_over; o++)
					bad = config_set_at(c, s->over[o].key, s->over[o].value, s->path,
							    s->over[o].line, e) != 0;
				if (!bad && s->n_depths)
					bad = set_num(c, "depth", s->path, s->depths_line, e, "%d", s->depths[d]) != 0;
				if (!bad)
					bad = set_num(c, "seed", s->path, s->seeds_line, e, "%" PRIu64, s->seeds[j]) != 0;
				snprintf(r->name, sizeof r->name, "%s_d%d_s%" PRIu64, c->arm, c->depth, c->seed);
				if (!bad)
					bad = config_validate(c, e) != 0;
				if (bad) {
					err_prefix(e, "run %s", r->name);
					free(c);
					goto out;
				}
				snprintf(r->arm, sizeof r->arm, "%s", c->arm);
				r->depth = c->depth;
				r->seed = c->seed;
				r->backend = (int)c->backend;
				r->config_text = config_print(c);
				config_sha256(c, r->sha);
			}
	free(c);
	rc = 0;
out:
	for (int i = 0; i < s->n_arms; i++) {
		free(arms[i].file);
		free(arms[i].against);
	}
	free(arms);
	free(configs_dir);
	return rc;
}

void sweep_free(struct sweep *s)
{
	free(s->path);
	free(s->workdir);
	free(s->base);
	free_words(s->arms, s->n_arms);
	free(s->seeds);
	free(s->depths);
	for (int i = 0; i < s->n_over; i++) {
		free(s->over[i].key);
		free(s->over[i].value);
	}
	free(s->over);
	for (int i = 0; i < s->n_runs; i++)
		free(s->runs[i].config_text);
	free(s->runs);
	memset(s, 0, sizeof *s);
}

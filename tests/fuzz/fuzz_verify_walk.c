/* fuzz_verify_walk.c: libFuzzer harness for verify's folder walk
 * (supplements/scan.c scan_path on a folder, supplements/verify.c
 * verify_path, the report as text and JSON).
 *
 * The input is a list of operations that build a folder ROOT in a private
 * temporary folder BASE (one byte each, then its operands; a name is a
 * length byte and up to 48 bytes, '/' and NUL made 'x', "", "." and ".."
 * made longer): 0 a file (name, a length byte, contents), 1 a folder
 * (name; later operations go into it), 2 back to the parent folder, 3 a
 * symbolic link (name, a target byte: BASE/sentinel or BASE/outside by
 * absolute path or by enough "../" to leave ROOT, ".", "..", or bytes of
 * the input), 4 a file named manifest.json (contents), 5 a FIFO (name),
 * 6 manifest.json at ROOT listing every regular file made so far (its NFC
 * path, size, SHA-256), 7 a chain of folders "d" (a count byte).
 * Names are arbitrary bytes: invalid UTF-8, NFD, control characters,
 * backslashes. Outside ROOT, BASE/sentinel and BASE/outside/secret hold
 * 4096 bytes no file in ROOT can hold (contents are shorter).
 * Invariants, on verify_path's walk (its scan, not strict): each entry it
 * lists is one regular file the harness made, under the NFC of its path,
 * with its size and SHA-256 (so nothing outside ROOT is read through a
 * link); each regular file made, link and FIFO is listed, or an issue
 * names it or a folder above it (or, for a duplicate, the entry it
 * duplicates); verify refuses only with EXIT_USAGE (manifest.json) or
 * EXIT_CHECK (none), never EXIT_SYS (the walk itself never fails);
 * "verified" implies no issue and every entry ok; the report prints, and
 * its JSON is valid UTF-8 that reads back.
 * Seeds: tests/fuzz/corpus/verify_walk/, written by FUZZ_WRITE_SEED=DIR
 * (tests/fuzz/README.md). Reference: supplements/scan.h, verify.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/sha256.h"
#include "lib/utf8.h"
#include "supplements/manifest.h"
#include "supplements/scan.h"
#include "supplements/verify.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { FZ_SENTINEL = 4096, FZ_NAME_MAX = 48, FZ_MAX_NODES = 512, FZ_MAX_DEPTH = 300 };
enum { N_FILE, N_DIR, N_LINK, N_FIFO };

static char base[64];
static char *root, *sentinel, *outside;
static char sentinel_sha[65];
static FILE *fuzz_null;

struct node {
	char *raw;          /* relative path under ROOT */
	char *nfc;          /* raw in NFC (NULL when not UTF-8), after build */
	char *quoted;       /* scan_quote(raw), after build */
	int dup;            /* another file or folder made has the same NFC path */
	int type;
	int parent;         /* index of its folder, -1 for ROOT */
	uint64_t size;
	char sha[65];
};
static struct node nodes[FZ_MAX_NODES];
static int nn;

static void fuzz_cleanup(void)
{
	if (base[0])
		dir_remove_tree(base);
	free(root);
	free(sentinel);
	free(outside);
	if (fuzz_null)
		fclose(fuzz_null);
}

static void fuzz_write_seeds(const char *dir);

static void fuzz_init(void)
{
	struct err e;
	fuzz_temp_dir(base, sizeof base, "walk");
	atexit(fuzz_cleanup);
	root = path_join(base, "root");
	sentinel = path_join(base, "sentinel");
	outside = path_join(base, "outside");
	char *secret = path_join(outside, "secret");
	static char s[FZ_SENTINEL];
	memset(s, 'S', sizeof s);
	if (file_write_atomic(sentinel, s, sizeof s, &e) != 0 || mkdir(outside, 0777) != 0 ||
	    file_write_atomic(secret, s, sizeof s, &e) != 0)
		abort();
	sha256_buf_hex(s, sizeof s, sentinel_sha);
	free(secret);
	fuzz_null = fopen("/dev/null", "w");
	if (!fuzz_null)
		abort();
	const char *seed = getenv("FUZZ_WRITE_SEED");
	if (seed)
		fuzz_write_seeds(seed);
}

/* ---- building ROOT ---- */

struct rd {
	const uint8_t *d;
	size_t n, at;
};

static int rd_byte(struct rd *r)
{
	return r->at < r->n ? r->d[r->at++] : -1;
}

/* A name from the input into buf (NUL-terminated, never "", ".", "..", no
 * '/' or NUL); 0 when the input ran out. */
static int rd_name(struct rd *r, char *buf)
{
	int len = rd_byte(r);
	if (len < 0)
		return 0;
	len %= FZ_NAME_MAX + 1;
	int k = 0;
	for (int i = 0; i < len && r->at < r->n; i++) {
		char c = (char)r->d[r->at++];
		buf[k++] = c == '/' || c == 0 ? 'x' : c;
	}
	buf[k] = 0;
	if (!strcmp(buf, "") || !strcmp(buf, ".") || !strcmp(buf, ".."))
		strcat(buf, "n");
	return 1;
}

static size_t rd_bytes(struct rd *r, const uint8_t **p)
{
	int len = rd_byte(r);
	if (len < 0)
		return 0;
	size_t n = (size_t)len;
	if (n > r->n - r->at)
		n = r->n - r->at;
	*p = r->d + r->at;
	r->at += n;
	return n;
}

static int add_node(const char *name, int type, int parent)
{
	if (nn == FZ_MAX_NODES)
		return -1;
	struct node *x = &nodes[nn];
	memset(x, 0, sizeof *x);
	x->raw = parent < 0 ? xstrdup(name) : xasprintf("%s/%s", nodes[parent].raw, name);
	x->type = type;
	x->parent = parent;
	return nn++;
}

static void make_file(int dfd, int parent, const char *name, const uint8_t *p, size_t n)
{
	if (nn == FZ_MAX_NODES)
		return;
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return;   /* the name exists already */
	if (n && write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
	int k = add_node(name, N_FILE, parent);
	nodes[k].size = n;
	sha256_buf_hex(p, n, nodes[k].sha);
}

/* manifest.json at ROOT listing every regular file made so far */
static void make_manifest(int rfd)
{
	struct manifest m;
	manifest_init(&m);
	for (int i = 0; i < nn; i++) {
		if (nodes[i].type != N_FILE)
			continue;
		char *n = utf8_nfc(nodes[i].raw, strlen(nodes[i].raw), NULL);
		manifest_add(&m, n ? n : nodes[i].raw, nodes[i].size, nodes[i].sha, NULL);
		free(n);
	}
	manifest_sort(&m);
	size_t len;
	char *text = manifest_print(&m, &len);
	manifest_release(&m);
	if (len < FZ_SENTINEL)
		make_file(rfd, -1, MANIFEST_NAME, (const uint8_t *)text, len);
	free(text);
}

static void build(const uint8_t *data, size_t size)
{
	struct rd r = {data, size, 0};
	int fds[FZ_MAX_DEPTH + 1], idx[FZ_MAX_DEPTH + 1], depth = 0;
	char name[FZ_NAME_MAX + 2];
	if (mkdir(root, 0777) != 0)
		abort();
	fds[0] = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	idx[0] = -1;
	if (fds[0] < 0)
		abort();
	int op;
	while ((op = rd_byte(&r)) >= 0) {
		int dfd = fds[depth], parent = idx[depth];
		const uint8_t *p = NULL;
		size_t n;
		switch (op % 8) {
		case 0:
			if (!rd_name(&r, name))
				break;
			n = rd_bytes(&r, &p);
			make_file(dfd, parent, name, p, n);
			break;
		case 1:
		case 7: {
			int count = 1;
			if (op % 8 == 7) {
				count = rd_byte(&r);
				if (count < 0)
					break;
				strcpy(name, "d");
			} else if (!rd_name(&r, name)) {
				break;
			}
			for (int i = 0; i < count && depth < FZ_MAX_DEPTH && nn < FZ_MAX_NODES; i++) {
				if (mkdirat(fds[depth], name, 0777) != 0)
					break;
				int cfd = openat(fds[depth], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (cfd < 0)
					abort();
				int k = add_node(name, N_DIR, idx[depth]);
				fds[++depth] = cfd;
				idx[depth] = k;
			}
			break;
		}
		case 2:
			if (depth > 0)
				close(fds[depth--]);
			break;
		case 3: {
			if (!rd_name(&r, name))
				break;
			int sel = rd_byte(&r);
			char target[FZ_MAX_DEPTH * 3 + 64];
			target[0] = 0;
			switch (sel < 0 ? 0 : sel % 7) {
			case 0: snprintf(target, sizeof target, "%s", sentinel); break;
			case 1: snprintf(target, sizeof target, "%s", outside); break;
			case 2:
			case 3:
				for (int i = 0; i <= depth; i++)
					strcat(target, "../");
				strcat(target, sel % 7 == 2 ? "sentinel" : "outside");
				break;
			case 4: strcpy(target, "."); break;
			case 5: strcpy(target, ".."); break;
			default:
				n = rd_bytes(&r, &p);
				n = n > 64 ? 64 : n;
				for (size_t i = 0; i < n; i++)
					target[i] = p[i] ? (char)p[i] : 'x';
				target[n] = 0;
				if (!n)
					strcpy(target, "t");
			}
			if (nn < FZ_MAX_NODES && symlinkat(target, dfd, name) == 0)
				add_node(name, N_LINK, parent);
			break;
		}
		case 4:
			n = rd_bytes(&r, &p);
			make_file(dfd, parent, MANIFEST_NAME, p, n);
			break;
		case 5:
			if (rd_name(&r, name) && nn < FZ_MAX_NODES && mkfifoat(dfd, name, 0666) == 0)
				add_node(name, N_FIFO, parent);
			break;
		case 6:
			make_manifest(fds[0]);
			break;
		}
	}
	for (int i = depth; i >= 0; i--)
		close(fds[i]);
}

/* ---- checks ---- */

/* Each node's NFC path and quoted path, and whether a file or folder
 * made has the same NFC path as another (a duplicate). */
static int cmp_nfc(const void *x, const void *y)
{
	const struct node *a = &nodes[*(const int *)x], *b = &nodes[*(const int *)y];
	return strcmp(a->nfc, b->nfc);
}

static void fuzz_names(void)
{
	int *ix = malloc((size_t)(nn ? nn : 1) * sizeof *ix), m = 0;
	if (!ix)
		abort();
	for (int k = 0; k < nn; k++) {
		nodes[k].nfc = utf8_nfc(nodes[k].raw, strlen(nodes[k].raw), NULL);
		nodes[k].quoted = scan_quote(nodes[k].raw, strlen(nodes[k].raw));
		nodes[k].dup = 0;
		if (nodes[k].nfc && (nodes[k].type == N_FILE || nodes[k].type == N_DIR))
			ix[m++] = k;
	}
	qsort(ix, (size_t)m, sizeof *ix, cmp_nfc);
	for (int i = 1; i < m; i++)
		if (!strcmp(nodes[ix[i - 1]].nfc, nodes[ix[i]].nfc))
			nodes[ix[i - 1]].dup = nodes[ix[i]].dup = 1;
	free(ix);
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* An issue (paths sorted in iss) names node k or a folder above it, or k
 * is a duplicate (the issue names one of the two). */
static int explained(char **iss, size_t ni, int k)
{
	for (int a = k; a >= 0; a = nodes[a].parent)
		if (bsearch(&nodes[a].quoted, iss, ni, sizeof *iss, cmp_str))
			return 1;
	return nodes[k].type == N_FILE && nodes[k].dup;
}

/* A regular file made, not yet matched, with this NFC path, size and SHA-256. */
static int find_file(const char *path, uint64_t size, const char *sha, const char *listed)
{
	for (int k = 0; k < nn; k++)
		if (nodes[k].type == N_FILE && !listed[k] && nodes[k].nfc && !strcmp(nodes[k].nfc, path) &&
		    nodes[k].size == size && !strcmp(nodes[k].sha, sha))
			return k;
	return -1;
}

static void check_scan(const struct scan *s)
{
	char *listed = calloc(FZ_MAX_NODES, 1);
	char **iss = malloc((s->n_issues ? s->n_issues : 1) * sizeof *iss);
	if (!listed || !iss)
		abort();
	for (size_t i = 0; i < s->actual.n; i++) {
		const struct manifest_entry *x = &s->actual.e[i];
		if (x->size >= FZ_SENTINEL || !strcmp(x->sha256, sentinel_sha))
			abort();   /* read outside ROOT */
		int found = find_file(x->path, x->size, x->sha256, listed);
		if (found < 0)
			abort();
		listed[found] = 1;
	}
	for (size_t i = 0; i < s->n_issues; i++)
		iss[i] = s->issues[i].path;
	qsort(iss, s->n_issues, sizeof *iss, cmp_str);
	for (int k = 0; k < nn; k++) {
		if (nodes[k].type == N_DIR || listed[k])
			continue;
		if (nodes[k].type == N_FILE && !strcmp(nodes[k].raw, MANIFEST_NAME))
			continue;
		if (!explained(iss, s->n_issues, k))
			abort();
	}
	free(iss);
	for (size_t i = 0; i < s->n_issues; i++)
		if (!s->issues[i].path || !s->issues[i].reason || strchr(s->issues[i].reason, '\n') ||
		    !utf8_valid(s->issues[i].path, strlen(s->issues[i].path)))
			abort();
	free(listed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t empty[1];
	if (!data)
		data = empty;   /* libFuzzer's empty input */
	if (!base[0])
		fuzz_init();
	dir_remove_tree(root);
	nn = 0;
	build(data, size);
	fuzz_names();

	/* one walk (verify's): the scan is checked whether or not the
	 * manifest is then accepted */
	struct err e = {0};
	struct verify_report r;
	struct verify_opts vo = {.quiet = 1};
	int rc = verify_path(root, &vo, &r, &e);
	if (rc != 0 && ((e.code != EXIT_USAGE && e.code != EXIT_CHECK) || !e.msg[0] || strchr(e.msg, '\n')))
		abort();
	check_scan(&r.scan);
	if (rc == 0) {
		if (r.verified && (r.scan.n_issues || r.cmp.n_ok != r.cmp.n))
			abort();
		verify_report_print(fuzz_null, &r, root);
		cJSON *j = verify_report_json(&r, root);
		char *t = json_print(j, 1);
		if (!utf8_valid(t, strlen(t)))
			abort();
		cJSON *back = json_parse(t, strlen(t), "report", &e);
		if (!back)
			abort();
		cJSON_Delete(back);
		free(t);
		cJSON_Delete(j);
	}
	verify_report_release(&r);
	for (int k = 0; k < nn; k++) {
		free(nodes[k].raw);
		free(nodes[k].nfc);
		free(nodes[k].quoted);
	}
	return 0;
}

/* ---- seeds ---- */

static void seed_write(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	struct err e;
	char *p = path_join(dir, name);
	if (file_write_atomic(p, b, n, &e) != 0)
		abort();
	free(p);
}

/* op 0/1/3/4/5 with a name and maybe bytes, into buf at *n */
static void put(uint8_t *buf, size_t *n, int op, const char *name, const void *bytes, int nb)
{
	buf[(*n)++] = (uint8_t)op;
	if (name) {
		buf[(*n)++] = (uint8_t)strlen(name);
		memcpy(buf + *n, name, strlen(name));
		*n += strlen(name);
	}
	if (nb >= 0) {
		buf[(*n)++] = (uint8_t)nb;
		memcpy(buf + *n, bytes, (size_t)nb);
		*n += (size_t)nb;
	}
}

static void fuzz_write_seeds(const char *dir)
{
	uint8_t b[4096];
	size_t n = 0;
	/* a supplement that verifies */
	put(b, &n, 0, "a.txt", "alpha\n", 6);
	put(b, &n, 1, "sub", NULL, -1);
	put(b, &n, 0, "b.cfg", "depth = 8\n", 10);
	put(b, &n, 2, NULL, NULL, -1);
	put(b, &n, 6, NULL, NULL, -1);
	seed_write(dir, "verified", b, n);
	/* the same name in NFC and NFD, a file and a folder */
	n = 0;
	put(b, &n, 0, "caf\xc3\xa9", "nfc", 3);
	put(b, &n, 1, "cafe\xcc\x81", NULL, -1);
	put(b, &n, 0, "x", "in nfd", 6);
	put(b, &n, 2, NULL, NULL, -1);
	put(b, &n, 0, "\xff\xfe", "latin", 5);
	put(b, &n, 6, NULL, NULL, -1);
	seed_write(dir, "nfd_dup", b, n);
	/* links out of ROOT and a FIFO */
	n = 0;
	put(b, &n, 1, "s", NULL, -1);
	put(b, &n, 3, "up", NULL, -1);
	b[n++] = 2;
	put(b, &n, 3, "abs", NULL, -1);
	b[n++] = 1;
	put(b, &n, 5, "fifo", NULL, -1);
	put(b, &n, 2, NULL, NULL, -1);
	put(b, &n, 3, "dot", NULL, -1);
	b[n++] = 4;
	put(b, &n, 0, "k.txt", "k", 1);
	put(b, &n, 6, NULL, NULL, -1);
	seed_write(dir, "links", b, n);
	/* folders deeper than the walk goes */
	n = 0;
	b[n++] = 7;
	b[n++] = 255;
	put(b, &n, 7, NULL, NULL, -1);
	b[n - 1] = 7;
	b[n++] = 10;
	put(b, &n, 0, "deep", "deep", 4);
	seed_write(dir, "deep", b, n);
	/* a manifest.json that is not one */
	n = 0;
	put(b, &n, 4, NULL, "{\"format\": \"supkit-manifest\"}", 29);
	put(b, &n, 0, "c", "", 0);
	seed_write(dir, "bad_manifest", b, n);
	exit(0);
}

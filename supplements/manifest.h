/* manifest.h: the supplement manifest (manifest.json), its entries, and the
 * comparison of what a manifest promises with what a supplement holds.
 *
 * A manifest lists every entry of a supplement except itself: path, size and
 * SHA-256, plus a content digest for safetensors files (lib/safetensors.h
 * st_digest) and, for a derived entry, how it was derived (its
 * "derivation": derive.h; format_version 2 when any entry has one, 1
 * otherwise; both are read). Entries are kept sorted byte-wise by path; paths are checked
 * (manifest_path_check) so that a manifest can never name a place outside the
 * supplement. Format: man/src/supkit-formats-manifest.mdoc.
 *
 * Ownership: a struct manifest owns its entries and their strings;
 * manifest_release frees them. Functions return 0 or -1 with e filled.
 */
#ifndef SUPKIT_SUPPLEMENTS_MANIFEST_H
#define SUPKIT_SUPPLEMENTS_MANIFEST_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "lib/utf8.h"

#define MANIFEST_NAME "manifest.json"
#define MANIFEST_FORMAT "supkit-manifest"
#define MANIFEST_FORMAT_VERSION 2      /* the newest read and written */
#define MANIFEST_FORMAT_VERSION_PLAIN 1 /* written when no entry records a derivation */
#define MANIFEST_MAX_BYTES (64u << 20)   /* a manifest.json larger than this is refused */
#define MANIFEST_PATH_MAX 4096           /* bytes in one entry path */

struct manifest_entry {
	char *path;            /* relative, '/'-separated, valid UTF-8 (owned) */
	uint64_t size;         /* bytes */
	char sha256[65];       /* lower-case hex */
	char st_digest[65];    /* safetensors content digest, "" when none */
	cJSON *derivation;     /* how the entry was derived (owned; derive.h), or NULL */
};

struct manifest {
	struct manifest_entry *e;
	size_t n, cap;
	int format_version;    /* as read; when written, 2 when an entry has a derivation, else 1 */
	char *tool_version;    /* owned; SUPKIT_VERSION when made here */
};

void manifest_init(struct manifest *m);
void manifest_release(struct manifest *m);
/* Append an entry (path copied; st_digest may be NULL). */
void manifest_add(struct manifest *m, const char *path, uint64_t size, const char *sha256_hex,
		  const char *st_digest_hex);
/* Give the entry with this path (m sorted) its derivation (taken; replaces
 * any). 0, or -1 when there is no such entry (d deleted). */
int manifest_set_derivation(struct manifest *m, const char *path, cJSON *d);
/* Number of entries with a derivation. */
size_t manifest_n_derived(const struct manifest *m);
/* Sort entries byte-wise by path. */
void manifest_sort(struct manifest *m);
/* The entry with this path (m sorted), or NULL. */
const struct manifest_entry *manifest_find(const struct manifest *m, const char *path);
/* Sum of entry sizes. */
uint64_t manifest_total_size(const struct manifest *m);

/* utf8_valid (well-formed UTF-8): lib/utf8.h. */
/* Check an entry path: non-empty, at most MANIFEST_PATH_MAX bytes, valid UTF-8,
 * no control characters or backslashes, relative, no empty, "." or ".."
 * components. On failure e says why (the caller names the entry). */
int manifest_path_check(const char *path, struct err *e);

/* The manifest as a JSON object (caller cJSON_Delete()s); printed with
 * json_print it is the exact manifest.json that pack writes. */
cJSON *manifest_to_json(const struct manifest *m);
/* manifest_to_json printed (pretty, final newline); caller frees. */
char *manifest_print(const struct manifest *m, size_t *len);
/* Parse manifest.json bytes (format_version 1 or 2). name is used in
 * messages. Every entry is checked (keys, types, path rules, hex digests, a
 * "derivation" an object with a string "kind", no duplicate paths); errors
 * name the entry by index and path. Paths are kept in Unicode NFC (lib/utf8.h), the
 * form a scan reports, and must be unique in it. m is initialised here;
 * sorted on return. */
int manifest_parse(const char *text, size_t len, const char *name, struct manifest *m, struct err *e);

/* Result of comparing an expected manifest with the actual entries. */
enum manifest_status {
	MS_OK,        /* present, size and SHA-256 equal */
	MS_MISSING,   /* in the manifest, not in the supplement */
	MS_EXTRA,     /* in the supplement, not in the manifest */
	MS_CHANGED    /* present, size or SHA-256 differ */
};
struct manifest_cmp_item {
	enum manifest_status status;
	const struct manifest_entry *want;   /* into expected (NULL for MS_EXTRA) */
	const struct manifest_entry *got;    /* into actual (NULL for MS_MISSING) */
};
struct manifest_cmp {
	struct manifest_cmp_item *items;     /* sorted by path */
	size_t n;
	size_t n_ok, n_missing, n_extra, n_changed;
};
/* Compare (both sorted). Items point into the manifests, which must outlive cmp. */
void manifest_compare(const struct manifest *expected, const struct manifest *actual,
		      struct manifest_cmp *cmp);
void manifest_cmp_release(struct manifest_cmp *cmp);
const char *manifest_status_name(enum manifest_status s);

#endif

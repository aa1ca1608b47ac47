/* json.h: JSON records through cJSON, read with limits, written deterministically.
 *
 * Records (supkit-formats(5)) are UTF-8 with object keys sorted byte-wise and
 * numbers printed with the fewest digits that round-trip (integers below 2^53
 * without a fraction), two-space indentation, a final newline. So the same
 * record gives the same bytes on every run. Parsing goes through cJSON; the
 * reader refuses files over a size limit and nesting deeper than cJSON's limit.
 */
#ifndef SUPKIT_JSON_H
#define SUPKIT_JSON_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "err.h"

#define JSON_MAX_BYTES_DEFAULT (256u << 20) /* 256 MiB */

/* Parse text (len bytes, need not be NUL-terminated). On a syntax error the
 * message names what ("'name'") and the line and column. Caller cJSON_Delete()s. */
cJSON *json_parse(const char *text, size_t len, const char *name, struct err *e);
/* Read and parse a file of at most max_bytes (0 = JSON_MAX_BYTES_DEFAULT). */
cJSON *json_read_file(const char *path, size_t max_bytes, struct err *e);
/* The same, or standard input when path is "-" (lib/stream.h). */
cJSON *json_read_input(const char *path, size_t max_bytes, struct err *e);

/* Sort every object's keys (recursively), byte-wise. */
void json_sort(cJSON *item);
/* Deterministic text (sorted keys, round-trip numbers); caller frees. pretty:
 * two-space indentation and a final newline; otherwise one line, no newline. */
char *json_print(cJSON *item, int pretty);
/* json_print(pretty) then atomic write. */
int json_write_file(const char *path, cJSON *item, struct err *e);
/* json_print(pretty) to stdout. */
void json_print_stdout(cJSON *item);
/* Shortest "%.*g" that round-trips v, into buf (>= 32 bytes). NaN/Inf as null. */
void json_format_number(double v, char *buf, size_t n);

/* Typed getters: 0 on success, -1 with a message naming ctx and key. */
int json_get_number(const cJSON *obj, const char *key, double *out, const char *ctx, struct err *e);
int json_get_string(const cJSON *obj, const char *key, const char **out, const char *ctx, struct err *e);

#endif

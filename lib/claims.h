/* claims.h: a published-claims file (claims.json): the numbers of a paper's
 * tables as printed, each with where it appears and how it is derived, so
 * that supkit verify can re-derive every one.
 *
 *   {"format": "supkit-claims", "format_version": 1,
 *    "derivations": {"stats-1a2b3c4d5e6f": {<a derivation block (derivation.h)>}},
 *    "claims": [{"value": "-0.001395",
 *                "where": "Table 3: 1. Opt | Dense (01 - 00), d6, validation, mean",
 *                "derivation": "stats-1a2b3c4d5e6f",
 *                "figure": {<what the derivation's tool recomputes: its own keys>}}]}
 *
 * A claim's "derivation" is a block, or the name of one in "derivations"
 * (claims_add names each block after its command and the first 12 hex
 * digits of the SHA-256 of deriv_key's text, so that merged files keep
 * distinct names).
 * "value" is the figure as printed (a string: "26,345,772", "+24.55",
 * "0.041%", "1.048678"); "figure" is read by the tool named in the
 * derivation (`supkit audit stats --check claims.json`, `supkit audit compute
 * --check claims.json`; supkit-audit(1)). Written by `supkit audit stats
 * --claims` and `supkit audit compute --claims`; an author may merge files
 * (concatenate "claims"). Format: supkit-formats(5), CLAIMS.
 *
 * Ownership: cJSON trees, the caller's to delete.
 */
#ifndef SUPKIT_CLAIMS_H
#define SUPKIT_CLAIMS_H

#include <cjson/cJSON.h>
#include "err.h"

#define CLAIMS_FORMAT "supkit-claims"
#define CLAIMS_FORMAT_VERSION 1
#define CLAIMS_MAX 1000000

/* An empty claims file. */
cJSON *claims_new(void);
/* Append a claim: value and where copied, derivation (a block as
 * deriv_to_json makes it) copied into "derivations" once and named, figure
 * taken. */
void claims_add(cJSON *file, const char *value, const char *where, const cJSON *derivation, cJSON *figure);
/* 1 when root looks like a claims file (its "format" says so). */
int claims_is(const cJSON *root);
/* Check the shape of a claims file: format, version, and every claim an
 * object with a string "value" and "where", an object "derivation" (with
 * string "tool" and "command", or the name of one in "derivations") and an
 * object "figure". name is used in
 * messages, which name the claim by index. 0 or -1 (EXIT_USAGE). */
int claims_validate(const cJSON *root, const char *name, struct err *e);
/* The claims array of a validated file. */
const cJSON *claims_list(const cJSON *root);
/* Claim c's derivation block (in c, or named in the file's "derivations");
 * NULL when neither. */
const cJSON *claims_derivation(const cJSON *file, const cJSON *c);
/* 1 when claim c's derivation is tool's command. */
int claims_of(const cJSON *file, const cJSON *c, const char *tool, const char *command);

#endif

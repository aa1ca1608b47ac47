/* rederive.h: supkit verify's re-derivation: every derived entry of a
 * supplement derived again from the supplement's own entries, number by
 * number.
 *
 * What is derived from what comes from the manifest's records (derive.h);
 * a manifest that records none (format 1, a sha256sum manifest, none at
 * all) has them found in the entries the same way supkit pack would.
 * Each derivation is re-run as the supkit command it was, a child process
 * (supkit-audit, supkit-eval: beside this program, else on PATH) in a
 * private scratch folder holding copies of its inputs under the paths it
 * recorded, so that this code links no model code. The copies are checked
 * against the scan's SHA-256 as they are made. Kinds:
 *   "command"  its recorded arguments run again (only the options each
 *              command lists in rederive.c's table: no output files), its
 *              JSON compared with the packed one number by number (every
 *              number, boolean and 64-hex digest string, by JSON path) under
 *              the command's rule: compute and digest exactly; stats within
 *              1e-12 relative; geometry within 1e-9 relative; step0 and
 *              trajectory within 1e-9 relative, their bf16 figures within
 *              1e-2;
 *   "claims"   each group of claims with the same derivation checked by
 *              the command's own --check (its rounding rules: a printed
 *              figure agrees when it is the rounding of the re-derived
 *              value; stats inputs printed to N decimals reach a range);
 *   "check"    `supkit audit compute --check` of the packed file;
 *   "run"      the accounting (num_params, parameter_accounting, flops_per_token,
 *              tokens_per_step, config_sha256, depth) from `supkit audit
 *              compute --json` of its config.cfg, exactly; seed, steps,
 *              eval_tokens, heldout_tokens and tokens from the config's
 *              text; final_loss from the curve's last line, exactly; with a
 *              data folder, val_bpb and heldout_bpb re-scored by `supkit eval`
 *              from its checkpoint, within 1e-6 relative;
 *   "digest"   a safetensors entry's safetensors_digest, computed again.
 * An entry that cannot be re-derived (an input not packed, a command that
 * fails, a tool not found) is listed with why; its numbers count as checked,
 * not re-derived.
 *
 * Leaves out: hashing and replay (verify.h); the numbers' meaning (each
 * command's own rules). Reference: supkit-verify(1), RE-DERIVATION.
 */
#ifndef SUPKIT_SUPPLEMENTS_REDERIVE_H
#define SUPKIT_SUPPLEMENTS_REDERIVE_H

#include <stddef.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "supplements/manifest.h"
#include "supplements/scan.h"

struct rd_finding {          /* one number that does not follow */
	char *entry;             /* the supplement entry */
	char *where;             /* JSON path, table cell or claim */
	char *published;
	char *rederived;         /* "absent" when the re-derivation has no such number */
	char *rule;
};

struct rd_entry {            /* one derived entry */
	char *path;
	char *kind;              /* "command", "claims", "check", "run", "digest" */
	char *what;              /* the command it was, e.g. "supkit audit compute" */
	int rederived;           /* 1: re-derived (perhaps in part: why says what not) */
	char *why;               /* why not (or which part not), or NULL */
	char *note;              /* e.g. an input whose bytes differ from those recorded, or NULL */
	size_t checked, done, agreed, disagreed;
};

struct rd_report {
	struct rd_entry *e;
	size_t n;
	struct rd_finding *f;
	size_t nf;
	size_t checked, done, agreed, disagreed;
	size_t not_rederived;    /* entries with numbers not re-derived (re-scoring aside) */
	int inferred;            /* the derivations were found in the entries, not the manifest */
	size_t rescore_runs;     /* run records whose val_bpb/heldout_bpb were not re-scored */
	char *data_note;         /* why not: "re-scoring needs --data DIR", "not run: supkit-eval not
	                            found", ...; NULL when every one was */
};

struct rd_opts {
	const char *data_dir;    /* validation/held-out shards and tokenizer, or NULL */
	int quiet;               /* no progress on stderr */
};

/* Re-derive the derived entries of the supplement at path (s its scan, made
 * with derive_capture and safetensors digests; expected its manifest, which
 * may record no derivations). Returns -1 with e set only when nothing can be
 * tried (no scratch folder: EXIT_SYS); everything else is a finding or a
 * why. Release r in every case. */
int rederive(const char *path, const struct scan *s, const struct manifest *expected, const struct rd_opts *o,
	     struct rd_report *r, struct err *e);
void rd_report_release(struct rd_report *r);

/* The re-derivation part of verify's report: one line per number that does
 * not follow, then the entries not re-derived. */
void rd_report_print(FILE *f, const struct rd_report *r);
cJSON *rd_report_json(const struct rd_report *r);

#endif

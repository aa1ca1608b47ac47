/* replay.h: the diffs-file runner of supkit replay, in memory.
 *
 * A diffs file (supkit-formats(5)) is a JSON object
 *     {"<run>": {"diff": "<diff -U 0 output>", "sha256": "<hex>"}, ...}
 * A run may carry other keys (the papers' supplements add "source_commit",
 * "run_name", seeds...): they are read past and their names listed once in
 * the report (extra_keys), or refused in strict mode.
 * Each run's file is rebuilt by applying its diff to one baseline and its
 * SHA-256 compared with the recorded one. Everything here works on bytes in
 * memory, so a caller can replay runs read from a zip without extracting
 * (supplements/verify); replay_report_write() then puts the matching files on
 * disk. Leaves out: diffs of more than one file per run, binary patches.
 *
 * Ownership: a replay_report owns every string and buffer it points to;
 * replay_report_release() frees them all. Inputs are borrowed, never kept.
 * Reference: supkit-replay(1); POSIX diff -u / GNU diffutils manual
 * ("Detailed Unified") for the diff format (see udiff.h).
 */
#ifndef SUPKIT_REPLAY_H
#define SUPKIT_REPLAY_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "lib/sha256.h"

/* Resource limits (documented in supkit-replay(1), LIMITS). */
#define REPLAY_MAX_BASELINE_BYTES ((size_t)64 << 20) /* baseline file */
#define REPLAY_MAX_DIFFS_BYTES ((size_t)256 << 20)   /* whole diffs.json */
#define REPLAY_MAX_DIFF_BYTES ((size_t)16 << 20)     /* one run's diff text */
#define REPLAY_MAX_HUNKS 100000                      /* hunks in one diff */
#define REPLAY_MAX_RUNS 10000                        /* runs in one diffs file */
#define REPLAY_MAX_NAME 255                          /* bytes in a run or file name */

enum replay_status {
	REPLAY_OK = 0,       /* rebuilt, SHA-256 matches */
	REPLAY_MISMATCH = 1, /* rebuilt, SHA-256 differs */
	REPLAY_FAILED = 2    /* the diff was refused (parse or apply error) */
};

struct replay_run {
	char *name;          /* run name (the JSON key), a safe name */
	char *target;        /* name of the + file (basename of the "+++" label);
	                      * NULL when the diff is empty or the run failed early */
	size_t hunks;        /* hunks in the diff */
	size_t added;        /* '+' lines */
	size_t removed;      /* '-' lines */
	char sha_expected[SHA256_HEX_LEN + 1]; /* as recorded, lower-cased */
	char sha_actual[SHA256_HEX_LEN + 1];   /* of the rebuilt bytes; "" when failed */
	int ok;              /* 1 only when status == REPLAY_OK */
	enum replay_status status;
	char *error;         /* one line (no trailing newline) when not ok, else NULL;
	                      * names the diffs file, the run, hunk and diff line */
	char *data;          /* rebuilt bytes (NULL when failed); owned */
	size_t len;          /* bytes in data */
};

struct replay_report {
	struct replay_run *runs; /* sorted by name (byte-wise) */
	size_t n_runs;
	char **extra_keys;       /* keys of runs other than "diff" and "sha256", each once, sorted */
	size_t n_extra_keys;
	size_t n_ok, n_mismatch, n_failed;
	char baseline_sha[SHA256_HEX_LEN + 1]; /* SHA-256 of the baseline bytes */
	size_t baseline_len;
};

/* Replay every run of a diffs file against one baseline.
 * baseline/blen: the baseline bytes; diffs_json/jlen: the diffs file's text
 * (need not be NUL-terminated); diffs_name names it in messages.
 * Returns 0 when the diffs file has the expected shape: then rep holds one
 * result per run (each ok, mismatching or failed with its own message) and the
 * caller checks rep->n_ok == rep->n_runs. Returns -1 with e set (code
 * EXIT_USAGE) when the file as a whole is refused (not JSON, not the expected
 * shape, an unsafe or duplicate run name, over a limit); rep is then empty.
 * Release rep with replay_report_release() in both cases. */
int replay_diffs(const char *baseline, size_t blen, const char *diffs_json, size_t jlen,
		 const char *diffs_name, struct replay_report *rep, struct err *e);
/* The same; strict: a run's key other than "diff" and "sha256" refuses the
 * file (otherwise it is listed in rep->extra_keys and ignored). */
int replay_diffs_strict(const char *baseline, size_t blen, const char *diffs_json, size_t jlen,
			const char *diffs_name, int strict, struct replay_report *rep, struct err *e);

/* Free everything rep owns and zero it (safe on a zeroed or released report). */
void replay_report_release(struct replay_report *rep);

/* Write DIR/<run>/<target> for every run with status REPLAY_OK, each file
 * atomically (temp + fsync + rename), creating DIR and the run folders.
 * fallback_target names the file of a run whose diff is empty (the baseline's
 * own name); it must be a safe name. Runs that are not ok write nothing.
 * Returns 0 or -1 with e set (EXIT_SYS for I/O, EXIT_USAGE for a bad name). */
int replay_report_write(const struct replay_report *rep, const char *dir,
			const char *fallback_target, struct err *e);

/* The report as JSON (caller cJSON_Delete()s):
 * {"baseline": {"bytes", "sha256"}, "diffs": diffs_name, "extra_keys": [...],
 *  "runs": [{"name", "target", "hunks", "added", "removed", "sha256_expected",
 *            "sha256_actual", "status": "ok"|"mismatch"|"failed", "error"}],
 *  "summary": {"runs", "ok", "mismatch", "failed"}}
 * "target", "sha256_actual" and "error" are null where absent. */
cJSON *replay_report_json(const struct replay_report *rep, const char *diffs_name);

/* 1 when s is a safe run or file name: 1..REPLAY_MAX_NAME bytes, no '/', no
 * "..", not ".", no control characters (bytes < 0x20 and 0x7f). */
int replay_name_safe(const char *s);

/* Copy of s with control characters, quotes and backslashes escaped C-style
 * (for printing untrusted names on one line); caller frees. */
char *replay_name_quote(const char *s);

/* One -U 0 diff of baseline (labelled base_label) against data (labelled
 * label), as `diff -U 0 --label base_label --label label` prints it, checked
 * by applying it back. Refuses binary input (a NUL byte) and labels with
 * control characters or an unsafe last component (-1, EXIT_USAGE). *out is
 * fresh and NUL-terminated (empty when identical); caller frees. */
int replay_make_diff(const char *baseline, size_t blen, const char *base_label, const char *data,
		     size_t len, const char *label, char **out, size_t *out_len, struct err *e);

/* One run for replay_make_diffs: the file's bytes and the names to record. */
struct replay_input {
	const char *run;     /* run name (must be safe) */
	const char *label;   /* the "+++" label, e.g. "r1/train.py" */
	const char *data;    /* the run's file bytes */
	size_t len;
};

/* The inverse of replay_diffs: for each input a -U 0 diff of the baseline
 * (labelled base_label) against the input (as `diff -U 0 --label base_label
 * --label label` prints it) plus the input's SHA-256, collected into a diffs
 * object {run: {"diff", "sha256"}}. Refuses unsafe or duplicate run names and
 * more than REPLAY_MAX_RUNS inputs (-1, EXIT_USAGE). Caller cJSON_Delete()s. */
cJSON *replay_make_diffs(const char *baseline, size_t blen, const char *base_label,
			 const struct replay_input *in, size_t n, struct err *e);

#endif

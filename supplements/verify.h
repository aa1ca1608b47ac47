/* verify.h: check a supplement (zip or folder) against its manifest, replay
 * its diffs file against its baseline, and re-derive its derived entries.
 *
 * Every manifest entry must be present with the same size and SHA-256;
 * entries missing, extra or changed are listed, and so is every entry the
 * scan refused (symlink, duplicate, encrypted, unreadable, CRC error...).
 * When the supplement holds a diffs file and its baseline, every run is
 * rebuilt in memory with the replay engine (replay/replay.h) and its SHA-256
 * compared. Entry names (the manifest's, the scan's, the diffs file and
 * baseline named in the options) are compared in Unicode NFC. Default names
 * (supkit-verify(1)): the diffs file "diffs.json", else the one entry whose
 * name ends in "diffs.json" (the papers' configs/<name>_runs_diffs.json);
 * the baseline "baseline.cfg", "baseline/train.py" or else
 * "baseline_train.py" in the diffs file's folder. A run's keys other than
 * "diff" and "sha256" are ignored and named (strict refuses the file).
 * The manifest: manifest.json; a supplement without one may carry a
 * sha256sum-format manifest (top-level SHA256SUMS and *.sha256 files,
 * "<hex>  <path>" lines, merged; sizes are not in it); a folder with neither
 * is hashed and re-derived, with a note that it has no manifest.
 * Then every derived entry is re-derived (rederive.h).
 * The verdict (verify_report.verified) is 1 only when everything checked
 * out: every entry as its manifest says, every run replayed, no re-derived
 * number that disagrees.
 *
 * Leaves out: extraction (unpack.h). Reference: supkit-verify(1).
 */
#ifndef SUPKIT_SUPPLEMENTS_VERIFY_H
#define SUPKIT_SUPPLEMENTS_VERIFY_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "replay/replay.h"
#include "supplements/manifest.h"
#include "supplements/rederive.h"
#include "supplements/scan.h"

#define VERIFY_DEFAULT_DIFFS "diffs.json"

struct verify_opts {
	const char *diffs;      /* entry path of the diffs file; NULL: VERIFY_DEFAULT_DIFFS if present */
	const char *baseline;   /* entry path of the baseline; NULL: the first default present */
	int no_replay;          /* skip the replay check */
	int no_rederive;        /* skip the re-derivation */
	int strict;             /* refuse a diffs file whose runs carry other keys */
	const char *data_dir;   /* --data: re-score checkpoints (rederive.h) */
	int quiet;              /* no progress on stderr */
};

enum verify_manifest { VM_SUPKIT, VM_SHA256SUMS, VM_NONE };

enum verify_replay_state {
	VR_NONE,      /* no diffs file (nothing to replay) */
	VR_SKIPPED,   /* a diffs file but no baseline found (note says so); not a failure */
	VR_MISSING,   /* --diffs or --baseline named an entry that is not there: a failure */
	VR_REFUSED,   /* the diffs file as a whole was refused (note holds why): a failure */
	VR_DONE       /* rep holds one result per run */
};

struct verify_report {
	struct scan scan;               /* what the supplement holds */
	struct manifest expected;       /* its manifest.json (or sha256sum manifest) */
	struct manifest listed;         /* scan.actual less the sha256sum files */
	struct manifest_cmp cmp;        /* expected vs listed */
	enum verify_manifest manifest_kind;
	char *manifest_note;            /* which manifest, when not manifest.json; owned */
	enum verify_replay_state replay;
	char *replay_note;              /* one line (owned) or NULL */
	const char *diffs_path;         /* entry names used (static, or opt_* below) */
	const char *baseline_path;
	char *opt_diffs, *opt_baseline; /* --diffs, --baseline in NFC (owned) or NULL */
	char *baseline_cands[3];        /* default baseline paths tried (owned) */
	char *found_cands[3];           /* the same beside a diffs file found by its name (owned) */
	struct replay_report rep;       /* when replay == VR_DONE */
	int rederived;                  /* 1: rd holds the re-derivation */
	struct rd_report rd;
	int verified;                   /* 1: every check passed */
};

/* Verify path. Returns -1 with e set when the supplement cannot be checked at
 * all: unreadable or structurally broken zip, invalid manifest.json or
 * sha256sum manifest (EXIT_USAGE), a zip with no manifest (EXIT_CHECK), I/O
 * (EXIT_SYS). Otherwise 0 and r holds the findings. Release r with
 * verify_report_release in every case. */
/* Parse sha256sum-format text ("<64 hex>  <path>" or "<64 hex> *<path>", a
 * leading '\' for escaped names, or "SHA256 (<path>) = <hex>") into m
 * (initialised here; sizes 0, paths in NFC, sorted). name is used in
 * messages (line numbers). Release m in every case. */
int verify_sums_parse(const char *text, size_t len, const char *name, struct manifest *m, struct err *e);
int verify_path(const char *path, const struct verify_opts *o, struct verify_report *r, struct err *e);
void verify_report_release(struct verify_report *r);

/* The findings as a table on f: one row per entry and per run, then a last
 * line that starts with "verified:" or "FAILED:". */
void verify_report_print(FILE *f, const struct verify_report *r, const char *path);
/* The findings as one JSON object (caller cJSON_Delete()s). */
cJSON *verify_report_json(const struct verify_report *r, const char *path);

#endif

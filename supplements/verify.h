/* verify.h: check a supplement (zip or folder) against its manifest, and
 * replay its diffs file against its baseline.
 *
 * Every manifest entry must be present with the same size and SHA-256;
 * entries missing, extra or changed are listed, and so is every entry the
 * scan refused (symlink, duplicate, encrypted, unreadable, CRC error...).
 * When the supplement holds a diffs file and its baseline, every run is
 * rebuilt in memory with the replay engine (replay/replay.h) and its SHA-256
 * compared. Entry names (the manifest's, the scan's, the diffs file and
 * baseline named in the options) are compared in Unicode NFC. Default names
 * (supkit-verify(1)): the diffs file "diffs.json",
 * the baseline "baseline.cfg" or else "baseline/train.py" in the diffs
 * file's folder.
 * The verdict (verify_report.verified) is 1 only when everything checked out.
 *
 * Leaves out: extraction (unpack.h). Reference: issue 3; SPEC section 9.
 */
#ifndef SUPKIT_SUPPLEMENTS_VERIFY_H
#define SUPKIT_SUPPLEMENTS_VERIFY_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "lib/err.h"
#include "replay/replay.h"
#include "supplements/manifest.h"
#include "supplements/scan.h"

#define VERIFY_DEFAULT_DIFFS "diffs.json"

struct verify_opts {
	const char *diffs;      /* entry path of the diffs file; NULL: VERIFY_DEFAULT_DIFFS if present */
	const char *baseline;   /* entry path of the baseline; NULL: the first default present */
	int no_replay;          /* skip the replay check */
	int quiet;              /* no progress on stderr */
};

enum verify_replay_state {
	VR_NONE,      /* no diffs file (nothing to replay) */
	VR_SKIPPED,   /* a diffs file but no baseline found (note says so); not a failure */
	VR_MISSING,   /* --diffs or --baseline named an entry that is not there: a failure */
	VR_REFUSED,   /* the diffs file as a whole was refused (note holds why): a failure */
	VR_DONE       /* rep holds one result per run */
};

struct verify_report {
	struct scan scan;               /* what the supplement holds */
	struct manifest expected;       /* its manifest.json */
	struct manifest_cmp cmp;        /* expected vs scan.actual */
	enum verify_replay_state replay;
	char *replay_note;              /* one line (owned) or NULL */
	const char *diffs_path;         /* entry names used (static, or opt_* below) */
	const char *baseline_path;
	char *opt_diffs, *opt_baseline; /* --diffs, --baseline in NFC (owned) or NULL */
	char *baseline_cands[2];        /* default baseline paths tried (owned) */
	struct replay_report rep;       /* when replay == VR_DONE */
	int verified;                   /* 1: every check passed */
};

/* Verify path. Returns -1 with e set when the supplement cannot be checked at
 * all: unreadable or structurally broken zip, invalid manifest.json (EXIT_USAGE),
 * no manifest.json (EXIT_CHECK), I/O (EXIT_SYS). Otherwise 0 and r holds the
 * findings. Release r with verify_report_release in every case. */
int verify_path(const char *path, const struct verify_opts *o, struct verify_report *r, struct err *e);
void verify_report_release(struct verify_report *r);

/* The findings as a table on f: one row per entry and per run, then a last
 * line that starts with "verified:" or "FAILED:". */
void verify_report_print(FILE *f, const struct verify_report *r, const char *path);
/* The findings as one JSON object (caller cJSON_Delete()s). */
cJSON *verify_report_json(const struct verify_report *r, const char *path);

#endif

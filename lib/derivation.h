/* derivation.h: the record of how a derived file was made -- the supkit
 * command, its version, its arguments and the files it read -- and the
 * process-wide log of the files a command reads, which fills it.
 *
 * A command that writes a derived record (every audit's --json) calls
 * deriv_log_start() before it reads anything; from then on lib's readers
 * (file_read_all, stream_read_all, json_read_*, st_open) and data's shard
 * readers note each file they open (deriv_log_file). At output time the
 * command lists its arguments (deriv_arg, deriv_path_arg: options in a fixed
 * order, then operands, never output options) and deriv_finish() hashes every
 * logged file and writes every path relative to one base folder, so that the
 * record names no folder of the machine it was made on:
 *   - when every path (arguments and files read) is relative and stays below
 *     the current folder, the current folder: paths as given, tidied ("./a//b"
 *     is "a/b");
 *   - otherwise the nearest folder holding them all (a folder argument counts
 *     as itself, a file as its folder), one level up when a file argument or
 *     a file read lies in it directly or a folder argument is it, so that
 *     every path keeps its folder's name ("/x/configs/a.cfg" and
 *     "/x/configs/b.cfg" become "configs/a.cfg" and "configs/b.cfg").
 * Standard input is recorded as "-" and has no SHA-256 (it cannot be read
 * again). deriv_to_json() gives the block; deriv_parse() reads one back
 * (supkit pack, supkit verify), refusing unsafe paths.
 *
 * Format (supkit-formats(5), DERIVATIONS):
 *   {"tool": "supkit-audit", "command": "compute", "version": "0.1.0",
 *    "args": ["--json", "configs/a.cfg"],
 *    "inputs": [{"path": "configs/a.cfg", "sha256": "<hex>", "size": 1065}]}
 * pack adds "entry" to each input it finds in the supplement.
 *
 * Ownership: a struct deriv owns its strings (deriv_release). The log is one
 * per process and is never freed (it lives as long as the command).
 */
#ifndef SUPKIT_DERIVATION_H
#define SUPKIT_DERIVATION_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "err.h"

#define DERIV_KEY "derivation"       /* the block's key in a derived JSON record */
#define DERIV_MAX_ARGS 4096
#define DERIV_MAX_INPUTS 100000

struct deriv_input {
	char *path;          /* relative, '/'-separated; "-" for standard input */
	char sha256[65];     /* lower-case hex; "" for standard input */
	uint64_t size;
	char *entry;         /* the supplement entry with these bytes (pack), or NULL */
};

struct deriv {
	char *tool;          /* "supkit-audit" */
	char *command;       /* "compute" */
	char *version;
	char **args;         /* as recorded (paths rewritten by deriv_finish) */
	unsigned char *is_path;
	size_t n_args, cap_args;
	struct deriv_input *in;   /* sorted by path after deriv_finish or deriv_parse */
	size_t n_in, cap_in;
};

/* Start logging the files this process reads (idempotent). */
void deriv_log_start(void);
/* Forget the files noted so far (the log stays on if it was). */
void deriv_log_reset(void);
/* Note one file read (path as opened; "-" for standard input). A no-op
 * unless deriv_log_start was called. */
void deriv_log_file(const char *path);

void deriv_init(struct deriv *d, const char *tool, const char *command);
void deriv_release(struct deriv *d);
/* Append a literal argument. */
void deriv_arg(struct deriv *d, const char *s);
/* Append a path argument (a file or folder operand or option value), as given. */
void deriv_path_arg(struct deriv *d, const char *path);
/* Take the logged files as inputs (hashed now), and rewrite every path
 * argument and input relative to the base folder (see above). 0, or -1 with
 * e set when a logged file cannot be hashed (EXIT_SYS). */
int deriv_finish(struct deriv *d, struct err *e);
/* deriv_finish, then add the block to obj under DERIV_KEY. */
int deriv_attach(struct deriv *d, cJSON *obj, struct err *e);

/* The block (caller cJSON_Delete()s). */
cJSON *deriv_to_json(const struct deriv *d);
/* Read a block: every key checked (strings, 64 lower-case hex digits, sizes),
 * every input path and every "entry" a safe relative path (no "..", ".",
 * empty or absolute components) or "-". ctx names the place in messages.
 * d is initialised here; release it in every case. */
int deriv_parse(const cJSON *j, const char *ctx, struct deriv *d, struct err *e);
/* 1 when p is a safe relative path as deriv_parse requires ("." allowed when
 * dot_ok). */
int deriv_path_safe(const char *p, int dot_ok);
/* Canonical text of the command (tool, command, args, inputs' paths and
 * SHA-256s): equal for equal derivations; caller frees. */
char *deriv_key(const struct deriv *d);

#endif

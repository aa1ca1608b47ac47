/* sub_codec.c: `supkit data encode and decode` (man/supkit-data.1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "lib/cli.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/progress.h"
#include "lib/stream.h"
#include "lib/utf8.h"
#include "data/corpus.h"
#include "data/data.h"
#include "data/data_args.h"
#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenizer.h"

int data_encode_main(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		OPT_RANKS, OPT_PATTERN,
		{"u32", O_U32, NULL, "write raw little-endian uint32 ids instead of one id a line"},
		{"output", 'o', "FILE", "write to FILE (atomically) instead of stdout (-)"},
		{"json", O_JSON, NULL, "print one JSON object: the counts, and the ids unless -o FILE"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data encode --ranks FILE [--pattern REGEX] [--u32] [-o FILE] [--json] TEXTFILE\n"
			    "TEXTFILE - reads standard input.";
	struct data_opts o;
	struct err e = {0};
	struct tokenizer tk;
	int i = data_parse_one(argc, argv, t, usage, "text", &o, &tk, &e);
	if (i < 0)
		return err_report(&e);
	if (o.json && o.u32 && data_to_stdout(&o)) {
		tokenizer_free(&tk);
		cli_usage_error("--json without -o FILE prints the ids in the JSON object: no --u32");
	}
	if (o.u32 && !o.json && data_to_stdout(&o) && stream_stdout_binary("uint32 ids", " or give -o FILE", &e) < 0) {
		tokenizer_free(&tk);
		return err_report(&e);
	}
	char *text;
	size_t n;
	if (stream_read_all(argv[i], CORPUS_MAX_FILE, &text, &n, &e) < 0) {
		tokenizer_free(&tk);
		return err_report(&e);
	}
	struct ids ids = {0};
	int rc = tokenizer_encode(&tk, text, n, &ids, &e);
	free(text);
	struct bytes out = {0};
	for (size_t k = 0; rc == 0 && k < ids.n; k++) {
		if (o.u32) {
			unsigned char b[4];
			data_put_le32(b, ids.v[k]);
			bytes_append(&out, b, 4);
		} else {
			char s[16];
			int l = snprintf(s, sizeof s, "%u\n", ids.v[k]);
			bytes_append(&out, s, (size_t)l);
		}
	}
	if (rc == 0 && !(o.json && data_to_stdout(&o)))
		rc = stream_write_all(o.out, out.v, out.n, &e);
	if (rc == 0 && o.json) {
		cJSON *j = data_codec_json(argv[i], &o, ids.n, n);
		if (data_to_stdout(&o)) {
			cJSON *a = cJSON_AddArrayToObject(j, "ids");
			for (size_t k = 0; k < ids.n; k++)
				cJSON_AddItemToArray(a, cJSON_CreateNumber(ids.v[k]));
		} else {
			cJSON_AddStringToObject(j, "format", o.u32 ? "u32" : "text");
		}
		json_print_stdout(j);
		cJSON_Delete(j);
	}
	bytes_free(&out);
	ids_free(&ids);
	tokenizer_free(&tk);
	return rc < 0 ? err_report(&e) : EXIT_OK;
}

int data_decode_main(int argc, char **argv)
{
	static const struct cli_opt t[] = {
		OPT_RANKS, OPT_PATTERN,
		{"u32", O_U32, NULL, "read raw little-endian uint32 ids instead of one id a line"},
		{"output", 'o', "FILE", "write to FILE (atomically) instead of stdout (-)"},
		{"json", O_JSON, NULL, "print one JSON object: the counts, and the text unless -o FILE"},
		{NULL, 0, NULL, NULL}};
	const char *usage = "usage: supkit data decode --ranks FILE [--u32] [-o FILE] [--json] IDSFILE\n"
			    "IDSFILE - reads standard input.";
	struct data_opts o;
	struct err e = {0};
	struct tokenizer tk;
	int i = data_parse_one(argc, argv, t, usage, "ids", &o, &tk, &e);
	if (i < 0)
		return err_report(&e);
	char *d;
	size_t n;
	struct ids ids = {0};
	struct bytes out = {0};
	int rc = stream_read_all(argv[i], CORPUS_MAX_FILE, &d, &n, &e);
	if (rc == 0) {
		rc = data_ids_parse(argv[i], d, n, o.u32, &ids, &e);
		free(d);
	}
	if (rc == 0 && tokenizer_decode(&tk, ids.v, ids.n, &out, &e) < 0) {
		err_prefix(&e, "'%s'", argv[i]);
		rc = -1;
	}
	if (rc == 0 && !(o.json && data_to_stdout(&o)))
		rc = stream_write_all(o.out, out.v, out.n, &e);
	if (rc == 0 && o.json) {
		cJSON *j = data_codec_json(argv[i], &o, ids.n, out.n);
		cJSON_AddBoolToObject(j, "valid_utf8", utf8_valid((const char *)out.v, out.n));
		if (data_to_stdout(&o))
			cJSON_AddItemToObject(j, "text", data_text_json(out.v, out.n));
		json_print_stdout(j);
		cJSON_Delete(j);
	}
	bytes_free(&out);
	ids_free(&ids);
	tokenizer_free(&tk);
	return rc < 0 ? err_report(&e) : EXIT_OK;
}

/* fuzz_diffs.c: libFuzzer harness for the diffs-file runner
 * (replay/replay.c replay_diffs) on untrusted diffs.json text.
 *
 * Invariants: no crash; on success every run is counted exactly once, names
 * are safe, failed runs hold no bytes, ok runs hold bytes whose SHA-256 is the
 * recorded one; the JSON report prints; on refusal a one-line message.
 *
 * Build (clang): clang -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *   tests/fuzz/fuzz_diffs.c build/libreplay.a build/liblib.a \
 *   $(pkg-config --libs libcrypto libcjson)
 * Seeds: tests/fixtures/replay/diffs.json, mismatch.json. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "replay/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char base[] = "one\ntwo\nthree\r\nfour\n";
	struct replay_report rep;
	struct err e = {0};
	if (replay_diffs(base, sizeof base - 1, (const char *)data, size, "fuzz.json", &rep, &e) != 0) {
		if (!e.msg[0] || strchr(e.msg, '\n') || rep.n_runs)
			abort();
		replay_report_release(&rep);
		return 0;
	}
	if (rep.n_ok + rep.n_mismatch + rep.n_failed != rep.n_runs)
		abort();
	for (size_t i = 0; i < rep.n_runs; i++) {
		const struct replay_run *r = &rep.runs[i];
		if (!replay_name_safe(r->name) || (r->target && !replay_name_safe(r->target)))
			abort();
		if ((r->status == REPLAY_FAILED) != (r->data == NULL) || (r->ok != (r->status == REPLAY_OK)))
			abort();
		if (r->ok) {
			char hex[SHA256_HEX_LEN + 1];
			sha256_buf_hex(r->data, r->len, hex);
			if (strcmp(hex, r->sha_expected) != 0 || r->error)
				abort();
		} else if (!r->error || strchr(r->error, '\n')) {
			abort();
		}
	}
	cJSON *j = replay_report_json(&rep, "fuzz.json");
	char *s = json_print(j, 1);
	free(s);
	cJSON_Delete(j);
	replay_report_release(&rep);
	return 0;
}

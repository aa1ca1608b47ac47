/* fuzz_records.c: libFuzzer harness for the records a supplement describes
 * itself with: a derivation block (lib/derivation.c deriv_parse, and its
 * print/parse round trip: the same key both times), a claims file
 * (lib/claims.c claims_validate, then every claim's derivation resolved) and a
 * sha256sum manifest (supplements/verify.c verify_sums_parse). The input is
 * tried as each.
 *
 * Build: make fuzz (build/fuzz/lf/fuzz_records). Seeds (tests/fuzz/seeds.txt):
 * the paper-shaped supplement's SHA256SUMS and claims.json, an audit's record. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/claims.h"
#include "lib/derivation.h"
#include "lib/json.h"
#include "supplements/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e;
	struct manifest m;
	verify_sums_parse((const char *)data, size, "fuzz", &m, &e);
	manifest_release(&m);
	cJSON *j = json_parse((const char *)data, size, "fuzz", &e);
	if (!j)
		return 0;
	const cJSON *blk = cJSON_IsObject(j) && cJSON_GetObjectItemCaseSensitive(j, DERIV_KEY)
				   ? cJSON_GetObjectItemCaseSensitive(j, DERIV_KEY) : j;
	struct deriv d, d2;
	if (deriv_parse(blk, "fuzz", &d, &e) == 0) {
		cJSON *back = deriv_to_json(&d);
		if (deriv_parse(back, "fuzz-reprint", &d2, &e) != 0)
			abort();
		char *k1 = deriv_key(&d), *k2 = deriv_key(&d2);
		if (strcmp(k1, k2) != 0)
			abort();
		free(k1);
		free(k2);
		deriv_release(&d2);
		cJSON_Delete(back);
	}
	deriv_release(&d);
	if (claims_is(j) && claims_validate(j, "fuzz", &e) == 0)
		for (const cJSON *c = claims_list(j)->child; c; c = c->next)
			if (!claims_derivation(j, c))
				abort();
	cJSON_Delete(j);
	return 0;
}

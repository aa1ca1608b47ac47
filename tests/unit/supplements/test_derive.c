/* test_derive.c: supplements/derive.c (which entries are derived, and from
 * which entries), the manifest's derivation records (format 2, format 1
 * still read) and verify's sha256sum manifests. */
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "supplements/derive.h"
#include "supplements/manifest.h"
#include "supplements/verify.h"
#include "t.h"

#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HC "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

TEST(find_by_bytes_then_by_path)
{
	struct manifest m;
	manifest_init(&m);
	manifest_add(&m, "checkpoints/r1.safetensors", 10, HA, NULL);
	manifest_add(&m, "results/r1/result.json", 5, HB, NULL);
	manifest_add(&m, "other/r1/result.json", 5, HB, NULL);
	manifest_add(&m, "results/r2/result.json", 5, HC, NULL);
	manifest_sort(&m);
	const struct manifest_entry *x = derive_find(&m, HA, 10, "runs/r1/model.safetensors");
	CHECK(x && !strcmp(x->path, "checkpoints/r1.safetensors"));
	CHECK(derive_find(&m, HA, 11, "x") == NULL); /* the size must agree too */
	/* two entries with those bytes: the one whose path ends most alike */
	x = derive_find(&m, HB, 5, "results/r1/result.json");
	CHECK(x && !strcmp(x->path, "results/r1/result.json"));
	/* bytes changed since: by the path's end, when one entry shares the most */
	x = derive_find_path(&m, "runs/r2/result.json");
	CHECK(x && !strcmp(x->path, "results/r2/result.json"));
	CHECK(derive_find_path(&m, "runs/r1/result.json") == NULL); /* two share as much */
	CHECK(derive_find_path(&m, "nothing.txt") == NULL);
	manifest_release(&m);
}

/* A scan as pack makes it: entries, and the JSON ones' bytes. */
static void add(struct scan *s, const char *path, const char *text, const char *sha)
{
	manifest_add(&s->actual, path, text ? strlen(text) : 7, sha, NULL);
	if (text) {
		s->extra = xrealloc(s->extra, (s->n_extra + 1) * sizeof *s->extra);
		s->extra[s->n_extra].path = xstrdup(path);
		s->extra[s->n_extra].data = xstrdup(text);
		s->extra[s->n_extra].len = strlen(text);
		s->n_extra++;
	}
}

TEST(lift_each_kind)
{
	struct scan s;
	memset(&s, 0, sizeof s);
	manifest_init(&s.actual);
	add(&s, "configs/a.cfg", NULL, HA);
	char audit[1024];
	snprintf(audit, sizeof audit,
		 "{\"arms\": [], \"derivation\": {\"tool\": \"supkit-audit\", \"command\": \"compute\", \"version\": \"0.1.0\","
		 " \"args\": [\"--json\", \"configs/a.cfg\"], \"inputs\": [{\"path\": \"configs/a.cfg\", \"sha256\": \"%s\","
		 " \"size\": 7}, {\"path\": \"data/x.bin\", \"sha256\": \"%s\", \"size\": 3}]}}", HA, HC);
	add(&s, "audit/compute.json", audit, HB);
	add(&s, "results/r1/result.json", "{\"arm\": \"00\", \"val_bpb\": 1.0}", HC);
	add(&s, "results/r1/config.cfg", NULL, HA);
	add(&s, "results/r1/curve.jsonl", NULL, HB);
	add(&s, "checkpoints/r1.safetensors", NULL, HB);
	add(&s, "results/r2/result.json", "{\"arm\": \"00\", \"val_bpb\": 1.0}", HC); /* no config beside it */
	add(&s, "paper_audit.json", "{\"arms\": [{\"arm\": \"00_dense_native\", \"depth\": 6}]}", HA);
	add(&s, "notes.json", "{\"a\": 1}", HA);
	add(&s, "broken.json", "{\"derivation\": ", HA);
	manifest_sort(&s.actual);
	char **notes = NULL;
	size_t nn = 0;
	derive_lift(&s, &s.actual, &notes, &nn);
	CHECK(manifest_n_derived(&s.actual) == 3);
	const struct manifest_entry *x = manifest_find(&s.actual, "audit/compute.json");
	CHECK(x && x->derivation);
	char *t = x && x->derivation ? json_print(x->derivation, 0) : xstrdup("");
	CHECKF(strstr(t, "\"kind\":\"command\"") && strstr(t, "\"entry\":\"configs/a.cfg\""), "%s", t);
	free(t);
	x = manifest_find(&s.actual, "results/r1/result.json");
	t = x && x->derivation ? json_print(x->derivation, 0) : xstrdup("");
	CHECKF(strstr(t, "\"kind\":\"run\"") && strstr(t, "{\"entry\":\"results/r1/config.cfg\",\"role\":\"config\"}") &&
		       strstr(t, "{\"entry\":\"checkpoints/r1.safetensors\",\"role\":\"checkpoint\"}") &&
		       strstr(t, "\"role\":\"curve\""),
	       "%s", t);
	free(t);
	CHECK(!manifest_find(&s.actual, "results/r2/result.json")->derivation);
	x = manifest_find(&s.actual, "paper_audit.json");
	CHECK(x && x->derivation && strstr(cJSON_GetObjectItemCaseSensitive(x->derivation, "kind")->valuestring, "check"));
	CHECK(!manifest_find(&s.actual, "notes.json")->derivation && !manifest_find(&s.actual, "broken.json")->derivation);
	/* the input no entry holds: a note */
	CHECK(nn == 1 && nn && strstr(notes[0], "'audit/compute.json' was made from 'data/x.bin', which is not in the supplement"));
	for (size_t i = 0; i < nn; i++)
		free(notes[i]);
	free(notes);

	/* the manifest with records: format 2, read back whole */
	size_t len;
	char *text = manifest_print(&s.actual, &len);
	CHECK(strstr(text, "\"format_version\": 2") != NULL);
	struct manifest back;
	struct err e;
	CHECKF(manifest_parse(text, len, "m.json", &back, &e) == 0, "%s", e.msg);
	CHECK(manifest_n_derived(&back) == 3 && back.format_version == 2);
	char *text2 = manifest_print(&back, NULL);
	CHECK_STREQ(text, text2);
	free(text2);
	free(text);
	manifest_release(&back);
	scan_release(&s);
}

TEST(manifest_formats)
{
	struct manifest m;
	struct err e;
	/* format 1 (no records) is still read, and still written without them */
	const char *v1 = "{\"format\":\"supkit-manifest\",\"format_version\":1,\"tool_version\":\"0.1.0\",\"entries\":["
			 "{\"path\":\"a\",\"size\":1,\"sha256\":\"" HA "\"}]}";
	CHECK(manifest_parse(v1, strlen(v1), "m", &m, &e) == 0 && m.format_version == 1 && !manifest_n_derived(&m));
	char *t = manifest_print(&m, NULL);
	CHECK(strstr(t, "\"format_version\": 1") != NULL);
	free(t);
	manifest_release(&m);
	const char *bad = "{\"format\":\"supkit-manifest\",\"format_version\":2,\"tool_version\":\"0.1.0\",\"entries\":["
			  "{\"path\":\"a\",\"size\":1,\"sha256\":\"" HA "\",\"derivation\":[1]}]}";
	CHECK(manifest_parse(bad, strlen(bad), "m", &m, &e) < 0 && strstr(e.msg, "entry 0 'a': derivation is not an object"));
	manifest_release(&m);
}

TEST(sha256sum_manifests)
{
	struct manifest m;
	struct err e;
	const char *text = HA "  ./configs/x.py\n"
			   HB " *results/r.json\r\n"
			   "\\" HC "  escaped\n"
			   "\n"
			   "SHA256 (bsd/form.txt) = " HA "\n";
	CHECKF(verify_sums_parse(text, strlen(text), "SHA256SUMS", &m, &e) == 0, "%s", e.msg);
	CHECK(m.n == 4);
	CHECK(manifest_find(&m, "configs/x.py") && manifest_find(&m, "results/r.json") && manifest_find(&m, "escaped") &&
	      manifest_find(&m, "bsd/form.txt"));
	manifest_release(&m);
	static const struct {
		const char *text, *frag;
	} badc[] = {
		{"xyz  a\n", "line 1: not '<sha256>  <path>'"},
		{HA "  a\n" HA " b\n", "line 2: not '<sha256>  <path>'"},
		{HA "  ../a\n", "line 1: '../a': '..' path component"},
		{HA "  /abs\n", "line 1: '/abs': absolute path"},
		{HA "  a\n" HB "  a\n", "'a' is listed twice"},
		{"SHA256 (a) = 12\n", "line 1: not 'SHA256 (<path>) = <sha256>'"},
		{"\\" HA "  a\\nb\n", "line 1: 'a\\x0ab': path holds a control character"},
	};
	for (size_t i = 0; i < sizeof badc / sizeof *badc; i++) {
		int r = verify_sums_parse(badc[i].text, strlen(badc[i].text), "S", &m, &e);
		CHECKF(r < 0 && strstr(e.msg, badc[i].frag) && e.code == EXIT_USAGE, "case %zu: '%s'", i, e.msg);
		manifest_release(&m);
	}
}

int main(void)
{
	RUN(find_by_bytes_then_by_path);
	RUN(lift_each_kind);
	RUN(manifest_formats);
	RUN(sha256sum_manifests);
	return t_done();
}

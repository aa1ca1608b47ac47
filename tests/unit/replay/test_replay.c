/* test_replay.c: the diffs-file runner (replay/replay.h).
 *
 * Covers: replaying the committed fixture (tests/fixtures/replay/diffs.json,
 * diffs by GNU diff -U 0 with timestamps, digests by sha256sum) to the exact
 * run files; a SHA-256 mismatch; a run whose diff fails while the others still
 * replay; every whole-file refusal of a badly shaped diffs file (unsafe names
 * included); writing only matching runs; the JSON report; and the inverse
 * (replay_make_diffs) round trip. Reference: supkit-replay(1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/fileio.h"
#include "lib/json.h"
#include "replay/replay.h"
#include "t.h"

static char *fixture(const char *rel, size_t *len)
{
	char path[512];
	char *buf = NULL;
	struct err e = {0};
	snprintf(path, sizeof path, "%s/replay/%s", t_fixtures(), rel);
	if (file_read_all(path, 0, &buf, len, &e) < 0)
		printf("  %s\n", e.msg);
	return buf;
}

static const struct replay_run *find_run(const struct replay_report *rep, const char *name)
{
	for (size_t i = 0; i < rep->n_runs; i++)
		if (!strcmp(rep->runs[i].name, name))
			return &rep->runs[i];
	return NULL;
}

TEST(fixture_replays_exactly)
{
	size_t bl, jl;
	char *base = fixture("runs/base/train.txt", &bl), *js = fixture("diffs.json", &jl);
	if (!base || !js) {
		CHECK(0);
		return;
	}
	struct replay_report rep;
	struct err e = {0};
	CHECKF(replay_diffs(base, bl, js, jl, "diffs.json", &rep, &e) == 0, "%s", e.msg);
	CHECK(rep.n_runs == 5 && rep.n_ok == 5 && rep.n_mismatch == 0 && rep.n_failed == 0);
	for (size_t i = 0; i < rep.n_runs; i++) {
		char rel[64];
		size_t wl;
		snprintf(rel, sizeof rel, "runs/%s/train.txt", rep.runs[i].name);
		char *want = fixture(rel, &wl);
		CHECKF(want && rep.runs[i].len == wl && !memcmp(rep.runs[i].data, want, wl), "run %s",
		       rep.runs[i].name);
		CHECK(rep.runs[i].ok && !rep.runs[i].error);
		free(want);
	}
	const struct replay_run *r1 = find_run(&rep, "r1"), *r5 = find_run(&rep, "r5");
	CHECK(r1 && r1->hunks == 3 && r1->added == 2 && r1->removed == 6);
	CHECK_STREQ(r1 ? r1->target : NULL, "train.txt");
	CHECK(r5 && r5->hunks == 0 && r5->target == NULL); /* empty diff */
	CHECK(!strcmp(rep.runs[0].name, "r1") && !strcmp(rep.runs[4].name, "r5")); /* sorted */
	replay_report_release(&rep);
	replay_report_release(&rep); /* safe twice */
	free(base);
	free(js);
}

TEST(mismatch_is_reported)
{
	size_t bl, jl;
	char *base = fixture("runs/base/train.txt", &bl), *js = fixture("mismatch.json", &jl);
	struct replay_report rep;
	struct err e = {0};
	CHECKF(replay_diffs(base, bl, js, jl, "mismatch.json", &rep, &e) == 0, "%s", e.msg);
	CHECK(rep.n_ok == 4 && rep.n_mismatch == 1);
	const struct replay_run *r2 = find_run(&rep, "r2");
	CHECK(r2 && r2->status == REPLAY_MISMATCH && !r2->ok && r2->data);
	CHECK(r2 && r2->error && strstr(r2->error, "run 'r2'") && strstr(r2->error, "mismatch"));
	CHECK(r2 && strcmp(r2->sha_actual, r2->sha_expected) != 0);
	replay_report_release(&rep);
	free(base);
	free(js);
}

static const char *BASE = "one\ntwo\nthree\n";

static int report_of(const char *json, struct replay_report *rep, struct err *e)
{
	err_clear(e);
	return replay_diffs_strict(BASE, strlen(BASE), json, strlen(json), "d.json", 1, rep, e);
}

TEST(failed_run_does_not_stop_the_others)
{
	/* good: one -> ONE; bad: claims "zwei" at line 2 */
	const char *js =
		"{\"good\": {\"diff\": \"--- a/f\\n+++ good/f.py\\n@@ -1 +1 @@\\n-one\\n+ONE\\n\","
		" \"sha256\": \"0000000000000000000000000000000000000000000000000000000000000000\"},"
		" \"bad\": {\"diff\": \"--- a/f\\n+++ bad/f.py\\n@@ -2 +2 @@\\n-zwei\\n+2\\n\","
		" \"sha256\": \"0000000000000000000000000000000000000000000000000000000000000000\"},"
		" \"evil\": {\"diff\": \"--- a/f\\n+++ x/..\\n@@ -2 +2 @@\\n-two\\n+2\\n\","
		" \"sha256\": \"0000000000000000000000000000000000000000000000000000000000000000\"}}";
	struct replay_report rep;
	struct err e = {0};
	CHECKF(report_of(js, &rep, &e) == 0, "%s", e.msg);
	CHECK(rep.n_runs == 3 && rep.n_failed == 2 && rep.n_mismatch == 1);
	const struct replay_run *bad = find_run(&rep, "bad"), *good = find_run(&rep, "good"),
				*evil = find_run(&rep, "evil");
	CHECK(bad && bad->status == REPLAY_FAILED && !bad->data && !bad->sha_actual[0]);
	CHECKF(bad && strstr(bad->error, "'d.json': run 'bad': hunk 1 (line 4): removed line does not match "
					 "baseline line 2"), "%s", bad ? bad->error : "");
	CHECK(good && good->status == REPLAY_MISMATCH && good->len == strlen("ONE\ntwo\nthree\n"));
	CHECK(evil && evil->status == REPLAY_FAILED && strstr(evil->error, "unsafe"));
	/* the JSON report */
	cJSON *j = replay_report_json(&rep, "d.json");
	char *t1 = json_print(j, 1);
	cJSON_Delete(j);
	j = replay_report_json(&rep, "d.json");
	char *t2 = json_print(j, 1);
	cJSON_Delete(j);
	CHECK_STREQ(t1, t2);
	CHECK(strstr(t1, "\"failed\": 2") && strstr(t1, "\"status\": \"mismatch\"") && strstr(t1, "\"target\": null"));
	free(t1);
	free(t2);
	replay_report_release(&rep);
}

/* Each badly shaped file is refused as a whole with a message naming the place. */
TEST(refuse_bad_shapes)
{
	static const struct {
		const char *json, *frag;
	} cases[] = {
		{"[1, 2]", "expected a JSON object"},
		{"{\"a\": ", "invalid JSON at line 1"},
		{"{}", "no runs"},
		{"{\"a\": 1}", "run 'a': expected an object"},
		{"{\"a\": {\"diff\": \"\"}}", "run 'a': missing \"sha256\""},
		{"{\"a\": {\"sha256\": \"00\"}}", "run 'a': \"sha256\" is not 64"},
		{"{\"a\": {\"diff\": 3, \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}}",
		 "\"diff\" is not a string"},
		{"{\"a\": {\"diff\": \"\", \"sha256\": \"" "000000000000000000000000000000000000000000000000000000000000000g" "\"}}",
		 "not 64 hexadecimal"},
		{"{\"a\": {\"diff\": \"\", \"extra\": 1, \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}}",
		 "unexpected key 'extra' (strict)"},
		{"{\"a\": {\"diff\": \"\", \"diff\": \"\", \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}}",
		 "repeated key 'diff'"},
		{"{\"a/b\": {\"diff\": \"\", \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}}",
		 "run 'a/b': unsafe"},
		{"{\"..\": {\"diff\": \"\", \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}}",
		 "run '..': unsafe"},
		{"{\"\": {\"diff\": \"\", \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}}",
		 "run '': unsafe"},
		{"{\"a\\tb\": {\"diff\": \"\", \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}}",
		 "run 'a\\x09b': unsafe"},
		{"{\"a\": {\"diff\": \"\", \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"},"
		 " \"a\": {\"diff\": \"\", \"sha256\": \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}}",
		 "run 'a' appears twice"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct replay_report rep;
		struct err e = {0};
		int r = report_of(cases[i].json, &rep, &e);
		CHECKF(r < 0 && e.code == EXIT_USAGE && strstr(e.msg, cases[i].frag) && strstr(e.msg, "d.json") &&
			       !strchr(e.msg, '\n'),
		       "case %zu: got '%s', wanted '%s'", i, e.msg, cases[i].frag);
		CHECK(rep.n_runs == 0 && rep.runs == NULL);
		replay_report_release(&rep);
	}
}

/* The papers' diffs files carry more per run (source_commit, run_name,
 * seeds): read past, each name listed once, sorted; strict refuses them. */
TEST(extra_keys_listed_once)
{
	const char *js =
		"{\"r1\": {\"source_commit\": \"abc\", \"diff\": \"--- a/f\\n+++ r1/f\\n@@ -1 +1 @@\\n-one\\n+ONE\\n\","
		" \"sha256\": \"0000000000000000000000000000000000000000000000000000000000000000\", \"seeds\": [41, 42]},"
		" \"r2\": {\"diff\": \"\", \"run_name\": \"r2\", \"source_commit\": \"def\","
		" \"sha256\": \"0000000000000000000000000000000000000000000000000000000000000000\"}}";
	struct replay_report rep;
	struct err e = {0};
	CHECKF(replay_diffs(BASE, strlen(BASE), js, strlen(js), "d.json", &rep, &e) == 0, "%s", e.msg);
	CHECK(rep.n_runs == 2 && rep.n_extra_keys == 3);
	CHECK(rep.n_extra_keys == 3 && !strcmp(rep.extra_keys[0], "run_name") && !strcmp(rep.extra_keys[1], "seeds") &&
	      !strcmp(rep.extra_keys[2], "source_commit"));
	CHECK(rep.n_mismatch == 2); /* replayed as usual (their digests are zeros) */
	cJSON *j = replay_report_json(&rep, "d.json");
	char *t = json_print(j, 0);
	CHECKF(strstr(t, "\"extra_keys\":[\"run_name\",\"seeds\",\"source_commit\"]"), "%s", t);
	free(t);
	cJSON_Delete(j);
	replay_report_release(&rep);
	CHECK(report_of(js, &rep, &e) < 0 && strstr(e.msg, "run 'r1': unexpected key 'source_commit' (strict)"));
	replay_report_release(&rep);
}

TEST(names)
{
	CHECK(replay_name_safe("r1") && replay_name_safe("train.py") && replay_name_safe("a b-c_d.e"));
	CHECK(!replay_name_safe("") && !replay_name_safe(".") && !replay_name_safe("..") &&
	      !replay_name_safe("a/b") && !replay_name_safe("a..b") && !replay_name_safe("x\n") &&
	      !replay_name_safe("\x7f"));
	char longname[300];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	CHECK(!replay_name_safe(longname));
	char *q = replay_name_quote("a\tb'\\");
	CHECK_STREQ(q, "a\\x09b\\x27\\x5c");
	free(q);
}

TEST(write_only_matching_runs)
{
	char *dir = xstrdup("/tmp/supkit-test-replay-XXXXXX");
	if (!mkdtemp(dir)) {
		T_SKIP("cannot make a temporary folder");
	}
	size_t bl, jl;
	char *base = fixture("runs/base/train.txt", &bl), *js = fixture("mismatch.json", &jl);
	struct replay_report rep;
	struct err e = {0};
	CHECK(replay_diffs(base, bl, js, jl, "mismatch.json", &rep, &e) == 0);
	char *out = path_join(dir, "out");
	CHECKF(replay_report_write(&rep, out, "train.txt", &e) == 0, "%s", e.msg);
	struct stat st;
	char *p = xasprintf("%s/r1/train.txt", out);
	CHECK(stat(p, &st) == 0 && (size_t)st.st_size == find_run(&rep, "r1")->len);
	free(p);
	p = xasprintf("%s/r2", out); /* the mismatching run writes nothing */
	CHECK(stat(p, &st) != 0);
	free(p);
	p = xasprintf("%s/r5/train.txt", out); /* empty diff: the fallback name */
	CHECK(stat(p, &st) == 0 && (size_t)st.st_size == bl);
	free(p);
	CHECK(replay_report_write(&rep, out, "../x", &e) < 0);
	replay_report_release(&rep);
	dir_remove_tree(dir);
	free(out);
	free(dir);
	free(base);
	free(js);
}

TEST(make_diffs_round_trip)
{
	const char *base = "a\nb\nc\r\nd";
	struct replay_input in[3] = {
		{"r1", "r1/train.py", "a\nB\nc\r\nd\n", 9},
		{"r2", "r2/train.py", "", 0},
		{"r3", "r3/train.py", base, strlen(base)},
	};
	struct err e = {0};
	cJSON *j = replay_make_diffs(base, strlen(base), "base/train.py", in, 3, &e);
	CHECKF(j != NULL, "%s", e.msg);
	if (!j)
		return;
	char *text = json_print(j, 1);
	cJSON_Delete(j);
	struct replay_report rep;
	CHECKF(replay_diffs(base, strlen(base), text, strlen(text), "made.json", &rep, &e) == 0, "%s", e.msg);
	CHECK(rep.n_ok == 3);
	for (size_t i = 0; i < 3 && i < rep.n_runs; i++)
		CHECK(rep.runs[i].len == in[i].len && !memcmp(rep.runs[i].data, in[i].data, in[i].len));
	CHECK_STREQ(rep.runs[0].target, "train.py");
	replay_report_release(&rep);
	free(text);
	/* refusals */
	struct replay_input dup[2] = {{"r", "x/f", "1\n", 2}, {"r", "y/f", "2\n", 2}};
	CHECK(!replay_make_diffs(base, strlen(base), "b", dup, 2, &e) && strstr(e.msg, "twice"));
	struct replay_input unsafe[1] = {{"a/b", "x/f", "1\n", 2}};
	CHECK(!replay_make_diffs(base, strlen(base), "b", unsafe, 1, &e) && strstr(e.msg, "unsafe"));
	struct replay_input badlabel[1] = {{"r", "x/f\nq", "1\n", 2}};
	CHECK(!replay_make_diffs(base, strlen(base), "b", badlabel, 1, &e) && strstr(e.msg, "unsafe file label"));
	struct replay_input binary[1] = {{"r", "x/f", "1\0\n", 3}};
	CHECK(!replay_make_diffs(base, strlen(base), "b", binary, 1, &e) && strstr(e.msg, "NUL"));
}

int main(void)
{
	RUN(fixture_replays_exactly);
	RUN(mismatch_is_reported);
	RUN(failed_run_does_not_stop_the_others);
	RUN(refuse_bad_shapes);
	RUN(extra_keys_listed_once);
	RUN(names);
	RUN(write_only_matching_runs);
	RUN(make_diffs_round_trip);
	return t_done();
}

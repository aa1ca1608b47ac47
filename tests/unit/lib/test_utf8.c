/* test_utf8.c: lib/utf8.c and lib/utf8_nfc.c: validation, and NFC against
 * Python's unicodedata.normalize (tests/fixtures/utf8/nfc-cases.txt, written
 * by scripts/gen-utf8-nfc.py: every code point with a decomposition, every
 * combining mark, random mark sequences in any order, Hangul jamo). */
#include <stdlib.h>
#include <string.h>

#include "lib/fileio.h"
#include "lib/utf8.h"
#include "t.h"

TEST(utf8_valid_rejects_malformed)
{
	CHECK(utf8_valid("caf\xc3\xa9", 5));
	CHECK(!utf8_valid("caf\xe9", 4));            /* Latin-1 */
	CHECK(!utf8_valid("\xc0\xaf", 2));           /* overlong '/' */
	CHECK(!utf8_valid("\xed\xa0\x80", 3));       /* surrogate */
	CHECK(!utf8_valid("\xf4\x90\x80\x80", 4));   /* > U+10FFFF */
	CHECK(!utf8_valid("\xe2\x82", 2));           /* cut short */
}

TEST(nfc_examples)
{
	struct {
		const char *in, *want;
	} ex[] = {
		{"e\xcc\x81t\xc3\xa9.txt", "\xc3\xa9t\xc3\xa9.txt"},            /* macOS NFD name */
		{"\xc3\xa9t\xc3\xa9.txt", "\xc3\xa9t\xc3\xa9.txt"},             /* already NFC */
		{"\xe2\x84\xab", "\xc3\x85"},                                  /* ANGSTROM SIGN: singleton */
		{"\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc"},                  /* U+0958: an exclusion */
		{"e\xcc\xa3\xcc\x82", "\xe1\xbb\x87"},                         /* e + dot below + circumflex */
		{"e\xcc\x82\xcc\xa3", "\xe1\xbb\x87"},                         /* the marks the other way round */
		{"\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81"},      /* Hangul L V T */
		{"plain/ascii.txt", "plain/ascii.txt"},
		{"", ""},
	};
	for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
		size_t len;
		char *got = utf8_nfc(ex[i].in, strlen(ex[i].in), &len);
		CHECKF(got && len == strlen(ex[i].want) && !strcmp(got, ex[i].want), "case %zu", i);
		CHECK(utf8_is_nfc(ex[i].want, strlen(ex[i].want)));
		free(got);
	}
	CHECK(!utf8_is_nfc("e\xcc\x81", 3));
	CHECK(utf8_nfc("caf\xe9", 4, NULL) == NULL);
	CHECK(!utf8_is_nfc("caf\xe9", 4));
	CHECK_STREQ(utf8_nfc_unicode_version(), "14.0.0");
}

TEST(nfc_matches_python)
{
	char *p = xasprintf("%s/utf8/nfc-cases.txt", t_fixtures()), *text = NULL;
	size_t len;
	struct err e;
	CHECKF(file_read_all(p, 0, &text, &len, &e) == 0, "%s", e.msg);
	size_t n = 0, bad = 0;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n'), *tab = strchr(line, '\t');
		if (!nl || !tab || tab > nl)
			break;
		*nl = *tab = '\0';
		size_t glen;
		char *got = utf8_nfc(line, (size_t)(tab - line), &glen);
		if (!got || glen != strlen(tab + 1) || strcmp(got, tab + 1) != 0) {
			if (bad++ < 5)
				CHECKF(0, "line %zu: NFC differs from Python's", n + 1);
		}
		/* the NFC form is stable and recognised as NFC */
		if (!utf8_is_nfc(tab + 1, strlen(tab + 1)) && bad++ < 5)
			CHECKF(0, "line %zu: Python's NFC not recognised as NFC", n + 1);
		free(got);
		n++;
		line = nl + 1;
	}
	CHECKF(n > 6000, "only %zu cases read", n);
	CHECKF(bad == 0, "%zu of %zu cases differ", bad, n);
	free(text);
	free(p);
}

int main(void)
{
	RUN(utf8_valid_rejects_malformed);
	RUN(nfc_examples);
	RUN(nfc_matches_python);
	return t_done();
}

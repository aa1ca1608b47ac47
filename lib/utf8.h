/* utf8.h: strict UTF-8 validation, shared by the corpus readers
 * (data/corpus.c), the tokenizer's byte-level fallback
 * (data/tokenizer.c) and the supplement manifest's path check
 * (supplements/manifest.c, scan.c); and Unicode Normalization Form C
 * (lib/utf8_nfc.c), the one form of every name in a supplement.
 * utf8_seq is inline: callers use it per character. Leaves out the other
 * normalization forms. Reference: RFC 3629 section 4 (well-formed
 * sequences: no overlongs, surrogates or > U+10FFFF); Unicode Standard
 * Annex #15 (normalization). */
#ifndef SUPKIT_LIB_UTF8_H
#define SUPKIT_LIB_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (1..4; n > 0 bytes available), or
 * 0 when invalid or cut short. */
static inline size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	if (c < 0x80)
		return 1;
	size_t k;
	unsigned lo = 0x80, hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		k = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		k = 3;
		if (c == 0xE0)
			lo = 0xA0;
		if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		k = 4;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (n < k || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < k; i++)
		if (p[i] < 0x80 || p[i] > 0xBF)
			return 0;
	return k;
}

/* 1 when s[0..n) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int utf8_valid(const char *s, size_t n);

/* The NFC form of s[0..n) as a fresh NUL-terminated string (caller frees;
 * *out_len, when not NULL, receives its length), or NULL when s is not
 * valid UTF-8. Canonically equivalent strings (an accented letter stored
 * precomposed, or as a letter and a combining mark, as macOS names files)
 * give the same bytes. */
char *utf8_nfc(const char *s, size_t n, size_t *out_len);
/* 1 when s[0..n) is valid UTF-8 and already in NFC. */
int utf8_is_nfc(const char *s, size_t n);
/* The Unicode version of the normalization tables ("14.0.0"). */
const char *utf8_nfc_unicode_version(void);
/* Bytes of the UTF-8 text that decoding s[0..n) with replacement gives: each
 * valid sequence as it is, each maximal ill-formed subpart (Unicode 15
 * section 3.9, "U+FFFD substitution of maximal subparts"; what Python's
 * bytes.decode("utf-8", errors="replace") does) one U+FFFD, 3 bytes. */
size_t utf8_replaced_len(const char *s, size_t n);

#endif

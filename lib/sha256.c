/* sha256.c: SHA-256 via OpenSSL EVP (see sha256.h). */
#include "sha256.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

void sha256_init(struct sha256 *s)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
		fprintf(stderr, "%s: OpenSSL cannot initialise SHA-256\n", err_prog);
		abort();
	}
	s->md_ctx = c;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	if (len)
		EVP_DigestUpdate((EVP_MD_CTX *)s->md_ctx, data, len);
}

void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN])
{
	unsigned int n = 0;
	EVP_DigestFinal_ex((EVP_MD_CTX *)s->md_ctx, out, &n);
	EVP_MD_CTX_free((EVP_MD_CTX *)s->md_ctx);
	s->md_ctx = NULL;
}

void sha256_buf(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	struct sha256 s;
	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

void sha256_to_hex(const uint8_t d[SHA256_LEN], char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < SHA256_LEN; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[SHA256_HEX_LEN] = '\0';
}

void sha256_buf_hex(const void *data, size_t len, char *hex)
{
	uint8_t d[SHA256_LEN];
	sha256_buf(data, len, d);
	sha256_to_hex(d, hex);
}

int sha256_file_hex(const char *path, char *hex, uint64_t *size, struct err *e)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_errno(e, EXIT_USAGE, "cannot open '%s'", path);
	struct sha256 s;
	sha256_init(&s);
	enum { CHUNK = 1 << 20 };
	unsigned char *buf = xmalloc(CHUNK);
	uint64_t total = 0;
	size_t n;
	while ((n = fread(buf, 1, CHUNK, f)) > 0) {
		sha256_update(&s, buf, n);
		total += n;
	}
	int bad = ferror(f);
	free(buf);
	fclose(f);
	uint8_t d[SHA256_LEN];
	sha256_final(&s, d);
	if (bad)
		return err_set(e, EXIT_SYS, "cannot read '%s'", path);
	sha256_to_hex(d, hex);
	if (size)
		*size = total;
	return 0;
}

int sha256_hex_valid(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return i == SHA256_HEX_LEN;
}

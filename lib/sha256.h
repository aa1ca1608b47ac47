/* sha256.h: SHA-256 through OpenSSL's EVP interface (FIPS 180-4).
 * Streaming context, one-shot buffer and file digests, lower-case hex. */
#ifndef SUPKIT_SHA256_H
#define SUPKIT_SHA256_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

#define SHA256_LEN 32
#define SHA256_HEX_LEN 64

struct sha256 {
	void *md_ctx; /* EVP_MD_CTX *, owned */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* Writes the digest and releases the context. */
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);

void sha256_buf(const void *data, size_t len, uint8_t out[SHA256_LEN]);
/* hex must hold SHA256_HEX_LEN + 1 bytes. */
void sha256_to_hex(const uint8_t d[SHA256_LEN], char *hex);
void sha256_buf_hex(const void *data, size_t len, char *hex);
/* Digest of a whole file; size (may be NULL) receives its length. */
int sha256_file_hex(const char *path, char *hex, uint64_t *size, struct err *e);
/* 1 if s is exactly 64 lower- or upper-case hex digits. */
int sha256_hex_valid(const char *s);

#endif

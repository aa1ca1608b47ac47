/* fuzz_file.h: the input of a harness whose reader takes only a path,
 * written to that path with a plain write (no fsync, no rename: the file is
 * private to the process and read back at once; an fsync per execution
 * made such harnesses several times slower). Aborts when the write fails. */
#ifndef SUPKIT_FUZZ_FILE_H
#define SUPKIT_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
}

#endif

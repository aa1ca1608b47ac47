/* fuzz_file.h: the input of a harness whose reader takes only a path,
 * written to that path with a plain write (no fsync, no rename: the file is
 * private to the process and read back at once; an fsync per execution
 * made such harnesses several times slower). Aborts when the write fails. */
#ifndef SUPKIT_FUZZ_FILE_H
#define SUPKIT_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
}

/* A private temporary folder for the harness's files, from the template
 * "supkit-fuzz-TAG-XXXXXX" under /dev/shm when it is a folder (memory: the
 * harnesses that build folders run several times faster there), else /tmp;
 * into buf (size >= 64). Aborts when it cannot be made. */
static inline void fuzz_temp_dir(char *buf, size_t size, const char *tag)
{
	struct stat st;
	const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	snprintf(buf, size, "%s/supkit-fuzz-%s-XXXXXX", base, tag);
	if (!mkdtemp(buf)) {
		snprintf(buf, size, "/tmp/supkit-fuzz-%s-XXXXXX", tag);
		if (!mkdtemp(buf))
			abort();
	}
}

#endif

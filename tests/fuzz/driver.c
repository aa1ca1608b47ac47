/* driver.c: a plain main() for the fuzz harnesses (tests/fuzz/fuzz_*.c), so
 * their inputs replay without libFuzzer: every file named on the command
 * line, and every regular file under every folder named (recursively, in
 * name order), is read whole and passed once to LLVMFuzzerTestOneInput.
 *
 * Prints "replayed N inputs" on stdout; exit 0 when all replayed, 2 on a
 * usage error, 4 when an input cannot be read. A harness that finds a bug
 * aborts (or a sanitizer stops the process), which is the failure signal.
 * Before each input its path goes to stderr ("replay: PATH"), so the last
 * such line names the input that crashed.
 *
 * Leaves out: mutation, coverage, timeouts (the caller wraps it in
 * timeout(1)); LLVMFuzzerInitialize (no harness defines one).
 * Reference: libFuzzer's documented interface
 * (https://llvm.org/docs/LibFuzzer.html, "Fuzz target").
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs larger than this are refused (libFuzzer's own -max_len is far below). */
#define DRIVER_MAX_INPUT (64u << 20)

static size_t driver_count;

static int driver_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	if (!buf)
		abort();
	for (;;) {
		if (n == cap) {
			if (cap >= DRIVER_MAX_INPUT) {
				fprintf(stderr, "replay: '%s': larger than %u bytes\n", path, DRIVER_MAX_INPUT);
				free(buf);
				fclose(f);
				return -1;
			}
			cap *= 2;
			uint8_t *nb = realloc(buf, cap);
			if (!nb)
				abort();
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "replay: cannot read '%s'\n", path);
		free(buf);
		return -1;
	}
	fprintf(stderr, "replay: %s\n", path);
	/* An exact-size copy, so that a read one past the input is an ASan error. */
	uint8_t *exact = malloc(n ? n : 1);
	if (!exact)
		abort();
	if (n)
		memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	driver_count++;
	return 0;
}

static int driver_name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int driver_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return driver_file(path);
	struct dirent **ents;
	int n = scandir(path, &ents, NULL, driver_name_cmp);
	if (n < 0) {
		fprintf(stderr, "replay: cannot list '%s': %s\n", path, strerror(errno));
		return -1;
	}
	int rc = 0;
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		if (name[0] != '.' && rc == 0) {
			size_t len = strlen(path) + strlen(name) + 2;
			char *sub = malloc(len);
			if (!sub)
				abort();
			snprintf(sub, len, "%s/%s", path, name);
			rc = driver_path(sub);
			free(sub);
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(argc < 2 ? stderr : stdout,
			"usage: %s FILE|FOLDER...\n"
			"Replay each file (folders: every file under them, in name order)\n"
			"through the fuzz harness once.\n", argv[0]);
		return argc < 2 ? 2 : 0;
	}
	for (int i = 1; i < argc; i++)
		if (driver_path(argv[i]) != 0)
			return 4;
	printf("replayed %zu inputs\n", driver_count);
	return 0;
}

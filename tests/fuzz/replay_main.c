// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * make fuzz-replay: a harness's corpus run once through it, without
 * libFuzzer.  Built with the compiler of the sanitizer build and linked to
 * its objects (ASan and UBSan), so that CI replays every committed input,
 * the regressions among them, in seconds and without a second build of the
 * tool; fuzzing itself is make fuzz (clang's libFuzzer).
 *   replay FILE_OR_DIR...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "replay: %s: cannot open\n", path);
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *grown = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!grown) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = grown;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

/* Every regular file of dir, or the file itself; how many, or -1. */
static long replay_path(const char *path)
{
	struct dirent *e;
	struct stat st;
	long count = 0;
	DIR *d;

	if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
		return replay_file(path) ? -1 : 1;
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "replay: %s: cannot open\n", path);
		return -1;
	}
	while ((e = readdir(d))) {
		char full[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
		if (stat(full, &st) || !S_ISREG(st.st_mode))
			continue;
		if (replay_file(full)) {
			closedir(d);
			return -1;
		}
		count++;
	}
	closedir(d);
	return count;
}

int main(int argc, char **argv)
{
	long total = 0;
	int i;

	for (i = 1; i < argc; i++) {
		long n = replay_path(argv[i]);

		if (n < 0)
			return 1;
		total += n;
	}
	printf("%ld inputs\n", total);
	return 0;
}

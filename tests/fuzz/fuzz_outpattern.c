// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * trace --every's -o PATTERN (output/outpattern.c): the input is a pattern,
 * a NUL, then a host name (the host a report names is another machine's);
 * every file name it expands to is pushed through a --keep ring.
 */
#include "fuzz.h"
#include "outpattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *pattern = fuzz_next(&data, &size, '\0');
	char *host = fuzz_next(&data, &size, '\0');
	struct keep_ring ring = {.keep = 2};
	char err[256], out[4096], small[16];
	unsigned uses;
	time_t t;

	if (!host)
		host = fuzz_str((const uint8_t *) "", 0);
	if (!outpattern_check(pattern, &uses, err, sizeof(err))) {
		for (t = 0; t < 3; t++) {
			if (outpattern_expand(pattern, (pid_t) (t * 40000), t * 86400 * 400, host,
					      out, sizeof(out)))
				continue;
			free(keep_ring_push(&ring, out));
		}
		outpattern_expand(pattern, 1, (time_t) -1, host, small, sizeof(small));
		outpattern_expand(pattern, 0x7fffffff, (time_t) 253402300799LL, host, small, 1);
	} else {
		/* A bad pattern expands to an error, never to a name (empty: check's alone). */
		if (*pattern && outpattern_expand(pattern, 1, 0, host, out, sizeof(out)) == 0)
			abort();
	}
	keep_ring_free(&ring);
	free(pattern);
	free(host);
	return 0;
}

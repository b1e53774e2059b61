// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The why report reader (model/why_read.c), as merge reads why reports
 * from other hosts: the input is the file, read twice (the second is
 * summed into the first, as merge sums several), then finished and
 * written in every format merge writes, to /dev/null.
 */
#include "fuzz.h"
#include "why_model.h"
#include "why_out.h"
#include "why_read.h"

static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct why_report sum = {0};
	char path[64], err[512];
	int fd = fuzz_file(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (!sink)
		sink = fopen("/dev/null", "w");
	if (why_json_is_why(path) && !why_read_file(path, &sum, err, sizeof(err)) &&
	    !why_read_file(path, &sum, err, sizeof(err))) {
		sum.selection = "merged";
		why_finish(&sum);
		why_write_json(sink, &sum, 5);
		why_write_text(sink, &sum, 5);
		why_write_folded(sink, &sum);
		why_write_pprof(sink, &sum);
	}
	why_free(&sum);
	close(fd);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What the target writes into /proc: the lines of /proc/PID/maps (its file
 * names are the target's choice, up to PATH_MAX, with any byte but NUL
 * and newline), /proc/PID/status and /proc/PID/stat (its command, with
 * spaces and parentheses).  The input is maps, a NUL, status, a NUL, stat.
 * Maps are read as procmaps.c reads them: fgets into a line of the same
 * size, so a long name is cut where the tool cuts it.
 */
#include <limits.h>
#include <stdbool.h>
#include "fuzz.h"
#include "proc_info.h"
#include "procmaps.h"

static void maps(const char *text)
{
	char line[PATH_MAX + 128];
	struct map_entry e;
	FILE *f = fmemopen((void *) text, strlen(text), "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (procmaps_parse_line(line, &e))
			continue;
		if (strlen(e.path) >= sizeof(e.path) || strlen(e.perms) >= sizeof(e.perms))
			abort();
		is_libruby_name(e.path);
	}
	fclose(f);
	is_libruby_name(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *map_text = fuzz_next(&data, &size, '\0');
	char *status = fuzz_next(&data, &size, '\0');
	char *stat = fuzz_next(&data, &size, '\0');
	unsigned long long a, b;
	const char *p;
	bool stopped;
	pid_t tracer;

	maps(map_text);
	if (status) {
		proc_status_state(status, &stopped, &tracer);
		proc_status_ns_pid(status, 42);
	}
	if (stat) {
		p = proc_stat_field(stat, 22);
		if (p)
			(void) sscanf(p, "%llu", &a);
		p = proc_stat_field(stat, 14);
		if (p)
			(void) sscanf(p, "%llu %llu", &a, &b);
	}
	free(map_text);
	free(status);
	free(stat);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace: which Ruby objects does a live process keep, and of which
 * class, since when, and from where?  Subcommands, git/bpftool style; with
 * none, `trace` is meant, so `rbmemtrace -p PID` works as it always did.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"

static const struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} subcommands[] = {
	{"trace", cmd_trace, "trace allocations and frees of a live Ruby (the default)"},
	{"census", cmd_census, "count every live object of the heap by class, at zero cost"},
	{"why", cmd_why, "who holds what a process keeps: retainer paths from Ruby's roots"},
	{"top", cmd_top, "a live, top-like view of what a process keeps"},
	{"merge", cmd_merge, "merge JSON reports from several processes or hosts"},
	{"fleet", cmd_fleet, "trace many hosts over ssh and merge their reports"},
	{"serve", cmd_serve, "serve continuous heap profiles over HTTP (/debug/pprof/heap)"},
};

#define NSUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void print_subcommands(void)
{
	size_t i;

	printf("Usage: rbmemtrace [SUBCOMMAND] [OPTIONS...]\n\nSubcommands:\n");
	for (i = 0; i < NSUBCOMMANDS; i++)
		printf("  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
	printf("\n`rbmemtrace SUBCOMMAND --help` describes one.  With no subcommand, trace:\n\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t i;

	/*
	 * A heap walk's per-object arrays (MBs each) come and go: mapped
	 * apart, each returns to the system when freed.  glibc would raise its
	 * mmap threshold to the largest block freed (up to 32 MiB) and carve
	 * the next ones from its heap, where freed memory stays in the RSS.
	 */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-?")))
		print_subcommands();
	for (i = 0; argc > 1 && i < NSUBCOMMANDS; i++)
		if (strcmp(argv[1], subcommands[i].name) == 0) {
			char name[64];

			/* argp names the program after argv[0]: "Usage: rbmemtrace census ..." */
			snprintf(name, sizeof(name), "rbmemtrace %s", subcommands[i].name);
			argv[1] = name;
			return subcommands[i].run(argc - 1, argv + 1);
		}
	return cmd_trace(argc, argv);
}

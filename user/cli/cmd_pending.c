// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Subcommands whose work has not landed yet: they say so and exit 2. */
#include <stdio.h>
#include "cli.h"

static int not_yet(const char *name, const char *what)
{
	fprintf(stderr, "rbmemtrace: %s is not yet available (%s)\n", name, what);
	return 2;
}

int cmd_top(int argc, char **argv)
{
	(void)argc, (void)argv;
	return not_yet("top", "a live view of what a Ruby process keeps");
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/calltree_out.c: the folded-stack line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include "writers.h"

Test(calltree_out, folded_line)
{
	const char *path[] = {"<main> (a.rb:1)", "x;y", "bad\nname"};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	folded_write_line(f, path, 3, 12);
	fclose(f);
	/* Escaped as in text output, so a name cannot break the line or the terminal. */
	cr_expect_str_eq(buf, "<main> (a.rb:1);x:y;bad\\x0aname 12\n");
	free(buf);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/verdict_out.c: the leak verdict as the text report leads with it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verdict.h"
#include "writers.h"

static char *text_of(const struct verdict *v, double seconds)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	verdict_write_text(f, v, seconds);
	fclose(f);
	return buf;
}

static struct verdict *one_point(bool with_path)
{
	struct verdict *v = calloc(1, sizeof(*v));
	struct verdict_point *p = &v->points[0];

	cr_assert_not_null(v);
	v->n = 1;
	v->new_objects = 2001;
	v->trace_seconds = 2;
	if (with_path) {
		p->root_kind = verdict_intern(v, "constant");
		p->root_name = verdict_intern(v, "KEPT");
	}
	p->container_class = verdict_intern(v, "Array");
	p->size_before = 1000;
	p->size_after = 3000;
	p->grew_objects = 2000;
	p->grew_bytes = 95000;
	p->dominated_bytes = 146000;
	p->by_class[0] = (struct verdict_class){verdict_intern(v, "PeriodicLeak"), 2000, 95000};
	p->nby_class = 1;
	return v;
}

/* The block a point makes: its holder, sizes, over the verdict's own seconds, growth, path. */
Test(verdict_out, a_point_with_its_path)
{
	struct verdict *v = one_point(true);
	char *t = text_of(v, 9);

	cr_expect(strstr(t, "Leak verdict (read from the heap, exact):\n"), "%s", t);
	cr_expect(strstr(t, " 1. KEPT  Array 1,000 -> 3,000 entries over 2.0 s\n"), "%s", t);
	cr_expect(strstr(t, "grew by 2,000 objects (PeriodicLeak 2,000), 93 KB; keeps 143 KB alive\n"),
		  "%s", t);
	cr_expect(strstr(t, "      constant KEPT\n"), "%s", t);
	free(t);
	verdict_free(v);
}

/* A point whose path moved before it was read again says so, never "? ?". */
Test(verdict_out, a_point_whose_path_moved)
{
	struct verdict *v = one_point(false);
	char *t = text_of(v, 9);

	cr_expect(strstr(t, " 1. (a holder whose path moved)  Array 1,000 -> 3,000 entries"), "%s", t);
	cr_expect(strstr(t, "no path from a root: what held it changed before it was read again"),
		  "%s", t);
	cr_expect(!strstr(t, "? ?"), "%s", t);
	free(t);
	verdict_free(v);
}

/* A watched point: the line that adds first, with its share of what was counted, then the others. */
Test(verdict_out, the_lines_that_add_when_watched)
{
	struct verdict *v = one_point(true);
	struct verdict_insertions *ins = &v->points[0].ins;
	char *t;

	ins->source = verdict_intern(v, "watchpoint");
	ins->seconds = 5;
	ins->count = 1210;
	ins->missed = 2;
	ins->sites[0] = (struct verdict_insert_site){verdict_intern(v, "Posts#summary"),
						     verdict_intern(v, "app/posts.rb"), 53, 1200};
	ins->sites[1] = (struct verdict_insert_site){verdict_intern(v, "Posts#index"),
						     verdict_intern(v, "app/posts.rb\x1b[31m"), 12, 8};
	ins->nsites = 2;
	t = text_of(v, 9);
	cr_expect(strstr(t, "      entries added at app/posts.rb:53 in Posts#summary (watched 5.0 s: "
			    "1,200 of 1,210 insertions)\n"),
		  "%s", t);
	cr_expect(strstr(t, "      and at app/posts.rb\\x1b[31m:12 in Posts#index (8)\n"), "%s", t);
	cr_expect(strstr(t, "      (2 insertions without a readable call path)\n"), "%s", t);
	free(t);
	ins->source = NULL;
	ins->nsites = 0;
	ins->ended = verdict_intern(v, "its form cannot be watched");
	t = text_of(v, 9);
	cr_expect(strstr(t, "      entries added: not watched (its form cannot be watched)\n"), "%s", t);
	free(t);
	verdict_free(v);
}

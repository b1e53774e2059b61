// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The heap census inside a trace: one when the trace starts and one at its
 * end.  They cost the target nothing, give every class's live objects
 * exactly (live_start, live_end), bound what sampled estimates may claim,
 * and their mark bits tell the final pass which tracked objects are garbage.
 */
#include <errno.h>
#include <string.h>
#include "census_model.h"
#include "diag.h"
#include "session.h"

void session_heap_census(struct session *s, enum census_moment when)
{
	struct census *c = when == CENSUS_AT_START ? &s->census_start : &s->census_end;
	char err[256];
	int ret;

	if (!s->heap_layout || !s->target.objspace)
		return;
	/* Only the final pass asks the end census about single slots. */
	ret = census_take(c, s->target.pid, s->heap_layout, s->target.objspace,
			  when == CENSUS_AT_END, err, sizeof(err));
	if (ret) {
		census_free(c);
		if (ret != -ESRCH)
			rbm_warn("no heap census at the %s: %s", when == CENSUS_AT_START ? "start" : "end",
				 err);
		return;
	}
	(when == CENSUS_AT_START ? &s->have_census_start : &s->have_census_end)[0] = true;
	census_name_classes(c, &s->namer);
	rbm_info("heap census at the %s: %lu slots, %lu live, %lu garbage in %.1f ms",
		 when == CENSUS_AT_START ? "start" : "end", (unsigned long)c->slots,
		 (unsigned long)c->live, (unsigned long)c->garbage, c->seconds * 1e3);
}

static bool wanted(void *ctx, const char *name)
{
	return session_class_wanted(ctx, name);
}

int session_heap_report(struct session *s, struct report *r)
{
	int err = 0;

	if (s->have_census_start)
		err = census_to_report(&s->census_start, &s->namer, r, CENSUS_AT_START, wanted, s);
	if (!err && s->have_census_end)
		err = census_to_report(&s->census_end, &s->namer, r, CENSUS_AT_END, wanted, s);
	return err;
}

void session_heap_free(struct session *s)
{
	census_free(&s->census_start);
	census_free(&s->census_end);
	s->have_census_start = s->have_census_end = false;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The caps a read of the target reached (model/caps.h), as every report says them. */
#include "json_writer.h"
#include "writers.h"

void report_write_caps_text(FILE *out, const char *prefix, const struct caps_hit *h)
{
	char text[CAP_KINDS * 48];

	if (!caps_any(h))
		return;
	caps_text(h, text, sizeof(text));
	fprintf(out, "%sLimits reached: %s (what the target made us read was cut: docs/caps.md).\n",
		prefix, text);
}

/* Every cap, hit or not: a reader tells "none reached" from "not said" (an older report). */
void report_write_caps_json(struct jw *w, const struct caps_hit *h)
{
	jw_object(w, JK(limits_reached), JW_INLINE);
#define CAP_JSON(id, key) jw_u64(w, JK(key), h->n[id]);
	CAPS(CAP_JSON)
#undef CAP_JSON
	jw_end(w);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* verdict.h */
#include <stdlib.h>
#include "verdict.h"

const char *verdict_intern(struct verdict *v, const char *s)
{
	return s ? strpool_intern(&v->strings, s) : NULL;
}

void verdict_free(struct verdict *v)
{
	if (!v)
		return;
	strpool_free(&v->strings);
	free(v);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Sorting and searching arrays that may be empty: see sort.h. */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include "sort.h"

void sort_array(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

void sort_array_r(void *base, size_t n, size_t size,
		  int (*cmp)(const void *, const void *, void *), void *arg)
{
	if (n > 1)
		qsort_r(base, n, size, cmp, arg);
}

void *search_array(const void *key, const void *base, size_t n, size_t size,
		   int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}

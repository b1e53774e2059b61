/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sorting and searching arrays that may be empty.  An empty array's base is often NULL (a
 * report with no rows, a why target with no path), and the C library
 * declares qsort's base nonnull: passing NULL is undefined behaviour even
 * with no element, which UBSan reports and an optimiser may act on.  Every
 * sort and binary search of the tool goes through these.
 */
#ifndef RBM_SORT_H
#define RBM_SORT_H

#include <stddef.h>

void sort_array(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void sort_array_r(void *base, size_t n, size_t size,
		  int (*cmp)(const void *, const void *, void *), void *arg);
/* bsearch, with the same care: an empty array finds nothing. */
void *search_array(const void *key, const void *base, size_t n, size_t size,
		   int (*cmp)(const void *, const void *));

#endif

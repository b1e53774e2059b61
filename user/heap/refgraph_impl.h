/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Internal to refgraph.c and refgraph_pages.c: the graph's build, in two files. */
#ifndef RBM_REFGRAPH_IMPL_H
#define RBM_REFGRAPH_IMPL_H
#include <stdint.h>
#include "refgraph.h"

/*
 * The page table read (heap_pages.h), each page that fits numbered: its
 * slots are the graph's next nodes, its body found by address (by_body).
 * 0, or -errno with the message in err.
 */
int refgraph_read_pages(struct refgraph *g, uint64_t objspace, char *err, size_t errlen);

#endif

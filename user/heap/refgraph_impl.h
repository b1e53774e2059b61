/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Internal to refgraph.c, refgraph_pages.c and refgraph_bytes.c: the graph's build. */
#ifndef RBM_REFGRAPH_IMPL_H
#define RBM_REFGRAPH_IMPL_H
#include <stdbool.h>
#include <stdint.h>
#include "refgraph.h"

/*
 * The page table read (heap_pages.h), each page that fits numbered: its
 * slots are the graph's next nodes, its body found by address (by_body).
 * 0, or -errno with the message in err.
 */
int refgraph_read_pages(struct refgraph *g, uint64_t objspace, char *err, size_t errlen);

/*
 * Per node, the bytes the census counts (g->bytes): the slot and the memory
 * the object owns (slots.h).  A Hash whose st_table is outside its slot
 * (before 3.3) waits for its table's head, read with the batch's others.
 */
struct rg_bytes {
	uint32_t *node; /* the Hash of each deferred head */
	uint64_t *addr; /* the head's address */
	uint8_t *buf;
	bool *ok;
	size_t n, cap;
};

/* Sets node's bytes from its slot's words; 0, or -ENOMEM. */
int rg_bytes_note(struct rg_bytes *b, struct refgraph *g, uint32_t node, const uint64_t *words,
		  uint32_t slot_size);
/* Reads the deferred heads and adds their tables' bytes. */
void rg_bytes_flush(struct rg_bytes *b, struct refgraph *g);
void rg_bytes_free(struct rg_bytes *b);

#endif

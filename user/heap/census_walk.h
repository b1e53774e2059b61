/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The census's walk over heap pages, split from census.c so that several
 * walkers (threads) can share one heap: each reads its batches of pages out
 * of the target and tallies them in its own struct census (counters and
 * class map), which census_take adds up at the end.  Only the per-page slot
 * states are shared, each walker writing the pages of its own batches.
 */
#ifndef RBM_CENSUS_WALK_H
#define RBM_CENSUS_WALK_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "census.h"

/*
 * Pages read per batch: 32 bodies of 16 KiB, 512 KiB in one process_vm_readv,
 * still in the L2 cache when the slots are classified.  At 4M objects batches
 * of 16 and 64 pages were 5-6% slower, 128 pages 20% (a system call costs
 * 1-2 us in this VM, about as much as copying 8 KiB).
 */
#define CENSUS_BATCH_PAGES 32

struct census_job;

struct st_pending {
	uint64_t addr;
	struct census_class *cc;
};

#define CLASS_CACHE_BITS 8

struct class_slot {
	uint64_t key; /* 0: empty (no class has key 0) */
	struct census_class *cc;
};

struct census_walk {
	pid_t pid;
	const struct ruby_layout *hl;
	bool marking;
	struct census_page *page; /* the census's, indexed like the page table; NULL: none */
	uint8_t *slot_mem;	  /* max_slots bytes per page, same index */
	uint32_t *class_mem;	  /* max_slots class hashes per page, same index */
	struct census part;	  /* this walker's tallies */
	struct census_job *job;

	uint64_t last_key; /* neighbours are often of one class: skip the lookup */
	struct census_class *last;
	struct class_slot cache[1 << CLASS_CACHE_BITS];
	uint64_t page_addr[CENSUS_BATCH_PAGES]; /* struct heap_page *, this batch */
	uint64_t body_addr[CENSUS_BATCH_PAGES];
	bool page_ok[CENSUS_BATCH_PAGES], body_ok[CENSUS_BATCH_PAGES];
	uint8_t *page_buf; /* page_read_size per page */
	uint8_t *body_buf; /* page_size per page */
	size_t body_len;
	/* Hashes on an st_table: their heads are read after the batch's walk. */
	struct st_pending *st;
	size_t nst, st_cap;
	uint64_t *st_addr;
	uint8_t *st_buf;
	bool *st_ok;
};

/* 0 or -ENOMEM; walk_free releases it either way. */
int walk_init(struct census_walk *w, pid_t pid, const struct ruby_layout *hl, bool marking,
	      struct census_page *page, uint8_t *slot_mem, uint32_t *class_mem);

/* Walks pages[0..n) (n <= CENSUS_BATCH_PAGES), entries pos.. of the page table. */
int walk_batch(struct census_walk *w, const uint64_t *pages, size_t n, size_t pos);

/* The class of key in c, found or added; NULL when out of memory. */
struct census_class *census_class_of(struct census *c, uint64_t key, uint64_t klass,
				     uint32_t kind);

void walk_free(struct census_walk *w);

#endif

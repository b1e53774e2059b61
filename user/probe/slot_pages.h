/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the heap pages say of the tracked slots, read for a whole pass in a
 * few batched reads, page by page: whether the object is garbage awaiting the sweep, its
 * age, and whether the write barrier protects it (an unprotected object
 * never ages, so its age says nothing).
 */
#ifndef RBM_SLOT_PAGES_H
#define RBM_SLOT_PAGES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ruby_layout.h"

struct slot_facts {
	bool known;	   /* its page could be read */
	bool marked;	   /* its mark bit */
	bool before_sweep; /* its page is still to be swept (slot_classify) */
	bool unprotected;  /* not protected by the write barrier */
	uint8_t age;	   /* GCs survived, up to old (from the page's bits on 3.3+) */
};

/* Scratch kept between passes: per distinct page of the tracked slots. */
struct slot_pages {
	uint64_t *bodies; /* page bodies, sorted */
	uint64_t *pages;  /* their struct heap_page; 0: unreadable */
	uint64_t *addrs, *flags;
	uint8_t *spans; /* each page's bitmaps */
	bool *ok;
	size_t cap, pages_cap, addrs_cap, flags_cap, spans_cap, ok_cap;
};

/*
 * Fills facts[i] for the object at slots[i] whose first word is
 * headers[i][0].  0 or -ENOMEM.  The marks are final only if no GC began
 * marking before or during the reads: the caller knows.
 */
int slot_pages_read(struct slot_pages *sp, pid_t pid, const struct ruby_layout *hl,
		    const uint64_t *slots, const uint64_t (*headers)[2], size_t n,
		    struct slot_facts *facts);
void slot_pages_free(struct slot_pages *sp);

#endif

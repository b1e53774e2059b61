/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The word that changes when an entry is added to a container, for a
 * hardware watchpoint on it (probe/watch.c): a heap Array's length, an
 * embedded Array's flags (its length among them), a small Hash's flags
 * (its ar_table's size), a large Hash's st_table num_entries.  Read from the
 * container's slot words by the layout; the word moves as the container
 * changes form (an ar_table becomes an st_table at its ninth entry, an
 * embedded Array moves to the heap), so the watcher asks again.
 */
#ifndef RBM_WATCH_WORD_H
#define RBM_WATCH_WORD_H
#include <stdint.h>
#include "ruby_layout.h"

enum watch_form {
	WATCH_NONE,
	WATCH_ARRAY_EMBEDDED, /* the length in RBasic.flags */
	WATCH_ARRAY_HEAP,     /* as.heap.len */
	WATCH_HASH_AR,	      /* the ar_table's size in RBasic.flags */
	WATCH_HASH_ST,	      /* st_table.num_entries */
};

struct watch_word {
	enum watch_form form;
	uint64_t addr; /* 8-byte aligned */
	uint64_t mask; /* the count is (word & mask) >> shift */
	uint32_t shift;
	/* the container still in this form: (its flags & flags_mask) == flags_want */
	uint64_t flags_mask, flags_want;
};

/*
 * The word of the container at addr whose first slot_size bytes are words
 * (type: its RB_T_*): 0, or -EINVAL when it is no Array or Hash, or its
 * form cannot be watched (a shared Array, no table yet).
 */
int watch_word_of(const struct ruby_layout *l, uint32_t type, uint64_t addr, const uint64_t *words,
		  uint32_t slot_size, struct watch_word *out);

/* The count a watched word holds. */
static inline uint64_t watch_count(const struct watch_word *w, uint64_t word)
{
	return (word & w->mask) >> w->shift;
}

/* The form's name for the report ("st_table num_entries"). */
const char *watch_form_name(enum watch_form f);

#endif

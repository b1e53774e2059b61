/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Internal to layout_proof.c and heap/refs_proof.c: one run of the checks of a target's groups. */
#ifndef RBM_LAYOUT_PROOF_IMPL_H
#define RBM_LAYOUT_PROOF_IMPL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gc_counters.h"
#include "ruby_target.h"

struct prover {
	struct ruby_target *t;
	struct group_proof *g;
	bool launched; /* stopped before its main script ran: no Ruby frame yet */
	/* what the gc and heap groups read, for the checks that join them */
	struct gc_counters counters;
	uint64_t heap_slots;
	uint64_t pages;
};

/* Records a check of the current group; false if it failed (the group then fails). */
bool proof_check(struct prover *p, const char *name, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool proof_readable(struct prover *p, uint64_t addr, void *buf, size_t len);
bool proof_read_word(struct prover *p, uint64_t addr, uint64_t *v);

/*
 * The refs group's checks (heap/refs_proof.c: what `why` reads to follow
 * references and find roots) read with the heap layer's decoders, so the
 * heap layer hands them in, once at load (a constructor there): the proof
 * runs them in their turn without an include up a layer.  Unset, the group
 * fails, saying so.
 */
typedef void (*proof_group_fn)(struct prover *p);
void layout_proof_set_refs(proof_group_fn prove);

#endif

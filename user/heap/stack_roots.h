/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The threads' machine stacks and saved registers as conservative roots (stack_roots.c). */
#ifndef RBM_STACK_ROOTS_H
#define RBM_STACK_ROOTS_H
#include "refgraph.h"
#include "vm_roots.h"

/* The bytes of one machine stack read at most, from its top (Ruby's default is 1 MiB to 8). */
#define STACK_ROOTS_MAX (8u << 20)
/* Conservative roots kept at most, all stacks together (a hostile stack of slot addresses) */
#define STACK_ROOTS_MAX_ROOTS (1u << 20)

/*
 * Adds to set, after its exact roots, a ROOT_MACHINE_STACK root for every
 * aligned word of each noted thread's machine stack and saved registers
 * that is a live node of g.  Unreadable stacks are counted, not fatal.
 */
void stack_roots_add(struct root_set *set, const struct refgraph *g);

#endif

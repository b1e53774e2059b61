/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The unexplained objects grouped by what is above them: every live object
 * no root reaches (retainers_search's parent RG_NONE) is put under its
 * topmost unreached holder in the graph (an unreached object that nothing
 * the walk decoded references: the head of the group), and the groups are
 * named by their head's kind: its class, its T_DATA type, its imemo kind.
 * A head is held by something the walk does not read (a machine stack, a
 * T_DATA marked by C code, an iseq's literals, a C global); its kind is the
 * likeliest clue to which.  Cycles with no head are headed by their first
 * node in page order.
 *
 * Memory: a u32 per node (the queue) besides the search's parent array,
 * which it reuses.
 */
#ifndef RBM_UNEXPLAINED_H
#define RBM_UNEXPLAINED_H
#include <stddef.h>
#include <stdint.h>
#include "refgraph.h"

/* A group's head kind: the head's flags' type, and its class or T_DATA type. */
struct unexp_group {
	uint64_t key;	  /* klass (T_DATA: its rb_data_type_t; imemo: its kind) */
	uint8_t type;	  /* the head's ruby_value_type */
	uint64_t flags;	  /* one head's flags, for naming */
	uint64_t objects; /* unexplained objects under heads of this kind */
	uint64_t heads;	  /* heads of this kind */
	uint64_t young;	  /* of the objects, allocated since the last GC (RG_YOUNG) */
};

struct unexp_groups {
	struct unexp_group *g; /* most objects first */
	size_t n;
	uint64_t objects; /* unexplained objects in all */
	uint64_t young;	  /* of them, allocated since the last GC */
};

/*
 * Groups the live nodes of g that parent (retainers_search's) leaves
 * unreached, using parent as its scratch (it is not a parent array after).
 * 0, or -ENOMEM.  Reads each head's slot words from the graph's target,
 * which may run meanwhile: a head freed since the walk (or whose slot
 * cannot be read) is of type 0.
 */
int unexplained_group(const struct refgraph *g, uint32_t *parent, struct unexp_groups *out);
void unexplained_free(struct unexp_groups *u);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Call paths merged from the root into a tree, with retained/allocated counts. */
#ifndef RBM_CALLTREE_H
#define RBM_CALLTREE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ct_node {
	char *name;
	uint64_t retained;
	uint64_t allocated;
	struct ct_node **children;
	size_t nchildren;
	size_t cap;
};

struct ct_node *calltree_new(const char *root_name);
/* Adds one path (names root first) with its counts to every node on it.  0 or -ENOMEM. */
int calltree_add(struct ct_node *root, const char *const *path, size_t n, uint64_t retained,
		 uint64_t allocated);
/*
 * Sorts children by retained (then allocated, then name) and keeps the first
 * `keep` of each node (0 keeps all) that retain at least min_retained; the
 * rest are folded into one "(N more)" child so the counts still add up.
 */
void calltree_sort_prune(struct ct_node *node, size_t keep, uint64_t min_retained);
void calltree_free(struct ct_node *node);

#endif

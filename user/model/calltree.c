// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "calltree.h"

static struct ct_node *node_new(const char *name)
{
	struct ct_node *node = calloc(1, sizeof(*node));

	if (!node)
		return NULL;
	node->name = strdup(name);
	if (!node->name) {
		free(node);
		return NULL;
	}
	return node;
}

struct ct_node *calltree_new(const char *root_name)
{
	return node_new(root_name);
}

static struct ct_node *child(struct ct_node *node, const char *name)
{
	struct ct_node *c;
	size_t i;

	for (i = 0; i < node->nchildren; i++)
		if (strcmp(node->children[i]->name, name) == 0)
			return node->children[i];
	if (node->nchildren == node->cap) {
		size_t cap = node->cap ? node->cap * 2 : 4;
		struct ct_node **children = realloc(node->children, cap * sizeof(*children));

		if (!children)
			return NULL;
		node->children = children;
		node->cap = cap;
	}
	c = node_new(name);
	if (c)
		node->children[node->nchildren++] = c;
	return c;
}

int calltree_add(struct ct_node *root, const char *const *path, size_t n, uint64_t retained,
		 uint64_t allocated)
{
	struct ct_node *node = root;
	size_t i;

	root->retained += retained;
	root->allocated += allocated;
	for (i = 0; i < n; i++) {
		node = child(node, path[i]);
		if (!node)
			return -ENOMEM;
		node->retained += retained;
		node->allocated += allocated;
	}
	return 0;
}

static int node_cmp(const void *a, const void *b)
{
	const struct ct_node *x = *(const struct ct_node *const *)a;
	const struct ct_node *y = *(const struct ct_node *const *)b;

	if (x->retained != y->retained)
		return x->retained > y->retained ? -1 : 1;
	if (x->allocated != y->allocated)
		return x->allocated > y->allocated ? -1 : 1;
	return strcmp(x->name, y->name);
}

void calltree_sort_prune(struct ct_node *node, size_t keep, uint64_t min_retained)
{
	size_t i, kept = 0;

	sort_array(node->children, node->nchildren, sizeof(*node->children), node_cmp);
	/* Sorted by retained: the children kept are a prefix. */
	while (kept < node->nchildren && (!keep || kept < keep) &&
	       node->children[kept]->retained >= min_retained)
		kept++;
	/* Folding a single child above the cut into "(1 more)" would hide it for nothing. */
	if (kept == node->nchildren - 1 && node->children[kept]->retained >= min_retained)
		kept++;
	if (kept < node->nchildren) {
		struct ct_node *rest;
		char name[64];

		snprintf(name, sizeof(name), "(%zu more)", node->nchildren - kept);
		rest = node_new(name);
		if (rest) {
			for (i = kept; i < node->nchildren; i++) {
				rest->retained += node->children[i]->retained;
				rest->allocated += node->children[i]->allocated;
				calltree_free(node->children[i]);
			}
			node->children[kept] = rest;
			node->nchildren = kept + 1;
		}
	}
	for (i = 0; i < kept; i++)
		calltree_sort_prune(node->children[i], keep, min_retained);
}

void calltree_free(struct ct_node *node)
{
	size_t i;

	if (!node)
		return;
	for (i = 0; i < node->nchildren; i++)
		calltree_free(node->children[i]);
	free(node->children);
	free(node->name);
	free(node);
}

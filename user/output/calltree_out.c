// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The call tree and folded stacks as text: the model's trees and paths, escaped. */
#include <inttypes.h>
#include "calltree.h"
#include "escape.h"
#include "writers.h"

static void print_node(FILE *out, const struct ct_node *node, int depth)
{
	char name[1024];
	size_t i;

	fprintf(out, "%10" PRIu64 " %10" PRIu64 "  %*s%s\n", node->retained, node->allocated,
		depth * 2, "", term_escape(node->name, name, sizeof(name)));
	for (i = 0; i < node->nchildren; i++)
		print_node(out, node->children[i], depth + 1);
}

void calltree_print(FILE *out, const struct ct_node *root)
{
	fprintf(out, "%10s %10s  %s\n", "RETAINED", "ALLOCATED", "CALL TREE (root first)");
	print_node(out, root, 0);
}

void folded_write_line(FILE *out, const char *const *path, size_t n, uint64_t count)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i)
			fputc(';', out);
		folded_write_escaped(out, path[i]);
	}
	fprintf(out, " %" PRIu64 "\n", count);
}

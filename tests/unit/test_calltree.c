// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/model/calltree.c: merging call paths into a tree, sorting and pruning it. */
#include <criterion/criterion.h>
#include "calltree.h"

Test(calltree, merge_sort_prune)
{
	const char *p1[] = {"main", "a", "x"}, *p2[] = {"main", "b"}, *p3[] = {"main", "a", "y"},
		   *p4[] = {"main", "c"};
	struct ct_node *root = calltree_new("(all)");

	calltree_add(root, p1, 3, 5, 10);
	calltree_add(root, p2, 2, 7, 7);
	calltree_add(root, p3, 3, 1, 1);
	calltree_add(root, p4, 2, 0, 4);
	cr_expect_eq(root->retained, 13);
	cr_assert_eq(root->nchildren, 1);
	cr_expect_eq(root->children[0]->nchildren, 3);
	calltree_sort_prune(root, 1, 0);
	cr_assert_eq(root->children[0]->nchildren, 2);
	cr_expect_str_eq(root->children[0]->children[0]->name, "b");
	cr_expect_str_eq(root->children[0]->children[1]->name, "(2 more)");
	cr_expect_eq(root->children[0]->children[1]->retained, 6);
	cr_expect_eq(root->children[0]->children[1]->allocated, 15);
	calltree_free(root);
}

/* Children under min_retained fold too; a lone one above it is not folded into "(1 more)". */
Test(calltree, prune_by_retained)
{
	const char *p1[] = {"main", "a"}, *p2[] = {"main", "b"}, *p3[] = {"main", "c"},
		   *p4[] = {"main", "d"};
	struct ct_node *root = calltree_new("(all)");
	struct ct_node *main_node;

	calltree_add(root, p1, 2, 90, 100);
	calltree_add(root, p2, 2, 9, 10);
	calltree_add(root, p3, 2, 1, 10);
	calltree_add(root, p4, 2, 0, 50);
	calltree_sort_prune(root, 5, 5);
	main_node = root->children[0];
	cr_assert_eq(main_node->nchildren, 3);
	cr_expect_str_eq(main_node->children[0]->name, "a");
	cr_expect_str_eq(main_node->children[1]->name, "b");
	cr_expect_str_eq(main_node->children[2]->name, "(2 more)");
	cr_expect_eq(main_node->children[2]->retained, 1);
	cr_expect_eq(main_node->children[2]->allocated, 60);
	calltree_free(root);

	root = calltree_new("(all)");
	calltree_add(root, p1, 2, 90, 100);
	calltree_add(root, p2, 2, 9, 10);
	calltree_sort_prune(root, 1, 5);
	cr_expect_eq(root->children[0]->nchildren, 2, "b retains enough: shown, not \"(1 more)\"");
	calltree_free(root);
}

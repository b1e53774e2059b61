/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where the roots `why` starts from live in a target: hidden globals of
 * libruby, by their .symtab symbol when the build has one, else from the
 * machine code of the exported function that reads them (the decode
 * layout_decode.h does for the GC's globals):
 *
 *   rb_global_tbl        rb_f_global_variables: `mov rb_global_tbl(%rip), %rdi`,
 *                        the table it passes to rb_id_table_foreach
 *   end_procs, ephemeral_end_procs  rb_set_end_proc: the two list heads it
 *                        both loads (`mov X(%rip)`) and takes the address of
 *                        (`lea X(%rip)`) to push the new at_exit block
 *   rb_shape_tree_ptr    rb_shape_get_shape_by_id (3.2+): its one wide load
 *
 * and the exported markers of global variables (rb_gvar_val_marker: data is
 * the VALUE; rb_gvar_var_marker: data points to it).  Every address found
 * is checked live by the refs proof group before use (layout_proof.c).
 */
#ifndef RBM_REFS_GLOBALS_H
#define RBM_REFS_GLOBALS_H
#include <stdbool.h>
#include <stdint.h>
#include "ruby_target.h"

struct refs_globals {
	uint64_t global_tbl;		 /* &rb_global_tbl (an rb_id_table *) */
	uint64_t end_procs[2];		 /* &end_procs, &ephemeral_end_procs (either order) */
	uint64_t shape_tree;		 /* &rb_shape_tree_ptr; 0 before 3.2 */
	uint64_t shape_list;		 /* rb_shape_tree_ptr->shape_list, read */
	uint64_t val_marker;		 /* rb_gvar_val_marker */
	uint64_t var_marker;		 /* rb_gvar_var_marker */
	uint64_t libruby_lo, libruby_hi; /* libruby's mapped range */
	uint64_t geniv_tbl; /* &generic_iv_tbl_ (an st_table *); 0: not found, not walked */
	const char *from;		 /* "symbols" or "code" */
};

/*
 * Finds them in t (found, its layout proved).  0, or -ENOENT with what is
 * missing in why (one line).
 */
int refs_find_globals(const struct ruby_target *t, struct refs_globals *g, char *why, size_t n);

/* The address a RIP-relative operand names in code (pure: for the unit tests). */
struct rip_ref;
/*
 * rb_set_end_proc's list heads: the RIP targets that the code both loads
 * from (mov) and takes the address of (lea).  Returns how many (at most 2).
 */
size_t refs_end_proc_heads(const struct rip_ref *refs, size_t n, uint64_t out[2]);

#endif

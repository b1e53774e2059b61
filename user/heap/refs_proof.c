// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The refs proof group: what `why` reads, held to Ruby's own data before a
 * path is computed.  Object's constant table holds Object, String and
 * Kernel; one global variable's data is &rb_rs with its marker
 * rb_gvar_var_marker ($/); the main thread is in its ractor's thread
 * list and its Thread object is typed data named "VM/thread" pointing back
 * at it; the VM's special exceptions are NoMemoryError and its kin, its load
 * path and loaded features Arrays, main an Object; 3.3+: the shape tree's
 * too-complex shape is where OBJ_TOO_COMPLEX_SHAPE_ID says; the at_exit
 * lists and registered addresses are lists of readable nodes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "classnames.h"
#include "elfinfo.h"
#include "layout_proof_impl.h"
#include "rbmemtrace.h"
#include "refs_globals.h"
#include "target_mem.h"
#include "vm_roots.h"

#define MAX_CONSTS 4096
#define MAX_WALK 10000

static uint32_t type_of(struct prover *p, uint64_t v)
{
	uint64_t flags;

	return refs_heap_value(v) && proof_read_word(p, v, &flags) ? (uint32_t) (flags & RB_T_MASK)
								   : 0;
}

static bool object_constants(struct prover *p)
{
	static struct const_entry cs[MAX_CONSTS];
	const char *names[] = {"rb_cObject", "rb_cString", "rb_mKernel"};
	uint64_t want;
	int n, i, found = 0;
	size_t k;

	if (ruby_target_global_value(p->t, "rb_cObject", &want))
		return proof_check(p, "Object's constants", false, "rb_cObject unreadable");
	n = ruby_module_constants(p->t->pid, &p->t->layout, want, cs, MAX_CONSTS);
	for (k = 0; k < 3; k++) {
		if (ruby_target_global_value(p->t, names[k], &want))
			continue;
		for (i = 0; i < n; i++)
			if (cs[i].value == want) {
				found++;
				break;
			}
	}
	return proof_check(p, "Object's constants", found == 3,
			   "%d constants (const_tbl +%u, entry value +%u); Object, String and "
			   "Kernel %s among them",
			   n, p->t->layout.classext_const_tbl, p->t->layout.const_entry_value,
			   found == 3 ? "all" : "not");
}

/* $/: rb_define_hooked_variable("$/", &rb_rs, ...) keeps &rb_rs as data ($stdout is virtual). */
static bool rs_global(struct prover *p, const struct refs_globals *g)
{
	const struct ruby_layout *l = &p->t->layout;
	uint64_t tbl = 0, items = 0, rs_var, entry, var, data, marker;
	uint32_t capa = 0, i;
	bool ok = false;

	if (elf_symbol_value(p->t->img.host_path, "rb_rs", &rs_var, NULL))
		return proof_check(p, "$/'s global", false, "no rb_rs symbol");
	rs_var += p->t->img.load_bias;
	if (!proof_read_word(p, g->global_tbl, &tbl) ||
	    target_read(p->t->pid, tbl + l->id_table_capa, &capa, sizeof(capa)) ||
	    !proof_read_word(p, tbl + l->id_table_items, &items) || capa > (1u << 20))
		return proof_check(p, "$/'s global", false,
				   "rb_global_tbl at 0x%" PRIx64 " unreadable", g->global_tbl);
	for (i = 0; i < capa && !ok; i++) {
		uint64_t at = items + (uint64_t) i * l->id_item_size;

		if (!proof_read_word(p, at + l->id_item_value, &entry) || !entry ||
		    !proof_read_word(p, entry + l->gentry_var, &var) ||
		    !proof_read_word(p, var + l->gvar_data, &data) ||
		    !proof_read_word(p, var + l->gvar_marker, &marker))
			continue;
		ok = data == rs_var && marker == g->var_marker;
	}
	return proof_check(p, "$/'s global", ok, "%u slots of rb_global_tbl (found by %s): %s",
			   capa, g->from,
			   ok ? "one holds &rb_rs, marked by rb_gvar_var_marker"
			      : "none holds &rb_rs with rb_gvar_var_marker");
}

static bool threads(struct prover *p)
{
	const struct ruby_layout *l = &p->t->layout;
	uint64_t ractor = 0, main_thread = 0, head, node = 0, self = 0, type = 0, name = 0,
		 data = 0;
	uint64_t typed = 0;
	char tname[16] = "";
	int n = 0;
	bool in_list = false, ok;

	if (!proof_read_word(p, p->t->main_ractor_addr, &ractor) ||
	    !proof_read_word(p, ractor + l->ractor_main_thread, &main_thread))
		return proof_check(p, "threads", false, "the main ractor is unreadable");
	head = ractor + l->ractor_threads_set;
	proof_read_word(p, head, &node);
	for (; node && node != head && n < MAX_WALK; n++) {
		in_list |= node == main_thread;
		if (!proof_read_word(p, node, &node))
			break;
	}
	if (!proof_check(p, "threads", in_list && node == head,
			 "%d in the ractor's list (+%u), the main thread %s", n,
			 l->ractor_threads_set, in_list ? "among them" : "not found"))
		return false;
	ok = proof_read_word(p, main_thread + l->thread_self, &self) &&
	     proof_read_word(p, self + l->tdata_typed_flag, &typed) && (typed & 1) &&
	     proof_read_word(p, self + l->tdata_type, &type) &&
	     proof_read_word(p, type + l->datatype_name, &name) &&
	     target_read(p->t->pid, name, tname, sizeof(tname) - 1) == 0;
	tname[sizeof(tname) - 1] = '\0';
	data = (typed & l->tdata_embedded) ? self + l->tdata_size : 0;
	if (ok && !data)
		proof_read_word(p, self + l->tdata_data, &data);
	return proof_check(
	    p, "Thread data", ok && !strcmp(tname, "VM/thread") && data == main_thread,
	    "the main Thread's type is \"%s\" (type +%u, name +%u), its data 0x%" PRIx64
	    " (thread 0x%" PRIx64 ")",
	    tname, l->tdata_type, l->datatype_name, data, main_thread);
}

static bool vm_lists(struct prover *p)
{
	const struct ruby_layout *l = &p->t->layout;
	static const char *const special[] = {"fatal", "NoMemoryError", "SystemStackError",
					      "IOError"};
	struct class_namer cn;
	uint64_t object = 0, v, top = 0, load = 0, feat = 0, ary = 0;
	char err[128], bad[96] = "";
	int i, good = 0;
	size_t k;
	bool ok;

	if (ruby_target_global_value(p->t, "rb_cObject", &object) ||
	    class_namer_init(&cn, p->t->pid, l, object, err, sizeof(err)))
		return proof_check(p, "VM lists", false, "class names unreadable");
	for (i = 0; i < 5; i++) {
		uint64_t hdr[2] = {0, 0};
		const char *name = "";

		if (proof_read_word(p, p->t->vm + l->vm_special_exceptions + 8 * i, &v) &&
		    proof_readable(p, v, hdr, sizeof(hdr)) && (hdr[0] & RB_T_MASK) == RB_T_OBJECT)
			name = class_namer_name(&cn, class_namer_object_class(&cn, hdr[1]));
		for (k = 0; k < sizeof(special) / sizeof(special[0]); k++)
			if (!strcmp(name, special[k]))
				break;
		if (k < sizeof(special) / sizeof(special[0]))
			good++;
		else if (!bad[0])
			snprintf(bad, sizeof(bad), "; #%d is \"%.40s\"", i, name);
	}
	class_namer_free(&cn);
	ok = proof_read_word(p, p->t->vm + l->vm_top_self, &top) &&
	     proof_read_word(p, p->t->vm + l->vm_load_path, &load) &&
	     proof_read_word(p, p->t->vm + l->vm_loaded_features, &feat) &&
	     proof_read_word(p, p->t->vm + l->vm_mark_object_ary, &ary) &&
	     type_of(p, top) == RB_T_OBJECT && type_of(p, load) == RB_T_ARRAY &&
	     type_of(p, feat) == RB_T_ARRAY &&
	     type_of(p, ary) == (l->pin_list_array ? RB_T_DATA : RB_T_ARRAY);
	return proof_check(p, "VM lists", good == 5 && ok,
			   "%d/5 special exceptions (+%u) of their classes%s; types of main, "
			   "load path, features, mark_object_ary: %u %u %u %u",
			   good, l->vm_special_exceptions, bad, type_of(p, top), type_of(p, load),
			   type_of(p, feat), type_of(p, ary));
}

static bool shapes(struct prover *p, const struct refs_globals *g)
{
	const struct ruby_layout *l = &p->t->layout;
	uint8_t root[256], complex[256];
	uint32_t parent = 1, next = 1;
	bool ok;

	if (!l->shape_size)
		return true;
	ok = l->shape_size <= sizeof(root) && g->shape_list &&
	     target_read(p->t->pid, g->shape_list, root, l->shape_size) == 0 &&
	     target_read(p->t->pid,
			 g->shape_list + (uint64_t) l->shape_too_complex_id * l->shape_size,
			 complex, l->shape_size) == 0;
	if (ok) {
		memcpy(&parent, complex + l->shape_parent_id, 4);
		memcpy(&next, root + l->shape_next_iv_index, 4);
	}
	return proof_check(p, "shapes",
			   ok && complex[l->shape_type] == l->shape_type_too_complex &&
			       root[l->shape_type] == 0 && next == 0 && parent == 0,
			   "shape %u of the tree at 0x%" PRIx64 " is %s, a child of the root",
			   l->shape_too_complex_id, g->shape_list,
			   ok && complex[l->shape_type] == l->shape_type_too_complex
			       ? "the too-complex shape"
			       : "not the too-complex shape");
}

/* A list of {..., next}: readable nodes to its end. */
static int list_len(struct prover *p, uint64_t head, uint32_t next_off)
{
	uint64_t node = 0;
	int n = 0;

	if (!proof_read_word(p, head, &node))
		return -1;
	for (; node && n < MAX_WALK; n++)
		if (!proof_read_word(p, node + next_off, &node))
			return -1;
	return node ? -1 : n;
}

static bool lists(struct prover *p, const struct refs_globals *g)
{
	const struct ruby_layout *l = &p->t->layout;
	uint64_t reg = l->vm_global_list ? p->t->vm + l->vm_global_list
					 : p->t->objspace + l->objspace_global_list;
	int a = list_len(p, g->end_procs[0], l->endproc_next);
	int b = list_len(p, g->end_procs[1], l->endproc_next);
	int r = list_len(p, reg, 8);

	return proof_check(p, "lists", a >= 0 && b >= 0 && r >= 0,
			   "at_exit lists of %d and %d blocks, %d registered addresses", a, b, r);
}

static void prove_refs(struct prover *p)
{
	const struct ruby_layout *l = &p->t->layout;
	struct refs_globals g = {0};
	char why[256] = "";
	bool found;

	if (!proof_check(p, "fields", !l->refs_unknown, "%u of the refs fields unknown (%s)",
			 l->refs_unknown, p->t->layout_from))
		return;
	/* found first: a call's arguments are evaluated in no set order (the line printed garbage) */
	found = refs_find_globals(p->t, &g, why, sizeof(why)) == 0;
	if (!proof_check(p, "hidden globals", found, "%s",
			 found ? "rb_global_tbl, end_procs found" : why))
		return;
	if (object_constants(p) && rs_global(p, &g) && threads(p) && vm_lists(p) && shapes(p, &g))
		lists(p, &g);
}

/* The proof (ruby/, below this layer) runs the group in its turn: see layout_proof_impl.h. */
__attribute__((constructor)) static void hand_refs_to_the_proof(void)
{
	layout_proof_set_refs(prove_refs);
}

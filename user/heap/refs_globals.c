// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "elf_code.h"
#include "elfinfo.h"
#include "procmaps.h"
#include "refs_globals.h"
#include "ruby_symbols.h"
#include "target_mem.h"

#define CODE_MAX 256
#define MAX_REFS 64

/* The vaddr of a hidden global by its .symtab symbol; 0 if the build has none. */
static uint64_t symbol(const struct ruby_target *t, const char *name)
{
	uint64_t v;

	return elf_symbol_value(t->img.host_path, name, &v, NULL) == 0 ? v : 0;
}

static size_t scan(struct elf_code *ec, const char *fn, struct rip_ref *refs)
{
	uint8_t code[CODE_MAX];
	size_t len = sizeof(code);
	uint64_t vaddr;

	if (!ec || elf_code_function(ec, fn, code, &len, &vaddr))
		return 0;
	return rip_scan(code, len, vaddr, refs, MAX_REFS);
}

/* The first 64-bit load into a register from a RIP-relative address: mov X(%rip), %reg. */
static uint64_t first_wide_load(const struct rip_ref *refs, size_t n, int reg)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!rip_ref_is_branch(&refs[i]) && refs[i].opcode == 0x8b &&
		    rip_ref_is_wide(&refs[i]) && (reg < 0 || refs[i].reg == reg))
			return refs[i].target;
	return 0;
}

size_t refs_end_proc_heads(const struct rip_ref *refs, size_t n, uint64_t out[2])
{
	size_t i, j, k = 0;

	for (i = 0; i < n && k < 2; i++) {
		if (rip_ref_is_branch(&refs[i]) || refs[i].opcode != 0x8b ||
		    !rip_ref_is_wide(&refs[i]) || (k && out[0] == refs[i].target))
			continue;
		for (j = 0; j < n; j++)
			if (!rip_ref_is_branch(&refs[j]) && refs[j].opcode == 0x8d &&
			    refs[j].target == refs[i].target)
				break;
		if (j < n)
			out[k++] = refs[i].target;
	}
	return k;
}

/*
 * &generic_iv_tbl_, by its .symtab symbol, or in a stripped build from
 * rb_mark_generic_ivar's code: the table is the first RIP-relative load
 * into %rdi (st_lookup's table), in the function or in the first local
 * function it calls (3.1 and 3.3 look it up in a helper).  The helper's
 * code is read from the target, where it is mapped.
 */
static uint64_t generic_table(const struct ruby_target *t, struct elf_code *ec)
{
	struct rip_ref refs[MAX_REFS], inner[MAX_REFS];
	uint64_t v = symbol(t, "generic_iv_tbl_"), bias = t->img.load_bias;
	uint8_t code[CODE_MAX];
	char name[64];
	size_t nr, ni, i;

	if (v)
		return bias + v;
	nr = scan(ec, "rb_mark_generic_ivar", refs);
	if ((v = first_wide_load(refs, nr, 7)))
		return bias + v;
	for (i = 0; i < nr; i++) {
		if (refs[i].opcode != 0xe8 || !elf_code_plt_symbol(ec, refs[i].target, name,
								     sizeof(name)))
			continue;
		if (target_read(t->pid, bias + refs[i].target, code, sizeof(code)))
			return 0;
		ni = rip_scan(code, sizeof(code), refs[i].target, inner, MAX_REFS);
		v = first_wide_load(inner, ni, 7);
		return v ? bias + v : 0;
	}
	return 0;
}

/* libruby's mapped range, from /proc/PID/maps. */
static void mapped_range(const struct ruby_target *t, uint64_t *lo, uint64_t *hi)
{
	char path[64], line[PATH_MAX + 128];
	struct map_entry e;
	FILE *f;

	*lo = *hi = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (procmaps_parse_line(line, &e) || strcmp(e.path, t->img.path))
			continue;
		if (!*lo || e.start < *lo)
			*lo = e.start;
		if (e.end > *hi)
			*hi = e.end;
	}
	fclose(f);
}

int refs_find_globals(const struct ruby_target *t, struct refs_globals *g, char *why, size_t n)
{
	const struct ruby_layout *l = &t->layout;
	struct rip_ref refs[MAX_REFS];
	struct elf_code *ec = NULL;
	uint64_t bias = t->img.load_bias, v, heads[2] = {0, 0}, tree = 0;
	size_t nr;

	memset(g, 0, sizeof(*g));
	g->from = "symbols";
	elf_code_open(t->img.host_path, &ec);
	if ((v = symbol(t, "rb_global_tbl")) == 0) {
		g->from = "code";
		nr = scan(ec, "rb_f_global_variables", refs);
		v = first_wide_load(refs, nr, 7 /* %rdi: rb_id_table_foreach's table */);
	}
	g->global_tbl = v ? bias + v : 0;
	heads[0] = symbol(t, "end_procs");
	heads[1] = symbol(t, "ephemeral_end_procs");
	if (!heads[0] || !heads[1]) {
		nr = scan(ec, "rb_set_end_proc", refs);
		if (refs_end_proc_heads(refs, nr, heads) != 2)
			heads[0] = heads[1] = 0;
	}
	g->end_procs[0] = heads[0] ? bias + heads[0] : 0;
	g->end_procs[1] = heads[1] ? bias + heads[1] : 0;
	if (l->shape_size) {
		if ((v = symbol(t, "rb_shape_tree_ptr")) == 0) {
			nr = scan(ec, "rb_shape_get_shape_by_id", refs);
			v = first_wide_load(refs, nr, -1);
		}
		g->shape_tree = v ? bias + v : 0;
		if (g->shape_tree && target_read_u64(t->pid, g->shape_tree, &tree) == 0 && tree)
			target_read_u64(t->pid, tree + l->shape_tree_list, &g->shape_list);
	}
	g->geniv_tbl = generic_table(t, ec);
	elf_code_close(ec);
	if ((v = symbol(t, "rb_gvar_val_marker")))
		g->val_marker = bias + v;
	if ((v = symbol(t, "rb_gvar_var_marker")))
		g->var_marker = bias + v;
	mapped_range(t, &g->libruby_lo, &g->libruby_hi);
	if (!g->global_tbl || !g->end_procs[0] || (l->shape_size && !g->shape_list) ||
	    !g->val_marker || !g->var_marker) {
		snprintf(why, n, "cannot find %s in %s",
			 !g->global_tbl	    ? "rb_global_tbl"
			 : !g->end_procs[0] ? "the at_exit lists (end_procs)"
			 : !g->val_marker   ? "rb_gvar_val_marker"
			 : !g->var_marker   ? "rb_gvar_var_marker"
					    : "the shape tree (rb_shape_tree_ptr)",
			 t->img.path);
		return -ENOENT;
	}
	return 0;
}

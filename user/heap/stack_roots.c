// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The threads' machine stacks and saved registers as roots, read as Ruby's
 * GC reads them (rb_execution_context_mark, mark_current_machine_context):
 * conservatively, every aligned word that is a live slot's address is a
 * root, labelled "stack of thread N (conservative)" and added after every
 * exact root (a path through one is the last resort).
 *
 * What is exact and what is not: a thread that does not hold the GVL saved
 * its registers (ec->machine.regs) and its stack's end when it let the GVL
 * go, and its stack below that does not change until it runs again; the
 * thread that holds the GVL runs while its stack is read (unless --freeze
 * stopped it): its saved end is stale, so its words may be old (a false
 * root) and its live registers are not read.  A stack that is not mapped
 * or not readable is counted, never fatal; one larger than STACK_ROOTS_MAX
 * is read from its top (the outermost frames) that far, and counted.
 *
 * And re-reading a root later (vm_root_holds): a path printed is read again
 * from its root's source.
 */
#include <stdlib.h>
#include "stack_roots.h"
#include "target_mem.h"

#define CHUNK (64u << 10)

void vm_roots_note_ec(struct root_set *set, uint16_t th, uint64_t ec)
{
	struct root_ec *e = realloc(set->ecs, (set->necs + 1) * sizeof(*e));

	if (!e)
		return;
	set->ecs = e;
	set->ecs[set->necs++] = (struct root_ec){ec, th};
}

static void add(struct root_set *set, uint64_t value, uint64_t src, uint16_t th)
{
	struct root *r;

	if (set->conservative >= STACK_ROOTS_MAX_ROOTS) {
		set->stacks_cut += !set->conservative_full; /* said once */
		set->conservative_full = true;
		return;
	}
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 1024;

		r = realloc(set->r, cap * sizeof(*r));
		if (!r)
			return;
		set->r = r;
		set->cap = cap;
	}
	set->r[set->n++] =
	    (struct root){.value = value, .src = src, .kind = ROOT_MACHINE_STACK, .thread = th};
	set->conservative++;
}

/* Words at addr (n bytes): each that is a live object's slot a root of thread th. */
static int scan(struct root_set *set, const struct refgraph *g, uint64_t addr, uint64_t n,
		uint16_t th)
{
	uint64_t buf[CHUNK / 8], at, i, len;
	const struct rg_page *hint = NULL;
	uint32_t v;

	for (at = 0; at < n; at += len) {
		len = n - at < CHUNK ? n - at : CHUNK;
		if (target_read(g->pid, addr + at, buf, len))
			return -1;
		set->stack_words += len / 8;
		for (i = 0; i < len / 8; i++) {
			if (!refs_heap_value(buf[i]) || buf[i] == 0 ||
			    (v = refgraph_node_at(g, buf[i], &hint)) == RG_NONE ||
			    !(g->state[v] & RG_LIVE))
				continue;
			add(set, buf[i], addr + at + i * 8, th);
		}
	}
	return 0;
}

void stack_roots_add(struct root_set *set, const struct refgraph *g)
{
	const struct ruby_layout *l = g->l;
	uint64_t start, end, lo, hi;
	size_t i;

	if (!l->ec_machine_start || !l->ec_machine_end)
		return;
	for (i = 0; i < set->necs; i++) {
		const struct root_ec *e = &set->ecs[i];

		if (target_read_u64(g->pid, e->ec + l->ec_machine_start, &start) ||
		    target_read_u64(g->pid, e->ec + l->ec_machine_end, &end) || !start || !end) {
			set->stacks_unread++;
			continue;
		}
		lo = (start < end ? start : end) & ~(uint64_t) 7;
		hi = start < end ? end : start;
		if (hi - lo > STACK_ROOTS_MAX) {
			set->stacks_cut++;
			lo = hi - STACK_ROOTS_MAX;
		}
		if (scan(set, g, lo, hi - lo, e->thread))
			set->stacks_unread++;
		/* the registers it saved: a jmp_buf of 8-byte words */
		if (l->ec_machine_regs && scan(set, g, e->ec + l->ec_machine_regs, 200, e->thread))
			set->stacks_unread++;
	}
}

bool vm_root_holds(pid_t pid, const struct ruby_layout *l, const struct root *r)
{
	uint64_t now, cfp, sp;

	if (!r->src)
		return true;
	if (target_read_u64(pid, r->src, &now) || now != r->value)
		return false;
	if (!r->ec)
		return true;
	/* values below the innermost frame's sp, frames at or above ec->cfp */
	if (target_read_u64(pid, r->ec + l->ec_cfp, &cfp) ||
	    target_read_u64(pid, cfp + l->cfp_sp, &sp))
		return false;
	return r->src < sp || r->src >= cfp;
}

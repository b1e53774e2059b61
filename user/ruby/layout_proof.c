// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The checks of layout_proof.h, run against the live target.  Each reads a
 * few words and holds the layout to an invariant of Ruby's own data that a
 * wrong offset breaks: a page's body points back at its page, a class path
 * reads "Object", a frame lies inside its VM stack...  A group stops at its
 * first failed check; a check that needs another group's result (the live
 * count against the heap's slots) runs only when that group passed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "classnames.h"
#include "elf_code.h"
#include "gc_counters.h"
#include "heap_pages.h"
#include "layout_proof.h"
#include "layout_proof_impl.h"
#include "procmaps.h"
#include "rbmemtrace.h"
#include "ruby_caps.h"
#include "ruby_string.h"
#include "ruby_target.h"
#include "target_mem.h"

#define SAMPLE_PAGES 64
#define MAX_FRAMES 256
#define MAX_GC_COUNT (1ULL << 40)
#define MAX_OBJECTS (1ULL << 40)
/* Object < its included modules' iclasses < BasicObject: a Rails app includes dozens */
#define MAX_ANCESTORS 256

static const char *const group_names[PROOF_GROUPS] = {
    [PROOF_GC] = "gc",	       [PROOF_HEAP] = "heap",	  [PROOF_CLASSES] = "classes",
    [PROOF_STACKS] = "stacks", [PROOF_PROBES] = "probes",	  [PROOF_REFS] = "refs",
};

static const char *const group_gives[PROOF_GROUPS] = {
    [PROOF_GC] = "GC counters or object ages", [PROOF_HEAP] = "heap census",
    [PROOF_CLASSES] = "class names",	       [PROOF_STACKS] = "sites or call paths",
    [PROOF_PROBES] = "allocation probes",	       [PROOF_REFS] = "retainer paths",
};

const char *proof_group_name(enum proof_group g)
{
	return g < PROOF_GROUPS ? group_names[g] : "?";
}

const char *proof_group_gives(enum proof_group g)
{
	return g < PROOF_GROUPS ? group_gives[g] : "?";
}

/* Records a check of the current group; false if it failed (the group then fails). */
bool proof_check(struct prover *p, const char *name, bool ok, const char *fmt, ...)
{
	struct group_proof *g = p->g;
	struct proof_check *c;
	va_list ap;

	if (g->nchecks < PROOF_MAX_CHECKS) {
		c = &g->checks[g->nchecks++];
		c->name = name;
		c->ok = ok;
		va_start(ap, fmt);
		vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
		va_end(ap);
		if (!ok && g->status != PROOF_FAILED)
			snprintf(g->why, sizeof(g->why), "%s: %s", name, c->detail);
	}
	if (!ok)
		g->status = PROOF_FAILED;
	return ok;
}

bool proof_readable(struct prover *p, uint64_t addr, void *buf, size_t len)
{
	return addr && !(addr & 7) && target_read(p->t->pid, addr, buf, len) == 0;
}

bool proof_read_word(struct prover *p, uint64_t addr, uint64_t *v)
{
	return proof_readable(p, addr, v, sizeof(*v));
}

/* ---- gc: vm -> objspace and its counters ---- */

/* The size pools' slot sizes are BASE_SLOT_SIZE << i: what no other memory holds. */
static bool check_pools(struct prover *p)
{
	const struct ruby_layout *l = &p->t->layout;
	uint16_t size = 0;
	uint32_t i;

	for (i = 0; i < l->pool_count; i++) {
		uint64_t at = p->t->objspace + l->objspace_pools + (uint64_t) i * l->pool_size +
			      l->pool_slot_size;

		if (target_read(p->t->pid, at, &size, sizeof(size)) || size != l->slot_size << i)
			return proof_check(p, "size pools", false,
				     "pool %u's slot size (objspace +%" PRIu64 ") reads %u, not %u",
				     i, at - p->t->objspace, size, l->slot_size << i);
	}
	return proof_check(p, "size pools", true, "%u pools of slots %u..%u bytes", l->pool_count,
		     l->slot_size, l->slot_size << (l->pool_count - 1));
}

/*
 * GC.stat(:total_moved_objects), which the report takes out of Ruby's
 * allocated and freed where they count moves (3.4).  Nothing moved before
 * the first compaction; where moves are counted as allocations, they are
 * among them.  Not a check of the group: failing it, the counter is
 * unknown and the report says so (moves_why) rather than print a figure.
 */
static void prove_moves(struct prover *p, uint64_t compact)
{
	const struct ruby_layout *l = &p->t->layout;
	const struct ruby_alloc_points *ap = ruby_alloc_points_for(p->t->version);
	uint64_t at = p->t->objspace + l->objspace_total_moved, moved = 0, again = 0;
	bool ok;

	p->t->moved_addr = 0;
	if (!l->objspace_total_moved || !l->objspace_compact_count) {
		snprintf(p->t->moves_why, sizeof(p->t->moves_why),
			 "this Ruby's moved-objects counter is not in its layout");
		return;
	}
	ok = proof_read_word(p, at, &moved) && proof_read_word(p, at, &again) && again >= moved &&
	     (compact || !moved) && moved < MAX_OBJECTS * 64 &&
	     (!ap || !ap->counters_count_moves || moved <= p->counters.allocated);
	if (!ok) {
		snprintf(p->t->moves_why, sizeof(p->t->moves_why),
			 "its moved-objects counter (objspace +%u) reads %" PRIu64
			 " after %" PRIu64 " compactions, which cannot be",
			 l->objspace_total_moved, moved, compact);
		return;
	}
	p->t->moved_addr = at;
	proof_check(p, "moves", true, "total_moved %" PRIu64 " (at +%u) after %" PRIu64
		    " compactions", moved, l->objspace_total_moved, compact);
}

static void prove_gc(struct prover *p)
{
	const struct ruby_layout *l = &p->t->layout;
	struct gc_counters again = {0};
	uint64_t compact = 0, word = 0, live;
	uint32_t mode;
	bool ok;

	if (!proof_check(p, "vm", p->t->vm_ptr_addr && p->t->vm && !(p->t->vm & 7),
		   "ruby_current_vm_ptr at 0x%" PRIx64 " holds 0x%" PRIx64, p->t->vm_ptr_addr,
		   p->t->vm))
		return;
	ok = p->t->objspace && !(p->t->objspace & 7) && proof_read_word(p, p->t->objspace, &word);
	if (!proof_check(p, "objspace", ok, "vm->objspace (vm + %u) is 0x%" PRIx64, l->vm_objspace,
		   p->t->objspace))
		return;
	ok = gc_counters_read(p->t->pid, l, p->t->objspace, &p->counters) == 0;
	if (!proof_check(p, "counters", ok, "%s at objspace 0x%" PRIx64, ok ? "read" : "unreadable",
		   p->t->objspace))
		return;
	/*
	 * A bit-field word of a dozen flags: what lies above them is 0.  The mode
	 * is none, marking, sweeping or compacting (3, seen attaching to a
	 * target that runs GC.compact in a loop).
	 */
	mode = p->counters.flags & l->objspace_flags_mode_mask;
	if (!proof_check(p, "flags", mode <= 3 && p->counters.flags < (1u << 16),
		   "mode %u in flags 0x%x (at +%u)", mode, p->counters.flags, l->objspace_flags))
		return;
	if (!check_pools(p))
		return;
	if (!proof_check(p, "GC.count", p->counters.gc_count < MAX_GC_COUNT, "%" PRIu64 " (at +%u)",
		   p->counters.gc_count, l->objspace_gc_count))
		return;
	live = p->counters.allocated - p->counters.freed;
	if (!proof_check(p, "allocated >= freed",
		   p->counters.allocated >= p->counters.freed && live > 0 && live < MAX_OBJECTS,
		   "allocated %" PRIu64 ", freed %" PRIu64, p->counters.allocated,
		   p->counters.freed))
		return;
	if (l->objspace_compact_count) {
		ok = proof_read_word(p, p->t->objspace + l->objspace_compact_count, &compact) &&
		     compact <= p->counters.gc_count;
		if (!proof_check(p, "compactions <= GCs", ok,
			   "compact_count %" PRIu64 " (at +%u), GC.count %" PRIu64, compact,
			   l->objspace_compact_count, p->counters.gc_count))
			return;
	}
	prove_moves(p, compact);
	ok = gc_counters_read(p->t->pid, l, p->t->objspace, &again) == 0 &&
	     again.allocated >= p->counters.allocated && again.freed >= p->counters.freed &&
	     again.gc_count >= p->counters.gc_count && again.gc_count - p->counters.gc_count < 1000;
	proof_check(p, "counters only grow", ok,
	      "allocated %" PRIu64 " then %" PRIu64 ", GC.count %" PRIu64 " then %" PRIu64,
	      p->counters.allocated, again.allocated, p->counters.gc_count, again.gc_count);
}

/* ---- heap: the page table and its pages ---- */

static bool valid_type(uint32_t type)
{
	return type <= 0x0f || (type >= 0x11 && type <= 0x16) || (type >= 0x1a && type <= 0x1e);
}

/* What a sampled page shows, or why it does not fit: the first check it fails. */
static const char *page_fault(struct prover *p, uint64_t page, uint64_t *start, char *detail,
			      size_t n)
{
	const struct ruby_layout *l = &p->t->layout;
	struct heap_page_geo g;
	uint8_t hdr[4096];
	uint64_t back = 0, flags;
	uint32_t i;

	if (l->page_read_size > sizeof(hdr) || !proof_readable(p, page, hdr, l->page_read_size)) {
		snprintf(detail, n, "page 0x%" PRIx64 " unreadable", page);
		return "page";
	}
	heap_page_geo_of(l, hdr, &g);
	*start = g.start;
	if (!proof_read_word(p, g.body, &back) || back != page) {
		snprintf(detail, n,
			 "page 0x%" PRIx64 ": start 0x%" PRIx64
			 " (at +%u), its body's first word 0x%" PRIx64,
			 page, g.start, l->page_start, back);
		return "page body points back";
	}
	if (!heap_page_fits(l, &g)) {
		snprintf(detail, n, "page 0x%" PRIx64 ": %u slots of %u bytes from 0x%" PRIx64,
			 page, g.nslots, g.slot_size, g.start);
		return "slots fit the page";
	}
	p->heap_slots += g.nslots;
	for (i = 0; i < 8 && i < g.nslots; i++) {
		if (!proof_read_word(p, g.start + (uint64_t) i * g.slot_size, &flags) ||
		    !valid_type(flags & RB_T_MASK)) {
			snprintf(detail, n, "slot %u of page 0x%" PRIx64 ": flags 0x%" PRIx64, i,
				 page, flags);
			return "slots hold objects";
		}
	}
	return NULL;
}

/* The page table (heap_pages.h): -ERANGE none or past the cap, -EFAULT unreadable. */
static int read_page_table(struct prover *p, uint64_t **table)
{
	struct heap_page_table t;
	int ret;

	ret = heap_page_table_find(p->t->pid, &p->t->layout, p->t->objspace, &t);
	p->pages = t.npages;
	if (ret)
		return ret == -ERANGE ? ret : -EFAULT;
	*table = malloc(t.npages * sizeof(**table));
	if (!*table)
		return -ENOMEM;
	if (heap_page_table_read(p->t->pid, &t, *table)) {
		free(*table);
		return -EFAULT;
	}
	return 0;
}

/* Slots of every page, read two bytes a page; 0 if unreadable. */
static uint64_t all_slots(struct prover *p, const uint64_t *table)
{
	const struct ruby_layout *l = &p->t->layout;
	uint64_t *addrs = malloc(p->pages * sizeof(*addrs)), sum = 0;
	uint16_t *totals = malloc(p->pages * sizeof(*totals));
	bool *ok = malloc(p->pages * sizeof(*ok));
	size_t i;

	for (i = 0; addrs && totals && ok && i < p->pages; i++)
		addrs[i] = table[i] + l->page_total_slots;
	if (addrs && totals && ok) {
		target_read_many(p->t->pid, addrs, p->pages, sizeof(*totals), totals, ok);
		for (i = 0; i < p->pages; i++)
			sum += ok[i] ? totals[i] : 0;
	}
	free(addrs);
	free(totals);
	free(ok);
	return sum;
}

static void prove_heap(struct prover *p, bool counters_proved)
{
	uint64_t *table = NULL, start, last_start = 0, live, slots;
	const char *fault = NULL;
	char detail[128] = "";
	size_t i, step, sampled = 0;
	int ret;

	ret = read_page_table(p, &table);
	if (!proof_check(p, "page table", ret == 0, "%" PRIu64 " pages (%s)", p->pages,
		   ret == -ERANGE ? "none, or past the cap of 2^24"
		   : ret	  ? strerror(-ret)
				  : "readable"))
		return;
	step = p->pages > SAMPLE_PAGES ? p->pages / SAMPLE_PAGES : 1;
	for (i = 0; !fault && i < p->pages; i += step, sampled++) {
		fault = page_fault(p, table[i], &start, detail, sizeof(detail));
		if (!fault && start <= last_start) {
			snprintf(detail, sizeof(detail),
				 "page %zu starts at 0x%" PRIx64 ", before 0x%" PRIx64, i, start,
				 last_start);
			fault = "pages sorted";
		}
		last_start = start;
	}
	if (fault) {
		proof_check(p, fault, false, "%s", detail);
		goto out;
	}
	proof_check(p, "pages", true,
	      "%zu of %" PRIu64 " sampled: each body points back at its page, its slots fit, "
	      "hold objects, in address order",
	      sampled, p->pages);
	if (!counters_proved)
		goto out;
	/* GC.stat's live objects fit the heap's slots (objects made meanwhile: a margin) */
	slots = all_slots(p, table);
	live = p->counters.allocated - p->counters.freed;
	proof_check(p, "live objects fit the slots", slots && live <= slots + slots / 4,
	      "%" PRIu64 " live by GC.stat, %" PRIu64 " slots in %" PRIu64 " pages", live, slots,
	      p->pages);
out:
	free(table);
}

/* ---- classes: the core classes read as themselves ---- */

static bool named(struct prover *p, struct class_namer *cn, const char *global, const char *want,
		  uint32_t type)
{
	uint64_t klass, flags = 0;
	const char *name = "";

	if (ruby_target_global_value(p->t, global, &klass) == 0 && proof_read_word(p, klass, &flags) &&
	    (flags & RB_T_MASK) == type)
		name = class_namer_name(cn, klass);
	return proof_check(p, want, !strcmp(name, want), "%s reads as \"%s\" (flags 0x%" PRIx64 ")",
		     global, name, flags);
}

static void prove_classes(struct prover *p)
{
	const struct ruby_layout *l = &p->t->layout;
	struct class_namer cn;
	uint64_t object = 0, basic, klass, flags;
	char err[256] = "rb_cObject unreadable";
	int hops;
	bool ok;

	ok = ruby_target_global_value(p->t, "rb_cObject", &object) == 0 &&
	     class_namer_init(&cn, p->t->pid, l, object, err, sizeof(err)) == 0;
	if (!proof_check(p, "Object's class path", ok, "%s",
		   ok ? "found among its ivars or in its classext" : err))
		return;
	if (named(p, &cn, "rb_cObject", "Object", RB_T_CLASS) &&
	    named(p, &cn, "rb_cBasicObject", "BasicObject", RB_T_CLASS) &&
	    named(p, &cn, "rb_mKernel", "Kernel", RB_T_MODULE) &&
	    named(p, &cn, "rb_cString", "String", RB_T_CLASS) &&
	    ruby_target_global_value(p->t, "rb_cBasicObject", &basic) == 0) {
		/* Object's superclasses: the iclasses of what it includes (Kernel...), then BasicObject */
		for (klass = object, hops = 0; hops < MAX_ANCESTORS && klass != basic; hops++)
			if (!proof_read_word(p, klass + l->rclass_super, &klass) ||
			    !proof_read_word(p, klass, &flags))
				break;
		proof_check(p, "Object < BasicObject", klass == basic,
		      "%s through RClass.super (+%u) in %d steps",
		      klass == basic ? "reached" : "not reached", l->rclass_super, hops);
	}
	class_namer_free(&cn);
}

/* ---- stacks: the main thread's frames ---- */

static bool valid_iseq(struct prover *p, uint64_t iseq, uint64_t pc, char *label, size_t n)
{
	const struct ruby_layout *l = &p->t->layout;
	uint64_t flags, body, encoded, lineno = 0;
	uint32_t size = 0;

	label[0] = '\0';
	if (!proof_read_word(p, iseq, &flags) || (flags & RB_T_MASK) != RB_T_IMEMO ||
	    ((flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK) != l->imemo_iseq)
		return false;
	if (!proof_read_word(p, iseq + l->iseq_body, &body) ||
	    !proof_read_word(p, body + l->body_iseq_encoded, &encoded) ||
	    target_read(p->t->pid, body + l->body_iseq_size, &size, sizeof(size)) ||
	    target_read(p->t->pid, body + l->body_first_lineno, &lineno, l->body_first_lineno_size))
		return false;
	if (l->body_first_lineno_size == 8)
		lineno >>= 1; /* a Fixnum */
	if (!proof_read_word(p, body + l->body_location_label, &flags) ||
	    ruby_read_string(p->t->pid, l, flags, label, n))
		return false;
	/* pc inside the instructions, a plausible first line, a printable label */
	return pc >= encoded && pc <= encoded + (uint64_t) size * 8 && size && size < (1u << 24) &&
	       (int32_t) lineno >= 0 && lineno < (1u << 24) && label[0] && label[0] != ' ';
}

/* The main ractor's main thread and its execution context, each pointing back. */
static bool main_ec(struct prover *p, uint64_t *ec)
{
	const struct ruby_layout *l = &p->t->layout;
	uint64_t ractor_var = p->t->main_ractor_addr, ractor = 0, thread = 0, self = 0, back = 0;
	bool ok;

	*ec = 0;
	ok = proof_read_word(p, ractor_var, &ractor) && ractor;
	if (!proof_check(p, "main ractor", ok,
		   "ruby_single_main_ractor at 0x%" PRIx64 " holds 0x%" PRIx64, ractor_var, ractor))
		return false;
	ok = proof_read_word(p, ractor + l->ractor_main_thread, &thread) &&
	     proof_read_word(p, thread + l->thread_self, &self) && proof_read_word(p, self, &back) &&
	     (back & RB_T_MASK) == 0x0c; /* T_DATA: the Thread object */
	if (!proof_check(p, "main thread", ok,
		   "ractor +%u -> thread 0x%" PRIx64 ", its self (+%u) 0x%" PRIx64
		   " (flags 0x%" PRIx64 ")",
		   l->ractor_main_thread, thread, l->thread_self, self, back))
		return false;
	back = 0;
	ok = proof_read_word(p, thread + l->thread_ec, ec) &&
	     proof_read_word(p, *ec + l->ec_thread_ptr, &back) && back == thread;
	return proof_check(p, "thread's ec", ok,
		   "thread +%u -> ec 0x%" PRIx64 ", whose thread_ptr (+%u) is 0x%" PRIx64,
		   l->thread_ec, *ec, l->ec_thread_ptr, back);
}

/* The frames from cfp to end (the dummy one Ruby pushes first excluded) name their code. */
static bool frames_name_code(struct prover *p, uint64_t cfp, uint64_t end)
{
	const struct ruby_layout *l = &p->t->layout;
	uint64_t frame[16];
	char label[128] = "", first[128] = "";
	unsigned int frames = 0, ruby_frames = 0;

	for (; cfp < end && frames < MAX_FRAMES; cfp += l->cfp_size, frames++) {
		uint64_t iseq, pc;

		if (l->cfp_size > sizeof(frame) || !proof_readable(p, cfp, frame, l->cfp_size))
			break;
		iseq = frame[l->cfp_iseq / 8];
		pc = frame[l->cfp_pc / 8];
		if (!iseq || !pc || (iseq & 7))
			continue; /* a C frame, or a dummy */
		if (!valid_iseq(p, iseq, pc, label, sizeof(label))) {
			uint64_t flags = 0;

			proof_read_word(p, iseq, &flags);
			if ((flags & RB_T_MASK) != RB_T_IMEMO)
				continue; /* a C frame's iseq slot holds its method entry */
			return proof_check(p, "frames name their code", false,
			      "frame %u: iseq 0x%" PRIx64 " pc 0x%" PRIx64 " does not read as one",
			      frames, iseq, pc);
		}
		if (!ruby_frames++)
			snprintf(first, sizeof(first), "%s", label);
	}
	return proof_check(p, "frames name their code", ruby_frames || p->launched,
		   "%u Ruby frames of %u (innermost \"%s\", outermost \"%s\")", ruby_frames,
		   frames, first, label);
}

static void prove_stacks(struct prover *p)
{
	const struct ruby_layout *l = &p->t->layout;
	uint64_t ec, stack = 0, cfp = 0, size = 0, modid = 0, tls = 0;
	bool ok;

	if (!main_ec(p, &ec))
		return;
	ok = proof_read_word(p, ec + l->ec_vm_stack, &stack) &&
	     proof_read_word(p, ec + l->ec_vm_stack_size, &size) && proof_read_word(p, ec + l->ec_cfp, &cfp) &&
	     size >= 1024 && size < (1u << 28) && cfp > stack && cfp < stack + size * 8 &&
	     (stack + size * 8 - cfp) % l->cfp_size == 0;
	if (!proof_check(p, "frame in its VM stack", ok,
		   "vm_stack 0x%" PRIx64 " of %" PRIu64 " words, cfp 0x%" PRIx64 " (frames of %u)",
		   stack, size, cfp, l->cfp_size))
		return;
	/* the last frame is the dummy one Ruby pushes first; walk the others */
	if (!frames_name_code(p, cfp, stack + size * 8 - l->cfp_size))
		return;
	ok = ruby_target_ec_tls(p->t, &modid, &tls) == 0;
	proof_check(p, "ruby_current_ec's TLS", ok, "module %" PRIu64 ", offset %" PRIu64, modid, tls);
}

/* ---- probes: the allocation entry points ---- */

static void prove_probes(struct prover *p)
{
	const struct ruby_alloc_points *a = p->t->alloc;
	struct elf_code *ec = NULL;
	uint8_t code[16];
	uint64_t vaddr, file_offset;
	size_t i, len;

	if (!proof_check(p, "entry points known", a != NULL, "%s for Ruby %s", a ? "listed" : "none",
		   p->t->version) ||
	    !proof_check(p, "libruby readable", elf_code_open(p->t->img.host_path, &ec) == 0, "%s",
		   p->t->img.path))
		return;
	for (i = 0; a->functions[i]; i++) {
		len = sizeof(code);
		if (elf_code_function(ec, a->functions[i], code, &len, &vaddr) || len < 4) {
			proof_check(p, "entry points exist", false, "%s is not a function of %s",
			      a->functions[i], p->t->img.path);
			goto out;
		}
	}
	proof_check(p, "entry points exist", i > 0, "%zu functions of %s", i, p->t->img.path);
	if (a->hidden_class_allocator) {
		bool ok = ruby_target_class_allocator_offset(p->t, &file_offset) == 0;

		proof_check(p, "rb_class_allocate_instance", ok,
		      "BasicObject's allocator (classext +%u) %s", p->t->layout.classext_allocator,
		      ok ? "points into libruby's code" : "is no code of libruby");
	}
out:
	elf_code_close(ec);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static proof_group_fn refs_prover;

void layout_proof_set_refs(proof_group_fn prove)
{
	refs_prover = prove;
}

static void run(struct prover *p, enum proof_group g, unsigned int groups)
{
	/* A group not asked for keeps what an earlier run found (a trace's, for why's walk). */
	if (!(groups & PROOF_BIT(g)))
		return;
	p->g = &p->t->proof.groups[g];
	memset(p->g, 0, sizeof(*p->g));
	p->g->status = PROOF_PROVED;
	switch (g) {
	case PROOF_GC:
		prove_gc(p);
		break;
	case PROOF_HEAP:
		if (p->t->proof.groups[PROOF_GC].status == PROOF_FAILED)
			proof_check(p, "objspace", false, "the gc group failed");
		else
			prove_heap(p, p->t->proof.groups[PROOF_GC].status == PROOF_PROVED);
		break;
	case PROOF_CLASSES:
		prove_classes(p);
		break;
	case PROOF_STACKS:
		prove_stacks(p);
		break;
	case PROOF_PROBES:
		prove_probes(p);
		break;
	case PROOF_REFS:
		if (refs_prover)
			refs_prover(p);
		else
			proof_check(p, "checks", false, "the refs checks are not linked in");
		break;
	default:
		break;
	}
}

void ruby_target_prove(struct ruby_target *t, unsigned int groups, bool launched)
{
	struct prover p = {.t = t, .launched = launched};
	double start = now();
	int g;

	/* the GC groups first: the heap joins their counts */
	if (groups & PROOF_BIT(PROOF_HEAP))
		groups |= PROOF_BIT(PROOF_GC);
	for (g = 0; g < PROOF_GROUPS; g++)
		run(&p, (enum proof_group) g, groups);
	t->proof.seconds = now() - start;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace: count Ruby object allocations per class and keep the set of
 * live objects, keyed by address, for the userspace loader to validate.
 *
 * Over ~600 lines because it is the run's one BPF object (HACKING.md): every
 * program shares its maps and helpers, and libbpf's skeleton is of one file.
 *
 * Hot path: one uretprobe per allocation.  The trap costs microseconds, so
 * the program itself does as little as it can: one 16-byte read of the new
 * object's header, one per-CPU counter update and one map update.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
/*
 * libbpf gives each USDT attach its own specs: 4 GC probes per traced
 * process, each with a few call sites, must fit for every process of a run.
 */
#define BPF_USDT_MAX_SPEC_CNT 4096
/* Used only by kernels without BPF cookies, which have no uprobe cookies for the slots either. */
#define BPF_USDT_MAX_IP_CNT 256
#include <bpf/usdt.bpf.h>
#include "rbmemtrace.h"

#define SIGSTOP 19

/*
 * One object serves every process of a run (rbmemtrace.h): a process's
 * state is its slot of `procs`, mmaped by userspace, and its maps are the
 * inner maps at that slot, created by userspace for each process with its
 * own sizes.  The definitions below are the inner maps' templates: an
 * inner map must have their type, key and value sizes and flags.  (Sizes,
 * not types: BTF holds only a declaration of a type met through two
 * pointers, and libbpf cannot size it.)
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RBM_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct proc_state);
} procs SEC(".maps");

/*
 * Tracked objects by address.  Preallocated (README: it saves ~150 ns an
 * allocation); the template is one entry, each process's map has
 * --max-objects: ~9 ms to create at the 65,536 of a several-process run.
 */
struct live_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* each process's own: --max-objects */
	__uint(key_size, sizeof(__u64));
	__uint(value_size, sizeof(struct live_object));
};

/*
 * Per-class counters: entries are made once per (class, path), allocated
 * as they come, which spares each attach preallocating every CPU's copy.
 */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__uint(key_size, sizeof(struct class_key));
	__uint(value_size, sizeof(struct class_counts));
};

/*
 * Deduplicated call paths, keyed by a hash of their frames, and the
 * receivers seen the first time each was stored.  Entries are added only
 * for new paths: a large --max-stacks costs memory only for the paths a
 * program has.  Values are cut to the run's depth by the loader.
 */
struct stacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536); /* --max-stacks */
	__uint(key_size, sizeof(__u64));
	__uint(value_size, sizeof(struct stack_frames));
};

struct selves_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536); /* --max-stacks */
	__uint(key_size, sizeof(__u64));
	__uint(value_size, sizeof(struct stack_selves));
};

/* Classes to capture stacks for (--class); empty means all.  1: capture, 0: skip. */
struct filter_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__uint(key_size, sizeof(__u64));
	__uint(value_size, sizeof(__u8));
};

/* Dead objects to delete (tracker.c): 256 KB, mmaped by userspace, one array per process. */
struct reap_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct reap_queue));
};

#define SLOT_MAPS(name, inner)                                  \
	struct {                                                \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);       \
		__uint(max_entries, RBM_MAX_SLOTS);             \
		__type(key, __u32);                             \
		__array(values, struct inner);                  \
	} name SEC(".maps")

SLOT_MAPS(live_maps, live_map);
SLOT_MAPS(counts_maps, counts_map);
/*
 * Where a class counts when class_counts is full of (class, path) pairs,
 * or when its on-demand entry could not be allocated (a loaded machine:
 * rubocop under load lost 12 that way): one entry per class, preallocated,
 * so that a class's count never depends on how many call paths the program
 * has nor on the allocator.  32768 classes that allocate are more than
 * large apps have; preallocating them per CPU takes ~40 ms at attach.
 * The template is one entry (the load would preallocate it whole too);
 * each process's has RBM_FALLBACK_CLASSES.
 */
struct fallback_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(struct class_key));
	__uint(value_size, sizeof(struct class_counts));
};

SLOT_MAPS(fallback_maps, fallback_map);
SLOT_MAPS(stacks_maps, stacks_map);
SLOT_MAPS(selves_maps, selves_map);
SLOT_MAPS(filter_maps, filter_map);
SLOT_MAPS(reap_maps, reap_map);

/* Scratch space per CPU, shared by every process. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_frames);
} stack_scratch SEC(".maps");

/* Control frames are read a chunk at a time; 512 bytes lets the size be masked for the verifier. */
struct cfp_chunk {
	__u64 words[64];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfp_chunk);
} cfp_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_selves);
} selves_scratch SEC(".maps");

struct object_header {
	__u64 flags;
	__u64 klass;
};

#define CFP_CHUNK 4    /* control frames read per bpf_probe_read_user */
#define CFP_WORDS 8    /* 64-byte frames (3.1); cfp_size may be smaller */
#define VM_FRAME_MAGIC_TOP 0x44440001
#define VM_FRAME_MAGIC_CFUNC 0x55550001
#define VM_FRAME_MAGIC_MASK 0x7fff0001
#define FRAME_SLOTS (MAX_STACK_DEPTH * 2)

/* The current thread's rb_execution_context_t, from libruby's TLS ruby_current_ec. */
static __always_inline __u64 current_ec(const struct stack_config *cfg)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
	__u64 dtv, block, ec;

	if (bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(fsbase + 8)) ||
	    bpf_probe_read_user(&block, sizeof(block), (void *)(dtv + 16 * cfg->tls_modid)) ||
	    bpf_probe_read_user(&ec, sizeof(ec), (void *)(block + cfg->ec_tls_offset)))
		return 0;
	return ec;
}

static __always_inline void push_frame(struct stack_frames *st, __u32 *n, __u64 *hash, __u64 a,
				       __u64 b)
{
	__u32 i = *n;

	if (i >= MAX_STACK_DEPTH)
		return;
	st->frames[(i * 2) & (FRAME_SLOTS - 1)] = a;
	st->frames[(i * 2 + 1) & (FRAME_SLOTS - 1)] = b;
	*hash = (*hash ^ a) * 0x100000001b3ULL;
	*hash = (*hash ^ b) * 0x100000001b3ULL;
	*n = i + 1;
}

struct walk {
	struct stack_config *cfg;
	struct stack_frames *st;
	struct stack_selves *selves;
	__u64 *buf;
	__u64 cfp;
	__u64 end;
	__u64 hash;
	__u32 n;
	__u32 words;
	__u32 failed;
	__u32 bump; /* an allocation's path: its innermost pc moved as Ruby's hook does (below) */
};

/* One chunk of control frames: verified once, run up to depth/CFP_CHUNK times by bpf_loop. */
static long walk_chunk(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	struct stack_config *cfg = w->cfg;
	__u64 left;
	__u32 size;
	int j;

	if (w->cfp >= w->end || w->n >= cfg->depth || !cfg->cfp_size)
		return 1;
	left = (w->end - w->cfp) / cfg->cfp_size;
	if (left > CFP_CHUNK)
		left = CFP_CHUNK;
	size = (left * cfg->cfp_size) & 0x1ff; /* <= 4 * 64 */
	if (left == 0 || bpf_probe_read_user(w->buf, size, (void *)w->cfp)) {
		w->failed = 1;
		return 1;
	}
	for (j = 0; j < CFP_CHUNK; j++) {
		__u32 base = j * w->words;
		__u64 pc, iseq, ep, env[3];

		if (j >= left || w->n >= cfg->depth)
			break;
		pc = w->buf[(base + cfg->cfp_pc / 8) & 63];
		iseq = w->buf[(base + cfg->cfp_iseq / 8) & 63];
		ep = w->buf[(base + cfg->cfp_ep / 8) & 63];
		w->cfp += cfg->cfp_size;
		/*
		 * The line of a frame is that of pc - 1: a caller's pc is past its
		 * call.  In 3.1 the allocating frame's pc is still on the
		 * allocating instruction when that one moves pc last ("leaf"
		 * instructions: literals, getblockparam), so Ruby's allocation
		 * hook (gc.c gc_event_hook_body) moves it one word on first, as
		 * here.  From 3.3 pc is past it already (checked on 3.3 and 3.4
		 * against ObjectSpace.allocation_sourceline).  A watched write is
		 * made by a call (opt_aset, opt_ltlt: never leaf), its pc past it.
		 */
		if (pc && iseq && i == 0 && j == 0 && cfg->bump_alloc_pc && w->bump)
			pc += 8;
		if (pc && iseq) {
			/* Free: the receiver is in the frame just read. */
			w->selves->self[w->n & (MAX_STACK_DEPTH - 1)] =
				w->buf[(base + cfg->cfp_self / 8) & 63];
			push_frame(w->st, &w->n, &w->hash, iseq, pc);
		} else if (!pc && ep && !bpf_probe_read_user(env, sizeof(env), (void *)(ep - 16))) {
			/* ep[-2] is the C method's callable method entry. */
			if ((env[2] & VM_FRAME_MAGIC_MASK) == VM_FRAME_MAGIC_CFUNC)
				push_frame(w->st, &w->n, &w->hash, env[0], 0);
			else if (iseq && (env[2] & VM_FRAME_MAGIC_MASK) == VM_FRAME_MAGIC_TOP)
				push_frame(w->st, &w->n, &w->hash, iseq, RBM_PC_NO_INSN);
		}
	}
	return 0;
}

/* A frame's receiver as its class: what outlives the receiver, for labels (Foo#bar). */
static __always_inline __u64 class_of_self(__u64 self)
{
	__u64 klass = 0;

	/* Immediates (Integer, Float, Symbol, nil, true, false) have no header. */
	if (!self || (self & 7) || self == 8 || self == 0x14)
		return RBM_IMMEDIATE_SELF | self;
	if (bpf_probe_read_user(&klass, sizeof(klass), (void *)(self + 8)))
		return 0;
	return klass;
}

static long self_to_class(__u32 i, void *ctx)
{
	struct stack_selves *selves = *(struct stack_selves **)ctx;
	__u64 *self = &selves->self[i & (MAX_STACK_DEPTH - 1)];

	*self = class_of_self(*self);
	return 0;
}

/*
 * New call paths, told to userspace as they are stored: their frames name
 * iseqs that a GC may free soon after (a required file's top level, a
 * class body), so they are named at once rather than at the next refresh.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} new_stacks SEC(".maps");

/* The sites of allocations whose path the full path map could not take (RBM_SITE_ONLY). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RBM_SITE_PATHS);
	__type(key, struct site_path_key);
	__type(value, struct site_path);
} site_paths SEC(".maps");

struct site_search {
	struct stack_frames *st;
	__u32 n;
	__s32 found; /* the innermost Ruby frame; -1: none */
};

static long find_site(__u32 i, void *ctx)
{
	struct site_search *ss = ctx;

	if (i >= ss->n)
		return 1;
	if (ss->st->frames[(i * 2 + 1) & (FRAME_SLOTS - 1)]) { /* a pc: a Ruby frame */
		ss->found = i;
		return 1;
	}
	return 0;
}

/* The path map is full: the allocation keeps its site, under an id of its own. */
static __always_inline __u64 store_site(struct proc_state *ps, __u32 slot, struct walk *w)
{
	struct site_search ss = {.st = w->st, .n = w->n, .found = -1};
	struct site_path_key key = {.slot = slot};
	struct site_path site;
	__u32 i;

	bpf_loop(MAX_STACK_DEPTH, find_site, &ss, 0);
	if (ss.found < 0)
		return 0;
	i = (__u32) ss.found & (MAX_STACK_DEPTH - 1);
	site.iseq = w->st->frames[(i * 2) & (FRAME_SLOTS - 1)];
	site.pc = w->st->frames[(i * 2 + 1) & (FRAME_SLOTS - 1)];
	site.self_class = class_of_self(w->selves->self[i]);
	key.id = ((site.iseq * 0x9e3779b97f4a7c15ULL) ^ site.pc) | RBM_SITE_ONLY;
	if (bpf_map_lookup_elem(&site_paths, &key))
		return key.id;
	if (bpf_map_update_elem(&site_paths, &key, &site, BPF_NOEXIST) == 0) {
		if (bpf_ringbuf_output(&new_stacks, &(struct new_stack_event){.slot = slot,
									     .stack_id = key.id},
				       sizeof(struct new_stack_event), 0))
			__sync_fetch_and_add(&ps->stacks_untold, 1);
		return key.id;
	}
	return bpf_map_lookup_elem(&site_paths, &key) ? key.id : 0;
}

/* The site of the path this CPU walked last (the scratch maps still hold it), stored. */
static __always_inline __u64 site_of_last_walk(struct proc_state *ps, __u32 slot)
{
	struct walk w = {};
	__u32 zero = 0;

	w.st = bpf_map_lookup_elem(&stack_scratch, &zero);
	w.selves = bpf_map_lookup_elem(&selves_scratch, &zero);
	if (!w.st || !w.selves)
		return 0;
	w.n = w.st->depth;
	return store_site(ps, slot, &w);
}

/*
 * Walks the Ruby control frames from the innermost outward, up to the depth
 * asked for, and stores the path once.  Returns its id (a hash), 0 on failure.
 * alloc: the path of an allocation (its innermost pc, see walk_chunk).
 */
static __always_inline __u64 capture_stack(struct proc_state *ps, __u32 slot, bool alloc)
{
	struct walk w = {.hash = 0xcbf29ce484222325ULL, .words = ps->stack_cfg.cfp_size / 8,
			 .bump = alloc};
	void *stacks = bpf_map_lookup_elem(&stacks_maps, &slot);
	void *selves = bpf_map_lookup_elem(&selves_maps, &slot);
	__u64 ec, vm_stack = 0, vm_stack_size = 0;
	__u32 zero = 0;

	w.cfg = &ps->stack_cfg;
	w.st = bpf_map_lookup_elem(&stack_scratch, &zero);
	w.buf = bpf_map_lookup_elem(&cfp_scratch, &zero);
	w.selves = bpf_map_lookup_elem(&selves_scratch, &zero);
	ec = current_ec(&ps->stack_cfg);
	/* Each field at its offset: an index into a copy would be a variable stack read. */
	if (!stacks || !selves || !w.st || !w.buf || !w.selves || !ec || w.words == 0 ||
	    w.words > CFP_WORDS ||
	    bpf_probe_read_user(&w.cfp, sizeof(w.cfp), (void *)(ec + ps->stack_cfg.ec_cfp)) ||
	    bpf_probe_read_user(&vm_stack, sizeof(vm_stack),
				(void *)(ec + ps->stack_cfg.ec_vm_stack)) ||
	    bpf_probe_read_user(&vm_stack_size, sizeof(vm_stack_size),
				(void *)(ec + ps->stack_cfg.ec_vm_stack_size))) {
		__sync_fetch_and_add(&ps->stack_errors, 1);
		return 0;
	}
	/* The last frame at the top of the VM stack is a dummy. */
	w.end = vm_stack + vm_stack_size * 8 - ps->stack_cfg.cfp_size;
	bpf_loop(MAX_STACK_DEPTH / CFP_CHUNK + 1, walk_chunk, &w, 0);
	if (w.failed)
		__sync_fetch_and_add(&ps->stack_errors, 1);
	if (!w.n)
		return 0;
	w.st->depth = w.n;
	w.st->truncated = w.cfp < w.end;
	if (w.st->truncated)
		__sync_fetch_and_add(&ps->stacks_truncated, 1);
	w.hash ^= w.st->truncated;
	w.hash &= ~RBM_SITE_ONLY;
	if (!w.hash)
		w.hash = 1;
	/* Most paths are known: a lookup takes no lock, an update would. */
	if (bpf_map_lookup_elem(stacks, &w.hash))
		return w.hash;
	if (bpf_map_update_elem(stacks, &w.hash, w.st, BPF_NOEXIST) == 0) {
		/* A new path, so off the common path: receivers die, their classes stay. */
		bpf_loop(w.n, self_to_class, &w.selves, 0);
		bpf_map_update_elem(selves, &w.hash, w.selves, BPF_NOEXIST);
		__sync_fetch_and_add(&ps->stacks_stored, 1);
		if (bpf_ringbuf_output(&new_stacks, &(struct new_stack_event){.slot = slot,
									     .stack_id = w.hash},
				       sizeof(struct new_stack_event), 0))
			__sync_fetch_and_add(&ps->stacks_untold, 1);
	} else if (!bpf_map_lookup_elem(stacks, &w.hash)) {
		__sync_fetch_and_add(&ps->stacks_dropped, 1);
		return store_site(ps, slot, &w);
	}
	return w.hash;
}

static __always_inline bool wants_stack(struct proc_state *ps, __u32 slot, __u64 klass)
{
	void *filter;
	__u8 *capture;

	if (!ps->stack_cfg.depth)
		return false;
	if (!ps->filter_classes)
		return true;
	filter = bpf_map_lookup_elem(&filter_maps, &slot);
	capture = filter ? bpf_map_lookup_elem(filter, &klass) : NULL;
	/* Unknown classes are captured until userspace has named them. */
	return !capture || *capture;
}

/* The counters of key, created at zero if new; NULL when the table is full. */
static __always_inline struct class_counts *class_counts_of(void *map, struct class_key *key)
{
	struct class_counts zero = {}, *counts = bpf_map_lookup_elem(map, key);

	if (counts)
		return counts;
	bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* The last compaction's moves were followed: compact_followed_at is its count + 1. */
static __always_inline bool compactions_followed(struct proc_state *ps)
{
	__u64 count;

	return ps->compact_count_addr &&
	       !bpf_probe_read_user(&count, sizeof(count), (void *)ps->compact_count_addr) &&
	       ps->compact_followed_at == count;
}

/* The object tracked at obj's address is gone from it: moved or died, nobody knows which. */
static __always_inline void count_not_followed(void *live_objects, void *class_counts, __u64 obj)
{
	struct live_object *old = bpf_map_lookup_elem(live_objects, &obj);
	struct class_key old_key = {};
	struct class_counts *old_counts;

	if (!old)
		return;
	old_key.klass = old->klass;
	old_key.stack_id = old->stack_id;
	old_key.kind = old->kind;
	old_counts = bpf_map_lookup_elem(class_counts, &old_key);
	if (old_counts)
		old_counts->not_followed++;
}

/*
 * An allocation a window does not record still says that the object
 * tracked at its address is gone: it died (or a compaction not followed
 * moved it).  Forgotten now, exactly, where a pass would have to tell the
 * newcomer by its age, which a young object an old one points to loses at
 * its first GC (made old at once): kept Strings in a churned String's slot
 * passed for it.
 */
static __always_inline void forget_replaced(struct proc_state *ps, __u32 slot, __u64 obj)
{
	void *live_objects = bpf_map_lookup_elem(&live_maps, &slot);
	void *class_counts = bpf_map_lookup_elem(&counts_maps, &slot);

	if (!live_objects || !class_counts || !obj)
		return;
	if (ps->compaction_pending && !compactions_followed(ps))
		count_not_followed(live_objects, class_counts, obj);
	bpf_map_delete_elem(live_objects, &obj);
}

/*
 * After the trace's end, a new object in a tracked slot says when the
 * tracked one was freed: by the GC under way at the end (it was dead at
 * the end), or by a later one.  The final pass, which reads the target
 * after the end, would otherwise read the newcomer as the tracked object.
 */
static __always_inline void mark_taken_after_end(struct proc_state *ps, __u32 slot, __u64 obj)
{
	void *live_objects = bpf_map_lookup_elem(&live_maps, &slot);
	struct live_object *tracked;
	__u64 count = 0;

	if (!live_objects || !obj || !ps->gc_count_addr)
		return;
	tracked = bpf_map_lookup_elem(live_objects, &obj);
	if (!tracked || (tracked->seq & RBM_SEQ_END_BITS) ||
	    bpf_probe_read_user(&count, sizeof(count), (void *)ps->gc_count_addr))
		return;
	tracked->seq |= count == ps->frozen_gc_count ? RBM_SEQ_GONE_AT_END : RBM_SEQ_LIVED_TO_END;
}

/* The key an object's header gives: its type (and imemo kind), its class. */
static __always_inline void key_of_header(const struct object_header *hdr, struct class_key *key)
{
	__u32 type = hdr->flags & RB_T_MASK;

	if (type == RB_T_IMEMO) {
		key->kind = RBM_KIND(type, (hdr->flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK);
	} else if (type == RB_T_ICLASS) {
		/* Its class slot is set to the module only after allocation: keyed by kind. */
		key->kind = type;
	} else {
		key->kind = type;
		key->klass = hdr->klass;
	}
}

/*
 * The counts of (class, path).  No entry for it: the table is full, or its
 * entry could not be allocated (entries come as they are needed, and in a
 * burst of new paths the kernel's per-CPU caches can run dry until they
 * refill).  The allocation keeps its site, in the preallocated per-class
 * table, and failing that the class still counts, without its path
 * (key->stack_id then 0).  NULL: not even that.
 */
static __always_inline struct class_counts *counts_of_key(struct proc_state *ps, __u32 slot,
							  void *class_counts, struct class_key *key)
{
	struct class_counts *counts = class_counts_of(class_counts, key);
	void *fallback;

	if (counts)
		return counts;
	fallback = bpf_map_lookup_elem(&fallback_maps, &slot);
	if (key->stack_id) {
		__sync_fetch_and_add(&ps->stacks_dropped, 1);
		if (!(key->stack_id & RBM_SITE_ONLY))
			key->stack_id = site_of_last_walk(ps, slot);
		if (key->stack_id && fallback)
			counts = class_counts_of(fallback, key);
	}
	key->stack_id = counts ? key->stack_id : 0;
	if (!counts && fallback)
		counts = class_counts_of(fallback, key);
	return counts;
}

/* The tracked object's entry: its key, seq (born while a GC marked?) and Ruby's GC count. */
static __always_inline void live_entry(struct proc_state *ps, const struct class_key *key,
				       __u64 seq, struct live_object *live)
{
	live->klass = key->klass;
	live->kind = key->kind;
	live->seq = seq;
	live->stack_id = key->stack_id;
	/* Ruby's own GC count, not a probe's: it ages objects with or without USDT. */
	live->gc_epoch = 0;
	/* The phase before the count: a GC that begins between them is one it was born before. */
	if (ps->gc_flags_addr) {
		__u32 flags = 0;

		if (!bpf_probe_read_user(&flags, sizeof(flags), (void *) ps->gc_flags_addr) &&
		    ((flags & ps->gc_mode_mask) == 1 || (flags & ps->gc_incremental)))
			live->seq |= RBM_SEQ_BORN_MARKING;
	}
	if (ps->gc_count_addr)
		bpf_probe_read_user(&live->gc_epoch, sizeof(live->gc_epoch),
				    (void *) ps->gc_count_addr);
}

static __always_inline void track(struct proc_state *ps, __u32 slot, __u64 obj, __u64 seq)
{
	void *live_objects = bpf_map_lookup_elem(&live_maps, &slot);
	void *class_counts = bpf_map_lookup_elem(&counts_maps, &slot);
	struct object_header hdr;
	struct class_key key = {};
	struct class_counts *counts;
	struct live_object live;

	if (!live_objects || !class_counts)
		return;
	if (!obj || bpf_probe_read_user(&hdr, sizeof(hdr), (void *) obj)) {
		__sync_fetch_and_add(&ps->header_read_errors, 1);
		return;
	}
	key_of_header(&hdr, &key);
	if (key.klass && wants_stack(ps, slot, key.klass))
		key.stack_id = capture_stack(ps, slot, true);
	counts = counts_of_key(ps, slot, class_counts, &key);
	if (!counts) {
		__sync_fetch_and_add(&ps->class_overflow, 1);
		return;
	}
	counts->allocated++;
	counts->weight += ps->win_weight;
	counts->window_bits |= ps->win_bit;
	/*
	 * After a compaction whose moves were not followed (no
	 * rb_gc_update_tbl_refs probe), a tracked object's old slot may be
	 * reused before userspace has checked it: the object moved or died,
	 * nobody knows which.  Count it rather than let the overwrite call it
	 * freed.  When every move was followed, the object there died.
	 */
	if (ps->compaction_pending && !compactions_followed(ps))
		count_not_followed(live_objects, class_counts, obj);
	live_entry(ps, &key, seq, &live);
	/* An existing entry at this address is an object GC already freed. */
	if (bpf_map_update_elem(live_objects, &obj, &live, BPF_ANY))
		counts->untracked++;
}

/*
 * One hit in 16 times the program: what the sampler charges the target
 * for each hit is the trap, timed at start-up, plus this.  Two clock reads
 * per 16 hits (they cost ~0.2 us each here) stay out of the common path;
 * a window with a thin recorded share still has a few timed.  Tracing
 * every allocation needs no timing: one in 64, for -v.
 */
#define TIMED_HIT_MASK 15
#define TIMED_HIT_MASK_FULL 63

#define MAX_POOLS 8

/* One of GC.stat's totals: one counter at addr, or the sum over the size pools (3.2+). */
static __always_inline int read_pooled(struct proc_state *ps, __u64 addr, __u64 *total)
{
	__u64 v;
	int i;

	*total = 0;
	for (i = 0; i < MAX_POOLS; i++) {
		if (i > 0 && i >= ps->alloc_count_pools)
			break;
		if (bpf_probe_read_user(&v, sizeof(v),
					(void *)(addr + (__u64)i * ps->alloc_count_stride)))
			return -1;
		*total += v;
	}
	return 0;
}

/* GC.stat's total_allocated_objects. */
static __always_inline int read_alloc_count(struct proc_state *ps, __u64 *total)
{
	return read_pooled(ps, ps->alloc_count_addr, total);
}

/*
 * Whether the open window records this hit: its stream position is in the
 * covered stretch, and it falls in the share recorded.  The first hit
 * fixes where the stretch begins: where the stream is when the probes are
 * on, or, if it came after an idle, at the start of that burst, which the
 * window then covers up to the next idle.
 */
static __always_inline bool window_records(struct proc_state *ps)
{
	__u64 pos = 0, first, begin, now = 0;

	if (ps->alloc_count_addr) {
		if (read_alloc_count(ps, &pos)) {
			__sync_fetch_and_add(&ps->stream_read_errors, 1);
			return false;
		}
	} else {
		pos = __sync_fetch_and_add(&ps->stream_hits, 1) + 1;
	}
	first = ps->win_first;
	if (!first) {
		now = bpf_ktime_get_ns();
		if (__sync_val_compare_and_swap(&ps->win_first, 0, pos) == 0) {
			if (pos >= ps->win_start && now - ps->win_open_ns > ps->win_idle_ns)
				ps->win_burst = 1;
			ps->win_last_ns = now;
			ps->win_last_nvcsw = BPF_CORE_READ(bpf_get_current_task_btf(), nvcsw);
		}
		first = ps->win_first;
	}
	if (ps->win_done)
		return false;
	/*
	 * A burst ends where the target idles: a long gap in which it blocked
	 * of its own accord (a sleep, a read).  A GC, or a machine too busy
	 * to run it, is no idle: the thread did not block.
	 */
	if (ps->win_burst) {
		__u64 nvcsw = BPF_CORE_READ(bpf_get_current_task_btf(), nvcsw);

		if (!now)
			now = bpf_ktime_get_ns();
		if (now - ps->win_last_ns > ps->win_idle_ns && nvcsw != ps->win_last_nvcsw) {
			ps->win_done = 1;
			return false;
		}
		ps->win_last_ns = now;
		ps->win_last_nvcsw = nvcsw;
	}
	ps->win_last = pos;
	begin = first > ps->win_start ? first : ps->win_start;
	if (pos < begin || pos - begin >= ps->win_len)
		return false;
	if (ps->win_sample && bpf_get_prandom_u32() >= ps->win_sample)
		return false;
	__sync_fetch_and_add(&ps->win_recorded, 1);
	return true;
}

static void reap_pending(__u32 slot);

/*
 * The first argument at entry of a probe whose object is stored through
 * it, by thread.  The entry program shares the uretprobe's breakpoint (a
 * uretprobe traps at the entry too), so it costs no trap of its own.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);   /* pid_tgid */
	__type(value, __u64); /* the VALUE * to read at return */
} alloc_stores SEC(".maps");

static __always_inline int remember_store(__u64 store)
{
	__u64 thread = bpf_get_current_pid_tgid();

	bpf_map_update_elem(&alloc_stores, &thread, &store, BPF_ANY);
	return 0;
}

/* What the returning function stored for this thread; 0 if unknown. */
static __always_inline __u64 stored_object(void)
{
	__u64 thread = bpf_get_current_pid_tgid(), *store, obj = 0;

	store = bpf_map_lookup_elem(&alloc_stores, &thread);
	if (!store || bpf_probe_read_user(&obj, sizeof(obj), (void *)*store))
		obj = 0;
	bpf_map_delete_elem(&alloc_stores, &thread);
	return obj;
}

static __always_inline int record_allocation(struct pt_regs *ctx, __u64 obj)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 probe = cookie & (MAX_ALLOC_PROBES - 1);
	__u32 slot = RBM_COOKIE_SLOT(cookie);
	struct proc_state *ps = bpf_map_lookup_elem(&procs, &slot);
	__u64 hit, start = 0;

	if (!ps)
		return 0;
	hit = __sync_fetch_and_add(&ps->probe_hits[probe], 1);
	if (cookie & RBM_COOKIE_FROM_STORE)
		obj = stored_object();
	/*
	 * Counted only between Ruby's counters read at the start and at the
	 * end, so that what is counted is what Ruby counted over the trace.
	 * The probes take a while to come off: the final counts must not move
	 * meanwhile.
	 */
	if (!ps->counting)
		return 0;
	if (ps->frozen) {
		mark_taken_after_end(ps, slot, obj);
		return 0;
	}
	/*
	 * The probes go on and come off one after another: outside the span
	 * where all are on, counting would over-sample the last ones.
	 */
	if (ps->sampling && !ps->window_open) {
		forget_replaced(ps, slot, obj);
		return 0;
	}
	if ((hit & (ps->sampling ? TIMED_HIT_MASK : TIMED_HIT_MASK_FULL)) == 0)
		start = bpf_ktime_get_ns();
	if (ps->reap_at_alloc)
		reap_pending(slot);
	if (ps->sampling && !window_records(ps)) {
		forget_replaced(ps, slot, obj);
		if (start) {
			__sync_fetch_and_add(&ps->skip_ns, bpf_ktime_get_ns() - start);
			__sync_fetch_and_add(&ps->skip_timed, 1);
		}
		return 0;
	}
	/* The probe and its hit count tell two objects born at one address apart. */
	track(ps, slot, obj, probe << 56 | hit);
	if (start) {
		__sync_fetch_and_add(&ps->program_ns, bpf_ktime_get_ns() - start);
		__sync_fetch_and_add(&ps->program_timed, 1);
	}
	return 0;
}

/*
 * A child the target forks starts with a copy of its breakpoints, and the
 * uprobe_multi link's consumers never ask the kernel to take one out of a
 * process they filter out: the child would trap on every allocation.  Each
 * such fork is told to userspace, which then attaches and takes off a
 * do-nothing link on the same functions: taking a consumer off makes the
 * kernel remove the breakpoints from every process no consumer left wants.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} forks SEC(".maps");

/* Traced processes whose forks are told: tgid -> slot. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RBM_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} fork_slots SEC(".maps");

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	struct fork_event ev = {};
	__u32 tgid = parent->tgid, *slot;

	/* A thread, or a vfork child sharing the memory, has the target's breakpoints by right. */
	if (child->mm == parent->mm)
		return 0;
	slot = bpf_map_lookup_elem(&fork_slots, &tgid);
	if (!slot)
		return 0;
	ev.child = child->tgid;
	ev.parent = tgid;
	ev.slot = *slot;
	bpf_ringbuf_output(&forks, &ev, sizeof(ev), 0);
	return 0;
}

/* The do-nothing link (an entry uprobe_multi: the loader sets the attach type). */
SEC("uprobe")
int on_alloc_sweep(void *ctx)
{
	return 0;
}

/* One uretprobe per allocation function (perf-event links). */
SEC("uretprobe")
int BPF_KRETPROBE(on_alloc_return, __u64 obj) /* libbpf 1.1 has no BPF_URETPROBE */
{
	return record_allocation(ctx, obj);
}

/*
 * The same as one uprobe_multi link (kernel 6.6+; the loader sets the attach
 * type, which libbpf 1.1 does not know): taking it off removes every
 * breakpoint before the one RCU wait, where ten perf links wait ten times.
 */
SEC("uretprobe")
int BPF_KRETPROBE(on_alloc_return_multi, __u64 obj)
{
	return record_allocation(ctx, obj);
}

/* Entry of a function that stores its object through its first argument (perf link). */
SEC("uprobe")
int BPF_KPROBE(on_alloc_store_entry, __u64 store)
{
	return remember_store(store);
}

/* The same as a uprobe_multi link (the loader sets the attach type). */
SEC("uprobe")
int BPF_KPROBE(on_alloc_store_entry_multi, __u64 store)
{
	return remember_store(store);
}

/*
 * Benchmark baselines (--empty-probes): the bare cost of the trap at the same
 * functions, against which the tracer's own cost per allocation is measured.
 */
SEC("uprobe")
int on_alloc_entry_empty(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int on_alloc_return_empty(void *ctx)
{
	return 0;
}

struct reap_ctx {
	__u32 slot;
	__u64 reaped;
};

static long reap_one(__u32 i, void *ctx)
{
	struct reap_ctx *rc = ctx;
	void *live_objects = bpf_map_lookup_elem(&live_maps, &rc->slot);
	void *reaps = bpf_map_lookup_elem(&reap_maps, &rc->slot);
	struct reap_queue *reap;
	struct live_object *live;
	__u32 zero = 0;
	__u64 addr;

	if (i >= REAP_MAX || !live_objects || !reaps)
		return 1;
	reap = bpf_map_lookup_elem(reaps, &zero);
	if (!reap)
		return 1;
	/* Checked above, in a register the compiler may not reuse: the verifier must see it. */
	barrier_var(i);
	i &= REAP_MAX - 1;
	addr = reap->addr[i];
	live = bpf_map_lookup_elem(live_objects, &addr);
	if (live && live->seq == reap->seq[i] && !bpf_map_delete_elem(live_objects, &addr))
		rc->reaped++;
	return 0;
}

static void reap_pending(__u32 slot)
{
	struct proc_state *ps = bpf_map_lookup_elem(&procs, &slot);
	void *reaps = bpf_map_lookup_elem(&reap_maps, &slot);
	struct reap_ctx rc = {.slot = slot};
	struct reap_queue *reap;
	__u32 zero = 0, len;

	if (!ps || !reaps)
		return;
	reap = bpf_map_lookup_elem(reaps, &zero);
	if (!reap)
		return;
	len = *(volatile __u32 *)&reap->len;
	if (!len)
		return;
	bpf_loop(len > REAP_MAX ? REAP_MAX : len, reap_one, &rc, 0);
	__sync_fetch_and_add(&ps->reaped, rc.reaped);
	*(volatile __u32 *)&reap->len = 0;
}

/* The GC and compaction probes' slot: their USDT or attach cookie. */
static __always_inline struct proc_state *usdt_state(struct pt_regs *ctx, __u32 *slot)
{
	*slot = bpf_usdt_cookie(ctx) & (RBM_MAX_SLOTS - 1);
	return bpf_map_lookup_elem(&procs, slot);
}

SEC("usdt")
int BPF_USDT(on_gc_mark_begin)
{
	__u32 slot = bpf_usdt_cookie(ctx) & (RBM_MAX_SLOTS - 1);

	reap_pending(slot);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_mark_end)
{
	__u32 slot;
	struct proc_state *ps = usdt_state(ctx, &slot);

	if (ps)
		__sync_fetch_and_add(&ps->gc_runs, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_sweep_begin)
{
	__u32 slot = bpf_usdt_cookie(ctx) & (RBM_MAX_SLOTS - 1);

	reap_pending(slot);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_sweep_end)
{
	__u32 slot;
	struct proc_state *ps = usdt_state(ctx, &slot);
	__u64 count;

	if (!ps)
		return 0;
	__sync_fetch_and_add(&ps->sweep_steps, 1);
	if (ps->compact_count_addr &&
	    !bpf_probe_read_user(&count, sizeof(count), (void *)ps->compact_count_addr) &&
	    count != ps->compact_count_seen) {
		ps->compact_count_seen = count;
		ps->compaction_pending = 1;
	}
	return 0;
}

/* The classes compactions moved, until userspace has taken each (struct class_move_key). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RBM_CLASS_MOVES);
	__type(key, struct class_move_key);
	__type(value, __u64); /* where the class went */
} class_moves SEC(".maps");

struct follow_ctx {
	__u64 followed;
	__u64 lost;
	__u32 slot;
	__u32 compaction; /* compact_count + 1, low 32 bits */
	/*
	 * Counts go to ps, not here: a counter of the stack that a callback
	 * tests would keep the verifier from merging its iterations' states.
	 */
	struct proc_state *ps;
	__u64 moved_before; /* ps->classes_moved before this compaction */
	__u64 class_from;   /* the last class looked up, and where it is now */
	__u64 class_to;
};

/*
 * A tracked object's class moved at this compaction: its klass (its
 * tally's key) becomes the class's new address, as its counts did.
 * One lookup per run of entries of the same class.
 */
static __always_inline void follow_class(struct follow_ctx *fc, struct live_object *obj)
{
	struct class_move_key key = {.slot = fc->slot, .compaction = fc->compaction};
	__u64 *to;

	if (fc->ps->classes_moved == fc->moved_before || !obj->klass)
		return;
	if (obj->klass != fc->class_from) {
		key.from = obj->klass;
		to = bpf_map_lookup_elem(&class_moves, &key);
		fc->class_from = obj->klass;
		fc->class_to = to ? *to : obj->klass;
	}
	obj->klass = fc->class_to;
}

static long follow_one(struct bpf_map *map, __u64 *addr, struct live_object *obj, void *ctx)
{
	struct follow_ctx *fc = ctx;
	__u64 hdr[3];

	follow_class(fc, obj);
	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)*addr) || (hdr[0] & RB_T_MASK) != RB_T_MOVED)
		return 0;
	/* A T_MOVED slot holds the object's new address after its header. */
	obj->seq |= RBM_SEQ_MOVED;
	if (hdr[2] && !bpf_map_update_elem(map, &hdr[2], obj, BPF_ANY))
		fc->followed++;
	else
		fc->lost++;
	bpf_map_delete_elem(map, addr);
	return 0;
}

static __always_inline struct proc_state *cookie_state(void *ctx, __u32 *slot)
{
	*slot = bpf_get_attach_cookie(ctx) & (RBM_MAX_SLOTS - 1);
	return bpf_map_lookup_elem(&procs, slot);
}

struct moved_scan {
	void *live;
	struct proc_state *ps;
	__u64 sorted;
	__u64 start;
	__u32 slot_size;
	__u64 removed;
	bool failed;
};

/* One slot: a forwarding slot's destination took a moved object, so what was tracked there died. */
static long scan_slot(__u32 j, void *ctx)
{
	struct moved_scan *sc = ctx;
	struct live_object *there;
	__u64 hdr[3];

	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)(sc->start + (__u64)j * sc->slot_size))) {
		sc->failed = true;
		return 1;
	}
	if ((hdr[0] & RB_T_MASK) != RB_T_MOVED || !hdr[2])
		return 0;
	there = bpf_map_lookup_elem(sc->live, &hdr[2]);
	/* An entry a past compaction moved there is its live object (RBM_SEQ_MOVED). */
	if (there && !(there->seq & RBM_SEQ_MOVED) && !bpf_map_delete_elem(sc->live, &hdr[2]))
		sc->removed++;
	return 0;
}

static long scan_page(__u32 i, void *ctx)
{
	struct moved_scan *sc = ctx;
	struct proc_state *ps = sc->ps;
	__u64 page;
	__u16 total = 0, size = ps->heap_slot_size;

	if (bpf_probe_read_user(&page, sizeof(page), (void *)(sc->sorted + (__u64)i * 8)) ||
	    bpf_probe_read_user(&sc->start, sizeof(sc->start), (void *)(page + ps->page_start_off)) ||
	    bpf_probe_read_user(&total, sizeof(total),
				(void *)(page + ps->page_total_slots_off)) ||
	    (ps->page_slot_size_off &&
	     bpf_probe_read_user(&size, sizeof(size), (void *)(page + ps->page_slot_size_off)))) {
		sc->failed = true;
		return 1;
	}
	if (total > ps->page_max_slots || size < ps->heap_slot_size) {
		sc->failed = true;
		return 1;
	}
	sc->slot_size = size;
	bpf_loop(total, scan_slot, sc, 0);
	return sc->failed;
}

/*
 * Every slot of the heap, for forwarding slots (T_MOVED): their destination
 * was a free slot, so a tracked entry there is a dead object's, and goes
 * (counted freed) before the moved entries are re-keyed.  One 24-byte read
 * per slot, inside a compaction that has stopped the world and touched
 * every object already; timed, for the sampler's budget.
 */
static void drop_moved_over(struct proc_state *ps, void *live_objects)
{
	struct moved_scan sc = {.live = live_objects, .ps = ps};
	__u64 t0 = bpf_ktime_get_ns(), npages = 0;

	if (!ps->heap_sorted_addr || !ps->heap_slot_size ||
	    bpf_probe_read_user(&sc.sorted, sizeof(sc.sorted), (void *)ps->heap_sorted_addr) ||
	    !sc.sorted)
		return;
	if (ps->heap_npages_addr) {
		if (bpf_probe_read_user(&npages, sizeof(npages), (void *)ps->heap_npages_addr))
			return;
	} else {
		if (bpf_probe_read_user(&npages, sizeof(npages), (void *)sc.sorted))
			return;
		sc.sorted += ps->heap_darray_data;
	}
	if (npages > (1 << 20))
		npages = 1 << 20;
	bpf_loop(npages, scan_page, &sc, 0);
	ps->moved_over += sc.removed;
	if (sc.failed)
		ps->compaction_scan_failed++;
	ps->compaction_scan_ns += bpf_ktime_get_ns() - t0;
}

/* One CPU's counters of a re-keyed entry, added to its new key's. */
struct rekey_ctx {
	struct bpf_map *from_map;
	void *to_map;
	struct class_key *from;
	struct class_key *to;
};

static long rekey_cpu(__u32 cpu, void *ctx)
{
	struct rekey_ctx *rc = ctx;
	struct class_counts *src = bpf_map_lookup_percpu_elem(rc->from_map, rc->from, cpu);
	struct class_counts *dst = bpf_map_lookup_percpu_elem(rc->to_map, rc->to, cpu);

	if (!src || !dst)
		return 1; /* past the last possible CPU */
	dst->allocated += src->allocated;
	dst->weight += src->weight;
	dst->untracked += src->untracked;
	dst->not_followed += src->not_followed;
	dst->window_bits |= src->window_bits;
	return 0;
}

/* Where the counted class at klass went, if this compaction moved it (0: it did not). */
static __always_inline __u64 class_moved_to(__u64 klass)
{
	__u64 hdr[3], flags, type;

	if (!klass || bpf_probe_read_user(hdr, sizeof(hdr), (void *)klass) ||
	    (hdr[0] & RB_T_MASK) != RB_T_MOVED || !hdr[2] ||
	    bpf_probe_read_user(&flags, sizeof(flags), (void *)hdr[2]))
		return 0;
	type = flags & RB_T_MASK;
	/* A freed class's slot may hold any object since: only a class's move is its class's. */
	if (type != RB_T_CLASS && type != RB_T_MODULE && type != RB_T_ICLASS)
		return 0;
	return hdr[2];
}

#define RBM_MAX_CPUS 8192

/*
 * One counted (class, path) whose class this compaction moved: its
 * counters go to the key of the class's new address (made in the same
 * map, else in the fallback map), the move is told, the old key deleted.
 */
static long rekey_class(struct bpf_map *map, struct class_key *ck, void *value, void *ctx)
{
	struct follow_ctx *fc = ctx;
	struct class_move_key mk = {.slot = fc->slot, .compaction = fc->compaction, .from = ck->klass};
	struct class_key to = *ck;
	struct class_counts zero = {};
	struct rekey_ctx rc = {.from_map = map, .from = ck, .to = &to};
	void *fallback;
	__u32 slot = fc->slot;

	to.klass = class_moved_to(ck->klass);
	if (!to.klass)
		return 0;
	rc.to_map = map;
	if (bpf_map_update_elem(map, &to, &zero, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(map, &to)) {
		fallback = bpf_map_lookup_elem(&fallback_maps, &slot);
		rc.to_map = fallback;
		if (!fallback || (bpf_map_update_elem(fallback, &to, &zero, BPF_NOEXIST) &&
				  !bpf_map_lookup_elem(fallback, &to)))
			rc.to_map = NULL;
	}
	if (!rc.to_map || bpf_map_update_elem(&class_moves, &mk, &to.klass, BPF_ANY)) {
		__sync_fetch_and_add(&fc->ps->class_moves_lost, 1);
		return 0;
	}
	bpf_loop(RBM_MAX_CPUS, rekey_cpu, &rc, 0);
	bpf_map_delete_elem(map, ck);
	__sync_fetch_and_add(&fc->ps->classes_moved, 1);
	return 0;
}

/*
 * The classes counted that this compaction moved: their counts re-keyed
 * before their objects are followed (follow_class).  A class's old slot
 * forwards (T_MOVED) until the compaction ends, like any object's.
 */
static __always_inline void rekey_moved_classes(struct proc_state *ps, struct follow_ctx *fc)
{
	__u32 slot = fc->slot;
	void *counts = bpf_map_lookup_elem(&counts_maps, &slot);
	void *fallback = bpf_map_lookup_elem(&fallback_maps, &slot);

	__u64 t0 = bpf_ktime_get_ns();

	fc->ps = ps;
	fc->moved_before = ps->classes_moved;
	if (counts)
		bpf_for_each_map_elem(counts, rekey_class, fc, 0);
	if (fallback)
		bpf_for_each_map_elem(fallback, rekey_class, fc, 0);
	/* One read per counted (class, path): the target pays it, the sampler charges it. */
	ps->compaction_scan_ns += bpf_ktime_get_ns() - t0;
}

/*
 * rb_gc_update_tbl_refs runs only inside a compaction, after every object
 * has moved and before any forwarding slot is freed: the one moment every
 * tracked object that moved can be followed.  It runs a few times per
 * compaction; the counter, not yet bumped, tells the first.
 */
SEC("uprobe")
int on_gc_update_refs(void *ctx)
{
	struct follow_ctx fc = {};
	struct proc_state *ps;
	void *live_objects;
	__u64 count;
	__u32 slot;

	ps = cookie_state(ctx, &slot);
	live_objects = bpf_map_lookup_elem(&live_maps, &slot);
	if (!ps || !live_objects)
		return 0;
	__sync_fetch_and_add(&ps->compaction_probe_hits, 1);
	if (!ps->compact_count_addr ||
	    bpf_probe_read_user(&count, sizeof(count), (void *)ps->compact_count_addr) ||
	    ps->compact_followed_at == count + 1)
		return 0;
	ps->compact_followed_at = count + 1;
	/* Without the sweep probe (no USDT), the compaction is known here. */
	if (ps->reap_at_alloc)
		ps->compaction_pending = 1;
	drop_moved_over(ps, live_objects);
	fc.slot = slot;
	fc.compaction = (__u32)(count + 1);
	rekey_moved_classes(ps, &fc);
	bpf_for_each_map_elem(live_objects, follow_one, &fc, 0);
	/* Its class moves are no longer looked up: userspace may take them. */
	*(volatile __u64 *)&ps->classes_followed_at = count + 1;
	ps->moved_followed += fc.followed;
	ps->moved_lost += fc.lost;
	return 0;
}

/*
 * Processes that stop themselves at our request (launch mode, the exec
 * watch): pid -> 1 from the stop until userspace lets it go.  A watchdog
 * process holds this map and continues every pid still in it if we die
 * (exec_watch.c), so no stop outlives the tracer.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} held SEC(".maps");

static __always_inline void hold_self(__u32 pid)
{
	__u32 one = 1;

	bpf_map_update_elem(&held, &pid, &one, BPF_ANY);
	bpf_send_signal(SIGSTOP);
}

/* The exec watch (--all, --match) and launch mode's following of a wrapper. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} execs SEC(".maps");

/* Executables judged by userspace, by inode: enum exe_verdict. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct exe_key);
	__type(value, __u32);
} exe_verdicts SEC(".maps");

/* Processes that exec'd a Ruby: pid -> enum candidate_state.  LRU: the dead leave by themselves. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} candidates SEC(".maps");

/* Launch mode's command while it has not exec'd Ruby: each exec stops it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} followed SEC(".maps");

/* Set by userspace: every exec is judged (--all, --match); else only followed ones. */
__u32 watch_execs;

static __always_inline void tell_exec(__u32 kind, __u32 pid, const struct exe_key *exe)
{
	struct exec_event ev = {.kind = kind, .pid = pid, .at_ns = bpf_ktime_get_ns()};

	if (exe)
		ev.exe = *exe;
	bpf_ringbuf_output(&execs, &ev, sizeof(ev), 0);
}

/*
 * The cost for every exec on the machine: the new file's inode read and at
 * most two hash lookups; a file judged not Ruby goes no further.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct exe_key key = {};
	__u32 pid = p->tgid, *v, undecided = CAND_UNDECIDED;
	struct inode *inode = bprm->file->f_inode;

	/* binfmt_script has run: this is the interpreter's file, not the script's. */
	key.ino = inode->i_ino;
	key.dev = inode->i_sb->s_dev;
	if (bpf_map_lookup_elem(&followed, &pid)) {
		/* Before its first instruction: not even the dynamic loader has run. */
		hold_self(pid);
		tell_exec(EXEC_FOLLOWED, pid, &key);
		return 0;
	}
	if (!watch_execs)
		return 0;
	v = bpf_map_lookup_elem(&exe_verdicts, &key);
	if (v && *v == EXE_NOT_RUBY)
		return 0;
	if (v)
		bpf_map_update_elem(&candidates, &pid, &undecided, BPF_ANY);
	tell_exec(v ? EXEC_RUBY : EXEC_UNKNOWN, pid, &key);
	return 0;
}

/* Before 5.17 the foreground process group was tty->pgrp. */
struct tty_struct___old {
	struct pid *pgrp;
};

/*
 * A process in its terminal's foreground group may be a job-control
 * shell's foreground job: a stop would show as "Stopped" and give the
 * terminal back to the shell.  Such a process is never stopped.
 */
static __always_inline bool in_foreground(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tty_struct *tty = BPF_CORE_READ(t, signal, tty);
	struct pid *fg;

	if (!tty)
		return false;
	if (bpf_core_field_exists(tty->ctrl))
		fg = BPF_CORE_READ(tty, ctrl.pgrp);
	else
		fg = BPF_CORE_READ((struct tty_struct___old *)tty, pgrp);
	return fg && fg == BPF_CORE_READ(t, signal, pids[PIDTYPE_PGID]);
}

/*
 * ruby_options' return in every process that maps a libruby the watch knows
 * (one system-wide uretprobe per file): a candidate stops there, where
 * launch mode stops its child, and userspace attaches as it does.
 */
SEC("uretprobe")
int on_ruby_start_watch(void *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, *st, state;

	st = bpf_map_lookup_elem(&candidates, &pid);
	if (!st)
		return 0;
	state = *st;
	bpf_map_delete_elem(&candidates, &pid);
	if (state == CAND_REJECTED)
		return 0;
	if (in_foreground()) {
		tell_exec(EXEC_UNHELD, pid, NULL);
		return 0;
	}
	hold_self(pid);
	tell_exec(EXEC_HELD, pid, NULL);
	return 0;
}

/*
 * Launch mode: the child stops itself at these points so the loader can read
 * what only a running Ruby has (the hidden allocator's address) and take a
 * final census before finalizers run.  Each fires once.
 */
SEC("uprobe")
int on_ruby_start(void *ctx)
{
	__u32 slot;
	struct proc_state *ps = cookie_state(ctx, &slot);

	if (ps && ps->stop_at_start) {
		ps->stop_at_start = 0;
		hold_self(bpf_get_current_pid_tgid() >> 32);
	}
	return 0;
}

SEC("uprobe")
int on_ruby_exit(void *ctx)
{
	__u32 slot;
	struct proc_state *ps = cookie_state(ctx, &slot);

	if (!ps)
		return 0;
	/* The trace ends where Ruby does: its counters now, and nothing counted after. */
	if (ps->counting && !ps->frozen && ps->alloc_count_addr && ps->freed_count_addr &&
	    ps->gc_count_addr && !read_alloc_count(ps, &ps->exit_allocated) &&
	    !read_pooled(ps, ps->freed_count_addr, &ps->exit_freed) &&
	    !bpf_probe_read_user(&ps->exit_gc_count, sizeof(ps->exit_gc_count),
				 (void *)ps->gc_count_addr)) {
		ps->frozen_gc_count = ps->exit_gc_count;
		if (ps->moved_count_addr)
			bpf_probe_read_user(&ps->exit_moved, sizeof(ps->exit_moved),
					    (void *)ps->moved_count_addr);
		ps->exit_seen = 1;
		ps->frozen = 1;
	}
	if (ps->stop_at_exit) {
		ps->stop_at_exit = 0;
		ps->exit_stop_sent = 1;
		hold_self(bpf_get_current_pid_tgid() >> 32);
	}
	return 0;
}

/* ---- watched containers: the writes that add entries (probe/watch.c) ---- */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RBM_MAX_SLOTS * RBM_MAX_WATCHES);
	__type(key, __u32);
	__type(value, struct watch_state);
} watches SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RBM_INSERTION_PATHS);
	__type(key, struct insertion_key);
	__type(value, __u64);
} insertions SEC(".maps");

/* n more insertions on key's path (an entry made if none yet): false when the map is full. */
static __always_inline bool count_insertions(struct insertion_key *key, __u64 n)
{
	__u64 *count = bpf_map_lookup_elem(&insertions, key);

	if (!count && bpf_map_update_elem(&insertions, key, &n, BPF_NOEXIST) == 0)
		return true;
	if (!count)
		count = bpf_map_lookup_elem(&insertions, key);
	if (!count)
		return false;
	__sync_fetch_and_add(count, n);
	return true;
}

/*
 * A hardware breakpoint trapped a write to a watched word, in the writing
 * thread, after the write: if the count grew, the Ruby frames now running
 * are those of the code that added the entries.
 */
SEC("perf_event")
int on_watched_write(struct bpf_perf_event_data *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), word, flags, count, added;
	__u32 slot = RBM_COOKIE_SLOT(cookie), watch = cookie & (RBM_MAX_WATCHES - 1);
	__u32 idx = slot * RBM_MAX_WATCHES + watch;
	struct insertion_key key = {.slot = slot, .watch = watch};
	struct proc_state *ps = bpf_map_lookup_elem(&procs, &slot);
	struct watch_state *w = bpf_map_lookup_elem(&watches, &idx);

	if (!ps || !w || !w->armed)
		return 0;
	__sync_fetch_and_add(&w->hits, 1);
	if (bpf_probe_read_user(&word, sizeof(word), (void *)w->addr)) {
		__sync_fetch_and_add(&w->unread, 1);
		return 0;
	}
	/* the slot freed (T_NONE), moved away (T_MOVED), another object's or form: none of its adds */
	if (bpf_probe_read_user(&flags, sizeof(flags), (void *)w->obj) ||
	    (flags & w->flags_mask) != w->flags_want) {
		__sync_fetch_and_add(&w->foreign, 1);
		return 0;
	}
	count = (word & w->mask) >> (w->shift & 63);
	/* a delete, or a rewrite of the same count: nothing added (the GVL orders the writers) */
	if (count <= w->last) {
		w->last = count;
		return 0;
	}
	added = count - w->last;
	w->last = count;
	__sync_fetch_and_add(&w->added, added);
	key.stack_id = capture_stack(ps, slot, false);
	if (!key.stack_id) {
		__sync_fetch_and_add(&w->no_path, added);
		return 0;
	}
	if (!count_insertions(&key, added))
		__sync_fetch_and_add(&w->no_path, added);
	return 0;
}

/* ---- the fallback: calls of Ruby's insertion functions on a container (probe/watch_uprobe.c) ---- */

#define RB_T_ARRAY_TYPE 0x07

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RBM_MAX_SLOTS * RBM_MAX_WATCHES);
	__type(key, __u32);
	__type(value, struct call_watch);
} call_watches SEC(".maps");

/* Every call of a probed function, on any container, per slot: what the budget is charged. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RBM_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} watch_calls SEC(".maps");

/* Set by userspace as a watch by calls ends: the count it reads then is the end's. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RBM_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} call_watch_off SEC(".maps");

/* The entries of the container at obj, by the watch's rule (obj: the container, or an Array like it). */
static __always_inline int call_count(const struct call_watch *w, __u64 obj, __u64 *count)
{
	__u64 flags, at;

	if (bpf_probe_read_user(&flags, sizeof(flags), (void *)obj))
		return -1;
	if ((flags & w->form_flag) == w->in_flags) {
		*count = (flags & w->mask) >> (w->shift & 63);
		return 0;
	}
	at = obj + w->off;
	if (w->deref) {
		if (bpf_probe_read_user(&at, sizeof(at), (void *)at))
			return -1;
		at += w->deref_off;
	}
	return bpf_probe_read_user(count, sizeof(*count), (void *)at) ? -1 : 0;
}

/* The most entries the call now starting can add (~0: no bound known). */
static __always_inline __u64 call_bound(__u32 rule, const struct call_watch *w, __u64 count,
					__u64 a2, __u64 a3)
{
	__u64 flags, n;

	switch (rule) {
	case RBM_CALL_ADDS_ONE:
		return 1;
	case RBM_CALL_ADDS_ARG3:
		return a3;
	case RBM_CALL_ADDS_TO_INDEX:
		/* a negative index counts from the end: nothing added */
		return (__s64)a2 >= 0 && a2 >= count ? a2 - count + 1 : 0;
	case RBM_CALL_ADDS_ARRAY:
		if (!bpf_probe_read_user(&flags, sizeof(flags), (void *)a2) &&
		    (flags & RB_T_MASK) == RB_T_ARRAY_TYPE && !call_count(w, a2, &n))
			return n;
	}
	return ~0ULL;
}

/* The increase since the last call on the container, given to that call's path (up to its bound). */
static __always_inline void settle_call(struct call_watch *w, __u32 slot, __u32 watch, __u64 count)
{
	struct insertion_key key = {.slot = slot, .watch = watch, .stack_id = w->pending};
	__u64 added, given;

	if (count <= w->last) {
		w->last = count; /* a delete: nothing added */
		return;
	}
	added = count - w->last;
	w->last = count;
	w->added += added;
	given = added < w->bound ? added : w->bound;
	w->no_path += added - given;
	if (!given)
		return;
	if (!w->pending) {
		w->no_path += given;
		return;
	}
	if (!count_insertions(&key, given))
		w->no_path += given;
}

/*
 * A probed insertion function called: counted for the budget; on a watched
 * container, the last call's additions settled and this call's path kept.
 * The GVL orders the calls on a container, so its fields need no atomics.
 */
static __always_inline int container_call(void *ctx, __u64 recv, __u64 a2, __u64 a3)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), count, *calls;
	__u32 slot = RBM_COOKIE_SLOT(cookie), rule = cookie & 0xff, i, idx;
	struct call_watch *w = NULL;
	struct proc_state *ps;
	__u32 *off;

	calls = bpf_map_lookup_elem(&watch_calls, &slot);
	if (calls)
		__sync_fetch_and_add(calls, 1);
	off = bpf_map_lookup_elem(&call_watch_off, &slot);
	if (!off || *off)
		return 0;
	for (i = 0; i < RBM_MAX_WATCHES; i++) {
		idx = slot * RBM_MAX_WATCHES + i;
		w = bpf_map_lookup_elem(&call_watches, &idx);
		if (w && w->armed && w->container == recv)
			break;
		w = NULL;
	}
	if (!w || !(ps = bpf_map_lookup_elem(&procs, &slot)))
		return 0;
	w->hits++;
	if (call_count(w, recv, &count)) {
		w->unread++;
		w->pending = 0;
		return 0;
	}
	settle_call(w, slot, i, count);
	w->bound = call_bound(rule, w, count, a2, a3);
	w->pending = capture_stack(ps, slot, false);
	return 0;
}

/* One perf-event uprobe per function (a kernel without uprobe_multi). */
SEC("uprobe")
int BPF_KPROBE(on_container_call, __u64 recv, __u64 a2, __u64 a3)
{
	return container_call(ctx, recv, a2, a3);
}

/* The same as one uprobe_multi link (the loader sets the attach type). */
SEC("uprobe")
int BPF_KPROBE(on_container_call_multi, __u64 recv, __u64 a2, __u64 a3)
{
	return container_call(ctx, recv, a2, a3);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbmemtrace: count Ruby object allocations per class and keep the set of
 * live objects, keyed by address, for the userspace loader to validate.
 *
 * Hot path: one uretprobe per allocation.  The trap costs microseconds, so
 * the program itself does as little as it can: one 16-byte read of the new
 * object's header, one per-CPU counter update and one map update.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "rbmemtrace.h"

#define SIGSTOP 19

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 20); /* resized by the loader: --max-objects */
	__type(key, __u64);
	__type(value, struct live_object);
} live_objects SEC(".maps");

/*
 * Entries are made once per (class, path): allocated as they come, which
 * spares each attach the ~80 ms of preallocating every CPU's copy.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct class_key);
	__type(value, struct class_counts);
} class_counts SEC(".maps");

/*
 * Where a class counts when class_counts is full of (class, path) pairs,
 * or when its on-demand entry could not be allocated (a loaded machine:
 * rubocop under load lost 12 that way): one entry per class, with its own
 * room, preallocated, so that a class's count never depends on how many
 * call paths the program has nor on the allocator.  32768 classes that
 * allocate are more than large apps have; preallocating them per CPU
 * takes ~40 ms at attach.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 32768);
	__type(key, struct class_key);
	__type(value, struct class_counts);
} class_fallback SEC(".maps");

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

/* The receivers seen the first time each call path was stored. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* written once per new path: rare */
	__uint(max_entries, 65536); /* --max-stacks */
	__type(key, __u64);
	__type(value, struct stack_selves); /* value size cut to the depth by the loader */
} stack_selves SEC(".maps");

/*
 * Deduplicated call paths, keyed by a hash of their frames.  Entries are
 * added only for new paths, so they are allocated as needed: a large
 * --max-stacks costs memory only for the paths a program has.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536); /* --max-stacks */
	__type(key, __u64);
	__type(value, struct stack_frames); /* value size cut to the depth by the loader */
} stacks SEC(".maps");

/* Classes to capture stacks for (--class); empty means all. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u8); /* 1: capture, 0: skip */
} class_filter SEC(".maps");

/* Set by the loader once it knows the target (launch mode loads before that). */
struct stack_config stack_cfg;
__u32 filter_classes;

/* Written by BPF, read by userspace through the mmaped .bss. */
__u64 gc_runs;          /* ruby:gc__mark__end */
__u64 sweep_steps;      /* ruby:gc__sweep__end */
__u64 header_read_errors;
__u64 class_overflow;   /* allocations not counted: class_counts full */
__u64 reaped;
/* Hits per allocation probe (its attach cookie): the sampler's cost meter. */
__u64 probe_hits[MAX_ALLOC_PROBES];
__u64 program_ns;    /* time spent in the allocation program, over the timed hits */
__u64 program_timed;
__u64 stacks_truncated; /* walks that hit --depth with frames left */
__u64 stacks_dropped;   /* new call paths not stored: stacks map full */
__u64 stacks_stored;    /* new call paths stored: userspace names them when it changes */
__u64 stack_errors;     /* execution context or frames unreadable */
__u64 compact_count_addr;   /* the target's objspace compaction counter; 0: unknown */
__u64 gc_count_addr;        /* the target's GC.count (objspace profile.count); 0: unknown */
__u64 compact_count_seen;
__u32 compaction_pending;   /* set at a sweep end after GC.compact, cleared by userspace */
__u64 compact_followed_at;  /* compact_count + 1 of the last compaction remapped */
__u64 moved_followed;       /* tracked objects remapped to their new address */
__u64 moved_lost;           /* remapped entry could not be inserted (map full) */
__u64 compaction_probe_hits; /* every hit of on_gc_update_refs: the sampler charges them */
__u32 frozen;           /* the final read is under way: count nothing more */
__u32 sampling;         /* --max-overhead: count only while window_open */
__u32 window_open;      /* set once every allocation probe is attached, cleared before any comes off */
__u32 reap_at_alloc;    /* no GC probes (a Ruby without USDT): reap at allocation hits */
/*
 * The open window (--max-overhead), set by userspace before window_open.
 * Hits are placed in Ruby's allocation stream by its own counter, so that
 * a window covers a stretch of the stream, not of time (sampler.h).
 */
__u64 alloc_count_addr; /* objspace total_allocated_objects; 0: unknown, hits are counted here */
__u32 alloc_count_pools;  /* 3.2+: summed over the size pools, this many (0 or 1: one counter) */
__u32 alloc_count_stride; /* bytes from one pool's counter to the next */
__u64 stream_hits;      /* the stream position when alloc_count_addr is 0 */
__u64 win_start;        /* first stream position to record (the stream may be past it) */
__u64 win_len;          /* stream positions to cover from the first recorded */
__u32 win_sample;       /* record a covered hit when a random u32 is below this; 0: every one */
__u64 win_open_ns;      /* when window_open was set (CLOCK_MONOTONIC) */
__u64 win_idle_ns;      /* no allocation for this long: the target idles */
/* Written here, for userspace */
__u64 win_first;        /* stream position of the window's first hit; 0: none yet */
__u32 win_burst;        /* the first hit came after an idle: the window covers that burst */
__u32 win_done;         /* and it ended: nothing more is recorded */
__u64 win_last;         /* stream position of the latest hit */
__u64 win_last_ns;      /* and when (burst windows) */
__u64 win_last_nvcsw;   /* and the hitting thread's voluntary context switches then */
__u64 win_recorded;     /* hits recorded */
__u64 skip_ns;          /* time in the program for the hits it let pass, over the timed ones */
__u64 skip_timed;
__u64 stream_read_errors;
__u32 stop_at_start;    /* --: stop the child once Ruby is initialised */
__u32 stop_at_exit;     /* --: stop the child when its main program ends */
__u32 exit_stop_sent;   /* that stop was sent: a stop the loader sees before it is the user's */

struct reap_queue reap;

struct object_header {
	__u64 flags;
	__u64 klass;
};

#define CFP_CHUNK 4    /* control frames read per bpf_probe_read_user */
#define CFP_WORDS 8    /* 64-byte frames (3.1); cfp_size may be smaller */
#define VM_FRAME_MAGIC_CFUNC 0x55550001
#define VM_FRAME_MAGIC_MASK 0x7fff0001
#define FRAME_SLOTS (MAX_STACK_DEPTH * 2)

/* The current thread's rb_execution_context_t, from libruby's TLS ruby_current_ec. */
static __always_inline __u64 current_ec(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
	__u64 dtv, block, ec;

	if (bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(fsbase + 8)) ||
	    bpf_probe_read_user(&block, sizeof(block), (void *)(dtv + 16 * stack_cfg.tls_modid)) ||
	    bpf_probe_read_user(&ec, sizeof(ec), (void *)(block + stack_cfg.ec_tls_offset)))
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
	struct stack_frames *st;
	struct stack_selves *selves;
	__u64 *buf;
	__u64 cfp;
	__u64 end;
	__u64 hash;
	__u32 n;
	__u32 words;
	__u32 failed;
};

/* One chunk of control frames: verified once, run up to depth/CFP_CHUNK times by bpf_loop. */
static long walk_chunk(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	__u64 left;
	__u32 size;
	int j;

	if (w->cfp >= w->end || w->n >= stack_cfg.depth)
		return 1;
	left = (w->end - w->cfp) / stack_cfg.cfp_size;
	if (left > CFP_CHUNK)
		left = CFP_CHUNK;
	size = (left * stack_cfg.cfp_size) & 0x1ff; /* <= 4 * 64 */
	if (left == 0 || bpf_probe_read_user(w->buf, size, (void *)w->cfp)) {
		w->failed = 1;
		return 1;
	}
	for (j = 0; j < CFP_CHUNK; j++) {
		__u32 base = j * w->words;
		__u64 pc, iseq, ep, env[3];

		if (j >= left || w->n >= stack_cfg.depth)
			break;
		pc = w->buf[(base + stack_cfg.cfp_pc / 8) & 63];
		iseq = w->buf[(base + stack_cfg.cfp_iseq / 8) & 63];
		ep = w->buf[(base + stack_cfg.cfp_ep / 8) & 63];
		w->cfp += stack_cfg.cfp_size;
		/*
		 * The line of a frame is that of pc - 1: a caller's pc is past its
		 * call.  In 3.1 the allocating frame's pc is still on the
		 * allocating instruction when that one moves pc last ("leaf"
		 * instructions: literals, getblockparam), so Ruby's allocation
		 * hook (gc.c gc_event_hook_body) moves it one word on first, as
		 * here.  From 3.3 pc is past it already (checked on 3.3 and 3.4
		 * against ObjectSpace.allocation_sourceline).
		 */
		if (pc && iseq && i == 0 && j == 0 && stack_cfg.bump_alloc_pc)
			pc += 8;
		if (pc && iseq) {
			/* Free: the receiver is in the frame just read. */
			w->selves->self[w->n & (MAX_STACK_DEPTH - 1)] =
				w->buf[(base + stack_cfg.cfp_self / 8) & 63];
			push_frame(w->st, &w->n, &w->hash, iseq, pc);
		} else if (!pc && ep && !bpf_probe_read_user(env, sizeof(env), (void *)(ep - 16)) &&
			   (env[2] & VM_FRAME_MAGIC_MASK) == VM_FRAME_MAGIC_CFUNC) {
			/* ep[-2] is the C method's callable method entry. */
			push_frame(w->st, &w->n, &w->hash, env[0], 0);
		}
	}
	return 0;
}

static long self_to_class(__u32 i, void *ctx)
{
	struct stack_selves *selves = *(struct stack_selves **)ctx;
	__u64 *self = &selves->self[i & (MAX_STACK_DEPTH - 1)];
	__u64 klass = 0;

	/* Immediates (Integer, Float, Symbol, nil, true, false) have no header. */
	if (!*self || (*self & 7) || *self == 8 || *self == 0x14)
		klass = RBM_IMMEDIATE_SELF | *self;
	else if (bpf_probe_read_user(&klass, sizeof(klass), (void *)(*self + 8)))
		klass = 0;
	*self = klass;
	return 0;
}

/*
 * Walks the Ruby control frames from the innermost outward, up to the depth
 * asked for, and stores the path once.  Returns its id (a hash), 0 on failure.
 */
static __always_inline __u64 capture_stack(void)
{
	struct walk w = {.hash = 0xcbf29ce484222325ULL, .words = stack_cfg.cfp_size / 8};
	__u64 ec, ech[3];
	__u32 zero = 0;

	w.st = bpf_map_lookup_elem(&stack_scratch, &zero);
	w.buf = bpf_map_lookup_elem(&cfp_scratch, &zero);
	w.selves = bpf_map_lookup_elem(&selves_scratch, &zero);
	ec = current_ec();
	if (!w.st || !w.buf || !w.selves || !ec || w.words == 0 || w.words > CFP_WORDS ||
	    bpf_probe_read_user(ech, sizeof(ech), (void *)ec)) {
		__sync_fetch_and_add(&stack_errors, 1);
		return 0;
	}
	w.cfp = ech[stack_cfg.ec_cfp / 8 & 3];
	/* The last frame at the top of the VM stack is a dummy. */
	w.end = ech[stack_cfg.ec_vm_stack / 8 & 3] + ech[stack_cfg.ec_vm_stack_size / 8 & 3] * 8 -
		stack_cfg.cfp_size;
	bpf_loop(MAX_STACK_DEPTH / CFP_CHUNK + 1, walk_chunk, &w, 0);
	if (w.failed)
		__sync_fetch_and_add(&stack_errors, 1);
	if (!w.n)
		return 0;
	w.st->depth = w.n;
	w.st->truncated = w.cfp < w.end;
	if (w.st->truncated)
		__sync_fetch_and_add(&stacks_truncated, 1);
	w.hash ^= w.st->truncated;
	if (!w.hash)
		w.hash = 1;
	/* Most paths are known: a lookup takes no lock, an update would. */
	if (bpf_map_lookup_elem(&stacks, &w.hash))
		return w.hash;
	if (bpf_map_update_elem(&stacks, &w.hash, w.st, BPF_NOEXIST) == 0) {
		/* A new path, so off the common path: receivers die, their classes stay. */
		bpf_loop(w.n, self_to_class, &w.selves, 0);
		bpf_map_update_elem(&stack_selves, &w.hash, w.selves, BPF_NOEXIST);
		__sync_fetch_and_add(&stacks_stored, 1);
	} else if (!bpf_map_lookup_elem(&stacks, &w.hash)) {
		__sync_fetch_and_add(&stacks_dropped, 1);
		return 0;
	}
	return w.hash;
}

static __always_inline bool wants_stack(__u64 klass)
{
	__u8 *capture;

	if (!stack_cfg.depth)
		return false;
	if (!filter_classes)
		return true;
	capture = bpf_map_lookup_elem(&class_filter, &klass);
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
static __always_inline bool compactions_followed(void)
{
	__u64 count;

	return compact_count_addr &&
	       !bpf_probe_read_user(&count, sizeof(count), (void *)compact_count_addr) &&
	       compact_followed_at == count;
}

static __always_inline void track(__u64 obj, __u64 seq)
{
	struct object_header hdr;
	struct class_key key = {};
	struct class_counts *counts;
	struct live_object live;
	__u32 type;

	if (!obj || bpf_probe_read_user(&hdr, sizeof(hdr), (void *)obj)) {
		__sync_fetch_and_add(&header_read_errors, 1);
		return;
	}

	type = hdr.flags & RB_T_MASK;
	if (type == RB_T_IMEMO) {
		key.kind = RBM_KIND(type, (hdr.flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK);
	} else if (type == RB_T_ICLASS) {
		/* Its class slot is set to the module only after allocation: keyed by kind. */
		key.kind = type;
	} else {
		key.kind = type;
		key.klass = hdr.klass;
	}

	if (key.klass && wants_stack(key.klass))
		key.stack_id = capture_stack();

	counts = class_counts_of(&class_counts, &key);
	/* The table is full of (class, path) pairs: the class still counts, without its path. */
	if (!counts) {
		if (key.stack_id)
			__sync_fetch_and_add(&stacks_dropped, 1);
		key.stack_id = 0;
		counts = class_counts_of(&class_fallback, &key);
	}
	if (!counts) {
		__sync_fetch_and_add(&class_overflow, 1);
		return;
	}
	counts->allocated++;

	live.klass = key.klass;
	live.kind = key.kind;
	/*
	 * After a compaction whose moves were not followed (no
	 * rb_gc_update_tbl_refs probe), a tracked object's old slot may be
	 * reused before userspace has checked it: the object moved or died,
	 * nobody knows which.  Count it rather than let the overwrite call it
	 * freed.  When every move was followed, the object there died.
	 */
	if (compaction_pending && !compactions_followed()) {
		struct live_object *old = bpf_map_lookup_elem(&live_objects, &obj);

		if (old) {
			struct class_key old_key = {
				.klass = old->klass, .stack_id = old->stack_id, .kind = old->kind};
			struct class_counts *old_counts = bpf_map_lookup_elem(&class_counts, &old_key);

			if (old_counts)
				old_counts->not_followed++;
		}
	}

	live.seq = seq;
	live.stack_id = key.stack_id;
	/* Ruby's own GC count, not a probe's: it ages objects with or without USDT. */
	live.gc_epoch = 0;
	if (gc_count_addr)
		bpf_probe_read_user(&live.gc_epoch, sizeof(live.gc_epoch), (void *)gc_count_addr);
	/* An existing entry at this address is an object GC already freed. */
	if (bpf_map_update_elem(&live_objects, &obj, &live, BPF_ANY))
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

/* GC.stat's total_allocated_objects: one counter, or the sum over the size pools (3.2+). */
static __always_inline int read_alloc_count(__u64 *total)
{
	__u64 v;
	int i;

	*total = 0;
	for (i = 0; i < MAX_POOLS; i++) {
		if (i > 0 && i >= alloc_count_pools)
			break;
		if (bpf_probe_read_user(&v, sizeof(v),
					(void *)(alloc_count_addr + (__u64)i * alloc_count_stride)))
			return -1;
		*total += v;
	}
	return 0;
}

/*
 * Whether the open window records this hit: its stream position is in the
 * covered stretch, and it falls in the share recorded.  The first hit
 * fixes where the stretch begins: where the stream is when the probes are
 * on, or, if it came after an idle, at the start of that burst, which the
 * window then covers up to the next idle.
 */
static __always_inline bool window_records(void)
{
	__u64 pos = 0, first, begin, now = 0;

	if (alloc_count_addr) {
		if (read_alloc_count(&pos)) {
			__sync_fetch_and_add(&stream_read_errors, 1);
			return false;
		}
	} else {
		pos = __sync_fetch_and_add(&stream_hits, 1) + 1;
	}
	first = win_first;
	if (!first) {
		now = bpf_ktime_get_ns();
		if (__sync_val_compare_and_swap(&win_first, 0, pos) == 0) {
			if (pos >= win_start && now - win_open_ns > win_idle_ns)
				win_burst = 1;
			win_last_ns = now;
			win_last_nvcsw = BPF_CORE_READ(bpf_get_current_task_btf(), nvcsw);
		}
		first = win_first;
	}
	if (win_done)
		return false;
	/*
	 * A burst ends where the target idles: a long gap in which it blocked
	 * of its own accord (a sleep, a read).  A GC, or a machine too busy
	 * to run it, is no idle: the thread did not block.
	 */
	if (win_burst) {
		__u64 nvcsw = BPF_CORE_READ(bpf_get_current_task_btf(), nvcsw);

		if (!now)
			now = bpf_ktime_get_ns();
		if (now - win_last_ns > win_idle_ns && nvcsw != win_last_nvcsw) {
			win_done = 1;
			return false;
		}
		win_last_ns = now;
		win_last_nvcsw = nvcsw;
	}
	win_last = pos;
	begin = first > win_start ? first : win_start;
	if (pos < begin || pos - begin >= win_len)
		return false;
	if (win_sample && bpf_get_prandom_u32() >= win_sample)
		return false;
	__sync_fetch_and_add(&win_recorded, 1);
	return true;
}

static void reap_pending(void);

static __always_inline int record_allocation(struct pt_regs *ctx, __u64 obj)
{
	__u64 probe = bpf_get_attach_cookie(ctx) & (MAX_ALLOC_PROBES - 1);
	__u64 hit = __sync_fetch_and_add(&probe_hits[probe], 1);
	__u64 start = 0;

	/* The probes take a while to come off: the final counts must not move meanwhile. */
	if (frozen)
		return 0;
	/*
	 * The probes go on and come off one after another: outside the span
	 * where all are on, counting would over-sample the last ones.
	 */
	if (sampling && !window_open)
		return 0;
	if ((hit & (sampling ? TIMED_HIT_MASK : TIMED_HIT_MASK_FULL)) == 0)
		start = bpf_ktime_get_ns();
	if (reap_at_alloc)
		reap_pending();
	if (sampling && !window_records()) {
		if (start) {
			__sync_fetch_and_add(&skip_ns, bpf_ktime_get_ns() - start);
			__sync_fetch_and_add(&skip_timed, 1);
		}
		return 0;
	}
	/* The probe and its hit count tell two objects born at one address apart. */
	track(obj, probe << 56 | hit);
	if (start) {
		__sync_fetch_and_add(&program_ns, bpf_ktime_get_ns() - start);
		__sync_fetch_and_add(&program_timed, 1);
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

__u32 fork_parent; /* the target's pid: its forks are told; 0 before it is known */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 pid;

	/* A thread, or a vfork child sharing the memory, has the target's breakpoints by right. */
	if (!fork_parent || parent->tgid != fork_parent || child->mm == parent->mm)
		return 0;
	pid = child->tgid;
	bpf_ringbuf_output(&forks, &pid, sizeof(pid), 0);
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

static long reap_one(__u32 i, void *ctx)
{
	struct live_object *live;
	__u64 addr;

	if (i >= REAP_MAX)
		return 1;
	addr = reap.addr[i];
	live = bpf_map_lookup_elem(&live_objects, &addr);
	if (live && live->seq == reap.seq[i] && !bpf_map_delete_elem(&live_objects, &addr))
		reaped++;
	return 0;
}

static void reap_pending(void)
{
	__u32 len = *(volatile __u32 *)&reap.len;

	if (!len)
		return;
	bpf_loop(len > REAP_MAX ? REAP_MAX : len, reap_one, NULL, 0);
	*(volatile __u32 *)&reap.len = 0;
}

SEC("usdt")
int BPF_USDT(on_gc_mark_begin)
{
	reap_pending();
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_mark_end)
{
	__sync_fetch_and_add(&gc_runs, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_sweep_begin)
{
	reap_pending();
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_sweep_end)
{
	__u64 count;

	__sync_fetch_and_add(&sweep_steps, 1);
	if (compact_count_addr &&
	    !bpf_probe_read_user(&count, sizeof(count), (void *)compact_count_addr) &&
	    count != compact_count_seen) {
		compact_count_seen = count;
		compaction_pending = 1;
	}
	return 0;
}

static long follow_one(struct bpf_map *map, __u64 *addr, struct live_object *obj, void *ctx)
{
	__u64 hdr[3];

	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)*addr) || (hdr[0] & RB_T_MASK) != RB_T_MOVED)
		return 0;
	/* A T_MOVED slot holds the object's new address after its header. */
	if (hdr[2] && !bpf_map_update_elem(&live_objects, &hdr[2], obj, BPF_ANY))
		moved_followed++;
	else
		moved_lost++;
	bpf_map_delete_elem(&live_objects, addr);
	return 0;
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
	__u64 count;

	__sync_fetch_and_add(&compaction_probe_hits, 1);
	if (!compact_count_addr ||
	    bpf_probe_read_user(&count, sizeof(count), (void *)compact_count_addr) ||
	    compact_followed_at == count + 1)
		return 0;
	compact_followed_at = count + 1;
	/* Without the sweep probe (no USDT), the compaction is known here. */
	if (reap_at_alloc)
		compaction_pending = 1;
	bpf_for_each_map_elem(&live_objects, follow_one, NULL, 0);
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
	if (stop_at_start) {
		stop_at_start = 0;
		bpf_send_signal(SIGSTOP);
	}
	return 0;
}

SEC("uprobe")
int on_ruby_exit(void *ctx)
{
	if (stop_at_exit) {
		stop_at_exit = 0;
		exit_stop_sent = 1;
		bpf_send_signal(SIGSTOP);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

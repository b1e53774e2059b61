/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Structures shared by the BPF program and the userspace loader. */
#ifndef RBMEMTRACE_H
#define RBMEMTRACE_H
#ifndef __bpf__
#include <linux/types.h> /* the BPF side has them from vmlinux.h */
#endif

/* Ruby's builtin type is the low 5 bits of RBasic.flags (stable since 2.x). */
#define RB_T_MASK 0x1f
#define RB_T_NONE 0x00
#define RB_T_OBJECT 0x01
#define RB_T_CLASS 0x02
#define RB_T_MODULE 0x03
#define RB_T_STRING 0x05
#define RB_T_ICLASS 0x1c
#define RB_T_ZOMBIE 0x1d
#define RB_T_MOVED 0x1e
#define RB_T_IMEMO 0x1a
#define RB_IMEMO_SHIFT 12
#define RB_IMEMO_MASK 0x0f

/*
 * An object's "kind": its builtin type, plus for T_IMEMO the imemo subtype in
 * bits 8..11.  Imemo objects reuse the klass slot for other data (call caches
 * keep the receiver's class there), and an iclass gets its module there only
 * after it is allocated, so both are keyed by kind alone.
 */
#define RBM_KIND(type, imemo) ((type) | ((imemo) << 8))
#define RBM_KIND_TYPE(kind) ((kind) & RB_T_MASK)
#define RBM_KIND_IMEMO(kind) (((kind) >> 8) & RB_IMEMO_MASK)

/* Allocation probes, numbered by their attach cookie. */
#define MAX_ALLOC_PROBES 16

/* Per-class counters, one slot per CPU. */
struct class_key {
	__u64 klass; /* class VALUE; 0 for hidden objects and imemos */
	__u64 stack_id; /* 0 when stacks are off or the walk failed */
	__u32 kind;
	__u32 pad;
};

struct class_counts {
	__u64 allocated;
	/* Under sampling, the recorded allocations' weights (RBM_WEIGHT_ONE: one object) */
	__u64 weight;
	__u64 untracked; /* allocated but not recorded: live-object map was full */
	__u64 not_followed; /* replaced at a slot a compaction may have moved it from */
	/* Under sampling, the windows it was traced in: bit (window number % 64) */
	__u64 window_bits;
};

/* The weight of a recorded allocation that stands for itself alone. */
#define RBM_WEIGHT_ONE 65536

/* One tracked object, keyed by its address in the target. */
/*
 * In live_object.seq: born while a GC was marking (incrementally), so that
 * GC's marking judges it: it is aged by it if it lives, and may be freed
 * within the cycle it was born in (tracker.c).
 */
#define RBM_SEQ_BORN_MARKING (1ULL << 55)
/*
 * Set by BPF once counting is frozen (the trace's end) and a new object
 * takes the slot: in the GC cycle of the freeze, the tracked object was
 * freed before the end; in a later one, it was freed by that GC or one
 * after it, which the final pass cannot tell.
 */
#define RBM_SEQ_GONE_AT_END (1ULL << 54)
#define RBM_SEQ_LIVED_TO_END (1ULL << 53)
/*
 * Re-keyed by a compaction's follow: its object moved here.  The forwarding
 * slot it left may outlive that compaction, so at the next one a tracked
 * entry with this bit at a forwarding slot's destination is that live
 * object, not a dead one whose slot a moved object took.
 */
#define RBM_SEQ_MOVED (1ULL << 52)
#define RBM_SEQ_HIT_MASK (RBM_SEQ_MOVED - 1)
#define RBM_SEQ_END_BITS (RBM_SEQ_GONE_AT_END | RBM_SEQ_LIVED_TO_END)

struct live_object {
	__u64 klass;
	__u64 seq; /* probe << 56 | its hit count, and RBM_SEQ_*: two objects at one address */
	__u64 stack_id;
	__u32 kind;
	__u32 gc_epoch; /* GC.count (low 32 bits) at allocation: GCs survived = now - this */
};

/*
 * A Ruby call path, innermost frame first.  Each frame is two words: a Ruby
 * frame is (iseq, pc); a C method frame is (method entry, 0).  The loader
 * sizes the stacks map's values to the depth asked for.
 */
#define MAX_STACK_DEPTH 128
/*
 * The pc of a top frame that runs no instruction: the one a C extension's
 * Init runs in while it is required (rb_vm_call_cfunc), whose iseq names the
 * .so.  Ruby gives its objects that file and line 0; so does rbmemtrace.
 */
#define RBM_PC_NO_INSN 1

struct stack_frames {
	__u32 depth;
	__u32 truncated; /* the walk stopped at the depth limit with frames left */
	__u64 frames[MAX_STACK_DEPTH * 2];
};

/* What the stack walk needs to know about this Ruby, set by the loader. */
struct stack_config {
	__u64 tls_modid;     /* libruby's TLS module id (from its DTPMOD64 GOT slot) */
	__u64 ec_tls_offset; /* ruby_current_ec within libruby's TLS block */
	__u32 depth;         /* 0: stacks off */
	__u32 ec_vm_stack;
	__u32 ec_vm_stack_size;
	__u32 ec_cfp;
	__u32 cfp_size;
	__u32 cfp_pc;
	__u32 cfp_iseq;
	__u32 cfp_ep;
	__u32 cfp_self;
	__u32 bump_alloc_pc; /* the allocating frame's pc is one word short (3.1: see the walk) */
};

/*
 * The class of the receiver (self) of each Ruby frame of a call path, stored
 * once per new path: userspace finds the method's owner through it, to print
 * Foo#bar.  Not part of the path's identity, so paths still dedupe.
 */
struct stack_selves {
	__u64 self[MAX_STACK_DEPTH]; /* the receivers while walking; their classes once stored */
};

/*
 * An immediate receiver (Integer, Float, Symbol, nil, true, false) has no
 * header to read its class from: it is stored as itself, with this bit, and
 * userspace knows its class (3.3+ writes Integer#times in Ruby).
 */
#define RBM_IMMEDIATE_SELF (1ULL << 63)

/*
 * Dead objects found by userspace are deleted by the BPF program at the next
 * GC probe, on the target's own thread: no allocation can race with the
 * delete there, so a slot reused in between is never dropped by mistake.
 */
#define REAP_MAX 16384

struct reap_queue {
	__u32 len; /* set by userspace (release), cleared by BPF when done */
	__u32 pad;
	__u64 addr[REAP_MAX];
	__u64 seq[REAP_MAX];
};

/*
 * One BPF object serves every process of a run: each traced process has a
 * slot, its state in the mmapable array `procs` and its maps in the
 * map-in-map arrays, all at that index.  Probes carry their slot in their
 * attach cookie (the allocation probes: slot << 8 | probe index).
 */
#define RBM_MAX_SLOTS 256
/* Classes each process's per-class fallback counters hold (when the (class, path) table is full). */
#define RBM_FALLBACK_CLASSES 32768
#define RBM_COOKIE(slot, probe) ((__u64)(slot) << 8 | (probe))
#define RBM_COOKIE_SLOT(cookie) ((__u32)((cookie) >> 8) & (RBM_MAX_SLOTS - 1))
/*
 * In an allocation probe's cookie: the new object is not the return value
 * but what the function stored through its first argument
 * (rb_alloc_tmp_buffer_with_count returns the buffer; its imemo is *store).
 */
#define RBM_COOKIE_FROM_STORE 0x80

/*
 * What the BPF side keeps for one traced process (its slot of `procs`).
 * Over ~20 fields: it is one map value that both sides read and write with
 * atomics (counters, the compaction's state, launch mode's stops), flat so
 * that each field is one fixed offset for the verifier and for user space.
 */
struct proc_state {
	/* Set by the loader once it knows the target (launch mode loads before that). */
	struct stack_config stack_cfg;
	__u32 filter_classes;
	__u32 frozen;		  /* the final read is under way: count nothing more */
	__u32 counting;		  /* the trace has begun (Ruby's counters read): count */
	__u64 frozen_gc_count;	  /* Ruby's GC count when frozen was set */
	__u32 sampling;		  /* --max-overhead: count only while window_open */
	__u32 window_open;	  /* every allocation probe is on (cleared before any comes off) */
	__u32 reap_at_alloc;	  /* no GC probes (a Ruby without USDT): reap at allocation hits */
	__u32 compaction_pending; /* set at a sweep end after GC.compact, cleared by userspace */
	__u32 stop_at_start;	  /* --: stop the child once Ruby is initialised */
	__u32 stop_at_exit;	  /* --: stop the child when its main program ends */
	__u32 exit_stop_sent;	  /* that stop was sent: a stop seen before it is the user's */
	__u32 exit_seen;	  /* Ruby reached its exit: the exit_* counters are its last */
	/*
	 * Ruby's own counters as it reached its exit (ruby_sig_finalize), read
	 * by BPF, where counting stops: a target that exits can no longer be
	 * read, and its last counters must match what was counted.
	 */
	__u64 freed_count_addr;	  /* objspace total_freed_objects (pooled like alloc_count_addr) */
	__u64 exit_allocated, exit_freed, exit_gc_count;
	__u64 moved_count_addr; /* objspace total_moved (GC.stat :total_moved_objects); 0: unknown */
	__u64 exit_moved;
	/* Written by BPF, read by userspace. */
	__u64 gc_runs;	   /* ruby:gc__mark__end */
	__u64 sweep_steps; /* ruby:gc__sweep__end */
	__u64 header_read_errors;
	__u64 class_overflow; /* allocations not counted: class_counts full */
	__u64 reaped;
	/* Hits per allocation probe (its attach cookie): the sampler's cost meter. */
	__u64 probe_hits[MAX_ALLOC_PROBES];
	__u64 program_ns; /* time spent in the allocation program, over the timed hits */
	__u64 program_timed;
	__u64 stacks_truncated;	  /* walks that hit --depth with frames left */
	__u64 stacks_dropped;	  /* new call paths not stored: stacks map full */
	__u64 stacks_stored;	  /* new call paths stored: userspace names them when it changes */
	__u64 stacks_untold;	  /* new call paths the new_stacks ring had no room to tell */
	__u64 stack_errors;	  /* execution context or frames unreadable */
	__u64 compact_count_addr; /* the target's objspace compaction counter; 0: unknown */
	__u64 gc_count_addr;	  /* the target's GC.count (objspace profile.count); 0: unknown */
	__u64 gc_flags_addr;	  /* the objspace's flags word; 0: unknown */
	__u32 gc_mode_mask;	  /* its gc_mode bits (1: marking) */
	__u32 gc_incremental;	  /* its during_incremental_marking bit */
	__u64 compact_count_seen;
	__u64 compact_followed_at;   /* compact_count + 1 of the last compaction remapped */
	__u64 moved_followed;	     /* tracked objects remapped to their new address */
	__u64 moved_lost;	     /* remapped entry could not be inserted (map full) */
	__u64 compaction_probe_hits; /* every hit of on_gc_update_refs: the sampler charges them */
	__u64 classes_moved;	     /* counted (class, path) entries re-keyed where a class moved */
	__u64 class_moves_lost;	     /* not re-keyed: the class_moves or a counts map was full */
	/* compact_count + 1 of the last compaction whose objects are all followed: its class
	 * moves (class_moves) are done with, userspace may take them */
	__u64 classes_followed_at;
	/*
	 * The heap's page table, for the compaction probe's scan of the slots a
	 * compaction moved objects out of (0: no scan).  Ruby 3.3 and later move
	 * objects into slots the same GC just swept: a dead tracked object's
	 * entry would then name a moved-in object, older and alive.
	 */
	__u64 heap_sorted_addr;	      /* where the objspace holds heap_pages.sorted */
	__u64 heap_npages_addr;	      /* its page count; 0: the darray's first word (3.4) */
	__u32 heap_darray_data;	      /* 3.4: the darray's data offset */
	__u16 page_start_off;	      /* struct heap_page: start (RVALUE *) */
	__u16 page_total_slots_off;   /* total_slots (short) */
	__u16 page_slot_size_off;     /* slot_size (short); 0: every slot is heap_slot_size */
	__u16 heap_slot_size;	      /* RVALUE size */
	__u16 page_max_slots;	      /* HEAP_PAGE_OBJ_LIMIT */
	__u16 pad_scan;
	__u64 moved_over;	      /* dead tracked objects whose slot a moved object took */
	__u64 compaction_scan_ns;     /* time the scans took the target: the sampler charges it */
	__u64 compaction_scan_failed; /* a page or slot unreadable: the scan was cut short */
	/*
	 * The open window (--max-overhead), set by userspace before window_open.
	 * Hits are placed in Ruby's allocation stream by its own counter, so that
	 * a window covers a stretch of the stream, not of time (sampler.h).
	 */
	__u64 alloc_count_addr;	  /* objspace total_allocated_objects; 0: unknown, hits counted */
	__u32 alloc_count_pools;  /* 3.2+: summed over this many size pools (0 or 1: one) */
	__u32 alloc_count_stride; /* bytes from one pool's counter to the next */
	__u64 stream_hits;	  /* the stream position when alloc_count_addr is 0 */
	__u64 win_start;	  /* first stream position to record (the stream may be past it) */
	__u64 win_len;		  /* stream positions to cover from the first recorded */
	__u32 win_sample; /* record a covered hit when a random u32 is below this; 0: every one */
	__u32 win_weight; /* what a recorded hit stands for: RBM_WEIGHT_ONE / the share recorded */
	__u64 win_open_ns; /* when window_open was set (CLOCK_MONOTONIC) */
	__u64 win_idle_ns; /* no allocation for this long: the target idles */
	__u64 win_bit;	   /* this window's bit in class_counts.window_bits */
	/* Written by BPF, for userspace */
	__u64 win_first;      /* stream position of the window's first hit; 0: none yet */
	__u32 win_burst;      /* the first hit came after an idle: the window covers that burst */
	__u32 win_done;	      /* and it ended: nothing more is recorded */
	__u64 win_last;	      /* stream position of the latest hit */
	__u64 win_last_ns;    /* and when (burst windows) */
	__u64 win_last_nvcsw; /* and the hitting thread's voluntary context switches then */
	__u64 win_recorded;   /* hits recorded */
	__u64 skip_ns; /* time in the program for the hits it let pass, over the timed ones */
	__u64 skip_timed;
	__u64 stream_read_errors;
};

/* A fork of a traced process (its slot), told to userspace (forks.c). */
/*
 * When the call path map is full, an allocation keeps its site: the
 * innermost Ruby frame, stored in the run's site_paths map under an id with
 * this bit set (a full path's id has it clear), so that the site table
 * stays complete however many paths a program has.
 */
#define RBM_SITE_ONLY (1ULL << 63)
#define RBM_SITE_PATHS (1 << 18)

struct site_path_key {
	__u32 slot;
	__u32 pad;
	__u64 id;
};

/*
 * A class a compaction moved (GC.compact moves classes like any object).
 * The compaction probe re-keys everything BPF keeps by a class's address
 * (its counts, its tracked objects' klass) to where the class went, and
 * tells userspace here, which does the same with what it keeps (its
 * tallies, the class's name, the --class filter) and deletes the entry.
 * Afterwards no key names a slot the class left, which another class may
 * take.
 */
#define RBM_CLASS_MOVES 65536

struct class_move_key {
	__u32 slot;
	__u32 compaction; /* the compaction count + 1 it moved at (low 32 bits) */
	__u64 from;
};

struct site_path {
	__u64 iseq;
	__u64 pc;
	__u64 self_class; /* as stack_selves holds it */
};

/* A call path stored for the first time: named at once, before its iseqs can be freed. */
struct new_stack_event {
	__u32 slot;
	__u32 pad;
	__u64 stack_id;
};

/*
 * A word watched by a hardware breakpoint (probe/watch.c): the count of a
 * container's entries, (word & mask) >> shift.  Userspace writes it before
 * the events are opened and disarms it while it moves the watch; the BPF
 * program on each trapped write counts the increases, by the writer's
 * Ruby call path.  Its cookie is RBM_COOKIE(slot, watch index).
 */
#define RBM_MAX_WATCHES 4
#define RBM_INSERTION_PATHS 8192
struct watch_state {
	__u64 addr;
	__u64 mask;
	__u32 shift;
	__u32 armed;
	__u64 last;    /* the count the last trapped write left */
	__u64 hits;    /* writes trapped */
	__u64 added;   /* the count's increases, summed */
	__u64 unread;  /* trapped writes whose word could not be read */
	__u64 no_path; /* increases whose call path could not be read or kept */
	/*
	 * The container's form: a write counts only while (flags & flags_mask) ==
	 * flags_want, its flags read at obj (the slot freed, moved away, taken by
	 * another object or form: not its entries)
	 */
	__u64 obj;
	__u64 flags_mask;
	__u64 flags_want;
	__u64 foreign; /* writes trapped while the form was another */
};

struct insertion_key {
	__u32 slot;
	__u32 watch;
	__u64 stack_id;
};

/*
 * The fallback of a watch where no breakpoint can be had (probe/watch_uprobe.c):
 * uprobes on Ruby's insertion functions (rb_hash_aset, rb_ary_push, ...), one
 * program for all, filtered by the container's address (the functions'
 * first argument).  At each call on the container the program reads its
 * count from the container itself (its form read from its flags, so the
 * count follows an ar_table into an st_table, an embedded Array to the heap),
 * gives the increase since the last call to that call's path (pending: under
 * the GVL the calls on a container are one after another), at most what
 * that call could add (bound), and keeps this call's path as pending.  The
 * cookie is RBM_COOKIE(slot, function's RBM_CALL_ADDS_* rule).
 */
enum call_adds {
	RBM_CALL_ADDS_ONE = 1,	    /* rb_hash_aset, rb_ary_push, rb_ary_unshift */
	RBM_CALL_ADDS_ARG3 = 2,	    /* rb_ary_cat(ary, ptr, len) */
	RBM_CALL_ADDS_TO_INDEX = 3, /* rb_ary_store(ary, idx, val): up to idx */
	RBM_CALL_ADDS_ARRAY = 4,    /* rb_ary_concat(ary, other): other's length */
};

struct call_watch {
	__u64 container; /* the Hash's or Array's address */
	/* the count is (flags & mask) >> shift when (flags & form_flag) == in_flags */
	__u64 form_flag;
	__u64 in_flags;
	__u64 mask;
	__u32 shift;
	/* otherwise it is the word at container + off, or at *(container + off) + deref_off */
	__u32 off;
	__u32 deref;
	__u32 deref_off;
	__u32 armed;
	__u32 pad;
	__u64 last;    /* the count at the last call on it */
	__u64 pending; /* the last call's path (0: none yet, or unread) */
	__u64 bound;   /* the most the last call can have added */
	__u64 hits;    /* calls on the container */
	__u64 added;   /* the count's increases, summed */
	__u64 no_path; /* of them, not given to a path (none pending, or past its bound) */
	__u64 unread;  /* calls whose count could not be read */
};

struct fork_event {
	__u32 child;
	__u32 parent;
	__u32 slot;
	__u32 pad;
};

/*
 * Processes picked up as they start (exec_watch.c): the exec tracepoint
 * judges the new program's file by its inode; a Ruby's process becomes a
 * candidate, held at ruby_options' return as launch mode holds its child.
 */
struct exe_key {
	__u64 ino;
	__u32 dev; /* the kernel's encoding: major << 20 | minor */
	__u32 pad;
};

enum exe_verdict {
	EXE_RUBY = 1,	  /* its process is a candidate from its exec */
	EXE_NOT_RUBY = 2, /* nothing more is done for its execs */
};

enum candidate_state {
	CAND_UNDECIDED = 1, /* held at ruby_options all the same: userspace decides then */
	CAND_WANTED = 2,
	CAND_REJECTED = 3, /* --match said no: never stopped */
};

enum exec_event_kind {
	EXEC_UNKNOWN = 1,  /* an exec of a file not judged yet */
	EXEC_RUBY = 2,	   /* an exec of a file judged Ruby: a candidate */
	EXEC_FOLLOWED = 3, /* launch mode: the command exec'd and is stopped */
	EXEC_HELD = 4,	   /* a candidate stopped at ruby_options' return */
	EXEC_UNHELD = 5,   /* the same in its terminal's foreground: not stopped (job control) */
};

struct exec_event {
	__u32 kind;
	__u32 pid;
	struct exe_key exe; /* EXEC_UNKNOWN, EXEC_RUBY, EXEC_FOLLOWED */
	__u64 at_ns;	    /* when told, CLOCK_MONOTONIC (EXEC_HELD: when the hold began) */
};

#endif /* RBMEMTRACE_H */

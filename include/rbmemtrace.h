/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Structures shared by the BPF program and the userspace loader. */
#ifndef RBMEMTRACE_H
#define RBMEMTRACE_H

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
	__u64 untracked; /* allocated but not recorded: live-object map was full */
	__u64 not_followed; /* replaced at a slot a compaction may have moved it from */
};

/* One tracked object, keyed by its address in the target. */
struct live_object {
	__u64 klass;
	__u64 seq; /* allocation time (ns): tells two objects at one address apart */
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

#endif /* RBMEMTRACE_H */

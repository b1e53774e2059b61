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
 * keep the receiver's class there), so they are keyed by kind alone.
 */
#define RBM_KIND(type, imemo) ((type) | ((imemo) << 8))
#define RBM_KIND_TYPE(kind) ((kind) & RB_T_MASK)
#define RBM_KIND_IMEMO(kind) (((kind) >> 8) & RB_IMEMO_MASK)

/* Per-class counters, one slot per CPU. */
struct class_key {
	__u64 klass; /* class VALUE; 0 for hidden objects and imemos */
	__u32 kind;
	__u32 pad;
};

struct class_counts {
	__u64 allocated;
	__u64 untracked; /* allocated but not recorded: live-object map was full */
};

/* One tracked object, keyed by its address in the target. */
struct live_object {
	__u64 klass;
	__u64 seq; /* allocation time (ns): tells two objects at one address apart */
	__u32 kind;
	__u32 stack_id;
};

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

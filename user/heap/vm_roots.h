/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The roots of a running Ruby, as rb_gc_mark_roots marks them, each with
 * where it came from in words a Ruby programmer reads: the constants
 * (walked from Object through every named module's constant table, so a
 * root is App::Store::CACHE, not Object), global variables, each thread's
 * fiber locals, the locals and other values of its live frames' VM stack,
 * at_exit blocks, the addresses C code registered (rb_gc_register_address)
 * and the VM's own lists (rb_vm_t: mark_object_ary, the load path...).
 * Listed in that order: a retainer path search that starts from all of
 * them at once prefers the first of two equally short paths.
 *
 * The threads' machine stacks and saved registers, which the GC marks
 * conservatively, are added last (stack_roots.c), once the heap's graph
 * says which words are objects: an aligned word that is a live slot.
 *
 * Every root keeps the address its value was read from, so a path printed
 * later can be re-read from its start (retainers.c).
 */
#ifndef RBM_VM_ROOTS_H
#define RBM_VM_ROOTS_H
#include <stddef.h>
#include <stdint.h>
#include "classnames.h"
#include "refs.h"
#include "refs_globals.h"
#include "ruby_symbols.h"
#include "ruby_target.h"
#include "strpool.h"

enum root_kind {
	ROOT_CONST,	    /* name: "App::Store::CACHE" */
	ROOT_GLOBAL,	    /* name: "$registry" */
	ROOT_FIBER_LOCAL,   /* name: "Thread.current[:k]" (of thread `thread`) */
	ROOT_FIBER_STORAGE, /* Fiber[] storage (3.2+) */
	ROOT_LOCAL,	    /* name: the local; a, b: the frame's iseq and pc */
	ROOT_FRAME_ENV,	    /* a frame's env escaped to the heap; a, b: iseq and pc */
	ROOT_SELF,	    /* a frame's self; a, b: iseq and pc */
	ROOT_STACK,	    /* another value of a VM stack (a temporary, an argument) */
	ROOT_THREAD,	    /* a thread's Thread object */
	ROOT_ERRINFO,	    /* the exception a thread is handling ($!) */
	ROOT_AT_EXIT,	    /* an at_exit block */
	ROOT_REGISTERED,    /* a C variable registered with the GC; a: its address */
	ROOT_VM,	    /* a list of the VM; name: "mark_object_ary", "$LOAD_PATH"... */
	ROOT_MACHINE_STACK, /* a word of a thread's machine stack or saved registers (conservative) */
	ROOT_KINDS,
};

struct root {
	uint64_t value;
	uint64_t src; /* where value was read; 0: not re-readable */
	uint8_t kind;
	uint16_t thread; /* 0: the main thread */
	uint64_t a, b;
	const char *name; /* interned, or static; NULL where a, b name it */
	uint64_t ec; /* on a VM stack: its execution context, to tell the frame is still live */
};

struct root_set {
	struct root *r;
	size_t n, cap;
	struct strpool names;
	/* what was walked */
	unsigned int threads, frames, modules, constants, globals, at_exit, registered;
	unsigned int skipped_frames; /* frames whose memory could not be read */
	/* each thread's execution context, for its machine stack (stack_roots.c) */
	struct root_ec {
		uint64_t ec;
		uint16_t thread;
	} *ecs;
	size_t necs;
	size_t conservative;	   /* roots from machine stacks and registers (the last ones) */
	uint64_t stack_words;	   /* words of machine stacks and registers read */
	unsigned int stacks_unread; /* stacks not mapped, or not readable */
	unsigned int stacks_cut;    /* stacks larger than STACK_ROOTS_MAX: their top part read */
	bool conservative_full;	    /* STACK_ROOTS_MAX_ROOTS reached: the rest not kept */
};

/* The words a kind is printed as in JSON: "constant", "global", "local"... */
const char *root_kind_name(enum root_kind k);

/*
 * Collects every root of t.  cn names classes (a module is walked into
 * when its own path is the constant's), rs names IDs.  0, or -errno with
 * err; a root that cannot be read is skipped and counted, not fatal.
 */
int vm_roots_collect(struct root_set *set, const struct ruby_target *t,
		     const struct refs_globals *g, struct class_namer *cn,
		     struct ruby_symbols *syms, char *err, size_t errlen);
void vm_roots_free(struct root_set *set);
/* stack_roots.c: thread th's execution context noted (no memory: its stack is not read) */
void vm_roots_note_ec(struct root_set *set, uint16_t th, uint64_t ec);

/*
 * Whether r still holds value now: its source re-read, and for a VM stack's
 * root, the slot still inside the stack's live part (below the top frame's
 * sp, or among the live control frames): a returned frame's slots keep
 * their old values.
 */
bool vm_root_holds(pid_t pid, const struct ruby_layout *l, const struct root *r);

/* An ID for an rb_id_table key (a serial): operators are their own serial. */
uint64_t ruby_id_of_serial(const struct ruby_layout *l, uint64_t serial);

/*
 * The constants of a class or module: (serial, value, address of the
 * value) for each, through its rb_classext_t; at most max.  Returns how
 * many, or -errno.
 */
struct const_entry {
	uint32_t serial;
	uint64_t value;
	uint64_t src;
};
int ruby_module_constants(pid_t pid, const struct ruby_layout *l, uint64_t klass,
			  struct const_entry *out, size_t max);

#endif

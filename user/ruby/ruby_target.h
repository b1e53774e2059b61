/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Knowing the target: which Ruby a process runs (its libruby or static
 * ruby, the version), its layout, found, decoded and proved against the
 * live process (ruby_layout.h, layout_decode.h, layout_proof.h), and the
 * few globals every mode starts from.  Reads only: no probe, no stop.
 */
#ifndef RBM_RUBY_TARGET_H
#define RBM_RUBY_TARGET_H
#include <limits.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "layout_decode.h"
#include "layout_proof.h"
#include "procmaps.h"
#include "ruby_layout.h"
#include "ruby_versions.h"

struct ruby_target {
	pid_t pid;
	struct ruby_image img;
	char version[32];
	struct ruby_layout layout;	       /* found, decoded and proved */
	char layout_from[PATH_MAX + 64];       /* where the layout came from, for -v and reports */
	char layout_code_diff[320];	       /* what the code said that the table did not */
	struct layout_decoded decoded;	       /* what the libruby's code says */
	double decode_seconds;		       /* what decoding it took */
	struct layout_proof proof;	       /* the checks against the live target */
	const struct ruby_alloc_points *alloc; /* where objects are born; NULL: not traceable */
	bool has_usdt;	      /* ruby:gc__* probes (Debian's 3.1); others are traced without them */
	uint64_t objspace;    /* the target's rb_objspace_t, 0 if unknown */
	uint64_t vm_ptr_addr; /* where ruby_current_vm_ptr lives in the target */
	uint64_t vm;	      /* what it held: another value means another program (exec) */
	uint64_t main_ractor_addr; /* where ruby_single_main_ractor lives in the target */
	/*
	 * GC.stat(:total_moved_objects) in the target, once the gc group's
	 * check of it passed; 0: unknown, and moves_why says why.
	 */
	uint64_t moved_addr;
	char moves_why[128];
};

/*
 * Reading memory works on more Rubies than tracing: a series whose layout
 * is known (the built-in table or the libruby's own DWARF) can have its
 * heap read; tracing also needs the series' allocation entry points.
 */
enum ruby_need {
	RUBY_NEED_MEMORY = 0, /* reading the heap: a known layout */
	RUBY_NEED_TRACE = 1,  /* probing allocations: known entry points too */
};

/*
 * The functions that open a target never exit: they return 0, or -errno
 * with a one-line error in err (errlen bytes; RBM_ERR_LEN is room enough),
 * which cli/ prints.  A ruby_target holds no resource: nothing to release.
 *
 * Checks a Ruby file before any process runs it (launch mode): its version
 * is supported, and it has what `need` asks for.
 */
int ruby_target_check_file(struct ruby_target *t, const char *host_path, const char *shown,
			   enum ruby_need need, char *err, size_t errlen);
/* Finds the Ruby mapped in pid and checks it as above (-ESRCH: "PID N exited"). */
int ruby_target_open(struct ruby_target *t, pid_t pid, enum ruby_need need, char *err,
		     size_t errlen);
/* Whether pid maps a Ruby that has what need asks for; if not, why (one line).  Never dies. */
bool ruby_target_supported(pid_t pid, enum ruby_need need, char *why, size_t n);
/*
 * The processes other than self whose command line matches re (NULL: any)
 * and which map a Ruby that has what need asks for, lowest pid first.
 * Returns how many were written into pids (at most max).
 */
size_t ruby_find_processes(const regex_t *re, pid_t self, enum ruby_need need, pid_t *pids,
			   size_t max);
/* Locates the image in a process whose file was checked already (launch mode). */
int ruby_target_attach(struct ruby_target *t, pid_t pid, char *err, size_t errlen);

/*
 * Proves the layout against the live target (layout_proof.h): the groups
 * in `use`, then the rest of what the mode needs.  Groups in `required`
 * that fail make it refuse; the others that fail are turned off, each said
 * in one line naming the Ruby, its libruby and the group.  launched: the
 * process is held before its main script (no Ruby frame to walk yet).
 * 0, or -1 with the refusal in why (one line).  Never dies.
 */
int ruby_target_require(struct ruby_target *t, unsigned int use, unsigned int required,
			bool launched, char *why, size_t n);
/* Runs the checks of the groups (layout_proof.c); the results land in t->proof. */
void ruby_target_prove(struct ruby_target *t, unsigned int groups, bool launched);
/* Whether group g was proved. */
bool ruby_target_proved(const struct ruby_target *t, enum proof_group g);
/*
 * The line that says group g is off: "Ruby 3.1.2 (/usr/lib/...): heap
 * layout not proved (why): no heap census".
 */
void ruby_target_group_line(const struct ruby_target *t, enum proof_group g, char *buf, size_t n);

/* The VALUE a libruby global (rb_cObject...) holds in the target: 0, or -errno with why. */
int ruby_target_global(const struct ruby_target *t, const char *name, uint64_t *value, char *err,
		       size_t errlen);
/* The same without the words: 0 or -errno. */
int ruby_target_global_value(const struct ruby_target *t, const char *name, uint64_t *value);
/* File offset of the hidden rb_class_allocate_instance, found through BasicObject; or why not. */
int ruby_target_class_allocator(const struct ruby_target *t, uint64_t *file_offset, char *err,
				size_t errlen);
/* The same without the words: 0 or -errno. */
int ruby_target_class_allocator_offset(const struct ruby_target *t, uint64_t *file_offset);
/*
 * Where the current thread's execution context is: libruby's TLS module id
 * (as the loader gave it) and ruby_current_ec's offset in its TLS block.
 * 0, or -ENOENT.
 */
int ruby_target_ec_tls(const struct ruby_target *t, uint64_t *modid, uint64_t *offset);
/*
 * Finds vm, objspace and the main ractor in the target (t->vm_ptr_addr, vm,
 * objspace, main_ractor_addr).  Returns the objspace address; 0 if unknown.
 */
uint64_t ruby_target_find_objspace(struct ruby_target *t);

/*
 * Whether the process still runs the program that was found: after an exec
 * the VM pointer is gone or different, even when the new program is Ruby
 * (0 is the same program's VM torn down as it exits).
 */
bool ruby_target_same_program(const struct ruby_target *t);

/* GC.stat's allocation counters, read from the target's objspace (gc_counters.h). */
struct gc_counts {
	uint64_t allocated;
	uint64_t freed;
	uint64_t moved;	   /* GC.stat(:total_moved_objects), when moved_addr is known */
	uint64_t gc_count; /* GC.count */
	bool valid;	   /* false too when the gc group was not proved */
};
void ruby_target_gc_counts(const struct ruby_target *t, struct gc_counts *c);

#endif

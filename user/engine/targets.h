/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Opening one target for reading its memory, the way every command does:
 * a thread's pid taken for its process, its Ruby found, its heap made
 * ready for a census; and census's one census of it.  Errors are returned
 * (-errno, their line in err) for cli/ to print.
 */
#ifndef RBM_TARGETS_H
#define RBM_TARGETS_H
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "classnames.h"
#include "report.h"
#include "ruby_target.h"

/* -p of a thread means its process: says so with -v and returns the process. */
pid_t target_process_of(pid_t pid);
/* census and why: pid's Ruby found for reading its memory.  0, or -errno with err. */
int target_memory_open(struct ruby_target *t, pid_t pid, char *err, size_t errlen);
/*
 * census and top: a target opened for its memory made ready for a heap
 * census (its layout, objspace and class names).  0, or -errno with a
 * one-line error in err (namer then holds nothing).
 */
int target_heap_open(struct ruby_target *t, struct class_namer *namer, char *err, size_t errlen);
/* census: a census of t's heap now, into r (zeroed by the caller), finished.  0 or -errno. */
int target_census(struct ruby_target *t, struct report *r, char *err, size_t errlen);
/* --match's pattern compiled into re (regfree it).  0, or -EINVAL with its line in err. */
int target_match_compile(regex_t *re, const char *match, char *err, size_t errlen);
/*
 * A target stopped by someone else (a debugger, SIGSTOP) allocates nothing
 * while it is stopped: said in one line, with its tracer, so that a report of
 * few or no allocations has its reason.  at_end: as the trace ends.  Whether
 * it is stopped.
 */
bool target_say_stopped(pid_t pid, bool at_end);

#endif

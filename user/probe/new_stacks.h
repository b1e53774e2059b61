/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call paths the BPF side stores for the first time, told through the
 * run's new_stacks ring buffer and named at once by a thread of their own:
 * a path's frames may name iseqs that a GC frees soon after (a required
 * file's top level, a class body), so it is named before that rather than
 * at the main loop's next refresh, whatever the main loop is busy with.
 *
 * The thread calls each session's handler with the session's names lock
 * taken by the handler; routes change under this module's lock, so a
 * session whose route is gone is never called again.  Lock order: this
 * module's lock, then a session's; the main thread must not flush while
 * holding a session's lock.
 */
#ifndef RBM_NEW_STACKS_H
#define RBM_NEW_STACKS_H
#include <stdint.h>

struct rbmemtrace_bpf;

typedef void (*new_stack_fn)(void *ctx, uint64_t stack_id);

/* Opens the run's ring buffer and starts the thread (once).  0 or -errno. */
int new_stacks_open(struct rbmemtrace_bpf *skel);
/* Where the paths of slot go; fn NULL stops them (and returns once no call is running). */
void new_stacks_route(int slot, new_stack_fn fn, void *ctx);
/* Hands over every event waiting, on the calling thread: before a report. */
void new_stacks_flush(void);

#endif

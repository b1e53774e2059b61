/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The watch's fallback where no hardware breakpoint can be had (no free
 * debug register, no breakpoint PMU, a hypervisor that refuses): uprobes on
 * the exported functions Ruby's insertions go through, rb_hash_aset for a
 * Hash (Hash#[]=, #store, ||=, opt_aset; #merge! and #update too from 3.3),
 * rb_ary_push, rb_ary_cat, rb_ary_store, rb_ary_concat and rb_ary_unshift
 * for an Array (<<, #push, #append, []=, #concat), one BPF program
 * (on_container_call) filtering by the container's address.  Each call on
 * the container settles the one before (rbmemtrace.h, struct call_watch);
 * the end settles the last.  Insertions by other functions (Array#unshift,
 * #insert, Hash#merge! on 3.1), or by callers the compiler inlined a probed
 * function into, are not seen as calls: counted from the container's
 * growth without a line (missed), or, between two calls, given to the
 * earlier call's line within what that call could add.  The probes trap on
 * every call of those functions, on any container: each is charged
 * WATCH_CALL_COST_S, each on a watched container WATCH_CALL_WATCHED_COST_S.
 */
#ifndef RBM_WATCH_UPROBE_H
#define RBM_WATCH_UPROBE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "watch.h"

/*
 * What one call of a probed function costs the calling thread: on any
 * container, the trap and the program's filter; on a watched one, the walk
 * of its Ruby frames as well.  Measured here (2026-11-29, 3.1.2, rb_hash_aset
 * probed past its endbr64 on a push: docs/benchmark.md): Hash#[]= took 0.96
 * to 1.32 us more on an unwatched Hash, 2.2 to 3.0 us more on the watched one.
 */
#define WATCH_CALL_COST_S 1.3e-6
#define WATCH_CALL_WATCHED_COST_S 3e-6

/* RBM_WATCH_FORCE_UPROBE=1 (a test aid): the fallback for every container, no breakpoint tried. */
bool watch_calls_forced(void);

struct call_watch;
/*
 * How the BPF program reads a container's count (rbmemtrace.h's struct
 * call_watch: its form from its flags, then the flags' bits or the word),
 * by its type (RB_T_HASH, RB_T_ARRAY) and the layout: 0, or -EINVAL.
 */
int watch_call_rule(const struct ruby_layout *l, uint32_t type, struct call_watch *cw);

struct watch_calls;

/*
 * Watches r[which[0 .. n)] by uprobes, their watch index in the BPF maps
 * slot * RBM_MAX_WATCHES + which[k].  0 and *out (each result says
 * by_call, or why not in ended), or -errno with err: nothing attached.
 */
int watch_calls_start(struct watch_calls **out, const struct watch_target *t,
		      struct watch_result *r, const uint32_t *which, size_t n, char *err,
		      size_t errlen);
/* The containers read again: a freed or moved one's watch ends.  -ESRCH: the target is gone. */
int watch_calls_tick(struct watch_calls *c);
/* What the probed calls so far cost, in seconds (the budget's charge); 0 without c. */
double watch_calls_cost(const struct watch_calls *c);
/*
 * Detaches the probes, settles each watch's last call and fills its result
 * (count, missed, hits, sizes; its paths stay in the insertions map for
 * watch.c's collect).  stopped: why a watch still on ended early, or NULL.
 * Frees c.
 */
void watch_calls_finish(struct watch_calls *c, const char *stopped);

#endif

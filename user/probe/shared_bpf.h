/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run's one BPF object, shared by every process it traces: loading it
 * (verifying the programs, creating the shared maps) costs ~0.6 s, once.
 * Each traced process then takes a slot (rbmemtrace.h): its state in the
 * mmaped `procs` array and its own maps, created here with its own sizes
 * and put at its index of the map-in-map arrays: milliseconds.
 */
#ifndef RBM_SHARED_BPF_H
#define RBM_SHARED_BPF_H
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "rbmemtrace.h"

struct rbmemtrace_bpf;
struct bpf_program;

/* An inner map's shape, as the template had it (libbpf frees templates once loaded). */
struct inner_shape {
	int type;
	__u32 key_size, value_size, max_entries, flags;
};

enum inner_map {
	INNER_LIVE,
	INNER_COUNTS,
	INNER_FALLBACK,
	INNER_STACKS,
	INNER_SELVES,
	INNER_FILTER,
	INNER_REAP,
	INNER_MAPS
};

struct shared_bpf {
	struct rbmemtrace_bpf *skel;
	bool use_multi;		   /* loaded for uprobe_multi links (kernel 6.6+) */
	unsigned long depth;	   /* the call paths' values are sized for this depth */
	struct proc_state *states; /* procs, mmaped */
	size_t states_size;
	bool used[RBM_MAX_SLOTS];
	struct inner_shape shapes[INNER_MAPS];
};

/* One traced process's part of the object. */
struct proc_slot {
	int index; /* -1: none */
	struct proc_state *st;
	struct reap_queue *reap; /* its reap array's one value, mmaped */
	int live_fd, counts_fd, fallback_fd, stacks_fd, selves_fd, filter_fd, reap_fd;
	size_t stacks_value_size;
};

/* The object once loaded; NULL before. */
struct shared_bpf *shared_bpf(void);
/*
 * Loads it, with call path values for depth frames, with or without the
 * uprobe_multi programs; the watchpoint's program comes apart, when first
 * asked for (shared_bpf_watch_program).  0 or -errno, nothing loaded then.
 */
int shared_bpf_load(unsigned long depth, bool multi);
/*
 * The watchpoint's program (on_watched_write) into *prog, loaded on first
 * use: its verification takes ~0.2 s, which a trace that watches nothing
 * need not pay.  A second instance of the object with only that program,
 * every map the loaded one's.  0, or -errno (then on every call).
 */
int shared_bpf_watch_program(struct bpf_program **prog);
/*
 * Starts loading it on a thread of its own, for a trace that will watch: a
 * period's or the trace's loop then does not wait ~0.2 s for it.  Joined by
 * shared_bpf_watch_join (at the session's close).
 */
void shared_bpf_watch_prepare(void);
void shared_bpf_watch_join(void);
/*
 * The watch's uprobe fallback's program (on_container_call, or its
 * uprobe_multi twin as the object's links are) into *prog, loaded apart
 * on first use as the watchpoint's is.  0, or -errno.
 */
int shared_bpf_watch_call_program(struct bpf_program **prog);
/*
 * Starts creating the first process's live-object map (preallocated: ~0.2 s
 * at a million entries) on a thread of its own, while the object loads;
 * proc_slot_open takes it if the sizes agree.
 */
void shared_bpf_prepare_live_map(unsigned long max_objects);
/* Takes a free slot and makes its maps: 0 or -errno (-ENOSPC: every slot is taken). */
int proc_slot_open(struct proc_slot *ps, unsigned long max_objects, unsigned long max_stacks,
		   bool stacks);
/* Gives the slot back (no probe of its may still be attached).  Safe on a closed slot. */
void proc_slot_close(struct proc_slot *ps);
/*
 * Once the report is out: hands the run's links and maps to a child that
 * lets go of them after this process has exited, so that the user does not
 * wait for their grace periods.  Harmless if it cannot fork.
 */
void shared_bpf_release_after_exit(void);

#endif

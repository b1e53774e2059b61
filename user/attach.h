/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Attaching the BPF programs to one Ruby process. */
#ifndef RBM_ATTACH_H
#define RBM_ATTACH_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rbmemtrace_bpf;
struct bpf_link;

#define MAX_LINKS 16

struct probes {
	struct rbmemtrace_bpf *skel;
	pid_t pid;
	const char *binary; /* libruby or a static ruby, as a path reachable from here */
	bool verbose;
	struct bpf_link *alloc[MAX_LINKS];
	int nalloc;
	struct bpf_link *other[MAX_LINKS];
	int nother;
};

/*
 * Uretprobes on every allocation entry point: the exported ones by name and
 * the hidden rb_class_allocate_instance by file offset.  0 or -errno.
 */
int probes_attach_alloc(struct probes *p, uint64_t class_allocate_instance_offset);
/* USDT ruby:gc__mark__{begin,end} and ruby:gc__sweep__{begin,end}. */
int probes_attach_gc(struct probes *p);
/* Launch mode: stop the child at ruby_options (start) and ruby_sig_finalize (end). */
int probes_attach_launch_stops(struct probes *p);
void probes_detach_alloc(struct probes *p);
void probes_detach_all(struct probes *p);

/* The exported allocation functions, for tests and -v. */
extern const char *const alloc_functions[];
extern const int alloc_functions_count;

#endif

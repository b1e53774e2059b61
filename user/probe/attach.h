/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Attaching the BPF programs to one Ruby process. */
#ifndef RBM_ATTACH_H
#define RBM_ATTACH_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "ruby_versions.h"

struct rbmemtrace_bpf;
struct bpf_link;

#define MAX_LINKS 16 /* >= MAX_ALLOC_PROBES */
#define MAX_USDT_LINKS 4 /* ruby:gc__{mark,sweep}__{begin,end} */

enum alloc_probe_kind {
	ALLOC_PROBE_TRACER,	    /* the real thing */
	ALLOC_PROBE_EMPTY_UPROBE,   /* benchmark baselines: the bare trap */
	ALLOC_PROBE_EMPTY_URETPROBE,
};

/* Where the allocation probes go: the functions, their offsets, how they are stepped. */
struct alloc_sites {
	int alloc_probes; /* how many: the points' functions, and the hidden allocator */
	const char *alloc_names[MAX_LINKS];
	uint64_t alloc_offsets[MAX_LINKS]; /* where the probe is: the entry, or past an endbr64 */
	/* The kernel emulates the probed instruction (a push) instead of stepping it. */
	bool alloc_emulated[MAX_LINKS];
	bool alloc_offsets_known;
	/*
	 * 1 + the probe whose object is stored through the function's first
	 * argument (rb_alloc_tmp_buffer_with_count), 0 if none: an entry link
	 * on the same breakpoint remembers that argument for the return.
	 */
	int store_probe;
};

/* The links attached, and those still coming off. */
struct probe_links {
	int detaching;	    /* allocation probes still being taken off in the background */
	int multi_fd;	    /* the uprobe_multi allocation link, 0 when not attached */
	int store_multi_fd; /* the store_probe's entry link with use_multi, 0 when not attached */
	struct bpf_link *alloc[MAX_LINKS];
	int nalloc;
	struct bpf_link *other[MAX_LINKS];
	int nother;
	/*
	 * The USDT links, apart: libbpf's USDT manager (one per BPF object,
	 * shared by every session of a run) is not thread-safe, so they are
	 * attached and destroyed one at a time (attach.c's usdt_lock).
	 */
	struct bpf_link *usdt[MAX_USDT_LINKS];
	int nusdt;
};

struct probes {
	/* Set by the session before attaching */
	struct rbmemtrace_bpf *skel;
	int slot; /* the process's slot of the object: the probes' cookies carry it */
	pid_t pid;
	const char *binary; /* libruby or a static ruby, as a path reachable from here */
	bool verbose;
	const struct ruby_alloc_points *points; /* the series' allocation functions */
	uint64_t class_allocate_instance;	/* file offset of the hidden allocator, if probed */
	enum alloc_probe_kind alloc_kind;
	bool use_multi; /* one uprobe_multi link for the allocation probes (kernel 6.6+) */
	/* Found and attached here */
	struct alloc_sites sites;
	struct probe_links links;
};

/*
 * Uretprobes on every allocation entry point: the exported ones by name and
 * the hidden rb_class_allocate_instance by file offset.  0 or -errno; on
 * failure nothing stays attached.  Quiet repeats it without messages, for
 * the sampler that attaches and detaches the probes many times a second.
 */
int probes_attach_alloc(struct probes *p, bool quiet);
/* Finds the allocation functions' offsets and first instructions (alloc_emulated); 0 or -errno. */
int probes_resolve_alloc(struct probes *p);
/*
 * With the uprobe_multi link on: takes the allocation breakpoints out of
 * the children the target forked (see forks.c).  0 or -errno.
 */
int probes_sweep_forked(struct probes *p);
/*
 * USDT ruby:gc__mark__{begin,end} and ruby:gc__sweep__{begin,end}, and the
 * compaction probe: for tracing every allocation, where dead entries are
 * deleted by BPF on the target's thread at the next GC probe.
 */
int probes_attach_gc(struct probes *p);
/* Only the uprobe that follows GC.compact's moves (a few hits per compaction). */
void probes_attach_compaction(struct probes *p);
/* Launch mode: stop the child at ruby_options (start) and ruby_sig_finalize (end). */
int probes_attach_launch_stops(struct probes *p);
/* -p: ruby_sig_finalize alone, where BPF reads Ruby's last counters (one hit, at the exit). */
int probes_attach_exit(struct probes *p);
/* Only the stop at ruby_sig_finalize (a process the exec watch held at its start). */
int probes_attach_exit_stop(struct probes *p);
/*
 * Returns at once: the breakpoints go now, the links' grace periods pass in
 * the background.  probes_attach_alloc waits for them.
 */
void probes_detach_alloc(struct probes *p);
/* Waits until every background detach is done. */
void probes_wait_detached(struct probes *p);
void probes_detach_all(struct probes *p);
/* Detaches the GC and launch probes, keeping the allocation probes. */
void probes_detach_all_but_alloc(struct probes *p);

/* BPF_TRACE_UPROBE_MULTI, unknown to the headers libbpf 1.1 builds against. */
#define RBM_BPF_TRACE_UPROBE_MULTI 48

/* True if the kernel emulates this first instruction at a uprobe: a push or a jmp. */
bool uprobe_insn_emulated(const unsigned char *code, size_t n);

#define ENDBR64_LEN 4
/* Bytes of a function's start uprobe_entry_classify looks at: endbr64, four moves, a jmp. */
#define UPROBE_ENTRY_BYTES (ENDBR64_LEN + 4 * 6 + 5)

/* Where an allocation probe goes in a function whose first bytes are code[0..n). */
struct uprobe_entry {
	unsigned int skip; /* bytes past the entry: 0, or endbr64 and moves of constants */
	bool emulated;	   /* the instruction there is emulated, not single-stepped */
};

struct uprobe_entry uprobe_entry_classify(const unsigned char *code, size_t n);

#endif

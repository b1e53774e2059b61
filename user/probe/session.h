/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A trace session: one target from finding its Ruby to detaching.  It loads
 * and attaches the BPF object, runs the poll loop (free-tracking passes,
 * name refreshes, sampling windows), takes the final census of tracked
 * objects and fills a report model.  Front ends (trace, top, fleet) drive
 * it through this small API; they never touch BPF maps themselves.
 */
#ifndef RBM_SESSION_H
#define RBM_SESSION_H
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "attach.h"
#include "clock.h"
#include "forks.h"
#include "gc_watch.h"
#include "census_model.h"
#include "proc_labels.h"
#include "classnames.h"
#include "report.h"
#include "ruby_symbols.h"
#include "ruby_target.h"
#include "shared_bpf.h"
#include "stacks.h"
#include "tracker.h"
#include "tracer_cpu.h"
#include "u64map.h"
#include "verdict_run.h"
#include "watch.h"
#include "windows.h"

#define MAX_CLASS_FILTERS 64

struct trace_options {
	pid_t pid;		/* attach to this process, or */
	char **command;		/* start this one (launch mode) */
	double duration;	/* seconds; 0: until stopped or the target ends */
	unsigned long max_objects;
	unsigned long depth;	/* Ruby frames per allocation; 0: no stacks */
	unsigned long max_stacks;
	const char *classes[MAX_CLASS_FILTERS]; /* --class: capture and report only these */
	int nclasses;
	bool full;		/* trace every allocation */
	double max_overhead;	/* percent; 0: not given */
	enum alloc_probe_kind empty_probes; /* benchmark baseline instead of the tracer */
	/* pid is stopped at ruby_options' return by the exec watch (exec_watch.h), since then */
	bool held;
	double held_since;
	double start_timeout; /* launch mode: seconds the command has to exec Ruby */
	bool no_verdict;      /* -p: no heap walk at the start for the leak verdict */
	double watch_seconds; /* --watch: the verdict's containers watched this long after it */
	/* Watch the growing containers within the trace (one -p, a verdict, no --watch) */
	bool watch_in_run;
	/* --every: each period's containers watched through the next (session_watch_points) */
	bool watch_periods;
};

/*
 * The session's state, split by the phase that fills it.  Its files depend
 * one way, each on those above it only (no file calls one below it):
 *
 *   session_names.c    naming classes and call paths, the --class filter
 *   session_bpf.c      the run's BPF object loaded, this process's slot
 *   session_launch.c   launch mode: the command started held, to its Ruby
 *   session_attach.c   attach: the target found, the probes on (struct
 *                      session_attached); undone by session_attach_release
 *   session_snapshot.c the censuses: the heap's at the start and the end,
 *                      the final pass over the tracked objects (struct
 *                      session_snapshot)
 *   session_verdict.c  the leak verdict from the censuses and the walks
 *   session_watch.c    its containers watched, within the trace or after
 *                      it (struct session_watching)
 *   session_poll.c     the start and the poll loop (struct session_loop,
 *                      struct session_budget): reads attach's results,
 *                      takes the final census when the target ends
 *   session_report.c   the report, finishing and closing: reads them all
 */

/* What attaching found and holds: the run's BPF object, its slot, the probes (session_attach.c). */
struct session_attached {
	pid_t ns_pid;	 /* the target's pid in its own pid namespace; 0: the same */
	bool child_held; /* launched, still stopped before Ruby ran: killed if not let go */
	bool held; /* picked up at its start (opt.held): stopped at its end too, not our child */
	struct rbmemtrace_bpf *skel; /* the run's, shared by its sessions */
	struct proc_slot slot;	      /* this process's part of it */
	struct proc_state *st;	      /* its state there (slot.st) */
	struct probes probes;
	struct fork_sweeper forks; /* --full and launch mode with the uprobe_multi link */
	bool use_multi;		   /* the kernel has uprobe_multi links */
	const struct ruby_layout *heap_layout; /* NULL: no census for this Ruby */
};

/*
 * The namers (classes, call paths, IDs) (session_names.c).  Also used by the
 * thread that names new call paths at once (new_stacks.h): lock is taken
 * around every use.
 */
struct session_names {
	pthread_mutex_t lock;
	struct class_namer namer;
	struct ruby_symbols symbols;
	struct symbolizer symbolizer;
	struct u64map filtered; /* klass -> 1 captured, 2 skipped (--class) */
	uint64_t untold_named;	/* stacks_untold when the stacks map was last walked */
};

/* The poll loop's clocks and counters (session_poll.c). */
struct session_loop {
	uint64_t turns;		/* of the loop: how often it woke */
	uint64_t seen_sweeps;	/* with GC probes: their sweep steps */
	uint64_t seen_gc_count; /* without GC probes: Ruby's GC count at the last look */
	double last_gc_seen;
	double last_exec_check;
	double last_end_check;
	double last_pass, last_names;
};

/* Sampling's budget: a pass per GC cycle, and what is charged to it (session_poll.c). */
struct session_budget {
	uint64_t charged_compaction_hits;
	uint64_t charged_scan_ns; /* compaction scans' time already charged */
	/* The last pass found nothing tracked, after this many windows: none to judge until more. */
	bool pass_found_none;
	uint64_t windows_at_pass;
	uint64_t compaction_hits_at_pass; /* and what else could write the live map then */
	bool detaching_at_pass;
	uint64_t judged_count;		       /* Ruby's GC count at the last settled pass */
	uint64_t cycles_judged, cycles_missed; /* GC cycles a pass judged, and not */
	struct gc_watch gc_watch;	       /* when to look at the GC count again */
	/* The target's share of our CPU, charged every second */
	struct tracer_cpu tracer_cpu;
	double last_cpu_charge, cpu_charged;
	double last_pass_took;
};

/* Ruby's counters and the heap censuses at the start and the end (session_snapshot.c). */
struct session_snapshot {
	struct gc_counts counts_start, counts_last;
	bool counts_stale; /* counts_last: the last read before the target exited unseen */
	struct census census_start, census_end;
	bool have_census_start, have_census_end;
	bool final_done; /* the final census and pass are taken */
	struct verdict_base *verdict; /* -p: the start's walk for the leak verdict */
	struct verdict *exit_verdict; /* launch mode: read while stopped at its exit */
	/* The verdict's traced objects: address -> stack id + 1, dumped once per verdict. */
	struct u64map traced_at;
	bool traced_indexed;
};

/*
 * The watch within the trace (session_watch.c): at its time a walk names
 * the containers that grew since the start, watched until the trace ends.
 */
struct session_watching {
	double at; /* when the naming walk runs; 0: no watch within the trace */
	bool started;
	struct watch_run *run; /* while watching */
	struct watch_result r[RBM_MAX_WATCHES];
	size_t n;
	double walk_seconds; /* the naming walk's */
};

struct session {
	/* What the front ends (cli/) read and set by name: the target, the clock, the end. */
	struct trace_options opt; /* a copy: the session may turn stacks off */
	struct ruby_target target;
	char command[64]; /* its command name, read while it runs (untrusted) */
	struct proc_labels labels; /* its container and pod, read as it is attached */
	bool launched;
	bool sampling;		/* --max-overhead: probes attached in windows */
	struct windows windows; /* sampling's windows (top's drill-down cuts them) */
	double start, end;
	const char *end_reason; /* set when the session ends */
	bool target_exited;
	int exit_status; /* launch mode: the command's, once it exited */
	int failed;	 /* an error ended it (session_poll): -errno, its words in error */
	char error[512];
	/* By phase */
	struct session_attached at;
	struct session_names names;
	struct tracker tracker;
	struct session_loop loop;
	struct session_budget budget;
	struct session_snapshot snap;
	struct session_watching watching;
};

/*
 * The session never exits the process: an error is returned, -errno (or -1),
 * with its one line in the caller's err (errlen bytes; RBM_ERR_LEN is room
 * enough), for cli/ to print.
 *
 * Finds the target's Ruby (starting the command held, in launch mode),
 * loads the BPF object and attaches every probe.  0, or an error after
 * which s holds nothing (what it took was given back: a launched command
 * is killed, never left stopped) and may be freed.
 */
int session_open(struct session *s, const struct trace_options *opt, char *err, size_t errlen);
/*
 * Lets the target run traced: the start of the trace.  0, or an error
 * (its probes are off, the target is gone...) after which s is still open:
 * session_close it.
 */
int session_start(struct session *s, char *err, size_t errlen);
/*
 * One turn of the poll loop at time now: notices the target's end, steps
 * the sampling windows, checks tracked objects after GC sweeps and names
 * new classes and call paths.  Returns the seconds to wait before the next
 * turn, or a negative number once the session has ended (s->end_reason).
 */
double session_poll(struct session *s, double now);
/*
 * Polls until the duration is over, *stop is set (a signal) or the target
 * ends.  0, or s->failed when an error ended it (session_poll returned -1
 * with s->failed and s->error set: probes that could not go on).
 */
int session_run(struct session *s, volatile sig_atomic_t *stop);
/* Takes the tracked objects' final census and detaches every probe. */
void session_finish(struct session *s);
/* Fills r (zeroed by the caller) with what the session learned, finished. */
int session_report(struct session *s, struct report *r);
/* The same while the session runs (top's drill-down): what it learned so far. */
int session_report_now(struct session *s, struct report *r);
/*
 * The same with a heap census taken now as its end figures (heap_end and
 * every class's live_end, bytes): a period's report (trace --every, serve).
 * 0, or -errno with why (-ESRCH: the target is gone; -EOPNOTSUPP: its heap
 * cannot be read).
 */
int session_report_census(struct session *s, struct report *r, char *why, size_t n);
/* The same, its census kept in *keep (with each slot's state, for the next verdict). */
int session_report_census_keep(struct session *s, struct report *r, struct census *keep,
			       char *why, size_t n);
/*
 * Starts taking every probe of s off, in the background: closing several
 * sessions, each starts first, so that their detaches overlap.
 */
void session_detach_start(struct session *s);
/*
 * Frees what s holds, open or half open (session_open's error path); a
 * launched command still stopped before its Ruby ran is killed and reaped.
 * Returns once every probe is off (s may be freed then).
 */
void session_close(struct session *s);
/* The exit status rbmemtrace returns: the command's in launch mode, else 0. */
int session_exit_status(const struct session *s);

/*
 * --empty-probes: the bare trap at every allocation, for bench/; no report.
 * The command's exit status (launch mode) or 0; an error: -errno with err.
 */
int session_run_empty_probes(struct session *s, volatile sig_atomic_t *stop, char *err,
			     size_t errlen);

/*
 * Internal to the session's files, in their order (each calls only those
 * above it; see struct session).
 */

/* session_names.c: naming, the --class filter */
/* --class: whether the class called name is reported. */
bool session_class_wanted(const struct session *s, const char *name);
/* The same as a census_to_report filter (ctx: the session). */
bool session_class_filter(void *s, const char *name);
/* Names the classes the tracker has tallied and the new call paths (--class sorts them). */
void session_refresh_names(struct session *s);
/* new_stacks.h's handler: names one call path the BPF side just stored. */
void session_name_new_stack(void *ctx, uint64_t stack_id);
/* The tracker's class_moved: a class left from for to; neither address keeps a name. */
void session_class_moved(void *ctx, uint64_t from, uint64_t to);

/* session_bpf.c: the run's BPF object */
/* The run's BPF object into *sh, loaded by the first caller: 0, or -errno with why. */
int session_shared_bpf(unsigned long depth, struct shared_bpf **sh, char *err, size_t errlen);
/* The run's BPF object and a slot of it for s: 0, or -errno with why. */
int session_load_bpf(struct session *s, char *err, size_t errlen);
void session_quiet_libbpf(bool quiet);

/* session_launch.c, session_attach.c: attach */
/*
 * What a trace cannot do without: allocation probes, GC counters (ages, the
 * sampler's placement) and class names (every row is a class).  Without the
 * heap it reports no census; without stacks, no sites or call paths.
 */
#define SESSION_TRACE_NEEDS                                                                        \
	(PROOF_BIT(PROOF_PROBES) | PROOF_BIT(PROOF_GC) | PROOF_BIT(PROOF_CLASSES))
/* Launch mode's start (session_launch.c): 0, or -errno with why; the child is s's to close. */
int session_start_command(struct session *s, char *err, size_t errlen);
/* The launched child is let go or, with kill_it, killed and reaped. */
void session_release_child(struct session *s, bool kill_it);
/* A wait status as an exit status: the code, or 128 + the signal. */
int session_decode_status(int status);
int session_configure_stacks(struct session *s, char *err, size_t errlen);
/* Why probes could not go on (the probes taken off), in words a user can act on: -errno. */
int session_attach_error(struct session *s, int err, char *msg, size_t msglen);
/*
 * Gives back what attaching took (names, tracker, probes, slot; a launched
 * child still stopped is killed): session_open's error path, session_close.
 */
void session_attach_release(struct session *s);

/* session_snapshot.c: the censuses */
/* A census of the target's heap now, kept in the session. */
void session_heap_census(struct session *s, enum census_moment when);
/* Adds the censuses' figures to r. */
int session_heap_report(struct session *s, struct report *r);
void session_heap_free(struct session *s);
/*
 * The leak verdict's end as far as s can give it (its censuses, the
 * start's walk, its traced objects' sites), into e; the verdict returned
 * says why there is none (none) when it cannot be judged.  NULL: no memory.
 * A trace's end: the start census's slots go once the end's are marked.
 */
struct verdict *session_verdict_open(struct session *s, struct verdict_end *e);
/* 0 when s's heap can be read (its heap layout proved); else -EOPNOTSUPP, and why. */
int session_heap_unreadable(const struct session *s, char *why, size_t n);
/* Launch mode, the command stopped at its exit: the verdict of what its holders keep. */
void session_verdict_at_exit(struct session *s);
/*
 * The verdict from base and start to end, its end walked now (top's
 * drill-down): NULL out of memory; its none says why when it has no end.
 */
struct verdict *session_verdict_walk(struct session *s, const struct verdict_base *base,
				     const struct census *start, const struct census *end);
/*
 * session_watch.c: after the verdict v of s's trace, its points' containers
 * watched for seconds with hardware watchpoints, the lines that added their
 * entries named into each point's insertions.  Said in them when it fails.
 */
void session_watch_verdict(struct session *s, struct verdict *v, double seconds,
			   volatile sig_atomic_t *stop);
/* The watch within the trace: planned at its start (opt.watch_in_run), when it begins. */
void session_watch_plan(struct session *s);
/*
 * One turn of the poll loop at t: the naming walk when its time comes, then
 * the watch's ticks and its traps charged to the budget.  Returns the most
 * the loop may wait before the next turn.
 */
double session_watch_poll(struct session *s, double t);
/* The watch within the trace ended (its last counts read, every event closed). */
void session_watch_end(struct session *s);
/* --every: v's growing containers watched from now to the next period's end (opt.watch_periods). */
void session_watch_points(struct session *s, struct verdict *v);
/* Its results into the end verdict v's points of the same containers; then freed. */
void session_watch_fill(struct session *s, struct verdict *v);
/* The same from another start (a period's: the last period's walk and census) to end. */
struct verdict *session_verdict_open_at(struct session *s, struct verdict_end *e,
					const struct verdict_base *base,
					const struct census *start, const struct census *end);
/* Stops the allocation probes and takes the census the report is made of (once). */
void session_final_census(struct session *s);

#endif

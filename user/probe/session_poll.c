// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session while it runs: the poll loop notices the target's end (exit,
 * exec, the launched command's last stop), steps the sampling windows,
 * runs the free-tracking passes after GCs, collects the BPF side's counts
 * and names new classes and call paths while the target can be read.
 * session_start lets the target run traced.  Calls the attach, snapshot
 * and names files, never the report's (the order: session.h).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include "diag.h"
#include "exec_watch.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include <pthread.h>
#include "new_stacks.h"
#include "session.h"
#include "target_mem.h"

/*
 * An exec replaces the traced program, even by another Ruby that the
 * probes would trace into the same report: the counts stay as they were
 * at the last check, and the report says so.
 */
static bool target_execed(struct session *s)
{
	double t = now_seconds();

	if (t - s->loop.last_exec_check < 0.25)
		return false;
	s->loop.last_exec_check = t;
	if (ruby_target_same_program(&s->target) || target_gone(s->target.pid))
		return false;
	s->target_exited = true; /* the traced program is gone: nothing of it to read */
	s->end_reason = "target exec";
	return true;
}

/* Whether the target ended; sets end_reason when it did. */
static bool target_ended(struct session *s)
{
	pid_t pid = s->target.pid;
	int status;

	if (s->at.held && __atomic_exchange_n(&s->at.st->exit_stop_sent, 0, __ATOMIC_ACQ_REL)) {
		double t0 = now_seconds();

		/* Stopped at ruby_sig_finalize as a launched command is; not our child. */
		session_final_census(s);
		session_verdict_at_exit(s);
		held_release(s->at.skel, pid);
		if (s->sampling)
			windows_charge(&s->windows, now_seconds() - t0);
		s->end_reason = "program finished";
		return true;
	}
	if (!s->launched) {
		/* A zombie has exited too: its parent just has not reaped it yet. */
		if (target_gone(pid)) {
			s->target_exited = true;
			s->end_reason = "target exited";
			return true;
		}
		return target_execed(s);
	}
	if (waitpid(pid, &status, WNOHANG | WUNTRACED) != pid)
		return target_execed(s);
	/*
	 * A stop the user sent (Ctrl-Z, kill -STOP) is theirs: the child stays
	 * stopped until they continue it.  Only the stop BPF sent at
	 * ruby_sig_finalize means the main program is done.
	 */
	if (WIFSTOPPED(status) &&
	    !__atomic_exchange_n(&s->at.st->exit_stop_sent, 0, __ATOMIC_ACQ_REL)) {
		rbm_info("PID %d was stopped by signal %d: not rbmemtrace's stop", pid,
			 WSTOPSIG(status));
		return false;
	}
	if (WIFSTOPPED(status)) {
		/* Stopped at ruby_sig_finalize: the main program is done. */
		session_final_census(s);
		session_verdict_at_exit(s);
		held_release(s->at.skel, pid);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		s->exit_status = session_decode_status(status);
		s->end_reason = "command finished";
		return true;
	}
	s->exit_status = session_decode_status(status);
	s->target_exited = true;
	s->end_reason = "target exited";
	return true;
}

/*
 * Whether the GC may have freed tracked objects since the last pass, when
 * tracing everything.  With the GC probes on, their sweep steps say so;
 * without them (a Ruby without USDT) Ruby's GC count does, then a second
 * more while lazy sweeping frees what that GC found dead.
 */
static bool gc_worked(struct session *s, double t)
{
	uint64_t count;

	if (s->target.has_usdt) {
		uint64_t sweeps = __atomic_load_n(&s->at.st->sweep_steps, __ATOMIC_ACQUIRE);

		if (sweeps == s->loop.seen_sweeps)
			return false;
		s->loop.seen_sweeps = sweeps;
		return true;
	}
	if (s->tracker.io.gc_count_addr &&
	    target_read_u64(s->target.pid, s->tracker.io.gc_count_addr, &count) == 0 &&
	    count != s->loop.seen_gc_count) {
		s->loop.seen_gc_count = count;
		s->loop.last_gc_seen = t;
	}
	return t - s->loop.last_gc_seen < 1.0;
}

/* Sampling: what the probes outside the windows cost the target, charged to the budget. */
static void charge_other_probes(struct session *s)
{
	uint64_t hits = __atomic_load_n(&s->at.st->compaction_probe_hits, __ATOMIC_RELAXED);
	uint64_t scan_ns = __atomic_load_n(&s->at.st->compaction_scan_ns, __ATOMIC_RELAXED);

	if (hits == s->budget.charged_compaction_hits && scan_ns == s->budget.charged_scan_ns)
		return;
	/* The traps, and the scans of the heap they ran (timed by BPF). */
	windows_charge(&s->windows, (hits - s->budget.charged_compaction_hits) *
					    windows_stepped_hit_cost(&s->windows) +
					(scan_ns - s->budget.charged_scan_ns) / 1e9);
	s->budget.charged_compaction_hits = hits;
	s->budget.charged_scan_ns = scan_ns;
}

/*
 * Sampling: our own CPU, in the share it took from the target (tracer_cpu.h),
 * looked at every second: /proc/stat counts in hundredths of a second.
 */
static void charge_tracer_cpu(struct session *s, double t)
{
	double taken;

	if (t - s->budget.last_cpu_charge < 1.0)
		return;
	s->budget.last_cpu_charge = t;
	taken = tracer_cpu_charge(&s->budget.tracer_cpu, s->target.pid);
	s->budget.cpu_charged += taken;
	windows_charge(&s->windows, taken);
}

/* Seconds to sleep until deadline, at most max: never negative, which means the end. */
static double wait_until(double deadline, double max)
{
	double wait = deadline - now_seconds();

	return wait < 0 ? 0 : wait < max ? wait : max;
}

/*
 * What a pass costs the target, as a share of the pass's own time: its
 * reads of the target's memory (process_vm_readv) take the target's
 * memory-map lock and pin its pages while it runs.  Measured on
 * bench/steady.rb (1,200 GCs a second, a pass after each: 2,448 passes,
 * 1.4 s of reading in a 4.1 s run): 62-74 ms of the target's time in two
 * quiet 5-round runs (sampled against untraced, and against the same
 * build with passes off), about 5% of the passes' time (docs/overhead.md).
 */
#define PASS_TARGET_SHARE 0.02

/* Between windows with nothing tracked: the sampler's own steps set the pace. */
#define NOTHING_TRACKED_WAIT 0.02

/*
 * Sampling sees no free outside its windows: a tracked object's death is
 * seen by a pass after the GC that freed it, while its slot lies unswept
 * or its newcomer is younger than the tracked object would be (tracker.c,
 * slot_dead).  A newcomer gains an age at each GC until old (3 GCs; in 3.1
 * one an old object holds is made old at its first), and then passes for
 * the tracked one.  So every GC cycle gets a pass, once the GC has marked,
 * with its marks still final at the pass's end (else it is done again).
 * While anything is tracked, Ruby's GC count is watched as often as the
 * GCs come (gc_watch.h); a pass waits twice what the last one took, so
 * the reads never take more than a third of the time.  Returns how long
 * the loop may sleep.
 */
static double pass_per_gc(struct session *s, double t)
{
	uint64_t count, hits;
	bool marking, detaching;
	double t0;
	int err;

	/*
	 * Nothing was tracked at the last pass, and no window has opened since
	 * (passes run between windows): nothing to judge, nothing to read, no
	 * GC to watch.  An empty pass read /proc, the GC state and the live
	 * map's 1M buckets: ~0.5 ms, 2,700 times in 4 s on bench/steady.rb.
	 * Watching the GC count every millisecond for nothing woke the tracer
	 * ~1,000 times a second, a few percent of a core that a busy machine
	 * takes from the target (docs/overhead.md).  The next window's objects
	 * are judged from the first GC seen after it: no cycle counts missed.
	 */
	if (s->budget.pass_found_none && s->windows.sampler.windows == s->budget.windows_at_pass) {
		s->budget.judged_count = 0;
		return NOTHING_TRACKED_WAIT;
	}
	if (tracker_gc_phase(&s->tracker, &count, &marking))
		return 0.02;
	if (marking)
		return GC_WATCH_MIN;
	if (count == s->budget.judged_count)
		return gc_watch_wait(&s->budget.gc_watch, t, count);
	if (t - s->loop.last_pass < 2 * s->budget.last_pass_took)
		return s->loop.last_pass + 2 * s->budget.last_pass_took - t;
	if (s->budget.judged_count && count > s->budget.judged_count + 1)
		s->budget.cycles_missed += count - s->budget.judged_count - 1;
	s->loop.last_pass = t;
	hits = __atomic_load_n(&s->at.st->compaction_probe_hits, __ATOMIC_ACQUIRE);
	detaching = __atomic_load_n(&s->at.probes.links.detaching, __ATOMIC_ACQUIRE) > 0;
	/* Only the passes wrote the live map since the last one began (tracker.h). */
	s->tracker.mode.map_quiet = !detaching && !s->budget.detaching_at_pass &&
				    s->windows.sampler.windows == s->budget.windows_at_pass &&
				    hits == s->budget.compaction_hits_at_pass;
	t0 = now_seconds(); /* t is the loop's turn's: the pass alone is charged */
	err = tracker_pass(&s->tracker, false);
	s->budget.last_pass_took = now_seconds() - t0;
	windows_charge(&s->windows, PASS_TARGET_SHARE * s->budget.last_pass_took);
	s->budget.windows_at_pass = s->windows.sampler.windows;
	s->budget.compaction_hits_at_pass = hits;
	s->budget.detaching_at_pass = detaching;
	s->budget.pass_found_none = !err && s->tracker.stats.last_tracked == 0;
	if (err == -ESRCH)
		return 0;
	if (!err && s->tracker.stats.last_settled) {
		s->budget.judged_count = count;
		s->budget.cycles_judged++;
		return gc_watch_wait(&s->budget.gc_watch, t, count);
	}
	return GC_WATCH_MIN;
}

/*
 * Sampling's step of a turn: the budget charged, the windows stepped.
 * Returns a wait (>= 0) when the turn ends here (a window is open: no pass
 * may hold its probes on), -1 when an error ended the session, or -2 to go
 * on with the turn.
 */
#define POLL_GO_ON -2.0
static double poll_windows(struct session *s, double t)
{
	int err;

	charge_other_probes(s);
	charge_tracer_cpu(s, t);
	err = windows_step(&s->windows, t);
	/* A target that exits before the first window just ends the trace. */
	if (err && !target_gone(s->target.pid)) {
		/* Its words for cli/, which ends the run as it ended before: exit 1. */
		s->failed = session_attach_error(s, err, s->error, sizeof(s->error));
		s->end_reason = "error";
		return -1;
	}
	if (!windows_open(&s->windows))
		return POLL_GO_ON;
	/*
	 * A window costs the target while the probes are on: nothing may hold
	 * it open longer.  One that waits for an idle target costs nothing,
	 * and names still need refreshing meanwhile.
	 */
	if (t - s->loop.last_names >= 0.2 && t - s->windows.sampler.opened >= 0.2) {
		s->loop.last_names = t;
		tracker_collect_counts(&s->tracker);
		session_refresh_names(s);
	}
	return wait_until(windows_next(&s->windows), 1);
}

/*
 * The free-tracking passes.  Sampling deletes the dead entries itself, once
 * no probe can write the map: no pass runs while a window is open (it must
 * not hold the probes on), and while its links come off (~0.1 s) a pass
 * judges all the same and its deletes wait.  Without sampling, the GC
 * probes (or Ruby's GC count) say when to look.  Sets *next to the wait
 * sampling asks for; false when the target is gone.
 */
static bool poll_passes(struct session *s, double t, double *next)
{
	s->tracker.mode.deletes_wait =
	    s->sampling && __atomic_load_n(&s->at.probes.links.detaching, __ATOMIC_ACQUIRE) > 0;
	if (s->sampling) {
		*next = pass_per_gc(s, t);
	} else if (gc_worked(s, t) && t - s->loop.last_pass >= 0.2) {
		s->loop.last_pass = t;
		if (tracker_pass(&s->tracker, false) == -ESRCH)
			return false;
	}
	if (s->sampling && !s->tracker.mode.deletes_wait && s->tracker.dead.len)
		tracker_delete_dead(&s->tracker);
	return true;
}

static double poll_turn(struct session *s, double t)
{
	double next = 0.02;

	/* Sampling looks at the counter up to every half millisecond: /proc is read less often. */
	if (t - s->loop.last_end_check >= 0.01 || !s->sampling) {
		s->loop.last_end_check = t;
		if (target_ended(s))
			return -1;
	}
	if (s->sampling && (next = poll_windows(s, t)) != POLL_GO_ON)
		return next;
	if (!poll_passes(s, t, &next))
		return 0; /* the target is gone: noticed at the next turn */
	/* Often: a class first seen just before the target exits still needs its name. */
	if (t - s->loop.last_names >= 0.2) {
		s->loop.last_names = t;
		tracker_collect_counts(&s->tracker);
		session_refresh_names(s);
		ruby_target_gc_counts(&s->target, &s->snap.counts_last);
	}
	return s->sampling ? wait_until(windows_next(&s->windows), next) : 0.05;
}

double session_poll(struct session *s, double t)
{
	double watch = session_watch_poll(s, t), wait = poll_turn(s, t);

	return wait < 0 || wait < watch ? wait : watch;
}

int session_run(struct session *s, volatile sig_atomic_t *stop)
{
	for (;;) {
		double t = now_seconds(), wait;

		if (*stop) {
			s->end_reason = "signal";
			break;
		}
		if (s->opt.duration && t - s->start >= s->opt.duration) {
			s->end_reason = "duration";
			break;
		}
		wait = session_poll(s, t);
		s->loop.turns++;
		if (wait < 0)
			break;
		usleep(wait <= 0 ? 0 : wait * 1e6);
	}
	s->end = now_seconds();
	return s->failed;
}

/* The tracker's weight_of: what a traced object stands for, by the window that recorded it. */
static uint32_t weight_in_window(const void *windows, uint64_t tag)
{
	return windows_weight_of(windows, tag);
}

int session_start(struct session *s, char *err, size_t errlen)
{
	const char *until = s->opt.duration ? ""
			    : s->launched   ? "until it exits or Ctrl-C"
					    : "Ctrl-C to stop";

	/* Ruby's counters first, then counting: nothing counted that Ruby's delta lacks. */
	ruby_target_gc_counts(&s->target, &s->snap.counts_start);
	s->snap.counts_last = s->snap.counts_start;
	__atomic_store_n(&s->at.st->counting, 1, __ATOMIC_RELEASE);
	session_heap_census(s, CENSUS_AT_START);
	if (s->sampling) {
		struct gc_allocated_counter counter;
		int ret;

		gc_counters_allocated_at(&s->target.layout, s->target.objspace, &counter);
		ret = windows_start(&s->windows, &s->at.probes, s->at.skel, s->at.st, s->target.pid,
				    &counter, s->opt.max_overhead, rbm_verbose);
		if (ret)
			return session_attach_error(s, ret, err, errlen);
		s->tracker.io.weight_of = weight_in_window;
		s->tracker.io.weight_ctx = &s->windows;
	}
	if (s->launched) {
		session_release_child(s, false);
		held_release(s->at.skel, s->target.pid);
	}
	if (s->at.held) {
		held_release(s->at.skel, s->target.pid);
		/* Its start waited for us: the budget pays for it. */
		if (s->sampling)
			windows_charge(&s->windows, now_seconds() - s->opt.held_since);
	}
	/*
	 * The verdict's first walk: a -p target's heap as the trace starts.  A
	 * launched one's is nearly empty: its verdict is read at its exit
	 * (session_verdict_at_exit).  One --all caught at its start (held) is
	 * short-lived, and others wait to be attached: none.
	 */
	if (!s->launched && !s->at.held && !s->opt.no_verdict && s->snap.have_census_start &&
	    (s->snap.verdict = calloc(1, sizeof(*s->snap.verdict))))
		verdict_base_take(s->snap.verdict, &s->target, s->tracker.io.compact_count_addr,
				  &s->snap.census_start);
	if (s->sampling)
		fprintf(stderr,
			"rbmemtrace: sampling PID %d (ruby %s) within %.3g%% overhead: counts "
			"are estimates (--full traces every allocation)%s%s\n",
			s->target.pid, s->target.version, s->opt.max_overhead, *until ? "; " : "",
			until);
	else
		fprintf(stderr, "rbmemtrace: tracing PID %d (ruby %s)%s%s\n", s->target.pid,
			s->target.version,
			!*until	      ? ""
			: s->launched ? " "
				      : "; ",
			until);
	s->start = now_seconds();
	session_watch_plan(s);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session's censuses: the heap's at the start and at the end, and the
 * final census of the tracked objects, the final pass judged against the
 * end one with Ruby's counters read where counting stopped.  Calls only
 * the files below it (session_names.c, session_attach.c: session.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diag.h"
#include "census_model.h"
#include "rbmemtrace.h"
#include "session.h"

void session_heap_census(struct session *s, enum census_moment when)
{
	struct census *c = when == CENSUS_AT_START ? &s->snap.census_start : &s->snap.census_end;
	char err[256];
	int ret;

	if (!s->at.heap_layout || !s->target.objspace)
		return;
	/*
	 * Both keep their slots: the final pass asks the end census about
	 * single slots, and the two compared say what the trace made and kept.
	 */
	ret = census_take(c, s->target.pid, s->at.heap_layout, s->target.objspace, true, err,
			  sizeof(err));
	if (ret) {
		census_free(c);
		if (ret != -ESRCH)
			rbm_warn("no heap census at the %s: %s",
				 when == CENSUS_AT_START ? "start" : "end", err);
		return;
	}
	(when == CENSUS_AT_START ? &s->snap.have_census_start : &s->snap.have_census_end)[0] = true;
	pthread_mutex_lock(&s->names.lock);
	census_name_classes(c, &s->names.namer);
	pthread_mutex_unlock(&s->names.lock);
	rbm_info("heap census at the %s: %lu slots, %lu live, %lu garbage in %.1f ms",
		 when == CENSUS_AT_START ? "start" : "end", (unsigned long) c->slots,
		 (unsigned long) c->live, (unsigned long) c->garbage, c->seconds * 1e3);
}

int session_heap_report(struct session *s, struct report *r)
{
	int err = 0;

	if (s->snap.have_census_start)
		err = census_to_report(&s->snap.census_start, &s->names.namer, r, CENSUS_AT_START,
				       session_class_filter, s);
	if (!err && s->snap.have_census_end)
		err = census_to_report(&s->snap.census_end, &s->names.namer, r, CENSUS_AT_END,
				       session_class_filter, s);
	return err;
}

void session_heap_free(struct session *s)
{
	census_free(&s->snap.census_start);
	census_free(&s->snap.census_end);
	s->snap.have_census_start = s->snap.have_census_end = false;
	u64map_free(&s->snap.traced_at, NULL);
	s->snap.traced_indexed = false;
	if (s->snap.verdict) {
		verdict_base_free(s->snap.verdict);
		free(s->snap.verdict);
		s->snap.verdict = NULL;
	}
	verdict_free(s->snap.exit_verdict);
	s->snap.exit_verdict = NULL;
}

/*
 * What the trace made and the heap kept, per class, from the two censuses:
 * only where no object moved between them (a compaction, or one under way).
 */
static void compare_censuses(struct session *s)
{
	int ret;

	if (!s->snap.have_census_start || !s->snap.have_census_end || s->target_exited ||
	    !s->tracker.io.compact_count_addr || s->tracker.stats.compactions ||
	    s->snap.census_start.moved || s->snap.census_end.moved)
		return;
	ret =
	    census_compare(&s->snap.census_start, &s->snap.census_end, s->at.heap_layout->old_age);
	if (ret)
		rbm_warn("the two heap censuses could not be compared: %s", strerror(-ret));
}

/*
 * A target that exited cannot be read: Ruby's counters are those BPF read
 * as it reached its exit, where counting stopped; without them (killed,
 * exit!), the last ones read, which the report says are stale.
 */
static void counters_at_exit(struct session *s)
{
	if (!__atomic_load_n(&s->at.st->exit_seen, __ATOMIC_ACQUIRE)) {
		s->snap.counts_stale = s->snap.counts_last.valid;
		return;
	}
	s->snap.counts_last.allocated = s->at.st->exit_allocated;
	s->snap.counts_last.freed = s->at.st->exit_freed;
	s->snap.counts_last.moved = s->at.st->exit_moved;
	s->snap.counts_last.gc_count = s->at.st->exit_gc_count;
	s->tracker.mode.end_gc_count = s->at.st->exit_gc_count;
}

/*
 * The end census, then the final pass judged against it.  A target that
 * compacts (GC.compact in a loop) may move objects during either: the
 * pass then judges nothing (-EAGAIN), and both are taken again, for up to
 * a second; after that the pass judges through it, and what it cannot
 * follow is counted as such (not_followed), never as freed.
 */
static void final_census_and_pass(struct session *s)
{
	double deadline = now_seconds() + 1;
	int err = 0;

	while (!s->target_exited) {
		census_free(&s->snap.census_end);
		s->snap.have_census_end = false;
		session_heap_census(s, CENSUS_AT_END);
		s->tracker.mode.census = s->snap.have_census_end ? &s->snap.census_end : NULL;
		s->tracker.mode.judge_through_compaction = now_seconds() >= deadline;
		err = tracker_pass(&s->tracker, true);
		if (err == -ESRCH)
			s->target_exited = true;
		if (err != -EAGAIN)
			break;
		usleep(5000);
	}
}

/*
 * Counting stops here, and Ruby's counters are read at the same moment:
 * the report covers exactly the traced time.  Then the heap is read, the
 * probes come off, and the counts are read once no program can be running
 * any more.
 */
static void freeze_counting(struct session *s)
{
	if (!s->target_exited)
		ruby_target_gc_counts(&s->target, &s->snap.counts_last);
	if (s->snap.counts_last.valid) {
		s->at.st->frozen_gc_count = s->snap.counts_last.gc_count;
		s->tracker.mode.end_gc_count = s->snap.counts_last.gc_count;
	}
	/* Counting stops, then Ruby's counters: nothing counted that Ruby's delta lacks. */
	__atomic_store_n(&s->at.st->frozen, 1, __ATOMIC_RELEASE);
	if (!s->target_exited)
		ruby_target_gc_counts(&s->target, &s->snap.counts_last);
	else
		counters_at_exit(s);
}

/* -v: what the passes and the sampler did. */
static void log_passes(struct session *s)
{
	rbm_info("passes: %" PRIu64 " tracked objects seen garbage awaiting the sweep, %" PRIu64
		 " whose slot a younger object took",
		 s->tracker.stats.garbage_seen, s->tracker.stats.reused_seen);
	rbm_info("passes: %" PRIu64 " in %.1f ms; %" PRIu64 " judged slots, %" PRIu64
		 " of them while a GC began; %" PRIu64 " reused the last dump",
		 s->tracker.stats.passes, s->tracker.stats.pass_seconds * 1e3,
		 s->tracker.stats.judging_passes, s->tracker.stats.unsettled_passes,
		 s->tracker.stats.dumps_reused);
	if (s->at.st->compaction_probe_hits)
		rbm_info("compactions: %llu counted (class, path) entries followed to their class's "
			 "new address, %llu not (a map full); the probe's scans took the target "
			 "%.1f ms",
			 (unsigned long long) s->at.st->classes_moved,
			 (unsigned long long) s->at.st->class_moves_lost,
			 s->at.st->compaction_scan_ns / 1e6);
	if (s->sampling) {
		rbm_info("GC cycles judged by a pass: %" PRIu64 ", not: %" PRIu64,
			 s->budget.cycles_judged, s->budget.cycles_missed);
		rbm_info("our CPU taken from the target (charged): %.1f ms",
			 s->budget.cpu_charged * 1e3);
		if (s->loop.turns)
			rbm_info("poll loop: %" PRIu64 " turns in %.1f s", s->loop.turns,
				 now_seconds() - s->start);
	}
}

/* Stops the allocation probes and takes the census the report is made of. */
void session_final_census(struct session *s)
{
	if (s->snap.final_done)
		return;
	s->snap.final_done = true;
	freeze_counting(s);
	if (s->sampling)
		windows_close(&s->windows);
	fork_sweeper_stop(&s->at.forks);
	if (s->at.forks.forks)
		rbm_info("%" PRIu64
			 " fork(s) of the target, their breakpoints taken out in %" PRIu64
			 " sweep(s)%s%s",
			 s->at.forks.forks, s->at.forks.sweeps,
			 s->at.forks.error ? "; one failed: " : "",
			 s->at.forks.error ? strerror(-s->at.forks.error) : "");
	/*
	 * The census and the final pass before the probes come off (~0.1 s):
	 * the target runs on, and a slot a new object takes meanwhile is marked
	 * by the probes still on (mark_taken_after_end), not mistaken for the
	 * tracked object.
	 */
	final_census_and_pass(s);
	probes_detach_alloc(&s->at.probes);
	if (s->sampling)
		windows_stop(&s->windows, now_seconds());
	probes_wait_detached(&s->at.probes);
	tracker_collect_counts(&s->tracker);
	session_refresh_names(s);
	compare_censuses(s);
	log_passes(s);
	/* Nothing left to read: objects count as they stood at the last check. */
	if (s->target_exited)
		tracker_count_unverified(&s->tracker);
}

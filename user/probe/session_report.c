// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session's end: the final census of the tracked objects (with the heap
 * censuses at the start and the end), detaching, and the report: the raw
 * facts of the BPF side, the tracker and the censuses handed to the model,
 * which derives every figure from them (report.h).
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
#include "census_model.h"
#include "layout_report.h"
#include "rbmemtrace.h"
#include "new_stacks.h"
#include "session.h"

void session_heap_census(struct session *s, enum census_moment when)
{
	struct census *c = when == CENSUS_AT_START ? &s->census_start : &s->census_end;
	char err[256];
	int ret;

	if (!s->heap_layout || !s->target.objspace)
		return;
	/*
	 * Both keep their slots: the final pass asks the end census about
	 * single slots, and the two compared say what the trace made and kept.
	 */
	ret = census_take(c, s->target.pid, s->heap_layout, s->target.objspace, true, err,
			  sizeof(err));
	if (ret) {
		census_free(c);
		if (ret != -ESRCH)
			rbm_warn("no heap census at the %s: %s",
				 when == CENSUS_AT_START ? "start" : "end", err);
		return;
	}
	(when == CENSUS_AT_START ? &s->have_census_start : &s->have_census_end)[0] = true;
	pthread_mutex_lock(&s->names_lock);
	census_name_classes(c, &s->namer);
	pthread_mutex_unlock(&s->names_lock);
	rbm_info("heap census at the %s: %lu slots, %lu live, %lu garbage in %.1f ms",
		 when == CENSUS_AT_START ? "start" : "end", (unsigned long) c->slots,
		 (unsigned long) c->live, (unsigned long) c->garbage, c->seconds * 1e3);
}

static bool wanted(void *ctx, const char *name)
{
	return session_class_wanted(ctx, name);
}

int session_heap_report(struct session *s, struct report *r)
{
	int err = 0;

	if (s->have_census_start)
		err = census_to_report(&s->census_start, &s->namer, r, CENSUS_AT_START, wanted, s);
	if (!err && s->have_census_end)
		err = census_to_report(&s->census_end, &s->namer, r, CENSUS_AT_END, wanted, s);
	return err;
}

void session_heap_free(struct session *s)
{
	census_free(&s->census_start);
	census_free(&s->census_end);
	s->have_census_start = s->have_census_end = false;
}

/*
 * What the trace made and the heap kept, per class, from the two censuses:
 * only where no object moved between them (a compaction, or one under way).
 */
static void compare_censuses(struct session *s)
{
	int ret;

	if (!s->have_census_start || !s->have_census_end || s->target_exited ||
	    !s->tracker.compact_count_addr || s->tracker.compactions || s->census_start.moved ||
	    s->census_end.moved)
		return;
	ret = census_compare(&s->census_start, &s->census_end, s->heap_layout->old_age);
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
	if (!__atomic_load_n(&s->st->exit_seen, __ATOMIC_ACQUIRE)) {
		s->counts_stale = s->counts_last.valid;
		return;
	}
	s->counts_last.allocated = s->st->exit_allocated;
	s->counts_last.freed = s->st->exit_freed;
	s->counts_last.gc_count = s->st->exit_gc_count;
	s->tracker.end_gc_count = s->st->exit_gc_count;
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
		census_free(&s->census_end);
		s->have_census_end = false;
		session_heap_census(s, CENSUS_AT_END);
		s->tracker.census = s->have_census_end ? &s->census_end : NULL;
		s->tracker.judge_through_compaction = now_seconds() >= deadline;
		err = tracker_pass(&s->tracker, true);
		if (err == -ESRCH)
			s->target_exited = true;
		if (err != -EAGAIN)
			break;
		usleep(5000);
	}
}

/* Stops the allocation probes and takes the census the report is made of. */
void session_final_census(struct session *s)
{
	if (s->final_done)
		return;
	s->final_done = true;
	/*
	 * Counting stops here, and Ruby's counters are read at the same moment:
	 * the report covers exactly the traced time.  Then the heap is read, the
	 * probes come off, and the counts are read once no program can be
	 * running any more.
	 */
	if (!s->target_exited)
		ruby_target_gc_counts(&s->target, &s->counts_last);
	if (s->counts_last.valid) {
		s->st->frozen_gc_count = s->counts_last.gc_count;
		s->tracker.end_gc_count = s->counts_last.gc_count;
	}
	/* Counting stops, then Ruby's counters: nothing counted that Ruby's delta lacks. */
	__atomic_store_n(&s->st->frozen, 1, __ATOMIC_RELEASE);
	if (!s->target_exited)
		ruby_target_gc_counts(&s->target, &s->counts_last);
	else
		counters_at_exit(s);
	if (s->sampling)
		windows_close(&s->windows);
	fork_sweeper_stop(&s->forks);
	if (s->forks.forks)
		rbm_info("%" PRIu64
			 " fork(s) of the target, their breakpoints taken out in %" PRIu64
			 " sweep(s)%s%s",
			 s->forks.forks, s->forks.sweeps, s->forks.error ? "; one failed: " : "",
			 s->forks.error ? strerror(-s->forks.error) : "");
	/*
	 * The census and the final pass before the probes come off (~0.1 s):
	 * the target runs on, and a slot a new object takes meanwhile is marked
	 * by the probes still on (mark_taken_after_end), not mistaken for the
	 * tracked object.
	 */
	final_census_and_pass(s);
	probes_detach_alloc(&s->probes);
	if (s->sampling)
		windows_stop(&s->windows, now_seconds());
	probes_wait_detached(&s->probes);
	tracker_collect_counts(&s->tracker);
	session_refresh_names(s);
	compare_censuses(s);
	rbm_info("passes: %" PRIu64 " tracked objects seen garbage awaiting the sweep, %" PRIu64
		 " whose slot a younger object took",
		 s->tracker.garbage_seen, s->tracker.reused_seen);
	rbm_info("passes: %" PRIu64 " in %.1f ms; %" PRIu64 " judged slots, %" PRIu64
		 " of them while a GC began; %" PRIu64 " reused the last dump",
		 s->tracker.passes, s->tracker.pass_seconds * 1e3, s->tracker.judging_passes,
		 s->tracker.unsettled_passes, s->tracker.dumps_reused);
	if (s->sampling) {
		rbm_info("GC cycles judged by a pass: %" PRIu64 ", not: %" PRIu64, s->cycles_judged,
			 s->cycles_missed);
		rbm_info("our CPU taken from the target (charged): %.1f ms", s->cpu_charged * 1e3);
		if (s->turns)
			rbm_info("poll loop: %" PRIu64 " turns in %.1f s", s->turns,
				 now_seconds() - s->start);
	}
	/* Nothing left to read: objects count as they stood at the last check. */
	if (s->target_exited)
		tracker_count_unverified(&s->tracker);
}

void session_finish(struct session *s)
{
	session_final_census(s);
	/* The allocation probes are off; the rest can come off after we exit. */
	shared_bpf_release_after_exit();
	probes_detach_all(&s->probes);
	/* Its exit stop may have come as the probes came off. */
	if (s->held && held_by_us(s->skel, s->target.pid))
		held_release(s->skel, s->target.pid);
}

/* What the sampler did and traced, as raw facts: the model scales the counts (report_finish). */
static void sampling_facts(struct session *s, struct report *r)
{
	const struct sampler *sm = &s->windows.sampler;
	struct sampling_info *si = &r->sampling;
	size_t i;

	u64map_for_each(&s->tracker.tallies, i)
	{
		struct class_tally *t = s->tracker.tallies.values[i];

		si->traced += t->t.allocated;
		si->weighed += t->t.w_allocated;
	}
	si->on = true;
	si->budget_percent = s->opt.max_overhead;
	si->windows = sm->windows;
	si->window_time_s = sm->window_time;
	si->est_overhead = sampler_overhead(sm, r->duration_s);
	si->probe_hits = sm->probe_hits;
	si->covered = sm->covered;
	si->burst_windows = sm->burst_windows;
	si->sample = sm->windows ? sm->sample_sum / sm->windows : 0;
	if (!sampler_doubt(sm, si->doubt, sizeof(si->doubt)))
		si->doubt[0] = 0;
}

static int report_locked(struct session *s, struct report *r, const struct census *now);

int session_report(struct session *s, struct report *r)
{
	int err;

	new_stacks_flush();
	pthread_mutex_lock(&s->names_lock);
	err = report_locked(s, r, NULL);
	pthread_mutex_unlock(&s->names_lock);
	return err;
}

static int report_locked(struct session *s, struct report *r, const struct census *now)
{
	size_t i;
	int err;

	r->pid = s->target.pid;
	r->ns_pid = s->ns_pid;
	snprintf(r->command, sizeof(r->command), "%s", s->command);
	snprintf(r->ruby_version, sizeof(r->ruby_version), "%s", s->target.version);
	layout_to_report(&s->target, &r->layout);
	r->duration_s = s->end - s->start;
	r->end_reason = s->end_reason ? s->end_reason : "unknown";
	r->target_exited = s->target_exited;
	r->exit_status = s->launched ? s->exit_status : -1;
	/* Ruby's own count: right with or without the GC probes. */
	r->gc_runs = s->counts_start.valid && s->counts_last.valid
			 ? s->counts_last.gc_count - s->counts_start.gc_count
			 : s->st->gc_runs;
	r->compactions = s->tracker.compactions;
	r->moved_followed = s->tracker.moved_followed + s->st->moved_followed;
	r->moved_over = s->st->moved_over;
	r->scan_failures = s->st->compaction_scan_failed;
	r->end_read_while_compacting = s->tracker.judge_through_compaction;
	r->header_read_errors = s->st->header_read_errors;
	r->class_overflow = s->st->class_overflow;
	r->with_stacks = s->opt.depth > 0;
	r->stacks_truncated = s->st->stacks_truncated;
	r->stacks_dropped = s->st->stacks_dropped;
	r->stack_errors = s->st->stack_errors;
	r->have_gc_counts = s->counts_start.valid && s->counts_last.valid;
	r->gc_counts_stale = s->counts_stale;
	if (r->have_gc_counts) {
		r->gc_allocated = s->counts_last.allocated - s->counts_start.allocated;
		r->gc_freed = s->counts_last.freed - s->counts_start.freed;
	}
	if (s->sampling)
		sampling_facts(s, r);
	u64map_for_each(&s->tracker.tallies, i)
	{
		struct class_tally *t = s->tracker.tallies.values[i];
		const char *name = class_namer_key_name(&s->namer, t->klass, t->kind);

		if (!session_class_wanted(s, name))
			continue;
		err = report_add_tally(
		    r, name, t->stack_id ? symbolizer_stack(&s->symbolizer, t->stack_id) : NULL,
		    &t->t);
		if (err)
			return err;
	}
	err = session_heap_report(s, r);
	if (!err && now)
		err = census_to_report(now, &s->namer, r, CENSUS_AT_END, wanted, s);
	if (err)
		return err;
	caps_read(s->target.pid, &r->caps); /* last: naming the rows above may hit a cap */
	report_finish(r);
	return 0;
}

int session_report_now(struct session *s, struct report *r)
{
	double end = s->end;
	int err;

	s->end = now_seconds();
	err = session_report(s, r);
	s->end = end;
	return err;
}

int session_report_census(struct session *s, struct report *r, char *why, size_t n)
{
	struct census now = {};
	double end = s->end;
	int err;

	if (!s->heap_layout || !s->target.objspace) {
		snprintf(why, n, "its heap layout is not proved, so its heap cannot be read");
		return -EOPNOTSUPP;
	}
	/* The counts, names and Ruby's counters as close to the census as can be. */
	tracker_collect_counts(&s->tracker);
	session_refresh_names(s);
	ruby_target_gc_counts(&s->target, &s->counts_last);
	err = census_take(&now, s->target.pid, s->heap_layout, s->target.objspace, false, why, n);
	if (err) {
		census_free(&now);
		if (err == -ESRCH)
			snprintf(why, n, "the process is gone");
		return err;
	}
	new_stacks_flush();
	pthread_mutex_lock(&s->names_lock);
	census_name_classes(&now, &s->namer);
	s->end = now_seconds();
	err = report_locked(s, r, &now);
	s->end = end;
	pthread_mutex_unlock(&s->names_lock);
	census_free(&now);
	if (err)
		snprintf(why, n, "%s", strerror(-err));
	return err;
}

void session_detach_start(struct session *s)
{
	probes_detach_all(&s->probes);
}

void session_close(struct session *s)
{
	/* A launched command that never ran Ruby must not stay stopped. */
	session_release_child(s, true);
	/* No slot (-1): a half-open session routed nothing. */
	new_stacks_route(s->slot.index, NULL, NULL);
	session_heap_free(s);
	symbolizer_free(&s->symbolizer);
	u64map_free(&s->filtered, NULL);
	tracker_free(&s->tracker);
	windows_free(&s->windows);
	class_namer_free(&s->namer);
	pthread_mutex_destroy(&s->names_lock);
	fork_sweeper_stop(&s->forks); /* stopped at the final census; this is for the other ends */
	/*
	 * A session that ended with its target gone still had its probes on.
	 * The threads taking them off count down s->probes.detaching when they
	 * end, so s must outlive them: the caller frees it (or its stack frame
	 * goes) right after.  The detaches run side by side, ~0.1 s in all.
	 */
	probes_detach_all(&s->probes);
	probes_wait_detached(&s->probes);
	proc_slot_close(&s->slot);
	s->st = NULL;
	s->skel = NULL;
}

int session_exit_status(const struct session *s)
{
	return s->launched && s->exit_status >= 0 ? s->exit_status : 0;
}

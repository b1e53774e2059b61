// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session's end: finishing, detaching and closing, and the report: the
 * raw facts of the BPF side, the tracker and the censuses
 * (session_snapshot.c) handed to the model, which derives every figure
 * from them (report.h).  The last of the session's files: it may call all
 * the others, none calls it (the order: session.h).
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

void session_finish(struct session *s)
{
	session_watch_end(s);
	session_final_census(s);
	/* The allocation probes are off; the rest can come off after we exit. */
	shared_bpf_release_after_exit();
	probes_detach_all(&s->at.probes);
	/* Its exit stop may have come as the probes came off. */
	if (s->at.held && held_by_us(s->at.skel, s->target.pid))
		held_release(s->at.skel, s->target.pid);
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
	pthread_mutex_lock(&s->names.lock);
	err = report_locked(s, r, NULL);
	pthread_mutex_unlock(&s->names.lock);
	return err;
}

/*
 * Where Ruby's counters count GC.compact's moves (3.4), what they say the
 * trace allocated and freed is without them, if the moved-objects counter
 * was proved; else the report says the figures hold an unknown number.
 */
static void gc_moves_facts(struct session *s, struct report *r)
{
	const struct gc_counts *a = &s->snap.counts_start, *b = &s->snap.counts_last;

	if (!s->target.alloc || !s->target.alloc->counters_count_moves)
		return;
	if (!s->target.moved_addr) {
		r->gc_moves_unknown = r->compactions > 0;
		snprintf(r->gc_moves_why, sizeof(r->gc_moves_why), "%s",
			 s->target.moves_why[0] ? s->target.moves_why
						: "its GC counters are not proved");
		return;
	}
	r->gc_moved = b->moved - a->moved;
	r->gc_moves_left_out = true;
	r->gc_allocated -= r->gc_moved < r->gc_allocated ? r->gc_moved : r->gc_allocated;
	r->gc_freed -= r->gc_moved < r->gc_freed ? r->gc_moved : r->gc_freed;
}

/* The run's facts: the target, how long and how it ended, Ruby's counters, the BPF side's. */
static void run_facts(struct session *s, struct report *r)
{
	r->pid = s->target.pid;
	r->ns_pid = s->at.ns_pid;
	snprintf(r->command, sizeof(r->command), "%s", s->command);
	snprintf(r->container_id, sizeof(r->container_id), "%s", s->labels.container_id);
	snprintf(r->pod_uid, sizeof(r->pod_uid), "%s", s->labels.pod_uid);
	snprintf(r->pod_name, sizeof(r->pod_name), "%s", s->labels.pod_name);
	snprintf(r->pod_namespace, sizeof(r->pod_namespace), "%s", s->labels.pod_namespace);
	snprintf(r->ruby_version, sizeof(r->ruby_version), "%s", s->target.version);
	layout_to_report(&s->target, &r->layout);
	r->duration_s = s->end - s->start;
	r->end_reason = s->end_reason ? s->end_reason : "unknown";
	r->target_exited = s->target_exited;
	r->exit_status = s->launched ? s->exit_status : -1;
	/* Ruby's own count: right with or without the GC probes. */
	r->gc_runs = s->snap.counts_start.valid && s->snap.counts_last.valid
			 ? s->snap.counts_last.gc_count - s->snap.counts_start.gc_count
			 : s->at.st->gc_runs;
	r->compactions = s->tracker.stats.compactions;
	r->moved_followed = s->tracker.stats.moved_followed + s->at.st->moved_followed;
	r->moved_over = s->at.st->moved_over;
	r->scan_failures = s->at.st->compaction_scan_failed;
	r->end_read_while_compacting = s->tracker.mode.judge_through_compaction;
	r->header_read_errors = s->at.st->header_read_errors;
	r->class_overflow = s->at.st->class_overflow;
	r->with_stacks = s->opt.depth > 0;
	r->stacks_truncated = s->at.st->stacks_truncated;
	r->stacks_dropped = s->at.st->stacks_dropped;
	r->stack_errors = s->at.st->stack_errors;
	r->have_gc_counts = s->snap.counts_start.valid && s->snap.counts_last.valid;
	r->gc_counts_stale = s->snap.counts_stale;
	if (r->have_gc_counts) {
		r->gc_allocated = s->snap.counts_last.allocated - s->snap.counts_start.allocated;
		r->gc_freed = s->snap.counts_last.freed - s->snap.counts_start.freed;
		gc_moves_facts(s, r);
	}
}

static int report_locked(struct session *s, struct report *r, const struct census *now)
{
	size_t i;
	int err;

	run_facts(s, r);
	if (s->sampling)
		sampling_facts(s, r);
	u64map_for_each(&s->tracker.tallies, i)
	{
		struct class_tally *t = s->tracker.tallies.values[i];
		const char *name;

		if (class_tally_moved_away(t))
			continue;
		name = class_namer_key_name(&s->names.namer, t->klass, t->kind);
		if (!session_class_wanted(s, name))
			continue;
		err = report_add_tally(
		    r, name,
		    t->stack_id ? symbolizer_stack(&s->names.symbolizer, t->stack_id) : NULL,
		    &t->t);
		if (err)
			return err;
	}
	err = session_heap_report(s, r);
	if (!err && now)
		err = census_to_report(now, &s->names.namer, r, CENSUS_AT_END, session_class_filter,
				       s);
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
	return session_report_census_keep(s, r, NULL, why, n);
}

int session_heap_unreadable(const struct session *s, char *why, size_t n)
{
	if (s->at.heap_layout && s->target.objspace)
		return 0;
	snprintf(why, n, "its heap layout is not proved, so its heap cannot be read");
	return -EOPNOTSUPP;
}

int session_report_census_keep(struct session *s, struct report *r, struct census *keep,
			       char *why, size_t n)
{
	struct census now = {};
	double end = s->end;
	int err;

	if ((err = session_heap_unreadable(s, why, n)))
		return err;
	/* The counts, names and Ruby's counters as close to the census as can be. */
	tracker_collect_counts(&s->tracker);
	session_refresh_names(s);
	ruby_target_gc_counts(&s->target, &s->snap.counts_last);
	err = census_take(&now, s->target.pid, s->at.heap_layout, s->target.objspace, keep != NULL,
			  why, n);
	if (err) {
		census_free(&now);
		if (err == -ESRCH)
			snprintf(why, n, "the process is gone");
		return err;
	}
	new_stacks_flush();
	pthread_mutex_lock(&s->names.lock);
	census_name_classes(&now, &s->names.namer);
	s->end = now_seconds();
	err = report_locked(s, r, &now);
	s->end = end;
	pthread_mutex_unlock(&s->names.lock);
	if (keep && !err)
		*keep = now;
	else
		census_free(&now);
	if (err)
		snprintf(why, n, "%s", strerror(-err));
	return err;
}

void session_detach_start(struct session *s)
{
	probes_detach_all(&s->at.probes);
}

void session_close(struct session *s)
{
	session_watch_end(s);
	watch_results_free(s->watching.r, s->watching.n);
	s->watching.n = 0;
	session_heap_free(s);
	windows_free(&s->windows);
	/* Last: a launched command that never ran Ruby is killed, the probes taken off. */
	session_attach_release(s);
}

int session_exit_status(const struct session *s)
{
	return s->launched && s->exit_status >= 0 ? s->exit_status : 0;
}

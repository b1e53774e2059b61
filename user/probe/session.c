// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
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
#include "elfinfo.h"
#include "launch.h"
#include "layout_report.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "procmaps.h"
#include "proc_info.h"
#include "shared_bpf.h"
#include "session.h"
#include "target_mem.h"

/*
 * What a trace cannot do without: allocation probes, GC counters (ages, the
 * sampler's placement) and class names (every row is a class).  Without the
 * heap it reports no census; without stacks, no sites or call paths.
 */
#define TRACE_NEEDS (PROOF_BIT(PROOF_PROBES) | PROOF_BIT(PROOF_GC) | PROOF_BIT(PROOF_CLASSES))

bool session_class_wanted(const struct session *s, const char *name)
{
	int i;

	if (!s->opt.nclasses)
		return true;
	for (i = 0; i < s->opt.nclasses; i++)
		if (strcmp(s->opt.classes[i], name) == 0)
			return true;
	return false;
}

/* Why probes could not go on, in the words a user can act on. */
static void die_attach(struct session *s, int err)
{
	probes_detach_all(&s->probes);
	if (target_gone(s->target.pid))
		rbm_die("PID %d exited", s->target.pid);
	if (err == -EPERM || err == -EACCES)
		rbm_die("not enough privileges to attach uprobes to PID %d: run as root, or with "
			"CAP_SYS_ADMIN (and CAP_SYS_PTRACE for another user's process)",
			s->target.pid);
	rbm_die("cannot attach to PID %d%s%s", s->target.pid, err ? ": " : "",
		err ? strerror(-err) : "");
}

/* The tracker's weight_of: what a traced object stands for, by the window that recorded it. */
static uint32_t weight_in_window(const void *windows, uint64_t tag)
{
	return windows_weight_of(windows, tag);
}

/* A launched command that is still held or stopped must not outlive an error. */
static void kill_held_child(void *ctx)
{
	struct session *s = ctx;

	kill(s->target.pid, SIGKILL);
}

/* Launch mode: start the command held, let it run to ruby_options, where it stops. */
static void start_command(struct session *s)
{
	char ruby_file[PATH_MAX], err[PATH_MAX + 128];
	int release_fd, status;
	pid_t pid;

	if (launch_find_ruby(s->opt.command[0], ruby_file, sizeof(ruby_file), err, sizeof(err)))
		rbm_die("%s", err);
	ruby_target_check_file(&s->target, ruby_file, ruby_file, RUBY_NEED_TRACE);
	shared_bpf_prepare_live_map(s->opt.max_objects);
	session_load_bpf(s);

	pid = launch_spawn(s->opt.command, &release_fd);
	if (pid < 0)
		rbm_die("cannot start %s: %s", s->opt.command[0], strerror(-pid));
	s->target.pid = pid;
	s->launched = true;
	rbm_on_die(kill_held_child, s);
	s->probes = (struct probes){.skel = s->skel, .slot = s->slot.index, .pid = pid,
				    .binary = ruby_file, .verbose = rbm_verbose};
	s->st->stop_at_start = 1;
	s->st->stop_at_exit = 1;
	if (probes_attach_launch_stops(&s->probes))
		rbm_die("cannot attach to %s", ruby_file);
	launch_release(release_fd);
	if (waitpid(pid, &status, WUNTRACED) != pid || !WIFSTOPPED(status)) {
		rbm_on_die_remove(kill_held_child, s);
		rbm_die("%s exited before Ruby started (status %d)", s->opt.command[0],
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	ruby_target_attach(&s->target, pid);
	/* From here on, attach to the file as the running child maps it. */
	s->probes.binary = s->target.img.host_path;
	ruby_target_require_or_die(&s->target, PROOF_ALL, TRACE_NEEDS, true);
}

void session_open(struct session *s, const struct trace_options *opt)
{
	char errbuf[256];
	uint64_t object_class, alloc_offset;

	memset(s, 0, sizeof(*s));
	s->opt = *opt;
	s->exit_status = -1;
	session_quiet_libbpf(false);
	if (s->opt.command) {
		start_command(s);
	} else {
		ruby_target_open(&s->target, s->opt.pid, RUBY_NEED_TRACE);
		ruby_target_require_or_die(&s->target, PROOF_ALL, TRACE_NEEDS, false);
		shared_bpf_prepare_live_map(s->opt.max_objects);
		session_load_bpf(s);
		s->probes = (struct probes){.skel = s->skel, .slot = s->slot.index,
					    .pid = s->target.pid, .binary = s->target.img.host_path,
					    .verbose = rbm_verbose};
	}
	proc_command(s->target.pid, s->command, sizeof(s->command));
	s->ns_pid = proc_ns_pid(s->target.pid);
	object_class = ruby_target_global(&s->target, "rb_cObject");
	alloc_offset = s->target.alloc->hidden_class_allocator
			       ? ruby_target_class_allocator(&s->target)
			       : 0;
	if (class_namer_init(&s->namer, s->target.pid, &s->target.layout, object_class, errbuf,
			     sizeof(errbuf)))
		rbm_die("%s", errbuf);
	s->probes.points = s->target.alloc;
	s->probes.class_allocate_instance = alloc_offset;
	s->probes.use_multi = s->use_multi;
	/* A group the proof turned off is not read: its line said so (ruby_target_require). */
	s->heap_layout = ruby_target_proved(&s->target, PROOF_HEAP) ? &s->target.layout : NULL;
	if (!ruby_target_proved(&s->target, PROOF_STACKS))
		s->opt.depth = 0;
	s->probes.alloc_kind = s->opt.empty_probes;
	if (s->opt.empty_probes)
		return;
	session_configure_stacks(s);
	tracker_init(&s->tracker, s->target.pid, s->slot.live_fd, s->slot.counts_fd, s->slot.reap,
		     s->target.objspace && s->target.layout.objspace_compact_count
			     ? s->target.objspace + s->target.layout.objspace_compact_count
			     : 0);
	s->tracker.fallback_fd = s->slot.fallback_fd;
	s->tracker.compaction_pending = &s->st->compaction_pending;
	s->tracker.compact_followed_at = &s->st->compact_followed_at;
	s->tracker.fl_singleton = s->target.layout.fl_singleton;
	s->tracker.hl = s->heap_layout;
	s->tracker.objspace = s->target.objspace;
	s->tracker.rclass_super = s->target.layout.rclass_super;
	if (s->target.objspace && s->target.layout.objspace_gc_count)
		s->tracker.gc_count_addr = s->target.objspace + s->target.layout.objspace_gc_count;
	s->st->gc_count_addr = s->tracker.gc_count_addr;
	s->st->compact_count_addr = s->tracker.compact_count_addr;
	s->st->compact_count_seen = s->tracker.last_compact_count;
	/* Attaching a running process is safe by default; a launched one is ours. */
	if (!s->opt.full && !s->opt.max_overhead && !s->launched)
		s->opt.max_overhead = 2;
	s->sampling = !s->opt.full && s->opt.max_overhead > 0;
	/*
	 * Sampling attaches no GC probe: GCs are read from Ruby's own counter,
	 * and dead entries are deleted between windows, when no probe is on.
	 * Its allocation probes go on window by window from session_start.
	 */
	if (s->sampling) {
		s->st->sampling = 1;
		s->tracker.direct_delete = true;
		probes_attach_compaction(&s->probes);
	} else {
		int err;

		/*
		 * Without Ruby's GC probes, dead entries are deleted at the next
		 * allocation hit instead: on the target's thread too, under its GVL.
		 */
		if (s->target.has_usdt) {
			err = probes_attach_gc(&s->probes);
		} else {
			s->st->reap_at_alloc = 1;
			probes_attach_compaction(&s->probes);
			err = 0;
		}
		err = err ?: probes_attach_alloc(&s->probes, false);

		if (err)
			die_attach(s, err);
		/* The sampler's link comes off within its window, and the children's breakpoints with it. */
		if (s->probes.use_multi && (err = fork_sweeper_start(&s->forks, &s->probes)))
			rbm_warn("cannot watch for forks (%s): a child the target forks will trap on "
				 "every allocation while it is traced",
				 strerror(-err));
	}
}

void session_start(struct session *s)
{
	const char *until = s->opt.duration ? ""
			    : s->launched   ? "until it exits or Ctrl-C"
					    : "Ctrl-C to stop";

	ruby_target_gc_counts(&s->target, &s->counts_start);
	s->counts_last = s->counts_start;
	session_heap_census(s, CENSUS_AT_START);
	if (s->sampling) {
		struct gc_allocated_counter counter;
		int err;

		gc_counters_allocated_at(&s->target.layout, s->target.objspace, &counter);
		err = windows_start(&s->windows, &s->probes, s->skel, s->st, s->target.pid, &counter,
				    s->opt.max_overhead, rbm_verbose);
		if (err)
			die_attach(s, err);
		s->tracker.weight_of = weight_in_window;
		s->tracker.weight_ctx = &s->windows;
	}
	if (s->launched) {
		rbm_on_die_remove(kill_held_child, s);
		kill(s->target.pid, SIGCONT);
	}
	if (s->sampling)
		fprintf(stderr, "rbmemtrace: sampling PID %d (ruby %s) within %.3g%% overhead: counts "
				"are estimates (--full traces every allocation)%s%s\n",
			s->target.pid, s->target.version, s->opt.max_overhead, *until ? "; " : "",
			until);
	else
		fprintf(stderr, "rbmemtrace: tracing PID %d (ruby %s)%s%s\n", s->target.pid,
			s->target.version, !*until ? "" : s->launched ? " " : "; ", until);
	s->start = now_seconds();
}

/* Stops the allocation probes and takes the census the report is made of. */
static void final_census(struct session *s)
{
	if (s->final_done)
		return;
	s->final_done = true;
	/*
	 * Counting stops here, and Ruby's counters are read at the same moment:
	 * the report covers exactly the traced time.  Then the probes come off,
	 * and the counts are read once no program can be running any more.
	 */
	__atomic_store_n(&s->st->frozen, 1, __ATOMIC_RELEASE);
	if (!s->target_exited)
		ruby_target_gc_counts(&s->target, &s->counts_last);
	if (s->sampling)
		windows_close(&s->windows);
	fork_sweeper_stop(&s->forks);
	if (s->forks.forks)
		rbm_info("%" PRIu64 " fork(s) of the target, their breakpoints taken out in %" PRIu64
			 " sweep(s)%s%s",
			 s->forks.forks, s->forks.sweeps, s->forks.error ? "; one failed: " : "",
			 s->forks.error ? strerror(-s->forks.error) : "");
	probes_detach_alloc(&s->probes);
	if (s->sampling)
		windows_stop(&s->windows, now_seconds());
	probes_wait_detached(&s->probes);
	session_refresh_names(s);
	if (!s->target_exited) {
		session_heap_census(s, CENSUS_AT_END);
		s->tracker.census = s->have_census_end ? &s->census_end : NULL;
	}
	if (!s->target_exited && tracker_pass(&s->tracker, true) == -ESRCH)
		s->target_exited = true;
	rbm_info("passes: %" PRIu64 " tracked objects seen garbage awaiting the sweep, %" PRIu64
		 " whose slot a younger object took",
		 s->tracker.garbage_seen, s->tracker.reused_seen);
	/* Nothing left to read: objects count as they stood at the last check. */
	if (s->target_exited)
		tracker_count_unverified(&s->tracker);
}

static int decode_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * An exec replaces the traced program, even by another Ruby that the
 * probes would trace into the same report: the counts stay as they were
 * at the last check, and the report says so.
 */
static bool target_execed(struct session *s)
{
	double t = now_seconds();

	if (t - s->last_exec_check < 0.25)
		return false;
	s->last_exec_check = t;
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
	    !__atomic_exchange_n(&s->st->exit_stop_sent, 0, __ATOMIC_ACQ_REL)) {
		rbm_info("PID %d was stopped by signal %d: not rbmemtrace's stop", pid,
			 WSTOPSIG(status));
		return false;
	}
	if (WIFSTOPPED(status)) {
		/* Stopped at ruby_sig_finalize: the main program is done. */
		final_census(s);
		kill(pid, SIGCONT);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		s->exit_status = decode_status(status);
		s->end_reason = "command finished";
		return true;
	}
	s->exit_status = decode_status(status);
	s->target_exited = true;
	s->end_reason = "target exited";
	return true;
}

/*
 * Whether the GC may have freed tracked objects since the last pass.  With
 * the GC probes on, their sweep steps say so; without them (sampling, or a
 * Ruby without USDT) Ruby's GC count does, then a second more while lazy
 * sweeping frees what that GC found dead.
 */
static bool gc_worked(struct session *s, double t)
{
	uint64_t count;

	if (!s->sampling && s->target.has_usdt) {
		uint64_t sweeps = __atomic_load_n(&s->st->sweep_steps, __ATOMIC_ACQUIRE);

		if (sweeps == s->seen_sweeps)
			return false;
		s->seen_sweeps = sweeps;
		return true;
	}
	if (s->tracker.gc_count_addr &&
	    target_read_u64(s->target.pid, s->tracker.gc_count_addr, &count) == 0 &&
	    count != s->seen_gc_count) {
		s->seen_gc_count = count;
		s->last_gc_seen = t;
	}
	return t - s->last_gc_seen < 1.0;
}

/* Sampling: what the probes outside the windows cost the target, charged to the budget. */
static void charge_other_probes(struct session *s)
{
	uint64_t hits = __atomic_load_n(&s->st->compaction_probe_hits, __ATOMIC_RELAXED);

	if (hits == s->charged_compaction_hits)
		return;
	windows_charge(&s->windows, (hits - s->charged_compaction_hits) *
					    windows_stepped_hit_cost(&s->windows));
	s->charged_compaction_hits = hits;
}

/* Seconds to sleep until deadline, at most max: never negative, which means the end. */
static double wait_until(double deadline, double max)
{
	double wait = deadline - now_seconds();

	return wait < 0 ? 0 : wait < max ? wait : max;
}

double session_poll(struct session *s, double t)
{
	bool worked = false;

	/* Sampling looks at the counter up to every half millisecond: /proc is read less often. */
	if (t - s->last_end_check >= 0.01 || !s->sampling) {
		s->last_end_check = t;
		if (target_ended(s))
			return -1;
	}
	if (s->sampling) {
		int err;

		charge_other_probes(s);
		err = windows_step(&s->windows, t);
		/* A target that exits before the first window just ends the trace. */
		if (err && !target_gone(s->target.pid))
			die_attach(s, err);
		/*
		 * A window costs the target while the probes are on: nothing may
		 * hold it open longer.  One that waits for an idle target costs
		 * nothing, and names still need refreshing meanwhile.
		 */
		if (windows_open(&s->windows)) {
			if (t - s->last_names >= 0.2 && t - s->windows.sampler.opened >= 0.2) {
				s->last_names = t;
				session_refresh_names(s);
			}
			return wait_until(windows_next(&s->windows), 1);
		}
	}
	/*
	 * Sampling: a pass after every GC, at most every 20 ms, so that a
	 * tracked object's death is seen while it lies unmarked or its slot's
	 * newcomer is young (tracker.c).  The GC count is looked at every 5 ms
	 * at most.  Sampling deletes the dead entries itself, once no probe
	 * can write the map: no pass runs while a window is open (above: it
	 * must not hold the probes on), and while its links come off (~0.1 s)
	 * a pass judges all the same and its deletes wait.
	 */
	if (!s->sampling || t - s->last_gc_look >= 0.005) {
		s->last_gc_look = t;
		worked = gc_worked(s, t);
	}
	s->tracker.deletes_wait =
		s->sampling && __atomic_load_n(&s->probes.detaching, __ATOMIC_ACQUIRE) > 0;
	if (worked &&
	    t - s->last_pass >= (s->sampling && s->pass_gc_count != s->seen_gc_count ? 0.02 : 0.2)) {
		s->last_pass = t;
		s->pass_gc_count = s->seen_gc_count;
		if (tracker_pass(&s->tracker, false) == -ESRCH)
			return 0; /* noticed at the next turn */
	}
	if (s->sampling && !s->tracker.deletes_wait && s->tracker.dead.len)
		tracker_delete_dead(&s->tracker);
	/* Often: a class first seen just before the target exits still needs its name. */
	if (t - s->last_names >= 0.2) {
		s->last_names = t;
		session_refresh_names(s);
		ruby_target_gc_counts(&s->target, &s->counts_last);
	}
	/*
	 * Sampling looks at least every 20 ms, to catch a reused slot before its
	 * newcomer grows old; passes every 5 ms caught a few more but slowed a
	 * GC-heavy target by 50% on two cores (its memory read while it mmaps).
	 */
	return s->sampling ? wait_until(windows_next(&s->windows), 0.02) : 0.05;
}

void session_run(struct session *s, volatile sig_atomic_t *stop)
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
		if (wait < 0)
			break;
		usleep(wait <= 0 ? 0 : wait * 1e6);
	}
	s->end = now_seconds();
}

void session_finish(struct session *s)
{
	final_census(s);
	/* The allocation probes are off; the rest can come off after we exit. */
	shared_bpf_release_after_exit();
	probes_detach_all(&s->probes);
}

int session_report(struct session *s, struct report *r)
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
	r->header_read_errors = s->st->header_read_errors;
	r->class_overflow = s->st->class_overflow;
	r->with_stacks = s->opt.depth > 0;
	r->stacks_truncated = s->st->stacks_truncated;
	r->stacks_dropped = s->st->stacks_dropped;
	r->stack_errors = s->st->stack_errors;
	r->have_gc_counts = s->counts_start.valid && s->counts_last.valid;
	if (r->have_gc_counts) {
		r->gc_allocated = s->counts_last.allocated - s->counts_start.allocated;
		r->gc_freed = s->counts_last.freed - s->counts_start.freed;
	}
	if (s->sampling) {
		struct sampling_info *si = &r->sampling;
		uint64_t traced = 0, weighed = 0;

		u64map_for_each(&s->tracker.tallies, i)
		{
			struct class_tally *t = s->tracker.tallies.values[i];

			traced += t->allocated;
			weighed += t->w_allocated;
		}
		si->on = true;
		si->budget_percent = s->opt.max_overhead;
		si->windows = s->windows.sampler.windows;
		si->window_time_s = s->windows.sampler.window_time;
		si->est_overhead = sampler_overhead(&s->windows.sampler, r->duration_s);
		si->traced = traced;
		si->probe_hits = s->windows.sampler.probe_hits;
		si->covered = s->windows.sampler.covered;
		si->burst_windows = s->windows.sampler.burst_windows;
		si->sample = s->windows.sampler.windows
				     ? s->windows.sampler.sample_sum / s->windows.sampler.windows
				     : 0;
		si->scale = r->have_gc_counts && traced ? (double)r->gc_allocated / traced : 0;
		si->weight_scale = r->have_gc_counts && weighed
					   ? (double)r->gc_allocated * RBM_WEIGHT_ONE / weighed
					   : 0;
		if (!sampler_doubt(&s->windows.sampler, si->doubt, sizeof(si->doubt)))
			si->doubt[0] = 0;
	}
	u64map_for_each(&s->tracker.tallies, i)
	{
		struct class_tally *t = s->tracker.tallies.values[i];
		struct counts c = {
			.allocated = t->allocated,
			.retained = t->retained,
			.young = t->young,
			.untracked = t->untracked,
			.not_followed = t->not_followed,
		};
		uint64_t accounted = t->retained + t->young + t->untracked + t->not_followed;
		const char *name = class_namer_key_name(&s->namer, t->klass, t->kind);
		/* Objects no pass saw (untracked, not followed) weigh what their tally's do on average. */
		double mean = t->allocated ? (double)t->w_allocated / t->allocated : 0;
		double w_accounted = (double)t->w_retained + (double)t->w_young +
				     mean * (double)(t->untracked + t->not_followed);

		c.freed = t->allocated > accounted ? t->allocated - accounted : 0;
		c.window_bits = t->window_bits;
		c.w_allocated = (double)t->w_allocated / RBM_WEIGHT_ONE;
		c.w_retained = (double)t->w_retained / RBM_WEIGHT_ONE;
		c.w_freed = t->w_allocated > w_accounted
				    ? (t->w_allocated - w_accounted) / RBM_WEIGHT_ONE
				    : 0;
		if (!session_class_wanted(s, name))
			continue;
		err = report_add_tally(r, name,
				       t->stack_id ? symbolizer_stack(&s->symbolizer, t->stack_id)
						   : NULL,
				       &c, &t->ages);
		if (err)
			return err;
	}
	err = session_heap_report(s, r);
	if (err)
		return err;
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

void session_close(struct session *s)
{
	session_heap_free(s);
	symbolizer_free(&s->symbolizer);
	u64map_free(&s->filtered, NULL);
	tracker_free(&s->tracker);
	windows_free(&s->windows);
	class_namer_free(&s->namer);
	fork_sweeper_stop(&s->forks); /* stopped at the final census; this is for the other ends */
	/* A session that ended with its target gone still had its probes on. */
	probes_detach_all(&s->probes);
	proc_slot_close(&s->slot);
	s->st = NULL;
	s->skel = NULL;
}

int session_exit_status(const struct session *s)
{
	return s->launched && s->exit_status >= 0 ? s->exit_status : 0;
}

/* Waits for the launched child; its exit status, or -1 while it runs. */
static int reap_child(pid_t pid, bool block)
{
	int status;

	if (waitpid(pid, &status, block ? 0 : WNOHANG) != pid)
		return -1;
	return decode_status(status);
}

int session_run_empty_probes(struct session *s, volatile sig_atomic_t *stop)
{
	double start = now_seconds();
	int status = 0, err = probes_attach_alloc(&s->probes, false);

	if (err)
		die_attach(s, err);
	if (s->launched) {
		/* Past the stop at ruby_options, the exit stop is not needed. */
		probes_detach_all_but_alloc(&s->probes);
		rbm_on_die_remove(kill_held_child, s);
		kill(s->target.pid, SIGCONT);
	}
	fprintf(stderr, "rbmemtrace: empty %s probes on PID %d (benchmark baseline)\n",
		s->opt.empty_probes == ALLOC_PROBE_EMPTY_UPROBE ? "uprobe" : "uretprobe",
		s->target.pid);
	while (!*stop && !(s->opt.duration && now_seconds() - start >= s->opt.duration)) {
		if (s->launched ? (status = reap_child(s->target.pid, false)) >= 0
				: target_gone(s->target.pid))
			break;
		usleep(50 * 1000);
	}
	probes_detach_all(&s->probes);
	proc_slot_close(&s->slot);
	s->st = NULL;
	return s->launched && status > 0 ? status : 0;
}

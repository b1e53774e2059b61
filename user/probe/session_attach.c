// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session's attach: finding the target's Ruby (starting a launched
 * command held), proving its layout, loading the run's BPF object and
 * attaching the probes; and giving back what it took.  Calls only
 * session_names.c, session_bpf.c and session_launch.c (the order:
 * session.h).
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
#include "proc_info.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "new_stacks.h"
#include "session.h"
#include "shared_bpf.h"

int session_attach_error(struct session *s, int err, char *msg, size_t msglen)
{
	probes_detach_all(&s->at.probes);
	if (target_gone(s->target.pid)) {
		snprintf(msg, msglen, "PID %d exited", s->target.pid);
		return -ESRCH;
	}
	if (err == -EPERM || err == -EACCES)
		snprintf(msg, msglen,
			 "not enough privileges to attach uprobes to PID %d: run as root, or with "
			 "CAP_SYS_ADMIN (and CAP_SYS_PTRACE for another user's process)",
			 s->target.pid);
	else
		snprintf(msg, msglen, "cannot attach to PID %d%s%s", s->target.pid, err ? ": " : "",
			 err ? strerror(-err) : "");
	return err < 0 ? err : -EINVAL;
}

/*
 * The compaction probe's scan for slots objects moved into (drop_moved_over
 * in the BPF side): the page table, read as the census reads it.  Without
 * a proved heap layout no scan runs, and a compaction's dead objects whose
 * slots took moved ones would pass for kept.
 */
static void scan_moved_over(struct session *s)
{
	const struct ruby_layout *hl = s->at.heap_layout;

	if (!hl || !s->target.objspace || !s->at.st->compact_count_addr || !hl->objspace_sorted ||
	    !hl->page_start || !hl->page_total_slots || hl->slot_size > 0xffff ||
	    hl->max_slots > 0xffff)
		return;
	s->at.st->heap_sorted_addr = s->target.objspace + hl->objspace_sorted;
	s->at.st->heap_npages_addr =
	    hl->sorted_darray_data ? 0 : s->target.objspace + hl->objspace_allocated_pages;
	s->at.st->heap_darray_data = hl->sorted_darray_data;
	s->at.st->page_start_off = hl->page_start;
	s->at.st->page_total_slots_off = hl->page_total_slots;
	s->at.st->page_slot_size_off = hl->page_slot_size;
	s->at.st->heap_slot_size = hl->slot_size;
	s->at.st->page_max_slots = hl->max_slots;
}

/*
 * Where BPF reads Ruby's counters as Ruby reaches its exit (on_ruby_exit):
 * a target that exits can no longer be read, and the report's delta of
 * Ruby's counters must end where counting did.  Launch mode has the probe
 * already (it stops the child there), as has a process --all held at its
 * start; -p attaches it alone.
 */
static void exit_counters(struct session *s)
{
	struct gc_allocated_counter alloc, freed;

	if (!ruby_target_proved(&s->target, PROOF_GC))
		return;
	gc_counters_allocated_at(&s->target.layout, s->target.objspace, &alloc);
	gc_counters_freed_at(&s->target.layout, s->target.objspace, &freed);
	if (!alloc.addr || !freed.addr)
		return;
	s->at.st->alloc_count_addr = alloc.addr;
	s->at.st->alloc_count_pools = alloc.pools;
	s->at.st->alloc_count_stride = alloc.stride;
	s->at.st->freed_count_addr = freed.addr;
	s->at.st->moved_count_addr = s->target.moved_addr;
	/* A launched or held process has the probe already, with its stop. */
	if (!s->launched && !s->at.held && probes_attach_exit(&s->at.probes))
		rbm_info("no probe at ruby_sig_finalize: if the target exits, Ruby's counters are "
			 "its last read ones");
}

/* -p PID: its Ruby found and proved, the run's BPF object loaded, its end probed if held. */
static int open_pid(struct session *s, char *msg, size_t msglen)
{
	int ret;

	if ((ret = ruby_target_open(&s->target, s->opt.pid, RUBY_NEED_TRACE, msg, msglen)))
		return ret;
	/* Held at ruby_options' return, it is where a launched child is. */
	if (ruby_target_require(&s->target, PROOF_ALL, SESSION_TRACE_NEEDS, s->opt.held, msg,
				msglen))
		return -ENOTSUP;
	shared_bpf_prepare_live_map(s->opt.max_objects);
	if ((ret = session_load_bpf(s, msg, msglen)))
		return ret;
	s->at.probes = (struct probes){.skel = s->at.skel,
				       .slot = s->at.slot.index,
				       .pid = s->target.pid,
				       .binary = s->target.img.host_path,
				       .verbose = rbm_verbose};
	/* Its end is read before finalizers run, as a launched command's. */
	if (s->opt.held) {
		s->at.held = true;
		s->at.st->stop_at_exit = 1;
		if (probes_attach_exit_stop(&s->at.probes))
			s->at.st->stop_at_exit = 0;
	}
	return 0;
}

/* The target's names: its command, rb_cObject and the class allocator, the class namer. */
static int open_names(struct session *s, char *msg, size_t msglen)
{
	uint64_t object_class, alloc_offset = 0;
	int ret;

	proc_command(s->target.pid, s->command, sizeof(s->command));
	proc_labels_read(s->target.pid, &s->labels);
	s->at.ns_pid = proc_ns_pid(s->target.pid);
	if ((ret = ruby_target_global(&s->target, "rb_cObject", &object_class, msg, msglen)))
		return ret;
	if (s->target.alloc->hidden_class_allocator &&
	    (ret = ruby_target_class_allocator(&s->target, &alloc_offset, msg, msglen)))
		return ret;
	if ((ret = class_namer_init(&s->names.namer, s->target.pid, &s->target.layout, object_class,
				    msg, msglen)))
		return ret < 0 ? ret : -EINVAL;
	s->at.probes.points = s->target.alloc;
	s->at.probes.class_allocate_instance = alloc_offset;
	s->at.probes.use_multi = s->at.use_multi;
	return 0;
}

/* The tracker on the process's BPF slot, and what BPF reads of Ruby's GC there. */
static void open_tracker(struct session *s)
{
	struct tracker *t = &s->tracker;
	const struct ruby_layout *hl = s->at.heap_layout;

	tracker_init(t, s->target.pid, s->at.slot.live_fd, s->at.slot.counts_fd, s->at.slot.reap,
		     s->target.objspace && s->target.layout.objspace_compact_count
			 ? s->target.objspace + s->target.layout.objspace_compact_count
			 : 0);
	t->io.fallback_fd = s->at.slot.fallback_fd;
	t->io.class_moves_fd = bpf_map__fd(s->at.skel->maps.class_moves);
	t->io.slot = (uint32_t) s->at.slot.index;
	t->io.classes_followed_at = &s->at.st->classes_followed_at;
	t->io.class_moved = session_class_moved;
	t->io.class_moved_ctx = s;
	t->io.compaction_pending = &s->at.st->compaction_pending;
	t->io.compact_followed_at = &s->at.st->compact_followed_at;
	t->io.fl_singleton = s->target.layout.fl_singleton;
	t->io.hl = hl;
	t->io.objspace = s->target.objspace;
	t->io.rclass_super = s->target.layout.rclass_super;
	if (s->target.objspace && s->target.layout.objspace_gc_count)
		t->io.gc_count_addr = s->target.objspace + s->target.layout.objspace_gc_count;
	s->at.st->gc_count_addr = t->io.gc_count_addr;
	/* Who was born while a GC marked: only the judging of slots by age asks (tracker.c). */
	if (hl && s->at.st->gc_count_addr && hl->objspace_flags_mode_mask) {
		s->at.st->gc_flags_addr = s->target.objspace + hl->objspace_flags;
		s->at.st->gc_mode_mask = hl->objspace_flags_mode_mask;
		s->at.st->gc_incremental = hl->objspace_flags_incremental;
	}
	s->at.st->compact_count_addr = t->io.compact_count_addr;
	s->at.st->compact_count_seen = t->gc.last_compact_count;
}

/*
 * Tracing everything: the GC probes (or, without USDT, deletes at the next
 * allocation hit) and the allocation probes now, and the fork sweeper.
 */
static int attach_full(struct session *s, char *msg, size_t msglen)
{
	int err;

	/*
	 * Without Ruby's GC probes, dead entries are deleted at the next
	 * allocation hit instead: on the target's thread too, under its GVL.
	 */
	if (s->target.has_usdt) {
		err = probes_attach_gc(&s->at.probes);
	} else {
		s->at.st->reap_at_alloc = 1;
		probes_attach_compaction(&s->at.probes);
		err = 0;
	}
	err = err ?: probes_attach_alloc(&s->at.probes, false);

	if (err)
		return session_attach_error(s, err, msg, msglen);
	/* The sampler's link comes off within its window, and the children's breakpoints
	 * with it. */
	if (s->at.probes.use_multi && (err = fork_sweeper_start(&s->at.forks, &s->at.probes)))
		rbm_warn("cannot watch for forks (%s): a child the target forks will trap on "
			 "every allocation while it is traced",
			 strerror(-err));
	return 0;
}

/* Once the target is found and the BPF object loaded: names, the tracker, the probes. */
static int open_probes(struct session *s, char *msg, size_t msglen)
{
	int ret;

	if ((ret = open_names(s, msg, msglen)))
		return ret;
	/* A group the proof turned off is not read: its line said so (ruby_target_require). */
	s->at.heap_layout = ruby_target_proved(&s->target, PROOF_HEAP) ? &s->target.layout : NULL;
	if (!ruby_target_proved(&s->target, PROOF_STACKS))
		s->opt.depth = 0;
	s->at.probes.alloc_kind = s->opt.empty_probes;
	if (s->opt.empty_probes)
		return 0;
	if ((ret = session_configure_stacks(s, msg, msglen)))
		return ret;
	open_tracker(s);
	scan_moved_over(s);
	exit_counters(s);
	/* Attaching a running process is safe by default; a launched one is ours. */
	if (!s->opt.full && !s->opt.max_overhead && !s->launched)
		s->opt.max_overhead = 2;
	s->sampling = !s->opt.full && s->opt.max_overhead > 0;
	if (!s->sampling)
		return attach_full(s, msg, msglen);
	/*
	 * Sampling attaches no GC probe: GCs are read from Ruby's own counter,
	 * and dead entries are deleted between windows, when no probe is on.
	 * Its allocation probes go on window by window from session_start.
	 */
	s->at.st->sampling = 1;
	s->tracker.mode.direct_delete = true;
	probes_attach_compaction(&s->at.probes);
	return 0;
}

int session_open(struct session *s, const struct trace_options *opt, char *err, size_t errlen)
{
	int ret;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->names.lock, NULL);
	s->opt = *opt;
	s->exit_status = -1;
	s->at.slot.index = -1; /* no slot yet: nothing of another session's is touched on close */
	session_quiet_libbpf(false);
	ret = s->opt.command ? session_start_command(s, err, errlen) : open_pid(s, err, errlen);
	if (!ret)
		ret = open_probes(s, err, errlen);
	/* Half open: whatever it took is given back, a launched child killed. */
	if (ret)
		session_attach_release(s);
	return ret;
}

static int name_id(void *ctx, uint64_t id, char *buf, size_t n)
{
	return ruby_id_name(ctx, id, buf, n);
}

/* Integer#times is Ruby code from 3.3: a frame's receiver may be an immediate. */
static int immediate_classes(struct session *s, char *err, size_t errlen)
{
	static const char *const globals[IMMEDIATE_KINDS] = {
	    [IMMEDIATE_INTEGER] = "rb_cInteger", [IMMEDIATE_FLOAT] = "rb_cFloat",
	    [IMMEDIATE_SYMBOL] = "rb_cSymbol",	 [IMMEDIATE_NIL] = "rb_cNilClass",
	    [IMMEDIATE_TRUE] = "rb_cTrueClass",	 [IMMEDIATE_FALSE] = "rb_cFalseClass",
	};
	int k, ret;

	for (k = 0; k < IMMEDIATE_KINDS; k++)
		if ((ret = ruby_target_global(&s->target, globals[k],
					      &s->names.symbolizer.immediate_classes[k], err,
					      errlen)))
			return ret;
	return 0;
}

/*
 * The walk finds the thread's execution context through libruby's TLS
 * variable ruby_current_ec: right for threads, fibers and Ractors alike.
 */
int session_configure_stacks(struct session *s, char *msg, size_t msglen)
{
	const struct ruby_target *t = &s->target;
	const struct ruby_layout *off = &t->layout;
	struct stack_config cfg = {};
	uint64_t tls_offset, modid;
	char err[256];
	int ret;

	if (!s->opt.depth)
		return 0;
	if (ruby_target_ec_tls(t, &modid, &tls_offset)) {
		rbm_warn("cannot find ruby_current_ec's TLS slot in %s; reporting without call "
			 "paths",
			 t->img.path);
		s->opt.depth = 0;
		return 0;
	}
	if (ruby_symbols_init(&s->names.symbols, t->pid, &t->img, off, err, sizeof(err)) == 0) {
		symbolizer_init(&s->names.symbolizer, t->pid, off, &s->names.namer, name_id,
				&s->names.symbols);
	} else {
		rbm_warn("%s; C methods print as Owner#?", err);
		symbolizer_init(&s->names.symbolizer, t->pid, off, &s->names.namer, NULL, NULL);
	}
	if ((ret = immediate_classes(s, msg, msglen)))
		return ret;
	cfg.tls_modid = modid;
	cfg.ec_tls_offset = tls_offset;
	cfg.ec_vm_stack = off->ec_vm_stack;
	cfg.ec_vm_stack_size = off->ec_vm_stack_size;
	cfg.ec_cfp = off->ec_cfp;
	cfg.cfp_size = off->cfp_size;
	cfg.cfp_pc = off->cfp_pc;
	cfg.cfp_iseq = off->cfp_iseq;
	cfg.cfp_ep = off->cfp_ep;
	cfg.cfp_self = off->cfp_self;
	cfg.bump_alloc_pc = t->alloc->alloc_pc_on_insn;
	cfg.depth = s->opt.depth;
	if (new_stacks_open(s->at.skel) == 0)
		new_stacks_route(s->at.slot.index, session_name_new_stack, s);
	s->at.st->filter_classes = s->opt.nclasses > 0;
	s->at.st->stack_cfg = cfg;
	rbm_info("stacks: depth %lu, TLS module %" PRIu64 ", ruby_current_ec at +%" PRIu64,
		 s->opt.depth, modid, tls_offset);
	return 0;
}

/* Waits for the launched child; its exit status, or -1 while it runs. */
static int reap_child(pid_t pid, bool block)
{
	int status;

	if (waitpid(pid, &status, block ? 0 : WNOHANG) != pid)
		return -1;
	return session_decode_status(status);
}

int session_run_empty_probes(struct session *s, volatile sig_atomic_t *stop, char *msg,
			     size_t msglen)
{
	double start = now_seconds();
	int status = 0, err = probes_attach_alloc(&s->at.probes, false);

	if (err)
		return session_attach_error(s, err, msg, msglen);
	if (s->launched) {
		/* Past the stop at ruby_options, the exit stop is not needed. */
		probes_detach_all_but_alloc(&s->at.probes);
		session_release_child(s, false);
		held_release(s->at.skel, s->target.pid);
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
	probes_detach_all(&s->at.probes);
	proc_slot_close(&s->at.slot);
	s->at.st = NULL;
	return s->launched && status > 0 ? status : 0;
}

void session_attach_release(struct session *s)
{
	/* A launched command that never ran Ruby must not stay stopped. */
	session_release_child(s, true);
	/* No slot (-1): a half-open session routed nothing. */
	new_stacks_route(s->at.slot.index, NULL, NULL);
	symbolizer_free(&s->names.symbolizer);
	u64map_free(&s->names.filtered, NULL);
	tracker_free(&s->tracker);
	class_namer_free(&s->names.namer);
	pthread_mutex_destroy(&s->names.lock);
	fork_sweeper_stop(
	    &s->at.forks); /* stopped at the final census; this is for the other ends */
	/*
	 * A session that ended with its target gone still had its probes on.
	 * The threads taking them off count down s->at.probes.detaching when they
	 * end, so s must outlive them: the caller frees it (or its stack frame
	 * goes) right after.  The detaches run side by side, ~0.1 s in all.
	 */
	probes_detach_all(&s->at.probes);
	probes_wait_detached(&s->at.probes);
	proc_slot_close(&s->at.slot);
	s->at.st = NULL;
	s->at.skel = NULL;
}

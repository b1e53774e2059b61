// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session's part of the run's BPF object (shared_bpf.h): the object,
 * loaded by the first session with the uprobe_multi program where the
 * kernel has it, the session's slot with maps sized from its options, and
 * the stack walk's configuration for this Ruby.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "diag.h"
#include "elfinfo.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "session.h"
#include "target_mem.h"

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG || !rbm_verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int name_id(void *ctx, uint64_t id, char *buf, size_t n)
{
	return ruby_id_name(ctx, id, buf, n);
}

/* Integer#times is Ruby code from 3.3: a frame's receiver may be an immediate. */
static void immediate_classes(struct session *s)
{
	static const char *const globals[IMMEDIATE_KINDS] = {
		[IMMEDIATE_INTEGER] = "rb_cInteger", [IMMEDIATE_FLOAT] = "rb_cFloat",
		[IMMEDIATE_SYMBOL] = "rb_cSymbol",   [IMMEDIATE_NIL] = "rb_cNilClass",
		[IMMEDIATE_TRUE] = "rb_cTrueClass",  [IMMEDIATE_FALSE] = "rb_cFalseClass",
	};
	int k;

	for (k = 0; k < IMMEDIATE_KINDS; k++)
		s->symbolizer.immediate_classes[k] = ruby_target_global(&s->target, globals[k]);
}

/*
 * The walk finds the thread's execution context through libruby's TLS
 * variable ruby_current_ec: right for threads, fibers and Ractors alike.
 */
void session_configure_stacks(struct session *s)
{
	const struct ruby_target *t = &s->target;
	const struct ruby_layout *off = &t->layout;
	struct stack_config cfg = {};
	uint64_t tls_offset, modid;
	char err[256];

	if (!s->opt.depth)
		return;
	if (ruby_target_ec_tls(t, &modid, &tls_offset)) {
		rbm_warn("cannot find ruby_current_ec's TLS slot in %s; reporting without call "
			 "paths",
			 t->img.path);
		s->opt.depth = 0;
		return;
	}
	if (ruby_symbols_init(&s->symbols, t->pid, &t->img, off, err, sizeof(err)) == 0) {
		symbolizer_init(&s->symbolizer, t->pid, off, &s->namer, name_id, &s->symbols);
	} else {
		rbm_warn("%s; C methods print as Owner#?", err);
		symbolizer_init(&s->symbolizer, t->pid, off, &s->namer, NULL, NULL);
	}
	immediate_classes(s);
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
	s->st->filter_classes = s->opt.nclasses > 0;
	s->st->stack_cfg = cfg;
	rbm_info("stacks: depth %lu, TLS module %" PRIu64 ", ruby_current_ec at +%" PRIu64,
		 s->opt.depth, modid, tls_offset);
}

/*
 * The run's BPF object is loaded by its first session, and every session
 * takes a slot of it: the 16th process of a run costs its maps, not a load.
 */
void session_load_bpf(struct session *s)
{
	struct shared_bpf *sh = shared_bpf();
	int err;

	if (!sh) {
		libbpf_set_print(NULL); /* a kernel without uprobe_multi is not an error */
		err = shared_bpf_load(s->opt.depth, true);
		libbpf_set_print(libbpf_print);
		if (err) {
			rbm_info("no uprobe_multi links here; one link per probe");
			err = shared_bpf_load(s->opt.depth, false);
		}
		if (err)
			rbm_die("cannot load the BPF programs: %s (needs a kernel with BTF, BPF and "
				"uprobes)",
				strerror(-err));
		sh = shared_bpf();
	}
	s->skel = sh->skel;
	s->use_multi = sh->use_multi;
	/* The run's sessions share their options: this is for a caller that would not. */
	if (s->opt.depth > sh->depth) {
		rbm_warn("call paths of PID %d cut to %lu frames, the run's depth", s->opt.pid,
			 sh->depth);
		s->opt.depth = sh->depth;
	}
	err = proc_slot_open(&s->slot, s->opt.max_objects, s->opt.max_stacks, s->opt.depth > 0);
	if (err == -ENOSPC)
		rbm_die("cannot trace more than %d processes in one run", RBM_MAX_SLOTS);
	if (err)
		rbm_die("cannot create the BPF maps for a process: %s", strerror(-err));
	s->st = s->slot.st;
}

void session_quiet_libbpf(bool quiet)
{
	libbpf_set_print(quiet ? NULL : libbpf_print);
}

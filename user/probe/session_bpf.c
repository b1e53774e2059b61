// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loading the one BPF object for a session: maps sized from the options,
 * the uprobe_multi program where the kernel has it, and the stack walk's
 * configuration for this Ruby.
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
	const struct ruby_offsets *off = t->off;
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
	s->skel->bss->filter_classes = s->opt.nclasses > 0;
	s->skel->bss->stack_cfg = cfg;
	rbm_info("stacks: depth %lu, TLS module %" PRIu64 ", ruby_current_ec at +%" PRIu64,
		 s->opt.depth, modid, tls_offset);
}

static int open_and_load(struct session *s, bool multi)
{
	unsigned long depth = s->opt.depth ? s->opt.depth : 1;

	s->skel = rbmemtrace_bpf__open();
	if (!s->skel)
		rbm_die("cannot open the BPF object: %s", strerror(errno));
	bpf_map__set_max_entries(s->skel->maps.live_objects, s->opt.max_objects);
	bpf_map__set_max_entries(s->skel->maps.stacks, s->opt.max_stacks);
	/* Store only the frames asked for: a 128-deep value for a depth of 8 wastes memory. */
	bpf_map__set_value_size(s->skel->maps.stacks,
				offsetof(struct stack_frames, frames) + depth * 2 * sizeof(__u64));
	bpf_map__set_max_entries(s->skel->maps.stack_selves, s->opt.max_stacks);
	/* One entry per (class, call path); a full table falls back to class_fallback. */
	bpf_map__set_max_entries(s->skel->maps.class_counts,
				 s->opt.depth ? s->opt.max_stacks : 65536);
	bpf_map__set_value_size(s->skel->maps.stack_selves, depth * sizeof(__u64));
	if (multi) {
		bpf_program__set_expected_attach_type(s->skel->progs.on_alloc_return_multi,
						      RBM_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(s->skel->progs.on_alloc_sweep,
						      RBM_BPF_TRACE_UPROBE_MULTI);
	} else {
		bpf_program__set_autoload(s->skel->progs.on_alloc_return_multi, false);
		bpf_program__set_autoload(s->skel->progs.on_alloc_sweep, false);
	}
	return rbmemtrace_bpf__load(s->skel);
}

void session_load_bpf(struct session *s)
{
	int err;

	libbpf_set_print(NULL); /* a kernel without uprobe_multi is not an error */
	s->use_multi = open_and_load(s, true) == 0;
	libbpf_set_print(libbpf_print);
	if (s->use_multi)
		return;
	rbmemtrace_bpf__destroy(s->skel);
	rbm_info("no uprobe_multi links here; one link per probe");
	err = open_and_load(s, false);
	if (err)
		rbm_die("cannot load the BPF programs: %s (needs a kernel with BTF, BPF and uprobes)",
			strerror(-err));
}


void session_quiet_libbpf(bool quiet)
{
	libbpf_set_print(quiet ? NULL : libbpf_print);
}

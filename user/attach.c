// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "attach.h"
#include <linux/types.h>
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"

/*
 * newobj_of is inlined into these; they are every exported way a 3.1 object
 * is born.  The *_zalloc data helpers are left out on purpose: they call the
 * wrap functions through the PLT, so probing them would count objects twice.
 */
const char *const alloc_functions[] = {
	"rb_wb_protected_newobj_of", "rb_wb_unprotected_newobj_of", "rb_ec_wb_protected_newobj_of",
	"rb_newobj_of",		     "rb_newobj",		    "rb_imemo_new",
	"rb_data_object_wrap",	     "rb_data_typed_object_wrap",   "rb_alloc_tmp_buffer_with_count",
};
const int alloc_functions_count = sizeof(alloc_functions) / sizeof(alloc_functions[0]);

static int attach_uprobe(struct probes *p, struct bpf_program *prog, const char *func,
			 uint64_t offset, bool ret, struct bpf_link **out)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = func, .retprobe = ret);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, p->pid, p->binary, offset, &opts);
	if (!link) {
		int err = -errno;

		fprintf(stderr, "rbmemtrace: cannot attach %s to %s %s: %s\n",
			ret ? "uretprobe" : "uprobe", p->binary, func ? func : "(by offset)",
			strerror(-err));
		return err;
	}
	if (p->verbose)
		fprintf(stderr, "rbmemtrace: attached %s %s%s in %s (pid %d)\n",
			ret ? "uretprobe" : "uprobe", func ? func : "rb_class_allocate_instance",
			func ? "" : " (hidden; found through BasicObject's allocator)", p->binary,
			p->pid);
	*out = link;
	return 0;
}

int probes_attach_alloc(struct probes *p, uint64_t class_allocate_instance_offset)
{
	struct bpf_program *prog = p->skel->progs.on_alloc_return;
	int i, err;

	for (i = 0; i < alloc_functions_count; i++) {
		err = attach_uprobe(p, prog, alloc_functions[i], 0, true, &p->alloc[p->nalloc]);
		if (err)
			return err;
		p->nalloc++;
	}
	/* Every Foo.new goes through this one, and it is not exported. */
	err = attach_uprobe(p, prog, NULL, class_allocate_instance_offset, true,
			    &p->alloc[p->nalloc]);
	if (err)
		return err;
	p->nalloc++;
	return 0;
}

static int attach_usdt(struct probes *p, struct bpf_program *prog, const char *name)
{
	struct bpf_link *link;

	link = bpf_program__attach_usdt(prog, p->pid, p->binary, "ruby", name, NULL);
	if (!link) {
		int err = -errno;

		fprintf(stderr, "rbmemtrace: cannot attach USDT ruby:%s in %s: %s\n", name,
			p->binary, strerror(-err));
		return err;
	}
	if (p->verbose)
		fprintf(stderr, "rbmemtrace: attached USDT ruby:%s in %s (pid %d)\n", name,
			p->binary, p->pid);
	p->other[p->nother++] = link;
	return 0;
}

int probes_attach_gc(struct probes *p)
{
	struct rbmemtrace_bpf *s = p->skel;
	int err;

	/* Compaction follow-up: a Ruby without this symbol still reports not-followed objects. */
	err = attach_uprobe(p, s->progs.on_gc_update_refs, "rb_gc_update_tbl_refs", 0, false,
			    &p->other[p->nother]);
	if (!err)
		p->nother++;
	return attach_usdt(p, s->progs.on_gc_mark_begin, "gc__mark__begin") ?:
	       attach_usdt(p, s->progs.on_gc_mark_end, "gc__mark__end") ?:
	       attach_usdt(p, s->progs.on_gc_sweep_begin, "gc__sweep__begin") ?:
	       attach_usdt(p, s->progs.on_gc_sweep_end, "gc__sweep__end");
}

int probes_attach_launch_stops(struct probes *p)
{
	struct rbmemtrace_bpf *s = p->skel;
	int err;

	/* ruby_options runs after the VM is initialised and before any Ruby code. */
	err = attach_uprobe(p, s->progs.on_ruby_start, "ruby_options", 0, false,
			    &p->other[p->nother]);
	if (err)
		return err;
	p->nother++;
	/* ruby_sig_finalize: at_exit handlers have run, finalizers have not. */
	err = attach_uprobe(p, s->progs.on_ruby_exit, "ruby_sig_finalize", 0, false,
			    &p->other[p->nother]);
	if (err)
		return err;
	p->nother++;
	return 0;
}

void probes_detach_alloc(struct probes *p)
{
	while (p->nalloc > 0)
		bpf_link__destroy(p->alloc[--p->nalloc]);
}

void probes_detach_all(struct probes *p)
{
	probes_detach_alloc(p);
	while (p->nother > 0)
		bpf_link__destroy(p->other[--p->nother]);
}

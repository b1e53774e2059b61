// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "diag.h"
#include "elfinfo.h"
#include "ruby_target.h"
#include "target_mem.h"

/* A read that failed because the process is gone says so, not "no symbol". */
static void die_unreadable(const struct ruby_target *t, const char *what)
{
	int err = errno;

	if (target_gone(t->pid))
		rbm_die("PID %d exited", t->pid);
	rbm_die("cannot read %s in PID %d: %s", what, t->pid, strerror(err));
}

void ruby_target_check_file(struct ruby_target *t, const char *host_path, const char *shown,
			    enum ruby_need need)
{
	if (elf_symbol_string(host_path, "ruby_version", t->version, sizeof(t->version)))
		rbm_die("cannot read the Ruby version (ruby_version) from %s", shown);
	t->off = ruby_offsets_for(t->version);
	if (!t->off)
		rbm_die("unsupported Ruby version %s in %s (supported: %s)", t->version, shown,
			ruby_supported_series());
	if (need == RUBY_NEED_USDT && !elf_has_usdt(host_path, "ruby", "gc__sweep__end"))
		rbm_die("%s was built without USDT probes (configure --enable-dtrace); rbmemtrace "
			"needs ruby:gc__* to see frees",
			shown);
	rbm_info("Ruby %s in %s (offsets: %s)", t->version, shown, t->off->source);
}

void ruby_target_attach(struct ruby_target *t, pid_t pid)
{
	char err[PATH_MAX + 128];

	t->pid = pid;
	if (procmaps_find_ruby(pid, &t->img, err, sizeof(err)))
		rbm_die("%s", err);
	rbm_info("%s mapped at load bias 0x%" PRIx64, t->img.path, t->img.load_bias);
}

bool ruby_target_supported(pid_t pid, enum ruby_need need, char *why, size_t n)
{
	struct ruby_image img;
	char version[32];

	if (procmaps_find_ruby(pid, &img, why, n))
		return false;
	if (elf_symbol_string(img.host_path, "ruby_version", version, sizeof(version))) {
		snprintf(why, n, "cannot read the Ruby version of PID %d", (int)pid);
		return false;
	}
	if (!ruby_offsets_for(version)) {
		snprintf(why, n, "PID %d runs Ruby %s, which is not supported (supported: %s)",
			 (int)pid, version, ruby_supported_series());
		return false;
	}
	if (need == RUBY_NEED_USDT && !elf_has_usdt(img.host_path, "ruby", "gc__sweep__end")) {
		snprintf(why, n, "PID %d runs a Ruby built without USDT probes", (int)pid);
		return false;
	}
	return true;
}

void ruby_target_open(struct ruby_target *t, pid_t pid, enum ruby_need need)
{
	ruby_target_attach(t, pid);
	ruby_target_check_file(t, t->img.host_path, t->img.path, need);
}

uint64_t ruby_target_global(const struct ruby_target *t, const char *name)
{
	uint64_t sym, value;

	if (elf_symbol_value(t->img.host_path, name, &sym, NULL))
		rbm_die("%s has no symbol %s", t->img.path, name);
	if (target_read_u64(t->pid, t->img.load_bias + sym, &value))
		die_unreadable(t, name);
	return value;
}

/* rb_class_allocate_instance is hidden; BasicObject's allocator points at it. */
uint64_t ruby_target_class_allocator(const struct ruby_target *t)
{
	uint64_t basic_object = ruby_target_global(t, "rb_cBasicObject");
	uint64_t ext, fn, file_offset;

	if (target_read_u64(t->pid, basic_object + t->off->rclass_ext, &ext) ||
	    target_read_u64(t->pid, ext + t->off->classext_allocator, &fn) ||
	    procmaps_file_offset(t->pid, t->img.path, fn, &file_offset)) {
		if (target_gone(t->pid))
			rbm_die("PID %d exited", t->pid);
		rbm_die("cannot find rb_class_allocate_instance through BasicObject's allocator: "
			"Ruby internals differ from the table for %s",
			t->off->series);
	}
	rbm_info("rb_class_allocate_instance at 0x%" PRIx64 " (file offset 0x%" PRIx64 ")", fn,
		 file_offset);
	return file_offset;
}

uint64_t ruby_target_find_objspace(const struct ruby_target *t)
{
	struct ruby_target *mut = (struct ruby_target *)t;
	uint64_t vm_ptr, objspace, sym;

	vm_ptr = ruby_target_global(t, "ruby_current_vm_ptr");
	if (elf_symbol_value(t->img.host_path, "ruby_current_vm_ptr", &sym, NULL) == 0) {
		mut->vm_ptr_addr = t->img.load_bias + sym;
		mut->vm = vm_ptr;
	}
	if (!vm_ptr || target_read_u64(t->pid, vm_ptr + t->off->vm_objspace, &objspace))
		return 0;
	return objspace;
}

bool ruby_target_same_program(const struct ruby_target *t)
{
	uint64_t vm;

	if (!t->vm_ptr_addr)
		return true;
	return target_read_u64(t->pid, t->vm_ptr_addr, &vm) == 0 && vm == t->vm;
}

void ruby_target_gc_counts(const struct ruby_target *t, struct gc_counts *c)
{
	const struct ruby_offsets *off = t->off;

	c->valid = t->objspace && off->objspace_total_allocated &&
		   !target_read_u64(t->pid, t->objspace + off->objspace_total_allocated,
				    &c->allocated) &&
		   !target_read_u64(t->pid, t->objspace + off->objspace_total_freed, &c->freed) &&
		   !target_read_u64(t->pid, t->objspace + off->objspace_gc_count, &c->gc_count);
}

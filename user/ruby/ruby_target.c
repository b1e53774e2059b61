// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "diag.h"
#include "dwarf_layout.h"
#include "elfinfo.h"
#include "proc_info.h"
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

/* "/proc/PID/root" of a target that runs, for a separate debug file; NULL before it runs. */
static const char *target_root(pid_t pid, char *buf, size_t n)
{
	if (pid <= 0)
		return NULL;
	snprintf(buf, n, "/proc/%d/root", (int) pid);
	return buf;
}

/*
 * The layout: the libruby's own DWARF (or its debug file), then the
 * built-in table's entry of the series with its patch release's fields.
 * Tracing also needs the series' allocation entry points.  0, or -1 with why.
 */
static int pick_layout(struct ruby_target *t, const char *host_path, const char *shown,
		       enum ruby_need need, char *why, size_t n)
{
	char err[512], root[64];

	t->alloc = ruby_alloc_points_for(t->version);
	if (need == RUBY_NEED_TRACE && !t->alloc) {
		snprintf(why, n,
			 "cannot trace Ruby %s in %s: its allocation entry points are not known "
			 "(traced: %s; census and top may still read it)",
			 t->version, shown, ruby_traced_series());
		return -1;
	}
	if (dwarf_layout_read(host_path, target_root(t->pid, root, sizeof(root)), t->version,
			      &t->layout, err, sizeof(err)) == 0)
		return 0;
	if (ruby_versions_layout(t->version, &t->layout) == 0)
		return 0;
	snprintf(why, n,
		 "unsupported Ruby version %s in %s: no DWARF in it and no table entry "
		 "for its series (known: %s)",
		 t->version, shown, ruby_known_series());
	return -1;
}

void ruby_target_check_file(struct ruby_target *t, const char *host_path, const char *shown,
			    enum ruby_need need)
{
	char why[640];

	if (elf_symbol_string(host_path, "ruby_version", t->version, sizeof(t->version)))
		rbm_die("cannot read the Ruby version (ruby_version) from %s", shown);
	if (pick_layout(t, host_path, shown, need, why, sizeof(why)))
		rbm_die("%s", why);
	t->has_usdt = elf_has_usdt(host_path, "ruby", "gc__sweep__end");
	rbm_info("Ruby %s in %s (layout: %s; %s)", t->version, shown, t->layout.source,
		 t->has_usdt ? "USDT probes" : "no USDT probes");
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
	static struct ruby_target t; /* large (a layout): not on the stack */
	char reason[640];

	memset(&t, 0, sizeof(t));
	t.pid = pid;
	if (procmaps_find_ruby(pid, &t.img, why, n))
		return false;
	if (elf_symbol_string(t.img.host_path, "ruby_version", t.version, sizeof(t.version))) {
		snprintf(why, n, "cannot read the Ruby version of PID %d", (int) pid);
		return false;
	}
	if (pick_layout(&t, t.img.host_path, t.img.path, need, reason, sizeof(reason))) {
		snprintf(why, n, "PID %d: %s", (int) pid, reason);
		return false;
	}
	return true;
}

static bool supported_process(pid_t pid, void *ctx)
{
	char why[256];

	return ruby_target_supported(pid, *(enum ruby_need *) ctx, why, sizeof(why));
}

size_t ruby_find_processes(const regex_t *re, pid_t self, enum ruby_need need, pid_t *pids,
			   size_t max)
{
	return proc_scan(re, self, supported_process, &need, pids, max);
}

void ruby_target_open(struct ruby_target *t, pid_t pid, enum ruby_need need)
{
	ruby_target_attach(t, pid);
	ruby_target_check_file(t, t->img.host_path, t->img.path, need);
}

uint64_t ruby_target_global(const struct ruby_target *t, const char *name)
{
	uint64_t sym, value;

	/* The file is read through /proc/PID/root: gone with the process. */
	if (elf_symbol_value(t->img.host_path, name, &sym, NULL)) {
		if (target_gone(t->pid))
			rbm_die("PID %d exited", t->pid);
		rbm_die("%s has no symbol %s", t->img.path, name);
	}
	if (target_read_u64(t->pid, t->img.load_bias + sym, &value))
		die_unreadable(t, name);
	return value;
}

/* rb_class_allocate_instance is hidden; BasicObject's allocator points at it. */
uint64_t ruby_target_class_allocator(const struct ruby_target *t)
{
	uint64_t basic_object = ruby_target_global(t, "rb_cBasicObject");
	uint64_t ext = basic_object + t->layout.rclass_ext, fn, file_offset;

	/* 3.1 points at its classext; from 3.2 it lies in the class's own slot. */
	if ((!t->layout.classext_embedded && target_read_u64(t->pid, ext, &ext)) ||
	    target_read_u64(t->pid, ext + t->layout.classext_allocator, &fn) ||
	    procmaps_file_offset(t->pid, t->img.path, fn, &file_offset)) {
		if (target_gone(t->pid))
			rbm_die("PID %d exited", t->pid);
		rbm_die("cannot find rb_class_allocate_instance through BasicObject's allocator: "
			"Ruby internals differ from the table for %s",
			t->layout.series);
	}
	rbm_info("rb_class_allocate_instance at 0x%" PRIx64 " (file offset 0x%" PRIx64 ")", fn,
		 file_offset);
	return file_offset;
}

/*
 * Where ruby_current_vm_ptr lives when it is hidden (3.3+) and the library
 * stripped: the exported functions that read vm->objspace start with `lea
 * VAR(%rip), %reg; mov (%reg), %reg; mov OBJSPACE(%reg), ...` (3.3's
 * rb_gc_count, 3.4's rb_gc_get_objspace; notes/rubies-facts.md §4.3).  The
 * first RIP-relative lea is taken, and only if the vm_objspace offset of
 * the layout follows within a few bytes: another variable would not be read
 * at that offset.  0 if not found.
 */
static uint64_t vm_ptr_from_code(const struct ruby_target *t)
{
	static const char *const fns[] = {"rb_gc_get_objspace", "rb_gc_count"};
	uint8_t code[64];
	uint64_t sym;
	size_t f, i, j;

	for (f = 0; f < sizeof(fns) / sizeof(fns[0]); f++) {
		if (elf_symbol_value(t->img.host_path, fns[f], &sym, NULL) ||
		    target_read(t->pid, t->img.load_bias + sym, code, sizeof(code)))
			continue;
		for (i = 0; i + 7 <= 32; i++) {
			int32_t disp;

			/* REX.W (+R), 8d, ModRM mod 00 rm 101: lea disp32(%rip), %reg */
			if ((code[i] & 0xfb) != 0x48 || code[i + 1] != 0x8d ||
			    (code[i + 2] & 0xc7) != 0x05)
				continue;
			memcpy(&disp, code + i + 3, sizeof(disp));
			for (j = i + 7; j + 4 <= sizeof(code) && j < i + 24; j++) {
				uint32_t v;

				memcpy(&v, code + j, sizeof(v));
				if (v == t->layout.vm_objspace)
					return t->img.load_bias + sym + i + 7 + (int64_t) disp;
			}
			break;
		}
	}
	return 0;
}

/*
 * The tls_index {module id, offset} that rb_thread_current passes to
 * __tls_get_addr when ruby_current_ec is hidden (3.3+): its code starts
 * `data16 lea INDEX(%rip), %rdi; data16 data16 rex.W call __tls_get_addr`
 * (rubies-facts.md 4.3).  Read from the running target: the loader has
 * filled the module id in.  0 or -ENOENT.
 */
static int ec_tls_from_code(const struct ruby_target *t, uint64_t index[2])
{
	uint8_t code[48];
	uint64_t sym, at;
	size_t i;

	if (elf_symbol_value(t->img.host_path, "rb_thread_current", &sym, NULL) ||
	    target_read(t->pid, t->img.load_bias + sym, code, sizeof(code)))
		return -ENOENT;
	for (i = 0; i + 8 <= sizeof(code); i++) {
		int32_t disp;

		/* 66 48 8d 3d: data16 lea disp32(%rip), %rdi; the call follows (66 66 48 e8) */
		if (code[i] != 0x66 || code[i + 1] != 0x48 || code[i + 2] != 0x8d ||
		    code[i + 3] != 0x3d)
			continue;
		memcpy(&disp, code + i + 4, sizeof(disp));
		at = t->img.load_bias + sym + i + 8 + (int64_t) disp;
		if (target_read(t->pid, at, index, 2 * sizeof(uint64_t)) || !index[0])
			return -ENOENT;
		return 0;
	}
	return -ENOENT;
}

int ruby_target_ec_tls(const struct ruby_target *t, uint64_t *modid, uint64_t *offset)
{
	uint64_t slot, index[2];

	if (!t->img.shared)
		return -ENOENT;
	/* Exported (3.1): the loader fills the slot its named DTPMOD64 relocation names. */
	if (elf_tls_module_slot(t->img.host_path, "ruby_current_ec", &slot) == 0 &&
	    elf_symbol_value(t->img.host_path, "ruby_current_ec", offset, NULL) == 0)
		return target_read_u64(t->pid, t->img.load_bias + slot, modid) || !*modid ? -ENOENT
											     : 0;
	if (ec_tls_from_code(t, index))
		return -ENOENT;
	*modid = index[0];
	*offset = index[1];
	return 0;
}

uint64_t ruby_target_find_objspace(const struct ruby_target *t)
{
	struct ruby_target *mut = (struct ruby_target *) t;
	uint64_t vm_ptr = 0, objspace, sym, addr;

	if (elf_symbol_value(t->img.host_path, "ruby_current_vm_ptr", &sym, NULL) == 0)
		addr = t->img.load_bias + sym;
	else
		addr = vm_ptr_from_code(t);
	if (!addr)
		rbm_die(
		    "%s has no symbol ruby_current_vm_ptr, and the code of rb_gc_count does not "
		    "show where it is",
		    t->img.path);
	if (target_read_u64(t->pid, addr, &vm_ptr))
		die_unreadable(t, "ruby_current_vm_ptr");
	mut->vm_ptr_addr = addr;
	mut->vm = vm_ptr;
	if (!vm_ptr || target_read_u64(t->pid, vm_ptr + t->layout.vm_objspace, &objspace))
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

/* GC.stat's totals: objspace-wide in 3.1, the sums of the size pools' counters from 3.2 on. */
void ruby_target_gc_counts(const struct ruby_target *t, struct gc_counts *c)
{
	const struct ruby_layout *off = &t->layout;
	uint64_t pool, v[2];
	uint32_t i;

	c->allocated = c->freed = 0;
	c->valid = t->objspace &&
		   !target_read_u64(t->pid, t->objspace + off->objspace_gc_count, &c->gc_count);
	if (!c->valid)
		return;
	if (off->objspace_total_allocated) {
		c->valid =
		    !target_read_u64(t->pid, t->objspace + off->objspace_total_allocated,
				     &c->allocated) &&
		    !target_read_u64(t->pid, t->objspace + off->objspace_total_freed, &c->freed);
		return;
	}
	c->valid = off->pool_total_allocated != 0;
	for (i = 0; c->valid && i < off->pool_count; i++) {
		pool = t->objspace + off->objspace_pools + (uint64_t) i * off->pool_size;
		c->valid = !target_read_u64(t->pid, pool + off->pool_total_allocated, &v[0]) &&
			   !target_read_u64(t->pid, pool + off->pool_total_freed, &v[1]);
		c->allocated += v[0];
		c->freed += v[1];
	}
}

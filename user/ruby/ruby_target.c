// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "diag.h"
#include "dwarf_layout.h"
#include "elfinfo.h"
#include "gc_counters.h"
#include "layout_cache.h"
#include "proc_info.h"
#include "ruby_target.h"
#include "target_mem.h"

/* A target that exited while it was read: "PID N exited", whatever the read said. */
static int gone(const struct ruby_target *t, char *err, size_t errlen)
{
	snprintf(err, errlen, "PID %d exited", t->pid);
	return -ESRCH;
}

/* A read that failed because the process is gone says so, not "no symbol". */
static int unreadable(const struct ruby_target *t, const char *what, char *err, size_t errlen)
{
	int e = errno ?: EIO;

	if (target_gone(t->pid))
		return gone(t, err, errlen);
	snprintf(err, errlen, "cannot read %s in PID %d: %s", what, t->pid, strerror(e));
	return -e;
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
 * What the libruby's code says, brought into the layout: over the table's
 * values (a patch release that moved a field), or as a cross-check of
 * DWARF's, where a difference means the DWARF is not this build's.
 */
static int apply_code(struct ruby_target *t, const char *host_path, bool from_dwarf, char *why,
		      size_t n)
{
	double start = now_seconds();
	int differ;

	if (layout_decode_file(host_path, &t->decoded)) {
		memset(&t->decoded, 0, sizeof(t->decoded));
		return 0;
	}
	t->decode_seconds = now_seconds() - start;
	differ = layout_decode_apply(&t->decoded, &t->layout, !from_dwarf, t->layout_code_diff,
				     sizeof(t->layout_code_diff));
	if (differ && from_dwarf) {
		snprintf(why, n, "the DWARF of Ruby %s disagrees with its code (%s)", t->version,
			 t->layout_code_diff);
		return -1;
	}
	if (differ < 0) {
		snprintf(why, n, "Ruby %s's code contradicts its layout (%s)", t->version,
			 t->layout_code_diff);
		return -1;
	}
	if (differ)
		rbm_info("layout: the code of %s moved %s", host_path, t->layout_code_diff);
	return 0;
}

/* Tracing asked of a series whose allocation entry points are not known: said in why. */
static bool untraceable(const struct ruby_target *t, const char *shown, enum ruby_need need,
			char *why, size_t n)
{
	if (need != RUBY_NEED_TRACE || t->alloc)
		return false;
	snprintf(why, n,
		 "cannot trace Ruby %s in %s: its allocation entry points are not known "
		 "(traced: %s; census and top may still read it)",
		 t->version, shown, ruby_traced_series());
	return true;
}

/*
 * The layout: the libruby's own DWARF (or its debug file), then the
 * built-in table's entry of the series with its patch release's fields,
 * either cross-checked with or corrected by what the code says.  Tracing
 * also needs the series' allocation entry points.  0, or -1 with why.
 */
static int pick_layout(struct ruby_target *t, const char *host_path, const char *shown,
		       enum ruby_need need, char *why, size_t n)
{
	char err[512], root[64], file[PATH_MAX];
	bool from_dwarf;

	t->alloc = ruby_alloc_points_for(t->version);
	if (untraceable(t, shown, need, why, n))
		return -1;
	from_dwarf =
	    dwarf_layout_read(host_path, target_root(t->pid, root, sizeof(root)), t->version,
			      &t->layout, file, sizeof(file), err, sizeof(err)) == 0;
	if (from_dwarf) {
		snprintf(t->layout_from, sizeof(t->layout_from), "DWARF in %s", file);
	} else if (ruby_versions_layout(t->version, &t->layout) == 0) {
		rbm_info("no DWARF for %s (%s): the table's layout", shown, err);
		snprintf(t->layout_from, sizeof(t->layout_from), "%s", t->layout.source);
	} else {
		snprintf(why, n, "unsupported Ruby version %s in %s: no table entry for its series "
				 "(known: %s), and %s",
			 t->version, shown, ruby_known_series(), err);
		return -1;
	}
	return apply_code(t, host_path, from_dwarf, why, n);
}

int ruby_target_check_file(struct ruby_target *t, const char *host_path, const char *shown,
			   enum ruby_need need, char *err, size_t errlen)
{
	/* What only a process can say is read from it; what its file says may have been kept. */
	if (layout_cache_get(host_path, t))
		return untraceable(t, shown, need, err, errlen) ? -ENOTSUP : 0;
	if (elf_symbol_string(host_path, "ruby_version", t->version, sizeof(t->version))) {
		snprintf(err, errlen, "cannot read the Ruby version (ruby_version) from %s", shown);
		return -ENOENT;
	}
	if (pick_layout(t, host_path, shown, need, err, errlen))
		return -ENOTSUP;
	t->has_usdt = elf_has_usdt(host_path, "ruby", "gc__sweep__end");
	rbm_info("Ruby %s in %s (layout: %s; %s)", t->version, shown, t->layout_from,
		 t->has_usdt ? "USDT probes" : "no USDT probes");
	layout_cache_put(host_path, t);
	return 0;
}

int ruby_target_attach(struct ruby_target *t, pid_t pid, char *err, size_t errlen)
{
	int ret;

	t->pid = pid;
	ret = procmaps_find_ruby(pid, &t->img, err, errlen);
	if (ret)
		return ret < 0 ? ret : -ENOENT;
	rbm_info("%s mapped at load bias 0x%" PRIx64, t->img.path, t->img.load_bias);
	return 0;
}

bool ruby_target_supported(pid_t pid, enum ruby_need need, char *why, size_t n)
{
	static struct ruby_target t; /* large (a layout): not on the stack */
	char reason[640];

	memset(&t, 0, sizeof(t));
	t.pid = pid;
	if (procmaps_find_ruby(pid, &t.img, why, n))
		return false;
	if (ruby_target_check_file(&t, t.img.host_path, t.img.path, need, reason,
				   sizeof(reason))) {
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

int ruby_target_open(struct ruby_target *t, pid_t pid, enum ruby_need need, char *err,
		     size_t errlen)
{
	int ret = ruby_target_attach(t, pid, err, errlen);

	return ret ?: ruby_target_check_file(t, t->img.host_path, t->img.path, need, err, errlen);
}

int ruby_target_global_value(const struct ruby_target *t, const char *name, uint64_t *value)
{
	uint64_t sym;
	int ret;

	if ((ret = elf_symbol_value(t->img.host_path, name, &sym, NULL)))
		return ret;
	return target_read_u64(t->pid, t->img.load_bias + sym, value);
}

int ruby_target_global(const struct ruby_target *t, const char *name, uint64_t *value, char *err,
		       size_t errlen)
{
	uint64_t sym;

	/* The file is read through /proc/PID/root: gone with the process. */
	if (elf_symbol_value(t->img.host_path, name, &sym, NULL)) {
		if (target_gone(t->pid))
			return gone(t, err, errlen);
		snprintf(err, errlen, "%s has no symbol %s", t->img.path, name);
		return -ENOENT;
	}
	errno = 0;
	if (target_read_u64(t->pid, t->img.load_bias + sym, value))
		return unreadable(t, name, err, errlen);
	return 0;
}

/* rb_class_allocate_instance is hidden; BasicObject's allocator points at it. */
int ruby_target_class_allocator_offset(const struct ruby_target *t, uint64_t *file_offset)
{
	uint64_t basic_object, ext, fn;
	int ret;

	if ((ret = ruby_target_global_value(t, "rb_cBasicObject", &basic_object)))
		return ret;
	ext = basic_object + t->layout.rclass_ext;
	/* 3.1 points at its classext; from 3.2 it lies in the class's own slot. */
	if ((!t->layout.classext_embedded && target_read_u64(t->pid, ext, &ext)) ||
	    target_read_u64(t->pid, ext + t->layout.classext_allocator, &fn))
		return -EFAULT;
	return procmaps_file_offset(t->pid, t->img.path, fn, file_offset);
}

int ruby_target_class_allocator(const struct ruby_target *t, uint64_t *file_offset, char *err,
				size_t errlen)
{
	if (ruby_target_class_allocator_offset(t, file_offset)) {
		if (target_gone(t->pid))
			return gone(t, err, errlen);
		snprintf(
		    err, errlen,
		    "cannot find rb_class_allocate_instance through BasicObject's allocator in "
		    "Ruby %s (%s)",
		    t->version, t->img.path);
		return -ENOENT;
	}
	rbm_info("rb_class_allocate_instance at file offset 0x%" PRIx64, *file_offset);
	return 0;
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
	/* Hidden (3.3+): the tls_index rb_thread_current passes to __tls_get_addr */
	if (!t->decoded.ec_tls_index ||
	    target_read(t->pid, t->img.load_bias + t->decoded.ec_tls_index, index, sizeof(index)) ||
	    !index[0])
		return -ENOENT;
	*modid = index[0];
	*offset = index[1];
	return 0;
}

/* A global of libruby: by its symbol when there is one, else where the code says it is. */
static uint64_t global_address(const struct ruby_target *t, const char *name, uint64_t decoded)
{
	uint64_t sym;

	if (elf_symbol_value(t->img.host_path, name, &sym, NULL) == 0)
		return t->img.load_bias + sym;
	return decoded ? t->img.load_bias + decoded : 0;
}

uint64_t ruby_target_find_objspace(struct ruby_target *t)
{
	t->vm_ptr_addr = global_address(t, "ruby_current_vm_ptr", t->decoded.vm_ptr_var);
	t->main_ractor_addr =
	    global_address(t, "ruby_single_main_ractor", t->decoded.main_ractor_var);
	t->vm = t->objspace = 0;
	if (!t->vm_ptr_addr || target_read_u64(t->pid, t->vm_ptr_addr, &t->vm) || !t->vm ||
	    target_read_u64(t->pid, t->vm + t->layout.vm_objspace, &t->objspace))
		t->objspace = 0;
	return t->objspace;
}

bool ruby_target_same_program(const struct ruby_target *t)
{
	uint64_t vm;
	int ret;

	if (!t->vm_ptr_addr)
		return true;
	/*
	 * An exiting process: its memory is gone (ESRCH) ~1 ms before it is a
	 * zombie, or ruby_vm_destruct cleared the pointer (0); both were called
	 * an exec on 3.3.  An exec unmaps the variable (EFAULT), or another
	 * Ruby's VM lies elsewhere.
	 */
	ret = target_read_u64(t->pid, t->vm_ptr_addr, &vm);
	return ret == -ESRCH || (ret == 0 && (vm == t->vm || vm == 0));
}

void ruby_target_gc_counts(const struct ruby_target *t, struct gc_counts *c)
{
	struct gc_counters g;

	c->valid = ruby_target_proved(t, PROOF_GC) &&
		   gc_counters_read(t->pid, &t->layout, t->objspace, &g) == 0;
	c->allocated = c->valid ? g.allocated : 0;
	c->freed = c->valid ? g.freed : 0;
	c->gc_count = c->valid ? g.gc_count : 0;
	c->moved = 0;
	if (c->valid && t->moved_addr && target_read_u64(t->pid, t->moved_addr, &c->moved))
		c->valid = false;
}

/* ---- proving the layout before it is used ---- */

bool ruby_target_proved(const struct ruby_target *t, enum proof_group g)
{
	return g < PROOF_GROUPS && t->proof.groups[g].status == PROOF_PROVED;
}

void ruby_target_group_line(const struct ruby_target *t, enum proof_group g, char *buf, size_t n)
{
	snprintf(buf, n, "Ruby %s (%s): %s layout not proved (%s): no %s", t->version, t->img.path,
		 proof_group_name(g), t->proof.groups[g].why, proof_group_gives(g));
}

/*
 * Tests only: RBMEMTRACE_SKEW_LAYOUT=GROUP moves one offset the group's
 * checks read, as a wrong table would, to show the group refused or
 * turned off (tests/e2e/test_layout.rb).
 */
static void skew_for_tests(struct ruby_target *t)
{
	static const char *const none[] = {NULL};
	const char *g = getenv("RBMEMTRACE_SKEW_LAYOUT");
	struct ruby_layout *l = &t->layout;

	if (!g || !*g)
		return;
	rbm_warn("RBMEMTRACE_SKEW_LAYOUT=%s: the layout is made wrong on purpose (tests)", g);
	if (!strcmp(g, "gc"))
		l->objspace_gc_count += 8 * 1000003; /* far off: no counter there */
	else if (!strcmp(g, "heap"))
		l->page_start += 8;
	else if (!strcmp(g, "classes"))
		l->rclass_super += 8;
	else if (!strcmp(g, "stacks"))
		l->ec_cfp += 8;
	else if (!strcmp(g, "refs"))
		l->classext_const_tbl += 8;
	else if (!strcmp(g, "probes") && t->alloc) {
		static struct ruby_alloc_points skewed;

		skewed = *t->alloc;
		skewed.functions = none;
		t->alloc = &skewed;
	}
}

static void list_checks(const struct ruby_target *t)
{
	unsigned int g, i;

	for (g = 0; g < PROOF_GROUPS; g++) {
		const struct group_proof *gp = &t->proof.groups[g];

		if (gp->status == PROOF_UNCHECKED)
			continue;
		rbm_info("layout %s: %s", proof_group_name(g),
			 gp->status == PROOF_PROVED ? "proved" : "NOT proved");
		for (i = 0; i < gp->nchecks; i++)
			rbm_info("  %s %s: %s", gp->checks[i].ok ? "ok  " : "FAIL",
				 gp->checks[i].name, gp->checks[i].detail);
	}
}

int ruby_target_require(struct ruby_target *t, unsigned int use, unsigned int required,
			bool launched, char *why, size_t n)
{
	char line[PATH_MAX + 640];
	unsigned int g;

	skew_for_tests(t);
	ruby_target_find_objspace(t);
	ruby_target_prove(t, use | required, launched);
	rbm_info("layout of Ruby %s from %s%s%s; code decoded in %.1f ms, checked in %.1f ms",
		 t->version, t->layout_from, t->layout_code_diff[0] ? "; code: " : "",
		 t->layout_code_diff, t->decode_seconds * 1e3, t->proof.seconds * 1e3);
	list_checks(t);
	if (target_gone(t->pid)) {
		snprintf(why, n, "PID %d exited", t->pid);
		return -1;
	}
	for (g = 0; g < PROOF_GROUPS; g++) {
		if (!(required & PROOF_BIT(g)) || ruby_target_proved(t, g))
			continue;
		snprintf(why, n,
			 "cannot read Ruby %s in PID %d (%s): its %s layout is not proved (%s), "
			 "and this mode needs %s",
			 t->version, t->pid, t->img.path, proof_group_name(g),
			 t->proof.groups[g].why, proof_group_gives(g));
		return -1;
	}
	for (g = 0; g < PROOF_GROUPS; g++) {
		if (!(use & PROOF_BIT(g)) || ruby_target_proved(t, g))
			continue;
		ruby_target_group_line(t, g, line, sizeof(line));
		rbm_warn("%s", line);
	}
	return 0;
}

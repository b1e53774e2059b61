// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/layout_decode.c: a Ruby's layout decoded from its functions' code. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "dwarf_layout.h"
#include "elf_code.h"
#include "elfinfo.h"
#include "helpers.h"
#include "layout_decode.h"
#include "ruby_versions.h"

/*
 * On the real functions of every test Ruby: the host's Debian 3.1
 * (stripped), Debian's 3.3 and 3.4 (stripped, in their chroots) and the
 * ruby-build 3.3 and 3.4 (DWARF): every decoder must give the layout the
 * table (stripped) or the DWARF (ruby-build) holds, and a function whose
 * instructions changed must be refused, not guessed at.
 */

struct build {
	const char *lib;
	bool dwarf; /* expected values from its DWARF; else from the table */
};

static const struct build builds[] = {
    {RUBIES "/3.3.8-distro/root/usr/lib/x86_64-linux-gnu/libruby-3.3.so.3.3.8", false},
    {RUBIES "/3.4.11-distro/root/usr/lib/x86_64-linux-gnu/libruby-3.4.so.3.4.11", false},
    {RUBIES "/3.3.8-ruby-build/lib/libruby.so.3.3.8", true},
    {RUBIES "/3.4.5-ruby-build/lib/libruby.so.3.4.5", true},
};

/* The functions each series has (3.4 adds rb_gc_get_objspace). */
static const char *const decoders[] = {
    "rb_gc_count",  "rb_during_gc",	    "rb_class_get_superclass", "rb_iseq_label",
    "rb_iseq_path", "rb_iseq_first_lineno", "rb_thread_main",	       "rb_thread_current",
};

/* The expected layout of lib: its DWARF, or the table's entry for its version. */
static void expected(const struct build *b, struct ruby_layout *l)
{
	char version[32], err[2048];

	cr_assert_eq(elf_symbol_string(b->lib, "ruby_version", version, sizeof(version)), 0);
	if (b->dwarf)
		cr_assert_eq(dwarf_layout_read(b->lib, NULL, version, l, NULL, 0, err, sizeof(err)),
			     0, "%s", err);
	else
		cr_assert_eq(ruby_versions_layout(version, l), 0);
}

static const struct decoder_result *result(const struct layout_decoded *d, const char *fn)
{
	size_t i;

	for (i = 0; i < d->nresults; i++)
		if (!strcmp(d->results[i].function, fn))
			return &d->results[i];
	return NULL;
}

static void expect_agree(const char *lib, const struct layout_decoded *d,
			 const struct ruby_layout *want)
{
	struct ruby_layout l = *want;
	char diff[512];
	size_t i;

	for (i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++) {
		const struct decoder_result *r = result(d, decoders[i]);

		cr_assert_not_null(r, "%s: %s not run", lib, decoders[i]);
		cr_expect_eq(r->status, 0, "%s: %s: %s", lib, decoders[i], r->why);
	}
	cr_expect_geq(d->nfields, 13, "%s: only %zu fields decoded", lib, d->nfields);
	cr_expect_str_eq(d->conflict, "", "%s", lib);
	cr_expect_eq(layout_decode_apply(d, &l, false, diff, sizeof(diff)), 0, "%s: %s", lib, diff);
	cr_expect(d->vm_ptr_var && d->main_ractor_var && d->ec_tls_index, "%s: globals", lib);
}

Test(layout_decode, host_31_agrees_with_its_table)
{
	const char *lib = test_system_libruby();
	struct layout_decoded d;
	struct ruby_layout want;
	char version[32];
	uint64_t sym;

	cr_assert_eq(elf_symbol_string(lib, "ruby_version", version, sizeof(version)), 0);
	cr_assert_eq(ruby_versions_layout(version, &want), 0);
	cr_assert_eq(layout_decode_file(lib, &d), 0);
	expect_agree(lib, &d, &want);
	/* 3.1 exports the globals: the code's view of them is the symbols' */
	cr_assert_eq(elf_symbol_value(lib, "ruby_current_vm_ptr", &sym, NULL), 0);
	cr_expect_eq(d.vm_ptr_var, sym);
	cr_assert_eq(elf_symbol_value(lib, "ruby_single_main_ractor", &sym, NULL), 0);
	cr_expect_eq(d.main_ractor_var, sym);
	cr_expect_eq(result(&d, "rb_gc_get_objspace")->status, -ENOENT, "3.4 and later only");
}

Test(layout_decode, test_rubies_agree_with_their_layouts)
{
	size_t i;
	int checked = 0;

	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		struct layout_decoded d;
		struct ruby_layout want;

		if (!test_have_ruby(builds[i].lib))
			continue;
		expected(&builds[i], &want);
		cr_assert_eq(layout_decode_file(builds[i].lib, &d), 0);
		expect_agree(builds[i].lib, &d, &want);
		checked++;
	}
	test_require_rubies(checked, "decoding the test Rubies' code");
}

/*
 * 3.1.2's code under 3.1.7's table: the code says vm_objspace is 1104, so a
 * build that claims 3.1.7 but is laid out as 3.1.2 is read right (and DWARF
 * that disagreed with its code would be a contradiction).
 */
Test(layout_decode, code_corrects_the_table)
{
	struct layout_decoded d;
	struct ruby_layout l, claimed;
	char diff[512];

	cr_assert_eq(layout_decode_file(test_system_libruby(), &d), 0);
	cr_assert_eq(ruby_versions_layout("3.1.7", &l), 0);
	claimed = l;
	cr_assert_eq(l.vm_objspace, 1112);
	cr_expect_eq(layout_decode_apply(&d, &l, true, diff, sizeof(diff)), 1);
	cr_expect_eq(l.vm_objspace, 1104, "taken from rb_gc_count");
	cr_expect(strstr(diff, "vm_objspace 1112 -> 1104 (rb_gc_count)"), "%s", diff);
	cr_expect_eq(layout_decode_apply(&d, &claimed, false, diff, sizeof(diff)), 1);
	cr_expect_eq(claimed.vm_objspace, 1112, "DWARF is not overwritten: a contradiction");
}

/* The file offset of a function of lib, for patching a copy of it. */
static long function_offset(const char *lib, const char *fn, size_t *size)
{
	uint64_t vaddr, off, sz;

	cr_assert_eq(elf_symbol_value(lib, fn, &vaddr, &sz), 0);
	cr_assert_eq(elf_vaddr_to_offset(lib, vaddr, &off), 0);
	*size = sz;
	return (long) off;
}

/* A copy of the host's libruby whose function fn has `with` written over its first bytes. */
static void patched_copy(const char *fn, size_t at, const void *with, size_t n, char *path)
{
	const char *lib = test_system_libruby();
	char cmd[1024];
	size_t size;
	long off = function_offset(lib, fn, &size);
	FILE *f;

	snprintf(path, 64, "/tmp/rbm-decode-XXXXXX");
	cr_assert_neq(mkstemp(path), -1);
	snprintf(cmd, sizeof(cmd), "cp %s %s", lib, path);
	cr_assert_eq(system(cmd), 0);
	cr_assert_leq(at + n, size);
	f = fopen(path, "r+");
	cr_assert_not_null(f);
	cr_assert_eq(fseek(f, off + (long) at, SEEK_SET), 0);
	cr_assert_eq(fwrite(with, 1, n, f), n);
	fclose(f);
}

/*
 * rb_gc_count's last load made an add (opcode 03): the decoder refuses, names
 * the instruction, and gives nothing; the others still decode.
 */
Test(layout_decode, a_changed_instruction_is_refused)
{
	/* 3.1.2's rb_gc_count: mov GOT,%rax (7); mov (%rax),%rax (3); mov 0x450(%rax) (7); here */
	static const unsigned char add[] = {0x48, 0x03, 0x80};
	struct layout_decoded d;
	const struct decoder_result *r;
	char path[64];
	uint64_t v;

	patched_copy("rb_gc_count", 17, add, sizeof(add), path);
	cr_assert_eq(layout_decode_file(path, &d), 0);
	unlink(path);
	r = result(&d, "rb_gc_count");
	cr_assert_not_null(r);
	cr_expect_eq(r->status, -EINVAL);
	cr_expect(strstr(r->why, "+17: opcode 03"), "%s", r->why);
	cr_expect(!layout_decoded_get(&d, "objspace_gc_count", &v), "no value from a refusal");
	cr_expect(layout_decoded_get(&d, "vm_objspace", &v) && v == 1104, "rb_during_gc gives it");
	cr_expect_eq(result(&d, "rb_thread_main")->status, 0);
}

/* The same shape with one load less (a nop for it) is no longer the accessor it was. */
Test(layout_decode, a_changed_shape_is_refused)
{
	static const unsigned char nop7[] = {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00};
	struct layout_decoded d;
	const struct decoder_result *r;
	char path[64];
	uint64_t v;

	patched_copy("rb_gc_count", 17, nop7, sizeof(nop7), path);
	cr_assert_eq(layout_decode_file(path, &d), 0);
	unlink(path);
	r = result(&d, "rb_gc_count");
	cr_expect_eq(r->status, -EINVAL);
	cr_expect(strstr(r->why, "not vm->objspace->profile.count"), "%s", r->why);
	cr_expect(!layout_decoded_get(&d, "objspace_gc_count", &v));
}

/* Decoding is cheap next to attaching: every decoder on libruby 3.1 in well under 50 ms. */
Test(layout_decode, cost)
{
	struct layout_decoded d;
	struct timespec a, b;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(layout_decode_file(test_system_libruby(), &d), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	cr_log_info("layout_decode_file(libruby 3.1): %.1f ms", ms);
	cr_expect_lt(ms, 50.0);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/elfinfo.c: symbols, USDT notes, load addresses and DT_NEEDED of ELF files. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfinfo.h"
#include "helpers.h"
#include "mjit_offsets.h"

static void need_fixture(const char *path)
{
	cr_assert_eq(access(path, R_OK), 0, "%s missing: run the tests with `make unit`", path);
}

Test(elfinfo, version_string_of_fixture)
{
	char v[32];
	uint64_t value;

	cr_assert_eq(elf_symbol_string(FAKE_LIB, "ruby_version", v, sizeof(v)), 0);
	cr_expect_str_eq(v, "9.9.0");
	cr_expect_eq(elf_symbol_value(FAKE_LIB, "no_such_symbol", &value, NULL), -ENOENT);
	cr_expect(!elf_has_usdt(FAKE_LIB, "ruby", "gc__sweep__end"));
}

Test(elfinfo, symbol_value_and_size)
{
	uint64_t value = 0, size = 0, value2 = 0;

	need_fixture(FAKE_LIB);
	cr_assert_eq(elf_symbol_value(FAKE_LIB, "ruby_version", &value, &size), 0);
	cr_expect_neq(value, 0);
	cr_expect_eq(size, sizeof("9.9.0"), "size %lu", (unsigned long) size);
	/* size may be NULL. */
	cr_assert_eq(elf_symbol_value(FAKE_LIB, "ruby_version", &value2, NULL), 0);
	cr_expect_eq(value2, value);
	value = 1234;
	cr_expect_eq(elf_symbol_value(FAKE_LIB, "ruby_versio", &value, NULL), -ENOENT);
	cr_expect_eq(elf_symbol_value(FAKE_LIB, "ruby_version_", &value, NULL), -ENOENT);
	cr_expect_eq(value, 1234, "value written on failure");
	/* An undefined (imported) symbol does not count. */
	need_fixture(FAKE_RUBY);
	cr_expect_eq(elf_symbol_value(FAKE_RUBY, "sleep", &value, NULL), -ENOENT);
	cr_expect_eq(elf_symbol_value(FAKE_RUBY, "main", &value, NULL), 0);
}

Test(elfinfo, not_elf_or_missing)
{
	uint64_t v;
	char buf[32];

	cr_expect_eq(elf_symbol_value("/no/such/file", "x", &v, NULL), -ENOENT);
	cr_expect_eq(elf_symbol_value("tests/fixtures/fake_libruby.c", "x", &v, NULL), -ENOEXEC);
	cr_expect_eq(
	    elf_symbol_string("tests/fixtures/fake_libruby.c", "ruby_version", buf, sizeof(buf)),
	    -ENOEXEC);
	cr_expect_eq(elf_first_load_vaddr("tests/fixtures/fake_libruby.c", &v), -ENOEXEC);
	cr_expect_eq(elf_first_load_vaddr("/no/such/file", &v), -ENOENT);
	cr_expect(!elf_has_usdt("/no/such/file", "ruby", "gc__sweep__end"));
	cr_expect(!elf_has_usdt("tests/fixtures/fake_libruby.c", "ruby", "gc__sweep__end"));
	cr_expect_eq(
	    elf_resolve_needed("tests/fixtures/fake_libruby.c", "libruby", buf, sizeof(buf)),
	    -ENOEXEC);
	cr_expect_eq(elf_tls_module_slot("/no/such/file", "ruby_current_ec", &v), -ENOENT);
}

Test(elfinfo, symbol_string_buffer_sizes)
{
	char buf[16];

	need_fixture(FAKE_LIB);
	memset(buf, 'Z', sizeof(buf));
	cr_expect_eq(elf_symbol_string(FAKE_LIB, "ruby_version", buf, 6), 0, "exactly fits");
	cr_expect_str_eq(buf, "9.9.0");
	cr_expect_eq(buf[6], 'Z');
	cr_expect_neq(elf_symbol_string(FAKE_LIB, "ruby_version", buf, 5), 0, "one byte short");
	cr_expect_eq(elf_symbol_string(FAKE_LIB, "ruby_version", buf, 0), -EINVAL);
	cr_expect_eq(elf_symbol_string(FAKE_LIB, "no_such_symbol", buf, sizeof(buf)), -ENOENT);
}

Test(elfinfo, system_libruby)
{
	const char *lib = test_system_libruby();
	uint64_t slot, vaddr;
	char v[32];

	cr_assert_not_null(lib, "ruby is not installed (make deps)");
	cr_assert_eq(elf_symbol_string(lib, "ruby_version", v, sizeof(v)), 0);
	cr_expect_eq(strncmp(v, "3.1.", 4), 0, "%s", v);
	cr_expect(elf_has_usdt(lib, "ruby", "gc__sweep__end"));
	cr_expect(!elf_has_usdt(lib, "ruby", "no__such__probe"));
	cr_expect(
	    !elf_has_usdt(".output/fixtures/nousdt/libruby-3.1.so.3.1", "ruby", "gc__sweep__end"));
	cr_expect_eq(elf_tls_module_slot(lib, "ruby_current_ec", &slot), 0);
	cr_expect_gt(slot, 0);
	cr_expect_eq(elf_first_load_vaddr(lib, &vaddr), 0);
	cr_expect_eq(vaddr, 0);
}

/* libruby's own ruby_version is the Ruby the MJIT header was generated from. */
Test(elfinfo, system_libruby_version_matches_header)
{
	const char *lib = test_system_libruby();
	uint64_t value, size;
	char v[32];

	cr_assert_eq(elf_symbol_string(lib, "ruby_version", v, sizeof(v)), 0);
	cr_expect_str_eq(v, MJIT_RUBY_VERSION);
	cr_assert_eq(elf_symbol_value(lib, "ruby_version", &value, &size), 0);
	cr_expect_eq(size, strlen(v) + 1);
	cr_expect_neq(value, 0);
	/* The USDT-less copy keeps its symbols. */
	need_fixture(NOUSDT_LIB);
	cr_assert_eq(elf_symbol_string(NOUSDT_LIB, "ruby_version", v, sizeof(v)), 0);
	cr_expect_str_eq(v, MJIT_RUBY_VERSION);
}

Test(elfinfo, usdt_probes)
{
	const char *lib = test_system_libruby();

	/* The probes rbmemtrace attaches to. */
	cr_expect(elf_has_usdt(lib, "ruby", "gc__sweep__end"));
	cr_expect(elf_has_usdt(lib, "ruby", "gc__mark__end"));
	/* Exact names only: no prefixes, no longer names, right provider. */
	cr_expect(!elf_has_usdt(lib, "ruby", "gc__sweep"));
	cr_expect(!elf_has_usdt(lib, "ruby", "gc__sweep__end__x"));
	cr_expect(!elf_has_usdt(lib, "rub", "gc__sweep__end"));
	cr_expect(!elf_has_usdt(lib, "python", "gc__sweep__end"));
	cr_expect(!elf_has_usdt(lib, "ruby", ""));
	need_fixture(NOUSDT_LIB);
	cr_expect(!elf_has_usdt(NOUSDT_LIB, "ruby", "gc__sweep__end"));
	cr_expect(!elf_has_usdt(NOUSDT_LIB, "ruby", "gc__mark__end"));
	need_fixture(FAKE_LIB);
	cr_expect(!elf_has_usdt(FAKE_LIB, "ruby", "gc__sweep__end"));
}

Test(elfinfo, first_load_vaddr)
{
	uint64_t vaddr = 1;

	cr_assert_eq(elf_first_load_vaddr(test_system_libruby(), &vaddr), 0);
	cr_expect_eq(vaddr, 0, "a shared library's first PT_LOAD starts at 0");
	need_fixture(FAKE_LIB);
	vaddr = 1;
	cr_assert_eq(elf_first_load_vaddr(FAKE_LIB, &vaddr), 0);
	cr_expect_eq(vaddr, 0);
	/* A non-PIE executable would start higher; /proc/self/exe is at least readable. */
	cr_expect_eq(elf_first_load_vaddr("/proc/self/exe", &vaddr), 0);
}

Test(elfinfo, resolves_needed_through_origin_runpath)
{
	char path[4096], real[4096];

	cr_assert_eq(
	    elf_resolve_needed(".output/fixtures/fake_ruby", "libruby", path, sizeof(path)), 0);
	cr_assert_not_null(realpath(path, real));
	cr_expect(strstr(real, "/.output/fixtures/libruby-9.9.so") != NULL, "%s", real);
}

Test(elfinfo, resolve_needed_cases)
{
	char out[PATH_MAX], real[PATH_MAX], want[PATH_MAX];
	const char *lib = test_system_libruby();

	need_fixture(FAKE_RUBY);
	/* No such DT_NEEDED entry. */
	cr_expect_eq(elf_resolve_needed(FAKE_RUBY, "libpython", out, sizeof(out)), -ENOENT);
	/* The prefix picks the entry: libc, from the system directories. */
	cr_assert_eq(elf_resolve_needed(FAKE_RUBY, "libc.so", out, sizeof(out)), 0);
	cr_expect(strstr(out, "/libc.so.6") != NULL, "%s", out);
	/* $ORIGIN with an absolute path. */
	cr_assert_not_null(realpath(FAKE_RUBY, real));
	cr_assert_eq(elf_resolve_needed(real, "libruby", out, sizeof(out)), 0);
	cr_assert_not_null(realpath(FAKE_LIB, want));
	cr_assert_not_null(realpath(out, real));
	cr_expect_str_eq(real, want);
	/* The real ruby: no RUNPATH, found in the system directories. */
	cr_assert_eq(access("/usr/bin/ruby", X_OK), 0, "ruby is not installed (make deps)");
	cr_assert_eq(elf_resolve_needed("/usr/bin/ruby", "libruby", out, sizeof(out)), 0);
	cr_assert_not_null(realpath(out, real));
	cr_assert_not_null(realpath(lib, want));
	cr_expect_str_eq(real, want);
}

/* $ORIGIN of a bare file name is the current directory. */
Test(elfinfo, resolve_needed_origin_of_bare_name)
{
	char out[PATH_MAX];

	need_fixture(FAKE_RUBY);
	cr_assert_eq(chdir(".output/fixtures"), 0);
	cr_assert_eq(elf_resolve_needed("fake_ruby", "libruby", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "./libruby-9.9.so");
}

/*
 * With DT_RUNPATH (fake_ruby has RUNPATH=$ORIGIN), ld.so searches
 * LD_LIBRARY_PATH *before* RUNPATH (only the older DT_RPATH comes first), so
 * with LD_LIBRARY_PATH=dir the process maps dir/libruby-9.9.so, and
 * elf_resolve_needed must return that copy: launch mode would otherwise
 * attach to a libruby the child never maps.
 */
Test(elfinfo, resolve_needed_ld_library_path_before_runpath)
{
	char dir[] = "/tmp/rbm-unit-XXXXXX", copy[PATH_MAX], cmd[PATH_MAX * 2], out[PATH_MAX];
	char want[PATH_MAX], real[PATH_MAX];

	need_fixture(FAKE_RUBY);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(copy, sizeof(copy), "%s/libruby-9.9.so", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", FAKE_LIB, copy);
	cr_assert_eq(system(cmd), 0);
	setenv("LD_LIBRARY_PATH", dir, 1);
	cr_assert_eq(elf_resolve_needed(FAKE_RUBY, "libruby", out, sizeof(out)), 0);
	cr_assert_not_null(realpath(out, real));
	cr_assert_not_null(realpath(copy, want));
	unlink(copy);
	rmdir(dir);
	cr_expect_str_eq(real, want, "ld.so would load %s", want);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /proc/PID/maps parsing and ELF reading beyond test_procmaps_elf.c.  Paths
 * are relative to the repository root, where `make unit` runs the tests; the
 * fixtures come from `make unit` too.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "helpers.h"
#include "elfinfo.h"
#include "mjit_offsets.h"
#include "procmaps.h"

#define FAKE_LIB ".output/fixtures/libruby-9.9.so"
#define FAKE_RUBY ".output/fixtures/fake_ruby"
#define NOUSDT_LIB ".output/fixtures/nousdt/libruby-3.1.so.3.1"

static void need_fixture(const char *path)
{
	cr_assert_eq(access(path, R_OK), 0, "%s missing: run the tests with `make unit`", path);
}

Test(procmaps_edges, line_shapes)
{
	struct map_entry e;

	memset(&e, 0x55, sizeof(e));
	cr_assert_eq(procmaps_parse_line("55d4c7a00000-55d4c7a01000 r--p 00000000 fe:01 3932181"
					 "                    /usr/bin/ruby3.1\n",
					 &e),
		     0);
	cr_expect_eq(e.start, 0x55d4c7a00000ULL);
	cr_expect_eq(e.end, 0x55d4c7a01000ULL);
	cr_expect_eq(e.offset, 0);
	cr_expect_str_eq(e.perms, "r--p");
	cr_expect_str_eq(e.path, "/usr/bin/ruby3.1", "padding before the path is skipped");

	/* The top of the address space and pseudo-paths. */
	cr_assert_eq(procmaps_parse_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0"
					 "                  [vsyscall]\n",
					 &e),
		     0);
	cr_expect_eq(e.start, 0xffffffffff600000ULL);
	cr_expect_eq(e.end, 0xffffffffff601000ULL);
	cr_expect_str_eq(e.perms, "--xp");
	cr_expect_str_eq(e.path, "[vsyscall]");
	cr_assert_eq(procmaps_parse_line("5566aa000000-5566aa021000 rw-p 00000000 00:00 0 [heap]\n",
					 &e),
		     0);
	cr_expect_str_eq(e.path, "[heap]");

	/* No path, with and without the newline fgets leaves. */
	strcpy(e.path, "stale");
	cr_assert_eq(procmaps_parse_line("7f0000000000-7f0000001000 rw-s 00000000 00:00 0\n", &e), 0);
	cr_expect_str_eq(e.path, "");
	cr_expect_str_eq(e.perms, "rw-s");
	strcpy(e.path, "stale");
	cr_assert_eq(procmaps_parse_line("1000-2000 r--p 00000000 08:01 7", &e), 0);
	cr_expect_str_eq(e.path, "");

	/* Large offsets and inodes. */
	cr_assert_eq(procmaps_parse_line("7f12a0000000-7f12a0100000 r-xp 1234567890 103:02 "
					 "18446744073709551615 /lib/x.so\n",
					 &e),
		     0);
	cr_expect_eq(e.offset, 0x1234567890ULL);
	cr_expect_str_eq(e.path, "/lib/x.so");
}

Test(procmaps_edges, deleted_and_spaces)
{
	struct map_entry e;

	cr_assert_eq(procmaps_parse_line("7f12a0000000-7f12a0100000 r-xp 00000000 fe:01 99 "
					 "/usr/lib/libruby-3.1.so.3.1 (deleted)\n",
					 &e),
		     0);
	cr_expect_str_eq(e.path, "/usr/lib/libruby-3.1.so.3.1 (deleted)");
	cr_assert_eq(procmaps_parse_line("1000-2000 r-xp 00000000 fe:01 99 /home/me/My Rubies/"
					 "3.1 dev/lib/libruby.so.3.1\n",
					 &e),
		     0);
	cr_expect_str_eq(e.path, "/home/me/My Rubies/3.1 dev/lib/libruby.so.3.1");
	cr_expect(is_libruby_name(e.path));
}

Test(procmaps_edges, malformed_lines)
{
	static const char *const bad[] = {
		"",
		"\n",
		"garbage\n",
		"1000-2000\n",
		"1000-2000 r-xp\n",
		"1000-2000 r-xp 0\n",
		"1000-2000 r-xp 0 08:01\n",   /* no inode */
		"1000-2000 r-xp 0 0801 7 /x\n", /* device without ':' */
		"1000 r-xp 0 08:01 7 /x\n",     /* no end address */
		"zzzz-2000 r-xp 0 08:01 7 /x\n",
		"1000-2000 r-xpX 0 08:01 7 /x\n", /* five permission letters */
		"1000-2000 r-xp zz 08:01 7 /x\n",
	};
	struct map_entry e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(procmaps_parse_line(bad[i], &e), -EINVAL, "accepted \"%s\"", bad[i]);
}

Test(procmaps_edges, libruby_names)
{
	cr_expect(is_libruby_name("libruby.so"));
	cr_expect(is_libruby_name("libruby.so.3.1"));
	cr_expect(is_libruby_name("libruby-3.1.so.3.1"));
	cr_expect(is_libruby_name("/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"));
	cr_expect(is_libruby_name("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.7"));
	cr_expect(is_libruby_name("/home/u/.rbenv/versions/3.1.2/lib/libruby.so.3.1.2"));
	cr_expect(!is_libruby_name("libruby.a"));
	cr_expect(!is_libruby_name("libruby-static.a"));
	cr_expect(!is_libruby_name("librubyx.txt"));
	cr_expect(!is_libruby_name("ruby"));
	cr_expect(!is_libruby_name("/usr/bin/ruby3.1"));
	cr_expect(!is_libruby_name("libfoo.so"));
	cr_expect(!is_libruby_name(""));
	/* Only the file name counts, not the directories. */
	cr_expect(!is_libruby_name("/opt/libruby.so.d/libfoo.so"));
	cr_expect(!is_libruby_name("/opt/libruby/lib/libfoo.so"));
}

Test(procmaps_edges, find_ruby_errors)
{
	struct ruby_image img;
	char err[512];
	char exe[PATH_MAX];
	ssize_t n;

	memset(err, 0, sizeof(err));
	cr_assert_eq(procmaps_find_ruby(getpid(), &img, err, sizeof(err)), -ENOEXEC);
	cr_expect(strstr(err, "is not a Ruby process") != NULL, "%s", err);
	/* The message names the executable that was looked at. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	cr_expect(strstr(err, exe) != NULL, "%s does not name %s", err, exe);

	memset(err, 0, sizeof(err));
	cr_assert_eq(access("/proc/999999", F_OK), -1, "PID 999999 exists here");
	cr_expect_eq(procmaps_find_ruby(999999, &img, err, sizeof(err)), -ENOENT);
	cr_expect_str_eq(err, "no process with PID 999999");

	/* A short error buffer is still terminated. */
	memset(err, 'Z', sizeof(err));
	procmaps_find_ruby(999999, &img, err, 8);
	cr_expect_str_eq(err, "no proc");
}

/* A function of this file with a name no other object uses. */
void rbm_unit_edges_marker(void);
void rbm_unit_edges_marker(void)
{
}

/* The file offset the ELF program headers give for a vaddr: what uprobes need. */
static uint64_t file_offset_from_phdrs(const char *path, uint64_t vaddr)
{
	uint64_t off = UINT64_MAX;
	size_t i, phnum;
	Elf *elf;
	int fd;

	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s", path);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_assert_eq(elf_getphdrnum(elf, &phnum), 0);
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_memsz)
			off = vaddr - ph.p_vaddr + ph.p_offset;
	}
	elf_end(elf);
	close(fd);
	cr_assert_neq(off, UINT64_MAX, "0x%lx is in no PT_LOAD of %s", (unsigned long)vaddr, path);
	return off;
}

Test(procmaps_edges, file_offset_of_own_code)
{
	uint64_t off = 0, sym, fn = (uint64_t)(uintptr_t)&rbm_unit_edges_marker;
	char exe[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	cr_assert_eq(elf_symbol_value(exe, "rbm_unit_edges_marker", &sym, NULL), 0);
	cr_assert_eq(procmaps_file_offset(getpid(), exe, fn, &off), 0);
	cr_expect_eq(off, file_offset_from_phdrs(exe, sym), "maps say 0x%lx, ELF says 0x%lx",
		     (unsigned long)off, (unsigned long)file_offset_from_phdrs(exe, sym));
	/* Wrong file, or an address outside every mapping of it. */
	cr_expect_eq(procmaps_file_offset(getpid(), "/no/such/file", fn, &off), -ENOENT);
	cr_expect_eq(procmaps_file_offset(getpid(), exe, 8, &off), -ENOENT);
	cr_expect_eq(procmaps_file_offset(999999, exe, fn, &off), -ENOENT);
}

Test(elf_edges, symbol_value_and_size)
{
	uint64_t value = 0, size = 0, value2 = 0;

	need_fixture(FAKE_LIB);
	cr_assert_eq(elf_symbol_value(FAKE_LIB, "ruby_version", &value, &size), 0);
	cr_expect_neq(value, 0);
	cr_expect_eq(size, sizeof("9.9.0"), "size %lu", (unsigned long)size);
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

Test(elf_edges, not_elf_or_missing)
{
	uint64_t v;
	char buf[32];

	cr_expect_eq(elf_symbol_value("/no/such/file", "x", &v, NULL), -ENOENT);
	cr_expect_eq(elf_symbol_value("tests/fixtures/fake_libruby.c", "x", &v, NULL), -ENOEXEC);
	cr_expect_eq(elf_symbol_string("tests/fixtures/fake_libruby.c", "ruby_version", buf,
				       sizeof(buf)),
		     -ENOEXEC);
	cr_expect_eq(elf_first_load_vaddr("tests/fixtures/fake_libruby.c", &v), -ENOEXEC);
	cr_expect_eq(elf_first_load_vaddr("/no/such/file", &v), -ENOENT);
	cr_expect(!elf_has_usdt("/no/such/file", "ruby", "gc__sweep__end"));
	cr_expect(!elf_has_usdt("tests/fixtures/fake_libruby.c", "ruby", "gc__sweep__end"));
	cr_expect_eq(elf_resolve_needed("tests/fixtures/fake_libruby.c", "libruby", buf,
					sizeof(buf)),
		     -ENOEXEC);
	cr_expect_eq(elf_tls_module_slot("/no/such/file", "ruby_current_ec", &v), -ENOENT);
}

Test(elf_edges, symbol_string_buffer_sizes)
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

/* libruby's own ruby_version is the Ruby the MJIT header was generated from. */
Test(elf_edges, system_libruby_version_matches_header)
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

Test(elf_edges, usdt_probes)
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

Test(elf_edges, first_load_vaddr)
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

Test(elf_edges, resolve_needed_cases)
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
Test(elf_edges, resolve_needed_origin_of_bare_name)
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
 * with LD_LIBRARY_PATH=dir the process maps dir/libruby-9.9.so.
 * elf_resolve_needed searches RUNPATH first and returns the other copy; in
 * launch mode rbmemtrace would then attach to a libruby the child never maps.
 * Disabled until user/process/elfinfo.c follows the loader's order.
 */
Test(elf_edges, resolve_needed_ld_library_path_before_runpath)
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

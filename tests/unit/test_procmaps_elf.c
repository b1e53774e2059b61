#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "helpers.h"
#include "elfinfo.h"
#include "procmaps.h"

Test(procmaps, parses_lines)
{
	struct map_entry e;

	cr_assert_eq(procmaps_parse_line("7f12a0000000-7f12a0100000 r-xp 000da000 fe:01 1234   "
					 "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.7\n",
					 &e),
		     0);
	cr_expect_eq(e.start, 0x7f12a0000000ULL);
	cr_expect_eq(e.end, 0x7f12a0100000ULL);
	cr_expect_eq(e.offset, 0xda000);
	cr_expect_str_eq(e.perms, "r-xp");
	cr_expect_str_eq(e.path, "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.7");

	cr_assert_eq(procmaps_parse_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0\n", &e), 0);
	cr_expect_str_eq(e.path, "");
	cr_assert_eq(procmaps_parse_line("1000-2000 r--p 0 08:01 7 /opt/my app/libruby.so (deleted)",
					 &e),
		     0);
	cr_expect_str_eq(e.path, "/opt/my app/libruby.so (deleted)");
	cr_expect_eq(procmaps_parse_line("garbage", &e), -EINVAL);
}

Test(procmaps, libruby_names)
{
	cr_expect(is_libruby_name("libruby.so"));
	cr_expect(is_libruby_name("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.7"));
	cr_expect(!is_libruby_name("/usr/lib/libruby-static.a"));
	cr_expect(!is_libruby_name("/usr/bin/ruby"));
	cr_expect(!is_libruby_name("/usr/lib/libfoo.so"));
}

Test(procmaps, not_ruby_and_missing)
{
	struct ruby_image img;
	char err[256];

	cr_expect_eq(procmaps_find_ruby(getpid(), &img, err, sizeof(err)), -ENOEXEC);
	cr_expect(strstr(err, "not a Ruby process") != NULL, "%s", err);
	cr_expect_lt(procmaps_find_ruby(999999, &img, err, sizeof(err)), 0);
	cr_expect_str_eq(err, "no process with PID 999999");
}

#define FAKE_LIB ".output/fixtures/libruby-9.9.so"

Test(elf, version_string_of_fixture)
{
	char v[32];
	uint64_t value;

	cr_assert_eq(elf_symbol_string(FAKE_LIB, "ruby_version", v, sizeof(v)), 0);
	cr_expect_str_eq(v, "9.9.0");
	cr_expect_eq(elf_symbol_value(FAKE_LIB, "no_such_symbol", &value, NULL), -ENOENT);
	cr_expect(!elf_has_usdt(FAKE_LIB, "ruby", "gc__sweep__end"));
}

Test(elf, resolves_needed_through_origin_runpath)
{
	char path[4096], real[4096];

	cr_assert_eq(elf_resolve_needed(".output/fixtures/fake_ruby", "libruby", path, sizeof(path)),
		     0);
	cr_assert_not_null(realpath(path, real));
	cr_expect(strstr(real, "/.output/fixtures/libruby-9.9.so") != NULL, "%s", real);
}

Test(elf, system_libruby)
{
	const char *lib = test_system_libruby();
	uint64_t slot, vaddr;
	char v[32];

	cr_assert_not_null(lib, "ruby is not installed (make deps)");
	cr_assert_eq(elf_symbol_string(lib, "ruby_version", v, sizeof(v)), 0);
	cr_expect_eq(strncmp(v, "3.1.", 4), 0, "%s", v);
	cr_expect(elf_has_usdt(lib, "ruby", "gc__sweep__end"));
	cr_expect(!elf_has_usdt(lib, "ruby", "no__such__probe"));
	cr_expect(!elf_has_usdt(".output/fixtures/nousdt/libruby-3.1.so.3.1", "ruby",
				"gc__sweep__end"));
	cr_expect_eq(elf_tls_module_slot(lib, "ruby_current_ec", &slot), 0);
	cr_expect_gt(slot, 0);
	cr_expect_eq(elf_first_load_vaddr(lib, &vaddr), 0);
	cr_expect_eq(vaddr, 0);
}

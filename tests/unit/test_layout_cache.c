// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/ruby/layout_cache.c: a libruby file's knowledge, kept while the file is the same. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "helpers.h"
#include "layout_cache.h"
#include "ruby_target.h"

static struct ruby_target kept, got;

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f);
	fputs(text, f);
	fclose(f);
}

static void init(void)
{
	test_tmpdir_make();
	layout_cache_clear();
	memset(&kept, 0, sizeof(kept));
	memset(&got, 0, sizeof(got));
	snprintf(kept.version, sizeof(kept.version), "3.3.8");
	snprintf(kept.layout_from, sizeof(kept.layout_from), "DWARF in libruby.so");
	kept.layout.rclass_super = 16;
	kept.decoded.vm_ptr_var = 0x1234;
	kept.has_usdt = true;
}

TestSuite(layout_cache, .init = init, .fini = test_tmpdir_remove);

Test(layout_cache, the_same_file_gives_back_what_was_kept)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/libruby-a.so", test_tmpdir);
	write_file(path, "one build");
	cr_expect_not(layout_cache_get(path, &got), "nothing kept yet");
	layout_cache_put(path, &kept);
	cr_assert(layout_cache_get(path, &got));
	cr_expect_str_eq(got.version, "3.3.8");
	cr_expect_str_eq(got.layout_from, "DWARF in libruby.so");
	cr_expect_eq(got.layout.rclass_super, 16);
	cr_expect_eq(got.decoded.vm_ptr_var, 0x1234);
	cr_expect(got.has_usdt);
	cr_expect_eq(got.pid, 0, "what a process says is not kept");
}

Test(layout_cache, a_file_rewritten_in_place_is_read_again)
{
	char path[256];
	struct timespec pause = {0, 20 * 1000 * 1000};
	struct stat before;

	snprintf(path, sizeof(path), "%s/libruby-b.so", test_tmpdir);
	write_file(path, "one build");
	cr_assert_eq(stat(path, &before), 0);
	layout_cache_put(path, &kept);
	nanosleep(&pause, NULL);
	write_file(path, "two build"); /* same inode, same size */
	cr_expect_not(layout_cache_get(path, &got), "a rewritten file is another build");
}

Test(layout_cache, another_file_is_not_this_one)
{
	char a[256], b[256];

	snprintf(a, sizeof(a), "%s/libruby-c.so", test_tmpdir);
	snprintf(b, sizeof(b), "%s/libruby-d.so", test_tmpdir);
	write_file(a, "one build");
	write_file(b, "one build");
	layout_cache_put(a, &kept);
	cr_expect_not(layout_cache_get(b, &got));
	cr_expect_not(layout_cache_get("/nonexistent/libruby.so", &got));
}

Test(layout_cache, many_files_keep_the_newest)
{
	char path[256];
	int i;

	for (i = 0; i < 12; i++) {
		snprintf(path, sizeof(path), "%s/libruby-many-%d.so", test_tmpdir, i);
		write_file(path, "a build");
		kept.layout.rclass_super = (uint32_t) i;
		layout_cache_put(path, &kept);
	}
	cr_expect(layout_cache_get(path, &got), "the newest is kept");
	cr_expect_eq(got.layout.rclass_super, 11);
	snprintf(path, sizeof(path), "%s/libruby-many-0.so", test_tmpdir);
	cr_expect_not(layout_cache_get(path, &got), "the oldest made room");
}

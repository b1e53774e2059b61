// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* launch_find_ruby: from a command to the file that holds its Ruby. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "launch.h"

#define FAKE_LIB ".output/fixtures/libruby-9.9.so"
#define FAKE_RUBY ".output/fixtures/fake_ruby"

static char tmpdir[] = "/tmp/rbm-unit-XXXXXX";

static void make_tmpdir(void)
{
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		cr_log_warn("could not remove %s", tmpdir);
}

TestSuite(launch_find, .init = make_tmpdir, .fini = remove_tmpdir);

/* Writes an executable script into the test's directory; returns its path. */
static const char *script(const char *name, const char *text, mode_t mode)
{
	static char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
	return path;
}

static const char *system_libruby_real(void)
{
	static const char *const candidates[] = {"/lib/x86_64-linux-gnu/libruby-3.1.so.3.1",
						 "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"};
	static char real[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (realpath(candidates[i], real))
			return real;
	cr_assert_fail("no libruby-3.1.so.3.1 (make deps)");
	return NULL;
}

static void expect_finds(const char *command, const char *want)
{
	char file[PATH_MAX] = "", err[512] = "";

	cr_expect_eq(launch_find_ruby(command, file, sizeof(file), err, sizeof(err)), 0,
		     "%s: %s", command, err);
	cr_expect_str_eq(file, want, "for %s", command);
}

Test(launch_find, ruby_on_path_and_absolute)
{
	const char *lib = system_libruby_real();

	expect_finds("ruby", lib);
	expect_finds("/usr/bin/ruby", lib);
}

Test(launch_find, scripts_follow_shebang)
{
	const char *lib = system_libruby_real();

	expect_finds(script("direct", "#!/usr/bin/ruby -w\nputs 1\n", 0755), lib);
	expect_finds(script("env", "#!/usr/bin/env ruby\nputs 1\n", 0755), lib);
	expect_finds(script("env_s", "#!/usr/bin/env -S ruby --disable-gems\nputs 1\n", 0755), lib);
	expect_finds(script("spaced", "#! /usr/bin/ruby\nputs 1\n", 0755), lib);
}

Test(launch_find, not_ruby)
{
	char file[PATH_MAX], err[512] = "";

	cr_expect_eq(launch_find_ruby("sh", file, sizeof(file), err, sizeof(err)), -ENOEXEC);
	cr_expect(strstr(err, "sh does not run Ruby") == err, "%s", err);
	err[0] = '\0';
	cr_expect_eq(launch_find_ruby(script("shell", "#!/bin/sh\necho hi\n", 0755), file,
				      sizeof(file), err, sizeof(err)),
		     -ENOEXEC);
	cr_expect(strstr(err, "does not run Ruby") != NULL, "%s", err);
}

Test(launch_find, missing_or_not_executable)
{
	char file[PATH_MAX], err[512] = "";

	cr_expect_eq(launch_find_ruby("rbm-no-such-command", file, sizeof(file), err, sizeof(err)),
		     -ENOENT);
	cr_expect_str_eq(err, "command not found or not executable: rbm-no-such-command");
	err[0] = '\0';
	cr_expect_lt(launch_find_ruby(script("plain", "#!/usr/bin/ruby\n", 0644), file,
				      sizeof(file), err, sizeof(err)),
		     0);
	cr_expect(strstr(err, "not executable") != NULL, "%s", err);
}

/*
 * fake_ruby links libruby-9.9.so and reads its ruby_version, so the linker
 * gave the executable a copy relocation: a *defined* ruby_version symbol in
 * its own .data.rel.ro (zeros in the file).  launch_find_ruby takes any
 * executable defining ruby_version for a static Ruby, returns fake_ruby
 * itself, and elf_symbol_string then reads "" from it: `rbmemtrace --
 * fake_ruby` reports "unsupported Ruby version  in .../fake_ruby".  Any
 * program embedding libruby that mentions ruby_version is hit the same way.
 * Disabled until launch_find_ruby prefers a DT_NEEDED libruby (or ignores
 * R_X86_64_COPY targets).
 */
Test(launch_find, copy_relocated_ruby_version)
{
	char want[PATH_MAX];

	cr_assert_not_null(realpath(FAKE_LIB, want), "run the tests with `make unit`");
	expect_finds(FAKE_RUBY, want);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/launch.c: launch_find_ruby, from a command to the file that holds its Ruby. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "helpers.h"
#include "launch.h"

TestSuite(launch, .init = test_tmpdir_make, .fini = test_tmpdir_remove);

/* Writes an executable script into the test's directory; returns its path. */
static const char *script(const char *name, const char *text, mode_t mode)
{
	static char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
	return path;
}

static void expect_finds(const char *command, const char *want)
{
	char file[PATH_MAX] = "", err[512] = "";

	cr_expect_eq(launch_find_ruby(command, file, sizeof(file), err, sizeof(err)), 0, "%s: %s",
		     command, err);
	cr_expect_str_eq(file, want, "for %s", command);
}

Test(launch, ruby_on_path_and_absolute)
{
	const char *lib = test_system_libruby_real();

	expect_finds("ruby", lib);
	expect_finds("/usr/bin/ruby", lib);
}

Test(launch, scripts_follow_shebang)
{
	const char *lib = test_system_libruby_real();

	expect_finds(script("direct", "#!/usr/bin/ruby -w\nputs 1\n", 0755), lib);
	expect_finds(script("env", "#!/usr/bin/env ruby\nputs 1\n", 0755), lib);
	expect_finds(script("env_s", "#!/usr/bin/env -S ruby --disable-gems\nputs 1\n", 0755), lib);
	expect_finds(script("spaced", "#! /usr/bin/ruby\nputs 1\n", 0755), lib);
}

Test(launch, not_ruby)
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

Test(launch, missing_or_not_executable)
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
 * its own .data.rel.ro (zeros in the file).  launch_find_ruby must still
 * return the libruby it links, not fake_ruby itself, whose ruby_version
 * reads "": any program embedding libruby that mentions ruby_version is
 * such a case.
 */
Test(launch, copy_relocated_ruby_version)
{
	char want[PATH_MAX];

	cr_assert_not_null(realpath(FAKE_LIB, want), "run the tests with `make unit`");
	expect_finds(FAKE_RUBY, want);
}

/*
 * launch_exe_runs_ruby judges the file an exec runs: an ELF that needs a
 * libruby (left unresolved: a container's libruby is not in our root), or
 * a static ruby.  A script is not Ruby to it: an exec runs its interpreter.
 */
Test(launch, exe_runs_ruby)
{
	char ruby[PATH_MAX];

	cr_assert_not_null(realpath("/usr/bin/ruby", ruby));
	cr_expect(launch_exe_runs_ruby(ruby));
	cr_expect(launch_exe_runs_ruby(FAKE_RUBY), "fake_ruby needs libruby-9.9.so");
	cr_expect_not(launch_exe_runs_ruby("/bin/sh"));
	cr_expect_not(launch_exe_runs_ruby("/usr/bin/env"));
	cr_expect_not(launch_exe_runs_ruby(script("stub", "#!/usr/bin/env ruby\nputs 1\n", 0755)));
	cr_expect_not(launch_exe_runs_ruby("/no/such/file"));
}

/* The same through /proc/PID/exe, as the exec watch and the follower read it. */
Test(launch, exe_runs_ruby_through_proc)
{
	cr_expect_not(launch_exe_runs_ruby("/proc/self/exe"), "the unit tests are not Ruby");
}

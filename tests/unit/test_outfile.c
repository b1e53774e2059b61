// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/outfile.c: writing the report to its file, or to standard output. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "helpers.h"
#include "outfile.h"

/*
 * The report reaches its file whole or not at all, write errors are
 * reported, and foreign symlinks are not followed.
 */

static char *in_dir(const char *name)
{
	static char paths[4][256];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, 256, "%s/%s", test_tmpdir, name);
	return p;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

static char *read_file(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert_not_null(f, "%s", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Files in test_tmpdir (temporary files left behind would show here). */
static int count_entries(void)
{
	DIR *d = opendir(test_tmpdir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

TestSuite(outfile, .init = test_tmpdir_make, .fini = test_tmpdir_remove);

Test(outfile, plain_success_with_the_mode_of_a_new_file)
{
	struct outfile o;
	char err[256] = "";
	mode_t mask = umask(022);
	struct stat st;

	cr_assert_eq(outfile_open(&o, in_dir("report.json"), err, sizeof(err)), 0, "%s", err);
	fprintf(outfile_stream(&o), "{\"ok\": true}\n");
	cr_assert_eq(outfile_commit(&o, err, sizeof(err)), 0, "%s", err);
	umask(mask);
	cr_expect_str_eq(read_file(in_dir("report.json")), "{\"ok\": true}\n");
	cr_assert_eq(stat(in_dir("report.json"), &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);
	cr_expect_eq(count_entries(), 1, "a temporary file was left behind");
}

Test(outfile, old_report_untouched_until_commit)
{
	struct outfile o;
	char err[256] = "";
	struct stat st;

	write_file(in_dir("report"), "old report\n");
	cr_assert_eq(chmod(in_dir("report"), 0640), 0);
	cr_assert_eq(outfile_open(&o, in_dir("report"), err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(read_file(in_dir("report")), "old report\n", "truncated at open");
	fprintf(outfile_stream(&o), "new report\n");
	fflush(outfile_stream(&o));
	cr_expect_str_eq(read_file(in_dir("report")), "old report\n", "overwritten before commit");
	cr_assert_eq(outfile_commit(&o, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(read_file(in_dir("report")), "new report\n");
	cr_assert_eq(stat(in_dir("report"), &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0640, "the old file's mode is kept");
	cr_expect_eq(count_entries(), 1);
}

Test(outfile, abort_keeps_the_old_file_and_leaves_nothing)
{
	struct outfile o;
	char err[256] = "";

	write_file(in_dir("report"), "old report\n");
	cr_assert_eq(outfile_open(&o, in_dir("report"), err, sizeof(err)), 0, "%s", err);
	fprintf(outfile_stream(&o), "half a rep");
	outfile_abort(&o);
	cr_expect_str_eq(read_file(in_dir("report")), "old report\n");
	cr_expect_eq(count_entries(), 1, "the temporary file was not removed");
	outfile_abort(&o); /* twice is harmless */
}

Test(outfile, dev_full_is_written_in_place_and_fails_at_commit)
{
	struct outfile o;
	char err[256] = "";
	struct stat st;

	cr_assert_eq(outfile_open(&o, "/dev/full", err, sizeof(err)), 0, "%s", err);
	fprintf(outfile_stream(&o), "report\n");
	cr_expect_eq(outfile_commit(&o, err, sizeof(err)), -ENOSPC);
	cr_expect_str_eq(err, "cannot write /dev/full: No space left on device");
	cr_assert_eq(stat("/dev/full", &st), 0);
	cr_expect(S_ISCHR(st.st_mode), "/dev/full was replaced");
}

Test(outfile, dev_null_through_a_symlink_is_not_replaced)
{
	struct outfile o;
	char err[256] = "";
	struct stat st;

	cr_assert_eq(symlink("/dev/null", in_dir("null")), 0);
	cr_assert_eq(outfile_open(&o, in_dir("null"), err, sizeof(err)), 0, "%s", err);
	fprintf(outfile_stream(&o), "report\n");
	cr_expect_eq(outfile_commit(&o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(lstat(in_dir("null"), &st), 0);
	cr_expect(S_ISLNK(st.st_mode));
}

Test(outfile, refuses_a_symlink_owned_by_another_user)
{
	struct outfile o;
	char err[256] = "", want[256];

	write_file(in_dir("victim"), "precious\n");
	cr_assert_eq(symlink(in_dir("victim"), in_dir("report")), 0);
	cr_assert_eq(lchown(in_dir("report"), 65534, 65534), 0, "needs root: %s", strerror(errno));
	cr_expect_eq(outfile_open(&o, in_dir("report"), err, sizeof(err)), -EPERM);
	snprintf(want, sizeof(want),
		 "refusing to write %s: it is a symlink owned by uid 65534, not by you (uid %u)",
		 in_dir("report"), (unsigned) getuid());
	cr_expect_str_eq(err, want);
	cr_expect_str_eq(read_file(in_dir("victim")), "precious\n");
	cr_expect_eq(count_entries(), 2, "something was created");
}

Test(outfile, follows_own_symlink_and_keeps_it)
{
	struct outfile o;
	char err[256] = "";
	struct stat st;

	cr_assert_eq(mkdir(in_dir("sub"), 0755), 0);
	write_file(in_dir("sub/real"), "old\n");
	cr_assert_eq(symlink("sub/real", in_dir("link")), 0);
	cr_assert_eq(outfile_open(&o, in_dir("link"), err, sizeof(err)), 0, "%s", err);
	fprintf(outfile_stream(&o), "new\n");
	cr_assert_eq(outfile_commit(&o, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(read_file(in_dir("sub/real")), "new\n");
	cr_assert_eq(lstat(in_dir("link"), &st), 0);
	cr_expect(S_ISLNK(st.st_mode), "the symlink was replaced by the report");
}

Test(outfile, unwritable_place_fails_at_open)
{
	struct outfile o;
	char err[256] = "";

	cr_expect_eq(outfile_open(&o, in_dir("no/such/dir/report"), err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "No such file or directory") != NULL, "%s", err);
	cr_expect_eq(outfile_open(&o, test_tmpdir, err, sizeof(err)), -EISDIR, "a directory");
	/* No temporary file can be made in /proc, even by root. */
	cr_expect_lt(outfile_open(&o, "/proc/version", err, sizeof(err)), 0);
	cr_expect(strncmp(err, "cannot write /proc/version: ", 28) == 0, "%s", err);
}

/* A child whose stdout is /dev/full: the error surfaces at commit. */
Test(outfile, stdout_write_error_is_detected)
{
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct outfile o;
		char err[256] = "";
		int fd = open("/dev/full", O_WRONLY);

		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(2);
		if (outfile_open(&o, "-", err, sizeof(err)) || outfile_stream(&o) != stdout)
			_exit(3);
		fprintf(outfile_stream(&o), "report\n");
		if (outfile_commit(&o, err, sizeof(err)) != -ENOSPC)
			_exit(4);
		_exit(strcmp(err, "cannot write the report to standard output: No space left "
				  "on device")
			  ? 5
			  : 0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

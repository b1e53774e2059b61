// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/target_file.c: opening the target's files, which may not be files. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "process_caps.h"
#include "target_file.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(target_file, fifo_and_devices_refused_without_blocking)
{
	char dir[] = "/tmp/rbm-tf-XXXXXX", fifo[64], file[64], link[64], via_root[128];
	double t0;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(close(open(file, O_CREAT | O_WRONLY, 0600)), 0);
	cr_assert_eq(symlink(file, link), 0);

	t0 = now();
	cr_expect_eq(target_file_open(fifo), -EINVAL, "a FIFO");
	cr_expect_lt(now() - t0, 1.0, "blocked on the FIFO");
	cr_expect_eq(target_file_open("/dev/null"), -EINVAL, "a device");
	cr_expect_eq(target_file_open(dir), -EINVAL, "a directory");
	cr_expect_eq(target_file_open("/nonexistent/x"), -ENOENT);
	fd = target_file_open(file);
	cr_expect_geq(fd, 0);
	cr_expect(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* Outside /proc/PID/root the user's own symlinks are followed ... */
	fd = target_file_open(link);
	cr_expect_geq(fd, 0);
	close(fd);
	/* ... inside it the target's last component must not be one. */
	snprintf(via_root, sizeof(via_root), "/proc/%d/root%s", getpid(), link);
	cr_expect_eq(target_file_open(via_root), -EINVAL);
	snprintf(via_root, sizeof(via_root), "/proc/%d/root%s", getpid(), file);
	fd = target_file_open(via_root);
	cr_expect_geq(fd, 0);
	close(fd);
	snprintf(via_root, sizeof(via_root), "/proc/%d/root%s", getpid(), fifo);
	cr_expect_eq(target_file_open(via_root), -EINVAL);
	unlink(fifo);
	unlink(file);
	unlink(link);
	rmdir(dir);
}

/* A file past PROC_MAX_FILE_BYTES is refused before anything reads it (sparse: no disk used). */
Test(target_file, files_past_the_cap_refused)
{
	char path[] = "/tmp/rbm-big-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t) PROC_MAX_FILE_BYTES), 0);
	fd = target_file_open(path);
	cr_expect_geq(fd, 0, "at the cap: opened (%d)", fd);
	if (fd >= 0)
		close(fd);
	cr_assert_eq(truncate(path, (off_t) PROC_MAX_FILE_BYTES + 1), 0);
	cr_expect_eq(target_file_open(path), -EFBIG, "past the cap");
	unlink(path);
}

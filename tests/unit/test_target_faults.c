// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The target layer when the target misbehaves: files that are not files, a
 * process that dies under us, a thread ID for a PID, a libruby by another
 * name.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "classnames.h"
#include "procmaps.h"
#include "helpers.h"
#include "ruby_versions.h"
#include "target_file.h"
#include "target_mem.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Pieces that follow one another are read in one iovec, others one each;
 * an unmapped piece fails alone, a PROT_NONE one is read through /proc.
 */
Test(target_mem, read_many_runs_holes_and_protected_pages)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a = (uint64_t)m, addrs[3000];
	static uint8_t out[3000 * 8];
	bool ok[3000];
	size_t i, n = 0;

	cr_assert_neq(m, MAP_FAILED);
	for (i = 0; i < 4 * (size_t)pg; i++)
		m[i] = (uint8_t)(i * 7 + i / 251);
	cr_assert_eq(munmap(m + 2 * pg, pg), 0);
	cr_assert_eq(mprotect(m + 3 * pg, pg, PROT_NONE), 0);
	for (i = 0; i < 2000; i++) /* one run across pages 0 and 1 */
		addrs[n++] = a + 8 + i * 8;
	addrs[n++] = a + 2 * pg + 16;	 /* unmapped */
	addrs[n++] = a + 2 * pg + 24;	 /* unmapped, right after */
	addrs[n++] = a + 3 * pg + 40;	 /* PROT_NONE */
	for (i = 0; n < 3000; i++)	 /* more than READ_BATCH separate pieces */
		addrs[n++] = a + (i * 24) % (2 * pg - 8);
	memset(ok, 0, sizeof(ok));
	memset(out, 0, sizeof(out));
	target_read_many(getpid(), addrs, n, 8, out, ok);
	for (i = 0; i < n; i++) {
		uint64_t off = addrs[i] - a;

		if (off / pg == 2) {
			cr_expect(!ok[i], "piece %zu in the hole read", i);
			continue;
		}
		cr_expect(ok[i], "piece %zu at +%llu not read", i, (unsigned long long)off);
		if (off / pg == 3)
			continue;
		cr_expect_eq(memcmp(out + i * 8, m + off, 8), 0, "piece %zu at +%llu", i,
			     (unsigned long long)off);
	}
	cr_assert_eq(mprotect(m + 3 * pg, pg, PROT_READ), 0);
	cr_expect_eq(memcmp(out + 2002 * 8, m + 3 * pg + 40, 8), 0, "PROT_NONE piece");
	munmap(m, 2 * pg);
	munmap(m + 3 * pg, pg);
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

static void *report_tid(void *arg)
{
	*(pid_t *)arg = gettid();
	sleep(2);
	return NULL;
}

Test(procmaps_thread_group, tid_of_a_thread_gives_its_process)
{
	pthread_t th;
	volatile pid_t tid = 0;
	int i;

	cr_assert_eq(pthread_create(&th, NULL, report_tid, (void *)&tid), 0);
	for (i = 0; i < 1000 && !tid; i++)
		usleep(1000);
	cr_assert_neq(tid, 0);
	cr_expect_neq(tid, getpid());
	cr_expect_eq(procmaps_thread_group(tid), getpid());
	cr_expect_eq(procmaps_thread_group(getpid()), getpid());
	cr_expect_eq(procmaps_thread_group(999999), -ESRCH);
	pthread_cancel(th);
	pthread_join(th, NULL);
}

/* A child that has exited but is not reaped: kill(pid, 0) still succeeds. */
static pid_t zombie(void)
{
	pid_t pid = fork();
	char path[64], buf[512];
	int i;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	for (i = 0; i < 2000; i++) {
		FILE *f;
		char *p;

		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		f = fopen(path, "r");
		cr_assert_not_null(f);
		cr_assert_not_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		p = strrchr(buf, ')');
		if (p && p[2] == 'Z')
			return pid;
		usleep(1000);
	}
	cr_assert_fail("child %d never became a zombie", pid);
	return -1;
}

Test(target_gone, live_zombie_and_reaped)
{
	pid_t pid = zombie();

	cr_expect(!target_gone(getpid()));
	cr_expect_eq(kill(pid, 0), 0, "the zombie should still answer kill()");
	cr_expect(target_gone(pid), "a zombie has exited");
	waitpid(pid, NULL, 0);
	cr_expect(target_gone(pid));
}

Test(target_gone, errors_say_the_pid_exited)
{
	pid_t pid = zombie();
	const struct ruby_layout *off = test_layout_of("3.1.7");
	struct ruby_image img;
	struct class_namer cn;
	char err[512] = "", want[64];

	snprintf(want, sizeof(want), "PID %d exited", pid);
	cr_expect_eq(procmaps_find_ruby(pid, &img, err, sizeof(err)), -ESRCH);
	cr_expect_str_eq(err, want);
	cr_assert_not_null(off);
	memset(err, 0, sizeof(err));
	cr_expect_eq(class_namer_init(&cn, pid, off, 0x7f0000001000ULL, err, sizeof(err)), -ESRCH);
	cr_expect_str_eq(err, want);
	snprintf(err, sizeof(err), "some other error");
	cr_expect_eq(target_gone_error(getpid(), -EIO, err, sizeof(err)), -EIO);
	cr_expect_str_eq(err, "some other error", "a live process keeps its error");
	waitpid(pid, NULL, 0);
}

Test(libruby_name, exact_forms_only)
{
	cr_expect(!is_libruby_name("librubyx.so"));
	cr_expect(!is_libruby_name("/usr/lib/librubyx.so.3"));
	cr_expect(!is_libruby_name("libruby_helper.so"));
	cr_expect(!is_libruby_name("libruby.sox"));
	cr_expect(!is_libruby_name("libruby-3.1.sox"));
	cr_expect(is_libruby_name("libruby.so"));
	cr_expect(is_libruby_name("libruby-3.1.so"));
	cr_expect(is_libruby_name("/usr/lib/libruby-3.1.so.3.1 (deleted)"));
}

/* ruby with a copy of libruby named libfoo.so preloaded: its soname serves DT_NEEDED. */
Test(libruby_name, found_by_symbol_under_another_name)
{
	char dir[] = "/tmp/rbm-renamed-XXXXXX", lib[128], cmd[512], err[512] = "", line[16];
	struct ruby_image img;
	int fds[2];
	pid_t pid;
	struct pollfd p;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "%s/libfoo.so", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", test_system_libruby(), lib);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], STDOUT_FILENO);
		setenv("LD_PRELOAD", lib, 1);
		execlp("ruby", "ruby", "-e", "STDOUT.sync = true; puts 1; sleep 30", NULL);
		_exit(127);
	}
	close(fds[1]);
	p = (struct pollfd){.fd = fds[0], .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 20000), 1);
	cr_assert_gt(read(fds[0], line, sizeof(line)), 0);
	cr_expect_eq(procmaps_find_ruby(pid, &img, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(img.path, lib);
	cr_expect(img.shared);
	cr_expect_neq(img.load_bias, 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(lib);
	rmdir(dir);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/procmaps.c: /proc/PID/maps, finding a process's Ruby, thread groups, exits. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "classnames.h"
#include "elfinfo.h"
#include "helpers.h"
#include "mjit_offsets.h"
#include "procmaps.h"
#include "ruby_versions.h"
#include "target_mem.h"

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
	cr_expect_eq(e.dev_major, 0xfe, "the device, to tell the mapped file from another");
	cr_expect_eq(e.dev_minor, 1);
	cr_expect_eq(e.inode, 1234);

	cr_assert_eq(procmaps_parse_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0\n", &e), 0);
	cr_expect_str_eq(e.path, "");
	cr_expect_eq(e.inode, 0);
	cr_assert_eq(
	    procmaps_parse_line("1000-2000 r--p 0 08:01 7 /opt/my app/libruby.so (deleted)", &e),
	    0);
	cr_expect_str_eq(e.path, "/opt/my app/libruby.so (deleted)");
	cr_expect_eq(procmaps_parse_line("garbage", &e), -EINVAL);
}

Test(procmaps, line_shapes)
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
	cr_assert_eq(
	    procmaps_parse_line("5566aa000000-5566aa021000 rw-p 00000000 00:00 0 [heap]\n", &e), 0);
	cr_expect_str_eq(e.path, "[heap]");

	/* No path, with and without the newline fgets leaves. */
	strcpy(e.path, "stale");
	cr_assert_eq(procmaps_parse_line("7f0000000000-7f0000001000 rw-s 00000000 00:00 0\n", &e),
		     0);
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

Test(procmaps, deleted_and_spaces)
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

Test(procmaps, malformed_lines)
{
	static const char *const bad[] = {
	    "",
	    "\n",
	    "garbage\n",
	    "1000-2000\n",
	    "1000-2000 r-xp\n",
	    "1000-2000 r-xp 0\n",
	    "1000-2000 r-xp 0 08:01\n",	    /* no inode */
	    "1000-2000 r-xp 0 0801 7 /x\n", /* device without ':' */
	    "1000 r-xp 0 08:01 7 /x\n",	    /* no end address */
	    "zzzz-2000 r-xp 0 08:01 7 /x\n",
	    "1000-2000 r-xpX 0 08:01 7 /x\n", /* five permission letters */
	    "1000-2000 r-xp zz 08:01 7 /x\n",
	};
	struct map_entry e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(procmaps_parse_line(bad[i], &e), -EINVAL, "accepted \"%s\"", bad[i]);
}

Test(procmaps, libruby_names)
{
	cr_expect(is_libruby_name("libruby.so"));
	cr_expect(is_libruby_name("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.7"));
	cr_expect(!is_libruby_name("/usr/lib/libruby-static.a"));
	cr_expect(!is_libruby_name("/usr/bin/ruby"));
	cr_expect(!is_libruby_name("/usr/lib/libfoo.so"));
}

Test(procmaps, libruby_names_versions_and_directories)
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

Test(procmaps, libruby_name_exact_forms_only)
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

Test(procmaps, not_ruby_and_missing)
{
	struct ruby_image img;
	char err[256];

	cr_expect_eq(procmaps_find_ruby(getpid(), &img, err, sizeof(err)), -ENOEXEC);
	cr_expect(strstr(err, "not a Ruby process") != NULL, "%s", err);
	cr_expect_lt(procmaps_find_ruby(999999, &img, err, sizeof(err)), 0);
	cr_expect_str_eq(err, "no process with PID 999999");
}

Test(procmaps, find_ruby_errors)
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

/* ---- live processes: a real ruby and the fake_ruby fixture ---- */

static void expect_same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	cr_assert_not_null(realpath(a, ra), "%s", a);
	cr_assert_not_null(realpath(b, rb), "%s", b);
	cr_expect_str_eq(ra, rb);
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
	cr_assert_neq(off, UINT64_MAX, "0x%lx is in no PT_LOAD of %s", (unsigned long) vaddr, path);
	return off;
}

Test(procmaps, find_ruby_in_a_ruby_process)
{
	char *argv[] = {"ruby", "-e", "STDOUT.sync = true; puts 1; sleep 30", NULL};
	const char *lib = test_system_libruby();
	char err[512] = "", host[PATH_MAX + 64], version[32];
	struct ruby_image img;
	struct test_child c;
	uint64_t off, fn;

	test_child_start(&c, argv);
	cr_assert_eq(procmaps_find_ruby(c.pid, &img, err, sizeof(err)), 0, "%s", err);
	cr_expect(img.shared);
	cr_expect(is_libruby_name(img.path), "%s", img.path);
	expect_same_file(img.path, lib);
	snprintf(host, sizeof(host), "/proc/%d/root%s", c.pid, img.path);
	cr_expect_str_eq(img.host_path, host);
	cr_expect_neq(img.load_bias, 0);
	cr_expect_eq(img.load_bias & 0xfff, 0, "bias 0x%lx", (unsigned long) img.load_bias);

	/* The bias is right if ruby_version reads back from the target's memory. */
	memset(version, 0, sizeof(version));
	cr_assert_eq(target_read(c.pid, img.load_bias + test_symbol(lib, "ruby_version"), version,
				 sizeof(version) - 1),
		     0);
	cr_expect_str_eq(version, MJIT_RUBY_VERSION);

	/* Where a uprobe on a libruby function goes: the file offset ELF gives. */
	fn = test_symbol(lib, "rb_gc_start");
	cr_assert_eq(procmaps_file_offset(c.pid, img.path, img.load_bias + fn, &off), 0);
	cr_expect_eq(off, file_offset_from_phdrs(lib, fn));
	test_child_stop(&c);
}

Test(procmaps, find_ruby_in_fake_ruby)
{
	char *argv[] = {FAKE_RUBY, NULL};
	char err[512] = "", version[8];
	struct ruby_image img;
	struct test_child c;

	cr_assert_eq(access(FAKE_RUBY, X_OK), 0, "run the tests with `make unit`");
	test_child_start(&c, argv);
	cr_expect_str_eq(c.line, "fake ruby 9.9.0");
	cr_assert_eq(procmaps_find_ruby(c.pid, &img, err, sizeof(err)), 0, "%s", err);
	cr_expect(img.shared);
	expect_same_file(img.path, FAKE_LIB);
	memset(version, 0, sizeof(version));
	cr_assert_eq(
	    target_read(c.pid, img.load_bias + test_symbol(FAKE_LIB, "ruby_version"), version, 6),
	    0);
	cr_expect_str_eq(version, "9.9.0");
	cr_expect_null(ruby_versions_entry(version));
	test_child_stop(&c);
}

/* A libruby replaced on disk (a package upgrade) is refused with a reason. */
Test(procmaps, find_ruby_deleted_libruby)
{
	char dir[] = "/tmp/rbm-unit-XXXXXX", cmd[PATH_MAX * 2], exe[PATH_MAX], lib[PATH_MAX];
	char err[512] = "";
	struct ruby_image img;
	struct test_child c;
	char *argv[] = {exe, NULL};

	cr_assert_eq(access(FAKE_RUBY, X_OK), 0, "run the tests with `make unit`");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp %s %s %s/", FAKE_RUBY, FAKE_LIB, dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(exe, sizeof(exe), "%s/fake_ruby", dir);
	snprintf(lib, sizeof(lib), "%s/libruby-9.9.so", dir);
	test_child_start(&c, argv);
	unlink(lib);
	unlink(exe);
	rmdir(dir);
	cr_expect_eq(procmaps_find_ruby(c.pid, &img, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "deleted or upgraded on disk") != NULL, "%s", err);
	cr_expect(strstr(err, lib) != NULL, "%s does not name %s", err, lib);
	test_child_stop(&c);
}

/* ruby with a copy of libruby named libfoo.so preloaded: its soname serves DT_NEEDED. */
Test(procmaps, libruby_found_by_symbol_under_another_name)
{
	char dir[] = "/tmp/rbm-renamed-XXXXXX", lib[128], cmd[512], err[512] = "", preload[160];
	char *argv[] = {"env", preload, "ruby", "-e", "STDOUT.sync = true; puts 1; sleep 30", NULL};
	struct ruby_image img;
	struct test_child c;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "%s/libfoo.so", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", test_system_libruby(), lib);
	cr_assert_eq(system(cmd), 0);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", lib);
	test_child_start(&c, argv);
	cr_expect_eq(procmaps_find_ruby(c.pid, &img, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(img.path, lib);
	cr_expect(img.shared);
	cr_expect_neq(img.load_bias, 0);
	test_child_stop(&c);
	unlink(lib);
	rmdir(dir);
}

/* A function of this file with a name no other object uses. */
void rbm_unit_procmaps_marker(void);
void rbm_unit_procmaps_marker(void)
{
}

Test(procmaps, file_offset_of_own_code)
{
	uint64_t off = 0, sym, fn = (uint64_t) (uintptr_t) &rbm_unit_procmaps_marker;
	char exe[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	cr_assert_eq(elf_symbol_value(exe, "rbm_unit_procmaps_marker", &sym, NULL), 0);
	cr_assert_eq(procmaps_file_offset(getpid(), exe, fn, &off), 0);
	cr_expect_eq(off, file_offset_from_phdrs(exe, sym), "maps say 0x%lx, ELF says 0x%lx",
		     (unsigned long) off, (unsigned long) file_offset_from_phdrs(exe, sym));
	/* Wrong file, or an address outside every mapping of it. */
	cr_expect_eq(procmaps_file_offset(getpid(), "/no/such/file", fn, &off), -ENOENT);
	cr_expect_eq(procmaps_file_offset(getpid(), exe, 8, &off), -ENOENT);
	cr_expect_eq(procmaps_file_offset(999999, exe, fn, &off), -ENOENT);
}

static void *report_tid(void *arg)
{
	*(pid_t *) arg = gettid();
	sleep(2);
	return NULL;
}

Test(procmaps, tid_of_a_thread_gives_its_process)
{
	pthread_t th;
	volatile pid_t tid = 0;
	int i;

	cr_assert_eq(pthread_create(&th, NULL, report_tid, (void *) &tid), 0);
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

Test(procmaps, target_gone_live_zombie_and_reaped)
{
	pid_t pid = zombie();

	cr_expect(!target_gone(getpid()));
	cr_expect_eq(kill(pid, 0), 0, "the zombie should still answer kill()");
	cr_expect(target_gone(pid), "a zombie has exited");
	waitpid(pid, NULL, 0);
	cr_expect(target_gone(pid));
}

Test(procmaps, target_gone_errors_say_the_pid_exited)
{
	pid_t pid = zombie();
	const struct ruby_layout layout = test_layout_of("3.1.7"), *off = &layout;
	struct ruby_image img;
	struct class_namer cn;
	char err[512] = "", want[64];

	snprintf(want, sizeof(want), "PID %d exited", pid);
	cr_expect_eq(procmaps_find_ruby(pid, &img, err, sizeof(err)), -ESRCH);
	cr_expect_str_eq(err, want);
	memset(err, 0, sizeof(err));
	cr_expect_eq(class_namer_init(&cn, pid, off, 0x7f0000001000ULL, err, sizeof(err)), -ESRCH);
	cr_expect_str_eq(err, want);
	snprintf(err, sizeof(err), "some other error");
	cr_expect_eq(target_gone_error(getpid(), -EIO, err, sizeof(err)), -EIO);
	cr_expect_str_eq(err, "some other error", "a live process keeps its error");
	waitpid(pid, NULL, 0);
}

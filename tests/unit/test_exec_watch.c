// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/probe/exec_watch.c: the pure part, the kernel's encoding of a device
 * number, which keys the BPF side's verdicts (inode->i_sb->s_dev) and must
 * match what stat says of the same file.
 */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "exec_watch.h"

Test(exec_watch, kernel_dev_encoding)
{
	/* MKDEV(major, minor) = major << 20 | minor: /dev/sda1 is 8:1. */
	cr_expect_eq(exec_watch_kernel_dev(makedev(8, 1)), (8u << 20) | 1);
	cr_expect_eq(exec_watch_kernel_dev(makedev(259, 3)), (259u << 20) | 3);
	/* Minors past 255 live in the high bits of glibc's dev_t. */
	cr_expect_eq(exec_watch_kernel_dev(makedev(0, 300)), 300u);
	cr_expect_eq(exec_watch_kernel_dev(makedev(254, 70000)), (254u << 20) | 70000);
}

/* The root filesystem's own numbers survive the round trip: major and minor come back. */
Test(exec_watch, kernel_dev_of_a_real_file)
{
	struct stat st;
	__u32 k;

	cr_assert_eq(stat("/usr/bin/env", &st), 0);
	k = exec_watch_kernel_dev(st.st_dev);
	cr_expect_eq(k >> 20, major(st.st_dev));
	cr_expect_eq(k & ((1u << 20) - 1), minor(st.st_dev));
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "process_caps.h"
#include "target_file.h"

/* "/proc/PID/root/REST": the PID and where REST starts ("" for the root itself). */
static int split_proc_root(const char *path, int *pid, const char **rest)
{
	int end = 0;

	if (sscanf(path, "/proc/%d/root%n", pid, &end) < 1 || !end ||
	    (path[end] != '/' && path[end] != '\0'))
		return -1;
	*rest = path + end;
	return 0;
}

/* An O_PATH fd of path's file, resolved inside /proc/PID/root when under it. */
static int open_o_path(const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[64];
	const char *rest;
	int pid, rootfd, fd;

	if (split_proc_root(path, &pid, &rest))
		return open(path, O_PATH | O_CLOEXEC);
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -1;
	while (*rest == '/')
		rest++;
	fd = syscall(SYS_openat2, rootfd, *rest ? rest : ".", &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) /* before Linux 5.6: the kernel's own resolution */
		fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	close(rootfd);
	return fd;
}

int target_file_open(const char *path)
{
	char self[64];
	struct stat st;
	int pfd, fd;

	pfd = open_o_path(path);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st)) {
		fd = -errno;
		close(pfd);
		return fd;
	}
	if (!S_ISREG(st.st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	if ((uint64_t) st.st_size > PROC_MAX_FILE_BYTES) {
		close(pfd);
		return -EFBIG; /* said as "File too large" by the callers */
	}
	/* Reopening the O_PATH fd opens the very inode just checked. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	close(pfd);
	return fd;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "target_mem.h"

/* process_vm_readv refuses PROT_NONE pages (GC compaction's read barrier); /proc/PID/mem does not.
 */
static int read_proc_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t) addr);
	close(fd);
	if (n < 0)
		return -errno;
	return (size_t) n == len ? 0 : -EFAULT;
}

int target_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *) addr, len};
	ssize_t n;

	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t) len)
		return 0;
	if (n < 0 && errno == ESRCH)
		return -ESRCH;
	return read_proc_mem(pid, addr, buf, len);
}

#define READ_BATCH 1024 /* IOV_MAX */

/*
 * The kernel pins and maps the remote pages once per iovec: pieces that follow
 * one another in the target are read as one iovec (the local side is one run).
 */
void target_read_many(pid_t pid, const uint64_t *addrs, size_t n, size_t each, void *out, bool *ok)
{
	struct iovec local, remote[READ_BATCH];
	size_t done = 0;

	while (done < n) {
		size_t i, good, nr = 0;
		ssize_t got;

		for (i = done; i < n; i++) {
			if (nr && (uint64_t) remote[nr - 1].iov_base + remote[nr - 1].iov_len ==
				      addrs[i]) {
				remote[nr - 1].iov_len += each;
				continue;
			}
			if (nr == READ_BATCH)
				break;
			remote[nr].iov_base = (void *) addrs[i];
			remote[nr++].iov_len = each;
		}
		local.iov_base = (char *) out + done * each;
		local.iov_len = (i - done) * each;
		got = process_vm_readv(pid, &local, 1, remote, nr, 0);
		/* A short read stops at the first unreadable address: retry that one alone. */
		good = got > 0 ? (size_t) got / each : 0;
		for (size_t j = 0; j < good; j++)
			ok[done + j] = true;
		if (done + good < i) {
			ok[done + good] =
			    target_read(pid, addrs[done + good],
					(char *) out + (done + good) * each, each) == 0;
			good++;
		}
		done += good;
	}
}

/* The iovec limit, and bytes per call: a piece's bytes stay in the cache until read. */
#define EACH_BYTES (4u << 20)

void target_read_each(pid_t pid, const uint64_t *addrs, const uint32_t *lens, size_t n, void *out,
		      bool *ok)
{
	struct iovec local, remote[READ_BATCH];
	char *at = out;
	size_t done = 0;

	while (done < n) {
		size_t i, nr = 0, bytes = 0, good;
		ssize_t got;

		for (i = done; i < n && nr < READ_BATCH && (!nr || bytes + lens[i] <= EACH_BYTES);
		     i++) {
			remote[nr].iov_base = (void *) addrs[i];
			remote[nr++].iov_len = lens[i];
			bytes += lens[i];
		}
		local.iov_base = at;
		local.iov_len = bytes;
		got = process_vm_readv(pid, &local, 1, remote, nr, 0);
		/* A short read stops inside the first unreadable piece: that one is read alone. */
		for (good = 0; got > 0 && good < nr && (size_t) got >= lens[done + good]; good++) {
			got -= (ssize_t) lens[done + good];
			ok[done + good] = true;
			at += lens[done + good];
		}
		if (good < nr) {
			ok[done + good] = target_read(pid, addrs[done + good], at, lens[done + good]) == 0;
			at += lens[done + good];
			good++;
		}
		done += good;
	}
}

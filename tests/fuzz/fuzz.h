/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the harnesses share: the fuzz input as a C string, cut into pieces,
 * or as a file a reader opens by path (a memfd, named /proc/self/fd/N, so
 * nothing is left on disk and two harnesses never share a file).
 */
#ifndef RBM_FUZZ_H
#define RBM_FUZZ_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A NUL-terminated copy of len bytes (a NUL inside ends the string early). */
static inline char *fuzz_str(const uint8_t *data, size_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		abort();
	memcpy(s, data, len);
	s[len] = '\0';
	return s;
}

/*
 * The next piece of *data up to sep (not included), as a new string;
 * NULL when nothing is left.  Several inputs of a reader in one buffer.
 */
static inline char *fuzz_next(const uint8_t **data, size_t *len, char sep)
{
	const uint8_t *end;
	size_t n;
	char *s;

	if (!*data)
		return NULL;
	end = memchr(*data, sep, *len);
	n = end ? (size_t) (end - *data) : *len;
	s = fuzz_str(*data, n);
	if (end) {
		*len -= n + 1;
		*data = end + 1;
	} else {
		*len = 0;
		*data = NULL;
	}
	return s;
}

/* A memfd holding len bytes, its name in path; the fd (close it), or -1. */
static inline int fuzz_file(const uint8_t *data, size_t len, char *path, size_t n)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t) w;
	}
	snprintf(path, n, "/proc/self/fd/%d", fd);
	return fd;
}

#endif

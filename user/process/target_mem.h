/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading the target's memory from outside. */
#ifndef RBM_TARGET_MEM_H
#define RBM_TARGET_MEM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads len bytes at addr; 0 or a negative errno. */
int target_read(pid_t pid, uint64_t addr, void *buf, size_t len);

static inline int target_read_u64(pid_t pid, uint64_t addr, uint64_t *v)
{
	return target_read(pid, addr, v, sizeof(*v));
}

/*
 * Reads `each` bytes at each of n addresses into out (n * each bytes), a
 * thousand at a time; ok[i] says whether address i was readable.
 */
void target_read_many(pid_t pid, const uint64_t *addrs, size_t n, size_t each, void *out, bool *ok);

/*
 * Reads lens[i] bytes at addrs[i] for each i < n, one piece after another
 * into out (the sum of lens), up to a thousand pieces a call; ok[i] says
 * whether piece i was readable.
 */
void target_read_each(pid_t pid, const uint64_t *addrs, const uint32_t *lens, size_t n, void *out,
		      bool *ok);

#endif

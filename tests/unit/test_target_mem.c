// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/target_mem.c: reading the target's memory. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "target_mem.h"

/*
 * Pieces that follow one another are read in one iovec, others one each;
 * an unmapped piece fails alone, a PROT_NONE one is read through /proc.
 */
Test(target_mem, read_many_runs_holes_and_protected_pages)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a = (uint64_t) m, addrs[3000];
	static uint8_t out[3000 * 8];
	bool ok[3000];
	size_t i, n = 0;

	cr_assert_neq(m, MAP_FAILED);
	for (i = 0; i < 4 * (size_t) pg; i++)
		m[i] = (uint8_t) (i * 7 + i / 251);
	cr_assert_eq(munmap(m + 2 * pg, pg), 0);
	cr_assert_eq(mprotect(m + 3 * pg, pg, PROT_NONE), 0);
	for (i = 0; i < 2000; i++) /* one run across pages 0 and 1 */
		addrs[n++] = a + 8 + i * 8;
	addrs[n++] = a + 2 * pg + 16; /* unmapped */
	addrs[n++] = a + 2 * pg + 24; /* unmapped, right after */
	addrs[n++] = a + 3 * pg + 40; /* PROT_NONE */
	for (i = 0; n < 3000; i++)    /* more than READ_BATCH separate pieces */
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
		cr_expect(ok[i], "piece %zu at +%llu not read", i, (unsigned long long) off);
		if (off / pg == 3)
			continue;
		cr_expect_eq(memcmp(out + i * 8, m + off, 8), 0, "piece %zu at +%llu", i,
			     (unsigned long long) off);
	}
	cr_assert_eq(mprotect(m + 3 * pg, pg, PROT_READ), 0);
	cr_expect_eq(memcmp(out + 2002 * 8, m + 3 * pg + 40, 8), 0, "PROT_NONE piece");
	munmap(m, 2 * pg);
	munmap(m + 3 * pg, pg);
}

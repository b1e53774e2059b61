// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/probe/tracker.c (object_header_alive) and the tracker's keys (tally_key, class_key_id). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include "census.h"
#include "rbmemtrace.h"
#include "tracker.h"

Test(tracker, header_alive)
{
	uint32_t imemo_iseq = RBM_KIND(RB_T_IMEMO, 7);

	cr_expect(object_header_alive(0x05 | 0x2000, RB_T_STRING));
	cr_expect(!object_header_alive(0x00, RB_T_STRING));
	cr_expect(!object_header_alive(0x1d, RB_T_STRING));
	cr_expect(!object_header_alive(0x1e, RB_T_STRING));
	cr_expect(!object_header_alive(0x07, RB_T_STRING)); /* reused by an Array */
	cr_expect(object_header_alive(0x1a | (7 << 12), imemo_iseq));
	cr_expect(!object_header_alive(0x1a | (6 << 12), imemo_iseq));
}

Test(tracker, keys_are_distinct)
{
	cr_expect_neq(class_key_id(0x1000, 5), class_key_id(0x1000, 7));
	cr_expect_neq(class_key_id(0x1000, 5), class_key_id(0x1008, 5));
	cr_expect_neq(tally_key(0x1000, 5, 0), tally_key(0x1000, 5, 42));
	cr_expect_neq(tally_key(0, 5, 0), 0);
}

Test(tracker, alive_ignores_flag_bits_of_plain_types)
{
	/* A String with every FL_USER bit and the GC bits set is still a String. */
	uint64_t hi = ~(uint64_t) RB_T_MASK;
	uint32_t t;

	cr_expect(object_header_alive(RB_T_STRING | hi, RB_T_STRING));
	cr_expect(object_header_alive(RB_T_STRING | 0x7c000 | 0x2000, RB_T_STRING));
	cr_expect(object_header_alive(RB_T_OBJECT | (0xfULL << 12), RB_T_OBJECT),
		  "imemo bits of a non-imemo are flags, not a subtype");
	for (t = 1; t < 0x20; t++) {
		bool dead_type = t == RB_T_ZOMBIE || t == RB_T_MOVED;

		if (t == RB_T_IMEMO)
			continue;
		cr_expect_eq(object_header_alive(t, t), !dead_type, "type 0x%02x", t);
		cr_expect_eq(object_header_alive(t | 0x2000, t), !dead_type, "type 0x%02x", t);
		/* Any other type in the slot: freed and reused. */
		cr_expect(!object_header_alive(t, t == RB_T_STRING ? RB_T_OBJECT : RB_T_STRING),
			  "type 0x%02x", t);
		/* A freed slot, whatever it held. */
		cr_expect(!object_header_alive(0, t));
		cr_expect(!object_header_alive(hi & ~0xfffULL, t), "T_NONE with flags");
	}
}

Test(tracker, alive_imemo_matrix)
{
	uint32_t rec, now;

	for (rec = 0; rec < 16; rec++) {
		uint32_t kind = RBM_KIND(RB_T_IMEMO, rec);

		for (now = 0; now < 16; now++) {
			uint64_t flags = RB_T_IMEMO | ((uint64_t) now << RB_IMEMO_SHIFT);

			cr_expect_eq(object_header_alive(flags, kind), rec == now,
				     "recorded %u, now %u", rec, now);
			/* Flag bits above the imemo field do not matter. */
			cr_expect_eq(object_header_alive(flags | (0xffULL << 16), kind),
				     rec == now);
		}
		cr_expect(!object_header_alive(RB_T_MOVED | ((uint64_t) rec << 12), kind));
		cr_expect(!object_header_alive(RB_T_ZOMBIE, kind));
		cr_expect(!object_header_alive(RB_T_NONE, kind));
		cr_expect(!object_header_alive(RB_T_OBJECT | ((uint64_t) rec << 12), kind));
	}
	/* An imemo reused by a plain object of the type the kind's low bits name. */
	cr_expect(!object_header_alive(RB_T_STRING, RBM_KIND(RB_T_IMEMO, 5)));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

Test(tracker, class_keys_distinct_over_a_grid)
{
	static uint64_t keys[64 * (0x20 + 16)];
	size_t n = 0, i;
	uint64_t k;
	uint32_t t;

	/* Heap addresses: 8-byte aligned, up to 2^47; kinds: every type and imemo kind. */
	for (k = 0; k < 64; k++) {
		uint64_t klass =
		    k == 0 ? 0 : (k == 1 ? 0x00007ffffffffff8ULL : k * 8 + 0x55d000000000ULL);

		for (t = 0; t < 0x20; t++)
			if (t != RB_T_IMEMO) /* RBM_KIND(RB_T_IMEMO, 0), below */
				keys[n++] = class_key_id(klass, t);
		for (t = 0; t < 16; t++)
			keys[n++] = class_key_id(klass, RBM_KIND(RB_T_IMEMO, t));
	}
	qsort(keys, n, sizeof(keys[0]), cmp_u64);
	for (i = 1; i < n; i++)
		cr_assert_neq(keys[i], keys[i - 1], "two (klass, kind) pairs share key 0x%lx",
			      (unsigned long) keys[i]);
	/* Keys are usable in a u64map: only (0, T_NONE) maps to 0. */
	cr_expect_eq(class_key_id(0, 0), 0);
	cr_expect_neq(class_key_id(8, 0), 0);
	/* tally_key is never 0 and separates call paths. */
	cr_expect_neq(tally_key(0, 0, 0), 0);
	cr_expect_neq(tally_key(0x1000, RB_T_STRING, 1), tally_key(0x1000, RB_T_STRING, 2));
	cr_expect_eq(tally_key(0x1000, RB_T_STRING, 0), class_key_id(0x1000, RB_T_STRING),
		     "no call path: the class key itself");
}

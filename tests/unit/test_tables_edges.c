// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Type and imemo names, u64map and the tracker's pure helpers, beyond
 * test_logic.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "classnames.h"
#include "rbmemtrace.h"
#include "tracker.h"
#include "u64map.h"

Test(classnames_edges, every_type_name)
{
	/* Ruby's enum ruby_value_type (include/ruby/internal/value_type.h). */
	static const char *const want[0x20] = {
		[0x00] = "T_NONE",    [0x01] = "T_OBJECT",  [0x02] = "T_CLASS",
		[0x03] = "T_MODULE",  [0x04] = "T_FLOAT",   [0x05] = "T_STRING",
		[0x06] = "T_REGEXP",  [0x07] = "T_ARRAY",   [0x08] = "T_HASH",
		[0x09] = "T_STRUCT",  [0x0a] = "T_BIGNUM",  [0x0b] = "T_FILE",
		[0x0c] = "T_DATA",    [0x0d] = "T_MATCH",   [0x0e] = "T_COMPLEX",
		[0x0f] = "T_RATIONAL", [0x11] = "T_NIL",    [0x12] = "T_TRUE",
		[0x13] = "T_FALSE",   [0x14] = "T_SYMBOL",  [0x15] = "T_FIXNUM",
		[0x16] = "T_UNDEF",   [0x1a] = "T_IMEMO",   [0x1b] = "T_NODE",
		[0x1c] = "T_ICLASS",  [0x1d] = "T_ZOMBIE",  [0x1e] = "T_MOVED",
	};
	uint32_t t;

	for (t = 0; t < 0x20; t++)
		cr_expect_str_eq(ruby_type_name(t), want[t] ? want[t] : "T_UNKNOWN", "type 0x%02x",
				 t);
	cr_expect_str_eq(ruby_type_name(0x20), "T_UNKNOWN");
	cr_expect_str_eq(ruby_type_name(0x105), "T_UNKNOWN", "not masked: 0x105 is no type");
	cr_expect_str_eq(ruby_type_name(UINT32_MAX), "T_UNKNOWN");
	/* The constants of include/rbmemtrace.h name the same types. */
	cr_expect_str_eq(ruby_type_name(RB_T_NONE), "T_NONE");
	cr_expect_str_eq(ruby_type_name(RB_T_OBJECT), "T_OBJECT");
	cr_expect_str_eq(ruby_type_name(RB_T_CLASS), "T_CLASS");
	cr_expect_str_eq(ruby_type_name(RB_T_MODULE), "T_MODULE");
	cr_expect_str_eq(ruby_type_name(RB_T_STRING), "T_STRING");
	cr_expect_str_eq(ruby_type_name(RB_T_ICLASS), "T_ICLASS");
	cr_expect_str_eq(ruby_type_name(RB_T_ZOMBIE), "T_ZOMBIE");
	cr_expect_str_eq(ruby_type_name(RB_T_MOVED), "T_MOVED");
	cr_expect_str_eq(ruby_type_name(RB_T_IMEMO), "T_IMEMO");
	cr_expect_eq(RB_T_MASK, 0x1f);
}

Test(classnames_edges, every_imemo_name)
{
	/* Ruby 3.1's enum imemo_type (internal/imemo.h). */
	static const char *const want[] = {
		"env",	    "cref",	"svar",	   "throw_data",     "ifunc",	 "memo",
		"ment",	    "iseq",	"tmpbuf", "ast",	    "parser_strterm", "callinfo",
		"callcache", "constcache",
	};
	uint32_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect_str_eq(ruby_imemo_name(i), want[i], "imemo %u", i);
	cr_expect_str_eq(ruby_imemo_name(14), "unknown");
	cr_expect_str_eq(ruby_imemo_name(15), "unknown", "the largest value the 4-bit field holds");
	cr_expect_str_eq(ruby_imemo_name(UINT32_MAX), "unknown");
	/* The kind packing round-trips every imemo type. */
	for (i = 0; i < 16; i++) {
		cr_expect_eq(RBM_KIND_TYPE(RBM_KIND(RB_T_IMEMO, i)), RB_T_IMEMO);
		cr_expect_eq(RBM_KIND_IMEMO(RBM_KIND(RB_T_IMEMO, i)), i);
	}
}

Test(u64map_edges, empty_map)
{
	struct u64map m = {};
	size_t i, visits = 0;

	cr_expect_null(u64map_get(&m, 1));
	cr_expect_null(u64map_get(&m, 0));
	cr_expect_eq(u64map_put(&m, 0, &m), -EINVAL);
	cr_expect_eq(m.len, 0);
	u64map_for_each(&m, i) visits++;
	cr_expect_eq(visits, 0);
	u64map_free(&m, free); /* nothing to free; must not crash */
	cr_expect_eq(m.cap, 0);
}

Test(u64map_edges, replace_and_zero_key)
{
	struct u64map m = {};
	int a, b;

	cr_assert_eq(u64map_put(&m, 5, &a), 0);
	cr_assert_eq(u64map_put(&m, 5, &b), 0);
	cr_expect_eq(u64map_get(&m, 5), &b);
	cr_expect_eq(m.len, 1);
	cr_expect_eq(u64map_put(&m, 0, &a), -EINVAL);
	cr_expect_null(u64map_get(&m, 0), "key 0 is the empty-slot marker");
	cr_expect_eq(m.len, 1);
	/* Extreme keys. */
	cr_assert_eq(u64map_put(&m, UINT64_MAX, &a), 0);
	cr_assert_eq(u64map_put(&m, 1ULL << 63, &b), 0);
	cr_expect_eq(u64map_get(&m, UINT64_MAX), &a);
	cr_expect_eq(u64map_get(&m, 1ULL << 63), &b);
	cr_expect_null(u64map_get(&m, (1ULL << 63) + 1));
	u64map_free(&m, NULL);
}

/* Keys that differ only in high bits (class addresses shifted left). */
Test(u64map_edges, many_keys_with_equal_low_bits)
{
	struct u64map m = {};
	uintptr_t i;

	for (i = 1; i <= 100000; i++)
		cr_assert_eq(u64map_put(&m, (uint64_t)i << 40, (void *)i), 0);
	cr_expect_eq(m.len, 100000);
	cr_expect_lt(m.len, m.cap, "lookups need an empty slot to stop at");
	cr_expect_eq(m.cap & (m.cap - 1), 0, "capacity is a power of two");
	for (i = 1; i <= 100000; i++)
		cr_assert_eq((uintptr_t)u64map_get(&m, (uint64_t)i << 40), i, "key %lu", i);
	cr_expect_null(u64map_get(&m, 100001ULL << 40));
	cr_expect_null(u64map_get(&m, (1ULL << 40) + 1));
	u64map_free(&m, NULL);
}

Test(u64map_edges, for_each_visits_each_key_once)
{
	struct u64map m = {};
	const size_t n = 100000;
	unsigned char *seen = calloc(n + 1, 1);
	size_t i, visits = 0;

	cr_assert_not_null(seen);
	for (i = 1; i <= n; i++)
		cr_assert_eq(u64map_put(&m, i * 0x9e3779b97f4a7c15ULL | 1, (void *)(uintptr_t)i),
			     0);
	/* Replacing values adds no entries. */
	for (i = 1; i <= n; i += 7)
		cr_assert_eq(u64map_put(&m, i * 0x9e3779b97f4a7c15ULL | 1, (void *)(uintptr_t)i),
			     0);
	cr_expect_eq(m.len, n);
	u64map_for_each(&m, i)
	{
		uintptr_t v = (uintptr_t)m.values[i];

		cr_assert(v >= 1 && v <= n);
		cr_assert_eq(m.keys[i], v * 0x9e3779b97f4a7c15ULL | 1, "key/value mismatch");
		cr_assert_eq(seen[v], 0, "value %lu visited twice", (unsigned long)v);
		seen[v] = 1;
		visits++;
	}
	cr_expect_eq(visits, n);
	free(seen);
	u64map_free(&m, NULL);
}

static size_t freed_values;
static uint64_t freed_sum;

static void count_free(void *v)
{
	freed_values++;
	freed_sum += *(uint64_t *)v;
	free(v);
}

Test(u64map_edges, free_calls_destructor_once_per_value)
{
	struct u64map m = {};
	uint64_t i, sum = 0;

	freed_values = 0;
	freed_sum = 0;
	for (i = 1; i <= 1000; i++) {
		uint64_t *v = malloc(sizeof(*v));

		cr_assert_not_null(v);
		*v = i * 3;
		sum += *v;
		cr_assert_eq(u64map_put(&m, i, v), 0);
	}
	u64map_free(&m, count_free);
	cr_expect_eq(freed_values, 1000);
	cr_expect_eq(freed_sum, sum);
	cr_expect_null(m.keys);
	cr_expect_eq(m.len, 0);
	cr_expect_eq(m.cap, 0);
	/* Usable again after free. */
	cr_expect_null(u64map_get(&m, 1));
	cr_assert_eq(u64map_put(&m, 1, &m), 0);
	cr_expect_eq(u64map_get(&m, 1), &m);
	u64map_free(&m, NULL);
}

Test(tracker_edges, alive_ignores_flag_bits_of_plain_types)
{
	/* A String with every FL_USER bit and the GC bits set is still a String. */
	uint64_t hi = ~(uint64_t)RB_T_MASK;
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

Test(tracker_edges, alive_imemo_matrix)
{
	uint32_t rec, now;

	for (rec = 0; rec < 16; rec++) {
		uint32_t kind = RBM_KIND(RB_T_IMEMO, rec);

		for (now = 0; now < 16; now++) {
			uint64_t flags = RB_T_IMEMO | ((uint64_t)now << RB_IMEMO_SHIFT);

			cr_expect_eq(object_header_alive(flags, kind), rec == now, "recorded %u, now %u",
				     rec, now);
			/* Flag bits above the imemo field do not matter. */
			cr_expect_eq(object_header_alive(flags | (0xffULL << 16), kind), rec == now);
		}
		cr_expect(!object_header_alive(RB_T_MOVED | ((uint64_t)rec << 12), kind));
		cr_expect(!object_header_alive(RB_T_ZOMBIE, kind));
		cr_expect(!object_header_alive(RB_T_NONE, kind));
		cr_expect(!object_header_alive(RB_T_OBJECT | ((uint64_t)rec << 12), kind));
	}
	/* An imemo reused by a plain object of the type the kind's low bits name. */
	cr_expect(!object_header_alive(RB_T_STRING, RBM_KIND(RB_T_IMEMO, 5)));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

Test(tracker_edges, class_keys_distinct_over_a_grid)
{
	static uint64_t keys[64 * (0x20 + 16)];
	size_t n = 0, i;
	uint64_t k;
	uint32_t t;

	/* Heap addresses: 8-byte aligned, up to 2^47; kinds: every type and imemo kind. */
	for (k = 0; k < 64; k++) {
		uint64_t klass = k == 0 ? 0 : (k == 1 ? 0x00007ffffffffff8ULL : k * 8 + 0x55d000000000ULL);

		for (t = 0; t < 0x20; t++)
			if (t != RB_T_IMEMO) /* RBM_KIND(RB_T_IMEMO, 0), below */
				keys[n++] = class_key_id(klass, t);
		for (t = 0; t < 16; t++)
			keys[n++] = class_key_id(klass, RBM_KIND(RB_T_IMEMO, t));
	}
	qsort(keys, n, sizeof(keys[0]), cmp_u64);
	for (i = 1; i < n; i++)
		cr_assert_neq(keys[i], keys[i - 1], "two (klass, kind) pairs share key 0x%lx",
			      (unsigned long)keys[i]);
	/* Keys are usable in a u64map: only (0, T_NONE) maps to 0. */
	cr_expect_eq(class_key_id(0, 0), 0);
	cr_expect_neq(class_key_id(8, 0), 0);
	/* tally_key is never 0 and separates call paths. */
	cr_expect_neq(tally_key(0, 0, 0), 0);
	cr_expect_neq(tally_key(0x1000, RB_T_STRING, 1), tally_key(0x1000, RB_T_STRING, 2));
	cr_expect_eq(tally_key(0x1000, RB_T_STRING, 0), class_key_id(0x1000, RB_T_STRING),
		     "no call path: the class key itself");
}

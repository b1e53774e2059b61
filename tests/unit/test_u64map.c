// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/lib/u64map.c: the open-addressing map from non-zero 64-bit keys to pointers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "u64map.h"

Test(u64map, put_get_grow)
{
	struct u64map m = {};
	uintptr_t i;

	cr_expect_neq(u64map_put(&m, 0, (void *) 1), 0);
	for (i = 1; i <= 100000; i++)
		cr_assert_eq(u64map_put(&m, i * 8, (void *) i), 0);
	cr_expect_eq(m.len, 100000);
	for (i = 1; i <= 100000; i++)
		cr_assert_eq((uintptr_t) u64map_get(&m, i * 8), i);
	cr_expect_null(u64map_get(&m, 12345 * 8 + 1));
	u64map_put(&m, 8, (void *) 7);
	cr_expect_eq((uintptr_t) u64map_get(&m, 8), 7);
	cr_expect_eq(m.len, 100000);
	u64map_free(&m, NULL);
}

Test(u64map, empty_map)
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

Test(u64map, replace_and_zero_key)
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
Test(u64map, many_keys_with_equal_low_bits)
{
	struct u64map m = {};
	uintptr_t i;

	for (i = 1; i <= 100000; i++)
		cr_assert_eq(u64map_put(&m, (uint64_t) i << 40, (void *) i), 0);
	cr_expect_eq(m.len, 100000);
	cr_expect_lt(m.len, m.cap, "lookups need an empty slot to stop at");
	cr_expect_eq(m.cap & (m.cap - 1), 0, "capacity is a power of two");
	for (i = 1; i <= 100000; i++)
		cr_assert_eq((uintptr_t) u64map_get(&m, (uint64_t) i << 40), i, "key %lu", i);
	cr_expect_null(u64map_get(&m, 100001ULL << 40));
	cr_expect_null(u64map_get(&m, (1ULL << 40) + 1));
	u64map_free(&m, NULL);
}

Test(u64map, for_each_visits_each_key_once)
{
	struct u64map m = {};
	const size_t n = 100000;
	unsigned char *seen = calloc(n + 1, 1);
	size_t i, visits = 0;

	cr_assert_not_null(seen);
	for (i = 1; i <= n; i++)
		cr_assert_eq(u64map_put(&m, i * 0x9e3779b97f4a7c15ULL | 1, (void *) (uintptr_t) i),
			     0);
	/* Replacing values adds no entries. */
	for (i = 1; i <= n; i += 7)
		cr_assert_eq(u64map_put(&m, i * 0x9e3779b97f4a7c15ULL | 1, (void *) (uintptr_t) i),
			     0);
	cr_expect_eq(m.len, n);
	u64map_for_each(&m, i)
	{
		uintptr_t v = (uintptr_t) m.values[i];

		cr_assert(v >= 1 && v <= n);
		cr_assert_eq(m.keys[i], v * 0x9e3779b97f4a7c15ULL | 1, "key/value mismatch");
		cr_assert_eq(seen[v], 0, "value %lu visited twice", (unsigned long) v);
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
	freed_sum += *(uint64_t *) v;
	free(v);
}

Test(u64map, free_calls_destructor_once_per_value)
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

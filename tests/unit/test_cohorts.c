// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/heap/cohorts.c: births carried from census to census, tallied per class. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cohorts.h"
#include "report.h"

#define LIVE(age) (SLOT_LIVE | (age) << 4)

static struct census_class *named(const char *name)
{
	struct census_class *cc = calloc(1, sizeof(*cc));

	cr_assert(cc);
	cc->live = 1;
	cc->name = strdup(name);
	return cc;
}

static void class_free(void *p)
{
	struct census_class *cc = p;

	free(cc->name);
	free(cc);
}

/*
 * The trace's start and two periods, one GC between each: objects kept
 * keep their birth, new ones get the period, a slot reused gets the new
 * object's, pages that appear (before and after the others) hold new ones.
 */
Test(cohorts, births_carried_over_two_periods)
{
	uint64_t key_a = 0x1000, key_b = 0x2000;
	uint32_t a = census_class_hash(key_a), b = census_class_hash(key_b);
	/* start: page X */
	uint8_t x0[4] = {LIVE(0), LIVE(0), SLOT_FREE, SLOT_FREE};
	uint32_t xc0[4] = {a, a, 0, 0};
	/* period 1: X slot 0 kept, 1 freed, 2 and 3 made (A, B); page Y appears with an A */
	uint8_t x1[4] = {LIVE(1), SLOT_FREE, LIVE(0), LIVE(1)}, y1[2] = {LIVE(0), SLOT_FREE};
	uint32_t xc1[4] = {a, 0, a, b}, yc1[2] = {a, 0};
	/* period 2: X 1 made (B), 2 kept, 3's B freed and an A three GCs old there (it was
	 * there, unseen: 0); Y 0 kept, 1 made; page Z, below X, appears with a new A */
	uint8_t z2[1] = {LIVE(0)}, x2[4] = {LIVE(2), LIVE(0), LIVE(1), LIVE(3)},
		y2[2] = {LIVE(1), LIVE(0)};
	uint32_t zc2[1] = {a}, xc2[4] = {a, b, a, a}, yc2[2] = {a, a};
	struct census_page
	    p0[1] = {{.start = 0x10000, .nslots = 4, .slot_size = 40, .slot = x0, .class_of = xc0}},
	    p1[2] = {{.start = 0x10000, .nslots = 4, .slot_size = 40, .slot = x1, .class_of = xc1},
		     {.start = 0x20000, .nslots = 2, .slot_size = 40, .slot = y1, .class_of = yc1}},
	    p2[3] = {{.start = 0x8000, .nslots = 1, .slot_size = 40, .slot = z2, .class_of = zc2},
		     {.start = 0x10000, .nslots = 4, .slot_size = 40, .slot = x2, .class_of = xc2},
		     {.start = 0x20000, .nslots = 2, .slot_size = 40, .slot = y2, .class_of = yc2}};
	struct census c0 = {.page = p0, .npage = 1, .gc_count = 5},
		      c1 = {.page = p1, .npage = 2, .gc_count = 6},
		      c2 = {.page = p2, .npage = 3, .gc_count = 7};
	struct cohorts k1, k2;
	struct report r = {0};
	struct class_row *ra;
	const uint16_t want1[6] = {0, 0, 1, 1, 1, 0}, want2[7] = {2, 0, 2, 1, 0, 1, 2};

	cr_assert_eq(cohorts_carry(&c0, NULL, &c1, 3, 1, &k1), 0);
	cr_assert_eq(k1.nslots, 6);
	cr_expect_arr_eq(k1.born, want1, sizeof(want1));
	cr_assert_eq(cohorts_carry(&c1, &k1, &c2, 3, 2, &k2), 0);
	cr_assert_eq(k2.nslots, 7);
	cr_expect_arr_eq(k2.born, want2, sizeof(want2));

	/* Per class, as the report has them: B is not reported (--class), A is. */
	cr_assert_eq(u64map_put(&c2.classes, key_a, named("A")), 0);
	cr_assert_eq(u64map_put(&c2.classes, key_b, named("B")), 0);
	cr_assert(report_row(&r, "A"));
	cr_assert_eq(cohorts_to_report(&c2, &k2, 2, &r), 0);
	cr_expect_eq(r.nrows, 1, "no row added for B");
	ra = report_find_row(&r, "A");
	cr_assert(ra && ra->have_born);
	cr_assert_eq(ra->nborn, 3);
	cr_expect_eq(ra->born[0].period, 0);
	cr_expect_eq(ra->born[0].live, 2, "X 0 from the start, X 3 old and unseen");
	cr_expect_eq(ra->born[1].period, 1);
	cr_expect_eq(ra->born[1].live, 2, "X 2 and Y 0");
	cr_expect_eq(ra->born[2].period, 2);
	cr_expect_eq(ra->born[2].live, 2, "Z 0 and Y 1");

	/* A tally the census does not match, or censuses that cannot be compared. */
	cr_expect_eq(cohorts_to_report(&c1, &k2, 2, &r), -EINVAL);
	cohorts_free(&k1);
	cr_expect_eq(cohorts_carry(&c0, &k2, &c1, 3, 1, &k1), -EINVAL, "k2 is not c0's");
	cr_expect_null(k1.born);
	c2.gc_count = 4;
	cr_expect_eq(cohorts_carry(&c1, NULL, &c2, 3, 2, &k1), -EINVAL, "GC count went back");
	cohorts_free(&k1);
	cohorts_free(&k2);
	report_free(&r);
	u64map_free(&c2.classes, class_free);
}

/* Periods past what two bytes hold count as the last one. */
Test(cohorts, periods_saturate)
{
	uint32_t a = census_class_hash(0x1000);
	uint8_t s0[1] = {SLOT_FREE}, s1[1] = {LIVE(0)};
	uint32_t c0[1] = {0}, c1[1] = {a};
	struct census_page
	    p0 = {.start = 0x10000, .nslots = 1, .slot_size = 40, .slot = s0, .class_of = c0},
	    p1 = {.start = 0x10000, .nslots = 1, .slot_size = 40, .slot = s1, .class_of = c1};
	struct census before = {.page = &p0, .npage = 1}, now = {.page = &p1, .npage = 1};
	struct cohorts k;

	cr_assert_eq(cohorts_carry(&before, NULL, &now, 3, 100000, &k), 0);
	cr_expect_eq(k.born[0], COHORT_MAX);
	cohorts_free(&k);
}

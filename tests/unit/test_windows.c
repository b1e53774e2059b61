// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/probe/windows.c: the sampling windows' weights. */
#include <criterion/criterion.h>
#include <stdint.h>
#include "windows.h"

/* A traced object's tag (probe << 56 | the probe's hit number) finds its window's weight. */
Test(windows, an_object_weighs_what_its_window_recorded)
{
	struct probes probes = {.sites.alloc_probes = 2};
	/* Hit counters of probes 0 and 1 when each of three windows opened. */
	uint64_t opened_at[] = {0, 0, 100, 40, 250, 41};
	uint32_t weight[] = {3 * RBM_WEIGHT_ONE, 60 * RBM_WEIGHT_ONE, 64 * RBM_WEIGHT_ONE};
	struct windows w = {
	    .probes = &probes, .opened_at = opened_at, .opened_weight = weight, .nopened = 3};

	cr_expect_eq(windows_weight_of(&w, 0), 3 * RBM_WEIGHT_ONE);
	cr_expect_eq(windows_weight_of(&w, 99), 3 * RBM_WEIGHT_ONE);
	cr_expect_eq(windows_weight_of(&w, 100), 60 * RBM_WEIGHT_ONE);
	cr_expect_eq(windows_weight_of(&w, 249), 60 * RBM_WEIGHT_ONE);
	cr_expect_eq(windows_weight_of(&w, 250), 64 * RBM_WEIGHT_ONE);
	cr_expect_eq(windows_weight_of(&w, 1ULL << 40), 64 * RBM_WEIGHT_ONE);
	cr_expect_eq(windows_weight_of(&w, 1ULL << 56 | 39), 3 * RBM_WEIGHT_ONE,
		     "probe 1's counter");
	cr_expect_eq(windows_weight_of(&w, 1ULL << 56 | 40), 60 * RBM_WEIGHT_ONE);
	cr_expect_eq(windows_weight_of(&w, 1ULL << 56 | 41), 64 * RBM_WEIGHT_ONE);
	cr_expect_eq(windows_weight_of(&w, 5ULL << 56 | 41), RBM_WEIGHT_ONE, "no such probe");
	w.nopened = 0;
	cr_expect_eq(windows_weight_of(&w, 7), RBM_WEIGHT_ONE, "no window: traced in full");
}

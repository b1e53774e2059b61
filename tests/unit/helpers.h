/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Fixtures the unit tests share (helpers.c). */
#ifndef RBM_TEST_HELPERS_H
#define RBM_TEST_HELPERS_H
#include "ruby_layout.h"

/* The table's layout of version (patch fields applied); the test fails if there is none. */
const struct ruby_layout *test_layout_of(const char *version);

#endif

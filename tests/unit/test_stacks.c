// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/probe/stacks.c: immediate receivers. */
#include <criterion/criterion.h>
#include <stdint.h>
#include "stacks.h"

/* A frame's receiver may be an immediate: its class comes from its tag (special_consts.h). */
Test(stacks, immediate_kinds)
{
	cr_expect_eq(immediate_kind_of(2001), IMMEDIATE_INTEGER, "Fixnum 1000");
	cr_expect_eq(immediate_kind_of(1), IMMEDIATE_INTEGER, "Fixnum 0");
	cr_expect_eq(immediate_kind_of(0x8000000000000002ULL), IMMEDIATE_FLOAT, "a flonum");
	cr_expect_eq(immediate_kind_of((0x1234ULL << 8) | 0x0c), IMMEDIATE_SYMBOL, "static Symbol");
	cr_expect_eq(immediate_kind_of(0x08), IMMEDIATE_NIL);
	cr_expect_eq(immediate_kind_of(0x14), IMMEDIATE_TRUE);
	cr_expect_eq(immediate_kind_of(0x00), IMMEDIATE_FALSE);
	cr_expect_eq(immediate_kind_of(0x7f0012345678ULL), IMMEDIATE_KINDS, "a heap object");
	cr_expect_eq(immediate_kind_of(0x34), IMMEDIATE_KINDS, "Qundef is no receiver");
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <criterion/criterion.h>
#include <stdlib.h>
#include "helpers.h"
#include "ruby_versions.h"

const struct ruby_layout *test_layout_of(const char *version)
{
	struct ruby_layout *l = malloc(sizeof(*l)); /* lives as long as the test */

	cr_assert_not_null(l);
	cr_assert_eq(ruby_versions_layout(version, l), 0, "no layout for Ruby %s", version);
	return l;
}

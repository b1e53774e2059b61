// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* class_name_fit: long class names are cut, yet stay distinct and valid UTF-8. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "classnames.h"
#include "escape.h"

static char *repeat(const char *unit, size_t times, const char *tail)
{
	size_t ulen = strlen(unit), i;
	char *s = malloc(ulen * times + strlen(tail) + 1);

	cr_assert_not_null(s);
	for (i = 0; i < times; i++)
		memcpy(s + i * ulen, unit, ulen);
	strcpy(s + ulen * times, tail);
	return s;
}

Test(classname_fit, short_names_unchanged)
{
	char *exact = repeat("A", CLASS_NAME_MAX, ""), *got;

	got = class_name_fit("Shop::Item");
	cr_expect_str_eq(got, "Shop::Item");
	free(got);
	got = class_name_fit(exact);
	cr_expect_str_eq(got, exact, "511 bytes fit as they are");
	free(got);
	free(exact);
}

Test(classname_fit, shared_600_byte_prefix_stays_distinct)
{
	char *a = repeat("x", 600, "Alpha"), *b = repeat("x", 600, "Beta");
	char *fa = class_name_fit(a), *fb = class_name_fit(b), *again = class_name_fit(a);

	cr_assert_not_null(fa);
	cr_assert_not_null(fb);
	cr_expect_leq(strlen(fa), CLASS_NAME_MAX);
	cr_expect_leq(strlen(fb), CLASS_NAME_MAX);
	cr_expect_str_neq(fa, fb);
	cr_expect_str_eq(fa, again, "the same name always gives the same text");
	cr_expect(strncmp(fa, a, 400) == 0, "the start of the name is kept");
	cr_expect(strstr(fa, "...#") != NULL, "no marker: %s", fa);
	free(a);
	free(b);
	free(fa);
	free(fb);
	free(again);
}

Test(classname_fit, cut_on_a_character_boundary)
{
	size_t shift;

	/* Multi-byte characters at every alignment against the cut. */
	for (shift = 0; shift < 4; shift++) {
		char *pad = repeat("a", shift, ""), *name, *got;
		const unsigned char *p;

		name = malloc(1200);
		cr_assert_not_null(name);
		snprintf(name, 1200, "%s%s", pad, repeat("\xf0\x9f\x98\x80\xc3\x9c", 150, ""));
		got = class_name_fit(name);
		for (p = (const unsigned char *)got; *p; p += utf8_sequence_len(p))
			cr_assert_neq(utf8_sequence_len(p), 0, "shift %zu: split character", shift);
		cr_expect_leq(strlen(got), CLASS_NAME_MAX);
		free(got);
		free(name);
		free(pad);
	}
}

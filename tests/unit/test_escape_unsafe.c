// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Characters that are valid UTF-8 yet change how a report reads: bidi
 * controls (a class named "Safe\u202eRedAtad" shows as "SafedataDeR"), line
 * separators, C1 controls; and a backslash, which made "\x41" in a name
 * look like an escape term_escape wrote.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"

static char *json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	json_write_string(f, s);
	fclose(f);
	return buf;
}

static char *folded_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	folded_write_escaped(f, s);
	fclose(f);
	return buf;
}

/* UTF-8 of one code point below U+10000. */
static void utf8_of(unsigned int cp, char *out)
{
	if (cp < 0x800) {
		out[0] = 0xc0 | (cp >> 6);
		out[1] = 0x80 | (cp & 0x3f);
		out[2] = '\0';
		return;
	}
	out[0] = 0xe0 | (cp >> 12);
	out[1] = 0x80 | ((cp >> 6) & 0x3f);
	out[2] = 0x80 | (cp & 0x3f);
	out[3] = '\0';
}

static const unsigned int unsafe[] = {0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d,
				      0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029};

Test(escape_unsafe, bidi_and_separators_escaped_in_text)
{
	char in[16], want[32], buf[64];
	size_t i;

	for (i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
		char ch[4];

		utf8_of(unsafe[i], ch);
		snprintf(in, sizeof(in), "A%sB", ch);
		snprintf(want, sizeof(want), "A\\u{%x}B", unsafe[i]);
		cr_expect_str_eq(term_escape(in, buf, sizeof(buf)), want, "U+%04X", unsafe[i]);
	}
	cr_expect_str_eq(term_escape("Safe\xe2\x80\xae" "atad", buf, sizeof(buf)),
			 "Safe\\u{202e}atad");
}

Test(escape_unsafe, bidi_separators_and_c1_escaped_in_json)
{
	char in[16], want[32];
	unsigned int cp;
	size_t i;

	for (i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
		char ch[4], *got;

		utf8_of(unsafe[i], ch);
		snprintf(in, sizeof(in), "A%sB", ch);
		snprintf(want, sizeof(want), "\"A\\u%04xB\"", unsafe[i]);
		got = json_of(in);
		cr_expect_str_eq(got, want, "U+%04X", unsafe[i]);
		free(got);
	}
	for (cp = 0x80; cp <= 0x9f; cp++) {
		char ch[4], *got;

		utf8_of(cp, ch);
		snprintf(want, sizeof(want), "\"\\u%04x\"", cp);
		got = json_of(ch);
		cr_expect_str_eq(got, want, "U+%04X", cp);
		free(got);
	}
}

Test(escape_unsafe, neighbours_are_kept)
{
	static const unsigned int safe[] = {0xa0, 0x200d, 0x2010, 0x2027, 0x202f, 0x2065, 0x206a,
					    0xfeff - 1};
	char ch[4], buf[64], want[16], *got;
	size_t i;

	for (i = 0; i < sizeof(safe) / sizeof(safe[0]); i++) {
		utf8_of(safe[i], ch);
		cr_expect_str_eq(term_escape(ch, buf, sizeof(buf)), ch, "U+%04X", safe[i]);
		snprintf(want, sizeof(want), "\"%s\"", ch);
		got = json_of(ch);
		cr_expect_str_eq(got, want, "U+%04X", safe[i]);
		free(got);
	}
}

Test(escape_unsafe, backslash_is_escaped_in_text)
{
	char buf[64];

	/* A name that reads "\x1b" is not the same as one holding ESC. */
	cr_expect_str_eq(term_escape("a\\x1b", buf, sizeof(buf)), "a\\\\x1b");
	cr_expect_str_eq(term_escape("a\x1b", buf, sizeof(buf)), "a\\x1b");
	cr_expect_str_eq(term_escape("\\", buf, sizeof(buf)), "\\\\");
	/* Neither escape is ever cut in half. */
	cr_expect_str_eq(term_escape("ab\\", buf, 4), "ab");
	cr_expect_str_eq(term_escape("a\xe2\x80\xae", buf, 9), "a");
	cr_expect_str_eq(term_escape("a\xe2\x80\xae", buf, 10), "a\\u{202e}");
}

Test(escape_unsafe, folded_frames)
{
	char *got = folded_of("Foo;Bar \x1b\xe2\x80\xae\xc2\x85\\x");

	cr_expect_str_eq(got, "Foo:Bar \\x1b\\u{202e}\\xc2\\x85\\\\x");
	free(got);
}

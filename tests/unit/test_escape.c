#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"

static char *json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	json_write_string(f, s);
	fclose(f);
	return buf;
}

#define EXPECT_JSON(in, out)                                                                       \
	do {                                                                                       \
		char *got = json_of(in);                                                           \
		cr_expect_str_eq(got, out);                                                        \
		free(got);                                                                         \
	} while (0)

Test(json, escapes_quotes_backslash_and_controls)
{
	EXPECT_JSON("plain", "\"plain\"");
	EXPECT_JSON("a\"b\\c", "\"a\\\"b\\\\c\"");
	EXPECT_JSON("l1\nl2\r\t", "\"l1\\nl2\\r\\t\"");
	EXPECT_JSON("\x1b[31m", "\"\\u001b[31m\"");
	EXPECT_JSON("\x7f", "\"\\u007f\"");
}

Test(json, keeps_valid_utf8_and_replaces_invalid)
{
	EXPECT_JSON("\xc3\x9cn\xc3\xaf" "code", "\"\xc3\x9cn\xc3\xaf" "code\"");
	EXPECT_JSON("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
	EXPECT_JSON("a\xff" "b", "\"a\\ufffdb\"");
	EXPECT_JSON("\xc0\x80", "\"\\ufffd\\ufffd\"");     /* overlong NUL */
	EXPECT_JSON("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
	EXPECT_JSON("\xe2\x82", "\"\\ufffd\\ufffd\"");     /* truncated */
}

Test(term, escapes_controls_and_c1)
{
	char buf[64];

	cr_expect_str_eq(term_escape("Foo::Bar", buf, sizeof(buf)), "Foo::Bar");
	cr_expect_str_eq(term_escape("a\x1b[2Jb", buf, sizeof(buf)), "a\\x1b[2Jb");
	cr_expect_str_eq(term_escape("x\ny", buf, sizeof(buf)), "x\\x0ay");
	cr_expect_str_eq(term_escape("\xc2\x9b" "1m", buf, sizeof(buf)), "\\xc2\\x9b1m");
	cr_expect_str_eq(term_escape("\xc3\x9c", buf, sizeof(buf)), "\xc3\x9c");
	cr_expect_str_eq(term_escape("\xff", buf, sizeof(buf)), "\\xff");
}

Test(term, truncates_without_splitting_escapes)
{
	char buf[6];

	cr_expect_str_eq(term_escape("ab\x1b" "cd", buf, sizeof(buf)), "ab");
	cr_expect_str_eq(term_escape("abcdefgh", buf, sizeof(buf)), "abcde");
	cr_expect_eq(strlen(term_escape("\xc3\x9c\xc3\x9c\xc3\x9c", buf, sizeof(buf))), 4);
}

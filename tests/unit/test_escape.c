// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/output/escape.c: UTF-8 sequences, JSON strings, terminal and folded-line escaping. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"
#include "helpers.h"

#define EXPECT_JSON(in, out)                                                                       \
	do {                                                                                       \
		char *got = test_json_of(in);                                                      \
		cr_expect_str_eq(got, out);                                                        \
		free(got);                                                                         \
	} while (0)

Test(escape, json_escapes_quotes_backslash_and_controls)
{
	EXPECT_JSON("plain", "\"plain\"");
	EXPECT_JSON("a\"b\\c", "\"a\\\"b\\\\c\"");
	EXPECT_JSON("l1\nl2\r\t", "\"l1\\nl2\\r\\t\"");
	EXPECT_JSON("\x1b[31m", "\"\\u001b[31m\"");
	EXPECT_JSON("\x7f", "\"\\u007f\"");
}

Test(escape, json_keeps_valid_utf8_and_replaces_invalid)
{
	EXPECT_JSON("\xc3\x9cn\xc3\xaf"
		    "code",
		    "\"\xc3\x9cn\xc3\xaf"
		    "code\"");
	EXPECT_JSON("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
	EXPECT_JSON("a\xff"
		    "b",
		    "\"a\\ufffdb\"");
	EXPECT_JSON("\xc0\x80", "\"\\ufffd\\ufffd\"");		  /* overlong NUL */
	EXPECT_JSON("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
	EXPECT_JSON("\xe2\x82", "\"\\ufffd\\ufffd\"");		  /* truncated */
}

Test(escape, term_escapes_controls_and_c1)
{
	char buf[64];

	cr_expect_str_eq(term_escape("Foo::Bar", buf, sizeof(buf)), "Foo::Bar");
	cr_expect_str_eq(term_escape("a\x1b[2Jb", buf, sizeof(buf)), "a\\x1b[2Jb");
	cr_expect_str_eq(term_escape("x\ny", buf, sizeof(buf)), "x\\x0ay");
	cr_expect_str_eq(term_escape("\xc2\x9b"
				     "1m",
				     buf, sizeof(buf)),
			 "\\xc2\\x9b1m");
	cr_expect_str_eq(term_escape("\xc3\x9c", buf, sizeof(buf)), "\xc3\x9c");
	cr_expect_str_eq(term_escape("\xff", buf, sizeof(buf)), "\\xff");
}

Test(escape, term_truncates_without_splitting_escapes)
{
	char buf[6];

	cr_expect_str_eq(term_escape("ab\x1b"
				     "cd",
				     buf, sizeof(buf)),
			 "ab");
	cr_expect_str_eq(term_escape("abcdefgh", buf, sizeof(buf)), "abcde");
	cr_expect_eq(strlen(term_escape("\xc3\x9c\xc3\x9c\xc3\x9c", buf, sizeof(buf))), 4);
}

/* An encoder written for the test: cp -> UTF-8 (no checks), returns the length. */
static size_t encode_utf8(uint32_t cp, unsigned char *out)
{
	if (cp < 0x80) {
		out[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = 0xc0 | (cp >> 6);
		out[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = 0xe0 | (cp >> 12);
		out[1] = 0x80 | ((cp >> 6) & 0x3f);
		out[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	out[0] = 0xf0 | (cp >> 18);
	out[1] = 0x80 | ((cp >> 12) & 0x3f);
	out[2] = 0x80 | ((cp >> 6) & 0x3f);
	out[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/* Overlong form of cp in exactly len bytes (len larger than needed). */
static void encode_overlong(uint32_t cp, size_t len, unsigned char *out)
{
	static const unsigned char lead[] = {0, 0, 0xc0, 0xe0, 0xf0};
	size_t i;

	for (i = len - 1; i > 0; i--) {
		out[i] = 0x80 | (cp & 0x3f);
		cp >>= 6;
	}
	out[0] = lead[len] | cp;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A strict decoder of one JSON string literal, written for the test: returns
 * the decoded bytes (malloc'd) or NULL if the literal is not valid JSON (raw
 * control characters, bad escapes, text after the closing quote).
 */
static char *json_decode(const char *lit)
{
	size_t n = strlen(lit), o = 0, i;
	char *out = malloc(n * 2 + 1);

	cr_assert_not_null(out);
	if (n < 2 || lit[0] != '"')
		goto bad;
	for (i = 1; i < n; i++) {
		unsigned char c = lit[i];

		if (c == '"')
			break;
		if (c < 0x20)
			goto bad;
		if (c != '\\') {
			out[o++] = c;
			continue;
		}
		c = lit[++i];
		switch (c) {
		case '"':
		case '\\':
		case '/':
			out[o++] = c;
			break;
		case 'n':
			out[o++] = '\n';
			break;
		case 'r':
			out[o++] = '\r';
			break;
		case 't':
			out[o++] = '\t';
			break;
		case 'b':
			out[o++] = '\b';
			break;
		case 'f':
			out[o++] = '\f';
			break;
		case 'u': {
			uint32_t cp = 0;
			int k, h;

			for (k = 1; k <= 4; k++) {
				h = hexval(lit[i + k]);
				if (h < 0)
					goto bad;
				cp = cp * 16 + h;
			}
			i += 4;
			if (cp >= 0xd800 && cp <= 0xdfff) /* the writer never needs pairs */
				goto bad;
			o += encode_utf8(cp, (unsigned char *) out + o);
			break;
		}
		default:
			goto bad;
		}
	}
	if (i != n - 1) /* no closing quote, or text after it */
		goto bad;
	out[o] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

Test(escape, utf8_sequence_len_of_every_code_point)
{
	unsigned char buf[5];
	uint32_t cp;
	size_t len;

	for (cp = 1; cp <= 0x10ffff; cp++) {
		memset(buf, 0, sizeof(buf));
		len = encode_utf8(cp, buf);
		if (cp >= 0xd800 && cp <= 0xdfff)
			cr_assert_eq(utf8_sequence_len(buf), 0, "surrogate U+%04X accepted", cp);
		else
			cr_assert_eq(utf8_sequence_len(buf), len, "U+%04X", cp);
	}
}

Test(escape, utf8_rejects_overlong_and_out_of_range)
{
	unsigned char buf[5];
	uint32_t cp;

	for (cp = 0; cp < 0x10000; cp++) {
		memset(buf, 0, sizeof(buf));
		if (cp < 0x80) {
			encode_overlong(cp, 2, buf);
			cr_assert_eq(utf8_sequence_len(buf), 0, "2-byte overlong U+%04X", cp);
		}
		if (cp < 0x800) {
			encode_overlong(cp, 3, buf);
			cr_assert_eq(utf8_sequence_len(buf), 0, "3-byte overlong U+%04X", cp);
		}
		encode_overlong(cp, 4, buf);
		cr_assert_eq(utf8_sequence_len(buf), 0, "4-byte overlong U+%04X", cp);
	}
	/* Past U+10FFFF: f4 90 80 80 up to f7 bf bf bf. */
	for (cp = 0x110000; cp < 0x200000; cp += 0x3f) {
		encode_utf8(cp, buf);
		cr_assert_eq(utf8_sequence_len(buf), 0, "U+%X accepted", cp);
	}
}

Test(escape, utf8_sequence_len_cases)
{
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "A"), 1);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\x7f"), 1);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) ""), 1, "NUL is ASCII");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xc3\x9c"), 2);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xe2\x82\xac"), 3);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xf0\x9f\x98\x80"), 4);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xed\x9f\xbf"), 3, "U+D7FF");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xee\x80\x80"), 3, "U+E000");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xf4\x8f\xbf\xbf"), 4, "U+10FFFF");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xf4\x90\x80\x80"), 0, "U+110000");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\x80"), 0, "lone continuation");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xbf"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xff"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xfe"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xf8\x88\x80\x80\x80"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xc0\x80"), 0, "overlong NUL");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xc1\xbf"), 0, "overlong DEL");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xe0\x80\xaf"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xed\xa0\x80"), 0, "U+D800");
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xed\xbf\xbf"), 0, "U+DFFF");
	/* Truncated by the end of the string, or by an ASCII byte. */
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xe2\x82"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xf0\x9f\x98"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xc3"
							       "A"),
		     0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *) "\xe2\x82"
							       "A"),
		     0);
}

Test(escape, json_every_control_character)
{
	static const char *const named[] = {['\t'] = "\\t", ['\n'] = "\\n", ['\r'] = "\\r"};
	char in[2] = "", want[16];
	char *got;
	int c;

	for (c = 1; c < 0x20; c++) {
		in[0] = c;
		if (c < (int) (sizeof(named) / sizeof(named[0])) && named[c])
			snprintf(want, sizeof(want), "\"%s\"", named[c]);
		else
			snprintf(want, sizeof(want), "\"\\u%04x\"", c);
		got = test_json_of(in);
		cr_expect_str_eq(got, want, "byte 0x%02x", c);
		free(got);
	}
	got = test_json_of("a\x01"
			   "b\x1f"
			   "c\x7f"
			   "d\x08");
	cr_expect_str_eq(got, "\"a\\u0001b\\u001fc\\u007fd\\u0008\"");
	free(got);
}

Test(escape, json_plain_text_untouched)
{
	char *got;

	got = test_json_of("");
	cr_expect_str_eq(got, "\"\"");
	free(got);
	got = test_json_of(" ~/path/to:file.rb #<Class:0x00007f> {}[],'");
	cr_expect_str_eq(got, "\" ~/path/to:file.rb #<Class:0x00007f> {}[],'\"");
	free(got);
}

Test(escape, json_mixed_invalid_and_valid_utf8)
{
	char *got;

	/* Each bad byte becomes one U+FFFD; the valid sequence after it survives. */
	got = test_json_of("\xff\xc3\x9c"
			   "x\xc3");
	cr_expect_str_eq(got, "\"\\ufffd\xc3\x9cx\\ufffd\"");
	free(got);
	got = test_json_of("\xf0\x9f\x98"
			   "A"); /* emoji cut short */
	cr_expect_str_eq(got, "\"\\ufffd\\ufffd\\ufffdA\"");
	free(got);
	got = test_json_of("\xf4\x90\x80\x80"); /* past U+10FFFF */
	cr_expect_str_eq(got, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	free(got);
	/* C1 controls are legal in JSON but drive a terminal that shows the file: escaped. */
	got = test_json_of("\xc2\x9b");
	cr_expect_str_eq(got, "\"\\u009b\"");
	free(got);
}

/* Every code point survives json_write_string and a strict decoder unchanged. */
Test(escape, json_round_trips_every_code_point)
{
	static unsigned char in[4096 * 4 + 1];
	uint32_t cp = 1;

	while (cp <= 0x10ffff) {
		size_t n = 0, count = 0;
		char *lit, *back;

		while (cp <= 0x10ffff && count < 4096) {
			if (cp < 0xd800 || cp > 0xdfff) {
				n += encode_utf8(cp, in + n);
				count++;
			}
			cp++;
		}
		in[n] = '\0';
		lit = test_json_of((const char *) in);
		back = json_decode(lit);
		cr_assert_not_null(back, "not a valid JSON string before U+%04X", cp);
		cr_assert_eq(strcmp(back, (const char *) in), 0, "round trip differs before U+%04X",
			     cp);
		free(back);
		free(lit);
	}
}

/* Any two bytes: still one valid JSON string, valid UTF-8, no raw controls. */
Test(escape, json_any_bytes_give_valid_json)
{
	unsigned char in[5] = "x";
	int a, b;

	for (a = 1; a < 256; a++) {
		for (b = 1; b < 256; b++) {
			char *lit, *back;
			const unsigned char *p;

			in[1] = a;
			in[2] = b;
			in[3] = 'y';
			lit = test_json_of((const char *) in);
			back = json_decode(lit);
			cr_assert_not_null(back, "bytes %02x %02x: %s", a, b, lit);
			for (p = (const unsigned char *) lit; *p; p += utf8_sequence_len(p))
				cr_assert_neq(utf8_sequence_len(p), 0, "bytes %02x %02x: bad UTF-8",
					      a, b);
			/* Bytes that were valid UTF-8 are decoded back exactly. */
			if (utf8_sequence_len(in + 1) == 2 ||
			    (utf8_sequence_len(in + 1) == 1 && utf8_sequence_len(in + 2) == 1))
				cr_assert_str_eq(back, (const char *) in, "bytes %02x %02x", a, b);
			free(back);
			free(lit);
		}
	}
}

/* True if buf holds a byte (or C1 sequence) that a terminal would act on. */
static bool has_terminal_control(const char *buf)
{
	const unsigned char *p = (const unsigned char *) buf;

	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return true;
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			return true;
	}
	return false;
}

static bool all_valid_utf8(const char *buf)
{
	const unsigned char *p = (const unsigned char *) buf;
	size_t len;

	while (*p) {
		len = utf8_sequence_len(p);
		if (!len)
			return false;
		p += len;
	}
	return true;
}

Test(escape, term_no_control_gets_through_any_three_bytes)
{
	unsigned char in[6] = "x";
	char out[64];
	int a, b, c;

	for (a = 1; a < 256; a++) {
		for (b = 1; b < 256; b += (a < 0xc0 ? 17 : 1)) {
			for (c = 0x80; c < 0xc0; c += 0x1f) {
				in[1] = a;
				in[2] = b;
				in[3] = c;
				in[4] = 'y';
				term_escape((const char *) in, out, sizeof(out));
				cr_assert(!has_terminal_control(out), "%02x %02x %02x -> %s", a, b,
					  c, out);
				cr_assert(all_valid_utf8(out), "%02x %02x %02x", a, b, c);
				cr_assert_eq(out[0], 'x');
				cr_assert_eq(out[strlen(out) - 1], 'y', "%02x %02x %02x lost bytes",
					     a, b, c);
			}
		}
	}
}

Test(escape, term_c1_range_boundaries)
{
	char buf[64];

	cr_expect_str_eq(term_escape("\xc2\x80", buf, sizeof(buf)), "\\xc2\\x80");
	cr_expect_str_eq(term_escape("\xc2\x9f", buf, sizeof(buf)), "\\xc2\\x9f");
	/* U+00A0 and U+00BF are printable: kept. */
	cr_expect_str_eq(term_escape("\xc2\xa0", buf, sizeof(buf)), "\xc2\xa0");
	cr_expect_str_eq(term_escape("\xc2\xbf", buf, sizeof(buf)), "\xc2\xbf");
	/* 0xc2 before an ASCII byte is invalid; the DEL after it is escaped too. */
	cr_expect_str_eq(term_escape("\xc2\x7f", buf, sizeof(buf)), "\\xc2\\x7f");
	cr_expect_str_eq(term_escape("\x7f", buf, sizeof(buf)), "\\x7f");
	cr_expect_str_eq(term_escape("\t\r", buf, sizeof(buf)), "\\x09\\x0d");
	/* An overlong ESC (c0 9b) must not come through either. */
	cr_expect_str_eq(term_escape("\xc0\x9b", buf, sizeof(buf)), "\\xc0\\x9b");
}

Test(escape, term_keeps_valid_utf8)
{
	char buf[64];

	cr_expect_str_eq(term_escape("\xc3\x9cn\xc3\xaf"
				     "code",
				     buf, sizeof(buf)),
			 "\xc3\x9cn\xc3\xaf"
			 "code");
	cr_expect_str_eq(term_escape("\xf0\x9f\x98\x80!", buf, sizeof(buf)), "\xf0\x9f\x98\x80!");
	cr_expect_str_eq(term_escape("\xe2\x82\xac", buf, sizeof(buf)), "\xe2\x82\xac");
	cr_expect_str_eq(term_escape("", buf, sizeof(buf)), "");
	/* Truncated and surrogate sequences: each byte shown. */
	cr_expect_str_eq(term_escape("\xe2\x82", buf, sizeof(buf)), "\\xe2\\x82");
	cr_expect_str_eq(term_escape("\xed\xa0\x80", buf, sizeof(buf)), "\\xed\\xa0\\x80");
}

Test(escape, term_truncation_sizes)
{
	char buf[16];

	/* n == 0: nothing written at all. */
	memset(buf, 'Z', sizeof(buf));
	cr_expect_eq(term_escape("abc", buf, 0), buf);
	cr_expect_eq(buf[0], 'Z');
	/* n == 1: only the terminator fits. */
	cr_expect_str_eq(term_escape("abc", buf, 1), "");
	/* Exactly fits. */
	cr_expect_str_eq(term_escape("abc", buf, 4), "abc");
	cr_expect_str_eq(term_escape("abcd", buf, 4), "abc");
	cr_expect_str_eq(term_escape("\x1b", buf, 5), "\\x1b");
	cr_expect_str_eq(term_escape("\x1b", buf, 4), "", "a partial \\x1 must not appear");
	cr_expect_str_eq(term_escape("a\x1b", buf, 5), "a");
	/* A multi-byte character is never split, and nothing after it is shown. */
	cr_expect_str_eq(term_escape("a\xc3\x9c", buf, 3), "a");
	cr_expect_str_eq(term_escape("a\xc3\x9c", buf, 4), "a\xc3\x9c");
	cr_expect_str_eq(term_escape("ab\xe2\x82\xac"
				     "c",
				     buf, 5),
			 "ab");
	cr_expect_str_eq(term_escape("\xf0\x9f\x98\x80", buf, 4), "");
	cr_expect_str_eq(term_escape("\xf0\x9f\x98\x80", buf, 5), "\xf0\x9f\x98\x80");
}

/* Whether k bytes into term_escape output (of input without backslashes) ends a unit. */
static bool is_unit_boundary(const char *out, size_t k)
{
	const unsigned char *p = (const unsigned char *) out;
	size_t at = 0, len;

	while (at < k && p[at]) {
		len = p[at] == '\\' ? 4 : utf8_sequence_len(p + at);
		if (!len)
			return false;
		at += len;
	}
	return at == k;
}

Test(escape, term_truncation_never_overruns)
{
	static const char *const inputs[] = {"\x1b[2J\x1b[H", "\xc3\x9c\xc3\x9c\xc3\x9c\xc3\x9c",
					     "ab\xff\xfe"
					     "cd",
					     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80"};
	char buf[40];
	size_t i, n;

	for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		char full[64];

		term_escape(inputs[i], full, sizeof(full));
		for (n = 1; n < 24; n++) {
			memset(buf, 'Z', sizeof(buf));
			term_escape(inputs[i], buf, n);
			cr_assert_lt(strlen(buf), n, "input %zu, n %zu", i, n);
			cr_assert_eq(buf[n], 'Z', "input %zu, n %zu: wrote past the buffer", i, n);
			/* A prefix of the untruncated output, cut at a whole unit. */
			cr_assert_eq(strncmp(buf, full, strlen(buf)), 0, "input %zu, n %zu", i, n);
			cr_assert(all_valid_utf8(buf), "input %zu, n %zu", i, n);
			cr_assert(is_unit_boundary(full, strlen(buf)), "input %zu, n %zu: %s", i, n,
				  buf);
			cr_assert(!has_terminal_control(buf));
		}
	}
}

/*
 * Characters that are valid UTF-8 yet change how a report reads: bidi
 * controls (a class named "Safe\u202eRedAtad" shows as "SafedataDeR"), line
 * separators, C1 controls; and a backslash, which made "\x41" in a name
 * look like an escape term_escape wrote.
 */
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

/* UTF-8 of one code point, NUL-terminated. */
static void utf8_of(unsigned int cp, char *out)
{
	out[encode_utf8(cp, (unsigned char *) out)] = '\0';
}

static const unsigned int unsafe[] = {0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
				      0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029};

Test(escape, bidi_and_separators_escaped_in_text)
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
	cr_expect_str_eq(term_escape("Safe\xe2\x80\xae"
				     "atad",
				     buf, sizeof(buf)),
			 "Safe\\u{202e}atad");
}

Test(escape, bidi_separators_and_c1_escaped_in_json)
{
	char in[16], want[32];
	unsigned int cp;
	size_t i;

	for (i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
		char ch[4], *got;

		utf8_of(unsafe[i], ch);
		snprintf(in, sizeof(in), "A%sB", ch);
		snprintf(want, sizeof(want), "\"A\\u%04xB\"", unsafe[i]);
		got = test_json_of(in);
		cr_expect_str_eq(got, want, "U+%04X", unsafe[i]);
		free(got);
	}
	for (cp = 0x80; cp <= 0x9f; cp++) {
		char ch[4], *got;

		utf8_of(cp, ch);
		snprintf(want, sizeof(want), "\"\\u%04x\"", cp);
		got = test_json_of(ch);
		cr_expect_str_eq(got, want, "U+%04X", cp);
		free(got);
	}
}

Test(escape, neighbours_are_kept)
{
	static const unsigned int safe[] = {0xa0,   0x200d, 0x2010, 0x2027,
					    0x202f, 0x2065, 0x206a, 0xfeff - 1};
	char ch[4], buf[64], want[16], *got;
	size_t i;

	for (i = 0; i < sizeof(safe) / sizeof(safe[0]); i++) {
		utf8_of(safe[i], ch);
		cr_expect_str_eq(term_escape(ch, buf, sizeof(buf)), ch, "U+%04X", safe[i]);
		snprintf(want, sizeof(want), "\"%s\"", ch);
		got = test_json_of(ch);
		cr_expect_str_eq(got, want, "U+%04X", safe[i]);
		free(got);
	}
}

Test(escape, backslash_is_escaped_in_text)
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

Test(escape, folded_frames)
{
	char *got = folded_of("Foo;Bar \x1b\xe2\x80\xae\xc2\x85\\x");

	cr_expect_str_eq(got, "Foo:Bar \\x1b\\u{202e}\\xc2\\x85\\\\x");
	free(got);
}

/* For JSON inside an HTML <script>: nothing can close the element, nor break a JS line. */
Test(escape, json_for_html_escapes_markup)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	json_write_string_html(f, "</script><!-- a&b \xe2\x80\xa8\xe2\x80\xae\"");
	fclose(f);
	cr_expect_str_eq(buf, "\"\\u003c/script\\u003e\\u003c!-- a\\u0026b \\u2028\\u202e\\\"\"");
	free(buf);
}

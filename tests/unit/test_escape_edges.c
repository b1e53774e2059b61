// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Edge cases of user/output/escape.c beyond test_escape.c: utf8_sequence_len checked
 * exhaustively against an independent encoder, JSON strings decoded back, and
 * term_escape's promise that no byte able to drive a terminal gets through.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "escape.h"

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
			o += encode_utf8(cp, (unsigned char *)out + o);
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

Test(utf8, sequence_len_of_every_code_point)
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

Test(utf8, rejects_overlong_and_out_of_range)
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

Test(utf8, sequence_len_cases)
{
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"A"), 1);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\x7f"), 1);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)""), 1, "NUL is ASCII");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xc3\x9c"), 2);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xe2\x82\xac"), 3);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xf0\x9f\x98\x80"), 4);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xed\x9f\xbf"), 3, "U+D7FF");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xee\x80\x80"), 3, "U+E000");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xf4\x8f\xbf\xbf"), 4, "U+10FFFF");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xf4\x90\x80\x80"), 0, "U+110000");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\x80"), 0, "lone continuation");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xbf"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xff"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xfe"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xf8\x88\x80\x80\x80"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xc0\x80"), 0, "overlong NUL");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xc1\xbf"), 0, "overlong DEL");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xe0\x80\xaf"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xed\xa0\x80"), 0, "U+D800");
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xed\xbf\xbf"), 0, "U+DFFF");
	/* Truncated by the end of the string, or by an ASCII byte. */
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xe2\x82"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xf0\x9f\x98"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xc3" "A"), 0);
	cr_expect_eq(utf8_sequence_len((const unsigned char *)"\xe2\x82" "A"), 0);
}

Test(json_edges, every_control_character)
{
	static const char *const named[] = {['\t'] = "\\t", ['\n'] = "\\n", ['\r'] = "\\r"};
	char in[2] = "", want[16];
	char *got;
	int c;

	for (c = 1; c < 0x20; c++) {
		in[0] = c;
		if (c < (int)(sizeof(named) / sizeof(named[0])) && named[c])
			snprintf(want, sizeof(want), "\"%s\"", named[c]);
		else
			snprintf(want, sizeof(want), "\"\\u%04x\"", c);
		got = json_of(in);
		cr_expect_str_eq(got, want, "byte 0x%02x", c);
		free(got);
	}
	got = json_of("a\x01" "b\x1f" "c\x7f" "d\x08");
	cr_expect_str_eq(got, "\"a\\u0001b\\u001fc\\u007fd\\u0008\"");
	free(got);
}

Test(json_edges, plain_text_untouched)
{
	char *got;

	got = json_of("");
	cr_expect_str_eq(got, "\"\"");
	free(got);
	got = json_of(" ~/path/to:file.rb #<Class:0x00007f> {}[],'");
	cr_expect_str_eq(got, "\" ~/path/to:file.rb #<Class:0x00007f> {}[],'\"");
	free(got);
}

Test(json_edges, mixed_invalid_and_valid_utf8)
{
	char *got;

	/* Each bad byte becomes one U+FFFD; the valid sequence after it survives. */
	got = json_of("\xff\xc3\x9c" "x\xc3");
	cr_expect_str_eq(got, "\"\\ufffd\xc3\x9cx\\ufffd\"");
	free(got);
	got = json_of("\xf0\x9f\x98" "A"); /* emoji cut short */
	cr_expect_str_eq(got, "\"\\ufffd\\ufffd\\ufffdA\"");
	free(got);
	got = json_of("\xf4\x90\x80\x80"); /* past U+10FFFF */
	cr_expect_str_eq(got, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	free(got);
	/* C1 controls are legal in JSON but drive a terminal that shows the file: escaped. */
	got = json_of("\xc2\x9b");
	cr_expect_str_eq(got, "\"\\u009b\"");
	free(got);
}

/* Every code point survives json_write_string and a strict decoder unchanged. */
Test(json_edges, round_trips_every_code_point)
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
		lit = json_of((const char *)in);
		back = json_decode(lit);
		cr_assert_not_null(back, "not a valid JSON string before U+%04X", cp);
		cr_assert_eq(strcmp(back, (const char *)in), 0, "round trip differs before U+%04X",
			     cp);
		free(back);
		free(lit);
	}
}

/* Any two bytes: still one valid JSON string, valid UTF-8, no raw controls. */
Test(json_edges, any_bytes_give_valid_json)
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
			lit = json_of((const char *)in);
			back = json_decode(lit);
			cr_assert_not_null(back, "bytes %02x %02x: %s", a, b, lit);
			for (p = (const unsigned char *)lit; *p; p += utf8_sequence_len(p))
				cr_assert_neq(utf8_sequence_len(p), 0, "bytes %02x %02x: bad UTF-8",
					      a, b);
			/* Bytes that were valid UTF-8 are decoded back exactly. */
			if (utf8_sequence_len(in + 1) == 2 ||
			    (utf8_sequence_len(in + 1) == 1 && utf8_sequence_len(in + 2) == 1))
				cr_assert_str_eq(back, (const char *)in, "bytes %02x %02x", a, b);
			free(back);
			free(lit);
		}
	}
}

/* True if buf holds a byte (or C1 sequence) that a terminal would act on. */
static bool has_terminal_control(const char *buf)
{
	const unsigned char *p = (const unsigned char *)buf;

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
	const unsigned char *p = (const unsigned char *)buf;
	size_t len;

	while (*p) {
		len = utf8_sequence_len(p);
		if (!len)
			return false;
		p += len;
	}
	return true;
}

Test(term_edges, no_control_gets_through_any_three_bytes)
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
				term_escape((const char *)in, out, sizeof(out));
				cr_assert(!has_terminal_control(out), "%02x %02x %02x -> %s", a, b, c,
					  out);
				cr_assert(all_valid_utf8(out), "%02x %02x %02x", a, b, c);
				cr_assert_eq(out[0], 'x');
				cr_assert_eq(out[strlen(out) - 1], 'y', "%02x %02x %02x lost bytes", a,
					     b, c);
			}
		}
	}
}

Test(term_edges, c1_range_boundaries)
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

Test(term_edges, keeps_valid_utf8)
{
	char buf[64];

	cr_expect_str_eq(term_escape("\xc3\x9cn\xc3\xaf" "code", buf, sizeof(buf)),
			 "\xc3\x9cn\xc3\xaf" "code");
	cr_expect_str_eq(term_escape("\xf0\x9f\x98\x80!", buf, sizeof(buf)), "\xf0\x9f\x98\x80!");
	cr_expect_str_eq(term_escape("\xe2\x82\xac", buf, sizeof(buf)), "\xe2\x82\xac");
	cr_expect_str_eq(term_escape("", buf, sizeof(buf)), "");
	/* Truncated and surrogate sequences: each byte shown. */
	cr_expect_str_eq(term_escape("\xe2\x82", buf, sizeof(buf)), "\\xe2\\x82");
	cr_expect_str_eq(term_escape("\xed\xa0\x80", buf, sizeof(buf)), "\\xed\\xa0\\x80");
}

Test(term_edges, truncation_sizes)
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
	cr_expect_str_eq(term_escape("ab\xe2\x82\xac" "c", buf, 5), "ab");
	cr_expect_str_eq(term_escape("\xf0\x9f\x98\x80", buf, 4), "");
	cr_expect_str_eq(term_escape("\xf0\x9f\x98\x80", buf, 5), "\xf0\x9f\x98\x80");
}

/* Whether k bytes into term_escape output (of input without backslashes) ends a unit. */
static bool is_unit_boundary(const char *out, size_t k)
{
	const unsigned char *p = (const unsigned char *)out;
	size_t at = 0, len;

	while (at < k && p[at]) {
		len = p[at] == '\\' ? 4 : utf8_sequence_len(p + at);
		if (!len)
			return false;
		at += len;
	}
	return at == k;
}

Test(term_edges, truncation_never_overruns)
{
	static const char *const inputs[] = {"\x1b[2J\x1b[H", "\xc3\x9c\xc3\x9c\xc3\x9c\xc3\x9c",
					     "ab\xff\xfe" "cd", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80"};
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

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "escape.h"

size_t utf8_sequence_len(const unsigned char *s)
{
	unsigned int cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* The code point of a valid sequence of len bytes (utf8_sequence_len's). */
static unsigned int utf8_decode(const unsigned char *s, size_t len)
{
	static const unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	unsigned int cp = s[0] & lead_mask[len];
	size_t i;

	for (i = 1; i < len; i++)
		cp = (cp << 6) | (s[i] & 0x3f);
	return cp;
}

bool unicode_is_unsafe(unsigned int cp)
{
	return (cp >= 0x80 && cp <= 0x9f) ||	 /* C1 controls: CSI (U+009B) drives terminals */
	       cp == 0x200e || cp == 0x200f ||	 /* LRM, RLM */
	       (cp >= 0x202a && cp <= 0x202e) || /* LRE..RLO: reorder the rest of the line */
	       (cp >= 0x2066 && cp <= 0x2069) || /* LRI..PDI */
	       cp == 0x2028 || cp == 0x2029;	 /* line and paragraph separators */
}

/* html: '<', '>' and '&' as \u escapes too, for JSON inside an HTML <script>. */
static void json_string(FILE *out, const char *str, bool html)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len;

	fputc('"', out);
	while (*s) {
		switch (*s) {
		case '<':
		case '>':
		case '&':
			if (html)
				fprintf(out, "\\u%04x", *s);
			else
				fputc(*s, out);
			break;
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (*s < 0x20 || *s == 0x7f) {
				fprintf(out, "\\u%04x", *s);
				break;
			}
			len = utf8_sequence_len(s);
			if (!len) {
				fputs("\\ufffd", out);
				break;
			}
			/* Valid JSON either way; escaped, a report shown raw cannot be reordered. */
			if (len > 1 && unicode_is_unsafe(utf8_decode(s, len))) {
				fprintf(out, "\\u%04x", utf8_decode(s, len));
				s += len;
				continue;
			}
			fwrite(s, 1, len, out);
			s += len;
			continue;
		}
		s++;
	}
	fputc('"', out);
}

void json_write_string(FILE *out, const char *s)
{
	json_string(out, s, false);
}

void json_write_string_html(FILE *out, const char *s)
{
	json_string(out, s, true);
}

/*
 * The display form of the character at s: itself, or its escape.  Writes at
 * most 16 bytes (unterminated) to out, returns their count and sets *used to
 * the input bytes it stands for.
 */
static size_t term_unit(const unsigned char *s, char *out, size_t *used)
{
	size_t len = utf8_sequence_len(s);

	/* C0 and C1 controls and DEL can move the cursor or start escapes. */
	if (!len || *s < 0x20 || *s == 0x7f || (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)) {
		*used = 1;
		return snprintf(out, 16, "\\x%02x", *s);
	}
	*used = len;
	if (*s == '\\') { /* else a name holding "\\x41" would read as an escaped 'A' */
		memcpy(out, "\\\\", 2);
		return 2;
	}
	if (len > 1 && unicode_is_unsafe(utf8_decode(s, len)))
		return snprintf(out, 16, "\\u{%x}", utf8_decode(s, len));
	memcpy(out, s, len);
	return len;
}

char *term_escape(const char *str, char *buf, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t used = 0, len, in;
	char unit[16];

	if (!n)
		return buf;
	while (*s) {
		len = term_unit(s, unit, &in);
		if (used + len >= n) /* never half an escape or half a character */
			break;
		memcpy(buf + used, unit, len);
		used += len;
		s += in;
	}
	buf[used] = '\0';
	return buf;
}

void folded_write_escaped(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len, in;
	char unit[16];

	while (*s) {
		if (*s == ';') { /* the frame separator of the format */
			fputc(':', out);
			s++;
			continue;
		}
		len = term_unit(s, unit, &in);
		fwrite(unit, 1, len, out);
		s += in;
	}
}

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

void json_write_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len;

	fputc('"', out);
	while (*s) {
		switch (*s) {
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
			fwrite(s, 1, len, out);
			s += len;
			continue;
		}
		s++;
	}
	fputc('"', out);
}

char *term_escape(const char *str, char *buf, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t used = 0, len;

	if (!n)
		return buf;
	while (*s) {
		len = utf8_sequence_len(s);
		/* C0 and C1 controls and DEL can move the cursor or start escapes. */
		if (!len || *s < 0x20 || *s == 0x7f || (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)) {
			if (used + 4 >= n)
				break;
			snprintf(buf + used, 5, "\\x%02x", *s);
			used += 4;
			s++;
			continue;
		}
		if (used + len >= n)
			break;
		memcpy(buf + used, s, len);
		used += len;
		s += len;
	}
	buf[used] = '\0';
	return buf;
}

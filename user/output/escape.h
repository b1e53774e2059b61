/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Escaping of untrusted strings read from the target (class names, paths). */
#ifndef RBM_ESCAPE_H
#define RBM_ESCAPE_H
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>

/* Writes s as a JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD. */
void json_write_string(FILE *out, const char *s);
/*
 * The same for JSON put inside an HTML <script> element: '<', '>' and '&'
 * are written as \u003c, \u003e and \u0026 too (U+2028 and U+2029 already
 * are), so no string can close the element or open a comment in it.
 */
void json_write_string_html(FILE *out, const char *s);

/*
 * Copies s into buf (size n, always terminated) with control characters and
 * invalid UTF-8 bytes shown as \xNN, bidi controls and U+2028/9 as \u{202e},
 * and a backslash as \\, so a hostile name cannot drive the terminal, reorder
 * the line or pass for an escape.  Never cuts an escape or a character.
 * Returns buf.
 */
char *term_escape(const char *s, char *buf, size_t n);

/*
 * Writes one frame of folded output (frame;frame count) escaped as
 * term_escape does, with ';' shown as ':'.  For calltree.c's folded lines.
 */
void folded_write_escaped(FILE *out, const char *s);

/*
 * Code points that change how text around them is shown without being
 * visible: C1 controls, bidi controls (U+200E/F, U+202A-202E, U+2066-2069)
 * and the line and paragraph separators U+2028/9.  JSON gets them as \uXXXX.
 */
bool unicode_is_unsafe(unsigned int cp);

/* Length in bytes of the valid UTF-8 sequence at s, or 0 if invalid. */
size_t utf8_sequence_len(const unsigned char *s);

#endif

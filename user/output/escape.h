/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Escaping of untrusted strings read from the target (class names, paths). */
#ifndef RBM_ESCAPE_H
#define RBM_ESCAPE_H
#include <stdio.h>
#include <stddef.h>

/* Writes s as a JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD. */
void json_write_string(FILE *out, const char *s);

/*
 * Copies s into buf (size n, always terminated) with control characters and
 * invalid UTF-8 bytes shown as \xNN, so a hostile name cannot drive the
 * terminal.  Returns buf.
 */
char *term_escape(const char *s, char *buf, size_t n);

/* Length in bytes of the valid UTF-8 sequence at s, or 0 if invalid. */
size_t utf8_sequence_len(const unsigned char *s);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one JSON writer every JSON output uses (bpftool's json_writer.c is the
 * model): containers opened and closed, members named by the keys of
 * json_keys.h, strings escaped, separators and indentation the writer's.
 *
 * A container is laid out one of three ways, chosen when it is opened:
 *   JW_LINES    a member per line, indented two spaces a level (a report)
 *   JW_INLINE   on one line, ", " and ": " between (a class row)
 *   JW_COMPACT  on one line, no spaces (top's frames, one per line)
 * A container inside an inline or compact one is laid out as its parent.
 */
#ifndef RBM_JSON_WRITER_H
#define RBM_JSON_WRITER_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "json_keys.h"

enum jw_style { JW_LINES, JW_INLINE, JW_COMPACT };

#define JW_MAX_DEPTH 16

struct jw_level {
	enum jw_style style;
	unsigned indent; /* the column of the line that opened it */
	bool empty;
	bool array;
};

struct jw {
	FILE *out;
	int depth; /* open containers */
	struct jw_level level[JW_MAX_DEPTH];
	unsigned indent; /* where the outermost container opens (a report inside a model) */
	bool html;	 /* strings for an HTML page's <script> (json_write_string_html) */
};

/* A writer to out whose first container opens at column indent. */
void jw_init(struct jw *w, FILE *out, unsigned indent);

/* key: the member's name inside an object; NULL inside an array or at the top. */
void jw_object(struct jw *w, const char *key, enum jw_style style);
void jw_array(struct jw *w, const char *key, enum jw_style style);
void jw_end(struct jw *w);

void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
void jw_int(struct jw *w, const char *key, int v);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_null(struct jw *w, const char *key);
/* A number printed with fmt ("%.3f"): the format is part of the output's contract. */
void jw_double(struct jw *w, const char *key, const char *fmt, double v);
/* A string, escaped for JSON; NULL writes null. */
void jw_string(struct jw *w, const char *key, const char *s);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Two reports compared (model/diff.h), written as text, JSON, or an HTML page's data. */
#ifndef RBM_DIFF_OUT_H
#define RBM_DIFF_OUT_H
#include <stdio.h>
#include "diff.h"
#include "json_writer.h"

/* top: rows shown per table (0: all). */
void diff_write_text(FILE *out, const struct report_diff *d, size_t top);
void diff_write_json(FILE *out, const struct report_diff *d);
/* The page's "diff" member (html.c); 0. */
int html_diff_members(struct jw *w, const struct report_diff *d);

#endif

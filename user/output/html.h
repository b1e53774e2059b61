/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The HTML report: one self-contained page per report, model, why report or diff (html.c). */
#ifndef RBM_HTML_H
#define RBM_HTML_H
#include <stdio.h>
#include "report.h"
#include "why_model.h"
#include "writers.h"

struct report_diff;
/* Each writes the whole page: 0, or -ENOMEM (the page is then incomplete: drop it). */
int report_write_html(FILE *out, const struct report *r);
/* The summary's page; a model whose processes are periods (trace --every) adds their series. */
int model_write_html(FILE *out, const struct model_view *v);
int why_write_html(FILE *out, const struct why_report *wr);
int diff_write_html(FILE *out, const struct report_diff *d);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The data an HTML page draws (html.c), as one JSON object inside its
 * <script type="application/json">: a report's figures, pruned as the text
 * prunes, its call paths for the icicle, a series of periods, a why report.
 * Every string from the target is shown visibly as the text report shows it
 * (term_escape: controls as \xNN, bidi as \u{202e}) and written with '<',
 * '>', '&', U+2028 and U+2029 escaped (json_write_string_html).  The member
 * names are the page's own, not rbmemtrace's JSON (json_keys.h).
 */
#ifndef RBM_HTML_DATA_H
#define RBM_HTML_DATA_H
#include "json_writer.h"
#include "report.h"
#include "why_model.h"
#include "writers.h"

/* The most call paths, classes and retainer paths a page holds; the rest is summed as left out. */
#define HTML_MAX_PATHS 20000
#define HTML_MAX_CLASSES 5000
#define HTML_MAX_SERIES_CLASSES 200
/* A series' birth cohorts: [birth period, live] pairs a process's series holds (about 10 bytes each) */
#define HTML_MAX_COHORT_PAIRS 500000
#define WHY_HTML_MAX_EDGES 64 /* a retainer path's edges drawn; longer ones are cut */

/* A string from the target, as the text report shows it. */
void html_string(struct jw *w, const char *key, const char *s);
/* The members of one report: facts, verdict, suspects, classes, the icicle's paths.  0 or -ENOMEM. */
int html_report_members(struct jw *w, const struct report *r);
/* The model's processes that are periods of a continuous trace, as series by process. */
int html_series_members(struct jw *w, const struct model *m);
/* The same, each series' birth cohorts within max_pairs pairs (the page's cap, or a test's). */
int html_series_members_capped(struct jw *w, const struct model *m, size_t max_pairs);
/* A why report's members: its targets and their retainer paths, as an icicle. */
int html_why_members(struct jw *w, const struct why_report *wr);

#endif

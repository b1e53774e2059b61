/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Writers of a `why` report (model/why_model.h): they only read it. */
#ifndef RBM_WHY_OUT_H
#define RBM_WHY_OUT_H
#include <stddef.h>
#include <stdio.h>
#include "why_model.h"

/* max_paths: paths shown per class (0: all); the rest are summed in one line. */
void why_write_text(FILE *out, const struct why_report *r, size_t max_paths);
void why_write_json(FILE *out, const struct why_report *r, size_t max_paths);
struct jw;
/* The members of one report, into an object the caller opened. */
void why_write_json_members(struct jw *w, const struct why_report *r, size_t max_paths);
/* "root;via class;... count" lines, root first, for flamegraph.pl and speedscope. */
void why_write_folded(FILE *out, const struct why_report *r);
/*
 * pprof (profile.proto, gzipped): each path a sample whose stack is the
 * chain, the held class innermost and the root outermost (goref's
 * convention), valued inuse_objects and inuse_space.  0 or -errno.
 */
int why_write_pprof(FILE *out, const struct why_report *r);

#endif

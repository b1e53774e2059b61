/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The leak verdict read back from a report's JSON ("verdict" and
 * "verdict_walk", as output/verdict_out.c writes them): its points' holder
 * paths, containers, growth, what they keep alive and their allocation
 * sites, so that merge --diff compares holders and a merged page shows
 * them.  The watchpoints' insertions are not read back.
 */
#ifndef RBM_VERDICT_READ_H
#define RBM_VERDICT_READ_H
#include <jansson.h>
#include "json_get.h"
#include "verdict.h"

/* o's verdict, or NULL when o has none (or on an error, recorded in rd). */
struct verdict *jr_read_verdict(struct json_reader *rd, const json_t *o, const char *where);

#endif

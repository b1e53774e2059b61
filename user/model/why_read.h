/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `why` reports read back from JSON, for `merge` (why_read.c). */
#ifndef RBM_WHY_READ_H
#define RBM_WHY_READ_H
#include <stdbool.h>
#include <stddef.h>
#include "why_model.h"

/* Whether the JSON file at path is a why report (it has targets and walk). */
bool why_json_is_why(const char *path);
/*
 * Reads the why report at path and sums it into into (why_merge): its
 * ruby_version becomes "mixed" when they differ.  0, or -1 with a one-line
 * message naming path in err, into then partly summed.
 */
int why_read_file(const char *path, struct why_report *into, char *err, size_t errlen);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* speedscope's JSON file format: what a report retains, by objects and by bytes. */
#ifndef RBM_SPEEDSCOPE_H
#define RBM_SPEEDSCOPE_H
#include <stdio.h>
#include "report.h"

/* Two sampled profiles (retained objects, retained bytes); 0 or -ENOMEM (nothing written). */
int report_write_speedscope(FILE *out, const struct report *r);

#endif

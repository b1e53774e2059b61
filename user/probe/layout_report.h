/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A target's layout and its proof, as the report model holds them. */
#ifndef RBM_LAYOUT_REPORT_H
#define RBM_LAYOUT_REPORT_H
#include "report.h"
#include "ruby_target.h"

void layout_to_report(const struct ruby_target *t, struct report_layout *out);

#endif

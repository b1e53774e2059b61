/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A heap census, named and put into the report model. */
#ifndef RBM_CENSUS_MODEL_H
#define RBM_CENSUS_MODEL_H
#include <stdbool.h>
#include "census.h"
#include "classnames.h"
#include "report.h"

enum census_moment { CENSUS_AT_START, CENSUS_AT_END };

/*
 * Adds what census c saw to r: the heap's figures, and per class name the
 * live objects (as live_start or live_end), and at the end their bytes, old
 * and garbage.  Objects count under their class as ObjectSpace.each_object
 * does: an object with a singleton class counts as its class's.  wanted, if
 * not NULL, picks the classes to report (--class).
 * 0 or -ENOMEM.
 */
int census_to_report(const struct census *c, struct class_namer *cn, struct report *r,
		     enum census_moment when, bool (*wanted)(void *ctx, const char *name),
		     void *ctx);
/*
 * Names every class of c now, while the target can be read: a launched
 * command's last census is taken while it is held at exit, and reported
 * once it is gone.
 */
void census_name_classes(struct census *c, struct class_namer *cn);

#endif

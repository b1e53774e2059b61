/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The tracker's verdicts on single slots (tracker_judge.c), for its passes (tracker.c). */
#ifndef RBM_TRACKER_JUDGE_H
#define RBM_TRACKER_JUDGE_H
#include <stdbool.h>
#include <stdint.h>
#include "rbmemtrace.h"
#include "slot_pages.h"
#include "tracker.h"

/* Ruby's GC count and phase into t->gc_count, t->ages_may_lag (a pass's start). */
void tracker_read_gc_count(struct tracker *t);
/* No GC was marking when the pages were read, and none began since. */
bool tracker_marks_settled(struct tracker *t);
/* What the end census says: false if the object at addr is garbage, freed, or another. */
bool tracker_census_alive(struct tracker *t, uint64_t addr, const struct live_object *obj);
/* The slot's facts say the tracked object is gone (garbage, or a younger object took it). */
bool tracker_slot_dead(struct tracker *t, const struct slot_facts *f, uint64_t flags,
		       bool marks_final, const struct live_object *obj);

#endif

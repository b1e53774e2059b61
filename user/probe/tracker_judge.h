/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tracker's inside, shared by its files: the verdicts on single slots
 * (tracker_judge.c) and the live map's dump and counts (tracker.c), for its
 * passes (tracker_pass.c).
 */
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

/* Entries a batched lookup of the live map asks for at once. */
#define PASS_BATCH 4096

/* Retained counts are recounted from scratch by each pass. */
void tracker_reset_retained(struct tracker *t);
/* A live object at a pass: counted retained or young. */
void tracker_count_alive(struct tracker *t, const struct live_object *obj);
/* The live map's entries into t->buf: the last dump, while it is the map as it is (reuse). */
int tracker_live_map_entries(struct tracker *t, bool reuse, size_t *count);
/* The tracker wrote the live map: the next pass reads it again. */
void tracker_live_map_written(struct tracker *t);
/* Forgets the entries found dead and not deleted yet. */
void tracker_forget_dead(struct tracker *t);
/* Whether klass, found in a tracked object's slot, is still that object's class (tracked). */
bool tracker_same_object_class(struct tracker *t, uint64_t klass, uint64_t tracked);

#endif

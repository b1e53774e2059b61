/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The classes of the verdict's nodes, from the end's census (internal to
 * verdict_run.c): a node's class by its slot, a class by the hash the
 * census keeps per slot, its name, and --class's answer for it.
 */
#ifndef RBM_VERDICT_CLASSES_H
#define RBM_VERDICT_CLASSES_H
#include <stdbool.h>
#include <stdint.h>
#include "verdict_run.h"

/*
 * The census_class_hash of node v's class in the end's census (ctx: the
 * struct verdict_end), 0 if not live there.  Looked up by address, with
 * the last node's page and census page tried first: nodes asked in order
 * cost no search.
 */
uint32_t verdict_node_class(void *ctx, uint32_t v);
/* The census class a hash names in the end's census, or NULL (the map made at first use). */
const struct census_class *verdict_census_class(struct verdict_end *e, uint32_t hash);
/* The class a census hash names, in the end's census; "?" when unknown. */
const char *verdict_class_name(struct why_context *c, struct verdict_end *e, uint32_t hash);
/* --class: whether objects of the class a hash names count (each class asked once). */
bool verdict_class_wanted(struct why_context *c, struct verdict_end *e, uint32_t hash);
void verdict_class_maps_free(struct verdict_end *e);

#endif

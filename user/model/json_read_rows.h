/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Internal to the JSON reader: the rows of a report (json_read_rows.c). */
#ifndef RBM_JSON_READ_ROWS_H
#define RBM_JSON_READ_ROWS_H
#include <jansson.h>
#include <stdint.h>
#include "json_get.h"
#include "report.h"

void jr_read_counts(struct json_reader *rd, const json_t *o, const char *where, struct counts *c);
void jr_read_est(struct json_reader *rd, const json_t *o, const char *where, struct estimates *e);
/* age_buckets must be this version's buckets, or the ages would be misread. */
void jr_check_age_buckets(struct json_reader *rd, const json_t *o, const char *where);
void jr_read_heap(struct json_reader *rd, const json_t *o, const char *where, const char *key,
		  struct heap_info *h);
void jr_read_sampling(struct json_reader *rd, const json_t *o, const char *where,
		      struct sampling_info *si, uint64_t *capped);
void jr_read_classes(struct json_reader *rd, struct report *r, const json_t *arr,
		     const char *where);
void jr_read_stacks(struct json_reader *rd, struct report *r, const json_t *arr, const char *where);
void jr_read_sites(struct json_reader *rd, struct report *r, const json_t *arr, const char *where);
void jr_read_stack_drops(struct json_reader *rd, struct report *r, const json_t *o,
			 const char *where);

#endif

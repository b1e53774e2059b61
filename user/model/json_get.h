/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Typed getters of JSON members for json_read.c; the first error wins. */
#ifndef RBM_JSON_GET_H
#define RBM_JSON_GET_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_reader {
	const char *name; /* the file, or what stands for it */
	char *err;
	size_t errlen;
	bool failed;
};

/* Records "NAME: where.key: what" unless a problem was recorded already. */
void jr_fail(struct json_reader *rd, const char *where, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The member key of obj (NULL if absent; an error if required). obj may be NULL. */
json_t *jr_member(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		  bool required);
/* A whole number >= 0; 0 when absent. */
uint64_t jr_get_u64(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		    bool required);
/* A whole number from min to max; dflt when absent. */
int64_t jr_get_int(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		   int64_t min, int64_t max, int64_t dflt);
/*
 * A number from -JR_MAX_REAL to JR_MAX_REAL; 0 when absent.  Every real of
 * a report (seconds, a scale, a share, a percentage) is far below it, and
 * the writers may multiply one by 1e9 into an int64 (pprof's nanoseconds).
 */
#define JR_MAX_REAL 1e9
double jr_get_real(struct json_reader *rd, const json_t *obj, const char *where, const char *key);
bool jr_get_bool(struct json_reader *rd, const json_t *obj, const char *where, const char *key);
/* A string; "" when required and missing or mistyped, NULL when optional and absent. */
const char *jr_get_str(struct json_reader *rd, const json_t *obj, const char *where,
		       const char *key, bool required);
/* An object (null allowed, as absent); NULL if absent. */
json_t *jr_get_obj(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		   bool required);
json_t *jr_get_arr(struct json_reader *rd, const json_t *obj, const char *where, const char *key,
		   bool required);

#endif

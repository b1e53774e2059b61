/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Interned strings: a report names the same files and classes many times. */
#ifndef RBM_STRPOOL_H
#define RBM_STRPOOL_H
#include <stdint.h>
#include "u64map.h"

struct strpool {
	struct u64map by_hash; /* FNV-1a hash -> struct pooled_string chain */
};

/* A stable copy of s, the same pointer for equal strings; NULL when out of memory. */
const char *strpool_intern(struct strpool *p, const char *s);
void strpool_free(struct strpool *p);

/* FNV-1a of a string, never 0 (u64map keys are non-zero). */
uint64_t str_hash(const char *s);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Internal to dwarf_layout.c and dwarf_refs.c: one read of a layout from
 * DWARF, and the lookups that note what is missing.  A "soft" read (the
 * refs fields, which only `why` needs) counts what is missing apart, so a
 * DWARF without them still gives every other mode its layout.
 */
#ifndef RBM_DWARF_READER_H
#define RBM_DWARF_READER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dwarf_types.h"
#include "ruby_layout.h"

struct rd {
	struct dwarf_types *dt;
	char series[16];
	char *err;
	size_t errlen, used;
	int missing;
	bool listed; /* a missing field is in err already */
	bool soft;   /* misses go to soft_missing, not missing */
	int soft_missing;
};

void rd_miss(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rd_use(struct rd *r, const char *const *cus);
bool rd_member(struct rd *r, const char *type, const char *path, struct dwarf_field *f);
/* Offset of type.path, or `absent` when there is no such member. */
uint32_t rd_opt_off(struct rd *r, const char *type, const char *path, uint32_t absent);
uint32_t rd_need_off(struct rd *r, const char *type, const char *path);
/* The first of two spellings of a member that exists (3.1's, then 3.2+'s). */
uint32_t rd_need_off2(struct rd *r, const char *type, const char *path, const char *path2);
uint32_t rd_need_size(struct rd *r, const char *type);
/* A constant: an enumerator, a macro, or the series' default for a build without macros. */
bool rd_constant(struct rd *r, const char *name, int64_t *v);
int64_t rd_need_const(struct rd *r, const char *name);

/* The refs fields (dwarf_refs.c), read softly: refs_unknown counts what is missing. */
void dwarf_read_refs(struct rd *r, struct ruby_layout *o);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Internal to the pprof writers (pprof.c: trace reports and models;
 * why_pprof.c: retainer paths): building one profile.proto, its string,
 * function and location tables deduplicated, then packing it gzipped.
 */
#ifndef RBM_PPROF_BUILD_H
#define RBM_PPROF_BUILD_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "profile.pb-c.h"
#include "u64map.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

#define NVALUES 4
#define MAX_LABELS 10

/*
 * Unique ids for strings: the string table, and keys that stand for a
 * function ("name\x1ffile") or a location ("name\x1ffile\x1fline").  Keys
 * are hashed; a collision (another key, same hash) moves on to a derived one.
 */
struct idmap {
	struct u64map by_hash; /* hash -> index + 1 */
	char **keys;
	size_t n, cap;
};

/* A location and its one line; pointers between them are set once all are made. */
struct loc_entry {
	Location loc;
	Line line;
	Line *linep;
};

struct sample_entry {
	Sample s;
	uint64_t *locs;
	int64_t values[NVALUES];
	Label labels[MAX_LABELS];
	Label *label_ptrs[MAX_LABELS];
};

/* The profile being built; its string table is strings.keys. */
struct builder {
	Profile p;
	struct idmap strings, functions, locations;
	Function *funcs; /* function i has id i + 1, as location i */
	struct loc_entry *locs;
	struct sample_entry *samples;
	size_t funcs_cap, locs_cap, samples_cap, nsamples;
	bool oom;
	size_t nvalues; /* values per sample; 0: NVALUES */
};

void *pb_grow(void *v, size_t *cap, size_t n, size_t size, bool *oom);
/* The string table index of s (invalid UTF-8 becomes U+FFFD). */
int64_t pb_str_id(struct builder *b, const char *s);
/* The id of the location (and its function) of name in file at line. */
uint64_t pb_location_id(struct builder *b, const char *name, const char *file, int line);
/* A label on sample e: a string, or a number when str is NULL. */
void pb_add_label(struct sample_entry *e, struct builder *b, const char *key, const char *str,
		  int64_t num);
/*
 * The profile built, written to out: its parts linked, packed, gzip-
 * compressed (as pprof files are).  Frees the builder, written or not (b->oom
 * set: -ENOMEM, nothing written).  0 or -errno.
 */
int pb_write_profile(struct builder *b, FILE *out);

#endif

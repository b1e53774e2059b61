/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A small open-addressing hash table from non-zero u64 keys to pointers. */
#ifndef RBM_U64MAP_H
#define RBM_U64MAP_H
#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;
	void **values;
	size_t cap; /* power of two */
	size_t len;
};

void *u64map_get(const struct u64map *m, uint64_t key);
/* Inserts or replaces; returns 0 or -ENOMEM. */
int u64map_put(struct u64map *m, uint64_t key, void *value);
/* Frees the table; free_value (may be NULL) is called on each value. */
void u64map_free(struct u64map *m, void (*free_value)(void *));

#define u64map_for_each(m, i) for ((i) = 0; (i) < (m)->cap; (i)++) if ((m)->keys[i])

#endif

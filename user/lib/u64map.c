// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include "u64map.h"

static size_t slot_of(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return key & (cap - 1);
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (!m->cap || !key)
		return NULL;
	for (i = slot_of(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->values[i];
	return NULL;
}

static int grow(struct u64map *m)
{
	struct u64map bigger = {.cap = m->cap ? m->cap * 2 : 64};
	size_t i;

	bigger.keys = calloc(bigger.cap, sizeof(*bigger.keys));
	bigger.values = calloc(bigger.cap, sizeof(*bigger.values));
	if (!bigger.keys || !bigger.values) {
		free(bigger.keys);
		free(bigger.values);
		return -ENOMEM;
	}
	u64map_for_each(m, i) u64map_put(&bigger, m->keys[i], m->values[i]);
	free(m->keys);
	free(m->values);
	*m = bigger;
	return 0;
}

int u64map_put(struct u64map *m, uint64_t key, void *value)
{
	size_t i;

	if (!key)
		return -EINVAL;
	if ((m->len + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	for (i = slot_of(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			m->values[i] = value;
			return 0;
		}
	}
	m->keys[i] = key;
	m->values[i] = value;
	m->len++;
	return 0;
}

void u64map_free(struct u64map *m, void (*free_value)(void *))
{
	size_t i;

	if (free_value)
		u64map_for_each(m, i) free_value(m->values[i]);
	free(m->keys);
	free(m->values);
	m->keys = NULL;
	m->values = NULL;
	m->cap = m->len = 0;
}

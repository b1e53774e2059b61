// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "strpool.h"

struct pooled_string {
	struct pooled_string *next; /* same hash, another string */
	char s[];
};

uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h ? h : 1;
}

const char *strpool_intern(struct strpool *p, const char *s)
{
	uint64_t h = str_hash(s);
	struct pooled_string *head = u64map_get(&p->by_hash, h), *e;
	size_t len = strlen(s);

	for (e = head; e; e = e->next)
		if (strcmp(e->s, s) == 0)
			return e->s;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	memcpy(e->s, s, len + 1);
	e->next = head;
	if (u64map_put(&p->by_hash, h, e)) {
		free(e);
		return NULL;
	}
	return e->s;
}

static void free_chain(void *value)
{
	struct pooled_string *e = value, *next;

	for (; e; e = next) {
		next = e->next;
		free(e);
	}
}

void strpool_free(struct strpool *p)
{
	u64map_free(&p->by_hash, free_chain);
}

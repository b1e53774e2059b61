// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "slots.h"
#include "sort.h"
#include "target_mem.h"
#include "u64map.h"
#include "unexplained.h"

#define RB_T_IMEMO_TYPE 0x1a
#define RB_T_DATA_TYPE 0x0c

static bool unreached(const struct refgraph *g, const uint32_t *parent, uint32_t v)
{
	return parent[v] == RG_NONE && (g->state[v] & RG_LIVE);
}

/* The kind of the head at node v: its type and the key it groups by. */
static void head_kind(const struct refgraph *g, uint32_t v, struct unexp_group *k)
{
	uint64_t w[8] = {0};
	uint32_t slot_size = 0, len;
	uint64_t addr = refgraph_addr(g, v, &slot_size);
	uint32_t at = g->l->tdata_type;

	memset(k, 0, sizeof(*k));
	len = at + 8 <= sizeof(w) && at + 8 <= slot_size ? at + 8 : 16;
	if (!addr || target_read(g->pid, addr, w, len))
		return;
	k->type = (uint8_t) (w[0] & 0x1f);
	k->flags = w[0];
	if (k->type == RB_T_IMEMO_TYPE)
		k->key = (w[0] >> 12) & 0xf;
	else if (k->type == RB_T_DATA_TYPE && len > 16 && (w[at / 8 - 1] & 1))
		k->key = w[at / 8]; /* typed data: its rb_data_type_t (typed_flag before it) */
	else
		k->key = w[1];
}

/* The heads: unreached nodes no unreached node references (then cycles' first nodes). */
static size_t mark_heads(const struct refgraph *g, const uint32_t *parent, uint32_t *group,
			 uint32_t *queue)
{
	uint32_t v;
	uint64_t e;
	size_t n = 0;

	for (v = 0; v < g->nnodes; v++)
		group[v] = unreached(g, parent, v) ? 0 : RG_NONE;
	for (v = 0; v < g->nnodes; v++) {
		if (group[v] == RG_NONE)
			continue;
		for (e = g->off[v]; e < g->off[v + 1]; e++)
			if (g->targets[e] != v && group[g->targets[e]] != RG_NONE)
				group[g->targets[e]] = 1; /* held by an unreached node */
	}
	for (v = 0; v < g->nnodes; v++)
		if (group[v] == 0)
			queue[n++] = v;
	return n;
}

static int add_group(struct unexp_groups *out, struct u64map *by_key, const struct unexp_group *k,
		     uint32_t *gi)
{
	uint64_t key = (k->key << 5 | k->type) + 1;
	void *p = u64map_get(by_key, key);
	struct unexp_group *ng;

	if (p) {
		*gi = (uint32_t) ((uintptr_t) p - 1);
		return 0;
	}
	ng = realloc(out->g, (out->n + 1) * sizeof(*ng));
	if (!ng)
		return -ENOMEM;
	out->g = ng;
	ng[out->n] = *k;
	*gi = (uint32_t) out->n;
	if (u64map_put(by_key, key, (void *) (uintptr_t) (out->n + 1)))
		return -ENOMEM;
	out->n++;
	return 0;
}

/* Spreads head h's group over what it reaches among the unreached, breadth first. */
static void spread(const struct refgraph *g, uint32_t *group, uint32_t *queue, uint32_t h,
		   uint32_t gi, struct unexp_group *grp)
{
	size_t head = 0, tail = 0;
	uint64_t e;

	group[h] = gi + 2;
	queue[tail++] = h;
	while (head < tail) {
		uint32_t n = queue[head++];

		grp->objects++;
		if (g->state[n] & RG_YOUNG)
			grp->young++;
		for (e = g->off[n]; e < g->off[n + 1]; e++) {
			uint32_t m = g->targets[e];

			if (group[m] > 1)
				continue;
			group[m] = gi + 2;
			queue[tail++] = m;
		}
	}
}

static int by_objects(const void *a, const void *b)
{
	const struct unexp_group *x = a, *y = b;

	return x->objects < y->objects ? 1 : x->objects > y->objects ? -1 : 0;
}

/* A group for head h, and what it reaches spread under it. */
static int head_group(const struct refgraph *g, uint32_t *group, uint32_t *queue, uint32_t h,
		      struct u64map *by_key, struct unexp_groups *out)
{
	struct unexp_group k;
	uint32_t gi;
	int ret;

	head_kind(g, h, &k);
	ret = add_group(out, by_key, &k, &gi);
	if (ret)
		return ret;
	out->g[gi].heads++;
	spread(g, group, queue, h, gi, &out->g[gi]);
	return 0;
}

int unexplained_group(const struct refgraph *g, const uint32_t *parent, struct unexp_groups *out)
{
	uint32_t *group = malloc(((size_t) g->nnodes + 1) * sizeof(*group));
	uint32_t *queue = malloc(((size_t) g->nnodes + 1) * sizeof(*queue));
	uint32_t *heads = NULL;
	struct u64map by_key = {0};
	size_t nheads = 0, i;
	uint32_t v;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (group && queue) {
		nheads = mark_heads(g, parent, group, queue);
		heads = malloc((nheads + 1) * sizeof(*heads));
	}
	if (!group || !queue || !heads) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(heads, queue, nheads * sizeof(*heads));
	for (i = 0; !ret && i < nheads; i++)
		if (group[heads[i]] == 0)
			ret = head_group(g, group, queue, heads[i], &by_key, out);
	/* cycles no head reaches: headed by their first node */
	for (v = 0; !ret && v < g->nnodes; v++)
		if (group[v] == 1)
			ret = head_group(g, group, queue, v, &by_key, out);
out:
	for (i = 0; i < out->n; i++) {
		out->objects += out->g[i].objects;
		out->young += out->g[i].young;
	}
	sort_array(out->g, out->n, sizeof(*out->g), by_objects);
	u64map_free(&by_key, NULL);
	free(heads);
	free(group);
	free(queue);
	return ret;
}

void unexplained_free(struct unexp_groups *u)
{
	free(u->g);
	memset(u, 0, sizeof(*u));
}

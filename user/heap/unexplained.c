// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <string.h>
#include "slots.h"
#include "sort.h"
#include "target_mem.h"
#include "u64map.h"
#include "unexplained.h"

#define RB_T_IMEMO_TYPE 0x1a
#define RB_T_DATA_TYPE 0x0c
#define BATCH 256 /* heads whose slots one process_vm_readv reads */
#define HEAD_WORDS 6

/* The bytes of a head's slot its kind needs: flags, klass, a T_DATA's type and typed flag. */
static uint32_t head_len(const struct ruby_layout *l)
{
	uint32_t at = l->tdata_type > l->tdata_typed_flag ? l->tdata_type : l->tdata_typed_flag;

	return at + 8 <= HEAD_WORDS * 8 ? at + 8 : 16;
}

/* The kind of a head from its slot's first words (w[0] == 0: unread). */
static void head_kind(const struct ruby_layout *l, const uint64_t *w, uint32_t len,
		      struct unexp_group *k)
{
	memset(k, 0, sizeof(*k));
	if (!w[0])
		return;
	k->type = (uint8_t) (w[0] & 0x1f);
	k->flags = w[0];
	if (k->type == RB_T_IMEMO_TYPE)
		k->key = (w[0] >> 12) & 0xf;
	else if (k->type == RB_T_DATA_TYPE && len > 16 && (w[l->tdata_typed_flag / 8] & 1))
		k->key = w[l->tdata_type / 8]; /* typed data: its rb_data_type_t */
	else
		k->key = w[1];
}

/*
 * The first words of n heads' slots into w (HEAD_WORDS each), in as few
 * process_vm_readv calls as it takes: a slot the batch cannot read is read
 * alone, and left zero if that fails too.
 */
static void read_heads(const struct refgraph *g, const uint32_t *v, size_t n, uint64_t *w,
		       uint32_t len)
{
	struct iovec local[BATCH], remote[BATCH];
	size_t i, done = 0;
	ssize_t got;

	memset(w, 0, n * HEAD_WORDS * 8);
	for (i = 0; i < n; i++) {
		local[i] = (struct iovec){w + i * HEAD_WORDS, len};
		remote[i] = (struct iovec){(void *) (uintptr_t) refgraph_addr(g, v[i], NULL), len};
	}
	while (done < n) {
		got = process_vm_readv(g->pid, local + done, n - done, remote + done, n - done, 0);
		if (got < 0)
			got = 0;
		done += (size_t) got / len;
		if (done < n) {
			/* a slot the call stopped at: alone, through the fallback reader */
			if (target_read(g->pid, (uint64_t) (uintptr_t) remote[done].iov_base,
					local[done].iov_base, len))
				memset(local[done].iov_base, 0, len);
			done++;
		}
	}
}

/*
 * group[] from parent[] in place: 0 an unreached node no unreached node
 * references (a head), 1 one that some does, RG_NONE the rest.
 */
static void mark_heads(const struct refgraph *g, uint32_t *group)
{
	uint32_t v;
	uint64_t e;

	for (v = 0; v < g->nnodes; v++)
		group[v] = group[v] == RG_NONE && (g->state[v] & RG_LIVE) ? 0 : RG_NONE;
	for (v = 0; v < g->nnodes; v++) {
		if (group[v] == RG_NONE)
			continue;
		for (e = g->off[v]; e < g->off[v + 1]; e++)
			if (g->targets[e] != v && group[g->targets[e]] != RG_NONE)
				group[g->targets[e]] = 1; /* held by an unreached node */
	}
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

/* A group for head h of kind k, and what it reaches spread under it. */
static int head_group(const struct refgraph *g, uint32_t *group, uint32_t *queue, uint32_t h,
		      const struct unexp_group *k, struct u64map *by_key, struct unexp_groups *out)
{
	uint32_t gi;
	int ret;

	ret = add_group(out, by_key, k, &gi);
	if (ret)
		return ret;
	out->g[gi].heads++;
	spread(g, group, queue, h, gi, &out->g[gi]);
	return 0;
}

/*
 * The heads with group[v] == want, in page order, a batch at a time: their
 * slots read together, each then spread.  What one head reaches never
 * includes another (nothing unreached references a head).
 */
static int heads_of(const struct refgraph *g, uint32_t *group, uint32_t *queue, uint32_t want,
		    struct u64map *by_key, struct unexp_groups *out)
{
	uint32_t batch[BATCH], v = 0, len = head_len(g->l);
	uint64_t w[BATCH * HEAD_WORDS];
	struct unexp_group k;
	size_t n, i;
	int ret = 0;

	while (!ret && v < g->nnodes) {
		for (n = 0; v < g->nnodes && n < BATCH; v++)
			if (group[v] == want)
				batch[n++] = v;
		read_heads(g, batch, n, w, len);
		for (i = 0; !ret && i < n; i++) {
			/* a cycle's node reached by an earlier one of the batch is not a head */
			if (group[batch[i]] != want)
				continue;
			head_kind(g->l, w + i * HEAD_WORDS, len, &k);
			ret = head_group(g, group, queue, batch[i], &k, by_key, out);
		}
	}
	return ret;
}

int unexplained_group(const struct refgraph *g, uint32_t *parent, struct unexp_groups *out)
{
	uint32_t *queue = malloc(((size_t) g->nnodes + 1) * sizeof(*queue));
	struct u64map by_key = {0};
	size_t i;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!queue)
		return -ENOMEM;
	mark_heads(g, parent);
	/* heads first, then cycles no head reaches (still 1), each headed by its first node */
	ret = heads_of(g, parent, queue, 0, &by_key, out);
	if (!ret)
		ret = heads_of(g, parent, queue, 1, &by_key, out);
	for (i = 0; i < out->n; i++) {
		out->objects += out->g[i].objects;
		out->young += out->g[i].young;
	}
	sort_array(out->g, out->n, sizeof(*out->g), by_objects);
	u64map_free(&by_key, NULL);
	free(queue);
	return ret;
}

void unexplained_free(struct unexp_groups *u)
{
	free(u->g);
	memset(u, 0, sizeof(*u));
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * refgraph_impl.h: each live node's bytes as the census counts them (its
 * slot, what it owns, a Hash's st_table), capped at UINT32_MAX: 4 bytes per
 * node, for what a node keeps alive (dominators.h).
 */
#include <errno.h>
#include <stdlib.h>
#include "clock.h"
#include "refgraph_impl.h"
#include "slots.h"
#include "target_mem.h"

static void add(struct refgraph *g, uint32_t node, uint64_t bytes)
{
	bytes += g->bytes[node];
	g->bytes[node] = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t) bytes;
}

static int defer(struct rg_bytes *b, const struct ruby_layout *l, uint32_t node, uint64_t addr)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		uint32_t *node_ = realloc(b->node, cap * sizeof(*node_));
		uint64_t *addr_;
		uint8_t *buf;
		bool *ok;

		if (node_)
			b->node = node_;
		addr_ = realloc(b->addr, cap * sizeof(*addr_));
		if (addr_)
			b->addr = addr_;
		buf = realloc(b->buf, cap * l->st_size);
		if (buf)
			b->buf = buf;
		ok = realloc(b->ok, cap * sizeof(*ok));
		if (ok)
			b->ok = ok;
		if (!node_ || !addr_ || !buf || !ok)
			return -ENOMEM;
		b->cap = cap;
	}
	b->node[b->n] = node;
	b->addr[b->n++] = addr;
	return 0;
}

int rg_bytes_note(struct rg_bytes *b, struct refgraph *g, uint32_t node, const uint64_t *words,
		  uint32_t slot_size)
{
	uint64_t st_addr;

	g->bytes[node] = 0;
	add(g, node, slot_size + slot_owned_bytes(g->l, words, &st_addr));
	return st_addr ? defer(b, g->l, node, st_addr) : 0;
}

void rg_bytes_flush(struct rg_bytes *b, struct refgraph *g)
{
	size_t i, each = g->l->st_size;
	double t0;

	if (!b->n)
		return;
	for (i = 0; i < b->n; i++)
		b->ok[i] = false;
	t0 = now_seconds();
	target_read_many(g->pid, b->addr, b->n, each, b->buf, b->ok);
	g->read_seconds += now_seconds() - t0;
	g->reads += b->n;
	for (i = 0; i < b->n; i++)
		if (b->ok[i])
			add(g, b->node[i], slot_st_bytes(g->l, b->buf + i * each));
	b->n = 0;
}

void rg_bytes_free(struct rg_bytes *b)
{
	free(b->node);
	free(b->addr);
	free(b->buf);
	free(b->ok);
}

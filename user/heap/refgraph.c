// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* refgraph.h: the heap walked into a CSR graph, by one thread (a second was slower on 2 cores). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "diag.h"
#include "clock.h"
#include "gc_counters.h"
#include "heap_caps.h"
#include "refgraph.h"
#include "refgraph_impl.h"
#include "slots.h"
#include "target_mem.h"

#define BATCH_PAGES 32

struct pend {
	uint32_t node;
	uint8_t step;
	bool checked; /* wit: a witness read right after the piece */
	bool spanned; /* span: the table a chunk is of (refs.h) */
	uint32_t len;
	uint64_t obj, addr, aux;
	struct refs_witness wit;
	struct refs_span span;
};

struct edge {
	uint32_t from, to;
};

struct walk {
	struct refgraph *g;
	const struct rg_select *sel;
	uint32_t cur;	  /* the node being decoded */
	uint64_t cur_obj; /* and its address */
	struct pend *pend, *next;
	size_t npend, cap_pend, nnext, cap_next;
	struct edge *edges;
	size_t nedges, cap_edges;
	uint8_t *hdr, *body; /* BATCH_PAGES page headers and bodies */
	size_t body_len;
	uint64_t addrs[BATCH_PAGES];
	bool ok[BATCH_PAGES], body_ok[BATCH_PAGES];
	uint8_t *rbuf; /* the pending reads' bytes */
	size_t rbuf_cap;
	uint64_t *raddr;
	uint32_t *rlen;
	bool *rok;
	size_t rcap;
	struct rg_bytes owned; /* refgraph_bytes.c */
	bool nomem;
};

static uint64_t get_u64(const uint8_t *p, uint32_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint16_t get_u16(const uint8_t *p, uint32_t off)
{
	uint16_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static bool grow(void **p, size_t *cap, size_t need, size_t each)
{
	size_t c = *cap ? *cap : 256;
	void *q;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * each);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

uint64_t refgraph_bytes(const struct refgraph *g)
{
	return (uint64_t) g->nnodes * (sizeof(*g->state) + sizeof(*g->off) + sizeof(*g->bytes)) +
	       (g->size ? (uint64_t) g->nnodes * sizeof(*g->size) : 0) +
	       g->cap_parts * sizeof(*g->parts) +
	       g->cap_edges * sizeof(*g->targets) + g->npages * sizeof(*g->pages) +
	       g->by_body.cap * (sizeof(uint64_t) + sizeof(void *)) + g->cap_sel * sizeof(*g->sel) +
	       (g->picked ? g->nnodes : 0);
}

bool refgraph_picked(const struct refgraph *g, uint32_t v, struct rg_selected *out)
{
	if (!g->picked || v >= g->nnodes || !g->picked[v])
		return false;
	*out = (struct rg_selected){v, g->picked[v] - 1u, g->bytes ? g->bytes[v] : 0,
				    (g->state[v] & RG_YOUNG) != 0};
	return true;
}

/* ---- the sink the decoders report to ---- */

static void on_ref(void *arg, uint64_t value, const struct ref_label *l)
{
	struct walk *w = arg;
	uint32_t to = refgraph_node(w->g, value);

	(void) l;
	if (to == RG_NONE) {
		w->g->edges_unknown++;
		return;
	}
	if (!grow((void **) &w->edges, &w->cap_edges, w->nedges + 1, sizeof(*w->edges))) {
		w->nomem = true;
		return;
	}
	w->edges[w->nedges++] = (struct edge){w->cur, to};
}

static void on_need(void *arg, uint64_t addr, uint32_t len, uint8_t step, uint64_t aux,
		    const struct refs_witness *wit, const struct refs_span *span)
{
	struct walk *w = arg;
	struct pend *p;

	if (!len)
		return;
	if (!grow((void **) &w->next, &w->cap_next, w->nnext + 1, sizeof(*w->next))) {
		w->nomem = true;
		return;
	}
	p = &w->next[w->nnext++];
	*p = (struct pend){.node = w->cur,
			   .step = step,
			   .checked = wit != NULL,
			   .spanned = span != NULL,
			   .len = len,
			   .obj = w->cur_obj,
			   .addr = addr,
			   .aux = aux};
	if (wit)
		p->wit = *wit;
	if (span)
		p->span = *span;
}

/* The entries the node being decoded says it holds. */
static void on_size(void *arg, uint64_t n)
{
	struct walk *w = arg;

	w->g->size[w->cur] = n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
}

/* A table of the node being decoded read in part: kept, to be named in the report. */
static void on_part(void *arg, const struct refs_part *p)
{
	struct walk *w = arg;
	struct refgraph *g = w->g;

	if (g->nparts >= HEAP_MAX_PARTS ||
	    !grow((void **) &g->parts, &g->cap_parts, g->nparts + 1, sizeof(*g->parts))) {
		g->parts_more++;
		return;
	}
	/* a head that could not be read: the size the object said, if it said one */
	g->parts[g->nparts++] = (struct rg_part){w->cur, p->holds, p->why, p->read,
						 p->total ? p->total : g->size[w->cur]};
}

/* The reads of a piece: its witness's words, the piece, the words again (refs.h). */
static size_t piece_reads(const struct pend *p)
{
	return 1 + (p->checked ? 2u * p->wit.n : 0);
}

/*
 * Reads every pending piece at once, resumes their decoders, and again with
 * what they ask.  A piece's witness words are the iovecs on both sides of
 * it: process_vm_readv copies its iovecs in order, so they are read right
 * before its first byte and right after its last.
 */
/*
 * This round's pieces become pend (what they ask for collects in next), and
 * their reads are listed in raddr/rlen, each piece between its witness's
 * before and after words.  Returns how many reads, or 0 out of memory.
 */
static size_t plan_round(struct walk *w)
{
	size_t i, r, nreads, tc;
	struct pend *t;

	t = w->pend, w->pend = w->next, w->next = t;
	tc = w->cap_pend, w->cap_pend = w->cap_next, w->cap_next = tc;
	w->npend = w->nnext;
	w->nnext = 0;
	for (i = 0, nreads = 0; i < w->npend; i++)
		nreads += piece_reads(&w->pend[i]);
	if (!grow((void **) &w->raddr, &w->rcap, nreads, sizeof(*w->raddr)))
		return 0;
	/* the other per-piece arrays follow raddr's capacity */
	w->rlen = realloc(w->rlen, w->rcap * sizeof(*w->rlen));
	w->rok = realloc(w->rok, w->rcap * sizeof(*w->rok));
	if (!w->rlen || !w->rok)
		return 0;
	for (i = 0, r = 0; i < w->npend; i++) {
		const struct pend *p = &w->pend[i];
		unsigned int k, nw = p->checked ? p->wit.n : 0;

		for (k = 0; k < nw; k++, r++)
			w->raddr[r] = p->wit.addr[k], w->rlen[r] = 8;
		w->raddr[r] = p->addr;
		w->rlen[r++] = p->len;
		for (k = 0; k < nw; k++, r++)
			w->raddr[r] = p->wit.addr[k], w->rlen[r] = 8;
	}
	memset(w->rok, 0, nreads * sizeof(*w->rok));
	return nreads;
}

/* Pieces pend[lo..hi), read into rbuf from their reads rlo on: each resumed with its bytes. */
static void resume_part(struct walk *w, size_t lo, size_t hi, size_t rlo,
			const struct refs_sink *sink)
{
	const uint8_t *at = w->rbuf;
	size_t i, r = rlo;

	for (i = lo; i < hi; i++) {
		struct pend *p = &w->pend[i];
		unsigned int k, nw = p->checked ? p->wit.n : 0;
		const uint8_t *bytes;
		bool ok;

		p->wit.read = true;
		for (k = 0; k < nw; k++, at += 8) {
			p->wit.read &= w->rok[r++];
			memcpy(&p->wit.before[k], at, 8);
		}
		bytes = at;
		ok = w->rok[r++];
		at += p->len;
		for (k = 0; k < nw; k++, at += 8) {
			p->wit.read &= w->rok[r++];
			memcpy(&p->wit.after[k], at, 8);
		}
		w->cur = p->node;
		w->cur_obj = p->obj;
		refs_resume(w->g->meta, p->obj, p->step, p->aux, p->addr, bytes, p->len, ok,
			    p->checked ? &p->wit : NULL, p->spanned ? &p->span : NULL, sink);
	}
}

static void flush(struct walk *w, const struct refs_sink *sink)
{
	struct refgraph *g = w->g;

	while (w->nnext && !w->nomem) {
		size_t r, lo, hi, rlo, total;
		double t0;

		if (!plan_round(w)) {
			w->nomem = true;
			return;
		}
		/* in parts of HEAP_ROUND_READ_MAX bytes (a piece is at most REFS_MAX_READ) */
		for (lo = 0, rlo = 0; lo < w->npend && !w->nomem; lo = hi, rlo = r) {
			for (hi = lo, r = rlo, total = 0;
			     hi < w->npend &&
			     (hi == lo ||
			      total + w->pend[hi].len + 8 * (piece_reads(&w->pend[hi]) - 1) <=
				  HEAP_ROUND_READ_MAX);
			     hi++) {
				total += w->pend[hi].len + 8 * (piece_reads(&w->pend[hi]) - 1);
				r += piece_reads(&w->pend[hi]);
			}
			if (!grow((void **) &w->rbuf, &w->rbuf_cap, total, 1)) {
				w->nomem = true;
				return;
			}
			t0 = now_seconds();
			target_read_each(g->pid, w->raddr + rlo, w->rlen + rlo, r - rlo, w->rbuf,
					 w->rok + rlo);
			g->read_seconds += now_seconds() - t0;
			g->reads += hi - lo;
			resume_part(w, lo, hi, rlo, sink);
		}
	}
}

/* The batch's edges, sorted by their node (a counting sort), become its part of the CSR. */
static int commit_edges(struct walk *w, uint32_t lo, uint32_t hi)
{
	struct refgraph *g = w->g;
	uint64_t base = g->nedges;
	uint32_t n;
	size_t i;

	if (!grow((void **) &g->targets, (size_t *) &g->cap_edges, base + w->nedges,
		  sizeof(*g->targets)))
		return -ENOMEM;
	/* off[lo..hi] as counts, then prefix sums from base */
	for (n = lo; n <= hi; n++)
		g->off[n] = 0;
	for (i = 0; i < w->nedges; i++)
		g->off[w->edges[i].from + 1]++;
	g->off[lo] = (uint32_t) base;
	for (n = lo + 1; n <= hi; n++)
		g->off[n] += g->off[n - 1];
	/* place each edge at its node's next free spot, using off[from] as the cursor */
	for (i = 0; i < w->nedges; i++)
		g->targets[g->off[w->edges[i].from]++] = w->edges[i].to;
	/* the cursors ended where the next node starts: shift back by one node */
	for (n = hi; n > lo; n--)
		g->off[n] = g->off[n - 1];
	g->off[lo] = (uint32_t) base;
	g->nedges = base + w->nedges;
	w->nedges = 0;
	return g->nedges > UINT32_MAX ? -E2BIG : 0;
}

/* A page's bitmaps, as the slots' bits index them. */
struct page_bits {
	bool before_sweep;
	uint32_t nwords;
	uint64_t base, step; /* slot i's bit: base + i * step */
	uint64_t marks[64], wbu[64], ages[128];
};

static void read_page_bits(const struct walk *w, const struct rg_page *p, const uint8_t *hdr,
			   uint64_t body, struct page_bits *b)
{
	const struct ruby_layout *l = w->g->l;

	b->before_sweep = get_u64(hdr, l->page_flags) & l->page_before_sweep;
	b->nwords = l->bitmap_words < 64 ? l->bitmap_words : 64;
	b->base = (p->start - body) / l->bit_granule;
	b->step = p->slot_size / l->bit_granule;
	if (b->before_sweep)
		memcpy(b->marks, hdr + l->page_mark_bits, b->nwords * sizeof(b->marks[0]));
	/* an object's age: young ones no GC has seen are likely garbage */
	memcpy(b->wbu, hdr + l->page_wb_unprotected_bits, b->nwords * sizeof(b->wbu[0]));
	if (l->page_age_bits)
		memcpy(b->ages, hdr + l->page_age_bits, 2 * b->nwords * sizeof(b->ages[0]));
}

/*
 * Whether live slot i of p survived no GC yet, write-barrier protected
 * (unprotected objects' ages do not say): likely garbage.
 */
static bool slot_young(const struct ruby_layout *l, const struct page_bits *b, uint32_t i,
		       const uint64_t *words)
{
	uint64_t bit = b->base + i * b->step;
	unsigned int age;

	if (bit / 64 >= b->nwords || ((b->wbu[bit / 64] >> (bit % 64)) & 1))
		return false;
	age = l->page_age_bits
		  ? (bit / 32 < 2 * b->nwords ? slot_age_in_bits(b->ages[bit / 32], bit) : 1)
		  : slot_age(l, words[0]);
	return age == 0;
}

/* A live slot of p, picked for target: kept with its bytes and whether it is young. */
static void select_object(struct walk *w, const struct rg_page *p, const uint64_t *words,
			  int target)
{
	struct refgraph *g = w->g;
	const struct ruby_layout *l = g->l;
	uint64_t st_addr;
	bool young = (g->state[w->cur] & RG_YOUNG) != 0;

	if (target < UINT8_MAX)
		g->picked[w->cur] = (uint8_t) (target + 1);
	else if (grow((void **) &g->sel, &g->cap_sel, g->nsel + 1, sizeof(*g->sel)))
		g->sel[g->nsel++] = (struct rg_selected){
		    w->cur, (uint32_t) target, p->slot_size + slot_owned_bytes(l, words, &st_addr),
		    young};
	else
		w->nomem = true;
}

/* Classifies and decodes the slots of one page whose body is in buf. */
static void walk_page(struct walk *w, const struct rg_page *p, const uint8_t *hdr,
		      const uint8_t *buf, uint64_t body, const struct refs_sink *sink)
{
	struct refgraph *g = w->g;
	struct page_bits b;
	const uint8_t *slot = buf + (p->start - body);
	uint32_t i;

	read_page_bits(w, p, hdr, body, &b);
	for (i = 0; i < p->nslots; i++, slot += p->slot_size) {
		const uint64_t *words = (const void *) slot;
		uint64_t bit, addr = p->start + (uint64_t) i * p->slot_size, opaque;
		bool marked = false, unjudged;
		enum slot_state st;
		int target;

		if (!words[0])
			continue;
		if (b.before_sweep) {
			bit = b.base + i * b.step;
			marked = bit / 64 < b.nwords && (b.marks[bit / 64] >> (bit % 64)) & 1;
		}
		st = slot_classify(words[0], marked, b.before_sweep, g->marking, &unjudged);
		if (st == SLOT_GARBAGE)
			g->garbage++;
		if (st != SLOT_LIVE)
			continue;
		w->cur = p->first + i;
		w->cur_obj = addr;
		g->state[w->cur] = RG_LIVE | (slot_young(g->l, &b, i, words) ? RG_YOUNG : 0);
		g->live++;
		if (rg_bytes_note(&w->owned, g, w->cur, words, p->slot_size))
			w->nomem = true;
		if (w->sel &&
		    (target = w->sel->pick(w->sel->ctx, addr, words[0], slot_klass(words))) >= 0)
			select_object(w, p, words, target);
		opaque = g->meta->gaps.n[GAP_OPAQUE_DATA];
		refs_decode(g->meta, addr, words, p->slot_size, sink);
		if (g->meta->gaps.n[GAP_OPAQUE_DATA] != opaque)
			g->state[w->cur] |= RG_OPAQUE;
	}
}

static int walk_batch(struct walk *w, size_t pos, size_t n)
{
	struct refgraph *g = w->g;
	const struct ruby_layout *l = g->l;
	struct refs_sink sink = {on_ref, on_need, w, on_size, on_part};
	uint64_t bodies[BATCH_PAGES];
	double t0 = now_seconds();
	size_t i;
	uint32_t lo = g->pages[pos].first;
	uint32_t hi = g->pages[pos + n - 1].first + g->pages[pos + n - 1].nslots;

	/* the page table was read before: pages here are the graph's, re-read for marks */
	for (i = 0; i < n; i++) {
		w->addrs[i] = g->pages[pos + i].page;
		bodies[i] = g->pages[pos + i].start & ~(uint64_t) (l->page_size - 1);
		w->ok[i] = w->body_ok[i] = false;
	}
	target_read_many(g->pid, w->addrs, n, l->page_read_size, w->hdr, w->ok);
	target_read_many(g->pid, bodies, n, l->page_size, w->body, w->body_ok);
	g->read_seconds += now_seconds() - t0;
	for (i = 0; i < n; i++) {
		const struct rg_page *p = &g->pages[pos + i];
		const uint8_t *hdr = w->hdr + i * l->page_read_size;

		/* heap_page_header.page: a body freed or reused since no longer points back */
		if (!w->body_ok[i] || !w->ok[i] ||
		    get_u64(w->body + i * l->page_size, 0) != p->page ||
		    get_u64(hdr, l->page_start) != p->start ||
		    get_u16(hdr, l->page_total_slots) != p->nslots) {
			g->bad_pages++;
			continue;
		}
		walk_page(w, p, hdr, w->body + i * l->page_size, bodies[i], &sink);
		if (w->nomem)
			return -ENOMEM;
	}
	rg_bytes_flush(&w->owned, g);
	flush(w, &sink);
	if (w->nomem)
		return -ENOMEM;
	return commit_edges(w, lo, hi);
}

/* The edges' room grew by doubling: what is not used goes back. */
static void shrink_edges(struct refgraph *g)
{
	uint32_t *t;

	if (!g->targets || g->cap_edges == g->nedges)
		return;
	t = realloc(g->targets, (g->nedges + 1) * sizeof(*g->targets));
	if (!t)
		return;
	g->targets = t;
	g->cap_edges = g->nedges + 1;
}

static void walk_free(struct walk *w)
{
	free(w->pend);
	free(w->next);
	free(w->edges);
	free(w->hdr);
	if (w->body)
		munmap(w->body, w->body_len);
	free(w->rbuf);
	free(w->raddr);
	free(w->rlen);
	free(w->rok);
	rg_bytes_free(&w->owned);
}

/* The graph's per-node arrays and the walk's batch buffers; false out of memory. */
static bool walk_alloc(struct walk *w)
{
	struct refgraph *g = w->g;
	const struct ruby_layout *l = g->l;

	g->state = calloc(g->nnodes, 1);
	g->off = calloc((size_t) g->nnodes + 1, sizeof(*g->off));
	g->size = calloc((size_t) g->nnodes + 1, sizeof(*g->size));
	g->bytes = calloc(g->nnodes, sizeof(*g->bytes));
	g->picked = w->sel ? calloc(g->nnodes, 1) : NULL;
	w->hdr = malloc(BATCH_PAGES * (size_t) l->page_read_size);
	w->body_len = (size_t) BATCH_PAGES * l->page_size;
	/* faulted in at once: the kernel's copy into fresh pages costs a fault per 4 KiB */
	w->body = mmap(NULL, w->body_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (w->body == MAP_FAILED)
		w->body = NULL;
	return g->state && g->off && g->size && g->bytes && (g->picked || !w->sel) && w->hdr &&
	       w->body;
}

int refgraph_build(struct refgraph *g, pid_t pid, const struct ruby_layout *l,
		   struct refs_meta *meta, uint64_t objspace, const struct rg_select *sel,
		   char *err, size_t errlen)
{
	struct walk w = {.g = g, .sel = sel};
	struct gc_counters c0, c1;
	double t0 = now_seconds(), cpu0 = cpu_seconds();
	size_t pos;
	int ret;

	memset(g, 0, sizeof(*g));
	g->pid = pid;
	g->l = l;
	g->meta = meta;
	ret = gc_counters_read(pid, l, objspace, &c0);
	if (ret)
		return rbm_fail(err, errlen, ret, "cannot read the objspace: %s", strerror(-ret));
	g->marking = (c0.flags & l->objspace_flags_mode_mask) == 1 ||
		     (c0.flags & l->objspace_flags_incremental);
	g->sweeping = (c0.flags & l->objspace_flags_mode_mask) == 2;
	ret = refgraph_read_pages(g, objspace, err, errlen);
	if (ret)
		goto out;
	/* the decoders' pieces, budgeted by the heap's size (heap_caps.h); off after the walk */
	meta->budgeted = true;
	meta->budget = (uint64_t) g->npages * l->page_size * HEAP_WALK_READ_PER_HEAP;
	if (meta->budget < HEAP_WALK_READ_MIN)
		meta->budget = HEAP_WALK_READ_MIN;
	if (!walk_alloc(&w)) {
		ret = rbm_fail(err, errlen, -ENOMEM, "out of memory for %u slots", g->nnodes);
		goto out;
	}
	for (pos = 0; pos < g->npages; pos += BATCH_PAGES) {
		size_t n = g->npages - pos < BATCH_PAGES ? g->npages - pos : BATCH_PAGES;

		ret = walk_batch(&w, pos, n);
		if (ret) {
			rbm_fail(err, errlen, ret, "heap walk: %s", strerror(-ret));
			goto out;
		}
	}
	shrink_edges(g);
	if (gc_counters_read(pid, l, objspace, &c1) == 0) {
		g->gc_ran = c1.gc_count != c0.gc_count;
		if ((c1.flags & l->objspace_flags_mode_mask) == 2)
			g->sweeping = true;
	}
out:
	meta->budgeted = false;
	walk_free(&w);
	g->seconds = now_seconds() - t0;
	g->cpu_seconds = cpu_seconds() - cpu0;
	if (ret == -ESRCH)
		rbm_fail(err, errlen, ret, "PID %d is gone", pid);
	return ret;
}

void refgraph_free(struct refgraph *g)
{
	free(g->pages);
	u64map_free(&g->by_body, NULL);
	free(g->state);
	free(g->off);
	free(g->size);
	free(g->parts);
	free(g->targets);
	free(g->bytes);
	free(g->sel);
	free(g->picked);
	memset(g, 0, sizeof(*g));
}

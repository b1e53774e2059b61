// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "clock.h"
#include "census_walk.h"
#include "heap_pages.h"
#include "target_mem.h"

static uint64_t get_u64(const uint8_t *p, uint32_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint32_t get_u32(const uint8_t *p, uint32_t off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint16_t get_u16(const uint8_t *p, uint32_t off)
{
	uint16_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

struct census_class *census_class_of(struct census *c, uint64_t key, uint64_t klass, uint32_t kind)
{
	struct census_class *cc = u64map_get(&c->classes, key);

	if (cc)
		return cc;
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return NULL;
	cc->klass = klass;
	cc->kind = kind;
	if (u64map_put(&c->classes, key, cc)) {
		free(cc);
		return NULL;
	}
	return cc;
}

/*
 * The class of key through a small direct-mapped cache: in a heap's older
 * parts neighbours are often of different classes (a quarter of the objects
 * at 100k), and the map's lookup costs several times more.
 */
static struct census_class *class_cached(struct census_walk *w, uint64_t key, uint64_t klass,
					 uint32_t kind)
{
	struct class_slot *e = &w->cache[(key * 0x9e3779b97f4a7c15ULL) >> (64 - CLASS_CACHE_BITS)];

	if (e->key != key) {
		e->cc = census_class_of(&w->part, key, klass, kind);
		e->key = e->cc ? key : 0;
	}
	return e->cc;
}

static int st_defer(struct census_walk *w, uint64_t addr, struct census_class *cc)
{
	if (w->nst == w->st_cap) {
		size_t cap = w->st_cap ? w->st_cap * 2 : 256;
		struct st_pending *st = realloc(w->st, cap * sizeof(*st));
		uint64_t *addrs = realloc(w->st_addr, cap * sizeof(*addrs));
		uint8_t *buf = realloc(w->st_buf, cap * w->hl->st_size);
		bool *ok = realloc(w->st_ok, cap * sizeof(*ok));

		/* Each that moved is kept, so walk_free frees the right one. */
		if (st)
			w->st = st;
		if (addrs)
			w->st_addr = addrs;
		if (buf)
			w->st_buf = buf;
		if (ok)
			w->st_ok = ok;
		if (!st || !addrs || !buf || !ok)
			return -ENOMEM;
		w->st_cap = cap;
	}
	w->st[w->nst].addr = addr;
	w->st[w->nst++].cc = cc;
	return 0;
}

/* Reads the st_table heads of this batch's hashes at once and adds their sizes. */
static void st_flush(struct census_walk *w)
{
	size_t i, each = w->hl->st_size;
	double t0 = now_seconds();

	for (i = 0; i < w->nst; i++) {
		w->st_addr[i] = w->st[i].addr;
		w->st_ok[i] = false;
	}
	target_read_many(w->pid, w->st_addr, w->nst, each, w->st_buf, w->st_ok);
	w->part.read_seconds += now_seconds() - t0;
	for (i = 0; i < w->nst; i++)
		if (w->st_ok[i])
			w->st[i].cc->bytes += slot_st_bytes(w->hl, w->st_buf + i * each);
	w->nst = 0;
}

/* Checks one page read from the target against the layout (heap_pages.h). */
static bool page_fits(const struct ruby_layout *hl, uint64_t page, const uint8_t *pg,
		      uint64_t *body, uint64_t *start, uint32_t *nslots, uint32_t *slot_size)
{
	struct heap_page_geo g;

	heap_page_geo_of(hl, pg, &g);
	if (!page || !heap_page_fits(hl, &g))
		return false;
	*body = g.body;
	*start = g.start;
	*nslots = g.nslots;
	*slot_size = g.slot_size;
	return true;
}

/* A page's bitmaps, as the slots' bits index them. */
struct page_bits {
	bool before_sweep;
	uint32_t nwords;
	/* Slot i's bit: base + i * step (slot sizes are multiples of the granule). */
	uint64_t base, step;
	const uint64_t *age_bits; /* 3.3+; NULL: the age is in the flags */
	uint64_t marks[64], wbu[64], ages[128];
};

static void read_page_bits(const struct ruby_layout *hl, const uint8_t *pg, uint64_t body,
			   const struct census_page *geo, bool states, struct page_bits *b)
{
	b->before_sweep = get_u32(pg, hl->page_flags) & hl->page_before_sweep;
	b->nwords = hl->bitmap_words < 64 ? hl->bitmap_words : 64;
	b->base = (geo->start - body) / hl->bit_granule;
	b->step = geo->slot_size / hl->bit_granule;
	b->age_bits = NULL;
	/* Mark bits decide only on a page the sweeper has not reached. */
	if (b->before_sweep)
		memcpy(b->marks, pg + hl->page_mark_bits, b->nwords * sizeof(b->marks[0]));
	if (hl->page_age_bits) {
		memcpy(b->ages, pg + hl->page_age_bits, 2 * b->nwords * sizeof(b->ages[0]));
		b->age_bits = b->ages;
	}
	/*
	 * Which objects the write barrier does not protect: they never age, so
	 * the trace can tell a reused slot by its age only for the others.
	 */
	if (states && hl->page_wb_unprotected_bits)
		memcpy(b->wbu, pg + hl->page_wb_unprotected_bits, b->nwords * sizeof(b->wbu[0]));
}

static unsigned int age_of(const struct ruby_layout *hl, const struct page_bits *b, uint32_t i,
			   uint64_t flags)
{
	uint64_t bit = b->base + i * b->step;

	if (!b->age_bits)
		return (unsigned int) ((flags & hl->fl_age_mask) >> hl->fl_age_shift);
	/* 3.3+: 2 bits per bit granule in the page (RVALUE_AGE_BITMAP) */
	return bit / 32 < 2 * b->nwords ? slot_age_in_bits(b->age_bits[bit / 32], bit) : 0;
}

/*
 * A live or garbage object counted to its class, *last the class met last
 * (neighbours are often of one class) and *key the object's.  0, or -ENOMEM.
 */
static int count_object(struct census_walk *w, const uint64_t *words, enum slot_state st,
			unsigned int age, uint32_t slot_size, struct census_class **last,
			uint64_t *last_key, uint64_t *key)
{
	uint64_t flags = words[0], st_addr, bytes = 0;
	uint32_t kind = slot_kind(flags);

	*key = class_key_id(slot_klass(words), kind);
	if (*key != *last_key) {
		*last = class_cached(w, *key, slot_klass(words), kind);
		if (!*last)
			return -ENOMEM;
		*last_key = *key;
	}
	if (st == SLOT_LIVE) {
		bytes = slot_size + slot_owned_bytes(w->hl, words, &st_addr);
		if (st_addr && st_defer(w, st_addr, *last))
			return -ENOMEM;
	}
	census_class_count(*last, st, age, bytes);
	return 0;
}

/* The slot's state as the census keeps it: state, age, write-barrier protection. */
static uint8_t kept_state(const struct ruby_layout *hl, const struct page_bits *b, uint32_t i,
			  enum slot_state st, unsigned int age)
{
	bool unprotected = true;

	if (hl->page_wb_unprotected_bits) {
		uint64_t bit = b->base + i * b->step;

		unprotected = bit / 64 >= b->nwords || (b->wbu[bit / 64] >> (bit % 64)) & 1;
	}
	return st | (age & 3) << 4 | (unprotected ? SLOT_WB_UNPROTECTED : 0);
}

/*
 * Classifies and tallies the slots of one page whose body is in buf: the
 * census's inner loop, run for every slot of the heap.  A free slot costs a
 * test; a live object bumps its class's age bucket and bytes (live, old and
 * the per-type counts follow from those at the end), its class looked up only
 * when it differs from its neighbour's.  states: where the slots' states go,
 * or NULL.
 */
static int walk_page(struct census_walk *w, const uint8_t *pg, const uint8_t *buf, uint64_t body,
		     const struct census_page *geo, uint8_t *states, uint32_t *classes)
{
	const struct ruby_layout *hl = w->hl;
	struct census *c = &w->part;
	struct page_bits b;
	uint64_t nfree = 0, nunjudged = 0, last_key = w->last_key;
	struct census_class *last = w->last;
	uint32_t i, slot_size = geo->slot_size;
	const uint8_t *slot = buf + (geo->start - body);

	read_page_bits(hl, pg, body, geo, states != NULL, &b);
	for (i = 0; i < geo->nslots; i++, slot += slot_size) {
		const uint64_t *words = (const void *) slot;
		uint64_t flags = words[0], bit, key = 0;
		bool marked = false, unjudged;
		enum slot_state st;
		unsigned int age = 0;

		if (!flags) { /* most common after live objects: skip the rest */
			nfree++;
			if (states) {
				states[i] = SLOT_FREE;
				classes[i] = 0;
			}
			continue;
		}
		if (b.before_sweep) {
			bit = b.base + i * b.step;
			marked = bit / 64 < b.nwords && (b.marks[bit / 64] >> (bit % 64)) & 1;
		}
		st = slot_classify(flags, marked, b.before_sweep, w->marking, &unjudged);
		nunjudged += unjudged;
		if (st == SLOT_LIVE || st == SLOT_GARBAGE) {
			age = age_of(hl, &b, i, flags);
			if (count_object(w, words, st, age, slot_size, &last, &last_key, &key))
				return -ENOMEM;
		} else if (st == SLOT_FREE) {
			nfree++;
		} else if (st == SLOT_ZOMBIE) {
			c->zombies++;
		} else if (st == SLOT_MOVED) {
			c->moved++;
		}
		if (states) {
			states[i] = kept_state(hl, &b, i, st, age);
			classes[i] = st == SLOT_LIVE ? census_class_hash(key) : 0;
		}
	}
	c->slots += geo->nslots;
	c->free += nfree;
	c->unjudged += nunjudged;
	w->last_key = last_key;
	w->last = last;
	return 0;
}

/*
 * The pages of pages[0..n) read and tested, the ones that fit kept in
 * order: their headers in page_buf, addresses in page_addr, bodies'
 * addresses in body_addr, geometry in geo and page table index in at.
 * Returns how many.
 */
static size_t fitting_pages(struct census_walk *w, const uint64_t *pages, size_t n, size_t pos,
			    struct census_page *geo, size_t *at)
{
	const struct ruby_layout *hl = w->hl;
	struct census *c = &w->part;
	size_t i, nbody = 0;

	memset(w->page_ok, 0, n * sizeof(bool));
	target_read_many(w->pid, pages, n, hl->page_read_size, w->page_buf, w->page_ok);
	for (i = 0; i < n; i++) {
		const uint8_t *pg = w->page_buf + i * hl->page_read_size;

		/* 3.4 keeps emptied pages in the table with total_slots 0: nothing in them. */
		if (w->page_ok[i] && hl->sorted_darray_data && pages[i] &&
		    !get_u16(pg, hl->page_total_slots))
			continue;
		if (!w->page_ok[i] ||
		    !page_fits(hl, pages[i], pg, &w->body_addr[nbody], &geo[nbody].start,
			       &geo[nbody].nslots, &geo[nbody].slot_size)) {
			c->bad_pages++;
			continue;
		}
		/* Keep the page's header alongside its body, in the same batch order. */
		if (nbody != i)
			memcpy(w->page_buf + nbody * hl->page_read_size, pg, hl->page_read_size);
		at[nbody] = pos + i;
		w->page_addr[nbody++] = pages[i];
	}
	return nbody;
}

int walk_batch(struct census_walk *w, const uint64_t *pages, size_t n, size_t pos)
{
	const struct ruby_layout *hl = w->hl;
	struct census *c = &w->part;
	struct census_page geo[CENSUS_BATCH_PAGES];
	size_t at[CENSUS_BATCH_PAGES]; /* page table index */
	size_t i, nbody;
	double t0 = now_seconds();
	int ret;

	nbody = fitting_pages(w, pages, n, pos, geo, at);
	memset(w->body_ok, 0, nbody * sizeof(bool));
	/* process_vm_readv fails on PROT_NONE pages; target_read_many retries those via /proc. */
	target_read_many(w->pid, w->body_addr, nbody, hl->page_size, w->body_buf, w->body_ok);
	c->read_seconds += now_seconds() - t0;
	for (i = 0; i < nbody; i++) {
		const uint8_t *buf = w->body_buf + i * hl->page_size;
		uint8_t *states = NULL;
		uint32_t *classes = NULL;

		/* heap_page_header.page: a freed or reused body no longer points back. */
		if (!w->body_ok[i] || get_u64(buf, 0) != w->page_addr[i]) {
			c->bad_pages++;
			continue;
		}
		if (w->page) {
			/* page_fits bounded nslots by max_slots, each page's share of slot_mem */
			states = w->slot_mem + at[i] * (size_t) hl->max_slots;
			w->page[at[i]] = geo[i];
			w->page[at[i]].slot = states;
			classes = w->class_mem + at[i] * (size_t) hl->max_slots;
			w->page[at[i]].class_of = classes;
		}
		c->pages++;
		ret = walk_page(w, w->page_buf + i * hl->page_read_size, buf, w->body_addr[i],
				&geo[i], states, classes);
		if (ret)
			return ret;
	}
	st_flush(w);
	return 0;
}

int walk_init(struct census_walk *w, pid_t pid, const struct ruby_layout *hl, bool marking,
	      struct census_page *page, uint8_t *slot_mem, uint32_t *class_mem)
{
	memset(w, 0, sizeof(*w));
	w->pid = pid;
	w->hl = hl;
	w->marking = marking;
	w->page = page;
	w->slot_mem = slot_mem;
	w->class_mem = class_mem;
	w->page_buf = malloc(CENSUS_BATCH_PAGES * hl->page_read_size);
	/*
	 * Faulted in by the mmap itself: the kernel's copy into a fresh buffer
	 * would take a page fault per 4 KiB, slow in a VM (a 100k-object heap's
	 * census took 30% longer).
	 */
	w->body_len = (size_t) CENSUS_BATCH_PAGES * hl->page_size;
	w->body_buf = mmap(NULL, w->body_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (w->body_buf == MAP_FAILED)
		w->body_buf = NULL;
	return w->page_buf && w->body_buf ? 0 : -ENOMEM;
}

void walk_free(struct census_walk *w)
{
	free(w->page_buf);
	if (w->body_buf)
		munmap(w->body_buf, w->body_len);
	free(w->st);
	free(w->st_addr);
	free(w->st_buf);
	free(w->st_ok);
	census_free(&w->part);
}

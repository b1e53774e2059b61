// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "census.h"
#include "target_mem.h"
#include "tracker.h"

/*
 * Pages read per batch: 16 bodies of 16 KiB is 256 KiB, one process_vm_readv.
 * The syscall costs about as much as copying 4 KiB; a batch that fits in the
 * L2 cache is still hot when the slots are classified (2 MiB batches were
 * 30% slower overall).
 */
#define BATCH_PAGES 16
#define MAX_PAGES (1u << 24) /* 2^24 pages of 16 KiB: 256 GiB of heap, beyond plausible */

struct st_pending {
	uint64_t addr;
	struct census_class *cc;
};

struct walk {
	struct census *c;
	pid_t pid;
	const struct heap_layout *hl;
	bool marking;
	struct census_class *last; /* neighbours are often of one class: skip the lookup */
	uint64_t *page_addr; /* struct heap_page *, this batch */
	uint64_t *body_addr;
	uint8_t *page_buf;   /* page_read_size per page */
	uint8_t *body_buf;   /* page_size per page */
	bool *page_ok, *body_ok;
	struct st_pending *st;
	size_t nst, st_cap;
	uint64_t *st_addr;
	uint8_t *st_buf;
	bool *st_ok;
};

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

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

void census_class_add(struct census_class *cc, enum slot_state st, unsigned int age,
		      uint64_t bytes, unsigned int old_age)
{
	if (st == SLOT_GARBAGE) {
		cc->garbage++;
		return;
	}
	if (st != SLOT_LIVE)
		return;
	cc->live++;
	cc->bytes += bytes;
	if (age > 3)
		age = 3;
	cc->age[age]++;
	if (age >= old_age)
		cc->old++;
}

static struct census_class *class_of(struct walk *w, uint64_t klass, uint32_t kind)
{
	struct census *c = w->c;
	uint64_t key = class_key_id(klass, kind);
	struct census_class *cc = w->last;

	if (cc && cc->klass == klass && cc->kind == kind)
		return cc;
	cc = u64map_get(&c->classes, key);
	if (cc)
		return w->last = cc;
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return NULL;
	cc->klass = klass;
	cc->kind = kind;
	if (u64map_put(&c->classes, key, cc)) {
		free(cc);
		return NULL;
	}
	return w->last = cc;
}

static int st_defer(struct walk *w, uint64_t addr, struct census_class *cc)
{
	if (w->nst == w->st_cap) {
		size_t cap = w->st_cap ? w->st_cap * 2 : 256;
		struct st_pending *st = realloc(w->st, cap * sizeof(*st));

		if (!st)
			return -ENOMEM;
		w->st = st;
		w->st_cap = cap;
	}
	w->st[w->nst].addr = addr;
	w->st[w->nst++].cc = cc;
	return 0;
}

/* Reads the st_table heads of this batch's hashes at once and adds their sizes. */
static int st_flush(struct walk *w)
{
	size_t i, each = w->hl->st_size;

	if (!w->nst)
		return 0;
	w->st_addr = realloc(w->st_addr, w->nst * sizeof(*w->st_addr));
	w->st_buf = realloc(w->st_buf, w->nst * each);
	w->st_ok = realloc(w->st_ok, w->nst * sizeof(*w->st_ok));
	if (!w->st_addr || !w->st_buf || !w->st_ok)
		return -ENOMEM;
	for (i = 0; i < w->nst; i++) {
		w->st_addr[i] = w->st[i].addr;
		w->st_ok[i] = false;
	}
	target_read_many(w->pid, w->st_addr, w->nst, each, w->st_buf, w->st_ok);
	for (i = 0; i < w->nst; i++)
		if (w->st_ok[i])
			w->st[i].cc->bytes += slot_st_bytes(w->hl, w->st_buf + i * each);
	w->nst = 0;
	return 0;
}

/*
 * Checks one page read from the target against the layout: its body is
 * page_size-aligned, holds the slots, and points back at the page.
 */
static bool page_fits(const struct heap_layout *hl, uint64_t page, const uint8_t *pg,
		      uint64_t *body, uint64_t *start, uint32_t *nslots, uint32_t *slot_size)
{
	uint64_t s = get_u64(pg, hl->page_start);
	uint32_t n = get_u16(pg, hl->page_total_slots);
	uint32_t size = get_u16(pg, hl->page_slot_size);
	uint64_t b = s & ~(uint64_t)(hl->page_size - 1);

	if (!page || !s || !n || n > hl->max_slots || size < hl->slot_size ||
	    size > hl->max_slot_size || size % 8)
		return false;
	if (s - b < 8 || s - b + (uint64_t)n * size > hl->page_size)
		return false;
	*body = b;
	*start = s;
	*nslots = n;
	*slot_size = size;
	return true;
}

/* Classifies and tallies the slots of one page whose body is in buf. */
static int walk_page(struct walk *w, const uint8_t *pg, const uint8_t *buf, uint64_t body,
		     struct census_page *cp)
{
	const struct heap_layout *hl = w->hl;
	struct census *c = w->c;
	bool before_sweep = get_u32(pg, hl->page_flags) & hl->page_before_sweep;
	uint64_t bits[64];
	uint32_t i, nwords = hl->bitmap_words < 64 ? hl->bitmap_words : 64;

	/* Mark bit of slot i: base + i * step (slot sizes are multiples of the granule). */
	uint64_t base = (cp->start - body) / hl->bit_granule, step = cp->slot_size / hl->bit_granule;
	const uint8_t *slot = buf + (cp->start - body);

	memcpy(bits, pg + hl->page_mark_bits, nwords * sizeof(bits[0]));
	for (i = 0; i < cp->nslots; i++, slot += cp->slot_size) {
		const uint64_t *words = (const void *)slot;
		uint64_t bit = base + i * step, st_addr, bytes;
		bool marked = bit / 64 < nwords && (bits[bit / 64] >> (bit % 64)) & 1;
		bool unjudged;
		enum slot_state st;
		unsigned int age = 0;
		struct census_class *cc;

		if (!words[0]) { /* most common after live objects: skip the rest */
			c->slots++;
			c->free++;
			cp->slot[i] = SLOT_FREE;
			continue;
		}
		st = slot_classify(words[0], marked, before_sweep, w->marking, &unjudged);
		c->slots++;
		c->unjudged += unjudged;
		switch (st) {
		case SLOT_FREE:
			c->free++;
			break;
		case SLOT_ZOMBIE:
			c->zombies++;
			break;
		case SLOT_MOVED:
			c->moved++;
			break;
		case SLOT_LIVE:
		case SLOT_GARBAGE:
			age = slot_age(hl, words[0]);
			cc = class_of(w, slot_klass(words), slot_kind(words[0]));
			if (!cc)
				return -ENOMEM;
			bytes = 0;
			if (st == SLOT_LIVE) {
				c->live++;
				c->types[words[0] & 0x1f]++;
				bytes = cp->slot_size + slot_owned_bytes(hl, words, &st_addr);
				if (st_addr && st_defer(w, st_addr, cc))
					return -ENOMEM;
			} else {
				c->garbage++;
			}
			census_class_add(cc, st, age, bytes, hl->old_age);
			break;
		default:
			break;
		}
		cp->slot[i] = st | age << 4;
	}
	return 0;
}

static int walk_batch(struct walk *w, const uint64_t *pages, size_t n)
{
	const struct heap_layout *hl = w->hl;
	struct census *c = w->c;
	uint32_t nslots[BATCH_PAGES], slot_size[BATCH_PAGES];
	uint64_t start[BATCH_PAGES];
	size_t i, nbody = 0;
	int ret;

	memset(w->page_ok, 0, n * sizeof(bool));
	target_read_many(w->pid, pages, n, hl->page_read_size, w->page_buf, w->page_ok);
	for (i = 0; i < n; i++) {
		const uint8_t *pg = w->page_buf + i * hl->page_read_size;

		if (!w->page_ok[i] || !page_fits(hl, pages[i], pg, &w->body_addr[nbody],
						 &start[nbody], &nslots[nbody], &slot_size[nbody])) {
			c->bad_pages++;
			continue;
		}
		/* Keep the page's header alongside its body, in the same batch order. */
		if (nbody != i)
			memcpy(w->page_buf + nbody * hl->page_read_size, pg, hl->page_read_size);
		w->page_addr[nbody++] = pages[i];
	}
	memset(w->body_ok, 0, nbody * sizeof(bool));
	/* process_vm_readv fails on PROT_NONE pages; target_read_many retries those via /proc. */
	target_read_many(w->pid, w->body_addr, nbody, hl->page_size, w->body_buf, w->body_ok);
	for (i = 0; i < nbody; i++) {
		const uint8_t *buf = w->body_buf + i * hl->page_size;
		struct census_page *cp;

		/* heap_page_header.page: a freed or reused body no longer points back. */
		if (!w->body_ok[i] || get_u64(buf, 0) != w->page_addr[i]) {
			c->bad_pages++;
			continue;
		}
		cp = &c->page[c->npage];
		cp->start = start[i];
		cp->nslots = nslots[i];
		cp->slot_size = slot_size[i];
		cp->slot = malloc(nslots[i]);
		if (!cp->slot)
			return -ENOMEM;
		c->npage++;
		c->pages++;
		ret = walk_page(w, w->page_buf + i * hl->page_read_size, buf, w->body_addr[i], cp);
		if (ret)
			return ret;
	}
	return st_flush(w);
}

static int page_cmp(const void *a, const void *b)
{
	const struct census_page *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct gc_state {
	uint32_t flags;
	uint64_t sorted, npages, count, allocated, freed;
};

static int read_gc_state(pid_t pid, const struct heap_layout *hl, uint64_t os,
			 struct gc_state *s)
{
	int ret;

	if ((ret = target_read(pid, os + hl->os_flags, &s->flags, sizeof(s->flags))) ||
	    (ret = target_read_u64(pid, os + hl->os_sorted, &s->sorted)) ||
	    (ret = target_read_u64(pid, os + hl->os_allocated_pages, &s->npages)) ||
	    (ret = target_read_u64(pid, os + hl->os_gc_count, &s->count)) ||
	    (ret = target_read_u64(pid, os + hl->os_total_allocated, &s->allocated)) ||
	    (ret = target_read_u64(pid, os + hl->os_total_freed, &s->freed)))
		return ret;
	return 0;
}

static void note_phase(struct census *c, const struct heap_layout *hl, uint32_t flags)
{
	uint32_t mode = flags & hl->os_flags_mode_mask;

	if (mode == 1 || (flags & hl->os_flags_incremental))
		c->marking = true;
	if (mode == 2)
		c->sweeping = true;
}

static void walk_free(struct walk *w)
{
	free(w->page_addr);
	free(w->body_addr);
	free(w->page_buf);
	free(w->body_buf);
	free(w->page_ok);
	free(w->body_ok);
	free(w->st);
	free(w->st_addr);
	free(w->st_buf);
	free(w->st_ok);
}

int census_take(struct census *c, pid_t pid, const struct heap_layout *hl, uint64_t objspace,
		char *err, size_t errlen)
{
	struct walk w = {.c = c, .pid = pid, .hl = hl};
	struct gc_state gs, end;
	uint64_t *sorted = NULL;
	double t0 = now_seconds();
	size_t i;
	int ret;

	memset(c, 0, sizeof(*c));
	ret = read_gc_state(pid, hl, objspace, &gs);
	if (ret)
		return fail(err, errlen, ret, "cannot read the objspace at 0x%llx: %s",
			    (unsigned long long)objspace, strerror(-ret));
	if (!gs.sorted || !gs.npages || gs.npages > MAX_PAGES)
		return fail(err, errlen, -EINVAL,
			    "objspace at 0x%llx does not look like Ruby %s's (%llu heap pages)",
			    (unsigned long long)objspace, hl->series,
			    (unsigned long long)gs.npages);
	note_phase(c, hl, gs.flags);
	w.marking = c->marking;
	c->gc_count = gs.count;
	c->total_allocated = gs.allocated;
	c->total_freed = gs.freed;

	sorted = malloc(gs.npages * sizeof(*sorted));
	c->page = calloc(gs.npages, sizeof(*c->page));
	w.page_addr = malloc(BATCH_PAGES * sizeof(uint64_t));
	w.body_addr = malloc(BATCH_PAGES * sizeof(uint64_t));
	w.page_buf = malloc(BATCH_PAGES * hl->page_read_size);
	w.body_buf = malloc((size_t)BATCH_PAGES * hl->page_size);
	w.page_ok = malloc(BATCH_PAGES * sizeof(bool));
	w.body_ok = malloc(BATCH_PAGES * sizeof(bool));
	if (!sorted || !c->page || !w.page_addr || !w.body_addr || !w.page_buf || !w.body_buf ||
	    !w.page_ok || !w.body_ok) {
		ret = fail(err, errlen, -ENOMEM, "out of memory for %llu heap pages",
			   (unsigned long long)gs.npages);
		goto out;
	}
	/* One read of the page table; Ruby may realloc it meanwhile: pages are checked anyway. */
	ret = target_read(pid, gs.sorted, sorted, gs.npages * sizeof(*sorted));
	if (ret) {
		fail(err, errlen, ret, "cannot read the heap page table: %s", strerror(-ret));
		goto out;
	}
	for (i = 0; i < gs.npages; i += BATCH_PAGES) {
		size_t n = gs.npages - i < BATCH_PAGES ? gs.npages - i : BATCH_PAGES;

		ret = walk_batch(&w, sorted + i, n);
		if (ret) {
			fail(err, errlen, ret, "heap walk: %s", strerror(-ret));
			goto out;
		}
	}
	ret = read_gc_state(pid, hl, objspace, &end);
	if (ret) {
		fail(err, errlen, ret, "cannot read the objspace: %s", strerror(-ret));
		goto out;
	}
	note_phase(c, hl, end.flags);
	c->gc_count_changed = end.count != gs.count;
	qsort(c->page, c->npage, sizeof(*c->page), page_cmp);
	if (c->bad_pages && !c->pages)
		ret = fail(err, errlen, -EINVAL, "no heap page of PID %d fits Ruby %s's layout",
			   pid, hl->series);
out:
	c->seconds = now_seconds() - t0;
	free(sorted);
	walk_free(&w);
	if (ret == -ESRCH)
		fail(err, errlen, ret, "PID %d is gone", pid);
	return ret;
}

enum slot_state census_slot_state(const struct census *c, uint64_t addr, unsigned int *age)
{
	size_t lo = 0, hi = c->npage;

	*age = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct census_page *p = &c->page[mid];
		uint64_t off;

		if (addr < p->start) {
			hi = mid;
			continue;
		}
		off = addr - p->start;
		if (off >= (uint64_t)p->nslots * p->slot_size) {
			lo = mid + 1;
			continue;
		}
		if (off % p->slot_size)
			return SLOT_UNKNOWN;
		*age = p->slot[off / p->slot_size] >> 4;
		return p->slot[off / p->slot_size] & 0xf;
	}
	return SLOT_UNKNOWN;
}

void census_free(struct census *c)
{
	size_t i;

	u64map_free(&c->classes, free);
	for (i = 0; i < c->npage; i++)
		free(c->page[i].slot);
	free(c->page);
	c->page = NULL;
	c->npage = 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* census.h: a census's slots asked by address, and two censuses compared (what is new). */
#include <errno.h>
#include <stdlib.h>
#include "census.h"
#include "u64map.h"

enum slot_state census_slot_state(const struct census *c, uint64_t addr, unsigned int *age)
{
	bool unprotected;

	return census_slot_info(c, addr, age, &unprotected);
}

enum slot_state census_slot_info(const struct census *c, uint64_t addr, unsigned int *age,
				 bool *unprotected)
{
	size_t lo = 0, hi = c->npage;

	*age = 0;
	*unprotected = true;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct census_page *p = &c->page[mid];
		uint64_t off;

		if (addr < p->start) {
			hi = mid;
			continue;
		}
		off = addr - p->start;
		if (off >= (uint64_t) p->nslots * p->slot_size) {
			lo = mid + 1;
			continue;
		}
		if (off % p->slot_size)
			return SLOT_UNKNOWN;
		*age = (p->slot[off / p->slot_size] >> 4) & 3;
		*unprotected = p->slot[off / p->slot_size] & SLOT_WB_UNPROTECTED;
		return p->slot[off / p->slot_size] & 0xf;
	}
	return SLOT_UNKNOWN;
}

static const struct census_page *hinted(const struct census_page *p, uint64_t addr, uint32_t *i);
static const struct census_page *page_holding(const struct census *c, uint64_t addr, uint32_t *i);

enum slot_state census_slot_info_at(const struct census *c, uint64_t addr, unsigned int *age,
				    bool *unprotected, struct census_hint *h)
{
	const struct census_page *p;
	uint32_t i;

	if (!(p = hinted(h->now, addr, &i))) {
		if (!(p = page_holding(c, addr, &i)))
			return census_slot_info(c, addr, age, unprotected);
		h->now = p;
	}
	*age = (p->slot[i] >> 4) & 3;
	*unprotected = p->slot[i] & SLOT_WB_UNPROTECTED;
	return p->slot[i] & 0xf;
}

uint32_t census_slot_class_at(const struct census *c, uint64_t addr, struct census_hint *h)
{
	const struct census_page *p;
	uint32_t i;

	if (!c->page)
		return 0;
	if (!(p = hinted(h->now, addr, &i))) {
		if (!(p = page_holding(c, addr, &i)))
			return 0;
		h->now = p;
	}
	return (p->slot[i] & 0xf) == SLOT_LIVE ? p->class_of[i] : 0;
}

static const struct census_page *page_at(const struct census *c, uint64_t start)
{
	size_t lo = 0, hi = c->npage;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->page[mid].start == start)
			return &c->page[mid];
		if (c->page[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static unsigned int min_age(uint64_t a, unsigned int old_age)
{
	return a < old_age ? (unsigned int) a : old_age;
}

/*
 * Whether live slot i of page p (in the later census) holds an object that
 * was already there at the earlier one, `was` being the same page then
 * (or NULL).  Ages tell, for objects the write barrier protects: an object
 * made since has survived at most the gcs GCs that ran, one that was there
 * with age a0 has survived them all and is min(a0 + gcs, old_age) old (or
 * one more when the earlier census caught a GC marking).  Slots tell the
 * rest: another object in the same slot means the first was freed by one
 * of those GCs, so the newcomer is younger; or of another class.
 */
static bool old_news(const struct census_page *was, const struct census_page *p, uint32_t i,
		     uint64_t gcs, unsigned int old_age, unsigned int slack)
{
	unsigned int age = (p->slot[i] >> 4) & 3, was_age;
	bool unprotected = p->slot[i] & SLOT_WB_UNPROTECTED;

	if (!unprotected && age > min_age(gcs + slack, old_age))
		return true;
	if (!was || was->slot_size != p->slot_size || i >= was->nslots ||
	    (was->slot[i] & 0xf) != SLOT_LIVE || was->class_of[i] != p->class_of[i])
		return false;
	/* Never aged; and an object can lose the barrier's protection, never gain it. */
	if (unprotected)
		return true;
	if (was->slot[i] & SLOT_WB_UNPROTECTED)
		return false;
	was_age = (was->slot[i] >> 4) & 3;
	return age == min_age(was_age + gcs, old_age) ||
	       (slack && age == min_age(was_age + gcs + 1, old_age));
}

int census_compare(const struct census *before, struct census *now, unsigned int old_age)
{
	struct u64map by_hash = {0};
	uint64_t gcs;
	unsigned int slack;
	size_t i;
	uint32_t j;

	if (!before->page || !now->page || now->gc_count < before->gc_count)
		return -EINVAL;
	gcs = now->gc_count - before->gc_count;
	slack = before->marking;
	/* now's classes by the hash its slots remember */
	u64map_for_each(&now->classes, i)
	{
		struct census_class *cc = now->classes.values[i];

		cc->new_alive = cc->new_aged = cc->new_old = cc->new_unaged = 0;
		if (u64map_put(&by_hash, census_class_hash(now->classes.keys[i]), cc)) {
			u64map_free(&by_hash, NULL);
			return -ENOMEM;
		}
	}
	for (i = 0; i < now->npage; i++) {
		const struct census_page *p = &now->page[i], *was = page_at(before, p->start);

		for (j = 0; j < p->nslots; j++) {
			struct census_class *cc;
			unsigned int age = (p->slot[j] >> 4) & 3;
			bool unprotected = p->slot[j] & SLOT_WB_UNPROTECTED;

			if ((p->slot[j] & 0xf) != SLOT_LIVE ||
			    old_news(was, p, j, gcs, old_age, slack) ||
			    !(cc = u64map_get(&by_hash, p->class_of[j])))
				continue;
			cc->new_alive++;
			if (unprotected)
				cc->new_unaged++;
			else if (age >= 1)
				cc->new_aged++;
			if (!unprotected && age >= old_age)
				cc->new_old++;
		}
	}
	u64map_free(&by_hash, NULL);
	now->compared = true;
	return 0;
}

int census_mark_new(const struct census *before, struct census *now, unsigned int old_age)
{
	uint64_t gcs;
	size_t i;
	uint32_t j;

	if (!before->page || !now->page || now->gc_count < before->gc_count)
		return -EINVAL;
	gcs = now->gc_count - before->gc_count;
	for (i = 0; i < now->npage; i++) {
		struct census_page *p = &now->page[i];
		const struct census_page *was = page_at(before, p->start);

		for (j = 0; j < p->nslots; j++) {
			p->slot[j] &= (uint8_t) ~SLOT_NEW;
			if ((p->slot[j] & 0xf) == SLOT_LIVE &&
			    !old_news(was, p, j, gcs, old_age, before->marking))
				p->slot[j] |= SLOT_NEW;
		}
	}
	now->news_of = before;
	return 0;
}

/* The page of now holding addr, and the slot's index in it; NULL if none. */
static const struct census_page *page_holding(const struct census *c, uint64_t addr, uint32_t *i)
{
	size_t lo = 0, hi = c->npage;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct census_page *p = &c->page[mid];

		if (addr < p->start) {
			hi = mid;
		} else if (addr - p->start >= (uint64_t) p->nslots * p->slot_size) {
			lo = mid + 1;
		} else {
			if ((addr - p->start) % p->slot_size)
				return NULL;
			*i = (uint32_t) ((addr - p->start) / p->slot_size);
			return p;
		}
	}
	return NULL;
}

/* The page of h that holds addr (its slot in *i), or NULL: no search. */
static const struct census_page *hinted(const struct census_page *p, uint64_t addr, uint32_t *i)
{
	uint64_t off;

	if (!p || addr < p->start || (off = addr - p->start) >= (uint64_t) p->nslots * p->slot_size ||
	    off % p->slot_size)
		return NULL;
	*i = (uint32_t) (off / p->slot_size);
	return p;
}

enum census_newness census_slot_new(const struct census *before, const struct census *now,
				    uint64_t addr, unsigned int old_age, uint32_t *class_hash)
{
	struct census_hint h = {0};

	return census_slot_new_at(before, now, addr, old_age, class_hash, &h);
}

enum census_newness census_slot_new_at(const struct census *before, const struct census *now,
				       uint64_t addr, unsigned int old_age, uint32_t *class_hash,
				       struct census_hint *h)
{
	const struct census_page *p, *was;
	uint32_t i;

	*class_hash = 0;
	if (now->news_of == before && now->page) {
		if (!(p = hinted(h->now, addr, &i)) && !(p = page_holding(now, addr, &i)))
			return CENSUS_UNKNOWN;
		h->now = p;
		if ((p->slot[i] & 0xf) != SLOT_LIVE)
			return CENSUS_NOT_LIVE;
		*class_hash = p->class_of[i];
		return p->slot[i] & SLOT_NEW ? CENSUS_NEW : CENSUS_OLD;
	}
	if (!before->page || !now->page || now->gc_count < before->gc_count)
		return CENSUS_UNKNOWN;
	if ((p = hinted(h->now, addr, &i))) {
		was = h->before;
	} else {
		if (!(p = page_holding(now, addr, &i)))
			return CENSUS_UNKNOWN;
		was = page_at(before, p->start);
		h->now = p;
		h->before = was;
	}
	if ((p->slot[i] & 0xf) != SLOT_LIVE)
		return CENSUS_NOT_LIVE;
	*class_hash = p->class_of[i];
	return old_news(was, p, i, now->gc_count - before->gc_count, old_age, before->marking)
		   ? CENSUS_OLD
		   : CENSUS_NEW;
}

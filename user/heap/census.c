// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diag.h"
#include "sort.h"
#include "clock.h"
#include "census.h"
#include "census_walk.h"
#include "gc_counters.h"
#include "heap_caps.h"
#include "heap_pages.h"
#include "target_mem.h"

/*
 * Walkers: the census is the kernel copying the heap out of the target
 * (process_vm_readv, two thirds of the time) and the slots' classification,
 * both bound by one core.  A second walker thread shares the pages out, on a
 * core the target does not need: one core is left to the target (on 2 cores,
 * loaded by other work, a second walker made the census 5-25% slower, not
 * faster, as the walkers and the target took turns).  Below
 * MIN_PAGES_PER_WALKER pages a walker (4 MiB of heap) a thread costs about
 * what it saves.
 */
#define MAX_WALKERS 2
#define MIN_PAGES_PER_WALKER 256

void census_class_finish(struct census_class *cc, unsigned int old_age)
{
	unsigned int a;

	cc->live = cc->old = 0;
	for (a = 0; a < 4; a++) {
		cc->live += cc->age[a];
		if (a >= old_age)
			cc->old += cc->age[a];
	}
}

static int page_cmp(const void *a, const void *b)
{
	const struct census_page *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct gc_state {
	uint32_t flags;
	uint64_t count, allocated, freed;
};

/* The GC's state (gc_counters.h): its phase and its counts. */
static int read_gc_state(pid_t pid, const struct ruby_layout *hl, uint64_t os, struct gc_state *s)
{
	struct gc_counters c;
	int ret;

	if ((ret = gc_counters_read(pid, hl, os, &c)))
		return ret;
	s->count = c.gc_count;
	s->flags = c.flags;
	s->allocated = c.allocated;
	s->freed = c.freed;
	return 0;
}

static void note_phase(struct census *c, const struct ruby_layout *hl, uint32_t flags)
{
	uint32_t mode = flags & hl->objspace_flags_mode_mask;

	if (mode == 1 || (flags & hl->objspace_flags_incremental))
		c->marking = true;
	if (mode == 2)
		c->sweeping = true;
	if (ruby_layout_ages_may_lag(hl, flags))
		c->ages_may_lag = true;
}

/* The batches of the page table, handed out to the walkers in turn. */
struct census_job {
	const uint64_t *sorted;
	size_t npages;
	atomic_size_t next;
	atomic_int err;
};

static void *walker(void *arg)
{
	struct census_walk *w = arg;
	struct census_job *job = w->job;

	for (;;) {
		size_t pos = atomic_fetch_add(&job->next, CENSUS_BATCH_PAGES);
		size_t n;
		int ret;

		if (pos >= job->npages || atomic_load(&job->err))
			break;
		n = job->npages - pos < CENSUS_BATCH_PAGES ? job->npages - pos : CENSUS_BATCH_PAGES;
		ret = walk_batch(w, job->sorted + pos, n, pos);
		if (ret) {
			atomic_store(&job->err, ret);
			break;
		}
	}
	return NULL;
}

/* Adds a walker's tallies to the census. */
static int census_add(struct census *c, struct census *part)
{
	size_t i;
	int a;

	c->pages += part->pages;
	c->slots += part->slots;
	c->free += part->free;
	c->zombies += part->zombies;
	c->moved += part->moved;
	c->unjudged += part->unjudged;
	c->bad_pages += part->bad_pages;
	c->read_seconds += part->read_seconds;
	if (!c->classes.len) { /* the first walker's map becomes the census's */
		u64map_free(&c->classes, NULL);
		c->classes = part->classes;
		part->classes = (struct u64map){0};
		return 0;
	}
	u64map_for_each(&part->classes, i)
	{
		struct census_class *from = part->classes.values[i], *to;

		to = census_class_of(c, part->classes.keys[i], from->klass, from->kind);
		if (!to)
			return -ENOMEM;
		for (a = 0; a < 4; a++)
			to->age[a] += from->age[a];
		to->bytes += from->bytes;
		to->garbage += from->garbage;
	}
	return 0;
}

/* What the walk left to the end: class totals, and the per-type and heap counts from them. */
static void census_finish(struct census *c, const struct ruby_layout *hl)
{
	size_t i, n = 0;

	u64map_for_each(&c->classes, i)
	{
		struct census_class *cc = c->classes.values[i];

		census_class_finish(cc, hl->old_age);
		c->types[RBM_KIND_TYPE(cc->kind)] += cc->live;
		c->live += cc->live;
		c->garbage += cc->garbage;
	}
	if (!c->page)
		return;
	/* Pages are where the page table had them; the ones skipped left holes. */
	for (i = 0; i < c->npage; i++)
		if (c->page[i].slot)
			c->page[n++] = c->page[i];
	c->npage = n;
	sort_array(c->page, c->npage, sizeof(*c->page), page_cmp);
}

static unsigned int walkers_for(size_t npages)
{
	const char *env = getenv("RBMEMTRACE_CENSUS_WALKERS"); /* to measure one against two */
	long spare = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	size_t n = npages / MIN_PAGES_PER_WALKER;

	if (env && *env)
		n = strtoul(env, NULL, 10);
	else if (n > (size_t) (spare > 0 ? spare : 1))
		n = spare > 0 ? spare : 1;
	return n < 1 ? 1 : n > MAX_WALKERS ? MAX_WALKERS : n;
}

/* Walks the pages of the table with a few walkers and adds their tallies to c. */
static int walk_heap(struct census *c, pid_t pid, const struct ruby_layout *hl,
		     const uint64_t *sorted, size_t npages)
{
	struct census_walk walk[MAX_WALKERS];
	struct census_job job = {.sorted = sorted, .npages = npages};
	pthread_t thread[MAX_WALKERS];
	bool started[MAX_WALKERS] = {};
	unsigned int i, n = walkers_for(npages);
	int ret = 0;

	for (i = 0; i < n; i++) {
		ret = walk_init(&walk[i], pid, hl, c->marking, c->page, c->slot_mem, c->class_mem);
		walk[i].job = &job;
		if (ret) {
			n = i + 1;
			goto out;
		}
	}
	/* Walker 0 is this thread; a walker that cannot start leaves its share to the others. */
	for (i = 1; i < n; i++)
		started[i] = pthread_create(&thread[i], NULL, walker, &walk[i]) == 0;
	walker(&walk[0]);
	c->walkers = 1;
	for (i = 1; i < n; i++) {
		if (started[i])
			pthread_join(thread[i], NULL);
		c->walkers += started[i];
	}
	ret = atomic_load(&job.err);
	for (i = 0; i < n && !ret; i++)
		ret = census_add(c, &walk[i].part);
out:
	for (i = 0; i < n; i++)
		walk_free(&walk[i]);
	return ret;
}

/* The GC's state and the page table where the census starts. */
static int census_start(struct census *c, pid_t pid, const struct ruby_layout *hl,
			uint64_t objspace, struct gc_state *gs, struct heap_page_table *table,
			char *err, size_t errlen)
{
	int ret = read_gc_state(pid, hl, objspace, gs);

	if (!ret)
		ret = heap_page_table_find(pid, hl, objspace, table);
	if (ret == -ERANGE)
		return rbm_fail(err, errlen, -EINVAL,
			    "objspace at 0x%llx does not look like Ruby %s's (%llu heap pages; "
			    "the cap is %u)",
			    (unsigned long long) objspace, hl->series,
			    (unsigned long long) table->npages, RUBY_MAX_HEAP_PAGES);
	if (ret)
		return rbm_fail(err, errlen, ret, "cannot read the objspace at 0x%llx: %s",
			    (unsigned long long) objspace, strerror(-ret));
	note_phase(c, hl, gs->flags);
	c->gc_count = gs->count;
	c->total_allocated = gs->allocated;
	c->total_freed = gs->freed;
	return 0;
}

/* Room for every page's slot states and classes, indexed like the page table. */
static bool alloc_slot_states(struct census *c, const struct ruby_layout *hl, uint64_t npages)
{
	c->page = calloc(npages, sizeof(*c->page));
	c->npage = npages;
	c->slot_mem = malloc(npages * (size_t) hl->max_slots);
	c->class_mem = malloc(npages * (size_t) hl->max_slots * sizeof(*c->class_mem));
	return c->page && c->slot_mem && c->class_mem;
}

int census_take(struct census *c, pid_t pid, const struct ruby_layout *hl, uint64_t objspace,
		bool slot_states, char *err, size_t errlen)
{
	struct gc_state gs = {0}, end;
	struct heap_page_table table;
	uint64_t *sorted = NULL;
	double t0 = now_seconds(), cpu0 = cpu_seconds();
	int ret;

	memset(c, 0, sizeof(*c));
	ret = census_start(c, pid, hl, objspace, &gs, &table, err, errlen);
	if (ret)
		return ret;

	sorted = malloc(table.npages * sizeof(*sorted));
	if (!sorted || (slot_states && !alloc_slot_states(c, hl, table.npages))) {
		ret = rbm_fail(err, errlen, -ENOMEM, "out of memory for %llu heap pages",
			   (unsigned long long) table.npages);
		goto out;
	}
	ret = heap_page_table_read(pid, &table, sorted);
	if (ret) {
		rbm_fail(err, errlen, ret, "cannot read the heap page table: %s", strerror(-ret));
		goto out;
	}
	ret = walk_heap(c, pid, hl, sorted, table.npages);
	if (ret) {
		rbm_fail(err, errlen, ret, "heap walk: %s", strerror(-ret));
		goto out;
	}
	ret = read_gc_state(pid, hl, objspace, &end);
	if (ret) {
		rbm_fail(err, errlen, ret, "cannot read the objspace: %s", strerror(-ret));
		goto out;
	}
	note_phase(c, hl, end.flags);
	c->gc_count_changed = end.count != gs.count;
	c->ages_known = hl->fl_age_mask != 0 || hl->page_age_bits != 0;
	census_finish(c, hl);
	if (c->bad_pages && !c->pages)
		ret = rbm_fail(err, errlen, -EINVAL, "no heap page of PID %d fits Ruby %s's layout",
			   pid, hl->series);
out:
	c->seconds = now_seconds() - t0;
	c->cpu_seconds = cpu_seconds() - cpu0;
	free(sorted);
	if (ret == -ESRCH)
		rbm_fail(err, errlen, ret, "PID %d is gone", pid);
	return ret;
}

void census_drop_slots(struct census *c)
{
	free(c->slot_mem);
	c->slot_mem = NULL;
	free(c->class_mem);
	c->class_mem = NULL;
	free(c->page);
	c->page = NULL;
	c->npage = 0;
}

static void census_class_free(void *p)
{
	struct census_class *cc = p;

	free(cc->name);
	free(cc);
}

void census_free(struct census *c)
{
	u64map_free(&c->classes, census_class_free);
	census_drop_slots(c);
}

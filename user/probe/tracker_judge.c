// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A pass's verdicts on single slots: whether what a tracked slot holds now
 * is still the tracked object, by Ruby's GC count and phase, the slot's
 * age, mark and page, and the end census.  tracker.c walks the live map
 * and counts; this says dead or alive.
 */
#include <errno.h>
#include "census.h"
#include "slot_pages.h"
#include "slots.h"
#include "target_mem.h"
#include "tracker.h"
#include "tracker_judge.h"

/*
 * Whether an object of this age (GCs survived, up to old) in the tracked
 * object's slot is younger than the tracked one would be with gc_count GCs
 * begun: then it is another object.  A GC under way may not have aged it
 * yet.  One born while a GC marked was judged, and aged if it lived, by
 * that GC: its slot may be freed and taken within its own cycle, by a
 * newcomer that then ages in step with what the GC count says of it, but
 * is one GC younger than it (the newcomer comes after the sweep).
 */
static bool younger_than_tracked(const struct tracker *t, unsigned int age, uint64_t gc_count,
				 const struct live_object *obj, bool ages_may_lag)
{
	uint32_t survived =
	    (uint32_t) gc_count - obj->gc_epoch + !!(obj->seq & RBM_SEQ_BORN_MARKING);
	unsigned int expected = survived < t->io.hl->old_age ? survived : t->io.hl->old_age;

	if (ages_may_lag && expected)
		expected--;
	return age < expected;
}

/*
 * What the final census says of a tracked object: dead if garbage or free
 * then, and dead too if its slot now holds a younger object.  Sampling sees
 * no free, so a slot freed and taken again by an object of the same class
 * (a String for a String) would pass for the tracked one; but an object the
 * write barrier protects ages by one at every GC it survives (up to old),
 * so one younger than the GCs since the tracked allocation is another.
 */
bool tracker_census_alive(struct tracker *t, uint64_t addr, const struct live_object *obj)
{
	const struct census *c = t->mode.census;
	unsigned int age;
	bool unprotected;
	enum slot_state st = census_slot_info(c, addr, &age, &unprotected);

	if (st == SLOT_GARBAGE || st == SLOT_FREE || st == SLOT_ZOMBIE) {
		t->stats.garbage_seen += st == SLOT_GARBAGE;
		return false;
	}
	if (st != SLOT_LIVE || unprotected || !c->ages_known || !t->io.gc_count_addr || !t->io.hl ||
	    !younger_than_tracked(t, age, c->gc_count, obj, c->ages_may_lag || c->gc_count_changed))
		return true;
	t->stats.reused_seen++;
	return false;
}

void tracker_read_gc_count(struct tracker *t)
{
	uint64_t count, flags;

	if (t->io.gc_count_addr && target_read_u64(t->io.pid, t->io.gc_count_addr, &count) == 0)
		t->gc.gc_count = count;
	/* After the count: a count that includes a GC comes with flags saying if it has marked. */
	t->gc.ages_may_lag = false;
	if (t->io.hl && t->io.objspace &&
	    target_read_u64(t->io.pid, t->io.objspace + t->io.hl->objspace_flags, &flags) == 0)
		t->gc.ages_may_lag = ruby_layout_ages_may_lag(t->io.hl, (uint32_t) flags);
}

int tracker_gc_phase(struct tracker *t, uint64_t *count, bool *marking)
{
	uint64_t addrs[2], words[2];
	bool ok[2];

	if (!t->io.gc_count_addr || !t->io.hl || !t->io.objspace)
		return -ENOENT;
	/* One read, the count first (as read_gc_count): it is looked at every millisecond. */
	addrs[0] = t->io.gc_count_addr;
	addrs[1] = t->io.objspace + t->io.hl->objspace_flags;
	target_read_many(t->io.pid, addrs, 2, sizeof(uint64_t), words, ok);
	if (!ok[0] || !ok[1])
		return -EFAULT;
	*count = words[0];
	*marking = ruby_layout_ages_may_lag(t->io.hl, (uint32_t) words[1]);
	return 0;
}

/*
 * Whether the marks read in this pass are final: no GC was marking when
 * the pages were read (t->gc.judge_lag) and none began since, which would
 * have reset them before finding the living again.
 */
bool tracker_marks_settled(struct tracker *t)
{
	uint64_t count;
	bool marking;

	return !t->gc.judge_lag && tracker_gc_phase(t, &count, &marking) == 0 &&
	       count == t->gc.judge_count && !marking;
}

/*
 * The GC count the ages a pass judges by were read in: the page bits' just
 * before the pages (3.3+), the header's (3.1, where the age is in the
 * object's flags) before the map was dumped.
 */
static uint64_t ages_count(const struct tracker *t)
{
	return t->io.hl->page_age_bits ? t->gc.judge_count : t->gc.gc_count;
}

static bool ages_lag(const struct tracker *t)
{
	return t->io.hl->page_age_bits ? t->gc.judge_lag : t->gc.ages_may_lag;
}

/*
 * Sampling sees no free, so a pass asks the slot's page.  Unmarked on a page
 * the sweeper has not reached, the object is garbage: dead, seen before its
 * slot can be taken.  Once taken, by another object of its class, the age
 * tells: an object the write barrier protects ages by one at each GC it
 * survives, so one younger than the GCs since the tracked allocation is
 * another.  But a young object an old one points to is made old at its
 * first GC (what a leak's objects are): only a pass within the GC cycle of
 * the reuse sees it young, while the garbage check has the whole cycle
 * before: a pass every GC cycle catches either.
 */
bool tracker_slot_dead(struct tracker *t, const struct slot_facts *f, uint64_t flags,
		       bool marks_final, const struct live_object *obj)
{
	bool unjudged;

	if (!f->known)
		return false;
	if (slot_classify(flags, f->marked, f->before_sweep, !marks_final, &unjudged) ==
	    SLOT_GARBAGE) {
		t->stats.garbage_seen++;
		return true;
	}
	if (f->unprotected || !younger_than_tracked(t, f->age, ages_count(t), obj, ages_lag(t)))
		return false;
	t->stats.reused_seen++;
	return true;
}

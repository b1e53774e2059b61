// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "census.h"
#include "clock.h"
#include "procmaps.h"
#include "slot_pages.h"
#include "slots.h"
#include "target_mem.h"
#include "tracker.h"

#define PASS_BATCH 4096

int tracker_init(struct tracker *t, pid_t pid, int live_fd, int counts_fd, struct reap_queue *reap,
		 uint64_t compact_count_addr)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->live_fd = live_fd;
	t->counts_fd = counts_fd;
	t->fallback_fd = -1;
	t->reap = reap;
	t->compact_count_addr = compact_count_addr;
	if (compact_count_addr)
		target_read_u64(pid, compact_count_addr, &t->last_compact_count);
	return 0;
}

struct class_tally *tracker_tally_for(struct tracker *t, uint64_t klass, uint32_t kind,
				      uint64_t stack_id)
{
	uint64_t id = tally_key(klass, kind, stack_id);
	struct class_tally *tally = u64map_get(&t->tallies, id);

	if (tally)
		return tally;
	tally = calloc(1, sizeof(*tally));
	if (!tally)
		return NULL;
	tally->klass = klass;
	tally->kind = kind;
	tally->stack_id = stack_id;
	if (u64map_put(&t->tallies, id, tally)) {
		free(tally);
		return NULL;
	}
	return tally;
}

/* Retained counts are recounted from scratch by the final census. */
static void reset_retained(struct tracker *t)
{
	size_t i;

	u64map_for_each(&t->tallies, i)
	{
		struct class_tally *tally = t->tallies.values[i];

		tally->t.retained = 0;
		tally->t.young = 0;
		tally->t.w_retained = 0;
		tally->t.w_young = 0;
		memset(&tally->t.ages, 0, sizeof(tally->t.ages));
	}
}

/*
 * A live object at a pass: retained once a GC has run since it was
 * allocated (it survived a mark), young before that.
 */
static void count_alive(struct tracker *t, const struct live_object *obj)
{
	struct class_tally *tally = tracker_tally_for(t, obj->klass, obj->kind, obj->stack_id);
	uint32_t survived = (uint32_t) t->gc_count - obj->gc_epoch;
	uint64_t weight;

	if (!tally)
		return;
	weight = t->weight_of ? t->weight_of(t->weight_ctx, obj->seq) : RBM_WEIGHT_ONE;
	if (t->gc_count_addr && survived == 0) {
		tally->t.young++;
		tally->t.w_young += weight;
		return;
	}
	tally->t.retained++;
	tally->t.w_retained += weight;
	if (t->gc_count_addr)
		tally->t.ages.n[age_bucket(survived)]++;
}

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
	unsigned int expected = survived < t->hl->old_age ? survived : t->hl->old_age;

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
static bool census_still_alive(struct tracker *t, uint64_t addr, const struct live_object *obj)
{
	const struct census *c = t->census;
	unsigned int age;
	bool unprotected;
	enum slot_state st = census_slot_info(c, addr, &age, &unprotected);

	if (st == SLOT_GARBAGE || st == SLOT_FREE || st == SLOT_ZOMBIE) {
		t->garbage_seen += st == SLOT_GARBAGE;
		return false;
	}
	if (st != SLOT_LIVE || unprotected || !c->ages_known || !t->gc_count_addr || !t->hl ||
	    !younger_than_tracked(t, age, c->gc_count, obj, c->ages_may_lag || c->gc_count_changed))
		return true;
	t->reused_seen++;
	return false;
}

static void read_gc_count(struct tracker *t)
{
	uint64_t count, flags;

	if (t->gc_count_addr && target_read_u64(t->pid, t->gc_count_addr, &count) == 0)
		t->gc_count = count;
	/* After the count: a count that includes a GC comes with flags saying if it has marked. */
	t->ages_may_lag = false;
	if (t->hl && t->objspace &&
	    target_read_u64(t->pid, t->objspace + t->hl->objspace_flags, &flags) == 0)
		t->ages_may_lag = ruby_layout_ages_may_lag(t->hl, (uint32_t) flags);
}

int tracker_gc_phase(struct tracker *t, uint64_t *count, bool *marking)
{
	uint64_t addrs[2], words[2];
	bool ok[2];

	if (!t->gc_count_addr || !t->hl || !t->objspace)
		return -ENOENT;
	/* One read, the count first (as read_gc_count): it is looked at every millisecond. */
	addrs[0] = t->gc_count_addr;
	addrs[1] = t->objspace + t->hl->objspace_flags;
	target_read_many(t->pid, addrs, 2, sizeof(uint64_t), words, ok);
	if (!ok[0] || !ok[1])
		return -EFAULT;
	*count = words[0];
	*marking = ruby_layout_ages_may_lag(t->hl, (uint32_t) words[1]);
	return 0;
}

/*
 * Whether the marks read in this pass are final: no GC was marking when
 * the pages were read (t->judge_lag) and none began since, which would
 * have reset them before finding the living again.
 */
static bool marks_settled(struct tracker *t)
{
	uint64_t count;
	bool marking;

	return !t->judge_lag && tracker_gc_phase(t, &count, &marking) == 0 &&
	       count == t->judge_count && !marking;
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
static bool slot_dead(struct tracker *t, const struct slot_facts *f, uint64_t flags,
		      bool marks_final, const struct live_object *obj)
{
	bool unjudged;

	if (!f->known)
		return false;
	if (slot_classify(flags, f->marked, f->before_sweep, !marks_final, &unjudged) ==
	    SLOT_GARBAGE) {
		t->garbage_seen++;
		return true;
	}
	if (f->unprotected || !younger_than_tracked(t, f->age, t->judge_count, obj, t->judge_lag))
		return false;
	t->reused_seen++;
	return true;
}

bool object_header_alive(uint64_t flags, uint32_t kind)
{
	uint32_t type = flags & RB_T_MASK;

	if (type == RB_T_NONE || type == RB_T_ZOMBIE || type == RB_T_MOVED)
		return false;
	/* A different type means the slot was freed and reused by an untracked allocation. */
	if (type != RBM_KIND_TYPE(kind))
		return false;
	if (type == RB_T_IMEMO &&
	    ((flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK) != RBM_KIND_IMEMO(kind))
		return false;
	/* The class may have changed (singleton class, hidden objects): still the same object. */
	return true;
}

static int grow_scratch(struct tracker *t, size_t need)
{
	size_t cap = t->cap ? t->cap : PASS_BATCH;

	while (cap < need)
		cap *= 2;
	if (cap == t->cap)
		return 0;
	t->keys = realloc(t->keys, cap * sizeof(*t->keys));
	t->values = realloc(t->values, cap * sizeof(*t->values));
	t->headers = realloc(t->headers, cap * sizeof(*t->headers));
	t->readable = realloc(t->readable, cap * sizeof(*t->readable));
	t->facts = realloc(t->facts, cap * sizeof(*t->facts));
	if (!t->keys || !t->values || !t->headers || !t->readable || !t->facts)
		return -ENOMEM;
	t->cap = cap;
	return 0;
}

/* Copies the whole live-object map out with batched lookups. */
static int dump_live_map(struct tracker *t, size_t *count)
{
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u64 in_batch = 0, out_batch = 0;
	bool first = true;
	size_t n = 0;

	for (;;) {
		__u32 chunk = PASS_BATCH;
		int err;

		if (grow_scratch(t, n + PASS_BATCH))
			return -ENOMEM;
		err = bpf_map_lookup_batch(t->live_fd, first ? NULL : &in_batch, &out_batch,
					   t->keys + n, t->values + n, &chunk, &opts);
		if (err && errno != ENOENT)
			return -errno;
		n += chunk;
		if (err) /* ENOENT: that was the last batch */
			break;
		in_batch = out_batch;
		first = false;
	}
	*count = n;
	return 0;
}

/* A compacting GC moved objects: the old slot forwards to the new one, briefly. */
static bool follow_move(struct tracker *t, uint64_t addr, const struct live_object *obj)
{
	uint64_t dest, hdr[2];

	if (target_read_u64(t->pid, addr + 16, &dest) || !dest || (dest & 7) ||
	    target_read(t->pid, dest, hdr, sizeof(hdr)) || !object_header_alive(hdr[0], obj->kind))
		return false;
	if (bpf_map_update_elem(t->live_fd, &dest, obj, BPF_NOEXIST))
		return false;
	t->moved_followed++;
	return true;
}

/* GC.stat(:compact_count) now; false if unknown. */
static bool read_compact_count(struct tracker *t, uint64_t *now)
{
	return t->compact_count_addr && target_read_u64(t->pid, t->compact_count_addr, now) == 0;
}

/* Whether a compaction is under way: its moves are not all made, nor followed. */
static bool compacting_now(struct tracker *t)
{
	uint64_t flags;

	return t->hl && t->objspace && t->hl->objspace_flags_compacting &&
	       target_read_u64(t->pid, t->objspace + t->hl->objspace_flags, &flags) == 0 &&
	       (flags & t->hl->objspace_flags_compacting);
}

/*
 * Only a guard against a cycle in garbage: the walk stops at the first
 * class that is neither a singleton nor an iclass.  A class's own slot holds
 * its metaclass once it has one, whose chain to Class has one link per
 * ancestor and per module extended into it: 17 for Regexp::Syntax::V3_2_0
 * under rubocop, so a bound of 8 called 60 live classes freed.
 */
#define MAX_CLASS_HOPS 1024

/*
 * Is klass, found in a tracked object's slot, still that object's class?
 * The same object can gain a singleton class (extend, def obj.x; modules
 * show as iclasses between it and the class) or be hidden (class 0).
 * Anything else is a new object in a reused slot: under sampling the
 * allocation that reused it may not have been traced.
 */
static bool same_object_class(struct tracker *t, uint64_t klass, uint64_t tracked)
{
	int hops;

	if (klass == tracked || !tracked || !klass)
		return true;
	for (hops = 0; hops < MAX_CLASS_HOPS && klass; hops++) {
		uint64_t flags, super;

		if (target_read_u64(t->pid, klass, &flags) ||
		    target_read_u64(t->pid, klass + t->rclass_super, &super))
			return false;
		if (!(flags & t->fl_singleton) && (flags & RB_T_MASK) != RB_T_ICLASS)
			return false;
		if (super == tracked)
			return true;
		klass = super;
	}
	return false;
}

static void forget_dead(struct tracker *t)
{
	u64map_free(&t->dead, NULL);
	memset(&t->dead, 0, sizeof(t->dead));
}

int tracker_pass(struct tracker *t, bool final)
{
	bool can_reap = !final && __atomic_load_n(&t->reap->len, __ATOMIC_ACQUIRE) == 0;
	bool compacted, pending, have_count, judge_slots, marks_final = false;
	uint64_t count = 0, count_after;
	size_t n, i, queued = 0;
	int err;

	if (target_gone(t->pid))
		return -ESRCH;
	t->pass_started = now_seconds();
	t->last_settled = false;
	/* Before the headers: an object allocated after this read is young at worst. */
	read_gc_count(t);
	/* Read the BPF flag first: objects it counts from here on are not in this pass. */
	pending = t->compaction_pending && __atomic_load_n(t->compaction_pending, __ATOMIC_ACQUIRE);
	have_count = read_compact_count(t, &count);
	compacted = (have_count && count > t->last_compact_count) || pending;
	/* Every move of every compaction so far was followed: what is gone from its slot died. */
	if (compacted && have_count && count && t->compact_followed_at &&
	    __atomic_load_n(t->compact_followed_at, __ATOMIC_ACQUIRE) == count)
		compacted = false;
	err = dump_live_map(t, &n);
	if (err)
		return err;
	target_read_many(t->pid, t->keys, n, sizeof(t->headers[0]), t->headers, t->readable);
	judge_slots = !final && t->direct_delete && t->hl && t->gc_count_addr &&
		      (t->hl->fl_age_mask || t->hl->page_age_bits);
	if (judge_slots) {
		/*
		 * The GC count and phase right before the pages are read: a
		 * slot is judged by the count of the cycle its bits were read
		 * in, and a GC the pass began before has no say in them.
		 */
		if (tracker_gc_phase(t, &t->judge_count, &t->judge_lag)) {
			t->judge_count = t->gc_count;
			t->judge_lag = true;
		}
		err = slot_pages_read(&t->pages, t->pid, t->hl, t->keys, t->headers, n, t->facts);
		if (err)
			return err;
		marks_final = marks_settled(t);
		t->judging_passes++;
		t->unsettled_passes += !marks_final;
		t->last_settled = marks_final;
	}
	/* A zombie answers kill() but its memory is gone: its objects did not all die. */
	if (target_gone(t->pid))
		return -ESRCH; /* every read failed because the target is gone, not its objects */
	/*
	 * A compaction during the reads moved objects under them, and BPF may
	 * be remapping the entries just dumped: judge nothing, look again later.
	 */
	if (!final && have_count &&
	    (!read_compact_count(t, &count_after) || count_after != count || compacting_now(t)))
		return -EAGAIN;
	if (have_count && count > t->last_compact_count) {
		t->compactions += count - t->last_compact_count;
		t->last_compact_count = count;
	}

	/*
	 * Every pass recounts the living: a report taken while the trace runs
	 * (top's drill-down) shows what was alive at the last pass.
	 */
	reset_retained(t);
	t->live = 0;
	/*
	 * Sampling keeps its verdicts until the deletes are done: a slot found
	 * taken by a young object holds an old one at the next GC (tracker.h).
	 */
	if (!t->direct_delete)
		forget_dead(t);
	for (i = 0; i < n; i++) {
		const struct live_object *obj = &t->values[i];
		bool judged_dead = t->direct_delete &&
				   (uintptr_t) u64map_get(&t->dead, t->keys[i]) == obj->seq + 1;
		bool alive = !judged_dead && t->readable[i] &&
			     object_header_alive(t->headers[i][0], obj->kind) &&
			     (RBM_KIND_TYPE(obj->kind) == RB_T_IMEMO ||
			      same_object_class(t, t->headers[i][1], obj->klass));
		bool moved = t->readable[i] && (t->headers[i][0] & RB_T_MASK) == RB_T_MOVED;
		struct class_tally *tally;

		/* Garbage keeps a valid header until the sweep reaches it: the marks say dead. */
		if (alive && final && t->census && !census_still_alive(t, t->keys[i], obj))
			alive = false;
		else if (alive && judge_slots &&
			 slot_dead(t, &t->facts[i], t->headers[i][0], marks_final, obj))
			alive = false;

		if (alive) {
			t->live++;
			count_alive(t, obj);
			continue;
		}
		if (moved && follow_move(t, t->keys[i], obj)) {
			t->live++;
			count_alive(t, obj);
		} else if (compacted &&
			   (tally = tracker_tally_for(t, obj->klass, obj->kind, obj->stack_id))) {
			tally->t.not_followed++;
		}
		if (final || (t->direct_delete && !t->deletes_wait)) {
			/* Probes are detached: nothing can race with this delete. */
			bpf_map_delete_elem(t->live_fd, &t->keys[i]);
		} else {
			if (can_reap && !t->direct_delete && queued < REAP_MAX) {
				t->reap->addr[queued] = t->keys[i];
				t->reap->seq[queued] = obj->seq;
				queued++;
			}
			u64map_put(&t->dead, t->keys[i], (void *) (uintptr_t) (obj->seq + 1));
		}
	}
	if (queued)
		__atomic_store_n(&t->reap->len, (__u32) queued, __ATOMIC_RELEASE);
	if (pending)
		__atomic_store_n(t->compaction_pending, 0, __ATOMIC_RELEASE);
	t->passes++;
	t->pass_seconds += now_seconds() - t->pass_started;
	return 0;
}

int tracker_count_unverified(struct tracker *t)
{
	size_t n, i;
	int err;

	err = dump_live_map(t, &n);
	if (err)
		return err;
	reset_retained(t);
	for (i = 0; i < n; i++) {
		uintptr_t dead = (uintptr_t) u64map_get(&t->dead, t->keys[i]);

		if (dead != t->values[i].seq + 1)
			count_alive(t, &t->values[i]);
	}
	return 0;
}

void tracker_delete_dead(struct tracker *t)
{
	size_t i;

	u64map_for_each(&t->dead, i)
	{
		struct live_object obj;
		uint64_t addr = t->dead.keys[i];

		/* The slot may have a newer allocation since: that one stays. */
		if (bpf_map_lookup_elem(t->live_fd, &addr, &obj) == 0 &&
		    obj.seq + 1 == (uintptr_t) t->dead.values[i])
			bpf_map_delete_elem(t->live_fd, &addr);
	}
	forget_dead(t);
}

void tracker_free(struct tracker *t)
{
	u64map_free(&t->tallies, free);
	u64map_free(&t->dead, NULL);
	free(t->keys);
	free(t->values);
	free(t->headers);
	free(t->readable);
	free(t->facts);
	slot_pages_free(&t->pages);
}

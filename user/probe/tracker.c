// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "probe_caps.h"
#include "census.h"
#include "clock.h"
#include "procmaps.h"
#include "slot_pages.h"
#include "slots.h"
#include "target_mem.h"
#include "tracker.h"
#include "tracker_judge.h"

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
	uint64_t now = t->end_gc_count ? t->end_gc_count : t->gc_count;
	uint32_t survived = (uint32_t) now - obj->gc_epoch;
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

/* The live map's entries into keys/values: the last dump, while it is the map as it is. */
static int live_map_entries(struct tracker *t, bool reuse, size_t *count)
{
	int err;

	if (reuse && t->map_quiet && t->dump_current) {
		*count = t->dump_n;
		t->dumps_reused++;
		return 0;
	}
	err = dump_live_map(t, count);
	t->dump_current = !err;
	t->dump_n = err ? 0 : *count;
	return err;
}

/* The tracker wrote the live map: the next pass reads it again. */
static void live_map_written(struct tracker *t)
{
	t->dump_current = false;
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
	live_map_written(t);
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
 * Every compaction so far, the one under way included, had its moves
 * followed by BPF (at rb_gc_update_tbl_refs, after every object moved):
 * then an object gone from its slot died, or was moved and re-keyed.
 */
static bool all_moves_followed(struct tracker *t)
{
	uint64_t count;

	return t->compact_followed_at && read_compact_count(t, &count) &&
	       __atomic_load_n(t->compact_followed_at, __ATOMIC_ACQUIRE) >= count;
}

/*
 * The final pass (only the compaction probe may write the live map then) of
 * a target that compacts without pause judges through a compaction: a tracked object read before it
 * moved is gone from the slot the pass dumped, and BPF has re-keyed it to where it went.  Its old
 * key gone from the live map says so; a dead object's stays.
 */
static bool moved_and_followed(struct tracker *t, uint64_t addr)
{
	struct live_object still;

	return all_moves_followed(t) && bpf_map_lookup_elem(t->live_fd, &addr, &still) != 0;
}

/*
 * Only a guard against a cycle in garbage: the walk stops at the first
 * class that is neither a singleton nor an iclass.  A class's own slot holds
 * its metaclass once it has one, whose chain to Class has one link per
 * ancestor and per module extended into it: 17 for Regexp::Syntax::V3_2_0
 * under rubocop, so a bound of 8 called 60 live classes freed.
 */
#define MAX_CLASS_HOPS PROBE_MAX_CLASS_HOPS

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

/*
 * The final pass reads the target after the trace's end, while it runs on:
 * the live map is read again once the headers are read (addr -> seq), so
 * that an object read in place of the tracked one is known for what it is.
 * BPF marks a slot a new object took after the end (RBM_SEQ_END_BITS), and
 * re-keys an object a compaction moved, over whatever entry its new slot
 * had: an entry since replaced was another object's.
 */
static int second_look(struct tracker *t, struct u64map *now)
{
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u64 in_batch = 0, out_batch = 0;
	struct live_object *values = malloc(PASS_BATCH * sizeof(*values));
	uint64_t *keys = malloc(PASS_BATCH * sizeof(*keys));
	bool first = true;
	int err = 0;

	if (!values || !keys) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 chunk = PASS_BATCH, i;
		int ret = bpf_map_lookup_batch(t->live_fd, first ? NULL : &in_batch, &out_batch,
					       keys, values, &chunk, &opts);

		if (ret && errno != ENOENT) {
			err = -errno;
			break;
		}
		/* seq + 1: a seq of 0 is a real one */
		for (i = 0; i < chunk && !err; i++)
			err = u64map_put(now, keys[i], (void *) (uintptr_t) (values[i].seq + 1));
		if (ret || err)
			break;
		in_batch = out_batch;
		first = false;
	}
out:
	free(values);
	free(keys);
	return err;
}

/*
 * What the second look says of the tracked object obj dumped at addr:
 * RBM_SEQ_GONE_AT_END when its slot was taken after the end in the end's
 * GC cycle, or its entry now holds another object; 0 otherwise (also when
 * the entry is gone: moved_and_followed() asks).
 */
static uint64_t second_look_says(const struct u64map *now, uint64_t addr,
				 const struct live_object *obj)
{
	uint64_t seq = (uintptr_t) u64map_get(now, addr);

	if (obj->seq & RBM_SEQ_GONE_AT_END)
		return RBM_SEQ_GONE_AT_END;
	if (!seq--)
		return 0;
	if ((seq & ~RBM_SEQ_END_BITS) != (obj->seq & ~RBM_SEQ_END_BITS))
		return RBM_SEQ_GONE_AT_END; /* another object's entry */
	return seq & RBM_SEQ_GONE_AT_END;
}

int tracker_pass(struct tracker *t, bool final)
{
	bool can_reap = !final && __atomic_load_n(&t->reap->len, __ATOMIC_ACQUIRE) == 0;
	bool compacted, pending, have_count, judge_slots, marks_final = false, compacting_at_start;
	struct u64map seqs = {0}, end_bits = {0};
	uint64_t count = 0, count_after;
	size_t n, i, queued = 0;
	int err;

	if (target_gone(t->pid))
		return -ESRCH;
	t->pass_started = now_seconds();
	t->last_settled = false;
	/* Before the headers: an object allocated after this read is young at worst. */
	tracker_read_gc_count(t);
	/* Read the BPF flag first: objects it counts from here on are not in this pass. */
	pending = t->compaction_pending && __atomic_load_n(t->compaction_pending, __ATOMIC_ACQUIRE);
	have_count = read_compact_count(t, &count);
	compacting_at_start = have_count && compacting_now(t);
	compacted = (have_count && count > t->last_compact_count) || pending;
	/* Every move of every compaction so far was followed: what is gone from its slot died. */
	if (compacted && have_count && count && t->compact_followed_at &&
	    __atomic_load_n(t->compact_followed_at, __ATOMIC_ACQUIRE) == count)
		compacted = false;
	err = live_map_entries(t, !final, &n);
	if (err)
		return err;
	t->last_tracked = n;
	target_read_many(t->pid, t->keys, n, sizeof(t->headers[0]), t->headers, t->readable);
	if (final && (err = second_look(t, &end_bits))) {
		u64map_free(&end_bits, NULL);
		return err;
	}
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
		marks_final = tracker_marks_settled(t);
		t->judging_passes++;
		t->unsettled_passes += !marks_final;
		t->last_settled = marks_final;
	}
	/* A zombie answers kill() but its memory is gone: its objects did not all die. */
	if (target_gone(t->pid))
		return -ESRCH; /* every read failed because the target is gone, not its objects */
	/*
	 * A compaction during the reads moved objects under them, and BPF may
	 * be remapping the entries just dumped: judge nothing, look again later
	 * (the final pass too, until the session gives up waiting).
	 */
	if ((!final || !t->judge_through_compaction) && have_count &&
	    (compacting_at_start || !read_compact_count(t, &count_after) || count_after != count ||
	     compacting_now(t)))
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
	/* The final pass through a compaction: how often each object is in the dump (below). */
	for (i = 0; final && compacted && i < n; i++) {
		uintptr_t seen = (uintptr_t) u64map_get(&seqs, t->values[i].seq + 1);

		if (u64map_put(&seqs, t->values[i].seq + 1, (void *) (seen + 1))) {
			u64map_free(&seqs, NULL);
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		const struct live_object *obj = &t->values[i];
		bool judged_dead = t->direct_delete &&
				   (uintptr_t) u64map_get(&t->dead, t->keys[i]) == obj->seq + 1;
		bool alive = !judged_dead && t->readable[i] &&
			     object_header_alive(t->headers[i][0], obj->kind) &&
			     (RBM_KIND_TYPE(obj->kind) == RB_T_IMEMO ||
			      same_object_class(t, t->headers[i][1], obj->klass));
		bool moved = t->readable[i] && (t->headers[i][0] & RB_T_MASK) == RB_T_MOVED;
		uint64_t at_end = final ? second_look_says(&end_bits, t->keys[i], obj) : 0;
		struct class_tally *tally;

		/*
		 * Its slot was taken after the end, before the next GC: it was
		 * freed before the end.  Taken later, it may have died at either
		 * GC: what was read decides, as for any other.
		 */
		if (at_end & RBM_SEQ_GONE_AT_END) {
			bpf_map_delete_elem(t->live_fd, &t->keys[i]);
			live_map_written(t);
			continue;
		}

		/* Garbage keeps a valid header until the sweep reaches it: the marks say dead. */
		if (alive && final && t->census && !tracker_census_alive(t, t->keys[i], obj))
			alive = false;
		else if (alive && judge_slots &&
			 tracker_slot_dead(t, &t->facts[i], t->headers[i][0], marks_final, obj))
			alive = false;

		if (alive) {
			t->live++;
			count_alive(t, obj);
			continue;
		}
		if (moved && follow_move(t, t->keys[i], obj)) {
			t->live++;
			count_alive(t, obj);
		} else if (final && compacted && moved_and_followed(t, t->keys[i])) {
			/* Counted where it went, when the dump caught it there too. */
			if ((uintptr_t) u64map_get(&seqs, obj->seq + 1) < 2) {
				t->live++;
				count_alive(t, obj);
			}
			continue; /* its old key is gone already */
		} else if (compacted && !(final && all_moves_followed(t)) &&
			   (tally = tracker_tally_for(t, obj->klass, obj->kind, obj->stack_id))) {
			tally->t.not_followed++;
		}
		if (final || (t->direct_delete && !t->deletes_wait)) {
			/* Probes are detached: nothing can race with this delete. */
			bpf_map_delete_elem(t->live_fd, &t->keys[i]);
			live_map_written(t);
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
	u64map_free(&seqs, NULL);
	u64map_free(&end_bits, NULL);
	t->passes++;
	t->pass_seconds += now_seconds() - t->pass_started;
	return 0;
}

int tracker_count_unverified(struct tracker *t)
{
	size_t n, i;
	int err;

	err = live_map_entries(t, false, &n);
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
		    obj.seq + 1 == (uintptr_t) t->dead.values[i]) {
			bpf_map_delete_elem(t->live_fd, &addr);
			live_map_written(t);
		}
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

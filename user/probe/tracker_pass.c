// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One pass over the tracked objects (tracker_pass), in its steps: the
 * compaction state at its start, the dump of the live map and the reads
 * of its slots, the check that nothing moved under them, then each entry
 * judged alive, moved or dead.  Its flags travel in a struct pass.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "probe_caps.h"
#include "clock.h"
#include "procmaps.h"
#include "slot_pages.h"
#include "slots.h"
#include "target_mem.h"
#include "tracker.h"
#include "tracker_judge.h"

/* A compacting GC moved objects: the old slot forwards to the new one, briefly. */
static bool follow_move(struct tracker *t, uint64_t addr, const struct live_object *obj)
{
	uint64_t dest, hdr[2];

	if (target_read_u64(t->io.pid, addr + 16, &dest) || !dest || (dest & 7) ||
	    target_read(t->io.pid, dest, hdr, sizeof(hdr)) ||
	    !object_header_alive(hdr[0], obj->kind))
		return false;
	if (bpf_map_update_elem(t->io.live_fd, &dest, obj, BPF_NOEXIST))
		return false;
	tracker_live_map_written(t);
	t->stats.moved_followed++;
	return true;
}

/* GC.stat(:compact_count) now; false if unknown. */
static bool read_compact_count(struct tracker *t, uint64_t *now)
{
	return t->io.compact_count_addr &&
	       target_read_u64(t->io.pid, t->io.compact_count_addr, now) == 0;
}

/* Whether a compaction is under way: its moves are not all made, nor followed. */
static bool compacting_now(struct tracker *t)
{
	uint64_t flags;

	return t->io.hl && t->io.objspace && t->io.hl->objspace_flags_compacting &&
	       target_read_u64(t->io.pid, t->io.objspace + t->io.hl->objspace_flags, &flags) == 0 &&
	       (flags & t->io.hl->objspace_flags_compacting);
}

/*
 * Every compaction so far, the one under way included, had its moves
 * followed by BPF (at rb_gc_update_tbl_refs, after every object moved):
 * then an object gone from its slot died, or was moved and re-keyed.
 */
static bool all_moves_followed(struct tracker *t)
{
	uint64_t count;

	return t->io.compact_followed_at && read_compact_count(t, &count) &&
	       __atomic_load_n(t->io.compact_followed_at, __ATOMIC_ACQUIRE) >= count;
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

	return all_moves_followed(t) && bpf_map_lookup_elem(t->io.live_fd, &addr, &still) != 0;
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
		int ret = bpf_map_lookup_batch(t->io.live_fd, first ? NULL : &in_batch, &out_batch,
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

/* Entries the final pass through a compaction judges again, by their pages. */
struct rejudge {
	uint64_t *keys;
	uint64_t (*headers)[2];
	struct live_object *objs;
	size_t n, cap;
};

/* One pass's flags and phase: what it found before judging, and how it judges. */
struct pass {
	bool final;		  /* the probes are off: the pass only counts */
	bool can_reap;		  /* the reap array is free: dead entries go to BPF */
	bool pending;		  /* BPF flagged a compaction at a sweep's end */
	bool have_count;	  /* GC.stat(:compact_count) was read: count */
	uint64_t count;		  /* ... at the pass's start */
	bool compacting_at_start; /* a compaction was under way as the pass began */
	bool compacted;		  /* objects may have moved, their moves not all followed */
	bool judge_slots;	  /* sampling: slots judged by their pages' facts too */
	bool marks_final;	  /* ... with marks no GC began to change */
	size_t n;		  /* entries dumped */
	size_t queued;		  /* dead entries handed to BPF's reap array */
	struct u64map seqs;	  /* final, through a compaction: how often a seq is dumped */
	struct u64map end_bits;	  /* final: the second look, addr -> seq + 1 */
	bool through;		  /* final, read through a compaction: see judge_by_pages */
	struct u64map counted;	  /* ... the seqs counted alive: each object once */
	struct rejudge rejudge;	  /* ... entries judged again by their pages */
};

static int rejudge_add(struct rejudge *r, uint64_t key, const uint64_t header[2],
		       const struct live_object *obj)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		uint64_t *keys = realloc(r->keys, cap * sizeof(*keys));
		uint64_t (*headers)[2] = keys ? realloc(r->headers, cap * sizeof(*headers)) : NULL;
		struct live_object *objs = headers ? realloc(r->objs, cap * sizeof(*objs)) : NULL;

		if (keys)
			r->keys = keys;
		if (headers)
			r->headers = headers;
		if (!objs)
			return -ENOMEM;
		r->objs = objs;
		r->cap = cap;
	}
	r->keys[r->n] = key;
	memcpy(r->headers[r->n], header, sizeof(r->headers[0]));
	r->objs[r->n++] = *obj;
	return 0;
}

static void rejudge_free(struct rejudge *r)
{
	free(r->keys);
	free(r->headers);
	free(r->objs);
}

/* Before the dump: the GC count, and whether a compaction moved (or moves) objects. */
static void pass_begin(struct tracker *t, struct pass *p)
{
	t->stats.pass_started = now_seconds();
	t->stats.last_settled = false;
	/* Before the headers: an object allocated after this read is young at worst. */
	tracker_read_gc_count(t);
	/* Read the BPF flag first: objects it counts from here on are not in this pass. */
	p->pending =
	    t->io.compaction_pending && __atomic_load_n(t->io.compaction_pending, __ATOMIC_ACQUIRE);
	p->have_count = read_compact_count(t, &p->count);
	p->compacting_at_start = p->have_count && compacting_now(t);
	p->compacted = (p->have_count && p->count > t->gc.last_compact_count) || p->pending;
	/* Every move of every compaction so far was followed: what is gone from its slot died. */
	if (p->compacted && p->have_count && p->count && t->io.compact_followed_at &&
	    __atomic_load_n(t->io.compact_followed_at, __ATOMIC_ACQUIRE) == p->count)
		p->compacted = false;
}

/* The tracked entries, their headers, the final pass's second look and the slots' pages. */
static int pass_read(struct tracker *t, struct pass *p)
{
	int err = tracker_live_map_entries(t, !p->final, &p->n);

	if (err)
		return err;
	t->stats.last_tracked = p->n;
	target_read_many(t->io.pid, t->buf.keys, p->n, sizeof(t->buf.headers[0]), t->buf.headers,
			 t->buf.readable);
	if (p->final && (err = second_look(t, &p->end_bits)))
		return err;
	p->judge_slots = !p->final && t->mode.direct_delete && t->io.hl && t->io.gc_count_addr &&
			 (t->io.hl->fl_age_mask || t->io.hl->page_age_bits);
	if (!p->judge_slots)
		return 0;
	/*
	 * The GC count and phase right before the pages are read: a slot is
	 * judged by the count of the cycle its bits were read in, and a GC the
	 * pass began before has no say in them.
	 */
	if (tracker_gc_phase(t, &t->gc.judge_count, &t->gc.judge_lag)) {
		t->gc.judge_count = t->gc.gc_count;
		t->gc.judge_lag = true;
	}
	err = slot_pages_read(&t->buf.pages, t->io.pid, t->io.hl, t->buf.keys, t->buf.headers, p->n,
			      t->buf.facts);
	if (err)
		return err;
	p->marks_final = tracker_marks_settled(t);
	t->stats.judging_passes++;
	t->stats.unsettled_passes += !p->marks_final;
	t->stats.last_settled = p->marks_final;
	return 0;
}

/*
 * A compaction during the reads moved objects under them, and BPF may be
 * remapping the entries just dumped: judge nothing, look again later (the
 * final pass too, until the session gives up waiting): -EAGAIN.
 */
static int pass_moved_under(struct tracker *t, const struct pass *p)
{
	uint64_t count_after;

	if ((!p->final || !t->mode.judge_through_compaction) && p->have_count &&
	    (p->compacting_at_start || !read_compact_count(t, &count_after) ||
	     count_after != p->count || compacting_now(t)))
		return -EAGAIN;
	if (p->have_count && p->count > t->gc.last_compact_count) {
		t->stats.compactions += p->count - t->gc.last_compact_count;
		t->gc.last_compact_count = p->count;
	}
	return 0;
}

/* The final pass through a compaction: how often each object is in the dump. */
static int pass_count_seqs(struct tracker *t, struct pass *p)
{
	size_t i;

	for (i = 0; p->final && p->compacted && i < p->n; i++) {
		uintptr_t seen = (uintptr_t) u64map_get(&p->seqs, t->buf.values[i].seq + 1);

		if (u64map_put(&p->seqs, t->buf.values[i].seq + 1, (void *) (seen + 1)))
			return -ENOMEM;
	}
	return 0;
}

/*
 * Counts obj alive.  Read through a compaction, one object can be met at
 * its old slot and at its new one (BPF re-keyed it during the dump): its
 * seq counts once.
 */
static void count_alive(struct tracker *t, struct pass *p, const struct live_object *obj)
{
	if (p->through) {
		if (u64map_get(&p->counted, obj->seq + 1))
			return;
		u64map_put(&p->counted, obj->seq + 1, (void *) 1);
	}
	t->stats.live++;
	tracker_count_alive(t, obj);
}

/*
 * The final pass through a compaction met obj's old slot forwarding
 * (T_MOVED): the compaction under way moved it, and BPF re-keys it only
 * once every object has moved.  Alive if its new slot holds it.
 */
static bool moved_alive(struct tracker *t, uint64_t addr, const struct live_object *obj)
{
	uint64_t dest, hdr[2];

	if (target_read_u64(t->io.pid, addr + 16, &dest) || !dest || (dest & 7) ||
	    target_read(t->io.pid, dest, hdr, sizeof(hdr)) ||
	    !object_header_alive(hdr[0], obj->kind))
		return false;
	if (RBM_KIND_TYPE(obj->kind) != RB_T_IMEMO &&
	    !tracker_same_object_class(t, hdr[1], obj->klass))
		return false;
	t->stats.moved_followed++;
	return true;
}

/* Whether the tracked entry i still holds its object, by its header, class, census or page. */
static bool entry_alive(struct tracker *t, const struct pass *p, size_t i, bool *disputed)
{
	const struct live_object *obj = &t->buf.values[i];
	bool judged_dead = t->mode.direct_delete &&
			   (uintptr_t) u64map_get(&t->dead, t->buf.keys[i]) == obj->seq + 1;
	bool alive = !judged_dead && t->buf.readable[i] &&
		     object_header_alive(t->buf.headers[i][0], obj->kind) &&
		     (RBM_KIND_TYPE(obj->kind) == RB_T_IMEMO ||
		      tracker_same_object_class(t, t->buf.headers[i][1], obj->klass));

	/* Garbage keeps a valid header until the sweep reaches it: the marks say dead. */
	if (alive && p->final && t->mode.census && !tracker_census_alive(t, t->buf.keys[i], obj)) {
		/* A census older than a compaction may have read the slot before the object moved in. */
		*disputed = p->through;
		return false;
	}
	if (alive && p->judge_slots &&
	    tracker_slot_dead(t, &t->buf.facts[i], t->buf.headers[i][0], p->marks_final, obj))
		return false;
	return alive;
}

/* A dead entry: deleted now when nothing can race, else handed to BPF or kept for later. */
static void entry_dead(struct tracker *t, struct pass *p, size_t i)
{
	const struct live_object *obj = &t->buf.values[i];

	if (p->final || (t->mode.direct_delete && !t->mode.deletes_wait)) {
		/* Probes are detached: nothing can race with this delete. */
		bpf_map_delete_elem(t->io.live_fd, &t->buf.keys[i]);
		tracker_live_map_written(t);
		return;
	}
	if (p->can_reap && !t->mode.direct_delete && p->queued < REAP_MAX) {
		t->io.reap->addr[p->queued] = t->buf.keys[i];
		t->io.reap->seq[p->queued] = obj->seq;
		p->queued++;
	}
	u64map_put(&t->dead, t->buf.keys[i], (void *) (uintptr_t) (obj->seq + 1));
}

/* Judges the tracked entry i: counted alive, followed where it moved, or dead. */
static void judge_entry(struct tracker *t, struct pass *p, size_t i)
{
	const struct live_object *obj = &t->buf.values[i];
	bool moved = t->buf.readable[i] && (t->buf.headers[i][0] & RB_T_MASK) == RB_T_MOVED;
	uint64_t at_end = p->final ? second_look_says(&p->end_bits, t->buf.keys[i], obj) : 0;
	struct class_tally *tally;
	bool disputed = false;

	/*
	 * Its slot was taken after the end, before the next GC: it was freed
	 * before the end.  Taken later, it may have died at either GC: what
	 * was read decides, as for any other.
	 */
	if (at_end & RBM_SEQ_GONE_AT_END) {
		bpf_map_delete_elem(t->io.live_fd, &t->buf.keys[i]);
		tracker_live_map_written(t);
		return;
	}
	if (entry_alive(t, p, i, &disputed)) {
		count_alive(t, p, obj);
		return;
	}
	if (disputed && !rejudge_add(&p->rejudge, t->buf.keys[i], t->buf.headers[i], obj))
		return;
	if (moved && p->through && moved_alive(t, t->buf.keys[i], obj)) {
		count_alive(t, p, obj);
		return; /* BPF re-keys it when the compaction's moves are done */
	}
	if (moved && follow_move(t, t->buf.keys[i], obj)) {
		count_alive(t, p, obj);
	} else if (p->final && p->compacted && moved_and_followed(t, t->buf.keys[i])) {
		/* Counted where it went, when the dump caught it there too. */
		if (p->through || (uintptr_t) u64map_get(&p->seqs, obj->seq + 1) < 2)
			count_alive(t, p, obj);
		return; /* its old key is gone already */
	} else if (p->compacted && !(p->final && all_moves_followed(t)) &&
		   (tally = tracker_tally_for(t, obj->klass, obj->kind, obj->stack_id))) {
		tally->t.not_followed++;
	}
	entry_dead(t, p, i);
}

/*
 * Read through a compaction, the census is older than the headers: a slot
 * it found free or garbage may hold a tracked object that moved in since,
 * and an object BPF re-keyed during the dump may be missing from it (the
 * second look found it).  Their headers say alive: their pages' marks and
 * ages, read now, judge them.
 */
static int judge_by_pages(struct tracker *t, struct pass *p)
{
	struct rejudge *r = &p->rejudge;
	struct slot_facts *facts = calloc(r->n + 1, sizeof(*facts));
	bool marks_final = false;
	size_t k;

	if (!facts)
		return -ENOMEM;
	if (r->n && t->io.hl && t->io.gc_count_addr) {
		if (tracker_gc_phase(t, &t->gc.judge_count, &t->gc.judge_lag)) {
			t->gc.judge_count = t->gc.gc_count;
			t->gc.judge_lag = true;
		}
		if (slot_pages_read(&t->buf.pages, t->io.pid, t->io.hl, r->keys, r->headers, r->n,
				    facts))
			memset(facts, 0, r->n * sizeof(*facts));
		marks_final = tracker_marks_settled(t);
	}
	for (k = 0; k < r->n; k++) {
		if (facts[k].known &&
		    !tracker_slot_dead(t, &facts[k], r->headers[k][0], marks_final, &r->objs[k])) {
			count_alive(t, p, &r->objs[k]);
		} else {
			bpf_map_delete_elem(t->io.live_fd, &r->keys[k]);
			tracker_live_map_written(t);
		}
	}
	free(facts);
	return 0;
}

/*
 * The entries the second look found and the dump missed: BPF re-keyed
 * them while the dump went through the map's buckets.
 */
static int add_missed(struct tracker *t, struct pass *p)
{
	struct u64map seen = {0};
	size_t i, j;
	int err = 0;

	for (i = 0; i < p->n && !err; i++)
		err = u64map_put(&seen, (t->buf.values[i].seq & ~RBM_SEQ_END_BITS) + 1, (void *) 1);
	u64map_for_each(&p->end_bits, j) {
		uint64_t addr = p->end_bits.keys[j], hdr[2];
		uint64_t seq = (uintptr_t) p->end_bits.values[j] - 1;
		struct live_object obj;

		if (err || (seq & RBM_SEQ_GONE_AT_END) ||
		    u64map_get(&seen, (seq & ~RBM_SEQ_END_BITS) + 1) ||
		    bpf_map_lookup_elem(t->io.live_fd, &addr, &obj) ||
		    (obj.seq & ~RBM_SEQ_END_BITS) != (seq & ~RBM_SEQ_END_BITS) ||
		    target_read(t->io.pid, addr, hdr, sizeof(hdr)) ||
		    !object_header_alive(hdr[0], obj.kind) ||
		    (RBM_KIND_TYPE(obj.kind) != RB_T_IMEMO &&
		     !tracker_same_object_class(t, hdr[1], obj.klass)))
			continue;
		err = rejudge_add(&p->rejudge, addr, hdr, &obj);
	}
	u64map_free(&seen, NULL);
	return err;
}

/* Judges every entry dumped, the living recounted. */
static int pass_judge(struct tracker *t, struct pass *p)
{
	size_t i;
	int err;

	/*
	 * Every pass recounts the living: a report taken while the trace runs
	 * (top's drill-down) shows what was alive at the last pass.
	 */
	tracker_reset_retained(t);
	t->stats.live = 0;
	/*
	 * Sampling keeps its verdicts until the deletes are done: a slot found
	 * taken by a young object holds an old one at the next GC (tracker.h).
	 */
	if (!t->mode.direct_delete)
		tracker_forget_dead(t);
	if ((err = pass_count_seqs(t, p)))
		return err;
	p->through = p->final && t->mode.judge_through_compaction;
	for (i = 0; i < p->n; i++)
		judge_entry(t, p, i);
	if (p->through && ((err = add_missed(t, p)) || (err = judge_by_pages(t, p))))
		return err;
	if (p->queued)
		__atomic_store_n(&t->io.reap->len, (__u32) p->queued, __ATOMIC_RELEASE);
	if (p->pending)
		__atomic_store_n(t->io.compaction_pending, 0, __ATOMIC_RELEASE);
	t->stats.passes++;
	t->stats.pass_seconds += now_seconds() - t->stats.pass_started;
	return 0;
}

/* The pass's steps: begin, read, check nothing moved under the reads, judge. */
static int pass_run(struct tracker *t, struct pass *p)
{
	int err;

	pass_begin(t, p);
	if ((err = pass_read(t, p)))
		return err;
	/* A zombie answers kill() but its memory is gone: its objects did not all die. */
	if (target_gone(t->io.pid))
		return -ESRCH; /* every read failed because the target is gone, not its objects */
	if ((err = pass_moved_under(t, p)))
		return err;
	return pass_judge(t, p);
}

int tracker_pass(struct tracker *t, bool final)
{
	struct pass p = {
	    .final = final,
	    .can_reap = !final && __atomic_load_n(&t->io.reap->len, __ATOMIC_ACQUIRE) == 0,
	};
	int err;

	if (target_gone(t->io.pid))
		return -ESRCH;
	err = pass_run(t, &p);
	u64map_free(&p.seqs, NULL);
	u64map_free(&p.end_bits, NULL);
	u64map_free(&p.counted, NULL);
	rejudge_free(&p.rejudge);
	return err;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The tracker's state and what its passes (tracker_pass.c) share: the
 * tallies, the live map's dump, counting the living, the dead left to
 * delete.
 */
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

int tracker_init(struct tracker *t, pid_t pid, int live_fd, int counts_fd, struct reap_queue *reap,
		 uint64_t compact_count_addr)
{
	memset(t, 0, sizeof(*t));
	t->io.pid = pid;
	t->io.live_fd = live_fd;
	t->io.counts_fd = counts_fd;
	t->io.fallback_fd = -1;
	t->io.class_moves_fd = -1;
	t->io.reap = reap;
	t->io.compact_count_addr = compact_count_addr;
	if (compact_count_addr)
		target_read_u64(pid, compact_count_addr, &t->gc.last_compact_count);
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
void tracker_reset_retained(struct tracker *t)
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
void tracker_count_alive(struct tracker *t, const struct live_object *obj)
{
	struct class_tally *tally = tracker_tally_for(t, obj->klass, obj->kind, obj->stack_id);
	uint64_t now = t->mode.end_gc_count ? t->mode.end_gc_count : t->gc.gc_count;
	uint32_t survived = (uint32_t) now - obj->gc_epoch;
	uint64_t weight;

	if (!tally)
		return;
	weight = t->io.weight_of ? t->io.weight_of(t->io.weight_ctx, obj->seq) : RBM_WEIGHT_ONE;
	if (t->io.gc_count_addr && survived == 0) {
		tally->t.young++;
		tally->t.w_young += weight;
		return;
	}
	tally->t.retained++;
	tally->t.w_retained += weight;
	if (t->io.gc_count_addr)
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
	size_t cap = t->buf.cap ? t->buf.cap : PASS_BATCH;

	while (cap < need)
		cap *= 2;
	if (cap == t->buf.cap)
		return 0;
	t->buf.keys = realloc(t->buf.keys, cap * sizeof(*t->buf.keys));
	t->buf.values = realloc(t->buf.values, cap * sizeof(*t->buf.values));
	t->buf.headers = realloc(t->buf.headers, cap * sizeof(*t->buf.headers));
	t->buf.readable = realloc(t->buf.readable, cap * sizeof(*t->buf.readable));
	t->buf.facts = realloc(t->buf.facts, cap * sizeof(*t->buf.facts));
	if (!t->buf.keys || !t->buf.values || !t->buf.headers || !t->buf.readable || !t->buf.facts)
		return -ENOMEM;
	t->buf.cap = cap;
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
		err = bpf_map_lookup_batch(t->io.live_fd, first ? NULL : &in_batch, &out_batch,
					   t->buf.keys + n, t->buf.values + n, &chunk, &opts);
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
int tracker_live_map_entries(struct tracker *t, bool reuse, size_t *count)
{
	int err;

	if (reuse && t->mode.map_quiet && t->buf.dump_current) {
		*count = t->buf.dump_n;
		t->stats.dumps_reused++;
		return 0;
	}
	err = dump_live_map(t, count);
	t->buf.dump_current = !err;
	t->buf.dump_n = err ? 0 : *count;
	return err;
}

/* The tracker wrote the live map: the next pass reads it again. */
void tracker_live_map_written(struct tracker *t)
{
	t->buf.dump_current = false;
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
bool tracker_same_object_class(struct tracker *t, uint64_t klass, uint64_t tracked)
{
	uint64_t hdr[3];
	int hops;

	if (klass == tracked || !tracked || !klass)
		return true;
	/* Read through a compaction before BPF followed the class: its old slot forwards. */
	if (!target_read(t->io.pid, tracked, hdr, sizeof(hdr)) &&
	    (hdr[0] & RB_T_MASK) == RB_T_MOVED && hdr[2] == klass)
		return true;
	for (hops = 0; hops < MAX_CLASS_HOPS && klass; hops++) {
		uint64_t flags, super;

		if (target_read_u64(t->io.pid, klass, &flags) ||
		    target_read_u64(t->io.pid, klass + t->io.rclass_super, &super))
			return false;
		if (!(flags & t->io.fl_singleton) && (flags & RB_T_MASK) != RB_T_ICLASS)
			return false;
		if (super == tracked)
			return true;
		klass = super;
	}
	return false;
}

void tracker_forget_dead(struct tracker *t)
{
	u64map_free(&t->dead, NULL);
	memset(&t->dead, 0, sizeof(t->dead));
}

int tracker_count_unverified(struct tracker *t)
{
	size_t n, i;
	int err;

	err = tracker_live_map_entries(t, false, &n);
	if (err)
		return err;
	tracker_reset_retained(t);
	for (i = 0; i < n; i++) {
		uintptr_t dead = (uintptr_t) u64map_get(&t->dead, t->buf.keys[i]);

		if (dead != t->buf.values[i].seq + 1)
			tracker_count_alive(t, &t->buf.values[i]);
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
		if (bpf_map_lookup_elem(t->io.live_fd, &addr, &obj) == 0 &&
		    obj.seq + 1 == (uintptr_t) t->dead.values[i]) {
			bpf_map_delete_elem(t->io.live_fd, &addr);
			tracker_live_map_written(t);
		}
	}
	tracker_forget_dead(t);
}

void tracker_free(struct tracker *t)
{
	u64map_free(&t->tallies, free);
	u64map_free(&t->dead, NULL);
	free(t->buf.keys);
	free(t->buf.values);
	free(t->buf.headers);
	free(t->buf.readable);
	free(t->buf.facts);
	slot_pages_free(&t->buf.pages);
}

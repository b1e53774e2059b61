// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What BPF counted per (class, call path), summed over the CPUs into the
 * tracker's tallies: the allocation side of each record, which the passes
 * (tracker.c) complete with what became of the objects.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sort.h"
#include "tracker.h"

static void add_counts(struct tracker *t, const struct class_key *key,
		       const struct class_counts *percpu, int ncpus)
{
	struct class_tally *tally = tracker_tally_for(t, key->klass, key->kind, key->stack_id);
	int cpu;

	if (!tally)
		return;
	for (cpu = 0; cpu < ncpus; cpu++) {
		tally->t.allocated += percpu[cpu].allocated;
		tally->t.w_allocated += percpu[cpu].weight;
		tally->t.untracked += percpu[cpu].untracked;
		tally->not_followed_bpf += percpu[cpu].not_followed;
		tally->t.not_followed += percpu[cpu].not_followed;
		tally->t.window_bits |= percpu[cpu].window_bits;
	}
}

/* The BPF counters are totals: each collection recounts them from zero. */
static void reset_bpf_counts(struct tracker *t)
{
	size_t i;

	u64map_for_each(&t->tallies, i)
	{
		struct class_tally *tally = t->tallies.values[i];

		tally->t.not_followed -= tally->not_followed_bpf;
		tally->t.allocated = tally->t.untracked = tally->not_followed_bpf = 0;
		tally->t.w_allocated = 0;
		tally->t.window_bits = 0;
	}
}

#define COUNTS_BATCH 1024

/*
 * Reads the whole class_counts map a thousand entries a syscall: with call
 * paths it has an entry per (class, path), tens of thousands in a real
 * program, and two syscalls an entry every refresh took a core.
 */
static int collect_counts_batched(struct tracker *t, int fd, int ncpus)
{
	struct class_key *keys = calloc(COUNTS_BATCH, sizeof(*keys));
	struct class_counts *values = calloc((size_t) COUNTS_BATCH * ncpus, sizeof(*values));
	struct class_key token_in, token_out;
	void *in = NULL;
	int err = 0;

	if (!keys || !values) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		__u32 i, count = COUNTS_BATCH;
		bool last;

		err = bpf_map_lookup_batch(fd, in, &token_out, keys, values, &count, &opts);
		last = err && errno == ENOENT;
		if (err && !last) {
			err = -errno;
			break;
		}
		for (i = 0; i < count; i++)
			add_counts(t, &keys[i], &values[(size_t) i * ncpus], ncpus);
		if (last) {
			err = 0;
			break;
		}
		token_in = token_out;
		in = &token_in;
	}
out:
	free(keys);
	free(values);
	return err;
}

static int collect_map(struct tracker *t, int fd, int ncpus)
{
	struct class_key key, next;
	struct class_counts *percpu;
	void *prev = NULL;

	if (collect_counts_batched(t, fd, ncpus) == 0)
		return 0;
	/* A kernel without batch lookups: one key at a time. */
	percpu = calloc(ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, percpu) == 0)
			add_counts(t, &key, percpu, ncpus);
	}
	free(percpu);
	return 0;
}

/* One class move, as the BPF side told it. */
struct class_move {
	uint32_t compaction;
	uint64_t from, to;
};

static int move_order(const void *a, const void *b)
{
	const struct class_move *x = a, *y = b;

	if (x->compaction != y->compaction)
		return x->compaction < y->compaction ? -1 : 1;
	return x->from < y->from ? -1 : x->from > y->from;
}

/* The process's class moves not taken yet, in the order they happened; *n of them. */
static struct class_move *read_class_moves(const struct tracker *t, size_t *n)
{
	int fd = t->io.class_moves_fd;
	struct class_move_key key, next;
	struct class_move *moves = NULL, *grown;
	size_t cap = 0;
	__u64 to, done = __atomic_load_n(t->io.classes_followed_at, __ATOMIC_ACQUIRE);
	bool more = bpf_map_get_next_key(fd, NULL, &next) == 0;

	*n = 0;
	while (more) {
		key = next;
		more = bpf_map_get_next_key(fd, &key, &next) == 0;
		/* A compaction BPF still follows looks its moves up: they stay until it is done. */
		if (key.slot != t->io.slot || (int32_t) (key.compaction - (uint32_t) done) > 0 ||
		    bpf_map_lookup_elem(fd, &key, &to))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(moves, cap * sizeof(*moves));
			if (!grown)
				break; /* the rest stay for the next call */
			moves = grown;
		}
		moves[(*n)++] = (struct class_move){key.compaction, key.from, to};
	}
	sort_array(moves, *n, sizeof(*moves), move_order);
	return moves;
}

/*
 * What a pass counted at a moved class's old address (objects found gone
 * after a compaction not followed) goes to its new one; the old tally is
 * left empty, and has no row unless another class takes that address.
 */
static void follow_move(struct tracker *t, const struct class_move *m)
{
	struct class_tally **olds = NULL, **grown, *now;
	size_t i, n = 0, cap = 0;

	/* Gathered first: the new address's tallies may be made, which can grow the map. */
	u64map_for_each(&t->tallies, i)
	{
		if (t->tallies.values[i] == NULL ||
		    ((struct class_tally *) t->tallies.values[i])->klass != m->from)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			grown = realloc(olds, cap * sizeof(*olds));
			if (!grown)
				break;
			olds = grown;
		}
		olds[n++] = t->tallies.values[i];
	}
	for (i = 0; i < n; i++) {
		olds[i]->moved = true;
		now = tracker_tally_for(t, m->to, olds[i]->kind, olds[i]->stack_id);
		if (!now)
			continue;
		now->t.not_followed += olds[i]->t.not_followed - olds[i]->not_followed_bpf;
		olds[i]->t.not_followed = olds[i]->not_followed_bpf;
	}
	free(olds);
}

/* The classes compactions moved since the last call: tallies, then the session, follow. */
static void take_class_moves(struct tracker *t)
{
	struct class_move_key key = {.slot = t->io.slot};
	struct class_move *moves;
	size_t n, k;

	if (t->io.class_moves_fd < 0 || !t->io.classes_followed_at)
		return;
	moves = read_class_moves(t, &n);
	for (k = 0; k < n; k++) {
		follow_move(t, &moves[k]);
		if (t->io.class_moved)
			t->io.class_moved(t->io.class_moved_ctx, moves[k].from, moves[k].to);
		key.compaction = moves[k].compaction;
		key.from = moves[k].from;
		bpf_map_delete_elem(t->io.class_moves_fd, &key);
	}
	free(moves);
}

int tracker_collect_counts(struct tracker *t)
{
	int ncpus = libbpf_num_possible_cpus();
	int err;

	if (ncpus <= 0)
		return -EINVAL;
	take_class_moves(t);
	reset_bpf_counts(t);
	err = collect_map(t, t->io.counts_fd, ncpus);
	if (!err && t->io.fallback_fd >= 0)
		err = collect_map(t, t->io.fallback_fd, ncpus);
	return err;
}

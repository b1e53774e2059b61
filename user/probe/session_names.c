// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Naming what the BPF side recorded while the target lives: classes (and
 * the --class filter) and new call paths, so that a report taken after the
 * target exits still has them.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "diag.h"
#include "elfinfo.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "session.h"
#include "target_mem.h"

/* Names the call paths the BPF side stored since the last refresh. */
static void refresh_stacks(struct session *s)
{
	size_t value_size = s->slot.stacks_value_size;
	int fd = s->slot.stacks_fd;
	int selves_fd = s->slot.selves_fd;
	struct stack_frames *st = calloc(1, sizeof(*st) > value_size ? sizeof(*st) : value_size);
	struct stack_selves *selves = calloc(1, sizeof(*selves));
	__u64 key, next, *prev = NULL;
	uint64_t stored = __atomic_load_n(&s->st->stacks_stored, __ATOMIC_ACQUIRE);

	/* Walking the map costs a syscall a path: only when there are new ones. */
	if (stored == s->stacks_named)
		goto out;
	s->stacks_named = stored;
	if (!st || !selves)
		goto out;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		bool have_selves;

		key = next;
		prev = &key;
		if (symbolizer_stack(&s->symbolizer, key) || bpf_map_lookup_elem(fd, &key, st))
			continue;
		have_selves = bpf_map_lookup_elem(selves_fd, &key, selves) == 0;
		symbolizer_add_stack(&s->symbolizer, key, (const uint64_t *)st->frames,
				     have_selves ? (const uint64_t *)selves->self : NULL,
				     st->depth > s->opt.depth ? s->opt.depth : st->depth,
				     st->truncated);
		/* Named: the receivers were only needed for that. */
		bpf_map_delete_elem(selves_fd, &key);
	}
out:
	free(selves);
	free(st);
}

/*
 * Names and call paths are resolved while the target lives, so a report
 * taken after it exits still has them.  With --class, classes are sorted
 * into captured and skipped as soon as they are named.
 */
void session_refresh_names(struct session *s)
{
	int filter_fd = s->slot.filter_fd;
	size_t i;

	tracker_collect_counts(&s->tracker);
	u64map_for_each(&s->tracker.tallies, i)
	{
		struct class_tally *t = s->tracker.tallies.values[i];
		const char *name = class_namer_key_name(&s->namer, t->klass, t->kind);

		if (s->opt.nclasses && t->klass && !u64map_get(&s->filtered, t->klass)) {
			__u8 capture = session_class_wanted(s, name);
			__u64 klass = t->klass;

			bpf_map_update_elem(filter_fd, &klass, &capture, BPF_ANY);
			u64map_put(&s->filtered, t->klass, (void *)(uintptr_t)(capture ? 1 : 2));
		}
	}
	if (s->opt.depth)
		refresh_stacks(s);
}


// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Naming what a session counts while the target can be read: classes (and
 * the --class filter that sorts them), and call paths, those the BPF side
 * told of at once (new_stacks.h) and those found in its map.  The lowest
 * of the session's files: it calls none of the others (session.h).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "new_stacks.h"
#include "session.h"

bool session_class_wanted(const struct session *s, const char *name)
{
	int i;

	if (!s->opt.nclasses)
		return true;
	for (i = 0; i < s->opt.nclasses; i++)
		if (strcmp(s->opt.classes[i], name) == 0)
			return true;
	return false;
}

bool session_class_filter(void *s, const char *name)
{
	return session_class_wanted(s, name);
}

/* Names the site an allocation kept when the path map was full (RBM_SITE_ONLY). */
static void name_site(struct session *s, __u64 id)
{
	struct site_path_key key = {.slot = (__u32) s->at.slot.index, .id = id};
	struct site_path site;

	if (!symbolizer_stack(&s->names.symbolizer, id) &&
	    !bpf_map_lookup_elem(bpf_map__fd(s->at.skel->maps.site_paths), &key, &site))
		symbolizer_add_site(&s->names.symbolizer, id, site.iseq, site.pc, site.self_class);
}

/* Names one stored call path: its frames, and its receivers' classes (then dropped). */
static void name_stack(struct session *s, __u64 key, struct stack_frames *st,
		       struct stack_selves *selves)
{
	bool have_selves;

	if (key & RBM_SITE_ONLY) {
		name_site(s, key);
		return;
	}
	if (symbolizer_stack(&s->names.symbolizer, key) ||
	    bpf_map_lookup_elem(s->at.slot.stacks_fd, &key, st))
		return;
	have_selves = bpf_map_lookup_elem(s->at.slot.selves_fd, &key, selves) == 0;
	symbolizer_add_stack(&s->names.symbolizer, key, (const uint64_t *) st->frames,
			     have_selves ? (const uint64_t *) selves->self : NULL,
			     st->depth > s->opt.depth ? s->opt.depth : st->depth, st->truncated);
	bpf_map_delete_elem(s->at.slot.selves_fd, &key);
}

static struct stack_frames *frames_buffer(const struct session *s)
{
	size_t value_size = s->at.slot.stacks_value_size;

	return calloc(1, sizeof(struct stack_frames) > value_size ? sizeof(struct stack_frames)
								  : value_size);
}

/* A call path the BPF side just told of (new_stacks.h): named now, while its iseqs live. */
void session_name_new_stack(void *ctx, uint64_t stack_id)
{
	struct session *s = ctx;
	struct stack_frames *st = frames_buffer(s);
	struct stack_selves *selves = calloc(1, sizeof(*selves));

	pthread_mutex_lock(&s->names.lock);
	if (st && selves && s->opt.depth)
		name_stack(s, stack_id, st, selves);
	pthread_mutex_unlock(&s->names.lock);
	free(selves);
	free(st);
}

/* The sites of this process in the run's site_paths map that no event told of. */
static void name_untold_sites(struct session *s)
{
	int fd = bpf_map__fd(s->at.skel->maps.site_paths);
	struct site_path_key key, next, *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (key.slot == (__u32) s->at.slot.index)
			name_site(s, key.id);
	}
}

/*
 * Names the call paths stored since the last refresh that no event told
 * of (the ring was full): walking the map costs a syscall a path, so only
 * when some were not told.
 */
static void refresh_stacks(struct session *s)
{
	uint64_t untold = __atomic_load_n(&s->at.st->stacks_untold, __ATOMIC_ACQUIRE);
	struct stack_frames *st;
	struct stack_selves *selves;
	__u64 key, next, *prev = NULL;

	if (untold == s->names.untold_named)
		return;
	s->names.untold_named = untold;
	st = frames_buffer(s);
	selves = calloc(1, sizeof(*selves));
	while (st && selves && bpf_map_get_next_key(s->at.slot.stacks_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		name_stack(s, key, st, selves);
	}
	name_untold_sites(s);
	free(selves);
	free(st);
}

/* Forgets what the names and the --class filter held for a class address. */
static void forget_class(struct session *s, uint64_t klass)
{
	__u64 key = klass;

	class_namer_forget(&s->names.namer, klass);
	if (!u64map_get(&s->names.filtered, klass))
		return;
	u64map_put(&s->names.filtered, klass, NULL);
	bpf_map_delete_elem(s->at.slot.filter_fd, &key);
}

void session_class_moved(void *ctx, uint64_t from, uint64_t to)
{
	struct session *s = ctx;

	pthread_mutex_lock(&s->names.lock);
	forget_class(s, from);
	forget_class(s, to); /* a dead class's name may be cached there */
	pthread_mutex_unlock(&s->names.lock);
}

/*
 * Names and call paths are resolved while the target lives, so a report
 * taken after it exits still has them.  With --class, classes are sorted
 * into captured and skipped as soon as they are named.
 */
static void refresh_names_locked(struct session *s);

void session_refresh_names(struct session *s)
{
	new_stacks_flush();
	pthread_mutex_lock(&s->names.lock);
	refresh_names_locked(s);
	pthread_mutex_unlock(&s->names.lock);
}

static void refresh_names_locked(struct session *s)
{
	int filter_fd = s->at.slot.filter_fd;
	size_t i;

	u64map_for_each(&s->tracker.tallies, i)
	{
		struct class_tally *t = s->tracker.tallies.values[i];
		const char *name;

		if (class_tally_moved_away(t))
			continue;
		name = class_namer_key_name(&s->names.namer, t->klass, t->kind);
		if (s->opt.nclasses && t->klass && !u64map_get(&s->names.filtered, t->klass)) {
			__u8 capture = session_class_wanted(s, name);
			__u64 klass = t->klass;

			bpf_map_update_elem(filter_fd, &klass, &capture, BPF_ANY);
			u64map_put(&s->names.filtered, t->klass,
				   (void *) (uintptr_t) (capture ? 1 : 2));
		}
	}
	if (s->opt.depth)
		refresh_stacks(s);
}

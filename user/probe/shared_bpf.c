// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "attach.h"
#include "diag.h"
#include "shared_bpf.h"
#include "rbmemtrace.skel.h"

_Static_assert(sizeof(struct proc_state) % 8 == 0, "procs values are 8-byte aligned");

static struct shared_bpf shared;

struct shared_bpf *shared_bpf(void)
{
	return shared.skel ? &shared : NULL;
}

static size_t page_round(size_t n)
{
	size_t page = sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

static size_t stacks_value_size(unsigned long depth)
{
	return offsetof(struct stack_frames, frames) + depth * 2 * sizeof(__u64);
}

static struct bpf_map *outer_map(struct rbmemtrace_bpf *skel, enum inner_map m)
{
	switch (m) {
	case INNER_LIVE:
		return skel->maps.live_maps;
	case INNER_COUNTS:
		return skel->maps.counts_maps;
	case INNER_FALLBACK:
		return skel->maps.fallback_maps;
	case INNER_STACKS:
		return skel->maps.stacks_maps;
	case INNER_SELVES:
		return skel->maps.selves_maps;
	case INNER_FILTER:
		return skel->maps.filter_maps;
	default:
		return skel->maps.reap_maps;
	}
}

/* The stacks maps sized for depth; the programs of the link kind (multi or one per probe). */
static void shape_programs(struct rbmemtrace_bpf *skel, unsigned long depth, bool multi)
{
	/* Store only the frames asked for: a 128-deep value for a depth of 8 wastes memory. */
	bpf_map__set_value_size(bpf_map__inner_map(skel->maps.stacks_maps),
				stacks_value_size(depth));
	bpf_map__set_value_size(bpf_map__inner_map(skel->maps.selves_maps), depth * sizeof(__u64));
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.on_alloc_return_multi,
						      RBM_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.on_alloc_sweep,
						      RBM_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.on_alloc_store_entry_multi,
						      RBM_BPF_TRACE_UPROBE_MULTI);
		/* Only links to a kernel without uprobe_multi use it: ~55 ms to verify. */
		bpf_program__set_autoload(skel->progs.on_alloc_return, false);
		bpf_program__set_autoload(skel->progs.on_alloc_store_entry, false);
	} else {
		bpf_program__set_autoload(skel->progs.on_alloc_return_multi, false);
		bpf_program__set_autoload(skel->progs.on_alloc_sweep, false);
		bpf_program__set_autoload(skel->progs.on_alloc_store_entry_multi, false);
	}
	/* the watch's programs: loaded with the watcher (shared_bpf_watch_program) */
	bpf_program__set_autoload(skel->progs.on_watched_write, false);
	bpf_program__set_autoload(skel->progs.on_container_call, false);
	bpf_program__set_autoload(skel->progs.on_container_call_multi, false);
}

/* Each per-process inner map's shape, as its template in the object says. */
static void read_shapes(struct rbmemtrace_bpf *skel, struct inner_shape *shapes)
{
	int m;

	for (m = 0; m < INNER_MAPS; m++) {
		struct bpf_map *tmpl = bpf_map__inner_map(outer_map(skel, m));

		shapes[m] = (struct inner_shape){
		    .type = bpf_map__type(tmpl),
		    .key_size = bpf_map__key_size(tmpl),
		    .value_size = bpf_map__value_size(tmpl),
		    .max_entries = bpf_map__max_entries(tmpl),
		    .flags = bpf_map__map_flags(tmpl),
		};
	}
}

int shared_bpf_load(unsigned long depth, bool multi)
{
	struct inner_shape shapes[INNER_MAPS];
	struct rbmemtrace_bpf *skel;
	void *states;
	size_t size;
	int err;

	if (!depth)
		depth = 1;
	skel = rbmemtrace_bpf__open();
	if (!skel)
		return -errno;
	shape_programs(skel, depth, multi);
	read_shapes(skel, shapes);
	err = rbmemtrace_bpf__load(skel);
	if (err) {
		rbmemtrace_bpf__destroy(skel);
		return err;
	}
	size = page_round(sizeof(struct proc_state) * RBM_MAX_SLOTS);
	states =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(skel->maps.procs), 0);
	if (states == MAP_FAILED) {
		err = -errno;
		rbmemtrace_bpf__destroy(skel);
		return err;
	}
	shared = (struct shared_bpf){.skel = skel,
				     .use_multi = multi,
				     .depth = depth,
				     .states = states,
				     .states_size = size};
	memcpy(shared.shapes, shapes, sizeof(shapes));
	return 0;
}

static struct {
	pthread_mutex_t lock;
	struct rbmemtrace_bpf *skel;
	int err;
	pthread_t thread;
	bool started; /* loading ahead (shared_bpf_watch_prepare) */
} watcher = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int load_apart(struct rbmemtrace_bpf *w, struct bpf_program *prog,
		      struct rbmemtrace_bpf **out);

/* The object again, with on_watched_write alone, each of its maps the loaded object's. */
static int load_watcher(struct rbmemtrace_bpf **out)
{
	struct rbmemtrace_bpf *w = rbmemtrace_bpf__open();

	return w ? load_apart(w, w->progs.on_watched_write, out) : -errno;
}

/*
 * The object again, with prog alone (w's), each of its maps the loaded
 * object's: a program loaded apart, when first asked for.
 */
static int load_apart(struct rbmemtrace_bpf *w, struct bpf_program *prog,
		      struct rbmemtrace_bpf **out)
{
	struct bpf_program *p;
	struct bpf_map *m;
	int err = 0;

	bpf_object__for_each_program(p, w->obj)
		bpf_program__set_autoload(p, p == prog);
	bpf_object__for_each_map(m, w->obj) {
		struct bpf_map *own = bpf_object__find_map_by_name(shared.skel->obj, bpf_map__name(m));

		if (!own)
			err = -ENOENT;
		else
			err = bpf_map__reuse_fd(m, bpf_map__fd(own));
		if (err)
			break;
	}
	if (!err)
		err = rbmemtrace_bpf__load(w);
	if (err) {
		rbmemtrace_bpf__destroy(w);
		return err;
	}
	*out = w;
	return 0;
}

static void *load_ahead(void *arg)
{
	struct bpf_program *prog;

	(void) arg;
	shared_bpf_watch_program(&prog);
	return NULL;
}

void shared_bpf_watch_prepare(void)
{
	pthread_mutex_lock(&watcher.lock);
	if (!watcher.started && !watcher.skel && !watcher.err && shared.skel)
		watcher.started = !pthread_create(&watcher.thread, NULL, load_ahead, NULL);
	pthread_mutex_unlock(&watcher.lock);
}

void shared_bpf_watch_join(void)
{
	bool started;

	pthread_mutex_lock(&watcher.lock);
	started = watcher.started;
	watcher.started = false;
	pthread_mutex_unlock(&watcher.lock);
	if (started)
		pthread_join(watcher.thread, NULL);
}

int shared_bpf_watch_program(struct bpf_program **prog)
{
	int err;

	pthread_mutex_lock(&watcher.lock);
	if (!watcher.skel && !watcher.err)
		watcher.err = shared.skel ? load_watcher(&watcher.skel) : -EINVAL;
	*prog = watcher.skel ? watcher.skel->progs.on_watched_write : NULL;
	err = watcher.err;
	pthread_mutex_unlock(&watcher.lock);
	return err;
}

/* The watch's uprobe fallback's program, loaded apart as the watcher is, only where it is used. */
static struct {
	pthread_mutex_t lock;
	struct rbmemtrace_bpf *skel;
	int err;
} caller = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int load_caller(struct rbmemtrace_bpf **out)
{
	struct rbmemtrace_bpf *w = rbmemtrace_bpf__open();

	if (!w)
		return -errno;
	if (!shared.use_multi)
		return load_apart(w, w->progs.on_container_call, out);
	bpf_program__set_expected_attach_type(w->progs.on_container_call_multi,
					      RBM_BPF_TRACE_UPROBE_MULTI);
	return load_apart(w, w->progs.on_container_call_multi, out);
}

int shared_bpf_watch_call_program(struct bpf_program **prog)
{
	int err;

	pthread_mutex_lock(&caller.lock);
	if (!caller.skel && !caller.err)
		caller.err = shared.skel ? load_caller(&caller.skel) : -EINVAL;
	*prog = !caller.skel	   ? NULL
		: shared.use_multi ? caller.skel->progs.on_container_call_multi
				   : caller.skel->progs.on_container_call;
	err = caller.err;
	pthread_mutex_unlock(&caller.lock);
	return err;
}

/* The live-object map being made ahead (shared_bpf_prepare_live_map). */
static struct {
	pthread_t thread;
	bool started;
	__u32 max_entries;
	int fd; /* -errno if it failed */
} ahead;

/* Its shape is the template's (bpf/rbmemtrace.bpf.c: struct live_map); proc_slot_open checks. */
static void *create_live_map(void *arg)
{
	(void) arg;
	ahead.fd = bpf_map_create(BPF_MAP_TYPE_HASH, "live_objects", sizeof(__u64),
				  sizeof(struct live_object), ahead.max_entries, NULL);
	if (ahead.fd < 0)
		ahead.fd = -errno;
	return NULL;
}

void shared_bpf_prepare_live_map(unsigned long max_objects)
{
	if (ahead.started || shared.skel)
		return;
	ahead.max_entries = max_objects;
	ahead.started = pthread_create(&ahead.thread, NULL, create_live_map, NULL) == 0;
}

/* The map made ahead if it has this shape and size, else -1 (and it is closed). */
static int take_ahead(const struct inner_shape *sh, __u32 max_entries)
{
	int fd;

	if (!ahead.started)
		return -1;
	pthread_join(ahead.thread, NULL);
	ahead.started = false;
	fd = ahead.fd;
	if (fd >= 0 && (sh->type != BPF_MAP_TYPE_HASH || sh->key_size != sizeof(__u64) ||
			sh->value_size != sizeof(struct live_object) || sh->flags ||
			max_entries != ahead.max_entries)) {
		close(fd);
		fd = -1;
	}
	return fd < 0 ? -1 : fd;
}

/* A slot's map made, not yet in its outer map (outer_maps_set). */
static int inner_map(enum inner_map m, const char *name, __u32 max_entries, int *fd_out)
{
	const struct inner_shape *sh = &shared.shapes[m];
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = sh->flags);
	int fd = -1;

	if (m == INNER_LIVE)
		fd = take_ahead(sh, max_entries ? max_entries : sh->max_entries);
	if (fd < 0)
		fd = bpf_map_create(sh->type, name, sh->key_size, sh->value_size,
				    max_entries ? max_entries : sh->max_entries, &opts);
	if (fd < 0)
		return -errno;
	*fd_out = fd;
	return 0;
}

/*
 * Each update or delete of an outer map waits for an RCU grace period
 * (the kernel's maybe_wait_bpf_programs), ~10 ms here: one after another,
 * a slot's seven took 80 ms to open and as much to close, and --all's
 * Rubies that start every 0.25 s queued up.  From a thread each, their
 * waits overlap.
 */
struct outer_op {
	pthread_t thread;
	int outer_fd, fd; /* fd < 0: delete */
	__u32 key;
	int err;
	bool started;
};

static void *outer_op_run(void *arg)
{
	struct outer_op *op = arg;
	int ret = op->fd >= 0 ? bpf_map_update_elem(op->outer_fd, &op->key, &op->fd, BPF_ANY)
			      : bpf_map_delete_elem(op->outer_fd, &op->key);

	op->err = ret ? -errno : 0;
	return NULL;
}

/* The slot's entry of every outer map set to fds[m] (< 0: deleted).  0 or the first -errno. */
static int outer_maps_set(int index, const int *fds)
{
	struct outer_op ops[INNER_MAPS];
	int m, err = 0;

	for (m = 0; m < INNER_MAPS; m++) {
		ops[m] = (struct outer_op){.outer_fd = bpf_map__fd(outer_map(shared.skel, m)),
					   .fd = fds[m],
					   .key = (__u32) index};
		ops[m].started = pthread_create(&ops[m].thread, NULL, outer_op_run, &ops[m]) == 0;
		if (!ops[m].started)
			outer_op_run(&ops[m]);
	}
	for (m = 0; m < INNER_MAPS; m++) {
		if (ops[m].started)
			pthread_join(ops[m].thread, NULL);
		if (!err && fds[m] >= 0)
			err = ops[m].err;
	}
	return err;
}

/*
 * One entry per (class, call path), and per (class, site) once the path map
 * is full (RBM_SITE_ONLY); a full table falls back to the per-class one.
 * Tests only: RBMEMTRACE_COUNTS_ENTRIES=N makes it N, to fill it at will.
 */
static __u32 counts_entries(bool stacks, unsigned long max_stacks)
{
	const char *test = getenv("RBMEMTRACE_COUNTS_ENTRIES");

	if (test && atoi(test) > 0) {
		rbm_warn("RBMEMTRACE_COUNTS_ENTRIES=%s: the (class, path) table is made small on "
			 "purpose (tests)",
			 test);
		return (__u32) atoi(test);
	}
	return stacks ? max_stacks + 65536 : 65536;
}

/* A slot's map fds in enum inner_map's order. */
static void slot_fds(const struct proc_slot *ps, int *fds)
{
	fds[INNER_LIVE] = ps->live_fd;
	fds[INNER_COUNTS] = ps->counts_fd;
	fds[INNER_FALLBACK] = ps->fallback_fd;
	fds[INNER_STACKS] = ps->stacks_fd;
	fds[INNER_SELVES] = ps->selves_fd;
	fds[INNER_FILTER] = ps->filter_fd;
	fds[INNER_REAP] = ps->reap_fd;
}

int proc_slot_open(struct proc_slot *ps, unsigned long max_objects, unsigned long max_stacks,
		   bool stacks)
{
	struct rbmemtrace_bpf *skel = shared.skel;
	void *reap;
	int i, err;

	memset(ps, 0, sizeof(*ps));
	ps->index = -1;
	ps->live_fd = ps->counts_fd = ps->fallback_fd = ps->stacks_fd = ps->selves_fd =
	    ps->filter_fd = ps->reap_fd = -1;
	if (!skel)
		return -EINVAL;
	for (i = 0; i < RBM_MAX_SLOTS && shared.used[i]; i++)
		;
	if (i == RBM_MAX_SLOTS)
		return -ENOSPC;
	shared.used[i] = true;
	ps->index = i;
	ps->st = &shared.states[i];
	memset(ps->st, 0, sizeof(*ps->st));
	ps->stacks_value_size = shared.shapes[INNER_STACKS].value_size;
	/* Entries are allocated as they come: the sizes are bounds. */
	err = inner_map(INNER_LIVE, "live_objects", max_objects, &ps->live_fd) ?:
	      inner_map(INNER_COUNTS, "class_counts", counts_entries(stacks, max_stacks),
			&ps->counts_fd) ?:
	      inner_map(INNER_FALLBACK, "class_fallback", RBM_FALLBACK_CLASSES,
			&ps->fallback_fd) ?:
	      inner_map(INNER_STACKS, "stacks", max_stacks, &ps->stacks_fd) ?:
	      inner_map(INNER_SELVES, "stack_selves", max_stacks, &ps->selves_fd) ?:
	      inner_map(INNER_FILTER, "class_filter", 0, &ps->filter_fd) ?:
	      inner_map(INNER_REAP, "reap", 0, &ps->reap_fd);
	if (!err) {
		int fds[INNER_MAPS];

		slot_fds(ps, fds);
		err = outer_maps_set(i, fds);
	}
	if (err) {
		proc_slot_close(ps);
		return err;
	}
	reap = mmap(NULL, page_round(sizeof(struct reap_queue)), PROT_READ | PROT_WRITE, MAP_SHARED,
		    ps->reap_fd, 0);
	if (reap == MAP_FAILED) {
		err = -errno;
		proc_slot_close(ps);
		return err;
	}
	ps->reap = reap;
	return 0;
}

/* Every entry of a map whose key holds a slot number at slot_off, of that slot, deleted. */
static void drop_slot_entries(int fd, size_t key_size, size_t slot_off, int slot)
{
	unsigned char key[64], next[64];
	bool more = key_size <= sizeof(key) && bpf_map_get_next_key(fd, NULL, next) == 0;
	__u32 at;

	while (more) {
		memcpy(key, next, key_size);
		more = bpf_map_get_next_key(fd, key, next) == 0;
		memcpy(&at, key + slot_off, sizeof(at));
		if (at == (__u32) slot)
			bpf_map_delete_elem(fd, key);
	}
}

/* A slot's sites (RBM_SITE_ONLY) leave the run's site_paths map with it. */
static void drop_sites(int slot)
{
	drop_slot_entries(bpf_map__fd(shared.skel->maps.site_paths), sizeof(struct site_path_key),
			  offsetof(struct site_path_key, slot), slot);
}

/* And so do the class moves userspace has not taken (struct class_move_key). */
static void drop_class_moves(int slot)
{
	drop_slot_entries(bpf_map__fd(shared.skel->maps.class_moves),
			  sizeof(struct class_move_key), offsetof(struct class_move_key, slot), slot);
}

void proc_slot_close(struct proc_slot *ps)
{
	int none[INNER_MAPS], fds[INNER_MAPS], i = ps->index, m;

	if (!ps->st || !shared.skel)
		return;
	if (ps->reap)
		munmap(ps->reap, page_round(sizeof(struct reap_queue)));
	ps->reap = NULL;
	for (m = 0; m < INNER_MAPS; m++)
		none[m] = -1;
	/* Deleting an entry never there is harmless: a half-open slot closes the same way. */
	outer_maps_set(i, none);
	slot_fds(ps, fds);
	for (m = 0; m < INNER_MAPS; m++)
		if (fds[m] >= 0)
			close(fds[m]);
	ps->live_fd = ps->counts_fd = ps->fallback_fd = ps->stacks_fd = ps->selves_fd =
	    ps->filter_fd = ps->reap_fd = -1;
	drop_sites(i);
	drop_class_moves(i);
	memset(ps->st, 0, sizeof(*ps->st));
	shared.used[i] = false;
	ps->st = NULL;
	ps->index = -1;
}

/*
 * Taking a uprobe link off waits for grace periods that the kernel runs
 * one link after another (~50 ms each here): the last GC and launch links
 * of a run kept the user waiting ~0.3 s after the report, even once the
 * process had called exit.  A child forked now holds a reference to every
 * link and map, so the parent's own closes (and its exit) are not the last
 * and return at once.  The child waits for the parent to be gone (the
 * pipe's write end closes with it), then exits: the breakpoints come off
 * then.  It keeps no terminal or pipe of the caller open, and calls only
 * async-signal-safe functions (the parent has threads).
 */
void shared_bpf_release_after_exit(void)
{
	static bool forked;
	int gone[2], null;
	pid_t pid;
	char c;

	/* Once per run: the sessions of a run end together, and their links are all there. */
	if (forked || !shared.skel || pipe(gone))
		return;
	forked = true;
	pid = fork();
	if (pid < 0) {
		close(gone[0]);
		close(gone[1]);
		return;
	}
	if (pid > 0) {
		close(gone[0]);
		return; /* gone[1] closes when this process exits */
	}
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	close(gone[1]);
	while (read(gone[0], &c, 1) < 0 && errno == EINTR)
		;
	_exit(0); /* forked child: the links it kept are let go with it */
}

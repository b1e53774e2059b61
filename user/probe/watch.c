// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* watch.h: breakpoints on the words that count containers' entries, per thread, moved as they move. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "diag.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "shared_bpf.h"
#include "slot_pages.h"
#include "target_mem.h"
#include "watch.h"
#include "watch_uprobe.h"

/* One container's watch: its word, and an event (a link) per thread. */
struct watching {
	struct watch_result *r;
	struct watch_word word;
	uint32_t index; /* in the BPF watches map: slot * RBM_MAX_WATCHES + i */
	uint32_t i;
	bool active;
	/* its age when armed: a younger object in its slot is another one (see slot_renewed) */
	bool aged;
	uint8_t age;
	pid_t *tids;
	struct bpf_link **links;
	size_t n, cap;
};

static int open_breakpoint(pid_t tid, uint64_t addr)
{
	struct perf_event_attr a = {
	    .type = PERF_TYPE_BREAKPOINT,
	    .size = sizeof(a),
	    .bp_type = HW_BREAKPOINT_W,
	    .bp_addr = addr,
	    .bp_len = HW_BREAKPOINT_LEN_8,
	    .sample_period = 1,
	    .inherit = 1,  /* the threads it makes, from their first instruction */
	    .disabled = 1, /* enabled once the program is attached */
	    .exclude_kernel = 1,
	    .exclude_hv = 1,
	};

	return (int) syscall(__NR_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void close_events(struct watching *w)
{
	size_t k;

	for (k = 0; k < w->n; k++)
		bpf_link__destroy(w->links[k]);
	w->n = 0;
}

/* A breakpoint in thread tid on w's word, the program on it.  0, or -errno. */
static int watch_thread(const struct watch_target *t, struct watching *w, pid_t tid)
{
	LIBBPF_OPTS(bpf_perf_event_opts, o, .bpf_cookie = RBM_COOKIE(t->slot, w->i));
	struct bpf_link *link;
	int fd, err;

	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		pid_t *tids = realloc(w->tids, cap * sizeof(*tids));
		struct bpf_link **links = tids ? realloc(w->links, cap * sizeof(*links)) : NULL;

		if (tids)
			w->tids = tids;
		if (!links)
			return -ENOMEM;
		w->links = links;
		w->cap = cap;
	}
	fd = open_breakpoint(tid, w->word.addr);
	if (fd < 0)
		return -errno;
	link = bpf_program__attach_perf_event_opts(t->prog, fd, &o);
	if (!link) {
		err = -errno;
		close(fd);
		return err;
	}
	w->tids[w->n] = tid;
	w->links[w->n++] = link;
	return 0;
}

static bool has_tid(const struct watching *w, pid_t tid)
{
	size_t k;

	for (k = 0; k < w->n; k++)
		if (w->tids[k] == tid)
			return true;
	return false;
}

/* Every thread of the target not yet watched by w, watched.  -ESRCH: the target is gone. */
static int watch_new_threads(const struct watch_target *t, struct watching *w)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	if (!(dir = opendir(path)))
		return -ESRCH;
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t) atoi(d->d_name);

		if (tid <= 0 || has_tid(w, tid))
			continue;
		if (w->n >= WATCH_MAX_THREADS) {
			w->r->threads_refused++;
			continue;
		}
		err = watch_thread(t, w, tid);
		if (err == -ENOMEM)
			break;
		if (err && err != -ESRCH)
			w->r->threads_refused++;
	}
	closedir(dir);
	if (w->n > w->r->threads)
		w->r->threads = (uint32_t) w->n;
	return 0;
}

/* The GC age of the object at addr (flags: its first word); false when it says nothing. */
bool watch_slot_age(const struct watch_target *t, uint64_t addr, uint64_t flags, uint8_t *age)
{
	struct slot_pages sp = {0};
	struct slot_facts fact;
	const uint64_t header[1][2] = {{flags, 0}};
	bool known = slot_pages_read(&sp, t->pid, t->l, &addr, header, 1, &fact) == 0 &&
		     fact.known && !fact.unprotected;

	slot_pages_free(&sp);
	*age = fact.age;
	return known;
}

/*
 * Whether the slot holds another object than the one armed: a container
 * is old (a verdict's point gathered new objects), and ages only grow; one
 * freed and its slot taken by a new object of its type between two looks
 * is younger.  (An object the write barrier does not protect never ages:
 * nothing is known then.)
 */
static bool slot_renewed(const struct watch_target *t, struct watching *w, uint64_t flags)
{
	uint8_t age;

	if (!w->aged || !watch_slot_age(t, w->r->addr, flags, &age))
		return false;
	return age < w->age;
}

/* The container's word now, and the count it holds.  0, or -errno (gone, or another form). */
static int read_word(const struct watch_target *t, struct watching *w, struct watch_word *ww,
		     uint64_t *count)
{
	const struct watch_result *r = w->r;
	uint64_t words[64], word;
	uint32_t len = r->slot_size < sizeof(words) ? r->slot_size : sizeof(words);
	int err;

	if ((err = target_read(t->pid, r->addr, words, len)))
		return err;
	if ((words[0] & 0x1f) != r->type || slot_renewed(t, w, words[0]))
		return -ENOENT; /* freed, or moved away by GC.compact */
	if ((err = watch_word_of(t->l, r->type, r->addr, words, len, ww)) ||
	    (err = target_read(t->pid, ww->addr, &word, sizeof(word))))
		return err;
	*count = watch_count(ww, word);
	return 0;
}

static int state_fd(const struct watch_target *t)
{
	return bpf_map__fd(t->skel->maps.watches);
}

/* Arms w's BPF state on word with its count now; disarmed first while it changes. */
static void arm(const struct watch_target *t, struct watching *w, const struct watch_word *word,
		uint64_t count)
{
	struct watch_state st = {0};

	bpf_map_lookup_elem(state_fd(t), &w->index, &st);
	st.armed = 0;
	bpf_map_update_elem(state_fd(t), &w->index, &st, BPF_ANY);
	st.addr = word->addr;
	st.mask = word->mask;
	st.shift = word->shift;
	st.obj = w->r->addr;
	st.flags_mask = word->flags_mask;
	st.flags_want = word->flags_want;
	st.last = count;
	st.armed = 1;
	bpf_map_update_elem(state_fd(t), &w->index, &st, BPF_ANY);
	w->word = *word;
}

static void end_watch(struct watching *w, const char *why)
{
	if (why && !w->r->ended[0])
		snprintf(w->r->ended, sizeof(w->r->ended), "%s", why);
	close_events(w);
	w->active = false;
}

/* One tick: the container read again (its word moved, or it is gone), new threads watched. */
static int tick(const struct watch_target *t, struct watching *w)
{
	struct watch_word now;
	uint64_t count;
	int err = read_word(t, w, &now, &count);

	if (err == -ESRCH)
		return err;
	if (err) {
		end_watch(w, err == -ENOENT ? "the container was freed or moved (GC.compact)"
					    : "the container took a form that cannot be watched");
		return 0;
	}
	w->r->size_after = count;
	if (now.addr != w->word.addr) {
		close_events(w);
		arm(t, w, &now, count);
		w->r->form = now.form;
		w->r->moves++;
		return watch_new_threads(t, w);
	}
	return 0;
}

/* The start of w: its word read, its state armed, every thread watched.  0, or -errno. */
static int start_one(const struct watch_target *t, struct watching *w)
{
	struct watch_word ww;
	uint64_t count, flags;
	int err = read_word(t, w, &ww, &count);

	if (err) {
		snprintf(w->r->ended, sizeof(w->r->ended), "%s",
			 err == -ESRCH ? "the target is gone" : "its form cannot be watched");
		return err;
	}
	w->r->form = ww.form;
	w->r->size_before = w->r->size_after = count;
	w->aged = target_read_u64(t->pid, w->r->addr, &flags) == 0 &&
		  watch_slot_age(t, w->r->addr, flags, &w->age) && w->age > 0;
	arm(t, w, &ww, count);
	if ((err = watch_new_threads(t, w)))
		return err;
	if (!w->n) {
		snprintf(w->r->ended, sizeof(w->r->ended),
			 "no breakpoint could be set (%u threads refused: no free debug register, or "
			 "no breakpoint PMU)",
			 w->r->threads_refused);
		return -EBUSY;
	}
	w->r->watched = w->active = true;
	return 0;
}

static int by_count(const void *a, const void *b)
{
	const struct watch_path *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/*
 * Entries added while the watch moved to the container's new word (the add
 * that moved it, and those before the next tick): counted, without a path.
 * Without deletes the count then is the container's growth, exactly.
 */
static void add_unseen(struct watch_result *r)
{
	uint64_t grew = r->size_after > r->size_before ? r->size_after - r->size_before : 0;

	if (grew > r->count) {
		r->missed += grew - r->count;
		r->count = grew;
	}
}

/* The BPF side's figures and paths of each watch, read and then taken out of its maps. */
static void collect(const struct watch_target *t, struct watching *ws, size_t n)
{
	int fd = bpf_map__fd(t->skel->maps.insertions);
	struct insertion_key key, next, *prev = NULL;
	struct watch_state st, zero = {0};
	uint64_t count;
	size_t i;

	for (i = 0; i < n; i++) {
		/* a watch by calls has its figures from watch_calls_finish */
		if (!ws[i].r->by_call && bpf_map_lookup_elem(state_fd(t), &ws[i].index, &st) == 0) {
			ws[i].r->count = st.added;
			ws[i].r->missed = st.no_path + st.unread;
			ws[i].r->hits = st.hits;
		}
		add_unseen(ws[i].r);
		bpf_map_update_elem(state_fd(t), &ws[i].index, &zero, BPF_ANY);
	}
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		struct watch_result *r;
		struct watch_path *p;

		key = next;
		prev = &key;
		if ((int) key.slot != t->slot || key.watch >= n ||
		    bpf_map_lookup_elem(fd, &key, &count))
			continue;
		r = ws[key.watch].r;
		if (!(p = realloc(r->paths, (r->npaths + 1) * sizeof(*p))))
			break;
		r->paths = p;
		r->paths[r->npaths++] = (struct watch_path){key.stack_id, count};
	}
	for (i = 0; i < n; i++) {
		struct watch_result *r = ws[i].r;
		size_t k;

		for (k = 0; k < r->npaths; k++)
			bpf_map_delete_elem(fd, &(struct insertion_key){(uint32_t) t->slot, (uint32_t) i,
									 r->paths[k].stack_id});
		if (r->npaths)
			qsort(r->paths, r->npaths, sizeof(*r->paths), by_count);
	}
}

/* Whether the traps so far cost more than the budget allows (each watch's hits read, calls). */
static bool over_budget(const struct watch_target *t, struct watching *ws, size_t n,
			double elapsed, double calls_cost)
{
	struct watch_state st;
	uint64_t hits = 0;
	size_t i;

	if (t->budget_percent <= 0 || elapsed < WATCH_MIN_SECONDS)
		return false;
	for (i = 0; i < n; i++)
		if (bpf_map_lookup_elem(state_fd(t), &ws[i].index, &st) == 0)
			hits += st.hits;
	return hits * WATCH_TRAP_COST_S + calls_cost > elapsed * t->budget_percent / 100;
}

struct watch_run {
	struct watch_target t;
	struct watching ws[RBM_MAX_WATCHES];
	struct watch_result *r;
	size_t n;
	double t0, end, next_tick;
	uint64_t hits_charged;
	double calls_charged; /* seconds */
	struct watch_calls *calls; /* the fallback's uprobes (watch_uprobe.h), or NULL */
	bool gone, over;
};

/*
 * w started, or -EBUSY for the fallback: no breakpoint at all, or one in
 * some threads only (the others' writes would go unseen, and their
 * increases be counted at the next trap, on its line), or forced.
 */
static int start_or_fall_back(const struct watch_target *t, struct watching *w, bool forced)
{
	int err = forced ? -EBUSY : start_one(t, w);

	if (err || !w->r->threads_refused)
		return err;
	end_watch(w, NULL);
	w->r->watched = false;
	snprintf(w->r->ended, sizeof(w->r->ended),
		 "a breakpoint in %u threads only, %u refused (no free debug register)",
		 w->r->threads, w->r->threads_refused);
	return -EBUSY;
}

/*
 * The containers no breakpoint could be had for (which[0 .. n)), watched by
 * uprobes instead; their results say so, or why not.  Returns how many.
 */
static size_t start_fallback(struct watch_run *w, const uint32_t *which, size_t n)
{
	char err[160];
	size_t k, on = 0;
	int ret;

	if (!n)
		return 0;
	ret = watch_calls_start(&w->calls, &w->t, w->r, which, n, err, sizeof(err));
	for (k = 0; k < n; k++) {
		struct watch_result *r = &w->r[which[k]];
		size_t len = strlen(r->ended);

		if (r->by_call)
			on++;
		else if (ret && ret != -EINVAL) /* -EINVAL: each result says why */
			snprintf(r->ended + len, sizeof(r->ended) - len, "%suprobes: %s",
				 len ? "; " : "", err);
	}
	return on;
}

int watch_run_start(struct watch_run **out, const struct watch_target *t, struct watch_result *r,
		    size_t n, double seconds, char *err_msg, size_t errlen)
{
	struct watch_run *w = calloc(1, sizeof(*w));
	uint32_t fallback[RBM_MAX_WATCHES];
	size_t i, active = 0, nfallback = 0;
	bool forced = watch_calls_forced();
	int err;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->t = *t;
	if ((err = shared_bpf_watch_program(&w->t.prog))) {
		snprintf(err_msg, errlen, "no watchpoint program: %s", strerror(-err));
		for (i = 0; i < n && i < RBM_MAX_WATCHES; i++)
			snprintf(r[i].ended, sizeof(r[i].ended), "no watchpoint program: %s",
				 strerror(-err));
		free(w);
		return err;
	}
	w->r = r;
	w->n = n > RBM_MAX_WATCHES ? RBM_MAX_WATCHES : n;
	w->t0 = now_seconds();
	w->end = seconds > 0 ? w->t0 + seconds : 0;
	w->next_tick = w->t0 + WATCH_TICK_MS / 1e3;
	for (i = 0; i < w->n; i++) {
		w->ws[i] = (struct watching){.r = &r[i], .i = (uint32_t) i,
					     .index = (uint32_t) t->slot * RBM_MAX_WATCHES + (uint32_t) i};
		if (start_or_fall_back(&w->t, &w->ws[i], forced) == -EBUSY)
			fallback[nfallback++] = (uint32_t) i;
		else if (w->ws[i].active)
			active++;
	}
	active += start_fallback(w, fallback, nfallback);
	if (seconds > 0)
		rbm_info("watch: %zu of %zu containers armed, for %.1f s", active, w->n, seconds);
	else
		rbm_info("watch: %zu of %zu containers armed, until the trace ends", active, w->n);
	if (!active) {
		snprintf(err_msg, errlen, "no container could be watched: %s",
			 w->n ? r[0].ended : "none asked");
		w->gone = true; /* nothing to step: finished as it is */
		watch_run_finish(w);
		return -EBUSY;
	}
	*out = w;
	return 0;
}

double watch_run_next(const struct watch_run *w)
{
	return w->next_tick;
}

bool watch_run_step(struct watch_run *w, double now)
{
	size_t i;

	if (w->gone || w->over || (w->end && now >= w->end))
		return false;
	if (now < w->next_tick)
		return true;
	w->next_tick = now + WATCH_TICK_MS / 1e3;
	for (i = 0; i < w->n && !w->gone; i++)
		if (w->ws[i].active && tick(&w->t, &w->ws[i]) == -ESRCH)
			w->gone = true;
	if (!w->gone && watch_calls_tick(w->calls) == -ESRCH)
		w->gone = true;
	w->over = over_budget(&w->t, w->ws, w->n, now - w->t0, watch_calls_cost(w->calls));
	return !w->gone && !w->over;
}

uint64_t watch_run_new_hits(struct watch_run *w)
{
	struct watch_state st;
	uint64_t hits = 0, add;
	size_t i;

	for (i = 0; i < w->n; i++)
		if (bpf_map_lookup_elem(state_fd(&w->t), &w->ws[i].index, &st) == 0)
			hits += st.hits;
	add = hits > w->hits_charged ? hits - w->hits_charged : 0;
	w->hits_charged = hits;
	return add;
}

double watch_run_new_cost(struct watch_run *w)
{
	double calls = watch_calls_cost(w->calls);
	double add = calls > w->calls_charged ? calls - w->calls_charged : 0;

	w->calls_charged = calls;
	return (double) watch_run_new_hits(w) * WATCH_TRAP_COST_S + add;
}

void watch_run_finish(struct watch_run *w)
{
	char stopped[160];
	size_t i;

	if (!w)
		return;
	snprintf(stopped, sizeof(stopped),
		 "stopped after %.1f s: the probed calls, on every container, cost more than %.1f%% "
		 "of the target's time (%.1f us each)",
		 now_seconds() - w->t0, w->t.budget_percent, WATCH_CALL_COST_S * 1e6);
	watch_calls_finish(w->calls, w->gone ? "the target is gone" : w->over ? stopped : NULL);
	for (i = 0; i < w->n; i++) {
		struct watch_result *r = w->ws[i].r;

		if (w->ws[i].active && !w->gone)
			tick(&w->t, &w->ws[i]); /* its last count */
		r->seconds = now_seconds() - w->t0;
		if (w->over && w->ws[i].active)
			snprintf(r->ended, sizeof(r->ended),
				 "stopped after %.1f s: its writes cost more than %.1f%% of the target's "
				 "time (%.0f us each)",
				 r->seconds, w->t.budget_percent, WATCH_TRAP_COST_S * 1e6);
		end_watch(&w->ws[i], w->gone && w->ws[i].active ? "the target is gone" : NULL);
	}
	collect(&w->t, w->ws, w->n);
	for (i = 0; i < w->n; i++) {
		free(w->ws[i].tids);
		free(w->ws[i].links);
	}
	free(w);
}

int watch_containers(const struct watch_target *t, struct watch_result *r, size_t n,
		     double seconds, volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	struct timespec tick_len = {0, WATCH_TICK_MS * 1000000L};
	struct watch_run *w;
	int ret = watch_run_start(&w, t, r, n, seconds, err, errlen);

	if (ret)
		return ret;
	while (!(stop && *stop)) {
		nanosleep(&tick_len, NULL);
		if (!watch_run_step(w, now_seconds()))
			break;
	}
	watch_run_finish(w);
	return 0;
}

void watch_results_free(struct watch_result *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(r[i].paths);
		r[i].paths = NULL;
		r[i].npaths = 0;
	}
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* watch_uprobe.h: the watch's fallback, uprobes on Ruby's insertion functions. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "attach.h"
#include "diag.h"
#include "elfinfo.h"
#include "rbmemtrace.h"
#include "rbmemtrace.skel.h"
#include "refs.h"
#include "shared_bpf.h"
#include "target_file.h"
#include "target_mem.h"
#include "watch_uprobe.h"

/*
 * The exported functions every insertion the tests make goes through, per
 * container type (checked on 3.1.2, 3.3.8 and 3.4.5/3.4.11 by counting their
 * calls under perf probes: docs/design.md).  rb_ary_unshift is Ruby's C
 * API's (Array#unshift is the static rb_ary_unshift_m).
 */
static const struct call_func {
	const char *name;
	uint32_t adds; /* enum call_adds: the most one call adds */
	uint32_t type;
} FUNCS[] = {
    {"rb_hash_aset", RBM_CALL_ADDS_ONE, RB_T_HASH},
    {"rb_ary_push", RBM_CALL_ADDS_ONE, RB_T_ARRAY},
    {"rb_ary_cat", RBM_CALL_ADDS_ARG3, RB_T_ARRAY},
    {"rb_ary_store", RBM_CALL_ADDS_TO_INDEX, RB_T_ARRAY},
    {"rb_ary_concat", RBM_CALL_ADDS_ARRAY, RB_T_ARRAY},
    {"rb_ary_unshift", RBM_CALL_ADDS_ONE, RB_T_ARRAY},
};
#define NFUNCS (sizeof(FUNCS) / sizeof(FUNCS[0]))

static const char HASH_NOTE[] =
    "uprobe on rb_hash_aset: insertions by other functions (Hash#merge! before Ruby 3.3) or by "
    "callers the compiler inlined it into are not seen as calls";
static const char ARRAY_NOTE[] =
    "uprobes on rb_ary_push, _cat, _store, _concat, _unshift: insertions by other functions "
    "(Array#unshift, #insert) or by callers the compiler inlined them into are not seen as calls";

struct watch_calls {
	struct watch_target t;
	struct watch_result *r;
	uint32_t which[RBM_MAX_WATCHES];
	bool on[RBM_MAX_WATCHES];
	/* its age when armed: a younger object in its slot is another (watch_slot_age) */
	bool aged[RBM_MAX_WATCHES];
	uint8_t age[RBM_MAX_WATCHES];
	size_t n;
	struct bpf_program *prog; /* on_container_call(_multi), loaded apart */
	int multi_fd;		  /* the uprobe_multi link, or */
	struct bpf_link *links[NFUNCS];
	size_t nlinks;
};

bool watch_calls_forced(void)
{
	const char *v = getenv("RBM_WATCH_FORCE_UPROBE");

	return v && !strcmp(v, "1");
}

int watch_call_rule(const struct ruby_layout *l, uint32_t type, struct call_watch *cw)
{
	if (type == RB_T_ARRAY) {
		cw->form_flag = cw->in_flags = l->rarray_embed_flag;
		cw->mask = l->rarray_embed_len_mask;
		cw->shift = l->rarray_embed_len_shift;
		cw->off = l->rarray_heap_len;
		return l->rarray_embed_flag && l->rarray_heap_len ? 0 : -EINVAL;
	}
	if (type != RB_T_HASH || !l->hash_st_flag || l->hash_ar_bound_shift < 4 || l->st_bins < 8)
		return -EINVAL;
	/* RHASH_AR_TABLE_SIZE: the 4 flag bits below the bound's; st: num_entries, before bins */
	cw->form_flag = l->hash_st_flag;
	cw->in_flags = 0;
	cw->shift = l->hash_ar_bound_shift - 4;
	cw->mask = (uint64_t) 0xf << cw->shift;
	if (l->hash_tbl_inline) {
		cw->off = l->hash_tbl + l->st_bins - 8;
	} else {
		cw->off = l->hash_tbl;
		cw->deref = 1;
		cw->deref_off = l->st_bins - 8;
	}
	return 0;
}

/* Whether the slot of watch k holds another object of its type than the one armed. */
static bool renewed(const struct watch_calls *c, size_t k, uint64_t flags)
{
	uint8_t age;

	if (!c->aged[k] || !watch_slot_age(&c->t, c->r[c->which[k]].addr, flags, &age))
		return false;
	return age < c->age[k];
}

/*
 * Watch k's container's count now, as the BPF program reads it; its form.
 * -ENOENT: no longer it (freed, moved by GC.compact, its slot taken).
 */
static int read_count(const struct watch_calls *c, size_t k, const struct call_watch *cw,
		      uint64_t *count, enum watch_form *form)
{
	const struct watch_result *r = &c->r[c->which[k]];
	uint64_t flags, at;
	bool in_flags;
	int err;

	if ((err = target_read_u64(c->t.pid, r->addr, &flags)))
		return err;
	if ((flags & RB_T_MASK) != r->type || renewed(c, k, flags))
		return -ENOENT;
	in_flags = (flags & cw->form_flag) == cw->in_flags;
	if (r->type == RB_T_ARRAY)
		*form = in_flags ? WATCH_ARRAY_EMBEDDED : WATCH_ARRAY_HEAP;
	else
		*form = in_flags ? WATCH_HASH_AR : WATCH_HASH_ST;
	if (in_flags) {
		*count = (flags & cw->mask) >> cw->shift;
		return 0;
	}
	at = r->addr + cw->off;
	if (cw->deref && (err = target_read_u64(c->t.pid, at, &at)))
		return err;
	return target_read_u64(c->t.pid, at + cw->deref_off, count);
}

static uint32_t index_of(const struct watch_calls *c, size_t k)
{
	return (uint32_t) c->t.slot * RBM_MAX_WATCHES + c->which[k];
}

static int states_fd(const struct watch_calls *c)
{
	return bpf_map__fd(c->t.skel->maps.call_watches);
}

/* Watch k's state armed with the container's count now.  0, or -errno (r says why). */
static int arm_one(struct watch_calls *c, size_t k)
{
	struct watch_result *r = &c->r[c->which[k]];
	struct call_watch cw = {.container = r->addr};
	uint32_t idx = index_of(c, k);
	uint64_t count;
	int err;

	uint64_t flags;

	c->aged[k] = target_read_u64(c->t.pid, r->addr, &flags) == 0 &&
		     watch_slot_age(&c->t, r->addr, flags, &c->age[k]) && c->age[k] > 0;
	if ((err = watch_call_rule(c->t.l, r->type, &cw)) ||
	    (err = read_count(c, k, &cw, &count, &r->form))) {
		size_t len = strlen(r->ended); /* after why no breakpoint */

		snprintf(r->ended + len, sizeof(r->ended) - len, "%s%s", len ? "; " : "",
			 err == -ESRCH	  ? "the target is gone"
			 : err == -EINVAL ? "no uprobe fallback for its type"
					  : "uprobes: its count could not be read");
		return err;
	}
	cw.last = count;
	cw.armed = 1;
	if (bpf_map_update_elem(states_fd(c), &idx, &cw, BPF_ANY))
		return -errno;
	r->size_before = r->size_after = count;
	return 0;
}

/* The probed functions for the types watched: offsets (past an endbr64) and cookies. */
static size_t resolve(const struct watch_calls *c, uint64_t *offsets, uint64_t *cookies,
		      const char **names)
{
	int fd = target_file_open(c->t.binary);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	size_t i, k, n = 0;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	for (i = 0; i < NFUNCS; i++) {
		unsigned char code[UPROBE_ENTRY_BYTES];
		uint64_t vaddr;
		bool wanted = false;

		for (k = 0; k < c->n; k++)
			wanted |= c->r[c->which[k]].type == FUNCS[i].type;
		if (!wanted || elf_symbol_value(c->t.binary, FUNCS[i].name, &vaddr, NULL) ||
		    elf_vaddr_to_offset(c->t.binary, vaddr, &offsets[n]))
			continue;
		if (!fseek(f, (long) offsets[n], SEEK_SET) &&
		    fread(code, 1, sizeof(code), f) == sizeof(code))
			offsets[n] += uprobe_entry_classify(code, sizeof(code)).skip;
		cookies[n] = RBM_COOKIE(c->t.slot, FUNCS[i].adds);
		names[n++] = FUNCS[i].name;
	}
	fclose(f);
	return n;
}

/* What BPF_LINK_CREATE reads for a uprobe_multi link (as attach.c's). */
struct calls_multi_attr {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, multi_flags, pid, pad;
};

static int attach_all(struct watch_calls *c, const uint64_t *offsets, const uint64_t *cookies,
		      const char **names, size_t n)
{
	size_t i;

	if (c->t.use_multi) {
		struct calls_multi_attr a = {
		    .prog_fd = (__u32) bpf_program__fd(c->prog),
		    .attach_type = RBM_BPF_TRACE_UPROBE_MULTI,
		    .path = (uintptr_t) c->t.binary,
		    .offsets = (uintptr_t) offsets,
		    .cookies = (uintptr_t) cookies,
		    .cnt = (__u32) n,
		    .pid = (__u32) c->t.pid,
		};
		int fd = (int) syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));

		if (fd < 0)
			return -errno;
		c->multi_fd = fd;
		return 0;
	}
	for (i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookies[i]);
		struct bpf_link *link =
		    bpf_program__attach_uprobe_opts(c->prog, c->t.pid, c->t.binary, offsets[i], &o);

		if (!link) {
			int err = -errno;

			rbm_info("watch: no uprobe on %s: %s", names[i], strerror(-err));
			return err;
		}
		c->links[c->nlinks++] = link;
	}
	return 0;
}

static void detach(struct watch_calls *c)
{
	size_t i;

	if (c->multi_fd > 0)
		close(c->multi_fd); /* its release waits for the programs running */
	c->multi_fd = 0;
	for (i = 0; i < c->nlinks; i++)
		bpf_link__destroy(c->links[i]);
	c->nlinks = 0;
}

static void disarm(struct watch_calls *c, size_t k)
{
	struct call_watch cw;
	uint32_t idx = index_of(c, k);

	if (bpf_map_lookup_elem(states_fd(c), &idx, &cw) == 0) {
		cw.armed = 0;
		bpf_map_update_elem(states_fd(c), &idx, &cw, BPF_ANY);
	}
	c->on[k] = false;
}

/* Every watch armed, then the probes attached; 0 when one watch at least is on. */
static int start_calls(struct watch_calls *c, char *err, size_t errlen)
{
	uint64_t offsets[NFUNCS], cookies[NFUNCS];
	const char *names[NFUNCS];
	size_t k, on = 0, n;
	int ret;

	uint32_t slot = (uint32_t) c->t.slot, on_ = 0;
	uint64_t zero = 0;

	bpf_map_update_elem(bpf_map__fd(c->t.skel->maps.watch_calls), &slot, &zero, BPF_ANY);
	bpf_map_update_elem(bpf_map__fd(c->t.skel->maps.call_watch_off), &slot, &on_, BPF_ANY);
	for (k = 0; k < c->n; k++)
		if ((c->on[k] = arm_one(c, k) == 0))
			on++;
	if (!on) {
		snprintf(err, errlen, "no container's count could be read");
		return -EINVAL;
	}
	if (!(n = resolve(c, offsets, cookies, names))) {
		snprintf(err, errlen, "no insertion function found in %s", c->t.binary);
		return -ENOENT;
	}
	if ((ret = attach_all(c, offsets, cookies, names, n))) {
		snprintf(err, errlen, "no uprobe could be attached: %s", strerror(-ret));
		return ret;
	}
	for (k = 0; k < c->n; k++) {
		struct watch_result *r = &c->r[c->which[k]];

		if (!c->on[k])
			continue;
		r->by_call = r->watched = true;
		r->ended[0] = '\0';
		snprintf(r->note, sizeof(r->note), "%s",
			 r->type == RB_T_HASH ? HASH_NOTE : ARRAY_NOTE);
	}
	rbm_info("watch: %zu containers watched by uprobes on %zu functions", on, n);
	return 0;
}

int watch_calls_start(struct watch_calls **out, const struct watch_target *t,
		      struct watch_result *r, const uint32_t *which, size_t n, char *err,
		      size_t errlen)
{
	struct bpf_program *prog;
	struct watch_calls *c;
	size_t k;
	int ret;

	*out = NULL;
	if (!t->binary || !t->skel)
		return -EINVAL;
	if ((ret = shared_bpf_watch_call_program(&prog))) {
		snprintf(err, errlen, "the uprobe program did not load: %s", strerror(-ret));
		return ret;
	}
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->t = *t;
	c->prog = prog;
	c->r = r;
	c->n = n > RBM_MAX_WATCHES ? RBM_MAX_WATCHES : n;
	memcpy(c->which, which, c->n * sizeof(*which));
	if ((ret = start_calls(c, err, errlen))) {
		for (k = 0; k < c->n; k++)
			if (c->on[k])
				disarm(c, k);
		detach(c);
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

int watch_calls_tick(struct watch_calls *c)
{
	struct call_watch cw;
	enum watch_form form;
	uint64_t count;
	size_t k;
	int err;

	for (k = 0; c && k < c->n; k++) {
		struct watch_result *r = &c->r[c->which[k]];
		uint32_t idx = index_of(c, k);

		if (!c->on[k] || bpf_map_lookup_elem(states_fd(c), &idx, &cw))
			continue;
		err = read_count(c, k, &cw, &count, &form);
		if (err == -ESRCH)
			return err;
		if (err) {
			snprintf(r->ended, sizeof(r->ended), "%s",
				 err == -ENOENT ? "the container was freed or moved (GC.compact)"
						: "the container could not be read");
			disarm(c, k);
			continue;
		}
		r->size_after = count;
		r->form = form;
	}
	return 0;
}

double watch_calls_cost(const struct watch_calls *c)
{
	uint64_t calls = 0, watched = 0;
	struct call_watch cw;
	uint32_t slot, idx;
	size_t k;

	if (!c)
		return 0;
	slot = (uint32_t) c->t.slot;
	bpf_map_lookup_elem(bpf_map__fd(c->t.skel->maps.watch_calls), &slot, &calls);
	for (k = 0; k < c->n; k++) {
		idx = index_of(c, k);
		if (bpf_map_lookup_elem(states_fd(c), &idx, &cw) == 0)
			watched += cw.hits;
	}
	calls = calls > watched ? calls - watched : 0;
	return (double) calls * WATCH_CALL_COST_S + (double) watched * WATCH_CALL_WATCHED_COST_S;
}

/* The increase since the last call, given to its path within its bound (as the BPF side does). */
static void settle_last(struct watch_calls *c, size_t k, struct call_watch *cw, uint64_t count)
{
	int fd = bpf_map__fd(c->t.skel->maps.insertions);
	struct insertion_key key = {(uint32_t) c->t.slot, c->which[k], cw->pending};
	uint64_t added, given, n = 0;

	if (count <= cw->last)
		return;
	added = count - cw->last;
	cw->added += added;
	given = added < cw->bound ? added : cw->bound;
	cw->no_path += added - given;
	if (!given)
		return;
	bpf_map_lookup_elem(fd, &key, &n);
	n += given;
	if (!cw->pending || bpf_map_update_elem(fd, &key, &n, BPF_ANY))
		cw->no_path += given;
}

/*
 * The end: the program told to ignore the calls, each container's count read
 * at once (the end's: what a tight loop adds while the probes come off is
 * after it), then the probes off, then the last call settled against it.
 */
void watch_calls_finish(struct watch_calls *c, const char *stopped)
{
	struct call_watch cw, zero = {0};
	uint64_t counts[RBM_MAX_WATCHES];
	enum watch_form forms[RBM_MAX_WATCHES];
	bool read[RBM_MAX_WATCHES] = {0};
	uint32_t slot, off = 1;
	size_t k;

	if (!c)
		return;
	slot = (uint32_t) c->t.slot;
	bpf_map_update_elem(bpf_map__fd(c->t.skel->maps.call_watch_off), &slot, &off, BPF_ANY);
	for (k = 0; k < c->n; k++)
		read[k] =
		    c->on[k] &&
		    bpf_map_lookup_elem(states_fd(c), &(uint32_t){index_of(c, k)}, &cw) == 0 &&
		    read_count(c, k, &cw, &counts[k], &forms[k]) == 0;
	detach(c);
	for (k = 0; k < c->n; k++) {
		struct watch_result *r = &c->r[c->which[k]];
		uint32_t idx = index_of(c, k);

		if (!r->by_call || bpf_map_lookup_elem(states_fd(c), &idx, &cw))
			continue;
		if (read[k]) {
			settle_last(c, k, &cw, counts[k]);
			r->size_after = counts[k] > cw.last ? counts[k] : cw.last;
			r->form = forms[k];
		}
		if (c->on[k] && stopped && !r->ended[0])
			snprintf(r->ended, sizeof(r->ended), "%s", stopped);
		r->count = cw.added;
		r->missed = cw.no_path + cw.unread;
		r->hits = cw.hits;
		bpf_map_update_elem(states_fd(c), &idx, &zero, BPF_ANY);
	}
	free(c);
}

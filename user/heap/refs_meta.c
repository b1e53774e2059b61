// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * refs.h's metadata (data types, shapes), read synchronously and cached,
 * and the driver that decodes one object at once (refs_decode_now).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "refs.h"
#include "refs_impl.h"
#include "target_mem.h"

#define MAX_DECL_FIELDS 64
#define RUBY_REF_END (~(uint64_t) 0) /* SIZE_MAX ends a declarative mark list */

void refs_meta_init(struct refs_meta *m, pid_t pid, const struct ruby_layout *l)
{
	memset(m, 0, sizeof(*m));
	m->pid = pid;
	m->l = l;
	m->chunk = REFS_MAX_READ;
	m->tdata_embedded_at = l->tdata_size;
}

static void free_type(void *p)
{
	struct data_type_info *ti = p;

	free(ti->offsets);
	free(ti);
}

void refs_meta_free(struct refs_meta *m)
{
	u64map_free(&m->data_types, free_type);
	u64map_free(&m->shapes, free);
	u64map_free(&m->genivs, NULL);
}

int refs_genivs_load(struct refs_meta *m, uint64_t tbl_global)
{
	const struct ruby_layout *l = m->l;
	uint64_t tbl = 0, start, bound, entries, i, *buf;
	uint8_t head[256];
	uint32_t es = l->st_entry_size;
	int ret;

	if (!tbl_global || !l->geniv_ivptr || l->st_size > sizeof(head) || es < 24)
		return -ENOENT;
	if ((ret = target_read_u64(m->pid, tbl_global, &tbl)) || !tbl ||
	    (ret = target_read(m->pid, tbl, head, l->st_size)))
		return ret ? ret : -ENOENT;
	memcpy(&start, head + l->st_entries_start, 8);
	memcpy(&bound, head + l->st_entries_bound, 8);
	memcpy(&entries, head + l->st_entries, 8);
	if (bound < start || bound - start > REFS_MAX_GENIVS || (bound > start && !entries))
		return -ERANGE;
	buf = malloc((bound - start) * es + 8);
	if (!buf)
		return -ENOMEM;
	ret = target_read(m->pid, entries + start * es, buf, (bound - start) * es);
	for (i = 0; !ret && i < bound - start; i++) {
		uint64_t hash = buf[i * es / 8], key = buf[i * es / 8 + 1], rec = buf[i * es / 8 + 2];

		/* a deleted entry keeps its key (its hash says it): its gen_ivtbl is freed */
		if (hash != ST_DELETED && refs_heap_value(key) && rec && !(rec & 7))
			ret = u64map_put(&m->genivs, key, (void *) (uintptr_t) rec);
	}
	free(buf);
	m->genivs_read = !ret;
	return ret;
}

/* The core types whose struct `why` knows, by wrap_struct_name. */
static const struct {
	const char *name;
	enum data_kind kind;
} known_types[] = {
    {"proc", DATA_PROC},    {"binding", DATA_BINDING}, {"VM/thread", DATA_THREAD},
    {"weakmap", DATA_WEAK}, {"weakkeymap", DATA_WEAK}, {"VM/pin_array_list", DATA_PIN_LIST},
    {"fiber", DATA_FIBER},  {"queue", DATA_QUEUE},     {"sized_queue", DATA_QUEUE},
};

/* RUBY_TYPED_DECL_MARKING (3.3+): dmark is a list of the struct's VALUE offsets. */
static void read_decl_offsets(struct refs_meta *m, uint64_t list, struct data_type_info *ti)
{
	uint64_t offs[MAX_DECL_FIELDS];
	size_t i, n = 0;

	if (!list || target_read(m->pid, list, offs, sizeof(offs)))
		memset(offs, 0xff, sizeof(offs));
	for (i = 0; i < MAX_DECL_FIELDS && offs[i] != RUBY_REF_END; i++)
		if (offs[i] < (1u << 16))
			n++;
	ti->offsets = n ? calloc(n, sizeof(*ti->offsets)) : NULL;
	for (i = 0; ti->offsets && i < MAX_DECL_FIELDS && offs[i] != RUBY_REF_END; i++) {
		if (offs[i] >= (1u << 16))
			continue;
		ti->offsets[ti->noffsets++] = offs[i];
		if (offs[i] + 8 > ti->struct_len)
			ti->struct_len = (uint32_t) offs[i] + 8;
	}
}

static void classify(struct refs_meta *m, uint64_t type, struct data_type_info *ti)
{
	const struct ruby_layout *l = m->l;
	uint64_t name = 0, dmark = 0, flags = 0;
	bool core = !m->libruby_hi || (type >= m->libruby_lo && type < m->libruby_hi);
	size_t i;

	ti->kind = DATA_OPAQUE;
	if (!type || (type & 7) || target_read_u64(m->pid, type + l->datatype_name, &name) ||
	    target_read_u64(m->pid, type + l->datatype_dmark, &dmark) ||
	    target_read_u64(m->pid, type + l->datatype_flags, &flags)) {
		snprintf(ti->name, sizeof(ti->name), "(unreadable type)");
		return;
	}
	if (!name || target_read(m->pid, name, ti->name, sizeof(ti->name) - 1))
		snprintf(ti->name, sizeof(ti->name), "(unnamed)");
	ti->name[sizeof(ti->name) - 1] = '\0';
	for (i = 0; core && i < sizeof(known_types) / sizeof(known_types[0]); i++) {
		if (!strcmp(ti->name, known_types[i].name) &&
		    (known_types[i].kind != DATA_PIN_LIST || l->pin_list_array) &&
		    (known_types[i].kind < DATA_FIBER || refs_marked_known(l, known_types[i].kind))) {
			ti->kind = known_types[i].kind;
			return;
		}
	}
	if (l->typed_decl_marking && (flags & l->typed_decl_marking)) {
		ti->kind = DATA_DECL;
		read_decl_offsets(m, dmark, ti);
		return;
	}
	if (!dmark)
		ti->kind = DATA_NONE;
	else
		m->opaque_types++;
}

struct data_type_info *refs_data_type(struct refs_meta *m, uint64_t type)
{
	static struct data_type_info unknown = {.kind = DATA_OPAQUE, .name = "(no memory)"};
	struct data_type_info *ti = u64map_get(&m->data_types, type ? type : 1);

	if (ti)
		return ti;
	ti = calloc(1, sizeof(*ti));
	if (!ti)
		return &unknown;
	classify(m, type, ti);
	if (u64map_put(&m->data_types, type ? type : 1, ti)) {
		free_type(ti);
		return &unknown;
	}
	return ti;
}

const struct shape_info *refs_shape(struct refs_meta *m, uint32_t shape_id)
{
	const struct ruby_layout *l = m->l;
	struct shape_info *si = u64map_get(&m->shapes, (uint64_t) shape_id + 1);
	uint8_t buf[256];

	if (si)
		return si->read ? si : NULL;
	si = calloc(1, sizeof(*si));
	if (!si)
		return NULL;
	if (m->shape_list && l->shape_size && l->shape_size <= sizeof(buf) &&
	    target_read(m->pid, m->shape_list + (uint64_t) shape_id * l->shape_size, buf,
			l->shape_size) == 0) {
		memcpy(&si->next_iv_index, buf + l->shape_next_iv_index, 4);
		si->type = buf[l->shape_type];
		si->read = si->next_iv_index < (1u << 20);
	}
	if (u64map_put(&m->shapes, (uint64_t) shape_id + 1, si)) {
		free(si);
		return NULL;
	}
	return si->read ? si : NULL;
}

/* ---- one object, now ---- */

struct pending {
	uint64_t addr;
	uint32_t len;
	uint8_t step;
	bool checked; /* wit holds a witness */
	uint64_t aux;
	struct refs_witness wit;
	bool spanned; /* span: the table a chunk is of */
	struct refs_span span;
};

struct now {
	struct ref_out *out;
	size_t max, n;
	struct pending *q;
	size_t nq, capq, head;
	bool nomem;
};

static void now_ref(void *arg, uint64_t value, const struct ref_label *l)
{
	struct now *d = arg;

	if (d->n < d->max)
		d->out[d->n] = (struct ref_out){value, *l};
	d->n++;
}

static void now_need(void *arg, uint64_t addr, uint32_t len, uint8_t step, uint64_t aux,
		     const struct refs_witness *wit, const struct refs_span *span)
{
	struct now *d = arg;

	if (d->nq == d->capq) {
		size_t cap = d->capq ? d->capq * 2 : 16;
		struct pending *q = realloc(d->q, cap * sizeof(*q));

		if (!q) {
			d->nomem = true;
			return;
		}
		d->q = q;
		d->capq = cap;
	}
	d->q[d->nq++] = (struct pending){addr,
					 len,
					 step,
					 wit != NULL,
					 aux,
					 wit ? *wit : (struct refs_witness){0},
					 span != NULL,
					 span ? *span : (struct refs_span){0}};
}

int refs_decode_now(struct refs_meta *m, uint64_t addr, uint32_t slot_size, struct ref_out *out,
		    size_t max, size_t *n)
{
	return refs_decode_now_hdr(m, addr, slot_size, out, max, n, NULL);
}

int refs_decode_now_hdr(struct refs_meta *m, uint64_t addr, uint32_t slot_size,
			struct ref_out *out, size_t max, size_t *n, uint64_t hdr[2])
{
	struct now d = {.out = out, .max = max};
	struct refs_sink sink = {now_ref, now_need, &d, NULL, NULL};
	uint64_t words[128];
	uint8_t *buf = NULL;
	size_t cap = 0;
	int ret;

	*n = 0;
	if (slot_size > sizeof(words))
		slot_size = sizeof(words);
	ret = slot_size < 2 * sizeof(words[0]) ? -EINVAL : target_read(m->pid, addr, words, slot_size);
	if (ret)
		return ret;
	if (hdr)
		memcpy(hdr, words, 2 * sizeof(words[0]));
	refs_decode(m, addr, words, slot_size, &sink);
	while (d.head < d.nq) {
		struct pending p = d.q[d.head++];
		unsigned int i;
		bool ok;

		if (p.len > cap) {
			uint8_t *b = realloc(buf, p.len);

			if (!b) {
				d.nomem = true;
				break;
			}
			buf = b;
			cap = p.len;
		}
		/* the witness's words on both sides of the piece (refs.h) */
		for (i = 0, p.wit.read = true; p.checked && i < p.wit.n; i++)
			p.wit.read &= target_read_u64(m->pid, p.wit.addr[i], &p.wit.before[i]) == 0;
		ok = target_read(m->pid, p.addr, buf, p.len) == 0;
		for (i = 0; p.checked && i < p.wit.n; i++)
			p.wit.read &= target_read_u64(m->pid, p.wit.addr[i], &p.wit.after[i]) == 0;
		refs_resume(m, addr, p.step, p.aux, p.addr, buf, p.len, ok,
			    p.checked ? &p.wit : NULL, p.spanned ? &p.span : NULL, &sink);
	}
	free(buf);
	free(d.q);
	*n = d.n < max ? d.n : max;
	return d.nomem ? -ENOMEM : 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "refs_names.h"
#include "target_mem.h"

#define MAX_NAMES 4096
#define MAX_SHAPE_DEPTH 4096
#define SYMBOL_FLAG 0x0c /* a static Symbol: (ID << RUBY_SPECIAL_SHIFT) | 0x0c */
#define SPECIAL_SHIFT 8

/* IDs by index: an object's ivars, an iseq's locals, a Struct's members. */
struct id_list {
	size_t n;
	uint64_t id[];
};

void refs_namer_init(struct refs_namer *n, pid_t pid, const struct ruby_layout *l,
		     struct refs_meta *meta, struct class_namer *cn, struct ruby_symbols *syms)
{
	memset(n, 0, sizeof(*n));
	n->pid = pid;
	n->l = l;
	n->meta = meta;
	n->cn = cn;
	n->syms = syms;
}

void refs_namer_free(struct refs_namer *n)
{
	u64map_free(&n->ivars, free);
	u64map_free(&n->locals, free);
	u64map_free(&n->members, free);
	u64map_free(&n->classes, free);
	u64map_free(&n->ids, free);
}

static struct id_list *list_new(size_t n)
{
	struct id_list *list = calloc(1, sizeof(*list) + n * sizeof(uint64_t));

	if (list)
		list->n = n;
	return list;
}

/* A cached list, or the one make builds (NULL: none; an empty list is cached too). */
static const struct id_list *cached(struct u64map *m, uint64_t key,
				    struct id_list *(*make)(struct refs_namer *, uint64_t),
				    struct refs_namer *n)
{
	struct id_list *list = u64map_get(m, key ? key : 1);

	if (list)
		return list;
	list = make(n, key);
	if (!list)
		list = list_new(0);
	if (list && u64map_put(m, key ? key : 1, list)) {
		free(list);
		return NULL;
	}
	return list;
}

/* 3.1: the class's iv_index_tbl, an st_table ID -> rb_iv_index_tbl_entry *. */
static struct id_list *ivars_of_class(struct refs_namer *n, uint64_t klass)
{
	const struct ruby_layout *l = n->l;
	uint64_t ext, tbl, head[8], entries, start, bound, i;
	struct id_list *list = NULL;
	uint8_t *buf = NULL;

	klass = class_namer_object_class(n->cn, klass);
	if (target_read_u64(n->pid, klass + l->rclass_ext, &ext) || !ext ||
	    target_read_u64(n->pid, ext + l->classext_iv_index_tbl, &tbl) || !tbl ||
	    l->st_size > sizeof(head) || target_read(n->pid, tbl, head, l->st_size))
		return NULL;
	entries = head[l->st_entries / 8];
	start = head[l->st_entries_start / 8];
	bound = head[l->st_entries_bound / 8];
	if (!entries || bound <= start || bound - start > MAX_NAMES)
		return NULL;
	buf = malloc((bound - start) * l->st_entry_size);
	list = list_new(bound - start);
	if (!buf || !list ||
	    target_read(n->pid, entries + start * l->st_entry_size, buf,
			(bound - start) * l->st_entry_size)) {
		free(buf);
		free(list);
		return NULL;
	}
	for (i = 0; i < bound - start; i++) {
		uint64_t e[3];
		uint32_t index;

		memcpy(e, buf + i * l->st_entry_size, sizeof(e));
		if (e[0] == ~(uint64_t) 0 ||
		    target_read(n->pid, e[2] + l->iv_index_entry_index, &index, sizeof(index)) ||
		    index >= list->n)
			continue;
		list->id[index] = e[1];
	}
	free(buf);
	return list;
}

/* 3.3+: a shape's ivars, from the chain of its ancestors: each ivar shape adds one. */
static struct id_list *ivars_of_shape(struct refs_namer *n, uint64_t key)
{
	const struct ruby_layout *l = n->l;
	uint32_t id = (uint32_t) (key - 1), depth, next, parent;
	struct id_list *list = NULL;
	uint8_t shape[256];
	uint64_t edge;

	if (!n->meta->shape_list || l->shape_size > sizeof(shape))
		return NULL;
	for (depth = 0; depth < MAX_SHAPE_DEPTH; depth++) {
		if (target_read(n->pid, n->meta->shape_list + (uint64_t) id * l->shape_size, shape,
				l->shape_size))
			break;
		memcpy(&next, shape + l->shape_next_iv_index, 4);
		memcpy(&parent, shape + l->shape_parent_id, 4);
		memcpy(&edge, shape + l->shape_edge_name, 8);
		if (!list) {
			if (next > MAX_NAMES)
				return NULL;
			list = list_new(next);
			if (!list)
				return NULL;
		}
		if (shape[l->shape_type] == l->shape_type_ivar && next && next <= list->n)
			list->id[next - 1] = edge;
		if (!id || parent == id)
			break;
		id = parent;
	}
	return list;
}

static struct id_list *ivars_make(struct refs_namer *n, uint64_t key)
{
	return n->l->shape_size ? ivars_of_shape(n, key) : ivars_of_class(n, key);
}

static struct id_list *locals_make(struct refs_namer *n, uint64_t iseq)
{
	const struct ruby_layout *l = n->l;
	uint64_t body, table;
	struct id_list *list;
	uint32_t size;

	if (target_read_u64(n->pid, iseq + l->iseq_body, &body) ||
	    target_read(n->pid, body + l->body_local_table_size, &size, sizeof(size)) ||
	    target_read_u64(n->pid, body + l->body_local_table, &table) || size > MAX_NAMES ||
	    !(list = list_new(size)))
		return NULL;
	if (size && target_read(n->pid, table, list->id, size * 8ull)) {
		free(list);
		return NULL;
	}
	return list;
}

/* A class's ivar called name (by its ID's name), through its decoded references. */
static uint64_t class_ivar_named(struct refs_namer *n, uint64_t klass, const char *want)
{
	struct ref_out refs[512];
	char name[256];
	size_t i, got;

	if (refs_decode_now(n->meta, klass, n->l->slot_size * 4 > 512 ? 512 : n->l->slot_size * 4,
			    refs, 512, &got))
		return 0;
	for (i = 0; i < got; i++) {
		const struct ref_label *l = &refs[i].label;

		name[0] = '\0';
		if (l->kind == REF_IVAR_ID)
			ruby_id_name(n->syms, l->a, name, sizeof(name));
		else if (l->kind == REF_IVAR_INDEX) {
			const struct id_list *iv = cached(&n->ivars, l->a + 1, ivars_make, n);

			if (iv && l->index < iv->n)
				ruby_id_name(n->syms, iv->id[l->index], name, sizeof(name));
		}
		if (!strcmp(name, want))
			return refs[i].value;
	}
	return 0;
}

/* struct.c: the members Array of the class or the first superclass that has one. */
static struct id_list *members_make(struct refs_namer *n, uint64_t klass)
{
	uint64_t ary = 0, hdr[5], len, ptr, sym;
	struct id_list *list;
	int depth;

	for (depth = 0; depth < 8 && klass && !ary; depth++) {
		ary = class_ivar_named(n, klass, "__members__");
		if (!ary && target_read_u64(n->pid, klass + n->l->rclass_super, &klass))
			break;
	}
	if (!ary || target_read(n->pid, ary, hdr, sizeof(hdr)))
		return NULL;
	if (hdr[0] & n->l->rarray_embed_flag) {
		len = (hdr[0] & n->l->rarray_embed_len_mask) >> n->l->rarray_embed_len_shift;
		ptr = ary + n->l->rarray_embed_start;
	} else {
		len = hdr[n->l->rarray_heap_len / 8];
		ptr = hdr[n->l->rarray_heap_ptr / 8];
	}
	if (len > MAX_NAMES || !(list = list_new(len)))
		return NULL;
	for (size_t i = 0; i < len; i++)
		if (target_read_u64(n->pid, ptr + i * 8, &sym) == 0 && (sym & 0xff) == SYMBOL_FLAG)
			list->id[i] = sym >> SPECIAL_SHIFT;
	return list;
}

/* The name of ID id, or "": read once per ID (every label of every path asks). */
static void id_text(struct refs_namer *n, uint64_t id, char *buf, size_t len)
{
	char *name = id ? u64map_get(&n->ids, id) : NULL;

	if (!name && id) {
		if (ruby_id_name(n->syms, id, buf, len))
			buf[0] = '\0';
		name = strdup(buf);
		if (name && u64map_put(&n->ids, id, name)) {
			free(name);
			name = NULL;
		}
		if (!name)
			return;
	}
	snprintf(buf, len, "%s", name ? name : "");
}

static void listed_name(struct refs_namer *n, struct u64map *m, uint64_t key,
			struct id_list *(*make)(struct refs_namer *, uint64_t), uint32_t index,
			char *buf, size_t len)
{
	const struct id_list *list = cached(m, key, make, n);

	buf[0] = '\0';
	if (list && index < list->n)
		id_text(n, list->id[index], buf, len);
}

/* Over ~60 lines: one switch over the label kinds, each case its words in a few lines. */
void refs_label_text(struct refs_namer *n, const struct ref_label *l, char *buf, size_t len)
{
	char name[256] = "";

	switch (l->kind) {
	case REF_CLASS:
		snprintf(buf, len, "(class)");
		break;
	case REF_IVAR_INDEX:
		listed_name(n, &n->ivars, n->l->shape_size ? l->a + 1 : l->a, ivars_make, l->index,
			    name, sizeof(name));
		if (name[0])
			snprintf(buf, len, "%s", name);
		else
			snprintf(buf, len, "@?%u", l->index);
		break;
	case REF_IVAR_ID:
		id_text(n, l->a, name, sizeof(name));
		snprintf(buf, len, "%s", name[0] ? name : "(internal ivar)");
		break;
	case REF_CONST:
		id_text(n, ruby_id_of_serial(n->l, l->a), name, sizeof(name));
		snprintf(buf, len, "::%s", name[0] ? name : "?");
		break;
	case REF_ELEM:
		snprintf(buf, len, "[]");
		break;
	case REF_HASH_KEY:
		snprintf(buf, len, "{key}");
		break;
	case REF_HASH_VALUE:
		snprintf(buf, len, "{value}");
		break;
	case REF_HASH_DEFAULT:
		snprintf(buf, len, l->a ? "(default proc)" : "(default value)");
		break;
	case REF_MEMBER:
		listed_name(n, &n->members, l->a, members_make, l->index, name, sizeof(name));
		if (name[0])
			snprintf(buf, len, ".%s", name);
		else
			snprintf(buf, len, "[%u]", l->index);
		break;
	case REF_SUPER:
		snprintf(buf, len, "(superclass)");
		break;
	case REF_METHOD:
		id_text(n, ruby_id_of_serial(n->l, l->a), name, sizeof(name));
		snprintf(buf, len, "method %s", name[0] ? name : "?");
		break;
	case REF_LOCAL:
		listed_name(n, &n->locals, l->a, locals_make, l->index, name, sizeof(name));
		if (name[0])
			snprintf(buf, len, "local %s", name);
		else
			snprintf(buf, len, "(env slot %u)", l->index);
		break;
	case REF_OUTER_ENV:
		snprintf(buf, len, "(outer scope)");
		break;
	case REF_BLOCK_ENV:
		snprintf(buf, len, "(captured scope)");
		break;
	case REF_BLOCK_SELF:
		snprintf(buf, len, "(self)");
		break;
	case REF_CODE:
		snprintf(buf, len, "(code)");
		break;
	case REF_SHARED:
		snprintf(buf, len, "(shared)");
		break;
	case REF_FIELD:
		snprintf(buf, len, "%s", l->a ? (const char *) (uintptr_t) l->a : "(field)");
		break;
	case REF_DATA_FIELD:
		snprintf(buf, len, "(%s +%u)", refs_data_type(n->meta, l->a)->name, l->index);
		break;
	case REF_THREAD_LOCAL:
		id_text(n, ruby_id_of_serial(n->l, l->a), name, sizeof(name));
		snprintf(buf, len, "[:%s]", name[0] ? name : "?");
		break;
	default:
		snprintf(buf, len, "(?)");
		break;
	}
}

void refs_root_text(struct refs_namer *n, const struct root *r, char *buf, size_t len)
{
	char frame[512] = "a frame", thread[32] = "";

	if (r->thread)
		snprintf(thread, sizeof(thread), " of thread %u", r->thread);
	if (r->a && n->frame_label &&
	    (r->kind == ROOT_LOCAL || r->kind == ROOT_SELF || r->kind == ROOT_FRAME_ENV))
		n->frame_label(n->frame_ctx, r->a, r->b, frame, sizeof(frame));
	switch (r->kind) {
	case ROOT_LOCAL:
		snprintf(buf, len, "%s in %s%s", r->name ? r->name : "?", frame, thread);
		break;
	case ROOT_FRAME_ENV:
		snprintf(buf, len, "locals of %s%s", frame, thread);
		break;
	case ROOT_SELF:
		snprintf(buf, len, "self of %s%s", frame, thread);
		break;
	case ROOT_STACK:
		snprintf(buf, len, "VM stack%s", r->thread ? thread : " of the main thread");
		break;
	case ROOT_MACHINE_STACK:
		snprintf(buf, len, "stack of %s (conservative)", r->thread ? thread + 4 : "the main thread");
		break;
	case ROOT_THREAD:
		snprintf(buf, len, "%s", r->thread ? thread + 4 : "the main thread");
		break;
	case ROOT_ERRINFO:
		snprintf(buf, len, "$!%s", thread);
		break;
	case ROOT_FIBER_STORAGE:
		snprintf(buf, len, "Fiber storage%s", thread);
		break;
	case ROOT_FIBER_LOCAL:
		snprintf(buf, len, "%s%s", r->name ? r->name : "?", thread);
		break;
	case ROOT_AT_EXIT:
		snprintf(buf, len, "an at_exit block");
		break;
	case ROOT_REGISTERED:
		snprintf(buf, len, "C variable 0x%llx", (unsigned long long) r->a);
		break;
	default:
		snprintf(buf, len, "%s", r->name ? r->name : "?");
		break;
	}
}

const char *refs_class_text(struct refs_namer *n, uint64_t flags, uint64_t klass)
{
	uint32_t type = flags & RB_T_MASK;
	uint32_t kind =
	    type == RB_T_IMEMO ? RBM_KIND(type, (flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK) : type;
	char *name;

	if (type == RB_T_IMEMO || type == RB_T_ICLASS || !klass)
		return class_namer_key_name(n->cn, 0,
					    kind); /* no read: <imemo:env>, <hidden:...> */
	/* every object on a path asks: past singletons once per class, not per object */
	name = u64map_get(&n->classes, klass);
	if (name)
		return name;
	name = strdup(class_namer_name(n->cn, class_namer_object_class(n->cn, klass)));
	if (!name || u64map_put(&n->classes, klass, name)) {
		free(name);
		return class_namer_name(n->cn, class_namer_object_class(n->cn, klass));
	}
	return name;
}

const char *refs_holds_text(uint8_t holds)
{
	switch (holds) {
	case HOLDS_ELEMS:
		return "elements";
	case HOLDS_IVARS:
	case HOLDS_IVARS_BY_ID:
	case HOLDS_GENIVS:
		return "ivars";
	case HOLDS_STACK:
		return "stack values";
	case HOLDS_HASH:
		return "entries";
	case HOLDS_MEMBERS:
		return "members";
	case HOLDS_CONSTS:
		return "constants";
	case HOLDS_METHODS:
		return "methods";
	case HOLDS_LOCALS:
		return "locals";
	case HOLDS_FIBER_LOCALS:
		return "fiber locals";
	default:
		return "entries";
	}
}

const char *refs_cut_text(uint8_t why)
{
	switch (why) {
	case CUT_UNREADABLE:
		return "its memory could not be read";
	case CUT_CHANGED:
		return "the table changed between its reads";
	case CUT_BOUNDS:
		return "its bounds do not hold";
	case CUT_BUDGET:
		return "the walk's read budget was spent";
	default:
		return "not read";
	}
}

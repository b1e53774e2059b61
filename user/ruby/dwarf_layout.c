// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "dwarf_layout.h"
#include "dwarf_reader.h"
#include "elfinfo.h"
#include "ruby_versions.h"

#define FL_USER(n) (1LL << (12 + (n))) /* FL_USHIFT is 12 in every series */

/*
 * The CUs looked in, by what they define: gc.c includes nearly every
 * internal header; the others for what is private to them.  An LTO or
 * static build without these names is searched whole.
 */
static const char *const cus_gc[] = {"gc.c", NULL};
static const char *const cus_string[] = {"string.c", "gc.c", NULL};
static const char *const cus_array[] = {"array.c", "gc.c", NULL};
static const char *const cus_bignum[] = {"bignum.c", "gc.c", NULL};
static const char *const cus_st[] = {"st.c", NULL};
static const char *const cus_vm[] = {"vm.c", "gc.c", NULL}; /* 3.4's gc.c lacks method.h */
static const char *const cus_hash[] = {"hash.c", "gc.c", NULL};
static const char *const cus_symbol[] = {"symbol.c", NULL};


void rd_miss(struct rd *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->soft) {
		r->soft_missing++;
		return;
	}
	r->missing++;
	if (!r->err || r->used + 2 >= r->errlen)
		return;
	if (r->listed) {
		r->err[r->used++] = ',';
		r->err[r->used++] = ' ';
	}
	r->listed = true;
	va_start(ap, fmt);
	n = vsnprintf(r->err + r->used, r->errlen - r->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->used += (size_t) n < r->errlen - r->used ? (size_t) n : r->errlen - r->used - 1;
}

void rd_use(struct rd *r, const char *const *cus)
{
	if (dwarf_types_use_cus(r->dt, cus) == 0)
		dwarf_types_use_cus(r->dt, NULL);
}

bool rd_member(struct rd *r, const char *type, const char *path, struct dwarf_field *f)
{
	return dwarf_member(r->dt, type, path, f) == 0;
}

/* Offset of type.path, or `absent` when there is no such member. */
uint32_t rd_opt_off(struct rd *r, const char *type, const char *path, uint32_t absent)
{
	struct dwarf_field f;

	return rd_member(r, type, path, &f) ? (uint32_t) f.offset : absent;
}

uint32_t rd_need_off(struct rd *r, const char *type, const char *path)
{
	struct dwarf_field f;

	if (rd_member(r, type, path, &f))
		return (uint32_t) f.offset;
	rd_miss(r, "%s.%s", type, path);
	return 0;
}

/* The first of two spellings of a member that exists (3.1's, then 3.2+'s). */
uint32_t rd_need_off2(struct rd *r, const char *type, const char *path, const char *path2)
{
	struct dwarf_field f;

	if (rd_member(r, type, path, &f) || rd_member(r, type, path2, &f))
		return (uint32_t) f.offset;
	rd_miss(r, "%s.%s|%s", type, path, path2);
	return 0;
}

uint32_t rd_need_size(struct rd *r, const char *type)
{
	uint64_t size;

	if (dwarf_type_size(r->dt, type, &size) == 0)
		return (uint32_t) size;
	rd_miss(r, "sizeof(%s)", type);
	return 0;
}

bool rd_constant(struct rd *r, const char *name, int64_t *v)
{
	if (dwarf_constant(r->dt, name, v) == 0)
		return true;
	return ruby_versions_macro_default(r->series, name, v) == 0;
}

int64_t rd_need_const(struct rd *r, const char *name)
{
	int64_t v;

	if (rd_constant(r, name, &v))
		return v;
	rd_miss(r, "%s (a macro: no -g3 macros and no default for %s)", name, r->series);
	return 0;
}

/* A one-bit flag of a bit-field struct, as a mask of the word at `word`. */
static uint32_t bit_mask(struct rd *r, const char *type, const char *path, uint32_t word)
{
	struct dwarf_field f;

	if (!rd_member(r, type, path, &f) || !f.bit_size || f.size != 4 || f.offset != word) {
		rd_miss(r, "%s.%s (a bit-field of the u32 at %u)", type, path, word);
		return 0;
	}
	return (uint32_t) (((1ULL << f.bit_size) - 1) << f.bit_offset);
}

static void read_classes(struct rd *r, struct ruby_layout *o)
{
	struct dwarf_field f;

	if (rd_member(r, "struct RClass_and_rb_classext_t", "classext", &f)) {
		o->rclass_ext = (uint32_t) f.offset; /* 3.3+: in the slot */
		o->classext_embedded = 1;
	} else {
		o->rclass_ext = rd_need_off(r, "struct RClass", "ptr");
	}
	o->classext_iv_tbl = rd_opt_off(r, "rb_classext_t", "iv_tbl", 0);
	o->classext_allocator = rd_need_off2(r, "rb_classext_t", "allocator", "as.class.allocator");
	o->classext_classpath = rd_opt_off(r, "rb_classext_t", "classpath", 0);
	o->classext_attached_object =
	    rd_opt_off(r, "rb_classext_t", "as.singleton_class.attached_object", 0);
	o->fl_singleton = (uint64_t) rd_need_const(r, "RUBY_FL_SINGLETON");
	o->rclass_super = rd_need_off(r, "struct RClass", "super");
	o->rclass_m_tbl = rd_opt_off(r, "struct RClass", "m_tbl", 0);
	o->classext_m_tbl = rd_opt_off(r, "rb_classext_t", "m_tbl", 0);
	if (!o->rclass_m_tbl && !o->classext_m_tbl)
		rd_miss(r, "m_tbl (in struct RClass or rb_classext_t)");
}

static void read_strings_arrays(struct rd *r, struct ruby_layout *o)
{
	struct dwarf_field f;

	o->st_entries_start = rd_need_off(r, "st_table", "entries_start");
	o->st_entries_bound = rd_need_off(r, "st_table", "entries_bound");
	o->st_entries = rd_need_off(r, "st_table", "entries");
	rd_use(r, cus_st);
	o->st_entry_size = rd_need_size(r, "st_table_entry");
	rd_use(r, cus_gc);

	o->rstring_noembed = (uint64_t) rd_need_const(r, "RSTRING_NOEMBED");
	o->rstring_embed_start = rd_need_off(r, "struct RString", "as.embed.ary");
	o->rstring_heap_ptr = rd_need_off(r, "struct RString", "as.heap.ptr");
	if (rd_member(r, "struct RString", "len", &f)) {
		/* 3.2+: one length field, the flags hold none */
		o->rstring_len = (uint32_t) f.offset;
		o->rstring_heap_len = (uint32_t) f.offset;
	} else {
		o->rstring_heap_len = rd_need_off(r, "struct RString", "as.heap.len");
		o->rstring_embed_len_mask = (uint64_t) rd_need_const(r, "RSTRING_EMBED_LEN_MASK");
		o->rstring_embed_len_shift = (uint32_t) rd_need_const(r, "RSTRING_EMBED_LEN_SHIFT");
	}

	o->rarray_embed_flag = (uint64_t) rd_need_const(r, "RARRAY_EMBED_FLAG");
	o->rarray_embed_len_mask = (uint64_t) rd_need_const(r, "RARRAY_EMBED_LEN_MASK");
	o->rarray_embed_len_shift = (uint32_t) rd_need_const(r, "RARRAY_EMBED_LEN_SHIFT");
	o->rarray_embed_start = rd_need_off(r, "struct RArray", "as.ary");
	o->rarray_heap_len = rd_need_off(r, "struct RArray", "as.heap.len");
	o->rarray_heap_ptr = rd_need_off(r, "struct RArray", "as.heap.ptr");
}

static void read_frames(struct rd *r, struct ruby_layout *o)
{
	const char *body = "struct rb_iseq_constant_body";
	struct dwarf_field f;

	rd_use(r, cus_vm);
	o->ractor_main_thread = rd_need_off(r, "rb_ractor_t", "threads.main");
	o->thread_self = rd_need_off(r, "rb_thread_t", "self");
	o->thread_ec = rd_need_off(r, "rb_thread_t", "ec");
	o->ec_thread_ptr = rd_need_off(r, "rb_execution_context_t", "thread_ptr");
	o->ec_vm_stack = rd_need_off(r, "rb_execution_context_t", "vm_stack");
	o->ec_vm_stack_size = rd_need_off(r, "rb_execution_context_t", "vm_stack_size");
	o->ec_cfp = rd_need_off(r, "rb_execution_context_t", "cfp");
	o->cfp_size = rd_need_size(r, "rb_control_frame_t");
	o->cfp_pc = rd_need_off(r, "rb_control_frame_t", "pc");
	o->cfp_iseq = rd_need_off(r, "rb_control_frame_t", "iseq");
	o->cfp_ep = rd_need_off(r, "rb_control_frame_t", "ep");
	o->cfp_self = rd_need_off(r, "rb_control_frame_t", "self");

	o->iseq_body = rd_need_off(r, "rb_iseq_t", "body");
	o->body_iseq_encoded = rd_need_off(r, body, "iseq_encoded");
	o->body_iseq_size = rd_need_off(r, body, "iseq_size");
	o->body_location_pathobj = rd_need_off(r, body, "location.pathobj");
	o->body_location_label = rd_need_off(r, body, "location.label");
	if (rd_member(r, body, "location.first_lineno", &f)) {
		o->body_first_lineno = (uint32_t) f.offset;
		o->body_first_lineno_size = (uint32_t) f.size;
	} else {
		rd_miss(r, "%s.location.first_lineno", body);
	}
	o->body_insns_info_body = rd_need_off(r, body, "insns_info.body");
	o->body_insns_info_size = rd_need_off(r, body, "insns_info.size");
	o->body_succ_index_table = rd_need_off(r, body, "insns_info.succ_index_table");
	o->insn_info_size = rd_need_size(r, "struct iseq_insn_info_entry");
	o->insn_info_line_no = rd_need_off(r, "struct iseq_insn_info_entry", "line_no");
	o->imemo_iseq = (uint32_t) rd_need_const(r, "imemo_iseq");
	o->body_type = rd_need_off(r, body, "type");
	o->body_local_iseq = rd_need_off(r, body, "local_iseq");
	o->iseq_type_method = (uint32_t) rd_need_const(r, "ISEQ_TYPE_METHOD");
	o->iseq_type_block = (uint32_t) rd_need_const(r, "ISEQ_TYPE_BLOCK");
	rd_use(r, cus_gc);
}

static void read_methods(struct rd *r, struct ruby_layout *o)
{
	struct dwarf_field f;

	rd_use(r, cus_vm);
	o->cme_def = rd_need_off(r, "rb_callable_method_entry_t", "def");
	o->cme_owner = rd_need_off(r, "rb_callable_method_entry_t", "owner");
	o->def_original_id = rd_need_off(r, "rb_method_definition_t", "original_id");
	o->imemo_ment = (uint32_t) rd_need_const(r, "imemo_ment");
	o->me_def = rd_need_off(r, "rb_method_entry_t", "def");
	o->me_owner = rd_need_off(r, "rb_method_entry_t", "owner");
	o->def_iseq = rd_need_off(r, "rb_method_definition_t", "body.iseq.iseqptr");
	/* stacks.c takes the method type as the low 4 bits of the first word */
	if (!rd_member(r, "rb_method_definition_t", "type", &f) || f.offset != 0 ||
	    f.bit_offset != 0 || f.bit_size != 4)
		rd_miss(r, "rb_method_definition_t.type as bits 0-3 of word 0");
	o->method_type_iseq = (uint32_t) rd_need_const(r, "VM_METHOD_TYPE_ISEQ");

	rd_use(r, cus_symbol); /* struct rb_id_table is private to id_table.c, included there */
	o->id_table_capa = rd_need_off(r, "struct rb_id_table", "capa");
	o->id_table_items = rd_need_off(r, "struct rb_id_table", "items");
	o->id_item_size = rd_need_size(r, "item_t");
	o->id_item_value = rd_need_off(r, "item_t", "val");
	/* enum ruby_method_ids (id.h): they move when Ruby adds a method ID */
	o->id_last_op = (uint32_t) rd_need_const(r, "tLAST_OP_ID");
	o->id_next = (uint32_t) rd_need_const(r, "tNEXT_ID");
	o->id_initialize = (uint32_t) rd_need_const(r, "idInitialize");
	rd_use(r, cus_gc);
}

/* size_pools[] (3.1-3.3) or heaps[] (3.4): where, how many, and their counters. */
static void read_pools(struct rd *r, uint32_t *pools, uint32_t *count, uint32_t *size,
		       uint32_t *slot_size, uint32_t *allocated, uint32_t *freed)
{
	const char *arr = "size_pools";
	struct dwarf_field f, m;
	char path[64];

	if (!rd_member(r, "rb_objspace_t", arr, &f)) {
		arr = "heaps";
		if (!rd_member(r, "rb_objspace_t", arr, &f) || !f.count) {
			rd_miss(r, "rb_objspace_t.size_pools|heaps");
			return;
		}
	}
	*pools = (uint32_t) f.offset;
	*count = (uint32_t) f.count;
	*size = (uint32_t) f.elem_size;
	snprintf(path, sizeof(path), "%s[0].slot_size", arr);
	*slot_size = rd_need_off(r, "rb_objspace_t", path) - *pools;
	snprintf(path, sizeof(path), "%s[0].total_allocated_objects", arr);
	*allocated = rd_member(r, "rb_objspace_t", path, &m) ? (uint32_t) (m.offset - *pools) : 0;
	snprintf(path, sizeof(path), "%s[0].total_freed_objects", arr);
	*freed = rd_member(r, "rb_objspace_t", path, &m) ? (uint32_t) (m.offset - *pools) : 0;
}

static void read_gc_offsets(struct rd *r, struct ruby_layout *o)
{
	o->vm_objspace = rd_need_off2(r, "rb_vm_t", "objspace", "gc.objspace");
	o->objspace_compact_count = rd_need_off(r, "rb_objspace_t", "profile.compact_count");
	o->objspace_total_allocated = rd_opt_off(r, "rb_objspace_t", "total_allocated_objects", 0);
	o->objspace_total_freed = rd_opt_off(r, "rb_objspace_t", "profile.total_freed_objects", 0);
	o->objspace_total_moved = rd_opt_off(r, "rb_objspace_t", "rcompactor.total_moved", 0);
	o->objspace_gc_count = rd_need_off(r, "rb_objspace_t", "profile.count");
	read_pools(r, &o->objspace_pools, &o->pool_count, &o->pool_size, &o->pool_slot_size,
		   &o->pool_total_allocated, &o->pool_total_freed);
	if ((!o->objspace_total_allocated && !o->pool_total_allocated) ||
	    (!o->objspace_total_freed && !o->pool_total_freed))
		rd_miss(r, "total_allocated_objects/total_freed_objects (objspace or per pool)");
}

static void read_objspace(struct rd *r, struct ruby_layout *h)
{
	struct dwarf_field f;
	int64_t v;

	if (rd_member(r, "rb_objspace_t", "flags.mode", &f) && f.bit_size && f.size == 4) {
		h->objspace_flags = (uint32_t) f.offset;
		h->objspace_flags_mode_mask = (uint32_t) (((1ULL << f.bit_size) - 1) << f.bit_offset);
	} else {
		rd_miss(r, "rb_objspace_t.flags.mode");
	}
	h->objspace_flags_incremental =
	    bit_mask(r, "rb_objspace_t", "flags.during_incremental_marking", h->objspace_flags);
	h->objspace_flags_compacting =
	    bit_mask(r, "rb_objspace_t", "flags.during_compacting", h->objspace_flags);
	h->objspace_flags_during_gc = bit_mask(r, "rb_objspace_t", "flags.during_gc", h->objspace_flags);
	h->objspace_sorted = rd_need_off(r, "rb_objspace_t", "heap_pages.sorted");
	/* 3.4: rb_darray(struct heap_page *): a pointer to {meta; data[]} */
	h->sorted_darray_data = rd_opt_off(r, "rb_objspace_t", "heap_pages.sorted->data", 0);
	if (h->sorted_darray_data &&
	    (!rd_member(r, "rb_objspace_t", "heap_pages.sorted->meta.size", &f) || f.offset != 0))
		rd_miss(r, "rb_darray meta.size at 0");
	h->objspace_allocated_pages = rd_need_off(r, "rb_objspace_t", "heap_pages.allocated_pages");

	h->page_slot_size = rd_need_off(r, "struct heap_page", "slot_size");
	h->page_total_slots = rd_need_off(r, "struct heap_page", "total_slots");
	if (rd_member(r, "struct heap_page", "flags.before_sweep", &f) && f.bit_size == 1 &&
	    f.size == 4) {
		h->page_flags = (uint32_t) f.offset;
		h->page_before_sweep = 1u << f.bit_offset;
	} else {
		rd_miss(r, "struct heap_page.flags.before_sweep");
	}
	h->page_start = rd_need_off(r, "struct heap_page", "start");
	if (rd_member(r, "struct heap_page", "mark_bits", &f) && f.count) {
		h->page_mark_bits = (uint32_t) f.offset;
		h->bitmap_words = (uint32_t) f.count;
		h->page_read_size = (uint32_t) (f.offset + f.size);
	} else {
		rd_miss(r, "struct heap_page.mark_bits[]");
	}
	if (rd_member(r, "struct heap_page", "wb_unprotected_bits", &f) && f.count)
		h->page_wb_unprotected_bits = (uint32_t) f.offset;
	else
		rd_miss(r, "struct heap_page.wb_unprotected_bits[]");
	if (rd_member(r, "struct heap_page", "age_bits", &f)) {
		h->page_age_bits = (uint32_t) f.offset;
		if (f.offset + f.size > h->page_read_size)
			h->page_read_size = (uint32_t) (f.offset + f.size);
	}

	h->page_size = (uint32_t) rd_need_const(r, "HEAP_PAGE_SIZE");
	if (rd_constant(r, "BASE_SLOT_SIZE", &v))
		h->bit_granule = (uint32_t) v;
	else
		h->bit_granule = rd_need_size(r, "RVALUE");
	h->max_slots = (uint32_t) rd_need_const(r, "HEAP_PAGE_OBJ_LIMIT");
	h->slot_size = h->bit_granule;
	if (h->pool_count)
		h->max_slot_size = h->slot_size << (h->pool_count - 1);
}

static void read_heap_objects(struct rd *r, struct ruby_layout *h)
{
	struct dwarf_field f;
	int64_t p0;

	if (h->page_age_bits) {
		h->fl_age_mask = 0;
		h->fl_age_shift = 0;
	} else if (rd_constant(r, "RUBY_FL_PROMOTED0", &p0) && p0 > 0) {
		h->fl_age_mask = (uint64_t) (p0 | rd_need_const(r, "RUBY_FL_PROMOTED1"));
		h->fl_age_shift = (uint32_t) __builtin_ctzll((uint64_t) p0);
	} else {
		rd_miss(r, "object age (RUBY_FL_PROMOTED0 or heap_page.age_bits)");
	}
	h->old_age = (uint32_t) rd_need_const(r, "RVALUE_OLD_AGE");
	h->fl_exivar = (uint32_t) rd_need_const(r, "RUBY_FL_EXIVAR");

	h->str_capa = rd_need_off(r, "struct RString", "as.heap.aux.capa");
	rd_use(r, cus_string);
	h->str_shared = (uint64_t) rd_need_const(r, "STR_SHARED");
	h->str_nofree = (uint64_t) rd_need_const(r, "STR_NOFREE");
	rd_use(r, cus_array);
	h->ary_shared = (uint64_t) rd_need_const(r, "RARRAY_SHARED_FLAG");
	h->ary_shared_root = (uint64_t) rd_need_const(r, "RARRAY_SHARED_ROOT_FLAG");
	rd_use(r, cus_bignum);
	h->bignum_embed = (uint64_t) rd_need_const(r, "BIGNUM_EMBED_FLAG");
	/* BDIGIT is a macro naming a type: the element of the embedded digits */
	if (rd_member(r, "struct RBignum", "as.ary", &f) && f.elem_size)
		h->bdigit_size = (uint32_t) f.elem_size;
	else
		rd_miss(r, "struct RBignum.as.ary[] (BDIGIT)");
	rd_use(r, cus_st);
	h->st_max_power_no_bins = (uint32_t) rd_need_const(r, "MAX_POWER2_FOR_TABLES_WITHOUT_BINS");
	rd_use(r, cus_gc);

	h->ary_capa = rd_need_off(r, "struct RArray", "as.heap.aux.capa");
	h->obj_embed = (uint64_t) rd_need_const(r, "ROBJECT_EMBED");
	h->obj_numiv = rd_opt_off(r, "struct RObject", "as.heap.numiv", 0);
	h->hash_st_flag = (uint64_t) rd_need_const(r, "RHASH_ST_TABLE_FLAG");
	if (rd_member(r, "struct RHash", "as.st", &f)) {
		h->hash_tbl = (uint32_t) f.offset;
	} else {
		/* 3.3+: RHASH_AR_TABLE / RHASH_ST_TABLE are (h + sizeof(struct RHash)) */
		h->hash_tbl = rd_need_size(r, "struct RHash");
		h->hash_tbl_inline = 1;
	}
	rd_use(r, cus_hash);
	h->ar_table_size = rd_need_size(r, "ar_table");
	rd_use(r, cus_gc);
	h->st_size = rd_need_size(r, "st_table");
	h->st_bins = rd_need_off(r, "st_table", "bins");
	h->bignum_len = rd_need_off(r, "struct RBignum", "as.heap.len");
	h->struct_embed_len_mask = (uint64_t) rd_need_const(r, "RSTRUCT_EMBED_LEN_MASK");
	h->struct_len = rd_need_off(r, "struct RStruct", "as.heap.len");
	if (rd_member(r, "struct RClass", "ptr", &f))
		h->classext_size = rd_need_size(r, "rb_classext_t");
}

int dwarf_layout_from(struct dwarf_types *dt, const char *version, struct ruby_layout *out,
		      char *err, size_t errlen)
{
	struct rd r = {.dt = dt, .err = err, .errlen = errlen};
	const char *dot = version ? strchr(version, '.') : NULL;
	size_t n = dot ? strcspn(dot + 1, ".") + (size_t) (dot + 1 - version) : 0;

	if (n && n < sizeof(r.series))
		memcpy(r.series, version, n);
	if (err && errlen) {
		n = (size_t) snprintf(err, errlen, "%s lacks ", dwarf_types_file(dt));
		r.used = n < errlen ? n : errlen - 1;
	}
	rd_use(&r, cus_gc);
	memset(out, 0, sizeof(*out));
	out->series = "dwarf";
	out->verified = "";
	out->source = "the target's DWARF";
	read_classes(&r, out);
	read_strings_arrays(&r, out);
	read_frames(&r, out);
	read_methods(&r, out);
	read_gc_offsets(&r, out);
	read_objspace(&r, out);
	read_heap_objects(&r, out);
	dwarf_read_refs(&r, out);
	return r.missing ? -1 : 0;
}

int dwarf_layout_read(const char *elf_path, const char *root, const char *version,
		      struct ruby_layout *out, char *from, size_t fromlen, char *err, size_t errlen)
{
	struct dwarf_types *dt;
	int ret;

	if (dwarf_types_open(elf_path, root, &dt, err, errlen))
		return -1;
	if (from && fromlen)
		snprintf(from, fromlen, "%s%s%s", dwarf_types_file(dt),
			 *dwarf_types_origin(dt) ? ", fetched from " : "", dwarf_types_origin(dt));
	ret = dwarf_layout_from(dt, version, out, err, errlen);
	dwarf_types_close(dt);
	return ret;
}

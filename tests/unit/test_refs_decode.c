/*
 * The edge decoders of heap/refs.h on slot images built with each series'
 * layout (the 3.1 table, the 3.3 and 3.4 entries generated from DWARF): the
 * memory a decoder asks for is served from a fake heap, and each reference
 * must come out with its label, as gc_mark_children would mark it.
 * Metadata (shapes, data types) is put in the decoder's caches, so nothing
 * is read from a process.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caps.h"
#include "helpers.h"
#include "refs.h"
#include "heap_caps.h"
#include "ruby_versions.h"

#define FLU(n) (1ULL << (12 + (n)))
#define MAX_REGIONS 32
#define MAX_OUT 256

/* A fake target: regions of bytes at addresses. */
struct region {
	uint64_t addr;
	size_t len;
	uint8_t *bytes;
};

static struct region regions[MAX_REGIONS];
static size_t nregions;

static uint8_t *put(uint64_t addr, size_t len)
{
	struct region *r = &regions[nregions++];

	cr_assert_leq(nregions, MAX_REGIONS);
	r->addr = addr;
	r->len = len;
	r->bytes = calloc(1, len);
	return r->bytes;
}

static void set64(uint8_t *at, uint32_t off, uint64_t v)
{
	memcpy(at + off, &v, 8);
}

static void set32(uint8_t *at, uint32_t off, uint32_t v)
{
	memcpy(at + off, &v, 4);
}

static bool fake_read(uint64_t addr, void *buf, size_t len)
{
	size_t i;

	for (i = 0; i < nregions; i++)
		if (addr >= regions[i].addr && addr + len <= regions[i].addr + regions[i].len) {
			memcpy(buf, regions[i].bytes + (addr - regions[i].addr), len);
			return true;
		}
	return false;
}

/* The decoder's output, and its pending reads, served from the fake heap. */
struct run {
	struct ref_out out[MAX_OUT];
	size_t n;
	struct {
		uint64_t addr, aux;
		uint32_t len;
		uint8_t step;
		bool checked, spanned;
		struct refs_witness wit;
		struct refs_span span;
	} q[MAX_OUT];
	size_t nq, head;
	uint64_t size; /* the last size the decoder said */
	bool sized;
	struct refs_part parts[8];
	size_t nparts;
};

static void on_ref(void *arg, uint64_t v, const struct ref_label *l)
{
	struct run *r = arg;

	cr_assert_lt(r->n, MAX_OUT);
	r->out[r->n++] = (struct ref_out){v, *l};
}

static void on_need(void *arg, uint64_t addr, uint32_t len, uint8_t step, uint64_t aux,
		    const struct refs_witness *wit, const struct refs_span *span)
{
	struct run *r = arg;

	cr_assert_lt(r->nq, MAX_OUT);
	r->q[r->nq].addr = addr;
	r->q[r->nq].len = len;
	r->q[r->nq].step = step;
	r->q[r->nq].checked = wit != NULL;
	if (wit)
		r->q[r->nq].wit = *wit;
	r->q[r->nq].spanned = span != NULL;
	if (span)
		r->q[r->nq].span = *span;
	r->q[r->nq++].aux = aux;
}

static void on_size(void *arg, uint64_t n)
{
	struct run *r = arg;

	r->size = n;
	r->sized = true;
}

static void on_part(void *arg, const struct refs_part *p)
{
	struct run *r = arg;

	cr_assert_lt(r->nparts, 8);
	r->parts[r->nparts++] = *p;
}

/* Called once a piece is read, before its witness is read again: the target running meanwhile. */
static void (*after_piece)(uint8_t step);

static void decode(struct refs_meta *m, uint64_t addr, uint32_t slot_size, struct run *r)
{
	struct refs_sink sink = {on_ref, on_need, r, on_size, on_part};
	uint64_t words[80];
	uint8_t buf[1 << 16];

	memset(r, 0, sizeof(*r));
	cr_assert(fake_read(addr, words, slot_size), "no slot at 0x%llx",
		  (unsigned long long) addr);
	refs_decode(m, addr, words, slot_size, &sink);
	while (r->head < r->nq) {
		typeof(r->q[0]) p = r->q[r->head++];
		unsigned int i;
		bool ok;

		/* as the drivers do: the witness's words, the piece, the words again */
		for (i = 0, p.wit.read = true; p.checked && i < p.wit.n; i++)
			p.wit.read &= fake_read(p.wit.addr[i], &p.wit.before[i], 8);
		ok = p.len <= sizeof(buf) && fake_read(p.addr, buf, p.len);
		if (after_piece)
			after_piece(p.step);
		for (i = 0; p.checked && i < p.wit.n; i++)
			p.wit.read &= fake_read(p.wit.addr[i], &p.wit.after[i], 8);
		refs_resume(m, addr, p.step, p.aux, p.addr, buf, p.len, ok,
			    p.checked ? &p.wit : NULL, p.spanned ? &p.span : NULL, &sink);
	}
}

/* The first reference to value; NULL if none. */
static const struct ref_label *label_of(const struct run *r, uint64_t value)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->out[i].value == value)
			return &r->out[i].label;
	return NULL;
}

static void expect_ref(const struct run *r, uint64_t value, uint8_t kind, uint32_t index,
		       uint64_t a)
{
	const struct ref_label *l = label_of(r, value);

	cr_assert_not_null(l, "no reference to 0x%llx", (unsigned long long) value);
	cr_expect_eq(l->kind, kind, "0x%llx: kind %u, not %u", (unsigned long long) value, l->kind,
		     kind);
	cr_expect_eq(l->index, index, "0x%llx: index %u, not %u", (unsigned long long) value,
		     l->index, index);
	cr_expect_eq(l->a, a, "0x%llx: a 0x%llx, not 0x%llx", (unsigned long long) value,
		     (unsigned long long) l->a, (unsigned long long) a);
}

static struct refs_meta meta;
static struct ruby_layout layout;

static void setup(const char *version)
{
	size_t i;

	for (i = 0; i < nregions; i++)
		free(regions[i].bytes);
	nregions = 0;
	cr_assert_eq(ruby_versions_layout(version, &layout), 0, "%s", version);
	refs_meta_init(&meta, 0, &layout);
}

static void teardown(void)
{
	refs_meta_free(&meta);
}

#define KLASS 0x7000000100ull
#define OBJ 0x7000001000ull
#define HEAPMEM 0x7100000000ull

/* An st_table head's sizes: 16 entries allocated (entry_power 4), num live ones. */
static void st_sizes(uint8_t *head, uint64_t num)
{
	head[0] = 4;
	set64(head, layout.st_bins - 8, num);
}

/* A heap object's slot: flags, klass. */
static uint8_t *slot(uint64_t addr, uint32_t size, uint64_t flags, uint64_t klass)
{
	uint8_t *s = put(addr, size);

	set64(s, 0, flags);
	set64(s, 8, klass);
	return s;
}

Test(refs_decode, object_31_embedded_and_heap_ivars)
{
	struct run r;
	uint8_t *s, *iv;

	setup("3.1.2");
	/* embedded: as.ary[3], named by the class's iv_index_tbl (label a = the class) */
	s = slot(OBJ, 40, 0x01 | layout.obj_embed, KLASS);
	set64(s, layout.obj_embed_start, 0x7000002000);
	set64(s, layout.obj_embed_start + 8, 0x15); /* a Fixnum: no reference */
	set64(s, layout.obj_embed_start + 16, 0x7000002028);
	decode(&meta, OBJ, 40, &r);
	expect_ref(&r, KLASS, REF_CLASS, 0, 0);
	expect_ref(&r, 0x7000002000, REF_IVAR_INDEX, 0, KLASS);
	expect_ref(&r, 0x7000002028, REF_IVAR_INDEX, 2, KLASS);
	cr_expect_eq(r.n, 3, "class and two ivars, the Fixnum left out: %zu", r.n);
	/* on the heap: as.heap.{numiv, ivptr}, read where it points */
	s = slot(OBJ + 40, 40, 0x01, KLASS);
	set32(s, layout.obj_numiv, 5);
	set64(s, layout.obj_ivptr, HEAPMEM);
	iv = put(HEAPMEM, 5 * 8);
	set64(iv, 4 * 8, 0x7000002050);
	decode(&meta, OBJ + 40, 40, &r);
	cr_expect_eq(r.nq, 1, "one read: the ivars");
	expect_ref(&r, 0x7000002050, REF_IVAR_INDEX, 4, KLASS);
	teardown();
}

Test(refs_decode, object_34_shapes_embedded_and_too_complex)
{
	struct shape_info *si = calloc(1, sizeof(*si));
	uint8_t *s, *st, *e;
	struct run r;
	uint32_t shape = 77;

	setup("3.4.5");
	cr_assert(layout.shape_size, "3.4 has shapes");
	si->next_iv_index = 2;
	si->type = (uint8_t) layout.shape_type_ivar;
	si->read = true;
	u64map_put(&meta.shapes, shape + 1, si);
	/* embedded: as many ivars as the shape's next_iv_index, in the slot */
	s = slot(OBJ, 80, 0x01 | layout.obj_embed | ((uint64_t) shape << layout.shape_id_shift),
		 KLASS);
	set64(s, layout.obj_embed_start, 0x7000002000);
	set64(s, layout.obj_embed_start + 8, 0x7000002028);
	set64(s, layout.obj_embed_start + 16, 0x7000002050); /* past next_iv_index: stale */
	decode(&meta, OBJ, 80, &r);
	expect_ref(&r, 0x7000002028, REF_IVAR_INDEX, 1, shape);
	cr_expect_null(label_of(&r, 0x7000002050), "a word past the shape's ivars is no ivar");
	/* too complex: an st_table ID -> VALUE at as.heap.ivptr, whatever the embed flag says */
	s = slot(OBJ + 80, 80,
		 0x01 | layout.obj_embed |
		     ((uint64_t) layout.shape_too_complex_id << layout.shape_id_shift),
		 KLASS);
	set64(s, layout.obj_ivptr, HEAPMEM);
	st = put(HEAPMEM, layout.st_size);
	set64(st, layout.st_entries, HEAPMEM + 0x1000);
	set64(st, layout.st_entries_start, 0);
	set64(st, layout.st_entries_bound, 2);
	st_sizes(st, 1);
	e = put(HEAPMEM + 0x1000, 2 * layout.st_entry_size);
	set64(e, 0, ~0ull); /* deleted */
	set64(e, 8, 0x1234);
	set64(e, 16, 0x7000002078);
	set64(e, layout.st_entry_size, 42);
	set64(e, layout.st_entry_size + 8, 0x2345); /* the ivar's ID */
	set64(e, layout.st_entry_size + 16, 0x70000020a0);
	decode(&meta, OBJ + 80, 80, &r);
	expect_ref(&r, 0x70000020a0, REF_IVAR_ID, 0, 0x2345);
	cr_expect_null(label_of(&r, 0x7000002078), "a deleted entry holds nothing");
	teardown();
}

Test(refs_decode, arrays_embedded_heap_and_shared)
{
	const char *versions[] = {"3.1.2", "3.4.5"};
	struct run r;
	uint8_t *s, *el;
	size_t k;

	for (k = 0; k < 2; k++) {
		setup(versions[k]);
		s = slot(OBJ, 40,
			 0x07 | layout.rarray_embed_flag | (2ull << layout.rarray_embed_len_shift),
			 KLASS);
		set64(s, layout.rarray_embed_start, 0x7000002000);
		set64(s, layout.rarray_embed_start + 8, 0x7000002028);
		decode(&meta, OBJ, 40, &r);
		expect_ref(&r, 0x7000002028, REF_ELEM, 1, 0);
		cr_expect_eq(r.n, 3, "%s: class and two elements", versions[k]);

		s = slot(OBJ + 40, 40, 0x07, KLASS);
		set64(s, layout.rarray_heap_len, 3);
		set64(s, layout.rarray_heap_ptr, HEAPMEM);
		el = put(HEAPMEM, 24);
		set64(el, 16, 0x7000002050);
		decode(&meta, OBJ + 40, 40, &r);
		expect_ref(&r, 0x7000002050, REF_ELEM, 2, 0);

		/* a shared array marks its root, not the elements it shares */
		s = slot(OBJ + 80, 40, 0x07 | layout.ary_shared, KLASS);
		set64(s, layout.rarray_heap_len, 3);
		set64(s, layout.rarray_heap_ptr, HEAPMEM);
		set64(s, layout.ary_aux_shared, 0x7000003000);
		decode(&meta, OBJ + 80, 40, &r);
		expect_ref(&r, 0x7000003000, REF_SHARED, 0, 0);
		cr_expect_null(label_of(&r, 0x7000002050), "%s: not through the shared buffer",
			       versions[k]);
		teardown();
	}
}

Test(refs_decode, hashes_31_ar_and_st_with_default_proc)
{
	uint8_t *s, *ar, *st, *e;
	struct run r;

	setup("3.1.2");
	/* an ar_table of 2 pairs (the bound in the flags), a default proc */
	s = slot(OBJ, 40, 0x08 | layout.hash_proc_default | (2ull << layout.hash_ar_bound_shift),
		 KLASS);
	set64(s, layout.hash_tbl, HEAPMEM);
	set64(s, layout.hash_ifnone, 0x7000004000);
	ar = put(HEAPMEM + layout.ar_table_pairs, 8 * 16);
	set64(ar, 0, 0x7000002000);
	set64(ar, 8, 0x7000002028);
	set64(ar, 16, 0x34); /* Qundef: a cleared entry */
	set64(ar, 24, 0x7000002050);
	decode(&meta, OBJ, 40, &r);
	expect_ref(&r, 0x7000002000, REF_HASH_KEY, 0, 0);
	expect_ref(&r, 0x7000002028, REF_HASH_VALUE, 0, 0);
	expect_ref(&r, 0x7000002050, REF_HASH_VALUE, 1, 0);
	expect_ref(&r, 0x7000004000, REF_HASH_DEFAULT, 0, layout.hash_proc_default);
	/* an st_table: head, then its live entries */
	s = slot(OBJ + 40, 40, 0x08 | layout.hash_st_flag, KLASS);
	set64(s, layout.hash_tbl, HEAPMEM + 0x1000);
	st = put(HEAPMEM + 0x1000, layout.st_size);
	set64(st, layout.st_entries, HEAPMEM + 0x2000);
	set64(st, layout.st_entries_start, 1);
	set64(st, layout.st_entries_bound, 3);
	st_sizes(st, 2);
	e = put(HEAPMEM + 0x2000, 3 * layout.st_entry_size);
	set64(e, layout.st_entry_size * 2 + 8, 0x7000005000);
	set64(e, layout.st_entry_size * 2 + 16, 0x7000005028);
	decode(&meta, OBJ + 40, 40, &r);
	cr_expect_eq(r.nq, 2, "head, then entries");
	expect_ref(&r, 0x7000005028, REF_HASH_VALUE, 2, 0);
	expect_ref(&r, 0x7000005000, REF_HASH_KEY, 2, 0);
	teardown();
}

/* The target swaps a Hash's st_table (Hash#rehash) while the walk reads its entries. */
static uint8_t *swap_slot;
static void rehash_during_entries(uint8_t step)
{
	if (step != STEP_ST_ENTRIES || !swap_slot)
		return;
	set64(swap_slot, layout.hash_tbl, HEAPMEM + 0x3000);
	swap_slot = NULL; /* once */
}

Test(refs_decode, a_table_swapped_during_its_read_is_read_again_from_the_new_one)
{
	uint8_t *s, *st, *e;
	struct run r;

	setup("3.1.2");
	s = slot(OBJ, 40, 0x08 | layout.hash_st_flag, KLASS);
	set64(s, layout.hash_tbl, HEAPMEM + 0x1000);
	/* the old table: its entries still hold a stale value (freed memory, read anyway) */
	st = put(HEAPMEM + 0x1000, layout.st_size);
	set64(st, layout.st_entries, HEAPMEM + 0x2000);
	set64(st, layout.st_entries_bound, 1);
	st_sizes(st, 1);
	e = put(HEAPMEM + 0x2000, layout.st_entry_size);
	set64(e, 16, 0x7000006000);
	/* the new one the slot points to once the entries are read */
	st = put(HEAPMEM + 0x3000, layout.st_size);
	set64(st, layout.st_entries, HEAPMEM + 0x4000);
	set64(st, layout.st_entries_bound, 1);
	st_sizes(st, 1);
	e = put(HEAPMEM + 0x4000, layout.st_entry_size);
	set64(e, 16, 0x7000007000);
	swap_slot = s;
	after_piece = rehash_during_entries;
	decode(&meta, OBJ, 40, &r);
	after_piece = NULL;
	cr_expect_eq(r.nq, 4, "head, entries (stale), the new head, its entries");
	cr_expect_eq(meta.stale_reads, 1);
	cr_expect_eq(meta.gaps.n[GAP_UNREAD], 0);
	expect_ref(&r, 0x7000007000, REF_HASH_VALUE, 0, 0);
	cr_expect_null(label_of(&r, 0x7000006000), "the stale entry's value is dropped");
	teardown();
}

/* The target grows the Array while its elements are read: realloc moves them (once, or always). */
static uint8_t *grown_slot;
static bool grow_always;
static void grow_during_values(uint8_t step)
{
	if (step != STEP_VALUES || !grown_slot)
		return;
	if (grow_always) {
		uint64_t ptr;

		memcpy(&ptr, grown_slot + layout.rarray_heap_ptr, sizeof(ptr));
		set64(grown_slot, layout.rarray_heap_ptr, ptr ^ 0x10000);
		return;
	}
	set64(grown_slot, layout.rarray_heap_len, 3);
	set64(grown_slot, layout.rarray_heap_ptr, HEAPMEM + 0x3000);
	grown_slot = NULL; /* once */
}

Test(refs_decode, an_array_reallocated_during_its_read_is_read_again_from_its_slot)
{
	uint8_t *s, *el;
	struct run r;
	size_t i, again = 0;

	setup("3.4.5");
	s = slot(OBJ, 40, 0x07, KLASS);
	set64(s, layout.rarray_heap_len, 2);
	set64(s, layout.rarray_heap_ptr, HEAPMEM + 0x1000);
	/* the old buffer, freed: what it held is not trusted */
	el = put(HEAPMEM + 0x1000, 16);
	set64(el, 0, 0x7000006000);
	set64(el, 8, 0x7000006028);
	/* where the elements are once it grew: one more */
	el = put(HEAPMEM + 0x3000, 24);
	set64(el, 0, 0x7000007000);
	set64(el, 8, 0x7000007028);
	set64(el, 16, 0x7000007050);
	grown_slot = s;
	grow_always = false;
	after_piece = grow_during_values;
	decode(&meta, OBJ, 40, &r);
	after_piece = NULL;
	for (i = 0; i < r.nq; i++)
		again += r.q[i].step == STEP_ARRAY_HEAP;
	cr_expect_eq(again, 1, "its slot read again once");
	cr_expect_eq(meta.stale_reads, 1);
	expect_ref(&r, 0x7000007050, REF_ELEM, 2, 0);
	cr_expect_null(label_of(&r, 0x7000006000), "the freed buffer's elements are dropped");
	cr_expect_eq(r.nparts, 0, "read whole");
	teardown();

	/* reallocated at every read: bounded, then said read in part */
	setup("3.4.5");
	s = slot(OBJ, 40, 0x07, KLASS);
	set64(s, layout.rarray_heap_len, 2);
	set64(s, layout.rarray_heap_ptr, HEAPMEM + 0x1000);
	put(HEAPMEM + 0x1000, 16);
	put(HEAPMEM + 0x11000, 16);
	grown_slot = s;
	grow_always = true;
	after_piece = grow_during_values;
	decode(&meta, OBJ, 40, &r);
	after_piece = NULL;
	grown_slot = NULL;
	for (i = 0, again = 0; i < r.nq; i++)
		again += r.q[i].step == STEP_ARRAY_HEAP;
	cr_expect_eq(again, REFS_MAX_TRIES - 1, "read again %u times at most", REFS_MAX_TRIES - 1);
	cr_assert_eq(r.nparts, 1, "said once");
	cr_expect_eq(r.parts[0].why, CUT_CHANGED);
	cr_expect_eq(r.parts[0].holds, HOLDS_ELEMS);
	teardown();
}

Test(refs_decode, hashes_33_tables_in_the_slot)
{
	uint8_t *s;
	struct run r;

	setup("3.3.8");
	cr_assert(layout.hash_tbl_inline);
	s = slot(OBJ, 160, 0x08 | (1ull << layout.hash_ar_bound_shift), KLASS);
	set64(s, layout.hash_tbl + layout.ar_table_pairs, 0x7000002000);
	set64(s, layout.hash_tbl + layout.ar_table_pairs + 8, 0x7000002028);
	decode(&meta, OBJ, 160, &r);
	cr_expect_eq(r.nq, 0, "nothing to read: the pairs are in the slot");
	expect_ref(&r, 0x7000002028, REF_HASH_VALUE, 0, 0);
	teardown();
}

Test(refs_decode, structs_embedded_and_heap)
{
	uint8_t *s, *m;
	struct run r;

	setup("3.1.2");
	s = slot(OBJ, 40, 0x09 | (2ull << layout.struct_embed_shift), KLASS);
	set64(s, layout.struct_embed_start + 8, 0x7000002000);
	decode(&meta, OBJ, 40, &r);
	expect_ref(&r, 0x7000002000, REF_MEMBER, 1, KLASS);
	s = slot(OBJ + 40, 40, 0x09, KLASS);
	set64(s, layout.struct_len, 4);
	set64(s, layout.struct_ptr, HEAPMEM);
	m = put(HEAPMEM, 32);
	set64(m, 24, 0x7000002028);
	decode(&meta, OBJ + 40, 40, &r);
	expect_ref(&r, 0x7000002028, REF_MEMBER, 3, KLASS);
	teardown();
}

Test(refs_decode, class_31_constants_ivars_methods_super)
{
	uint8_t *s, *ext, *ct, *items, *ce, *iv, *ent, *mt, *mitems;
	uint64_t EXT = HEAPMEM, CT = HEAPMEM + 0x100, ITEMS = HEAPMEM + 0x200, CE = HEAPMEM + 0x300;
	uint64_t IV = HEAPMEM + 0x400, ENT = HEAPMEM + 0x500, MT = HEAPMEM + 0x600;
	uint64_t MITEMS = HEAPMEM + 0x700;
	struct run r;

	setup("3.1.2");
	s = slot(OBJ, 40, 0x02, KLASS);
	set64(s, layout.rclass_super, 0x7000009000);
	set64(s, layout.rclass_ext, EXT);
	ext = put(EXT, layout.classext_size);
	set64(ext, layout.classext_const_tbl, CT);
	set64(ext, layout.classext_iv_tbl, IV);
	set64(ext, layout.classext_m_tbl, MT);
	/* const_tbl: an rb_id_table of 2 slots, one used: serial 1234 -> an rb_const_entry_t */
	ct = put(CT, layout.id_table_items + 8);
	set32(ct, layout.id_table_capa, 2);
	set64(ct, layout.id_table_items, ITEMS);
	items = put(ITEMS, 2 * layout.id_item_size);
	set32(items, layout.id_item_size, 1234);
	set64(items, layout.id_item_size + layout.id_item_value, CE);
	ce = put(CE, layout.const_entry_value + 8);
	set64(ce, layout.const_entry_value, 0x7000002000);
	/* iv_tbl: an st_table ID -> VALUE */
	iv = put(IV, layout.st_size);
	set64(iv, layout.st_entries, ENT);
	set64(iv, layout.st_entries_bound, 1);
	st_sizes(iv, 1);
	ent = put(ENT, layout.st_entry_size);
	set64(ent, 8, 0x4567);
	set64(ent, 16, 0x7000002028);
	/* m_tbl: serial 99 -> a method entry */
	mt = put(MT, layout.id_table_items + 8);
	set32(mt, layout.id_table_capa, 1);
	set64(mt, layout.id_table_items, MITEMS);
	mitems = put(MITEMS, layout.id_item_size);
	set32(mitems, 0, 99);
	set64(mitems, layout.id_item_value, 0x7000002050);
	set32(ct, layout.id_table_capa + 4, 1); /* num: one constant */
	decode(&meta, OBJ, 40, &r);
	expect_ref(&r, 0x7000009000, REF_SUPER, 0, 0);
	expect_ref(&r, 0x7000002000, REF_CONST, 0, 1234);
	expect_ref(&r, 0x7000002028, REF_IVAR_ID, 0, 0x4567);
	expect_ref(&r, 0x7000002050, REF_METHOD, 0, 99);
	cr_expect(r.sized && r.size == 1, "a class's size: its constants");
	cr_expect_eq(r.nparts, 0);
	/* a crafted constant table: more constants than its capacity holds, not read */
	set32(ct, layout.id_table_capa + 4, 5);
	decode(&meta, OBJ, 40, &r);
	cr_expect_null(label_of(&r, 0x7000002000));
	expect_ref(&r, 0x7000002050, REF_METHOD, 0, 99);
	cr_assert_eq(r.nparts, 1, "the rest of the class stands, the table is said");
	cr_expect_eq(r.parts[0].holds, HOLDS_CONSTS);
	cr_expect_eq(r.parts[0].why, CUT_BOUNDS);
	cr_expect_eq(r.parts[0].total, 5);
	teardown();
}

static void data_type(uint64_t type, enum data_kind kind)
{
	struct data_type_info *ti = calloc(1, sizeof(*ti));

	ti->kind = kind;
	snprintf(ti->name, sizeof(ti->name), "t%d", kind);
	u64map_put(&meta.data_types, type, ti);
}

Test(refs_decode, proc_block_env_and_weakmap)
{
	uint64_t PROC_T = 0x5000, WEAK_T = 0x5100, OPAQUE_T = 0x5200, DATA = HEAPMEM,
		 EP = HEAPMEM + 0x108;
	uint8_t *s, *d, *envmem;
	struct run r;

	setup("3.1.2");
	data_type(PROC_T, DATA_PROC);
	data_type(WEAK_T, DATA_WEAK);
	data_type(OPAQUE_T, DATA_OPAQUE);
	/* a Proc: its block's self and iseq, and its env at ep[1] */
	s = slot(OBJ, 40, 0x0c, KLASS);
	set64(s, layout.tdata_type, PROC_T);
	set64(s, layout.tdata_typed_flag, 1);
	set64(s, layout.tdata_data, DATA);
	d = put(DATA, 40);
	set64(d, layout.block_self, 0x7000002000);
	set64(d, layout.block_ep, EP);
	set64(d, layout.block_code, 0x7000002028);
	set32(d, layout.block_type, layout.block_type_iseq);
	envmem = put(EP - 0x10, 0x20);
	set64(envmem, 0x18, 0x7000002050); /* ep[1]: the env object */
	decode(&meta, OBJ, 40, &r);
	expect_ref(&r, 0x7000002000, REF_BLOCK_SELF, 0, 0);
	expect_ref(&r, 0x7000002028, REF_CODE, 0, 0);
	expect_ref(&r, 0x7000002050, REF_BLOCK_ENV, 0, 0);
	/* a WeakMap holds nothing; a C extension's data is counted as not walked */
	s = slot(OBJ + 40, 40, 0x0c, KLASS);
	set64(s, layout.tdata_type, WEAK_T);
	set64(s, layout.tdata_typed_flag, 1);
	set64(s, layout.tdata_data, DATA);
	decode(&meta, OBJ + 40, 40, &r);
	cr_expect_eq(r.n, 1, "a WeakMap: its class only");
	cr_expect_eq(r.nq, 0);
	s = slot(OBJ + 80, 40, 0x0c, KLASS);
	set64(s, layout.tdata_type, OPAQUE_T);
	set64(s, layout.tdata_typed_flag, 1);
	set64(s, layout.tdata_data, DATA);
	decode(&meta, OBJ + 80, 40, &r);
	cr_expect_eq(meta.gaps.n[GAP_OPAQUE_DATA], 1, "opaque data counted");
	teardown();
}

Test(refs_decode, env_locals_and_outer_env)
{
	uint64_t ENV = HEAPMEM, ISEQ = 0x7000006000, OUTER_EP = HEAPMEM + 0x808;
	uint8_t *s, *env, *outer;
	struct run r;

	setup("3.1.2");
	/* an env of 2 locals: [l0, l1, me_cref, specval, flags, envval]; ep at index 4 */
	s = slot(OBJ, 40, 0x1a | ((uint64_t) layout.imemo_env << 12), 0);
	set64(s, layout.env_iseq, ISEQ);
	set64(s, layout.env_env, ENV);
	set32(s, layout.env_size, 6);
	set64(s, layout.env_ep, ENV + 4 * 8);
	env = put(ENV, 6 * 8);
	set64(env, 0, 0x7000002000);
	set64(env, 8, 0x7000002028);
	set64(env, 3 * 8, OUTER_EP | 1); /* specval: the outer ep, tagged */
	set64(env, 4 * 8, 0x11110001);	 /* flags: not LOCAL, so there is an outer env */
	outer = put(OUTER_EP, 16);
	set64(outer, 8, 0x7000002050);
	decode(&meta, OBJ, 40, &r);
	expect_ref(&r, ISEQ, REF_CODE, 0, 0);
	expect_ref(&r, 0x7000002028, REF_LOCAL, 1, ISEQ);
	expect_ref(&r, 0x7000002050, REF_OUTER_ENV, 0, 0);
	cr_expect_null(label_of(&r, KLASS), "an imemo's klass word is no class");
	/* a LOCAL env has no outer one */
	set64(env, 4 * 8, 0x11110001 | layout.env_flag_local);
	decode(&meta, OBJ, 40, &r);
	cr_expect_null(label_of(&r, 0x7000002050), "a local env has no outer env");
	teardown();
}

Test(refs_decode, free_and_moved_slots_hold_nothing)
{
	struct run r;

	setup("3.4.5");
	slot(OBJ, 40, 0x00, KLASS);
	decode(&meta, OBJ, 40, &r);
	cr_expect_eq(r.n + r.nq, 0);
	slot(OBJ + 40, 40, 0x1e, KLASS);
	decode(&meta, OBJ + 40, 40, &r);
	cr_expect_eq(r.n + r.nq, 0);
	teardown();
}

/* What a decode asks for, not served (the reads of a crafted heap are only looked at). */
static void decode_asks(struct refs_meta *m, uint64_t addr, uint32_t slot_size, struct run *r)
{
	struct refs_sink sink = {on_ref, on_need, r, on_size, on_part};
	uint64_t words[80];

	memset(r, 0, sizeof(*r));
	cr_assert(fake_read(addr, words, slot_size));
	refs_decode(m, addr, words, slot_size, &sink);
}

/* A 3.4 Hash whose st_table (in its slot) has bound entries at HEAPMEM, num live: the slot. */
static uint8_t *st_hash(uint64_t addr, uint64_t bound, uint64_t num)
{
	uint8_t *s = slot(addr, 160, 0x08 | layout.hash_st_flag, KLASS);

	set64(s, layout.hash_tbl + layout.st_entries, HEAPMEM);
	set64(s, layout.hash_tbl + layout.st_entries_bound, bound);
	st_sizes(s + layout.hash_tbl, num);
	return s;
}

/* Entry i of the table at HEAPMEM: its key and value, or deleted. */
static void st_entry(uint8_t *e, uint32_t i, uint64_t value, bool deleted)
{
	set64(e, i * layout.st_entry_size, deleted ? ~0ull : i);
	set64(e, i * layout.st_entry_size + 8, 0x7100100000 + 0x28 * i);
	set64(e, i * layout.st_entry_size + 16, value);
}

/* Tables bigger than a chunk are read whole, a chunk at a time, each knowing its place. */
Test(refs_decode, big_tables_are_read_whole_a_chunk_at_a_time)
{
	struct run r;
	uint8_t *e, *s;
	uint32_t i;

	setup("3.4.5");
	meta.chunk = 2 * layout.st_entry_size; /* two entries a chunk: 5 entries are 3 reads */
	st_hash(OBJ, 5, 4);
	e = put(HEAPMEM, 5 * layout.st_entry_size);
	for (i = 0; i < 5; i++)
		st_entry(e, i, 0x7000002000 + 0x28 * i, i == 2);
	decode(&meta, OBJ, 160, &r);
	cr_expect_eq(r.nq, 3, "3 chunks, each asked once the one before is read");
	for (i = 0; i < r.nq; i++)
		cr_expect_leq(r.q[i].len, meta.chunk);
	for (i = 0; i < 5; i++)
		if (i != 2)
			expect_ref(&r, 0x7000002000 + 0x28 * i, REF_HASH_VALUE, i, 0);
	cr_expect_null(label_of(&r, 0x7000002050), "the deleted entry holds nothing");
	cr_expect(r.sized && r.size == 4, "the Hash's size: its num_entries");
	cr_expect_eq(r.nparts, 0, "read whole");

	/* an Array of 5 elements, 2 a chunk */
	meta.chunk = 16;
	s = slot(OBJ + 160, 40, 0x07, KLASS);
	set64(s, layout.rarray_heap_len, 5);
	set64(s, layout.rarray_heap_ptr, HEAPMEM + 0x1000);
	e = put(HEAPMEM + 0x1000, 40);
	for (i = 0; i < 5; i++)
		set64(e, 8 * i, 0x7000003000 + 0x28 * i);
	decode(&meta, OBJ + 160, 40, &r);
	cr_expect_eq(r.nq, 3);
	for (i = 0; i < 5; i++)
		expect_ref(&r, 0x7000003000 + 0x28 * i, REF_ELEM, i, 0);
	cr_expect(r.sized && r.size == 5, "the Array's length");
	cr_expect_eq(r.nparts, 0);
	cr_expect_eq(meta.gaps.n[GAP_UNREAD], 0);
	teardown();
}

/* The target rebuilds the table while its second chunk is read (every pass, or once). */
static uint8_t *rebuilt_head;
static int chunks_seen;
static bool rebuild_once;
static void rebuild_after_first_chunk(uint8_t step)
{
	if (step != STEP_ST_ENTRIES || ++chunks_seen % 2 || (rebuild_once && chunks_seen > 2))
		return;
	rebuilt_head[1] ^= 0xff; /* bin_power and rebuilds_num: st.c's rebuild_table */
}

static void decode_rebuilt(struct run *r, bool once)
{
	uint8_t *e, *s;
	uint32_t i;

	meta.chunk = 2 * layout.st_entry_size;
	s = st_hash(OBJ, 6, 6);
	e = put(HEAPMEM, 6 * layout.st_entry_size);
	for (i = 0; i < 6; i++)
		st_entry(e, i, 0x7000002000 + 0x28 * i, false);
	rebuilt_head = s + layout.hash_tbl;
	chunks_seen = 0;
	rebuild_once = once;
	after_piece = rebuild_after_first_chunk;
	decode(&meta, OBJ, 160, r);
	after_piece = NULL;
}

Test(refs_decode, a_table_changed_between_chunks_is_read_again_then_said_read_in_part)
{
	struct run r;

	setup("3.4.5");
	/* rebuilt once: read again from its head, whole */
	decode_rebuilt(&r, true);
	expect_ref(&r, 0x70000020c8, REF_HASH_VALUE, 5, 0);
	cr_expect_eq(r.nparts, 0, "read whole the second time");
	cr_expect_eq(meta.stale_reads, 1);
	teardown();

	setup("3.4.5");
	/* rebuilt at every pass: the first chunk stands, the rest is said */
	decode_rebuilt(&r, false);
	expect_ref(&r, 0x7000002028, REF_HASH_VALUE, 1, 0);
	cr_expect_null(label_of(&r, 0x7000002050), "the changed chunk is dropped");
	cr_expect_null(label_of(&r, 0x70000020a0), "and nothing after it is read");
	cr_assert_eq(r.nparts, 1, "said once, for this object");
	cr_expect_eq(r.parts[0].holds, HOLDS_HASH);
	cr_expect_eq(r.parts[0].why, CUT_CHANGED);
	cr_expect_eq(r.parts[0].read, 2, "the first chunk's entries stand");
	cr_expect_eq(r.parts[0].total, 6);
	cr_expect_eq(meta.stale_reads, REFS_MAX_TRIES - 1, "read again, a bounded number of times");
	cr_expect_eq(meta.gaps.n[GAP_UNREAD], 1);
	teardown();
}

/* The target rebuilds the table during every read of it: bounded, then said. */
static void rebuild_always(uint8_t step)
{
	if (step == STEP_ST_ENTRIES)
		rebuilt_head[1] ^= 0xff;
}

Test(refs_decode, a_table_rebuilt_at_every_read_is_read_a_bounded_number_of_times)
{
	struct run r;
	uint8_t *e, *s;
	uint32_t i, entries = 0;

	setup("3.4.5");
	s = st_hash(OBJ, 2, 2);
	e = put(HEAPMEM, 2 * layout.st_entry_size);
	for (i = 0; i < 2; i++)
		st_entry(e, i, 0x7000002000 + 0x28 * i, false);
	rebuilt_head = s + layout.hash_tbl;
	after_piece = rebuild_always;
	decode(&meta, OBJ, 160, &r);
	after_piece = NULL;
	for (i = 0; i < r.nq; i++)
		entries += r.q[i].step == STEP_ST_ENTRIES;
	cr_expect_eq(entries, REFS_MAX_TRIES, "read again while it moved, %u times at most",
		     REFS_MAX_TRIES);
	cr_expect_eq(r.n, 1, "only the class: no entry read while it moved");
	cr_assert_eq(r.nparts, 1);
	cr_expect_eq(r.parts[0].why, CUT_CHANGED);
	cr_expect_eq(r.parts[0].read, 0);
	cr_expect_eq(r.parts[0].total, 2);
	teardown();
}

/* A crafted heap: bounds that do not hold, lengths past memory, are read no further and said. */
Test(refs_decode, hostile_tables_are_bounded_and_said)
{
	struct caps_hit h;
	struct run r;
	uint8_t *s, *e;
	uint32_t i;

	caps_reset();
	setup("3.4.5");
	meta.pid = 4242; /* the fake heap is read by fake_read; the pid names whose caps */

	/* an st table's bound past the entries it allocated (16): its head read again, no entry */
	st_hash(OBJ, 1ull << 40, 3);
	decode(&meta, OBJ, 160, &r);
	cr_expect_eq(r.nq, REFS_MAX_TRIES - 1, "the head read again (it may have been torn)");
	for (i = 0; i < r.nq; i++)
		cr_expect_eq(r.q[i].step, STEP_ST_HEAD, "no read of 2^40 entries");
	cr_assert_eq(r.nparts, 1);
	cr_expect_eq(r.parts[0].why, CUT_BOUNDS);
	cr_expect_eq(r.parts[0].total, 3);
	cr_expect_eq(r.parts[0].read, 0);
	/* more live entries than its bound holds */
	st_hash(OBJ + 160, 2, 9);
	decode(&meta, OBJ + 160, 160, &r);
	cr_expect_eq(r.nq, REFS_MAX_TRIES - 1);
	cr_expect(r.nparts == 1 && r.parts[0].why == CUT_BOUNDS);

	/* an array claiming 2^40 elements: past the cap, nothing read */
	s = slot(OBJ + 320, 40, 0x07, KLASS);
	set64(s, layout.rarray_heap_len, 1ull << 40);
	set64(s, layout.rarray_heap_ptr, HEAPMEM);
	decode_asks(&meta, OBJ + 320, 40, &r);
	cr_expect_eq(r.nq, 0);
	cr_expect(r.nparts == 1 && r.parts[0].why == CUT_BOUNDS && r.parts[0].total == 1ull << 40);

	/* an array whose length runs past its memory: the chunks that read stand */
	meta.chunk = 16;
	s = slot(OBJ + 360, 40, 0x07, KLASS);
	set64(s, layout.rarray_heap_len, 6);
	set64(s, layout.rarray_heap_ptr, HEAPMEM + 0x1000);
	e = put(HEAPMEM + 0x1000, 32);
	for (i = 0; i < 4; i++)
		set64(e, 8 * i, 0x7000003000 + 0x28 * i);
	decode(&meta, OBJ + 360, 40, &r);
	expect_ref(&r, 0x7000003078, REF_ELEM, 3, 0);
	cr_assert_eq(r.nparts, 1);
	cr_expect_eq(r.parts[0].why, CUT_UNREADABLE);
	cr_expect_eq(r.parts[0].read, 4);
	cr_expect_eq(r.parts[0].total, 6);
	cr_expect_eq(r.nq, 3, "no read past the first that failed");

	caps_read(4242, &h);
	cr_expect_eq(h.n[CAP_TABLE_READ], 3, "the bounds that did not hold, counted");
	cr_expect_eq(meta.gaps.n[GAP_UNREAD], 4, "and every table said as unread");
	teardown();
}

/* A walk's budget: once spent, what the decoders ask for is refused, and counted. */
Test(refs_decode, walk_budget_refuses_reads_past_it)
{
	struct caps_hit h;
	struct run r;
	uint8_t *s, *el;

	caps_reset();
	setup("3.4.5");
	meta.pid = 4242;
	meta.budgeted = true;
	meta.budget = 32;
	el = put(HEAPMEM, 64);
	set64(el, 0, 0x7000002000);
	set64(el, 16, 0x7000002050);
	s = slot(OBJ, 40, 0x07, KLASS);
	set64(s, layout.rarray_heap_len, 3);
	set64(s, layout.rarray_heap_ptr, HEAPMEM);
	decode(&meta, OBJ, 40, &r);
	expect_ref(&r, 0x7000002050, REF_ELEM, 2, 0);
	cr_expect_eq(meta.budget, 8, "24 bytes of 32 spent");

	s = slot(OBJ + 40, 40, 0x07, KLASS);
	set64(s, layout.rarray_heap_len, 8);
	set64(s, layout.rarray_heap_ptr, HEAPMEM);
	decode(&meta, OBJ + 40, 40, &r);
	cr_expect_eq(r.nq, 0, "64 bytes: past the 8 left");
	cr_expect_null(label_of(&r, 0x7000002000));
	caps_read(4242, &h);
	cr_expect_eq(h.n[CAP_WALK_BYTES], 1);
	cr_expect_eq(meta.gaps.n[GAP_UNREAD], 1);
	cr_expect(r.nparts == 1 && r.parts[0].why == CUT_BUDGET && r.parts[0].total == 8,
		  "the array is said read in part");

	meta.budgeted = false; /* off: as after a walk, single objects read what they need */
	decode(&meta, OBJ + 40, 40, &r);
	expect_ref(&r, 0x7000002000, REF_ELEM, 0, 0);
	teardown();
}

/* A typed T_DATA slot at addr of type t whose struct is at data. */
static void tdata(uint64_t addr, uint64_t t, uint64_t data)
{
	uint8_t *s = slot(addr, 40, 0x0c, KLASS);

	set64(s, layout.tdata_type, t);
	set64(s, layout.tdata_typed_flag, 1);
	set64(s, layout.tdata_data, data);
}

Test(refs_decode, fiber_stack_checked_by_its_saved_ec)
{
	uint64_t FIBER_T = 0x5000, FIB = HEAPMEM, STACK = HEAPMEM + 0x10000, ec, cfp;
	uint8_t *f, *st;
	struct run r;

	setup("3.3.8");
	data_type(FIBER_T, DATA_FIBER);
	ec = layout.fiber_saved_ec;
	cr_assert(ec && layout.ec_fiber_ptr && layout.fiber_first_proc, "3.3 knows fibers");
	/* a suspended fiber: 3 values below the top frame's sp, 2 frames above */
	f = put(FIB, layout.fiber_first_proc + 8);
	set64(f, ec + layout.ec_fiber_ptr, FIB);
	set64(f, ec + layout.ec_vm_stack, STACK);
	set64(f, ec + layout.ec_vm_stack_size, 64);
	cfp = STACK + 64 * 8 - 2 * layout.cfp_size;
	set64(f, ec + layout.ec_cfp, cfp);
	set64(f, layout.fiber_first_proc, 0x7000003000);
	st = put(STACK, 64 * 8);
	set64(st, 0, 0x7000002000);
	set64(st, 8, 0x15); /* a Fixnum */
	set64(st, 16, 0x7000002028);
	set64(st, 24, 0x7000009990); /* above sp: a dead slot of a returned frame */
	set64(st, cfp - STACK + layout.cfp_sp, STACK + 24);
	set64(st, cfp - STACK + layout.cfp_self, 0x7000002050);
	tdata(OBJ, FIBER_T, FIB);
	decode(&meta, OBJ, 40, &r);
	cr_expect_not_null(label_of(&r, 0x7000002000), "a stack value");
	cr_expect_not_null(label_of(&r, 0x7000002028), "a stack value");
	cr_expect_null(label_of(&r, 0x7000009990), "nothing above the top frame's sp");
	cr_expect_not_null(label_of(&r, 0x7000002050), "a frame's self");
	cr_expect_not_null(label_of(&r, 0x7000003000), "its block");
	cr_expect_eq(meta.fibers_walked, 1);
	/* a saved ec that does not point back at the fiber: not followed, counted */
	set64(f, ec + layout.ec_fiber_ptr, FIB + 8);
	decode(&meta, OBJ, 40, &r);
	cr_expect_eq(r.n, 1, "its class only");
	cr_expect_eq(meta.fibers_unproved, 1);
	cr_expect_eq(meta.gaps.n[GAP_OPAQUE_DATA], 1, "counted with the opaque data");
	teardown();
}

Test(refs_decode, queue_array_must_be_hidden)
{
	uint64_t QUEUE_T = 0x5000, Q = HEAPMEM, ARY = 0x7000004000;
	uint8_t *q, *a;
	struct run r;

	setup("3.1.2");
	data_type(QUEUE_T, DATA_QUEUE);
	q = put(Q, layout.queue_que + 8);
	set64(q, layout.queue_que, ARY);
	a = slot(ARY, 40, RB_T_ARRAY, 0); /* ary_buf_new: no class */
	tdata(OBJ, QUEUE_T, Q);
	decode(&meta, OBJ, 40, &r);
	cr_assert_not_null(label_of(&r, ARY), "its array");
	cr_expect_eq(label_of(&r, ARY)->kind, REF_FIELD);
	cr_expect_str_eq((const char *) (uintptr_t) label_of(&r, ARY)->a, "(queue)");
	cr_expect_eq(meta.gaps.n[GAP_OPAQUE_DATA], 0);
	/* an Array with a class is not a queue's buffer: the offset is wrong, nothing followed */
	set64(a, 8, KLASS);
	decode(&meta, OBJ, 40, &r);
	cr_expect_null(label_of(&r, ARY));
	cr_expect_eq(meta.gaps.n[GAP_OPAQUE_DATA], 1);
	teardown();
}

Test(refs_decode, generic_ivars_31_and_34)
{
	uint64_t STR = OBJ, TBL = HEAPMEM;
	uint8_t *t;
	struct run r;

	/* 3.1: {numiv, ivptr[]}, named as the class's ivars */
	setup("3.1.2");
	slot(STR, 40, 0x05 | layout.fl_exivar, KLASS);
	t = put(TBL, layout.geniv_ivptr + 16);
	set32(t, 0, 2);
	set64(t, layout.geniv_ivptr, 0x7000002000);
	set64(t, layout.geniv_ivptr + 8, 0x34); /* Qundef: not set */
	decode(&meta, STR, 40, &r);
	cr_expect_eq(r.n, 1, "not in the table: its class only");
	cr_expect_eq(meta.genivs_missing, 1);
	u64map_put(&meta.genivs, STR, (void *) (uintptr_t) TBL);
	decode(&meta, STR, 40, &r);
	expect_ref(&r, 0x7000002000, REF_IVAR_INDEX, 0, KLASS);
	cr_expect_eq(meta.genivs_walked, 1);
	cr_expect(!r.sized, "a String's size is not its ivars'");
	teardown();
	/* 3.4: as many as the object's shape says, named by the shape */
	setup("3.4.5");
	struct shape_info *si = calloc(1, sizeof(*si));
	si->next_iv_index = 1;
	si->type = (uint8_t) layout.shape_type_ivar;
	si->read = true;
	u64map_put(&meta.shapes, 7 + 1, si);
	slot(STR, 40, 0x05 | layout.fl_exivar | (7ull << layout.shape_id_shift), KLASS);
	t = put(TBL, layout.geniv_ivptr + 16);
	set64(t, layout.geniv_ivptr, 0x7000002000);
	set64(t, layout.geniv_ivptr + 8, 0x7000002028); /* past the shape's count */
	u64map_put(&meta.genivs, STR, (void *) (uintptr_t) TBL);
	decode(&meta, STR, 40, &r);
	expect_ref(&r, 0x7000002000, REF_IVAR_INDEX, 0, 7);
	cr_expect_null(label_of(&r, 0x7000002028));
	teardown();
}

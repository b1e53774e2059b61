// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rbmemtrace.h"
#include "stacks.h"
#include "ruby_string.h"
#include "target_mem.h"

#define RB_T_ARRAY 0x07
#define TEXT_MAX 1024

struct iseq_info {
	char *label;
	char *qualified; /* "Foo#bar", "block in Foo#bar": once the owner is found */
	char *path;
	uint64_t iseq; /* its address */
	uint32_t type;
	uint64_t local_iseq;
	int first_line;
	uint64_t body;	  /* what the iseq pointed at when read: a cached entry must still */
	uint64_t encoded; /* its instructions, iseq_size words */
	uint32_t iseq_size;
	/*
	 * Its line table, copied when first read: a required file's top-level
	 * and class-body iseqs are freed once the require returns and a GC
	 * runs, and their frames must still name their lines.
	 */
	int32_t *lines; /* line_no of each insns_info entry */
	uint32_t insns_info_size;
	uint8_t *succ; /* the succinct index of entries by position */
	size_t succ_len;
	struct iseq_info *retired_next; /* replaced at its address, kept for named stacks */
	uint64_t checked;		/* symbolizer.naming when found still at its address */
};

void symbolizer_init(struct symbolizer *s, pid_t pid, const struct ruby_layout *off,
		     struct class_namer *namer, id_namer_fn id_namer, void *id_namer_ctx)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->layout = off;
	s->namer = namer;
	s->id_namer = id_namer;
	s->id_namer_ctx = id_namer_ctx;
}

/* Ruby 3.1 iseq.c: 54 positions of 7-bit ranks, then 512-position blocks. */
#define SUCC_IMMEDIATE 54
#define SUCC_BLOCK_BITS 512
#define SUCC_BLOCK_SIZE 80

int succ_index_rank(uint32_t pos, int (*read)(void *ctx, uint64_t off, void *buf, size_t len),
		    void *ctx, uint32_t *rank)
{
	struct {
		uint32_t rank;
		uint32_t pad;
		uint64_t small_ranks; /* seven 9-bit ranks of 64-bit sub-blocks 1..7 */
		uint64_t bits[8];
	} block;
	uint32_t x, bit, small;
	uint64_t word;

	if (pos < SUCC_IMMEDIATE) {
		if (read(ctx, (pos / 9) * 8, &word, sizeof(word)))
			return -EFAULT;
		*rank = (word >> ((pos % 9) * 7)) & 0x7f;
		return 0;
	}
	x = pos - SUCC_IMMEDIATE;
	if (read(ctx, (SUCC_IMMEDIATE / 9) * 8 + (uint64_t) (x / SUCC_BLOCK_BITS) * SUCC_BLOCK_SIZE,
		 &block, sizeof(block)))
		return -EFAULT;
	bit = x % SUCC_BLOCK_BITS;
	small = bit / 64;
	*rank = block.rank + (small ? (block.small_ranks >> ((small - 1) * 9)) & 0x1ff : 0) +
		__builtin_popcountll(block.bits[small] << (63 - bit % 64));
	return 0;
}

/* Bytes of the succinct index of an iseq of size instructions (iseq.c, succ_index_table). */
static size_t succ_table_size(uint32_t size)
{
	size_t n = (SUCC_IMMEDIATE / 9) * 8;

	if (size > SUCC_IMMEDIATE)
		n += ((size - SUCC_IMMEDIATE - 1) / SUCC_BLOCK_BITS + 1) * (size_t) SUCC_BLOCK_SIZE;
	return n;
}

struct table_copy {
	const uint8_t *bytes;
	size_t len;
};

static int read_copy(void *ctx, uint64_t off, void *buf, size_t len)
{
	const struct table_copy *t = ctx;

	if (off > t->len || len > t->len - off)
		return -EFAULT;
	memcpy(buf, t->bytes + off, len);
	return 0;
}

/* Copies the iseq's line table and its index out of the target; 0 or -errno. */
static int copy_line_table(struct symbolizer *s, struct iseq_info *info, uint64_t insns_info,
			   uint64_t succ_table)
{
	const struct ruby_layout *off = s->layout;
	size_t i, n = info->insns_info_size, each = off->insn_info_size;
	uint8_t *raw;

	if (!n || n > (1u << 24) || each < off->insn_info_line_no + 4)
		return 0;
	raw = malloc(n * each);
	info->lines = malloc(n * sizeof(*info->lines));
	if (!raw || !info->lines || target_read(s->pid, insns_info, raw, n * each)) {
		free(raw);
		return -EFAULT;
	}
	for (i = 0; i < n; i++)
		memcpy(&info->lines[i], raw + i * each + off->insn_info_line_no, 4);
	free(raw);
	if (n > 1 && succ_table) {
		info->succ_len = succ_table_size(info->iseq_size);
		info->succ = malloc(info->succ_len);
		if (!info->succ || target_read(s->pid, succ_table, info->succ, info->succ_len)) {
			free(info->succ);
			info->succ = NULL;
			info->succ_len = 0;
		}
	}
	return 0;
}

static char *read_text(struct symbolizer *s, uint64_t str)
{
	char buf[TEXT_MAX];

	if (ruby_read_string(s->pid, s->layout, str, buf, sizeof(buf)))
		return NULL;
	return strdup(buf);
}

/* pathobj is a String, or an Array [path, realpath]. */
static char *read_path(struct symbolizer *s, uint64_t pathobj)
{
	const struct ruby_layout *off = s->layout;
	uint64_t hdr[5], first;

	if (target_read(s->pid, pathobj, hdr, sizeof(hdr)))
		return NULL;
	if ((hdr[0] & RB_T_MASK) != RB_T_ARRAY)
		return read_text(s, pathobj);
	if (hdr[0] & off->rarray_embed_flag)
		first = hdr[off->rarray_embed_start / 8];
	else if (target_read_u64(s->pid, hdr[off->rarray_heap_ptr / 8], &first))
		return NULL;
	return read_text(s, first);
}

static bool is_imemo(struct symbolizer *s, uint64_t addr, uint32_t imemo)
{
	uint64_t flags;

	return addr && !(addr & 7) && !target_read_u64(s->pid, addr, &flags) &&
	       (flags & RB_T_MASK) == RB_T_IMEMO &&
	       ((flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK) == imemo;
}

/*
 * The iseq at this address now, cached.  An iseq can be freed (eval'd and
 * dropped code) and another allocated at its address: a cached entry is
 * used only while the address still holds the same body and instructions.
 */
static struct iseq_info *iseq_info(struct symbolizer *s, uint64_t iseq)
{
	const struct ruby_layout *off = s->layout;
	struct iseq_info *info = u64map_get(&s->iseqs, iseq);
	uint64_t body, pathobj, label, first_line, encoded, insns_info, succ_table;
	uint32_t size;

	/* Naming a path (naming odd): checked with the path's other iseqs. */
	if (info && (s->naming & 1) && info->checked == s->naming)
		return info;
	if (!is_imemo(s, iseq, off->imemo_iseq) ||
	    target_read_u64(s->pid, iseq + off->iseq_body, &body) || !body ||
	    target_read_u64(s->pid, body + off->body_iseq_encoded, &encoded))
		return NULL;
	if (info && info->body == body && info->encoded == encoded) {
		info->checked = s->naming;
		return info;
	}
	if (info) {
		/*
		 * Another iseq now: the old names must not be returned for it.
		 * Stacks named earlier still point at them: retire, not free.
		 */
		info->retired_next = s->retired_iseqs;
		s->retired_iseqs = info;
	}
	info = calloc(1, sizeof(*info));
	if (!info)
		return NULL;
	if (target_read_u64(s->pid, body + off->body_location_pathobj, &pathobj) ||
	    target_read_u64(s->pid, body + off->body_location_label, &label) ||
	    target_read_u64(s->pid, body + off->body_first_lineno, &first_line) ||
	    target_read(s->pid, body + off->body_iseq_size, &info->iseq_size,
			sizeof(info->iseq_size)) ||
	    target_read_u64(s->pid, body + off->body_insns_info_body, &insns_info) ||
	    target_read(s->pid, body + off->body_insns_info_size, &size, sizeof(size)) ||
	    target_read_u64(s->pid, body + off->body_succ_index_table, &succ_table) ||
	    target_read(s->pid, body + off->body_type, &info->type, sizeof(info->type)) ||
	    target_read_u64(s->pid, body + off->body_local_iseq, &info->local_iseq)) {
		free(info);
		return NULL;
	}
	info->iseq = iseq;
	info->body = body;
	info->encoded = encoded;
	info->checked = s->naming;
	info->insns_info_size = size;
	if (copy_line_table(s, info, insns_info, succ_table)) {
		free(info->lines);
		free(info);
		return NULL;
	}
	/* 3.1: a Fixnum VALUE; from 3.2 a C int */
	info->first_line = off->body_first_lineno_size == 4 ? (int) (int32_t) first_line
							    : (int) ((int64_t) first_line >> 1);
	info->label = read_text(s, label);
	info->path = read_path(s, pathobj);
	if (u64map_put(&s->iseqs, iseq, info)) {
		free(info->label);
		free(info->path);
		free(info->lines);
		free(info->succ);
		free(info);
		return NULL;
	}
	return info;
}

static bool pc_in(const struct iseq_info *info, uint64_t pc)
{
	return pc == RBM_PC_NO_INSN ||
	       (pc >= info->encoded && pc <= info->encoded + (uint64_t) info->iseq_size * 8);
}

/*
 * The iseq a frame ran: the one at its address now, or, when that one was
 * freed since (a required file's top level, a class body, eval'd code),
 * the one read there earlier whose instructions hold the frame's pc.
 */
static struct iseq_info *frame_iseq(struct symbolizer *s, uint64_t iseq, uint64_t pc)
{
	struct iseq_info *info = iseq_info(s, iseq), *r;

	if (info && pc_in(info, pc))
		return info;
	info = u64map_get(&s->iseqs, iseq);
	if (info && pc_in(info, pc))
		return info;
	for (r = s->retired_iseqs; r; r = r->retired_next)
		if (r->iseq == iseq && pc_in(r, pc))
			return r;
	return NULL;
}

/*
 * The line of the instruction before pc: a caller's pc is past its call; the
 * allocating frame's was moved one word on by the BPF side, as Ruby does.
 */
static int iseq_line(const struct iseq_info *info, uint64_t pc)
{
	struct table_copy succ = {info->succ, info->succ_len};
	uint64_t pos;
	uint32_t index = 0, rank;

	if (pc < info->encoded || !info->insns_info_size || !info->lines)
		return info->first_line;
	pos = (pc - info->encoded) / 8;
	if (pos)
		pos--;
	if (info->insns_info_size > 1) {
		if (!info->succ || pos > UINT32_MAX ||
		    succ_index_rank((uint32_t) pos, read_copy, &succ, &rank) || !rank ||
		    rank > info->insns_info_size)
			return info->first_line;
		index = rank - 1;
	}
	return info->lines[index];
}

/* "Foo#name", or for a singleton class #<Class:Foo>, "Foo.name". */
static void method_label(struct symbolizer *s, uint64_t owner, const char *name, char *buf,
			 size_t n)
{
	const char *owner_name = class_namer_name(s->namer, owner);

	if (strncmp(owner_name, "#<Class:", 8) == 0 && owner_name[8] != '#' && owner_name[8] != '0')
		snprintf(buf, n, "%.*s.%s", (int) strlen(owner_name) - 9, owner_name + 8, name);
	else
		snprintf(buf, n, "%s#%s", owner_name, name);
}

#define MAX_ANCESTORS 256
#define MAX_MTBL_CAPA 65536

/* Looks in one method table for the entry whose method is this iseq; its owner, or 0. */
static uint64_t owner_in_table(struct symbolizer *s, uint64_t m_tbl, uint64_t iseq)
{
	const struct ruby_layout *off = s->layout;
	uint64_t found = 0, items;
	unsigned char *buf;
	int32_t capa;
	uint32_t i;

	if (target_read(s->pid, m_tbl + off->id_table_capa, &capa, sizeof(capa)) ||
	    target_read_u64(s->pid, m_tbl + off->id_table_items, &items) || capa <= 0 ||
	    capa > MAX_MTBL_CAPA || !items)
		return 0;
	buf = malloc((size_t) capa * off->id_item_size);
	if (!buf || target_read(s->pid, items, buf, (size_t) capa * off->id_item_size)) {
		free(buf);
		return 0;
	}
	for (i = 0; i < (uint32_t) capa && !found; i++) {
		const unsigned char *item = buf + (size_t) i * off->id_item_size;
		uint64_t me, def, def_iseq, owner;
		uint32_t key, def_flags;

		memcpy(&key, item, sizeof(key));
		memcpy(&me, item + off->id_item_value, sizeof(me));
		if (!key || !me || target_read_u64(s->pid, me + off->me_def, &def) || !def ||
		    target_read(s->pid, def, &def_flags, sizeof(def_flags)) ||
		    (def_flags & 0xf) != off->method_type_iseq ||
		    target_read_u64(s->pid, def + off->def_iseq, &def_iseq) || def_iseq != iseq ||
		    target_read_u64(s->pid, me + off->me_owner, &owner))
			continue;
		found = owner;
	}
	free(buf);
	return found;
}

/*
 * The class or module that defines a method iseq, found from the receiver's
 * class: up its ancestry (included modules are iclasses sharing their
 * module's table) to the table holding the method.  0 if not found.
 */
static uint64_t method_owner(struct symbolizer *s, uint64_t klass, uint64_t iseq)
{
	const struct ruby_layout *off = s->layout;
	uint64_t ext, m_tbl, owner;
	int i;

	for (i = 0; klass && i < MAX_ANCESTORS; i++) {
		/* 3.3+: in the class itself; 3.1: in the classext it points at */
		if (off->rclass_m_tbl) {
			if (target_read_u64(s->pid, klass + off->rclass_m_tbl, &m_tbl))
				return 0;
		} else if (target_read_u64(s->pid, klass + off->rclass_ext, &ext) || !ext ||
			   target_read_u64(s->pid, ext + off->classext_m_tbl, &m_tbl)) {
			return 0;
		}
		if (m_tbl && (owner = owner_in_table(s, m_tbl, iseq)))
			return owner;
		if (target_read_u64(s->pid, klass + off->rclass_super, &klass))
			return 0;
	}
	return 0;
}

/*
 * "bar" -> "Foo#bar" and "block (2 levels) in bar" -> "block (2 levels) in
 * Foo#bar", as Ruby 3.4 prints them.  3.1's iseqs know no owner: it is
 * found once per iseq through the class of the frame's receiver.
 */
static void qualify(struct symbolizer *s, uint64_t iseq, struct iseq_info *info, uint64_t klass)
{
	uint64_t method_iseq = iseq, owner;
	struct iseq_info *method = info;
	char name[TEXT_MAX], buf[2 * TEXT_MAX];
	size_t prefix;

	if (info->qualified || !info->label || !klass)
		return;
	if (info->type == s->layout->iseq_type_block) {
		method_iseq = info->local_iseq;
		method = iseq_info(s, method_iseq);
	} else if (info->type != s->layout->iseq_type_method) {
		return;
	}
	if (!method || method->type != s->layout->iseq_type_method || !method->label)
		return;
	prefix = strlen(info->label) - strlen(method->label);
	if (strlen(info->label) < strlen(method->label) ||
	    strcmp(info->label + prefix, method->label) != 0)
		return;
	owner = method_owner(s, klass, method_iseq);
	if (!owner)
		return;
	method_label(s, owner, method->label, name, sizeof(name));
	snprintf(buf, sizeof(buf), "%.*s%s", (int) prefix, info->label, name);
	info->qualified = strdup(buf);
}

static const char *cfunc_label(struct symbolizer *s, uint64_t cme)
{
	const struct ruby_layout *off = s->layout;
	char *label = u64map_get(&s->cfuncs, cme);
	char buf[TEXT_MAX], name[256] = "?";
	uint64_t owner, def, id;

	if (label)
		return label;
	if (!is_imemo(s, cme, off->imemo_ment) ||
	    target_read_u64(s->pid, cme + off->cme_owner, &owner) ||
	    target_read_u64(s->pid, cme + off->cme_def, &def) ||
	    target_read_u64(s->pid, def + off->def_original_id, &id))
		snprintf(buf, sizeof(buf), "(unknown C method 0x%" PRIx64 ")", cme);
	else {
		if (s->id_namer && s->id_namer(s->id_namer_ctx, id, name, sizeof(name)))
			snprintf(name, sizeof(name), "?");
		method_label(s, owner, name, buf, sizeof(buf));
	}
	label = strdup(buf);
	if (!label || u64map_put(&s->cfuncs, cme, label)) {
		free(label);
		return "(out of memory)";
	}
	return label;
}

enum immediate_kind immediate_kind_of(uint64_t v)
{
	if (v & 1)
		return IMMEDIATE_INTEGER;
	if ((v & 3) == 2)
		return IMMEDIATE_FLOAT;
	if ((v & 0xff) == 0x0c)
		return IMMEDIATE_SYMBOL;
	return v == 0x08   ? IMMEDIATE_NIL
	       : v == 0x14 ? IMMEDIATE_TRUE
	       : v == 0	   ? IMMEDIATE_FALSE
			   : IMMEDIATE_KINDS;
}

static void name_frame(struct symbolizer *s, uint64_t a, uint64_t b, uint64_t self_class,
		       struct frame *f)
{
	struct iseq_info *info;
	uint64_t key;
	uintptr_t line;

	f->line = 0;
	if (!b) { /* a C method: (method entry, 0) */
		f->label = cfunc_label(s, a);
		f->path = "<cfunc>";
		return;
	}
	info = frame_iseq(s, a, b);
	/*
	 * Freed before it was ever read, or another iseq took its address: the
	 * pc must lie in the instructions of what is named.  Say so rather
	 * than guess.
	 */
	if (!info) {
		f->label = "(iseq gone)";
		f->path = "?";
		return;
	}
	if (self_class & RBM_IMMEDIATE_SELF) {
		enum immediate_kind k = immediate_kind_of(self_class & ~RBM_IMMEDIATE_SELF);

		self_class = k < IMMEDIATE_KINDS ? s->immediate_classes[k] : 0;
	}
	qualify(s, a, info, self_class);
	f->label = info->qualified ? info->qualified : info->label ? info->label : "?";
	f->path = info->path ? info->path : "?";
	/* Keyed by the instructions too: a new iseq at the address has its own lines. */
	key = (a * 0x9e3779b97f4a7c15ULL) ^ b ^ (info->encoded << 17);
	line = (uintptr_t) u64map_get(&s->lines, key ? key : 1);
	if (!line) {
		line = (uintptr_t) iseq_line(info, b) + 1;
		u64map_put(&s->lines, key ? key : 1, (void *) line);
	}
	f->line = (int) (line - 1);
}

/*
 * New call paths come in bursts (a program loading its files: ~13,000 a
 * second under rubocop), and a required file's top-level iseq is freed at
 * the next GC: naming must keep up.  Checking that each frame's cached iseq
 * is still at its address took three reads a frame (~75 us a path of 32);
 * the cached ones of a path are checked in three batched reads instead.
 */
static void check_cached_iseqs(struct symbolizer *s, const uint64_t *words, uint32_t depth)
{
	const struct ruby_layout *off = s->layout;
	uint64_t addrs[MAX_STACK_DEPTH], flags[MAX_STACK_DEPTH], body[MAX_STACK_DEPTH];
	uint64_t encoded[MAX_STACK_DEPTH];
	struct iseq_info *info[MAX_STACK_DEPTH];
	bool ok[MAX_STACK_DEPTH];
	uint32_t i, n = 0;

	for (i = 0; i < depth && n < MAX_STACK_DEPTH; i++) {
		struct iseq_info *c = words[i * 2 + 1] ? u64map_get(&s->iseqs, words[i * 2]) : NULL;

		if (c && c->checked != s->naming) {
			c->checked = 0; /* twice in the path: once in the batch */
			info[n] = c;
			addrs[n++] = words[i * 2];
		}
	}
	if (!n)
		return;
	target_read_many(s->pid, addrs, n, sizeof(uint64_t), flags, ok);
	for (i = 0; i < n; i++)
		addrs[i] = ok[i] ? addrs[i] + off->iseq_body : 0;
	target_read_many(s->pid, addrs, n, sizeof(uint64_t), body, ok);
	for (i = 0; i < n; i++)
		addrs[i] = ok[i] && body[i] ? body[i] + off->body_iseq_encoded : 0;
	target_read_many(s->pid, addrs, n, sizeof(uint64_t), encoded, ok);
	for (i = 0; i < n; i++)
		if (ok[i] && (flags[i] & RB_T_MASK) == RB_T_IMEMO &&
		    ((flags[i] >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK) == off->imemo_iseq &&
		    body[i] == info[i]->body && encoded[i] == info[i]->encoded)
			info[i]->checked = s->naming;
}

const struct stack *symbolizer_add_stack(struct symbolizer *s, uint64_t stack_id,
					 const uint64_t *words, const uint64_t *selves,
					 uint32_t depth, bool truncated)
{
	struct stack *st = u64map_get(&s->stacks, stack_id);
	uint32_t i;

	if (st)
		return st;
	s->naming++;
	check_cached_iseqs(s, words, depth);
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->frames = calloc(depth ? depth : 1, sizeof(*st->frames));
	if (!st->frames) {
		free(st);
		return NULL;
	}
	for (i = 0; i < depth; i++)
		name_frame(s, words[i * 2], words[i * 2 + 1], selves ? selves[i] : 0,
			   &st->frames[i]);
	st->depth = depth;
	st->truncated = truncated;
	s->naming++; /* outside a path, every look checks again */
	if (u64map_put(&s->stacks, stack_id, st)) {
		free(st->frames);
		free(st);
		return NULL;
	}
	return st;
}

const struct stack *symbolizer_add_site(struct symbolizer *s, uint64_t site_id, uint64_t iseq,
					uint64_t pc, uint64_t self_class)
{
	const uint64_t words[2] = {iseq, pc};
	struct stack *st;

	if (!symbolizer_add_stack(s, site_id, words, &self_class, 1, false))
		return NULL;
	st = u64map_get(&s->stacks, site_id);
	st->site_only = true;
	return st;
}

const struct stack *symbolizer_stack(const struct symbolizer *s, uint64_t stack_id)
{
	return u64map_get(&s->stacks, stack_id);
}

static void free_iseq_info(void *p)
{
	struct iseq_info *info = p;

	free(info->label);
	free(info->qualified);
	free(info->path);
	free(info->lines);
	free(info->succ);
	free(info);
}

static void free_stack(void *p)
{
	struct stack *st = p;

	free(st->frames);
	free(st);
}

void symbolizer_free(struct symbolizer *s)
{
	while (s->retired_iseqs) {
		struct iseq_info *next = s->retired_iseqs->retired_next;

		free_iseq_info(s->retired_iseqs);
		s->retired_iseqs = next;
	}
	u64map_free(&s->iseqs, free_iseq_info);
	u64map_free(&s->lines, NULL);
	u64map_free(&s->cfuncs, free);
	u64map_free(&s->stacks, free_stack);
}

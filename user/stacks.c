// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stacks.h"
#include "target_mem.h"

#define RB_T_ARRAY 0x07
#define TEXT_MAX 1024

struct iseq_info {
	char *label;
	char *path;
	int first_line;
	uint64_t encoded;
	uint64_t insns_info;
	uint32_t insns_info_size;
	uint64_t succ_table;
};

void symbolizer_init(struct symbolizer *s, pid_t pid, const struct ruby_offsets *off,
		     struct class_namer *namer, id_namer_fn id_namer, void *id_namer_ctx)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->off = off;
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
	if (read(ctx, (SUCC_IMMEDIATE / 9) * 8 + (uint64_t)(x / SUCC_BLOCK_BITS) * SUCC_BLOCK_SIZE,
		 &block, sizeof(block)))
		return -EFAULT;
	bit = x % SUCC_BLOCK_BITS;
	small = bit / 64;
	*rank = block.rank + (small ? (block.small_ranks >> ((small - 1) * 9)) & 0x1ff : 0) +
		__builtin_popcountll(block.bits[small] << (63 - bit % 64));
	return 0;
}

struct table_reader {
	pid_t pid;
	uint64_t base;
};

static int read_table(void *ctx, uint64_t off, void *buf, size_t len)
{
	struct table_reader *r = ctx;

	return target_read(r->pid, r->base + off, buf, len);
}

static char *read_text(struct symbolizer *s, uint64_t str)
{
	char buf[TEXT_MAX];

	if (target_read_rstring(s->pid, s->off, str, buf, sizeof(buf)))
		return NULL;
	return strdup(buf);
}

/* pathobj is a String, or an Array [path, realpath]. */
static char *read_path(struct symbolizer *s, uint64_t pathobj)
{
	const struct ruby_offsets *off = s->off;
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

static struct iseq_info *iseq_info(struct symbolizer *s, uint64_t iseq)
{
	const struct ruby_offsets *off = s->off;
	struct iseq_info *info = u64map_get(&s->iseqs, iseq);
	uint64_t body, pathobj, label, first_line;
	uint32_t size;

	if (info)
		return info;
	if (!is_imemo(s, iseq, off->imemo_iseq) ||
	    target_read_u64(s->pid, iseq + off->iseq_body, &body) || !body)
		return NULL;
	info = calloc(1, sizeof(*info));
	if (!info)
		return NULL;
	if (target_read_u64(s->pid, body + off->body_location_pathobj, &pathobj) ||
	    target_read_u64(s->pid, body + off->body_location_label, &label) ||
	    target_read_u64(s->pid, body + off->body_first_lineno, &first_line) ||
	    target_read_u64(s->pid, body + off->body_iseq_encoded, &info->encoded) ||
	    target_read_u64(s->pid, body + off->body_insns_info_body, &info->insns_info) ||
	    target_read(s->pid, body + off->body_insns_info_size, &size, sizeof(size)) ||
	    target_read_u64(s->pid, body + off->body_succ_index_table, &info->succ_table)) {
		free(info);
		return NULL;
	}
	info->insns_info_size = size;
	info->first_line = (int)((int64_t)first_line >> 1); /* a Fixnum */
	info->label = read_text(s, label);
	info->path = read_path(s, pathobj);
	if (u64map_put(&s->iseqs, iseq, info)) {
		free(info->label);
		free(info->path);
		free(info);
		return NULL;
	}
	return info;
}

/* The line of the instruction before pc (pc points past the call being made). */
static int iseq_line(struct symbolizer *s, const struct iseq_info *info, uint64_t pc)
{
	const struct ruby_offsets *off = s->off;
	struct table_reader reader = {s->pid, info->succ_table};
	uint64_t pos;
	uint32_t index = 0, rank;
	int32_t line;

	if (pc < info->encoded || !info->insns_info_size)
		return info->first_line;
	pos = (pc - info->encoded) / 8;
	if (pos)
		pos--;
	if (info->insns_info_size > 1) {
		if (!info->succ_table || pos > UINT32_MAX ||
		    succ_index_rank((uint32_t)pos, read_table, &reader, &rank) || !rank ||
		    rank > info->insns_info_size)
			return info->first_line;
		index = rank - 1;
	}
	if (target_read(s->pid, info->insns_info + (uint64_t)index * off->insn_info_size +
					off->insn_info_line_no,
			&line, sizeof(line)))
		return info->first_line;
	return line;
}

static const char *cfunc_label(struct symbolizer *s, uint64_t cme)
{
	const struct ruby_offsets *off = s->off;
	char *label = u64map_get(&s->cfuncs, cme);
	char buf[TEXT_MAX], name[256] = "?";
	uint64_t owner, def, id;
	const char *owner_name;

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
		owner_name = class_namer_name(s->namer, owner);
		/* Methods of a singleton class #<Class:Foo> print as Foo.name. */
		if (strncmp(owner_name, "#<Class:", 8) == 0 && owner_name[8] != '#' &&
		    owner_name[8] != '0')
			snprintf(buf, sizeof(buf), "%.*s.%s", (int)strlen(owner_name) - 9,
				 owner_name + 8, name);
		else
			snprintf(buf, sizeof(buf), "%s#%s", owner_name, name);
	}
	label = strdup(buf);
	if (!label || u64map_put(&s->cfuncs, cme, label)) {
		free(label);
		return "(out of memory)";
	}
	return label;
}

static void name_frame(struct symbolizer *s, uint64_t a, uint64_t b, struct frame *f)
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
	info = iseq_info(s, a);
	if (!info) {
		/* Freed since (an eval'd or unloaded method): say so rather than guess. */
		f->label = "(iseq gone)";
		f->path = "?";
		return;
	}
	f->label = info->label ? info->label : "?";
	f->path = info->path ? info->path : "?";
	key = (a * 0x9e3779b97f4a7c15ULL) ^ b;
	line = (uintptr_t)u64map_get(&s->lines, key ? key : 1);
	if (!line) {
		line = (uintptr_t)iseq_line(s, info, b) + 1;
		u64map_put(&s->lines, key ? key : 1, (void *)line);
	}
	f->line = (int)(line - 1);
}

const struct stack *symbolizer_add_stack(struct symbolizer *s, uint64_t stack_id,
					  const uint64_t *words, uint32_t depth, bool truncated)
{
	struct stack *st = u64map_get(&s->stacks, stack_id);
	uint32_t i;

	if (st)
		return st;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->frames = calloc(depth ? depth : 1, sizeof(*st->frames));
	if (!st->frames) {
		free(st);
		return NULL;
	}
	for (i = 0; i < depth; i++)
		name_frame(s, words[i * 2], words[i * 2 + 1], &st->frames[i]);
	st->depth = depth;
	st->truncated = truncated;
	if (u64map_put(&s->stacks, stack_id, st)) {
		free(st->frames);
		free(st);
		return NULL;
	}
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
	free(info->path);
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
	u64map_free(&s->iseqs, free_iseq_info);
	u64map_free(&s->lines, NULL);
	u64map_free(&s->cfuncs, free);
	u64map_free(&s->stacks, free_stack);
}

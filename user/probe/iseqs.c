// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The symbolizer's iseqs (stacks.c names call paths from them): each read
 * once from the target and cached with what a frame needs (label, path,
 * line table), so that a frame still names its line after its iseq is
 * freed; a cached one is used only while its address still holds it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "caps.h"
#include "iseqs.h"
#include "probe_caps.h"
#include "rbmemtrace.h"
#include "ruby_string.h"
#include "target_mem.h"

#define RB_T_ARRAY 0x07
#define TEXT_MAX PROBE_MAX_FRAME_TEXT

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

/*
 * Copies the iseq's line table and its index out of the target; 0 or -errno.
 * Both sizes are the target's words: past the caps of probe_caps.h (or the
 * run's budget for line tables) the iseq keeps none, and that is counted.
 */
static int copy_line_table(struct symbolizer *s, struct iseq_info *info, uint64_t insns_info,
			   uint64_t succ_table)
{
	const struct ruby_layout *off = s->layout;
	size_t i, n = info->insns_info_size, each = off->insn_info_size;
	size_t keep = n * sizeof(*info->lines) + (n > 1 ? succ_table_size(info->iseq_size) : 0);
	uint8_t *raw;

	if (!n || each < off->insn_info_line_no + 4)
		return 0;
	if (n > PROBE_MAX_LINE_ENTRIES || (n > 1 && info->iseq_size > PROBE_MAX_ISEQ_SIZE) ||
	    s->line_bytes + keep > PROBE_MAX_LINE_BYTES) {
		caps_count(s->pid, CAP_LINE_TABLE);
		return 0;
	}
	raw = malloc(n * each);
	info->lines = malloc(n * sizeof(*info->lines));
	if (!raw || !info->lines || target_read(s->pid, insns_info, raw, n * each)) {
		free(raw);
		return -EFAULT;
	}
	for (i = 0; i < n; i++)
		memcpy(&info->lines[i], raw + i * each + off->insn_info_line_no, 4);
	free(raw);
	s->line_bytes += keep; /* never given back: retired iseqs keep theirs */
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

char *iseqs_read_text(struct symbolizer *s, uint64_t str)
{
	char buf[TEXT_MAX];
	uint64_t full;

	if (ruby_read_string_full(s->pid, s->layout, str, buf, sizeof(buf), &full))
		return NULL;
	if (full >= sizeof(buf))
		caps_count(s->pid, CAP_FRAME_TEXT);
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
		return iseqs_read_text(s, pathobj);
	if (hdr[0] & off->rarray_embed_flag)
		first = hdr[off->rarray_embed_start / 8];
	else if (target_read_u64(s->pid, hdr[off->rarray_heap_ptr / 8], &first))
		return NULL;
	return iseqs_read_text(s, first);
}

bool iseqs_is_imemo(struct symbolizer *s, uint64_t addr, uint32_t imemo)
{
	uint64_t flags;

	return addr && !(addr & 7) && !target_read_u64(s->pid, addr, &flags) &&
	       (flags & RB_T_MASK) == RB_T_IMEMO &&
	       ((flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK) == imemo;
}

/*
 * A new iseq_info read from the iseq's body: its label, path, first line
 * and line table.  NULL when a read fails (or out of memory).
 */
static struct iseq_info *read_iseq(struct symbolizer *s, uint64_t iseq, uint64_t body,
				   uint64_t encoded)
{
	const struct ruby_layout *off = s->layout;
	uint64_t pathobj, label, first_line, insns_info, succ_table;
	struct iseq_info *info = calloc(1, sizeof(*info));
	uint32_t size;

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
	info->label = iseqs_read_text(s, label);
	info->path = read_path(s, pathobj);
	return info;
}

struct iseq_info *iseqs_get(struct symbolizer *s, uint64_t iseq)
{
	const struct ruby_layout *off = s->layout;
	struct iseq_info *info = u64map_get(&s->iseqs, iseq);
	uint64_t body, encoded;

	/* Naming a path (naming odd): checked with the path's other iseqs. */
	if (info && (s->naming & 1) && info->checked == s->naming)
		return info;
	if (!iseqs_is_imemo(s, iseq, off->imemo_iseq) ||
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
	info = read_iseq(s, iseq, body, encoded);
	if (!info)
		return NULL;
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
struct iseq_info *iseqs_of_frame(struct symbolizer *s, uint64_t iseq, uint64_t pc)
{
	struct iseq_info *info = iseqs_get(s, iseq), *r;

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
int iseqs_line(const struct iseq_info *info, uint64_t pc)
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

/*
 * New call paths come in bursts (a program loading its files: ~13,000 a
 * second under rubocop), and a required file's top-level iseq is freed at
 * the next GC: naming must keep up.  Checking that each frame's cached iseq
 * is still at its address took three reads a frame (~75 us a path of 32);
 * the cached ones of a path are checked in three batched reads instead.
 */
void iseqs_check_cached(struct symbolizer *s, const uint64_t *words, uint32_t depth)
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

void iseqs_free_info(void *p)
{
	struct iseq_info *info = p;

	free(info->label);
	free(info->qualified);
	free(info->path);
	free(info->lines);
	free(info->succ);
	free(info);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "elfinfo.h"
#include "ruby_symbols.h" /* before rbmemtrace.h: brings linux/types.h */
#include "rbmemtrace.h"
#include "ruby_string.h"
#include "target_mem.h"

#ifndef RB_T_ARRAY
#define RB_T_ARRAY 0x07
#endif
#define RB_QNIL 0x08

#define SCAN_LEN 256	    /* bytes of code read per function */
#define MAX_REFS 96
#define MAX_FOLLOW 8	    /* branch targets of rb_id2str that are scanned too */
#define MAX_CANDIDATES 8
#define LAST_ID_LIMIT (1ULL << 28) /* serials are 28 bits on 64-bit builds */

/* ---- The pattern scanner ---- */

/*
 * Immediate size after the ModRM/displacement for one-byte opcodes that take
 * a ModRM operand and may address memory; -1 for everything else.
 */
static int modrm_imm_size(uint8_t op)
{
	switch (op) {
	case 0x01: case 0x03: case 0x09: case 0x0b: /* add, or */
	case 0x11: case 0x13: case 0x19: case 0x1b: /* adc, sbb */
	case 0x21: case 0x23: case 0x29: case 0x2b: /* and, sub */
	case 0x31: case 0x33: case 0x39: case 0x3b: /* xor, cmp */
	case 0x63:				    /* movsxd */
	case 0x84: case 0x85: case 0x86: case 0x87: /* test, xchg */
	case 0x88: case 0x89: case 0x8a: case 0x8b: /* mov */
	case 0x8d:				    /* lea */
	case 0xff:				    /* inc/dec/call/jmp/push */
		return 0;
	case 0x80: case 0x83: case 0xc6:
		return 1;
	case 0x81: case 0xc7:
		return 4;
	default:
		return -1;
	}
}

/* Two-byte (0f xx) opcodes with a ModRM operand and no immediate. */
static bool modrm_0f_opcode(uint8_t op)
{
	return op == 0xb6 || op == 0xb7 || op == 0xbe || op == 0xbf || /* movzx, movsx */
	       op == 0xaf || (op >= 0x40 && op <= 0x4f);	       /* imul, cmovcc */
}

static int32_t read_le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/* Tries to match an instruction with a RIP-relative operand at code[i]. */
static bool match_rip(const uint8_t *code, size_t len, size_t i, uint64_t base,
		      struct rip_ref *r)
{
	size_t p = i, modrm_at, end;
	uint8_t rex = 0, op, modrm;
	int imm;

	if (code[p] >= 0x40 && code[p] <= 0x4f) {
		rex = code[p];
		p++;
	}
	if (p >= len)
		return false;
	op = code[p];
	if (op == 0x0f) {
		if (p + 1 >= len || !modrm_0f_opcode(code[p + 1]))
			return false;
		op = code[++p];
		imm = 0;
	} else {
		imm = modrm_imm_size(op);
		if (imm < 0)
			return false;
	}
	modrm_at = p + 1;
	end = modrm_at + 1 + 4 + (size_t)imm;
	if (end > len)
		return false;
	modrm = code[modrm_at];
	if ((modrm & 0xc7) != 0x05) /* mod=00, rm=101: [rip + disp32] */
		return false;
	r->insn = base + i;
	r->len = (uint8_t)(end - i);
	r->target = base + end + (int64_t)read_le32(code + modrm_at + 1);
	r->opcode = op;
	r->rex = rex;
	r->reg = (uint8_t)(((modrm >> 3) & 7) | ((rex & 0x04) << 1));
	return true;
}

size_t rip_scan(const uint8_t *code, size_t len, uint64_t base, struct rip_ref *out, size_t max)
{
	size_t i = 0, n = 0;
	struct rip_ref r;

	while (i < len && n < max) {
		memset(&r, 0, sizeof(r));
		if (match_rip(code, len, i, base, &r)) {
			out[n++] = r;
			i += r.len;
			continue;
		}
		if ((code[i] == 0xe8 || code[i] == 0xe9) && i + 5 <= len) {
			r.insn = base + i;
			r.len = 5;
			r.opcode = code[i];
			r.target = base + i + 5 + (int64_t)read_le32(code + i + 1);
			out[n++] = r;
			i += 5;
			continue;
		}
		i++;
	}
	return n;
}

/* ---- Picking rb_symbols_t ---- */

static bool reads_last_id(const struct rip_ref *r)
{
	return !rip_ref_is_branch(r) && (r->opcode == 0x39 || r->opcode == 0x3b || r->opcode == 0x8b);
}

static bool loads_ids(const struct rip_ref *r)
{
	return !rip_ref_is_branch(r) && r->opcode == 0x8b && rip_ref_is_wide(r);
}

static bool has_value(const uint64_t *v, size_t n, uint64_t x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

size_t ruby_symbols_candidates(const struct rip_ref *refs, size_t n, uint64_t *out, size_t max)
{
	size_t i, j, k = 0;
	int pass;

	/* Pass 0: 32-bit accesses to last_id (its 3.1 type); pass 1: any width. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n && k < max; i++) {
			if (!reads_last_id(&refs[i]) || (pass == 0 && rip_ref_is_wide(&refs[i])))
				continue;
			if (has_value(out, k, refs[i].target))
				continue;
			for (j = 0; j < n; j++) {
				if (loads_ids(&refs[j]) &&
				    refs[j].target == refs[i].target + RUBY_SYMBOLS_IDS_OFFSET) {
					out[k++] = refs[i].target;
					break;
				}
			}
		}
	}
	return k;
}

/* ---- ID arithmetic ---- */

int ruby_id_slot(uint64_t id, uint64_t last_op_id, struct ruby_id_slot *slot)
{
	uint64_t serial = id > last_op_id ? id >> RUBY_ID_SCOPE_SHIFT : id;

	if (!serial)
		return -EINVAL;
	slot->serial = serial;
	slot->array_index = serial / RUBY_ID_ENTRY_UNIT;
	slot->element_index = (serial % RUBY_ID_ENTRY_UNIT) * RUBY_ID_ENTRY_SIZE;
	return 0;
}

char ruby_op_id_char(uint64_t id)
{
	/* The ones Init_op_tbl registers: printable, not alphanumeric, not '_'. */
	if (id > ' ' && id < 0x7f && !isalnum((int)id) && id != '_')
		return (char)id;
	return 0;
}

/* ---- Reading the target ---- */

/* Element idx of the Array ary, bounds-checked against its length. */
static int rarray_entry(const struct ruby_symbols *rs, uint64_t ary, uint64_t idx, uint64_t *val)
{
	const struct ruby_layout *off = rs->layout;
	uint64_t hdr[5], len, ptr;
	int ret;

	if (!ary || (ary & 7))
		return -EINVAL;
	ret = target_read(rs->pid, ary, hdr, sizeof(hdr));
	if (ret)
		return ret;
	if ((hdr[0] & RB_T_MASK) != RB_T_ARRAY)
		return -EINVAL;
	if (hdr[0] & off->rarray_embed_flag) {
		len = (hdr[0] & off->rarray_embed_len_mask) >> off->rarray_embed_len_shift;
		ptr = ary + off->rarray_embed_start;
	} else {
		len = hdr[off->rarray_heap_len / 8];
		ptr = hdr[off->rarray_heap_ptr / 8];
	}
	if (idx >= len)
		return -ENOENT;
	return target_read_u64(rs->pid, ptr + idx * 8, val);
}

static int refresh_last_id(struct ruby_symbols *rs)
{
	uint32_t last;
	int ret;

	ret = target_read(rs->pid, rs->global_symbols, &last, sizeof(last));
	if (ret)
		return ret;
	rs->last_id = last;
	return 0;
}

/* The name from the table only (no fallback). */
static int table_name(struct ruby_symbols *rs, uint64_t id, char *buf, size_t n)
{
	struct ruby_id_slot slot;
	uint64_t ary, str;
	int ret;

	if (!n)
		return -EINVAL;
	ret = ruby_id_slot(id, rs->layout->id_last_op, &slot);
	if (ret)
		return ret;
	if (slot.serial > rs->last_id) {
		ret = refresh_last_id(rs);
		if (ret)
			return ret;
		if (slot.serial > rs->last_id)
			return -ENOENT;
	}
	ret = rarray_entry(rs, rs->ids, slot.array_index, &ary);
	if (ret)
		return ret;
	if (ary == RB_QNIL || !ary)
		return -ENOENT;
	ret = rarray_entry(rs, ary, slot.element_index, &str);
	if (ret)
		return ret;
	if (str == RB_QNIL || !str)
		return -ENOENT;
	return ruby_read_string(rs->pid, rs->layout, str, buf, n);
}

int ruby_id_name(struct ruby_symbols *rs, uint64_t id, char *buf, size_t n)
{
	char c;
	int ret;

	if (!rs->global_symbols || !n)
		return -EINVAL;
	ret = table_name(rs, id, buf, n);
	if (ret && (c = ruby_op_id_char(id)) && n >= 2) {
		buf[0] = c;
		buf[1] = '\0';
		return 0;
	}
	return ret;
}

/* Checks that addr (in the target) holds an rb_symbols_t; fills rs on success. */
static int verify_candidate(struct ruby_symbols *rs, uint64_t addr, char *why, size_t whylen)
{
	struct ruby_symbols t = *rs;
	uint32_t last;
	uint64_t ids, flags;
	char name[64];
	int ret;

	t.global_symbols = addr;
	if (target_read(t.pid, addr, &last, sizeof(last)) ||
	    target_read_u64(t.pid, addr + RUBY_SYMBOLS_IDS_OFFSET, &ids)) {
		snprintf(why, whylen, "unreadable");
		return -EFAULT;
	}
	if (last < t.layout->id_next - 1 || last >= LAST_ID_LIMIT) {
		snprintf(why, whylen, "last_id %u out of range", last);
		return -EINVAL;
	}
	if (!ids || (ids & 7) || target_read_u64(t.pid, ids, &flags) ||
	    (flags & RB_T_MASK) != RB_T_ARRAY) {
		snprintf(why, whylen, "ids 0x%" PRIx64 " is not an Array", ids);
		return -EINVAL;
	}
	t.last_id = last;
	t.ids = ids;
	ret = table_name(&t, '+', name, sizeof(name));
	if (ret || strcmp(name, "+")) {
		snprintf(why, whylen, "ID '+' reads as %s", ret ? strerror(-ret) : name);
		return -EINVAL;
	}
	ret = table_name(&t, t.layout->id_initialize, name, sizeof(name));
	if (ret || strcmp(name, "initialize")) {
		snprintf(why, whylen, "idInitialize reads as %s", ret ? strerror(-ret) : name);
		return -EINVAL;
	}
	*rs = t;
	return 0;
}

/* Tries the candidates in refs (ELF addresses); 0 once one verifies. */
static int try_refs(struct ruby_symbols *rs, const struct ruby_image *img,
		    const struct rip_ref *refs, size_t n, char *why, size_t whylen, int *tried)
{
	uint64_t cand[MAX_CANDIDATES];
	size_t i, nc;

	nc = ruby_symbols_candidates(refs, n, cand, MAX_CANDIDATES);
	for (i = 0; i < nc; i++) {
		char reason[128];

		(*tried)++;
		if (!verify_candidate(rs, img->load_bias + cand[i], reason, sizeof(reason)))
			return 0;
		snprintf(why, whylen, "candidate 0x%" PRIx64 ": %s", cand[i], reason);
	}
	return -ENOENT;
}

int ruby_symbols_init(struct ruby_symbols *rs, pid_t pid, const struct ruby_image *img,
		      const struct ruby_layout *off, char *err, size_t errlen)
{
	struct rip_ref refs[MAX_REFS], sub[MAX_REFS];
	uint8_t code[SCAN_LEN];
	char why[192] = "no candidate";
	uint64_t fn, addr;
	size_t n, m, i;
	int ret, tried = 0, followed = 0;

	memset(rs, 0, sizeof(*rs));
	rs->pid = pid;
	rs->layout = off;
	ret = elf_symbol_value(img->host_path, "rb_id2str", &fn, NULL);
	if (ret) {
		snprintf(err, errlen, "%s: no symbol rb_id2str", img->host_path);
		return ret;
	}
	rs->id2str = img->load_bias + fn;
	if (elf_symbol_value(img->host_path, "ruby_global_symbols", &addr, NULL) == 0 &&
	    verify_candidate(rs, img->load_bias + addr, why, sizeof(why)) == 0)
		return 0;
	ret = target_read(pid, rs->id2str, code, sizeof(code));
	if (ret) {
		snprintf(err, errlen, "cannot read rb_id2str's code at 0x%" PRIx64 ": %s",
			 rs->id2str, strerror(-ret));
		return ret;
	}
	n = rip_scan(code, sizeof(code), fn, refs, MAX_REFS);
	if (!try_refs(rs, img, refs, n, why, sizeof(why), &tried))
		return 0;

	/* rb_id2str usually tail-calls the hidden lookup (get_id_serial_entry). */
	for (i = 0; i < n && followed < MAX_FOLLOW; i++) {
		if (!rip_ref_is_branch(&refs[i]) ||
		    (refs[i].target >= fn && refs[i].target < fn + sizeof(code)))
			continue;
		followed++;
		if (target_read(pid, img->load_bias + refs[i].target, code, sizeof(code)))
			continue;
		m = rip_scan(code, sizeof(code), refs[i].target, sub, MAX_REFS);
		if (!try_refs(rs, img, sub, m, why, sizeof(why), &tried))
			return 0;
	}
	snprintf(err, errlen,
		 "ruby_global_symbols not found from rb_id2str (%d candidates in it and %d "
		 "branch targets; last: %s)",
		 tried, followed, why);
	memset(rs, 0, sizeof(*rs));
	return -ENOENT;
}

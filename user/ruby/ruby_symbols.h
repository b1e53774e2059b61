/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Names of Ruby IDs (method names, ivar names...), read from the target's
 * symbol table.  In 3.1-3.4 the table is the hidden `ruby_global_symbols`
 * (symbol.c), an rb_symbols_t:
 *	+0  rb_id_serial_t last_id  (uint32_t)
 *	+8  st_table *str_sym
 *	+16 VALUE ids               (Array of Arrays of ID_ENTRY_UNIT * ID_ENTRY_SIZE)
 *	+24 VALUE dsymbol_fstr_hash
 * It is not exported: its address is in .symtab when the library has one,
 * else taken from the RIP-relative operands of the code behind rb_id2str.
 */
#ifndef RBM_RUBY_SYMBOLS_H
#define RBM_RUBY_SYMBOLS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "procmaps.h"
#include "ruby_versions.h"

/*
 * Constants of every series (id.h, symbol.c); the ones that move (the last
 * operator, the first dynamic serial, idInitialize) are in struct ruby_layout.
 */
#define RUBY_ID_SCOPE_SHIFT 4
#define RUBY_ID_ENTRY_UNIT 512	    /* serials per second-level array */
#define RUBY_ID_ENTRY_SIZE 2	    /* {String, Symbol} per serial */
#define RUBY_SYMBOLS_IDS_OFFSET 16  /* offsetof(rb_symbols_t, ids) */

struct ruby_symbols {
	pid_t pid;
	const struct ruby_layout *layout;
	uint64_t global_symbols; /* address of ruby_global_symbols in the target */
	uint64_t last_id;	 /* highest serial in use, refreshed on demand */
	uint64_t ids;		 /* the ids Array (pinned: registered mark object) */
	uint64_t id2str;	 /* address of rb_id2str in the target */
};

/*
 * Finds ruby_global_symbols in the target (img from procmaps_find_ruby) and
 * checks it by reading two known names.  0 or -errno, reason in err.
 */
int ruby_symbols_init(struct ruby_symbols *rs, pid_t pid, const struct ruby_image *img,
		      const struct ruby_layout *off, char *err, size_t errlen);

/*
 * The name of ID id, NUL-terminated in buf (truncated to n - 1 bytes).  0, or
 * -ENOENT for an ID with no name (internal IDs, unregistered operators), or
 * another -errno.  Re-reads last_id when id is newer than the cached one.
 */
int ruby_id_name(struct ruby_symbols *rs, uint64_t id, char *buf, size_t n);

/* ---- Pure parts, exposed for the unit tests ---- */

/* One RIP-relative memory operand or rel32 branch found in machine code. */
struct rip_ref {
	uint64_t insn;	 /* address of the instruction's first byte (prefix included) */
	uint64_t target; /* next-instruction address + disp32 */
	uint8_t opcode;	 /* last opcode byte: 0x8b, 0x3b, 0x39, ...; 0xe8 call, 0xe9 jmp */
	uint8_t rex;	 /* REX prefix byte, 0 if none */
	uint8_t reg;	 /* ModRM reg field (with REX.R); 0 for branches */
	uint8_t len;	 /* instruction length */
};

static inline bool rip_ref_is_branch(const struct rip_ref *r)
{
	return r->opcode == 0xe8 || r->opcode == 0xe9;
}

static inline bool rip_ref_is_wide(const struct rip_ref *r)
{
	return r->rex & 0x08; /* REX.W: a 64-bit operand */
}

/*
 * Scans len bytes of x86-64 code, loaded at address base, for instructions
 * with a RIP-relative memory operand (ModRM mod=00 rm=101, optional REX) and
 * for rel32 call/jmp.  This is a pattern scan, not a decoder: a match inside
 * another instruction's bytes is possible, so callers must verify what they
 * pick.  Writes up to max refs; returns how many were found.
 */
size_t rip_scan(const uint8_t *code, size_t len, uint64_t base, struct rip_ref *out, size_t max);

/*
 * Addresses that fit rb_symbols_t: a read or compare of `last_id` at A and a
 * 64-bit load of `ids` at A + 16 in the same code.  32-bit accesses to A come
 * first (last_id is a uint32_t in 3.1).  Returns the number written to out.
 */
size_t ruby_symbols_candidates(const struct rip_ref *refs, size_t n, uint64_t *out, size_t max);

/* Where an ID's name lives: ids[array_index][element_index]. */
struct ruby_id_slot {
	uint64_t serial;
	uint64_t array_index;	/* serial / ID_ENTRY_UNIT */
	uint64_t element_index; /* (serial % ID_ENTRY_UNIT) * ID_ENTRY_SIZE: the String */
};

/* 0, or -EINVAL for ID 0 (no name).  IDs up to last_op_id (tLAST_OP_ID) are operators. */
int ruby_id_slot(uint64_t id, uint64_t last_op_id, struct ruby_id_slot *slot);

/* The character of a one-character operator ID ('+', '<': printable, not alnum or '_'), or 0. */
char ruby_op_id_char(uint64_t id);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "x86_chain.h"

#define MAX_INSNS 64

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, NREGS = 16 };

struct reg {
	bool known;
	int64_t add; /* lea disp(%r): the chain's value plus this, not yet loaded */
	struct x86_chain chain;
};

/* One decoded memory or register operand (ModRM, optional SIB and displacement). */
struct operand {
	unsigned int mod, reg, rm; /* reg and rm with their REX bits */
	bool rip;		   /* disp(%rip) */
	bool has_index;		   /* a SIB index: not a plain disp(%reg) */
	unsigned int base, index, scale;
	int64_t disp;
};

struct run {
	const uint8_t *code;
	size_t len, at;
	size_t insn; /* where the instruction being decoded starts */
	uint64_t vaddr;
	struct reg regs[NREGS];
	char *why;
	size_t whylen;
};

static int refuse(struct run *r, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->why, r->whylen, "+%zu: ", r->insn);

	va_start(ap, fmt);
	if (n >= 0 && (size_t) n < r->whylen)
		vsnprintf(r->why + n, r->whylen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool have(const struct run *r, size_t n)
{
	return r->at + n <= r->len;
}

static int64_t read_le(const struct run *r, size_t at, unsigned int bytes, bool sign)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < bytes; i++)
		v |= (uint64_t) r->code[at + i] << (8 * i);
	if (sign && bytes < 8 && (v >> (8 * bytes - 1)) & 1)
		v |= ~0ULL << (8 * bytes);
	return (int64_t) v;
}

/* Decodes a ModRM operand at r->at (advancing past it). */
static int modrm(struct run *r, unsigned int rex, struct operand *op)
{
	uint8_t m;

	if (!have(r, 1))
		return refuse(r, "truncated ModRM");
	m = r->code[r->at++];
	memset(op, 0, sizeof(*op));
	op->mod = m >> 6;
	op->reg = ((m >> 3) & 7) | ((rex & 4) ? 8 : 0);
	op->rm = (m & 7) | ((rex & 1) ? 8 : 0);
	if (op->mod == 3)
		return 0;
	if ((m & 7) == 4) { /* SIB */
		uint8_t sib;

		if (!have(r, 1))
			return refuse(r, "truncated SIB");
		sib = r->code[r->at++];
		op->scale = 1u << (sib >> 6);
		op->index = ((sib >> 3) & 7) | ((rex & 2) ? 8 : 0);
		op->base = (sib & 7) | ((rex & 1) ? 8 : 0);
		op->has_index = op->index != RSP;
		if ((sib & 7) == 5 && op->mod == 0)
			return refuse(r, "absolute SIB address");
	} else if ((m & 7) == 5 && op->mod == 0) {
		op->rip = true;
	} else {
		op->base = op->rm;
	}
	if (op->mod == 1 || op->rip || op->mod == 2) {
		unsigned int n = op->mod == 1 ? 1 : 4;

		if (!have(r, n))
			return refuse(r, "truncated displacement");
		op->disp = read_le(r, r->at, n, true);
		r->at += n;
	}
	return 0;
}

static void forget(struct run *r, unsigned int reg)
{
	r->regs[reg].known = false;
}

/* reg := a load of width bytes at the operand (a memory operand). */
static int load(struct run *r, const struct operand *op, unsigned int dst, unsigned int width,
		bool is_signed)
{
	int64_t disp = op->disp;
	struct x86_chain c;

	if (op->mod == 3) { /* a register move */
		if (width < 4)
			return refuse(r, "a partial register move");
		r->regs[dst] = r->regs[op->rm];
		return 0;
	}
	if (op->has_index) {
		forget(r, dst);
		return 0;
	}
	if (op->rip) {
		memset(&c, 0, sizeof(c));
		c.base = X86_BASE_ADDRESS;
		c.base_addr = r->vaddr + r->at + (uint64_t) op->disp;
		disp = 0; /* the load is of the address itself */
	} else if (r->regs[op->base].known) {
		c = r->regs[op->base].chain;
		disp += r->regs[op->base].add;
		if (c.shift_right || c.and_mask || c.to_fixnum || c.nloads == X86_CHAIN_MAX_LOADS) {
			forget(r, dst);
			return 0;
		}
	} else {
		forget(r, dst);
		return 0;
	}
	c.loads[c.nloads++] =
	    (struct x86_load){.disp = disp, .width = (uint8_t) width, .is_signed = is_signed};
	r->regs[dst].known = true;
	r->regs[dst].add = 0;
	r->regs[dst].chain = c;
	return 0;
}

static int lea(struct run *r, const struct operand *op, unsigned int dst)
{
	struct reg *d = &r->regs[dst];

	if (op->mod == 3)
		return refuse(r, "lea of a register");
	if (op->rip) {
		memset(&d->chain, 0, sizeof(d->chain));
		d->known = true;
		d->add = 0;
		d->chain.base = X86_BASE_ADDRESS;
		d->chain.base_addr = r->vaddr + r->at + (uint64_t) op->disp;
		return 0;
	}
	/* lea 1(%x,%x,1), %d: 2x + 1, Ruby's INT2FIX */
	if (op->has_index && op->base == op->index && op->scale == 1 && op->disp == 1 &&
	    r->regs[op->base].known && !r->regs[op->base].add) {
		*d = r->regs[op->base];
		d->chain.to_fixnum = true;
		return 0;
	}
	/* lea disp(%b), %d: an address inside what %b points at, loaded from later */
	if (!op->has_index && r->regs[op->base].known) {
		*d = r->regs[op->base];
		d->add += op->disp;
		return 0;
	}
	forget(r, dst);
	return 0;
}

static int call(struct run *r, int64_t rel)
{
	static const unsigned int clobbered[] = {RAX, RCX, RDX, RSI, RDI, 8, 9, 10, 11};
	struct x86_chain c = {.base = X86_BASE_CALL};
	const struct reg *rdi = &r->regs[RDI];
	size_t i;

	c.call_target = r->vaddr + r->at + (uint64_t) rel;
	if (rdi->known && rdi->chain.base == X86_BASE_ADDRESS && !rdi->chain.nloads) {
		c.call_arg0 = rdi->chain.base_addr;
		c.call_arg0_known = true;
	}
	for (i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++)
		forget(r, clobbered[i]);
	r->regs[RAX].known = true;
	r->regs[RAX].add = 0;
	r->regs[RAX].chain = c;
	return 0;
}

/* An ALU op with an immediate: `and` on the value the function returns, or bookkeeping. */
static int alu_imm(struct run *r, const struct operand *op, unsigned int ext, uint64_t imm)
{
	struct reg *d;

	if (ext == 7)
		return 0; /* cmp */
	if (op->mod != 3)
		return refuse(r, "arithmetic on memory");
	if (op->rm == RSP && (ext == 0 || ext == 5))
		return 0; /* add/sub $n, %rsp: the frame */
	d = &r->regs[op->rm];
	if (ext == 4 && d->known && !d->add && !d->chain.and_mask && !d->chain.to_fixnum) {
		d->chain.and_mask = imm;
		return 0;
	}
	forget(r, op->rm);
	return 0;
}

static int shift(struct run *r, const struct operand *op, unsigned int ext, unsigned int count)
{
	struct reg *d;

	if (op->mod != 3 || ext != 5)
		return refuse(r, "a shift other than shr of a register");
	d = &r->regs[op->rm];
	if (d->known && !d->add && !d->chain.shift_right && !d->chain.and_mask &&
	    !d->chain.to_fixnum)
		d->chain.shift_right = count;
	else
		forget(r, op->rm);
	return 0;
}

static int skip_imm(struct run *r, unsigned int n)
{
	if (!have(r, n))
		return refuse(r, "truncated immediate");
	r->at += n;
	return 0;
}

/* A conditional jump or nop of `n` more bytes: fall through. */
static int step_0f(struct run *r, unsigned int rex)
{
	struct operand op;
	uint8_t b;

	if (!have(r, 1))
		return refuse(r, "truncated 0f");
	b = r->code[r->at++];
	if (b >= 0x80 && b <= 0x8f)
		return skip_imm(r, 4); /* jcc rel32: the straight path goes on */
	if (b == 0x1f)		       /* nopl */
		return modrm(r, rex, &op);
	if (b == 0xb6 || b == 0xb7 || b == 0xbe || b == 0xbf) {
		if (modrm(r, rex, &op))
			return -EINVAL;
		return load(r, &op, op.reg, (b & 1) ? 2 : 1, b >= 0xbe);
	}
	return refuse(r, "opcode 0f %02x", b);
}

/* Decodes and runs one instruction; 1 at `ret`. */
/* Over ~60 lines: prefixes, then one switch over the opcodes it knows, each case a few lines. */
static int step(struct run *r)
{
	unsigned int rex = 0, i;
	bool opsize16 = false;
	struct operand op;
	uint8_t b;

	r->insn = r->at;
	for (i = 0; i < 8 && have(r, 1); i++) {
		b = r->code[r->at];
		if (b == 0x66) {
			opsize16 = true;
		} else if (b == 0xf3 && have(r, 4) &&
			   !memcmp(r->code + r->at, "\xf3\x0f\x1e\xfa", 4)) {
			r->at += 4; /* endbr64 */
			return 0;
		} else if (b == 0xf2 || b == 0x2e || b == 0x3e) {
			/* bnd, branch hints */
		} else {
			break;
		}
		r->at++;
	}
	if (have(r, 1) && (r->code[r->at] & 0xf0) == 0x40)
		rex = r->code[r->at++];
	if (!have(r, 1))
		return refuse(r, "ran off the end of the code");
	b = r->code[r->at++];
	switch (b) {
	case 0xc3:
		return 1;
	case 0x90:
		return 0;
	case 0x0f:
		return step_0f(r, rex);
	case 0x8b: /* mov r/m, r */
		if (modrm(r, rex, &op))
			return -EINVAL;
		if (opsize16)
			return refuse(r, "16-bit mov");
		return load(r, &op, op.reg, (rex & 8) ? 8 : 4, false);
	case 0x89: /* mov r, r/m */
		if (modrm(r, rex, &op))
			return -EINVAL;
		if (op.mod != 3) /* a store: the accessors only spill what they keep */
			return 0;
		r->regs[op.rm] = r->regs[op.reg];
		return 0;
	case 0x63: /* movsxd */
		if (modrm(r, rex, &op))
			return -EINVAL;
		return load(r, &op, op.reg, 4, true);
	case 0x8d:
		if (modrm(r, rex, &op))
			return -EINVAL;
		return lea(r, &op, op.reg);
	case 0x84: /* test */
	case 0x85:
	case 0x38: /* cmp */
	case 0x39:
	case 0x3a:
	case 0x3b:
		return modrm(r, rex, &op);
	case 0x31: /* xor r, r/m */
	case 0x33:
		if (modrm(r, rex, &op))
			return -EINVAL;
		forget(r, b == 0x31 && op.mod == 3 ? op.rm : op.reg);
		return 0;
	case 0xa8:
		return skip_imm(r, 1);
	case 0xa9:
		return skip_imm(r, opsize16 ? 2 : 4);
	case 0x3c:
		return skip_imm(r, 1);
	case 0x3d:
		return skip_imm(r, 4);
	case 0x25: /* and $imm32, %eax */
		if (!have(r, 4))
			return refuse(r, "truncated immediate");
		op = (struct operand){.mod = 3, .rm = RAX};
		r->at += 4;
		return alu_imm(r, &op, 4, (uint64_t) read_le(r, r->at - 4, 4, true));
	case 0x80:
	case 0x81:
	case 0x83: {
		unsigned int n = b == 0x81 ? 4 : 1;

		if (modrm(r, rex, &op) || !have(r, n))
			return refuse(r, "truncated ALU immediate");
		r->at += n;
		return alu_imm(r, &op, op.reg & 7, (uint64_t) read_le(r, r->at - n, n, true));
	}
	case 0xc0:
	case 0xc1:
		if (modrm(r, rex, &op) || !have(r, 1))
			return refuse(r, "truncated shift");
		r->at++;
		return shift(r, &op, op.reg & 7, r->code[r->at - 1]);
	case 0xd0:
	case 0xd1:
		if (modrm(r, rex, &op))
			return -EINVAL;
		return shift(r, &op, op.reg & 7, 1);
	case 0xf6:
	case 0xf7:
		if (modrm(r, rex, &op))
			return -EINVAL;
		if ((op.reg & 7) != 0)
			return refuse(r, "opcode %02x /%u", b, op.reg & 7);
		return skip_imm(r, b == 0xf6 ? 1 : 4);
	case 0xe8:
		if (!have(r, 4))
			return refuse(r, "truncated call");
		r->at += 4;
		return call(r, read_le(r, r->at - 4, 4, true));
	default:
		if (b >= 0x70 && b <= 0x7f)
			return skip_imm(r, 1); /* jcc rel8 */
		if (b >= 0x50 && b <= 0x57)
			return 0; /* push */
		if (b >= 0x58 && b <= 0x5f) {
			forget(r, (b - 0x58) | ((rex & 1) ? 8 : 0));
			return 0;
		}
		return refuse(r, "opcode %02x", b);
	}
}

int x86_return_chain(const uint8_t *code, size_t len, uint64_t vaddr, struct x86_chain *out,
		     char *why, size_t whylen)
{
	struct run r = {.code = code, .len = len, .vaddr = vaddr, .why = why, .whylen = whylen};
	int i, ret;

	r.regs[RDI].known = true;
	r.regs[RDI].chain.base = X86_BASE_ARG0;
	for (i = 0; i < MAX_INSNS; i++) {
		ret = step(&r);
		if (ret < 0)
			return ret;
		if (ret == 0)
			continue;
		if (!r.regs[RAX].known)
			return refuse(&r, "returns no chain of loads");
		if (r.regs[RAX].add)
			return refuse(&r, "returns an address inside an object, not a load");
		*out = r.regs[RAX].chain;
		return 0;
	}
	return refuse(&r, "no ret within %d instructions", MAX_INSNS);
}

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a small x86-64 function returns, as a chain of memory loads: the
 * accessors Ruby exports (rb_gc_count, rb_iseq_label, rb_thread_main...)
 * are a few `mov disp(%reg), %reg` from an argument or a global, and their
 * displacements are the struct offsets of the build that compiled them.
 * Generic: knows nothing of Ruby (ruby/layout_decode.c does).
 *
 * A symbolic run of the straight-line path: conditional branches fall
 * through (the accessors only test for NULL), a call makes its result the
 * chain's base, `ret` ends it.  Any instruction outside the small set the
 * accessors use (movs, lea, movzx/movsx, test/cmp, shr/and on the result,
 * stack adjustments, endbr64, nops) refuses the whole function: a pattern
 * that changed is not guessed at.
 */
#ifndef RBM_X86_CHAIN_H
#define RBM_X86_CHAIN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define X86_CHAIN_MAX_LOADS 8

enum x86_base {
	X86_BASE_ARG0,	  /* the first argument (%rdi) */
	X86_BASE_ADDRESS, /* a rip-relative address (lea): base_addr */
	X86_BASE_CALL,	  /* what a call returned: call_target, call_arg0 */
};

struct x86_load {
	int64_t disp;
	uint8_t width; /* bytes: 1, 2, 4 or 8 */
	bool is_signed;
};

struct x86_chain {
	enum x86_base base;
	uint64_t base_addr;   /* X86_BASE_ADDRESS: the address (of the code's vaddrs) */
	uint64_t call_target; /* X86_BASE_CALL: the callee's vaddr */
	uint64_t call_arg0;   /* X86_BASE_CALL: %rdi at the call when it was a lea: an address */
	bool call_arg0_known;
	unsigned int nloads;
	struct x86_load loads[X86_CHAIN_MAX_LOADS];
	/* What is done with the last load's value before it is returned */
	unsigned int shift_right; /* shr */
	uint64_t and_mask;	  /* and; 0: none */
	bool to_fixnum;		  /* lea 1(%r,%r,1): INT2FIX */
};

/*
 * The chain %rax holds at the function's first `ret`, from code (len bytes,
 * vaddr its address).  0, or -EINVAL with why (an instruction it does not
 * know, a result that is no chain).
 */
int x86_return_chain(const uint8_t *code, size_t len, uint64_t vaddr, struct x86_chain *out,
		     char *why, size_t whylen);

#endif

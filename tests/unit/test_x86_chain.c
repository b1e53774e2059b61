// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/x86_chain.c: what a small x86-64 function returns, as a chain of memory loads. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "x86_chain.h"

/*
 * On the instruction shapes Ruby's accessors have (copied as bytes from the
 * test Rubies' disassembly), and on shapes it must refuse.  The decoders on
 * the real functions: test_layout_decode.c.
 */

#define VADDR 0x100000ULL

static int run(const char *bytes, size_t len, struct x86_chain *c, char *why)
{
	return x86_return_chain((const uint8_t *) bytes, len, VADDR, c, why, 160);
}

#define RUN(b, c, why) run(b, sizeof(b) - 1, c, why)

static void expect_load(const struct x86_chain *c, unsigned int i, int64_t disp, unsigned int w,
			bool sign)
{
	cr_assert_lt(i, c->nloads, "load %u of %u", i, c->nloads);
	cr_expect_eq(c->loads[i].disp, disp, "load %u: disp %ld", i, (long) c->loads[i].disp);
	cr_expect_eq(c->loads[i].width, w, "load %u: width %u", i, c->loads[i].width);
	cr_expect_eq(c->loads[i].is_signed, sign, "load %u: sign", i);
}

/* 3.3's rb_gc_count: endbr64; lea VM(%rip),%rax; mov (%rax),%rax; mov 0x518(%rax),%rax; ... */
Test(x86_chain, lea_global_then_loads)
{
	static const char code[] = "\xf3\x0f\x1e\xfa"		  /* endbr64 */
				   "\x48\x8d\x05\x4d\x2b\x37\x00" /* lea 0x372b4d(%rip),%rax */
				   "\x48\x8b\x00"		  /* mov (%rax),%rax */
				   "\x48\x8b\x80\x18\x05\x00\x00" /* mov 0x518(%rax),%rax */
				   "\x48\x8b\x80\x70\x05\x00\x00" /* mov 0x570(%rax),%rax */
				   "\xc3";
	struct x86_chain c;
	char why[160] = "";

	cr_assert_eq(RUN(code, &c, why), 0, "%s", why);
	cr_expect_eq(c.base, X86_BASE_ADDRESS);
	cr_expect_eq(c.base_addr, VADDR + 4 + 7 + 0x372b4d, "rip is the next instruction's");
	cr_assert_eq(c.nloads, 3);
	expect_load(&c, 0, 0, 8, false);
	expect_load(&c, 1, 0x518, 8, false);
	expect_load(&c, 2, 0x570, 8, false);
	cr_expect(!c.shift_right && !c.and_mask && !c.to_fixnum);
}

/* 3.1's: the variable's address comes from the GOT (mov, not lea): one more load at 0. */
Test(x86_chain, got_load_is_a_load_of_the_address)
{
	static const char code[] = "\x48\x8b\x05\x81\xf7\x2d\x00" /* mov 0x2df781(%rip),%rax */
				   "\x48\x8b\x00"		  /* mov (%rax),%rax */
				   "\x48\x8b\x80\x50\x04\x00\x00" /* mov 0x450(%rax),%rax */
				   "\x48\x8b\x80\xb8\x01\x00\x00" /* mov 0x1b8(%rax),%rax */
				   "\xc3";
	struct x86_chain c;
	char why[160] = "";

	cr_assert_eq(RUN(code, &c, why), 0, "%s", why);
	cr_expect_eq(c.base, X86_BASE_ADDRESS);
	cr_expect_eq(c.base_addr, VADDR + 7 + 0x2df781);
	cr_assert_eq(c.nloads, 4);
	expect_load(&c, 0, 0, 8, false);
	expect_load(&c, 1, 0, 8, false);
	expect_load(&c, 2, 0x450, 8, false);
	expect_load(&c, 3, 0x1b8, 8, false);
}

/* rb_during_gc: a NULL test falls through; movzbl, shr, and give the bit. */
Test(x86_chain, byte_shift_and_mask)
{
	static const char code[] = "\xf3\x0f\x1e\xfa"
				   "\x48\x8d\x05\x85\xc3\x3d\x00" /* lea ...(%rip),%rax */
				   "\x48\x8b\x00"		  /* mov (%rax),%rax */
				   "\x48\x85\xc0"		  /* test %rax,%rax */
				   "\x74\x13"			  /* je +0x13 */
				   "\x48\x8b\x80\x10\x05\x00\x00" /* mov 0x510(%rax),%rax */
				   "\x0f\xb6\x40\x14"		  /* movzbl 0x14(%rax),%eax */
				   "\xc0\xe8\x05"		  /* shr $0x5,%al */
				   "\x83\xe0\x01"		  /* and $0x1,%eax */
				   "\xc3";
	struct x86_chain c;
	char why[160] = "";

	cr_assert_eq(RUN(code, &c, why), 0, "%s", why);
	cr_assert_eq(c.nloads, 3);
	expect_load(&c, 1, 0x510, 8, false);
	expect_load(&c, 2, 0x14, 1, false);
	cr_expect_eq(c.shift_right, 5);
	cr_expect_eq(c.and_mask, 1);
}

/* rb_iseq_first_lineno of 3.3+: an int made a Fixnum. */
Test(x86_chain, signed_int_to_fixnum)
{
	static const char code[] = "\xf3\x0f\x1e\xfa"
				   "\x48\x8b\x47\x10"	  /* mov 0x10(%rdi),%rax */
				   "\x48\x63\x40\x58"	  /* movslq 0x58(%rax),%rax */
				   "\x48\x8d\x44\x00\x01" /* lea 0x1(%rax,%rax,1),%rax */
				   "\xc3";
	struct x86_chain c;
	char why[160] = "";

	cr_assert_eq(RUN(code, &c, why), 0, "%s", why);
	cr_expect_eq(c.base, X86_BASE_ARG0);
	cr_assert_eq(c.nloads, 2);
	expect_load(&c, 0, 0x10, 8, false);
	expect_load(&c, 1, 0x58, 4, true);
	cr_expect(c.to_fixnum);
}

/* 3.4's rb_gc_count: a call's result, then a load; the callee's address is kept. */
Test(x86_chain, call_result_is_the_base)
{
	static const char code[] = "\xf3\x0f\x1e\xfa"
				   "\x48\x83\xec\x08"		  /* sub $0x8,%rsp */
				   "\xe8\x73\x10\xf3\xff"	  /* call rel32 */
				   "\x48\x8b\x80\xf0\x03\x00\x00" /* mov 0x3f0(%rax),%rax */
				   "\x48\x83\xc4\x08"		  /* add $0x8,%rsp */
				   "\xc3";
	struct x86_chain c;
	char why[160] = "";

	cr_assert_eq(RUN(code, &c, why), 0, "%s", why);
	cr_expect_eq(c.base, X86_BASE_CALL);
	cr_expect_eq(c.call_target, VADDR + 13 + (int32_t) 0xfff31073);
	cr_expect(!c.call_arg0_known);
	cr_assert_eq(c.nloads, 1);
	expect_load(&c, 0, 0x3f0, 8, false);
}

/* rb_thread_current: __tls_get_addr(&index) with data16 prefixes; its argument is kept. */
Test(x86_chain, tls_call_keeps_its_argument)
{
	static const char code[] =
	    "\xf3\x0f\x1e\xfa"
	    "\x48\x83\xec\x08"
	    "\x66\x48\x8d\x3d\x10\x50\x22\x00" /* data16 lea ...(%rip),%rdi */
	    "\x66\x66\x48\xe8\x00\x00\x00\x00" /* data16 data16 rex.W call */
	    "\x48\x8b\x00"		       /* mov (%rax),%rax */
	    "\x48\x8b\x40\x30"		       /* mov 0x30(%rax),%rax */
	    "\x48\x8b\x40\x10"		       /* mov 0x10(%rax),%rax */
	    "\x48\x83\xc4\x08"
	    "\xc3";
	struct x86_chain c;
	char why[160] = "";

	cr_assert_eq(RUN(code, &c, why), 0, "%s", why);
	cr_expect_eq(c.base, X86_BASE_CALL);
	cr_assert(c.call_arg0_known);
	cr_expect_eq(c.call_arg0, VADDR + 8 + 8 + 0x225010);
	cr_assert_eq(c.nloads, 3);
	expect_load(&c, 1, 0x30, 8, false);
	expect_load(&c, 2, 0x10, 8, false);
}

/* 3.4's rb_iseq_path: lea into an object, then a load through it (disp adds up). */
Test(x86_chain, lea_inside_an_object_then_load)
{
	static const char code[] = "\x48\x8b\x47\x10" /* mov 0x10(%rdi),%rax */
				   "\x48\x8b\x40\x40" /* mov 0x40(%rax),%rax */
				   "\x48\x8d\x48\x10" /* lea 0x10(%rax),%rcx */
				   "\x48\x8b\x41\x08" /* mov 0x8(%rcx),%rax */
				   "\xc3";
	struct x86_chain c;
	char why[160] = "";

	cr_assert_eq(RUN(code, &c, why), 0, "%s", why);
	cr_assert_eq(c.nloads, 3);
	expect_load(&c, 2, 0x18, 8, false);
}

/* What it must refuse: each with why naming the place. */
Test(x86_chain, refuses_what_it_does_not_know)
{
	static const struct {
		const char *code;
		size_t len;
		const char *why;
	} cases[] = {
	    /* add %rax,%rax: arithmetic the accessors do not do */
	    {"\x48\x8b\x47\x10\x48\x01\xc0\xc3", 8, "opcode 01"},
	    /* a store through the chain's register is fine, an add to memory is not */
	    {"\x48\x8b\x47\x10\x48\x83\x00\x01\xc3", 9, "arithmetic on memory"},
	    /* jmp: a tail call or a loop, not a straight path */
	    {"\x48\x8b\x47\x10\xeb\xfe", 6, "opcode eb"},
	    /* no ret */
	    {"\x48\x8b\x47\x10\x48\x8b\x40\x08", 8, "end of the code"},
	    /* a truncated displacement */
	    {"\x48\x8b\x80\x18\x05", 5, "truncated"},
	    /* returns an address inside an object, not what is there */
	    {"\x48\x8d\x47\x10\xc3", 5, "address inside an object"},
	    /* returns something no load made */
	    {"\x31\xc0\xc3", 3, "no chain"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct x86_chain c;
		char why[160] = "";

		cr_expect_eq(run(cases[i].code, cases[i].len, &c, why), -EINVAL, "case %zu", i);
		cr_expect(strstr(why, cases[i].why), "case %zu: \"%s\" lacks \"%s\"", i, why,
			  cases[i].why);
	}
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/probe/attach.c: which first instructions of a function a uprobe emulates. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include "attach.h"

Test(attach, push_is_emulated_others_stepped)
{
	static const unsigned char push_rbp[] = {0x55}, push_r13[] = {0x41, 0x55},
				   push_rbx[] = {0x53, 0x48}, mov[] = {0x48, 0x89, 0xf8},
				   sub[] = {0x48, 0x83, 0xec}, endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa},
				   rex_b_mov[] = {0x41, 0x89};

	cr_expect(uprobe_insn_emulated(push_rbp, sizeof(push_rbp)));
	cr_expect(uprobe_insn_emulated(push_r13, sizeof(push_r13)));
	cr_expect(uprobe_insn_emulated(push_rbx, sizeof(push_rbx)));
	cr_expect_not(uprobe_insn_emulated(mov, sizeof(mov)));
	cr_expect_not(uprobe_insn_emulated(sub, sizeof(sub)));
	cr_expect_not(uprobe_insn_emulated(endbr64, sizeof(endbr64)));
	cr_expect_not(uprobe_insn_emulated(rex_b_mov, sizeof(rex_b_mov)));
	cr_expect_not(uprobe_insn_emulated(push_r13, 1)); /* a lone REX prefix */
}

/* Debian's -fcf-protection libruby: every entry point starts with endbr64, which the kernel steps.
 */
Test(attach, past_endbr64_only_onto_a_push)
{
	static const unsigned char push_rbp[] = {0x55, 0x48, 0x89, 0xf5, 0x53, 0x48},
				   endbr_push_rbp[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48},
				   endbr_push_r14[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x56},
				   endbr_testb[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xf6, 0x42, 0x40, 0x02},
				   endbr_lea_rip[] = {0xf3, 0x0f, 0x1e, 0xfa,
						      0x48, 0x8d, 0x05, 0x25},
				   endbr_sub[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08},
				   sub[] = {0x48, 0x83, 0xec, 0x08, 0x48, 0x8b},
				   endbr32_push[] = {0xf3, 0x0f, 0x1e, 0xfb, 0x55, 0x48};
	struct uprobe_entry e;

	e = uprobe_entry_classify(push_rbp, sizeof(push_rbp));
	cr_expect(e.emulated && e.skip == 0);
	e = uprobe_entry_classify(endbr_push_rbp, sizeof(endbr_push_rbp));
	cr_expect(e.emulated && e.skip == 4, "the probe goes on the push");
	e = uprobe_entry_classify(endbr_push_r14, sizeof(endbr_push_r14));
	cr_expect(e.emulated && e.skip == 4, "the probe goes on the push");
	/* Stepped either way: the probe stays on the entry. */
	e = uprobe_entry_classify(endbr_testb, sizeof(endbr_testb));
	cr_expect(!e.emulated && e.skip == 0);
	e = uprobe_entry_classify(endbr_lea_rip, sizeof(endbr_lea_rip));
	cr_expect(!e.emulated && e.skip == 0);
	e = uprobe_entry_classify(endbr_sub, sizeof(endbr_sub));
	cr_expect(!e.emulated && e.skip == 0);
	e = uprobe_entry_classify(sub, sizeof(sub));
	cr_expect(!e.emulated && e.skip == 0);
	e = uprobe_entry_classify(endbr32_push, sizeof(endbr32_push));
	cr_expect(!e.emulated && e.skip == 0, "endbr32 is not endbr64");
	/* What follows endbr64 unread, or a lone REX prefix. */
	e = uprobe_entry_classify(endbr_push_rbp, 4);
	cr_expect(!e.emulated && e.skip == 0);
	e = uprobe_entry_classify(endbr_push_r14, 5);
	cr_expect(!e.emulated && e.skip == 0);
}

/* 3.3's hidden rb_class_allocate_instance (every Foo.new): endbr64; mov; mov; jmp. */
Test(attach, past_constant_arguments_onto_a_tail_call)
{
	static const unsigned char thunk[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xba, 0x01, 0x00,
					      0x00, 0x00, 0xbe, 0x01, 0x20, 0x00, 0x00,
					      0xe9, 0x1d, 0xfe, 0xff, 0xff},
				   r8d_then_jmp8[] = {0x41, 0xb8, 0x02, 0x00,
						      0x00, 0x00, 0xeb, 0x10},
				   movs_then_lea[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xba, 0x01,
						      0x00, 0x00, 0x00, 0x48, 0x8d, 0x05,
						      0x25, 0x00, 0x00, 0x00},
				   endbr_jmp[] = {0xf3, 0x0f, 0x1e, 0xfa, 0xe9,
						  0x00, 0x01, 0x00, 0x00},
				   five_movs[] = {0xb8, 1, 0, 0, 0, 0xb9, 1, 0, 0, 0,
						  0xba, 1, 0, 0, 0, 0xbb, 1, 0, 0, 0,
						  0xbe, 1, 0, 0, 0, 0xe9, 0, 0, 0, 0};
	struct uprobe_entry e;

	e = uprobe_entry_classify(thunk, sizeof(thunk));
	cr_expect(e.emulated && e.skip == 14, "the probe goes on the jmp, not %u bytes in", e.skip);
	e = uprobe_entry_classify(r8d_then_jmp8, sizeof(r8d_then_jmp8));
	cr_expect(e.emulated && e.skip == 6);
	e = uprobe_entry_classify(endbr_jmp, sizeof(endbr_jmp));
	cr_expect(e.emulated && e.skip == 4);
	/* Not onto something stepped anyway, nor past more moves than it looks at. */
	e = uprobe_entry_classify(movs_then_lea, sizeof(movs_then_lea));
	cr_expect(!e.emulated && e.skip == 0);
	e = uprobe_entry_classify(five_movs, sizeof(five_movs));
	cr_expect(!e.emulated && e.skip == 0);
	/* The jmp cut short: its displacement unread. */
	e = uprobe_entry_classify(thunk, 16);
	cr_expect(!e.emulated && e.skip == 0);
}

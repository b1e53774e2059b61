#include <criterion/criterion.h>
#include "mjit_offsets.h"
#include "ruby_versions.h"

Test(ruby_versions, lookup_by_series)
{
	cr_assert_not_null(ruby_offsets_for("3.1.7"));
	cr_assert_not_null(ruby_offsets_for("3.1.2"));
	cr_assert_not_null(ruby_offsets_for("3.1"));
	cr_assert_null(ruby_offsets_for("3.10.0"));
	cr_assert_null(ruby_offsets_for("3.2.0"));
	cr_assert_null(ruby_offsets_for("2.7.8"));
	cr_assert_null(ruby_offsets_for(""));
}

/* The table must agree with the offsets Ruby's own header gives. */
Test(ruby_versions, table_matches_ruby_header)
{
	const struct ruby_offsets *o = ruby_offsets_for(MJIT_RUBY_VERSION);

	cr_assert_not_null(o, "no table entry for the installed Ruby %s", MJIT_RUBY_VERSION);
	cr_expect_eq(o->rclass_ext, MJIT_RCLASS_EXT);
	cr_expect_eq(o->classext_iv_tbl, MJIT_CLASSEXT_IV_TBL);
	cr_expect_eq(o->classext_allocator, MJIT_CLASSEXT_ALLOCATOR);
	cr_expect_eq(o->fl_singleton, MJIT_FL_SINGLETON);
	cr_expect_eq(o->st_entries_start, MJIT_ST_ENTRIES_START);
	cr_expect_eq(o->st_entries_bound, MJIT_ST_ENTRIES_BOUND);
	cr_expect_eq(o->st_entries, MJIT_ST_ENTRIES);
	cr_expect_eq(o->rstring_noembed, MJIT_RSTRING_NOEMBED);
	cr_expect_eq(o->rstring_embed_len_mask, MJIT_RSTRING_EMBED_LEN_MASK);
	cr_expect_eq(o->rstring_embed_len_shift, MJIT_RSTRING_EMBED_LEN_SHIFT);
	cr_expect_eq(o->rstring_embed_start, MJIT_RSTRING_EMBED_START);
	cr_expect_eq(o->rstring_heap_len, MJIT_RSTRING_HEAP_LEN);
	cr_expect_eq(o->rstring_heap_ptr, MJIT_RSTRING_HEAP_PTR);
	cr_expect_eq(o->rarray_embed_flag, MJIT_RARRAY_EMBED_FLAG);
	cr_expect_eq(o->rarray_embed_len_mask, MJIT_RARRAY_EMBED_LEN_MASK);
	cr_expect_eq(o->rarray_embed_len_shift, MJIT_RARRAY_EMBED_LEN_SHIFT);
	cr_expect_eq(o->rarray_embed_start, MJIT_RARRAY_EMBED_START);
	cr_expect_eq(o->rarray_heap_len, MJIT_RARRAY_HEAP_LEN);
	cr_expect_eq(o->rarray_heap_ptr, MJIT_RARRAY_HEAP_PTR);
	cr_expect_eq(o->ec_vm_stack, MJIT_EC_VM_STACK);
	cr_expect_eq(o->ec_vm_stack_size, MJIT_EC_VM_STACK_SIZE);
	cr_expect_eq(o->ec_cfp, MJIT_EC_CFP);
	cr_expect_eq(o->cfp_size, MJIT_CFP_SIZE);
	cr_expect_eq(o->cfp_pc, MJIT_CFP_PC);
	cr_expect_eq(o->cfp_iseq, MJIT_CFP_ISEQ);
	cr_expect_eq(o->cfp_ep, MJIT_CFP_EP);
	cr_expect_eq(o->iseq_body, MJIT_ISEQ_BODY);
	cr_expect_eq(o->body_iseq_encoded, MJIT_BODY_ISEQ_ENCODED);
	cr_expect_eq(o->body_iseq_size, MJIT_BODY_ISEQ_SIZE);
	cr_expect_eq(o->body_location_pathobj, MJIT_BODY_PATHOBJ);
	cr_expect_eq(o->body_location_label, MJIT_BODY_LABEL);
	cr_expect_eq(o->body_first_lineno, MJIT_BODY_FIRST_LINENO);
	cr_expect_eq(o->body_insns_info_body, MJIT_BODY_INSNS_INFO_BODY);
	cr_expect_eq(o->body_insns_info_size, MJIT_BODY_INSNS_INFO_SIZE);
	cr_expect_eq(o->body_succ_index_table, MJIT_BODY_SUCC_INDEX_TABLE);
	cr_expect_eq(o->insn_info_size, MJIT_INSN_INFO_SIZE);
	cr_expect_eq(o->insn_info_line_no, MJIT_INSN_INFO_LINE_NO);
	cr_expect_eq(o->imemo_iseq, MJIT_IMEMO_ISEQ);
	cr_expect_eq(o->imemo_ment, MJIT_IMEMO_MENT);
	cr_expect_eq(o->cme_def, MJIT_CME_DEF);
	cr_expect_eq(o->cme_owner, MJIT_CME_OWNER);
	cr_expect_eq(o->def_original_id, MJIT_DEF_ORIGINAL_ID);
	cr_expect_eq(o->vm_objspace, MJIT_VM_OBJSPACE);
	cr_expect_eq(o->cfp_self, MJIT_CFP_SELF);
	cr_expect_eq(o->rclass_super, MJIT_RCLASS_SUPER);
	cr_expect_eq(o->classext_m_tbl, MJIT_CLASSEXT_M_TBL);
	cr_expect_eq(o->me_def, MJIT_ME_DEF);
	cr_expect_eq(o->me_owner, MJIT_ME_OWNER);
	cr_expect_eq(o->def_iseq, MJIT_DEF_ISEQ);
	cr_expect_eq(o->method_type_iseq, MJIT_METHOD_TYPE_ISEQ);
	cr_expect_eq(o->body_type, MJIT_BODY_TYPE);
	cr_expect_eq(o->body_local_iseq, MJIT_BODY_LOCAL_ISEQ);
	cr_expect_eq(o->iseq_type_method, MJIT_ISEQ_TYPE_METHOD);
	cr_expect_eq(o->iseq_type_block, MJIT_ISEQ_TYPE_BLOCK);
}

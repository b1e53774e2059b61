/*
 * Prints Ruby's own struct offsets, compiled against the MJIT header that
 * ruby-dev ships, so the unit tests can check user/ruby/ruby_versions.c against it.
 */
#include "rb_mjit_min_header.h"
#include <stdio.h>
#include <stddef.h>

extern const char ruby_version[]; /* libruby exports it; RUBY_VERSION is not in this header */

#define P(name, value) printf("#define %s %lluULL\n", name, (unsigned long long)(value))

int main(void)
{
	printf("#define MJIT_RUBY_VERSION \"%s\"\n", ruby_version);
	P("MJIT_RCLASS_EXT", offsetof(struct RClass, ptr));
	P("MJIT_CLASSEXT_IV_TBL", offsetof(rb_classext_t, iv_tbl));
	P("MJIT_CLASSEXT_ALLOCATOR", offsetof(rb_classext_t, allocator));
	P("MJIT_FL_SINGLETON", RUBY_FL_SINGLETON);
	P("MJIT_ST_ENTRIES_START", offsetof(struct st_table, entries_start));
	P("MJIT_ST_ENTRIES_BOUND", offsetof(struct st_table, entries_bound));
	P("MJIT_ST_ENTRIES", offsetof(struct st_table, entries));
	P("MJIT_RSTRING_NOEMBED", RSTRING_NOEMBED);
	P("MJIT_RSTRING_EMBED_LEN_MASK", RSTRING_EMBED_LEN_MASK);
	P("MJIT_RSTRING_EMBED_LEN_SHIFT", RSTRING_EMBED_LEN_SHIFT);
	P("MJIT_RSTRING_EMBED_START", offsetof(struct RString, as.embed.ary));
	P("MJIT_RSTRING_HEAP_LEN", offsetof(struct RString, as.heap.len));
	P("MJIT_RSTRING_HEAP_PTR", offsetof(struct RString, as.heap.ptr));
	P("MJIT_RARRAY_EMBED_FLAG", RARRAY_EMBED_FLAG);
	P("MJIT_RARRAY_EMBED_LEN_MASK", RARRAY_EMBED_LEN_MASK);
	P("MJIT_RARRAY_EMBED_LEN_SHIFT", RARRAY_EMBED_LEN_SHIFT);
	P("MJIT_RARRAY_EMBED_START", offsetof(struct RArray, as.ary));
	P("MJIT_RARRAY_HEAP_LEN", offsetof(struct RArray, as.heap.len));
	P("MJIT_RARRAY_HEAP_PTR", offsetof(struct RArray, as.heap.ptr));
	P("MJIT_EC_VM_STACK", offsetof(rb_execution_context_t, vm_stack));
	P("MJIT_EC_VM_STACK_SIZE", offsetof(rb_execution_context_t, vm_stack_size));
	P("MJIT_EC_CFP", offsetof(rb_execution_context_t, cfp));
	P("MJIT_CFP_SIZE", sizeof(rb_control_frame_t));
	P("MJIT_CFP_PC", offsetof(rb_control_frame_t, pc));
	P("MJIT_CFP_ISEQ", offsetof(rb_control_frame_t, iseq));
	P("MJIT_CFP_EP", offsetof(rb_control_frame_t, ep));
	P("MJIT_ISEQ_BODY", offsetof(rb_iseq_t, body));
	P("MJIT_BODY_ISEQ_ENCODED", offsetof(struct rb_iseq_constant_body, iseq_encoded));
	P("MJIT_BODY_ISEQ_SIZE", offsetof(struct rb_iseq_constant_body, iseq_size));
	P("MJIT_BODY_PATHOBJ", offsetof(struct rb_iseq_constant_body, location.pathobj));
	P("MJIT_BODY_LABEL", offsetof(struct rb_iseq_constant_body, location.label));
	P("MJIT_BODY_FIRST_LINENO", offsetof(struct rb_iseq_constant_body, location.first_lineno));
	P("MJIT_BODY_INSNS_INFO_BODY", offsetof(struct rb_iseq_constant_body, insns_info.body));
	P("MJIT_BODY_INSNS_INFO_SIZE", offsetof(struct rb_iseq_constant_body, insns_info.size));
	P("MJIT_BODY_SUCC_INDEX_TABLE",
	  offsetof(struct rb_iseq_constant_body, insns_info.succ_index_table));
	P("MJIT_INSN_INFO_SIZE", sizeof(struct iseq_insn_info_entry));
	P("MJIT_INSN_INFO_LINE_NO", offsetof(struct iseq_insn_info_entry, line_no));
	P("MJIT_IMEMO_ISEQ", imemo_iseq);
	P("MJIT_IMEMO_MENT", imemo_ment);
	P("MJIT_CME_DEF", offsetof(rb_callable_method_entry_t, def));
	P("MJIT_CME_OWNER", offsetof(rb_callable_method_entry_t, owner));
	P("MJIT_DEF_ORIGINAL_ID", offsetof(rb_method_definition_t, original_id));
	P("MJIT_VM_OBJSPACE", offsetof(rb_vm_t, objspace));
	P("MJIT_CFP_SELF", offsetof(rb_control_frame_t, self));
	P("MJIT_RCLASS_SUPER", offsetof(struct RClass, super));
	P("MJIT_CLASSEXT_M_TBL", offsetof(rb_classext_t, m_tbl));
	P("MJIT_DEF_ISEQ", offsetof(rb_method_definition_t, body.iseq.iseqptr));
	P("MJIT_ME_DEF", offsetof(rb_method_entry_t, def));
	P("MJIT_ME_OWNER", offsetof(rb_method_entry_t, owner));
	P("MJIT_BODY_TYPE", offsetof(struct rb_iseq_constant_body, type));
	P("MJIT_BODY_LOCAL_ISEQ", offsetof(struct rb_iseq_constant_body, local_iseq));
	P("MJIT_ISEQ_TYPE_METHOD", ISEQ_TYPE_METHOD);
	P("MJIT_ISEQ_TYPE_BLOCK", ISEQ_TYPE_BLOCK);
	P("MJIT_METHOD_TYPE_ISEQ", VM_METHOD_TYPE_ISEQ);
	P("MJIT_RACTOR_MAIN_THREAD", offsetof(rb_ractor_t, threads.main));
	P("MJIT_THREAD_SELF", offsetof(rb_thread_t, self));
	P("MJIT_THREAD_EC", offsetof(rb_thread_t, ec));
	P("MJIT_EC_THREAD_PTR", offsetof(rb_execution_context_t, thread_ptr));
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "elf_code.h"
#include "layout_decode.h"
#include "x86_chain.h"

#define CODE_MAX 96 /* the accessors are 10-60 bytes */

struct decoder {
	struct elf_code *ec;
	struct layout_decoded *out;
	struct decoder_result *res;
};

static int refuse(struct decoder *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->res->why, sizeof(d->res->why), fmt, ap);
	va_end(ap);
	d->res->status = -EINVAL;
	return -EINVAL;
}

/* Decodes a function's return chain; -ENOENT if the build has no such function. */
static int chain_of(struct decoder *d, const char *function, struct x86_chain *c)
{
	uint8_t code[CODE_MAX];
	size_t len = sizeof(code);
	uint64_t vaddr;

	d->res = &d->out->results[d->out->nresults++];
	d->res->function = function;
	if (elf_code_function(d->ec, function, code, &len, &vaddr)) {
		d->res->status = -ENOENT;
		snprintf(d->res->why, sizeof(d->res->why), "not in this build");
		return -ENOENT;
	}
	d->res->status = x86_return_chain(code, len, vaddr, c, d->res->why, sizeof(d->res->why));
	return d->res->status;
}

/* A field value, unless another decoder gave it another one. */
static void record(struct decoder *d, const char *field, uint64_t value)
{
	struct layout_decoded *o = d->out;
	size_t i;

	for (i = 0; i < o->nfields; i++) {
		if (strcmp(o->fields[i].field, field))
			continue;
		if (o->fields[i].value != value && !o->conflict[0])
			snprintf(o->conflict, sizeof(o->conflict), "%s: %s says %llu, %s says %llu",
				 field, o->fields[i].function,
				 (unsigned long long) o->fields[i].value, d->res->function,
				 (unsigned long long) value);
		return;
	}
	if (o->nfields < DECODE_MAX_FIELDS)
		o->fields[o->nfields++] = (struct decoded_field){field, value, d->res->function};
}

static bool is_word_load(const struct x86_load *l)
{
	return l->width == 8 && l->disp >= 0 && l->disp < (1 << 20);
}

/*
 * A chain from a global pointer variable: `lea VAR(%rip)` then its value
 * (load 0), or `mov GOT(%rip)` (the variable's address, load 0) then its
 * value.  Sets *var and returns the index of the first load past the
 * variable's value; -1 if the chain does not start so.
 */
static int global_pointer(struct decoder *d, const struct x86_chain *c, uint64_t *var)
{
	char name[128];
	uint64_t value;
	unsigned int at = 0;

	if (c->base != X86_BASE_ADDRESS || c->nloads < 1)
		return -1;
	*var = c->base_addr;
	if (elf_code_got_symbol(d->ec, c->base_addr, name, sizeof(name), &value) == 0) {
		/* the GOT slot: its first load gives the variable's address */
		if (!value || c->loads[0].disp != 0 || c->loads[0].width != 8)
			return -1;
		*var = value;
		at = 1;
	}
	if (at >= c->nloads || c->loads[at].disp != 0 || c->loads[at].width != 8)
		return -1;
	return (int) at + 1;
}

static bool plain(const struct x86_chain *c)
{
	return !c->shift_right && !c->and_mask && !c->to_fixnum;
}

/* 3.4: vm->gc.objspace, read by the function every GC accessor calls. */
static void decode_get_objspace(struct decoder *d)
{
	struct x86_chain c;
	uint64_t var;
	int at;

	if (chain_of(d, "rb_gc_get_objspace", &c))
		return;
	at = global_pointer(d, &c, &var);
	if (at < 0 || c.nloads != (unsigned int) at + 1 || !is_word_load(&c.loads[at]) ||
	    !plain(&c)) {
		refuse(d, "not vm->objspace from a global");
		return;
	}
	d->out->vm_ptr_var = var;
	record(d, "vm_objspace", (uint64_t) c.loads[at].disp);
}

static void decode_gc_count(struct decoder *d)
{
	struct x86_chain c;
	char callee[128];
	uint64_t var;
	int at;

	if (chain_of(d, "rb_gc_count", &c))
		return;
	if (c.base == X86_BASE_CALL) { /* 3.4: rb_gc_get_objspace()->profile.count */
		if (elf_code_plt_symbol(d->ec, c.call_target, callee, sizeof(callee)) ||
		    strcmp(callee, "rb_gc_get_objspace") || c.nloads != 1 ||
		    !is_word_load(&c.loads[0]) || !plain(&c)) {
			refuse(d, "calls something other than rb_gc_get_objspace");
			return;
		}
		record(d, "objspace_gc_count", (uint64_t) c.loads[0].disp);
		return;
	}
	at = global_pointer(d, &c, &var);
	if (at < 0 || c.nloads != (unsigned int) at + 2 || !is_word_load(&c.loads[at]) ||
	    !is_word_load(&c.loads[at + 1]) || !plain(&c)) {
		refuse(d, "not vm->objspace->profile.count from a global");
		return;
	}
	d->out->vm_ptr_var = var;
	record(d, "vm_objspace", (uint64_t) c.loads[at].disp);
	record(d, "objspace_gc_count", (uint64_t) c.loads[at + 1].disp);
}

/* (byte at objspace + B >> s) & 1: the during_gc bit is bit s of byte B. */
static void decode_during_gc(struct decoder *d)
{
	struct x86_chain c;
	uint64_t var;
	int at;

	if (chain_of(d, "rb_during_gc", &c))
		return;
	at = global_pointer(d, &c, &var);
	if (at < 0 || c.nloads != (unsigned int) at + 2 || !is_word_load(&c.loads[at]) ||
	    c.loads[at + 1].width != 1 || c.loads[at + 1].disp < 0 || c.and_mask != 1 ||
	    c.shift_right > 7 || c.to_fixnum) {
		refuse(d, "not (vm->objspace->flags >> bit) & 1 from a global");
		return;
	}
	d->out->vm_ptr_var = var;
	record(d, "vm_objspace", (uint64_t) c.loads[at].disp);
	record(d, "objspace_flags.during_gc_byte", (uint64_t) c.loads[at + 1].disp);
	record(d, "objspace_flags.during_gc_bit", c.shift_right);
}

static void decode_superclass(struct decoder *d)
{
	struct x86_chain c;

	if (chain_of(d, "rb_class_get_superclass", &c))
		return;
	if (c.base != X86_BASE_ARG0 || c.nloads != 1 || !is_word_load(&c.loads[0]) || !plain(&c)) {
		refuse(d, "not RCLASS(klass)->super");
		return;
	}
	record(d, "rclass_super", (uint64_t) c.loads[0].disp);
}

/* iseq->body->FIELD: the accessors of the iseq's location. */
static void decode_iseq_location(struct decoder *d, const char *function, const char *field,
				 bool prefix)
{
	struct x86_chain c;

	if (chain_of(d, function, &c))
		return;
	if (c.base != X86_BASE_ARG0 || c.nloads < 2 || (!prefix && c.nloads != 2) ||
	    !is_word_load(&c.loads[0]) || !is_word_load(&c.loads[1]) || (!prefix && !plain(&c))) {
		refuse(d, "not iseq->body->location");
		return;
	}
	record(d, "iseq_body", (uint64_t) c.loads[0].disp);
	record(d, field, (uint64_t) c.loads[1].disp);
}

/* 3.1 keeps first_lineno as a Fixnum VALUE; 3.2+ as an int made one by INT2FIX. */
static void decode_first_lineno(struct decoder *d)
{
	struct x86_chain c;
	const struct x86_load *l = &c.loads[1];

	if (chain_of(d, "rb_iseq_first_lineno", &c))
		return;
	if (c.base != X86_BASE_ARG0 || c.nloads != 2 || !is_word_load(&c.loads[0]) ||
	    c.shift_right || c.and_mask || l->disp < 0 ||
	    !((l->width == 8 && !c.to_fixnum) || (l->width == 4 && l->is_signed && c.to_fixnum))) {
		refuse(d, "not iseq->body->location.first_lineno (a VALUE, or INT2FIX of an int)");
		return;
	}
	record(d, "iseq_body", (uint64_t) c.loads[0].disp);
	record(d, "body_first_lineno", (uint64_t) l->disp);
	record(d, "body_first_lineno_size", l->width);
}

static void decode_thread_main(struct decoder *d)
{
	struct x86_chain c;
	uint64_t var;
	int at;

	if (chain_of(d, "rb_thread_main", &c))
		return;
	at = global_pointer(d, &c, &var);
	if (at < 0 || c.nloads != (unsigned int) at + 2 || !is_word_load(&c.loads[at]) ||
	    !is_word_load(&c.loads[at + 1]) || !plain(&c)) {
		refuse(d, "not main_ractor->threads.main->self from a global");
		return;
	}
	d->out->main_ractor_var = var;
	record(d, "ractor_main_thread", (uint64_t) c.loads[at].disp);
	record(d, "thread_self", (uint64_t) c.loads[at + 1].disp);
}

/* __tls_get_addr(&index) gives &ruby_current_ec; then ec->thread_ptr->self. */
static void decode_thread_current(struct decoder *d)
{
	struct x86_chain c;
	char callee[128];

	if (chain_of(d, "rb_thread_current", &c))
		return;
	if (c.base != X86_BASE_CALL || !c.call_arg0_known ||
	    elf_code_plt_symbol(d->ec, c.call_target, callee, sizeof(callee)) ||
	    strcmp(callee, "__tls_get_addr") || c.nloads != 3 || c.loads[0].disp != 0 ||
	    !is_word_load(&c.loads[0]) || !is_word_load(&c.loads[1]) ||
	    !is_word_load(&c.loads[2]) || !plain(&c)) {
		refuse(d, "not ruby_current_ec->thread_ptr->self through __tls_get_addr");
		return;
	}
	d->out->ec_tls_index = c.call_arg0;
	record(d, "ec_thread_ptr", (uint64_t) c.loads[1].disp);
	record(d, "thread_self", (uint64_t) c.loads[2].disp);
}

int layout_decode(struct elf_code *ec, struct layout_decoded *out)
{
	struct decoder d = {.ec = ec, .out = out};

	memset(out, 0, sizeof(*out));
	decode_get_objspace(&d);
	decode_gc_count(&d);
	decode_during_gc(&d);
	decode_superclass(&d);
	decode_iseq_location(&d, "rb_iseq_label", "body_location_label", false);
	decode_iseq_location(&d, "rb_iseq_path", "body_location_pathobj", true);
	decode_first_lineno(&d);
	decode_thread_main(&d);
	decode_thread_current(&d);
	return 0;
}

int layout_decode_file(const char *path, struct layout_decoded *out)
{
	struct elf_code *ec;
	int ret = elf_code_open(path, &ec);

	if (ret)
		return ret;
	ret = layout_decode(ec, out);
	elf_code_close(ec);
	return ret;
}

bool layout_decoded_get(const struct layout_decoded *d, const char *field, uint64_t *value)
{
	size_t i;

	for (i = 0; i < d->nfields; i++) {
		if (!strcmp(d->fields[i].field, field)) {
			*value = d->fields[i].value;
			return true;
		}
	}
	return false;
}

static void note(char *diff, size_t difflen, const char *field, uint64_t was, uint64_t now,
		 const char *function)
{
	size_t used = strnlen(diff, difflen);

	if (used + 1 < difflen)
		snprintf(diff + used, difflen - used, "%s%s %llu -> %llu (%s)", used ? "; " : "",
			 field, (unsigned long long) was, (unsigned long long) now, function);
}

/*
 * The during_gc bit's byte and bit, as the flags word and mask the layout
 * keeps: the word is taken to hold the bit at the same place it did.
 */
static int apply_flags(const struct layout_decoded *d, struct ruby_layout *l, bool overwrite,
		       char *diff, size_t difflen)
{
	uint64_t byte, bit;
	uint32_t word, mask;
	unsigned int pos;

	if (!layout_decoded_get(d, "objspace_flags.during_gc_byte", &byte) ||
	    !layout_decoded_get(d, "objspace_flags.during_gc_bit", &bit) ||
	    !l->objspace_flags_during_gc)
		return 0;
	pos = (unsigned int) __builtin_ctz(l->objspace_flags_during_gc);
	if (byte >= l->objspace_flags && byte < l->objspace_flags + 4u) {
		word = l->objspace_flags;
		mask = 1u << ((byte - word) * 8 + bit);
	} else {
		word = (uint32_t) byte - pos / 8;
		mask = 1u << (pos / 8 * 8 + bit);
	}
	if (word == l->objspace_flags && mask == l->objspace_flags_during_gc)
		return 0;
	if (mask != l->objspace_flags_during_gc) {
		/* the flags were reordered: the other bits' places are not known */
		note(diff, difflen, "objspace_flags_during_gc", l->objspace_flags_during_gc, mask,
		     "rb_during_gc");
		return -1;
	}
	note(diff, difflen, "objspace_flags", l->objspace_flags, word, "rb_during_gc");
	if (overwrite)
		l->objspace_flags = word;
	return 1;
}

int layout_decode_apply(const struct layout_decoded *d, struct ruby_layout *l, bool overwrite,
			char *diff, size_t difflen)
{
	int differ = 0, flags;
	size_t i;

	if (difflen)
		diff[0] = '\0';
	for (i = 0; i < d->nfields; i++) {
		const struct layout_field *f = layout_field_named(d->fields[i].field);
		uint64_t was;

		if (!f)
			continue; /* the flags' byte and bit: below */
		if (d->conflict[0] && strstr(d->conflict, d->fields[i].field) == d->conflict)
			continue;
		was = layout_field_get(l, f);
		if (was == d->fields[i].value)
			continue;
		note(diff, difflen, f->name, was, d->fields[i].value, d->fields[i].function);
		if (overwrite)
			layout_field_set(l, f, d->fields[i].value);
		differ++;
	}
	flags = apply_flags(d, l, overwrite, diff, difflen);
	return flags < 0 ? -1 : differ + flags;
}

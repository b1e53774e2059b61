// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caps.h"
#include "probe_caps.h"
#include "rbmemtrace.h"
#include "iseqs.h"
#include "stacks.h"
#include "ruby_string.h"
#include "target_mem.h"

#define TEXT_MAX PROBE_MAX_FRAME_TEXT

void symbolizer_init(struct symbolizer *s, pid_t pid, const struct ruby_layout *off,
		     struct class_namer *namer, id_namer_fn id_namer, void *id_namer_ctx)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->layout = off;
	s->namer = namer;
	s->id_namer = id_namer;
	s->id_namer_ctx = id_namer_ctx;
}

/* "Foo#name", or for a singleton class #<Class:Foo>, "Foo.name". */
static void method_label(struct symbolizer *s, uint64_t owner, const char *name, char *buf,
			 size_t n)
{
	const char *owner_name = class_namer_name(s->namer, owner);

	if (strncmp(owner_name, "#<Class:", 8) == 0 && owner_name[8] != '#' && owner_name[8] != '0')
		snprintf(buf, n, "%.*s.%s", (int) strlen(owner_name) - 9, owner_name + 8, name);
	else
		snprintf(buf, n, "%s#%s", owner_name, name);
}

/*
 * Looks in one method table for the entry whose method is this iseq; its
 * owner, or 0.  Each entry looked at costs up to four reads: *left says how
 * many the search may still look at.
 */
static uint64_t owner_in_table(struct symbolizer *s, uint64_t m_tbl, uint64_t iseq,
			       uint32_t *left)
{
	const struct ruby_layout *off = s->layout;
	uint64_t found = 0, items;
	unsigned char *buf;
	int32_t capa;
	uint32_t i;

	if (target_read(s->pid, m_tbl + off->id_table_capa, &capa, sizeof(capa)) ||
	    target_read_u64(s->pid, m_tbl + off->id_table_items, &items) || capa <= 0 ||
	    capa > PROBE_MAX_MTBL_CAPA || !items)
		return 0;
	buf = malloc((size_t) capa * off->id_item_size);
	if (!buf || target_read(s->pid, items, buf, (size_t) capa * off->id_item_size)) {
		free(buf);
		return 0;
	}
	for (i = 0; i < (uint32_t) capa && !found && *left; i++) {
		const unsigned char *item = buf + (size_t) i * off->id_item_size;
		uint64_t me, def, def_iseq, owner;
		uint32_t key, def_flags;

		memcpy(&key, item, sizeof(key));
		memcpy(&me, item + off->id_item_value, sizeof(me));
		if (!key || !me)
			continue;
		(*left)--;
		if (target_read_u64(s->pid, me + off->me_def, &def) || !def ||
		    target_read(s->pid, def, &def_flags, sizeof(def_flags)) ||
		    (def_flags & 0xf) != off->method_type_iseq ||
		    target_read_u64(s->pid, def + off->def_iseq, &def_iseq) || def_iseq != iseq ||
		    target_read_u64(s->pid, me + off->me_owner, &owner))
			continue;
		found = owner;
	}
	free(buf);
	return found;
}

/*
 * The class or module that defines a method iseq, found from the receiver's
 * class: up its ancestry (included modules are iclasses sharing their
 * module's table) to the table holding the method.  0 if not found.
 */
static uint64_t method_owner(struct symbolizer *s, uint64_t klass, uint64_t iseq)
{
	const struct ruby_layout *off = s->layout;
	uint32_t left = PROBE_MAX_OWNER_ENTRIES;
	uint64_t ext, m_tbl, owner;
	int i;

	for (i = 0; klass && i < PROBE_MAX_ANCESTORS; i++) {
		/* 3.3+: in the class itself; 3.1: in the classext it points at */
		if (off->rclass_m_tbl) {
			if (target_read_u64(s->pid, klass + off->rclass_m_tbl, &m_tbl))
				return 0;
		} else if (target_read_u64(s->pid, klass + off->rclass_ext, &ext) || !ext ||
			   target_read_u64(s->pid, ext + off->classext_m_tbl, &m_tbl)) {
			return 0;
		}
		if (m_tbl && (owner = owner_in_table(s, m_tbl, iseq, &left)))
			return owner;
		if (!left)
			break;
		if (target_read_u64(s->pid, klass + off->rclass_super, &klass))
			return 0;
	}
	if (klass) /* a cycle, or a crafted table: the frame prints unqualified */
		caps_count(s->pid, CAP_OWNER_SEARCH);
	return 0;
}

/*
 * "bar" -> "Foo#bar" and "block (2 levels) in bar" -> "block (2 levels) in
 * Foo#bar", as Ruby 3.4 prints them.  3.1's iseqs know no owner: it is
 * found once per iseq through the class of the frame's receiver.
 */
static void qualify(struct symbolizer *s, uint64_t iseq, struct iseq_info *info, uint64_t klass)
{
	uint64_t method_iseq = iseq, owner;
	struct iseq_info *method = info;
	char name[TEXT_MAX], buf[2 * TEXT_MAX];
	size_t prefix;

	if (info->qualified || !info->label || !klass)
		return;
	if (info->type == s->layout->iseq_type_block) {
		method_iseq = info->local_iseq;
		method = iseqs_get(s, method_iseq);
	} else if (info->type != s->layout->iseq_type_method) {
		return;
	}
	if (!method || method->type != s->layout->iseq_type_method || !method->label)
		return;
	prefix = strlen(info->label) - strlen(method->label);
	if (strlen(info->label) < strlen(method->label) ||
	    strcmp(info->label + prefix, method->label) != 0)
		return;
	owner = method_owner(s, klass, method_iseq);
	if (!owner)
		return;
	method_label(s, owner, method->label, name, sizeof(name));
	snprintf(buf, sizeof(buf), "%.*s%s", (int) prefix, info->label, name);
	info->qualified = strdup(buf);
}

static const char *cfunc_label(struct symbolizer *s, uint64_t cme)
{
	const struct ruby_layout *off = s->layout;
	char *label = u64map_get(&s->cfuncs, cme);
	char buf[TEXT_MAX], name[256] = "?";
	uint64_t owner, def, id;

	if (label)
		return label;
	if (!iseqs_is_imemo(s, cme, off->imemo_ment) ||
	    target_read_u64(s->pid, cme + off->cme_owner, &owner) ||
	    target_read_u64(s->pid, cme + off->cme_def, &def) ||
	    target_read_u64(s->pid, def + off->def_original_id, &id))
		snprintf(buf, sizeof(buf), "(unknown C method 0x%" PRIx64 ")", cme);
	else {
		if (s->id_namer && s->id_namer(s->id_namer_ctx, id, name, sizeof(name)))
			snprintf(name, sizeof(name), "?");
		method_label(s, owner, name, buf, sizeof(buf));
	}
	label = strdup(buf);
	if (!label || u64map_put(&s->cfuncs, cme, label)) {
		free(label);
		return "(out of memory)";
	}
	return label;
}

enum immediate_kind immediate_kind_of(uint64_t v)
{
	if (v & 1)
		return IMMEDIATE_INTEGER;
	if ((v & 3) == 2)
		return IMMEDIATE_FLOAT;
	if ((v & 0xff) == 0x0c)
		return IMMEDIATE_SYMBOL;
	return v == 0x08   ? IMMEDIATE_NIL
	       : v == 0x14 ? IMMEDIATE_TRUE
	       : v == 0	   ? IMMEDIATE_FALSE
			   : IMMEDIATE_KINDS;
}

static void name_frame(struct symbolizer *s, uint64_t a, uint64_t b, uint64_t self_class,
		       struct frame *f)
{
	struct iseq_info *info;
	uint64_t key;
	uintptr_t line;

	f->line = 0;
	if (!b) { /* a C method: (method entry, 0) */
		f->label = cfunc_label(s, a);
		f->path = "<cfunc>";
		return;
	}
	info = iseqs_of_frame(s, a, b);
	/*
	 * Freed before it was ever read, or another iseq took its address: the
	 * pc must lie in the instructions of what is named.  Say so rather
	 * than guess.
	 */
	if (!info) {
		f->label = "(iseq gone)";
		f->path = "?";
		return;
	}
	if (self_class & RBM_IMMEDIATE_SELF) {
		enum immediate_kind k = immediate_kind_of(self_class & ~RBM_IMMEDIATE_SELF);

		self_class = k < IMMEDIATE_KINDS ? s->immediate_classes[k] : 0;
	}
	qualify(s, a, info, self_class);
	f->label = info->qualified ? info->qualified : info->label ? info->label : "?";
	f->path = info->path ? info->path : "?";
	/* Keyed by the instructions too: a new iseq at the address has its own lines. */
	key = (a * 0x9e3779b97f4a7c15ULL) ^ b ^ (info->encoded << 17);
	line = (uintptr_t) u64map_get(&s->lines, key ? key : 1);
	if (!line) {
		line = (uintptr_t) iseqs_line(info, b) + 1;
		u64map_put(&s->lines, key ? key : 1, (void *) line);
	}
	f->line = (int) (line - 1);
}

const struct stack *symbolizer_add_stack(struct symbolizer *s, uint64_t stack_id,
					 const uint64_t *words, const uint64_t *selves,
					 uint32_t depth, bool truncated)
{
	struct stack *st = u64map_get(&s->stacks, stack_id);
	uint32_t i;

	if (st)
		return st;
	s->naming++;
	iseqs_check_cached(s, words, depth);
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->frames = calloc(depth ? depth : 1, sizeof(*st->frames));
	if (!st->frames) {
		free(st);
		return NULL;
	}
	for (i = 0; i < depth; i++)
		name_frame(s, words[i * 2], words[i * 2 + 1], selves ? selves[i] : 0,
			   &st->frames[i]);
	st->depth = depth;
	st->truncated = truncated;
	s->naming++; /* outside a path, every look checks again */
	if (u64map_put(&s->stacks, stack_id, st)) {
		free(st->frames);
		free(st);
		return NULL;
	}
	return st;
}

const struct stack *symbolizer_add_site(struct symbolizer *s, uint64_t site_id, uint64_t iseq,
					uint64_t pc, uint64_t self_class)
{
	const uint64_t words[2] = {iseq, pc};
	struct stack *st;

	if (!symbolizer_add_stack(s, site_id, words, &self_class, 1, false))
		return NULL;
	st = u64map_get(&s->stacks, site_id);
	st->site_only = true;
	return st;
}

const struct stack *symbolizer_stack(const struct symbolizer *s, uint64_t stack_id)
{
	return u64map_get(&s->stacks, stack_id);
}

static void free_stack(void *p)
{
	struct stack *st = p;

	free(st->frames);
	free(st);
}

void symbolizer_free(struct symbolizer *s)
{
	while (s->retired_iseqs) {
		struct iseq_info *next = s->retired_iseqs->retired_next;

		iseqs_free_info(s->retired_iseqs);
		s->retired_iseqs = next;
	}
	u64map_free(&s->iseqs, iseqs_free_info);
	u64map_free(&s->lines, NULL);
	u64map_free(&s->cfuncs, free);
	u64map_free(&s->stacks, free_stack);
}

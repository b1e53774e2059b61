// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caps.h"
#include "rbmemtrace.h"
#include "heap_caps.h"
#include "target_mem.h"
#include "u64map.h"
#include "vm_roots.h"

#define NAME_LEN 1024

const char *root_kind_name(enum root_kind k)
{
	static const char *const names[ROOT_KINDS] = {
	    [ROOT_CONST] = "constant",
	    [ROOT_GLOBAL] = "global",
	    [ROOT_FIBER_LOCAL] = "fiber_local",
	    [ROOT_FIBER_STORAGE] = "fiber_storage",
	    [ROOT_LOCAL] = "local",
	    [ROOT_FRAME_ENV] = "frame_env",
	    [ROOT_SELF] = "self",
	    [ROOT_STACK] = "vm_stack",
	    [ROOT_THREAD] = "thread",
	    [ROOT_ERRINFO] = "errinfo",
	    [ROOT_AT_EXIT] = "at_exit",
	    [ROOT_REGISTERED] = "registered",
	    [ROOT_VM] = "vm",
	    [ROOT_MACHINE_STACK] = "machine_stack",
	};

	return k < ROOT_KINDS ? names[k] : "?";
}

uint64_t ruby_id_of_serial(const struct ruby_layout *l, uint64_t serial)
{
	return serial <= l->id_last_op ? serial : serial << RUBY_ID_SCOPE_SHIFT;
}

struct collect {
	struct root_set *set;
	const struct ruby_target *t;
	const struct ruby_layout *l;
	const struct refs_globals *g;
	struct class_namer *cn;
	struct ruby_symbols *syms;
	uint64_t ec; /* the execution context whose VM stack is walked now; 0: none */
	bool nomem;
	bool full; /* RUBY_MAX_ROOTS kept: the walks stop (each root costs reads to find) */
};

/* A root list stopped at its cap: counted, and said in the report. */
static void cut(struct collect *c)
{
	caps_count(c->t->pid, CAP_ROOTS);
}

static void add(struct collect *c, uint64_t value, uint64_t src, enum root_kind kind,
		uint16_t thread, uint64_t a, uint64_t b, const char *name)
{
	struct root_set *s = c->set;

	if (!refs_heap_value(value))
		return;
	if (s->n >= RUBY_MAX_ROOTS) {
		if (!c->full)
			cut(c);
		c->full = true;
		return;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct root *r = realloc(s->r, cap * sizeof(*r));

		if (!r) {
			c->nomem = true;
			return;
		}
		s->r = r;
		s->cap = cap;
	}
	s->r[s->n++] = (struct root){value, src, (uint8_t) kind, thread, a, b, name, c->ec};
}

static const char *intern(struct collect *c, const char *s)
{
	const char *p = strpool_intern(&c->set->names, s);

	if (!p)
		c->nomem = true;
	return p;
}

static void id_name(struct collect *c, uint64_t id, char *buf, size_t n)
{
	if (ruby_id_name(c->syms, id, buf, n))
		snprintf(buf, n, "(id %llu)", (unsigned long long) id);
}

/* An rb_id_table's (key serial, value) items; returns how many (malloc'ed in *out). */
struct id_item {
	uint32_t key;
	uint64_t value;
	uint64_t src;
};

static int id_table_items(pid_t pid, const struct ruby_layout *l, uint64_t tbl,
			  struct id_item **out)
{
	uint64_t items;
	uint32_t capa, i, n = 0;
	uint8_t *buf;

	*out = NULL;
	if (!tbl)
		return 0;
	if (target_read(pid, tbl + l->id_table_capa, &capa, sizeof(capa)) ||
	    target_read_u64(pid, tbl + l->id_table_items, &items))
		return -EFAULT;
	if (!capa || !items)
		return 0;
	if (capa > RUBY_MAX_ROOT_ID_CAPA)
		return -E2BIG;
	buf = malloc((size_t) capa * l->id_item_size);
	*out = calloc(capa, sizeof(**out));
	if (!buf || !*out) {
		free(buf);
		return -ENOMEM;
	}
	if (target_read(pid, items, buf, (size_t) capa * l->id_item_size)) {
		free(buf);
		return -EFAULT;
	}
	for (i = 0; i < capa; i++) {
		const uint8_t *it = buf + (size_t) i * l->id_item_size;
		uint32_t key;
		uint64_t v;

		memcpy(&key, it, sizeof(key));
		memcpy(&v, it + l->id_item_value, sizeof(v));
		if (key && v)
			(*out)[n++] = (struct id_item){
			    key, v, items + (uint64_t) i * l->id_item_size + l->id_item_value};
	}
	free(buf);
	return (int) n;
}

/* The class's rb_classext_t address. */
static int classext_of(pid_t pid, const struct ruby_layout *l, uint64_t klass, uint64_t *ext)
{
	if (l->classext_embedded) {
		*ext = klass + l->rclass_ext;
		return 0;
	}
	return target_read_u64(pid, klass + l->rclass_ext, ext) || !*ext ? -EFAULT : 0;
}

int ruby_module_constants(pid_t pid, const struct ruby_layout *l, uint64_t klass,
			  struct const_entry *out, size_t max)
{
	struct id_item *items;
	uint64_t ext, tbl, *addrs;
	uint8_t *vals;
	bool *ok;
	int n, i, k = 0;

	if (classext_of(pid, l, klass, &ext) ||
	    target_read_u64(pid, ext + l->classext_const_tbl, &tbl))
		return -EFAULT;
	n = id_table_items(pid, l, tbl, &items);
	if (n <= 0)
		return n;
	if ((size_t) n > max)
		n = (int) max;
	addrs = malloc((size_t) n * sizeof(*addrs));
	vals = malloc((size_t) n * 8);
	ok = calloc((size_t) n, sizeof(*ok));
	if (!addrs || !vals || !ok) {
		k = -ENOMEM;
		goto out;
	}
	/* the items hold rb_const_entry_t pointers: their values, read at once */
	for (i = 0; i < n; i++)
		addrs[i] = items[i].value + l->const_entry_value;
	target_read_many(pid, addrs, (size_t) n, 8, vals, ok);
	for (i = 0; i < n; i++) {
		if (!ok[i])
			continue;
		out[k].serial = items[i].key;
		memcpy(&out[k].value, vals + (size_t) i * 8, 8);
		out[k++].src = addrs[i];
	}
out:
	free(items);
	free(addrs);
	free(vals);
	free(ok);
	return k;
}

/* ---- constants: every named module's table, from Object down ---- */

struct module_todo {
	uint64_t klass;
	const char *path; /* interned; "" for Object */
};

static bool is_module(pid_t pid, uint64_t v)
{
	uint64_t flags;

	if (!refs_heap_value(v) || target_read_u64(pid, v, &flags))
		return false;
	return (flags & RB_T_MASK) == RB_T_CLASS || (flags & RB_T_MASK) == RB_T_MODULE;
}

static void walk_constants(struct collect *c, uint64_t object)
{
	struct root_set *s = c->set;
	struct module_todo *todo = malloc(sizeof(*todo) * 1024);
	size_t ntodo = 0, cap = 1024, i;
	struct const_entry *cs = malloc(sizeof(*cs) * RUBY_MAX_CONSTS);
	struct u64map seen = {0};
	char name[NAME_LEN / 2], path[NAME_LEN * 2];

	if (!todo || !cs || u64map_put(&seen, object, (void *) 1)) {
		c->nomem = true;
		goto out;
	}
	todo[ntodo++] = (struct module_todo){object, ""};
	while (ntodo && !c->nomem && !c->full) {
		struct module_todo m = todo[--ntodo];
		int n = ruby_module_constants(c->t->pid, c->l, m.klass, cs, RUBY_MAX_CONSTS);

		s->modules++;
		if (n == -E2BIG || n == RUBY_MAX_CONSTS)
			cut(c); /* a table past its cap: none, or the first RUBY_MAX_CONSTS */
		for (i = 0; n > 0 && i < (size_t) n && !c->full; i++) {
			const char *p;

			id_name(c, ruby_id_of_serial(c->l, cs[i].serial), name, sizeof(name));
			snprintf(path, sizeof(path), "%s%s%s", m.path, *m.path ? "::" : "", name);
			p = intern(c, path);
			add(c, cs[i].value, cs[i].src, ROOT_CONST, 0, 0, 0, p);
			s->constants++;
			/* into a module only where this is its own name (not an alias) */
			if (!p || u64map_get(&seen, cs[i].value) ||
			    !is_module(c->t->pid, cs[i].value) ||
			    strcmp(class_namer_name(c->cn, cs[i].value), p))
				continue;
			if (u64map_put(&seen, cs[i].value, (void *) 1)) {
				c->nomem = true;
				break;
			}
			if (ntodo == cap) {
				struct module_todo *t = realloc(todo, 2 * cap * sizeof(*t));

				if (!t) {
					c->nomem = true;
					break;
				}
				todo = t;
				cap *= 2;
			}
			todo[ntodo++] = (struct module_todo){cs[i].value, p};
		}
	}
out:
	free(todo);
	free(cs);
	u64map_free(&seen, NULL);
}

/* ---- global variables ---- */

static void walk_globals(struct collect *c)
{
	const struct ruby_layout *l = c->l;
	pid_t pid = c->t->pid;
	struct id_item *items;
	uint64_t tbl;
	char name[NAME_LEN];
	int n, i;

	if (target_read_u64(pid, c->g->global_tbl, &tbl))
		return;
	n = id_table_items(pid, l, tbl, &items);
	if (n == -E2BIG)
		cut(c);
	for (i = 0; i < n && !c->full; i++) {
		uint64_t var, data, marker, value, src;

		/* items hold rb_global_entry *: entry->var->{data, marker} */
		if (target_read_u64(pid, items[i].value + l->gentry_var, &var) || !var ||
		    target_read_u64(pid, var + l->gvar_data, &data) ||
		    target_read_u64(pid, var + l->gvar_marker, &marker))
			continue;
		if (marker == c->g->val_marker) {
			value = data; /* a plain global: data is the VALUE */
			src = var + l->gvar_data;
		} else if (marker == c->g->var_marker && data && !(data & 7) &&
			   target_read_u64(pid, data, &value) == 0) {
			src = data; /* rb_define_variable: data points at a C VALUE */
		} else {
			continue; /* $~, $_ and other hooked globals have no VALUE of their own */
		}
		id_name(c, ruby_id_of_serial(l, items[i].key), name, sizeof(name));
		add(c, value, src, ROOT_GLOBAL, 0, 0, 0, intern(c, name));
		c->set->globals++;
	}
	free(items);
}

/* ---- threads: their VM stacks, fiber locals, Thread objects ---- */

static void frame_locals(struct collect *c, uint16_t th, uint64_t iseq, uint64_t pc, uint64_t ep,
			 const uint64_t *vals, uint64_t lo, uint64_t hi, uint8_t *claimed)
{
	const struct ruby_layout *l = c->l;
	pid_t pid = c->t->pid;
	uint64_t body, table, id, at, envval;
	uint32_t size = 0, i;
	char name[NAME_LEN];

	if (target_read_u64(pid, iseq + l->iseq_body, &body) ||
	    target_read(pid, body + l->body_local_table_size, &size, sizeof(size)) ||
	    target_read_u64(pid, body + l->body_local_table, &table))
		return;
	if (ep < lo || ep >= hi) {
		/* escaped: the locals live in the env object, ep[VM_ENV_DATA_INDEX_ENV] */
		if (ep && !(ep & 7) && target_read_u64(pid, ep + 8, &envval) == 0)
			add(c, envval, ep + 8, ROOT_FRAME_ENV, th, iseq, pc, NULL);
		return;
	}
	if (size > RUBY_MAX_FRAME_LOCALS)
		cut(c);
	for (i = 0; i < size && i < RUBY_MAX_FRAME_LOCALS && !c->full; i++) {
		/* local i: ep[-(size - i) - (VM_ENV_DATA_SIZE - 1)] */
		at = ep - 8 * ((uint64_t) (size - i) + l->env_data_size - 1);
		if (at < lo || at >= hi || target_read_u64(pid, table + 8ull * i, &id))
			continue;
		claimed[(at - lo) / 8] = 1;
		id_name(c, id, name, sizeof(name));
		add(c, vals[(at - lo) / 8], at, ROOT_LOCAL, th, iseq, pc, intern(c, name));
	}
}

static bool is_iseq(struct collect *c, uint64_t v)
{
	uint64_t flags;

	return refs_heap_value(v) && target_read_u64(c->t->pid, v, &flags) == 0 &&
	       (flags & RB_T_MASK) == RB_T_IMEMO &&
	       ((flags >> RB_IMEMO_SHIFT) & RB_IMEMO_MASK) == c->l->imemo_iseq;
}

static void walk_vm_stack(struct collect *c, uint16_t th, uint64_t ec)
{
	const struct ruby_layout *l = c->l;
	pid_t pid = c->t->pid;
	uint64_t stack, size, cfp, end, top_sp, frame[16], *vals = NULL, i, nvals;
	uint8_t *claimed = NULL;
	unsigned int frames = 0;

	if (target_read_u64(pid, ec + l->ec_vm_stack, &stack) ||
	    target_read_u64(pid, ec + l->ec_vm_stack_size, &size) ||
	    target_read_u64(pid, ec + l->ec_cfp, &cfp) || !stack || size > RUBY_MAX_STACK_WORDS ||
	    l->cfp_size > sizeof(frame) || cfp < stack || cfp >= stack + size * 8 ||
	    target_read(pid, cfp, frame, l->cfp_size)) {
		c->set->skipped_frames++;
		return;
	}
	top_sp = frame[l->cfp_sp / 8];
	if (top_sp < stack || top_sp > cfp)
		top_sp = stack;
	nvals = (top_sp - stack) / 8;
	vals = malloc(nvals * 8 + 8);
	claimed = calloc(nvals + 1, 1);
	if (!vals || !claimed || (nvals && target_read(pid, stack, vals, nvals * 8))) {
		c->nomem = !vals || !claimed;
		c->set->skipped_frames++;
		goto out;
	}
	end = stack + size * 8 - l->cfp_size; /* the first frame Ruby pushes is a dummy */
	for (; cfp < end && frames < RUBY_MAX_FRAMES && !c->full; cfp += l->cfp_size, frames++) {
		uint64_t iseq, pc, ep, self;

		if (target_read(pid, cfp, frame, l->cfp_size))
			break;
		iseq = frame[l->cfp_iseq / 8];
		pc = frame[l->cfp_pc / 8];
		ep = frame[l->cfp_ep / 8];
		self = frame[l->cfp_self / 8];
		if (!pc || !is_iseq(c, iseq)) {
			add(c, self, cfp + l->cfp_self, ROOT_STACK, th, 0, 0, NULL);
			continue; /* a C frame: its iseq slot holds its method entry */
		}
		c->set->frames++;
		add(c, self, cfp + l->cfp_self, ROOT_SELF, th, iseq, pc, NULL);
		frame_locals(c, th, iseq, pc, ep, vals, stack, top_sp, claimed);
	}
	if (cfp < end && frames == RUBY_MAX_FRAMES)
		cut(c);
	for (i = 0; i < nvals; i++)
		if (!claimed[i])
			add(c, vals[i], stack + i * 8, ROOT_STACK, th, 0, 0, NULL);
out:
	free(vals);
	free(claimed);
}

static void fiber_locals(struct collect *c, uint16_t th, uint64_t ec)
{
	const struct ruby_layout *l = c->l;
	struct id_item *items;
	uint64_t tbl;
	char name[NAME_LEN], shown[NAME_LEN + 32];
	int n, i;

	if (target_read_u64(c->t->pid, ec + l->ec_local_storage, &tbl))
		return;
	n = id_table_items(c->t->pid, l, tbl, &items);
	if (n == -E2BIG)
		cut(c);
	for (i = 0; i < n && !c->full; i++) {
		id_name(c, ruby_id_of_serial(l, items[i].key), name, sizeof(name));
		snprintf(shown, sizeof(shown), "Thread.current[:%s]", name);
		add(c, items[i].value, items[i].src, ROOT_FIBER_LOCAL, th, 0, 0, intern(c, shown));
	}
	free(items);
}

static void walk_thread(struct collect *c, uint16_t th, uint64_t thread)
{
	const struct ruby_layout *l = c->l;
	pid_t pid = c->t->pid;
	uint64_t self, ec, v;

	if (target_read_u64(pid, thread + l->thread_self, &self) ||
	    target_read_u64(pid, thread + l->thread_ec, &ec) || !ec)
		return;
	c->set->threads++;
	vm_roots_note_ec(c->set, th, ec);
	fiber_locals(c, th, ec);
	if (l->ec_storage && target_read_u64(pid, ec + l->ec_storage, &v) == 0)
		add(c, v, ec + l->ec_storage, ROOT_FIBER_STORAGE, th, 0, 0, NULL);
	c->ec = ec;
	walk_vm_stack(c, th, ec);
	c->ec = 0;
	add(c, self, thread + l->thread_self, ROOT_THREAD, th, 0, 0, NULL);
	if (target_read_u64(pid, ec + l->ec_errinfo, &v) == 0)
		add(c, v, ec + l->ec_errinfo, ROOT_ERRINFO, th, 0, 0, NULL);
}

static void walk_threads(struct collect *c)
{
	const struct ruby_layout *l = c->l;
	pid_t pid = c->t->pid;
	uint64_t ractor, head, node, main_thread = 0;
	uint16_t th = 1;

	if (target_read_u64(pid, c->t->main_ractor_addr, &ractor) || !ractor)
		return;
	target_read_u64(pid, ractor + l->ractor_main_thread, &main_thread);
	if (main_thread)
		walk_thread(c, 0, main_thread);
	/* the ractor's ccan list of threads, linked through lt_node at the start of each */
	head = ractor + l->ractor_threads_set;
	if (target_read_u64(pid, head, &node))
		return;
	for (; node && node != head && th < RUBY_MAX_THREADS && !c->full; th++) {
		if (node != main_thread)
			walk_thread(c, th, node);
		if (target_read_u64(pid, node, &node))
			break;
	}
	if (node && node != head && th == RUBY_MAX_THREADS)
		cut(c); /* a list that long is a loop, or hostile */
}

/* ---- at_exit, registered addresses, the VM's lists ---- */

static void walk_at_exit(struct collect *c)
{
	const struct ruby_layout *l = c->l;
	uint64_t node, data;
	int k, i;

	for (k = 0; k < 2; k++) {
		if (!c->g->end_procs[k] || target_read_u64(c->t->pid, c->g->end_procs[k], &node))
			continue;
		for (i = 0; node && i < RUBY_MAX_LIST && !c->full; i++) {
			if (target_read_u64(c->t->pid, node + l->endproc_data, &data))
				break;
			add(c, data, node + l->endproc_data, ROOT_AT_EXIT, 0, 0, 0, NULL);
			c->set->at_exit++;
			if (target_read_u64(c->t->pid, node + l->endproc_next, &node))
				break;
		}
		if (node && i == RUBY_MAX_LIST)
			cut(c);
	}
}

static void walk_registered(struct collect *c)
{
	const struct ruby_layout *l = c->l;
	uint64_t head = l->vm_global_list ? c->t->vm + l->vm_global_list
					  : c->t->objspace + l->objspace_global_list;
	uint64_t node, varptr, v;
	int i;

	if (target_read_u64(c->t->pid, head, &node))
		return;
	/* struct gc_list / global_object_list: {VALUE *varptr; next} */
	for (i = 0; node && i < RUBY_MAX_LIST && !c->full; i++) {
		if (target_read_u64(c->t->pid, node, &varptr) ||
		    target_read_u64(c->t->pid, node + 8, &node))
			break;
		if (varptr && !(varptr & 7) && target_read_u64(c->t->pid, varptr, &v) == 0) {
			add(c, v, varptr, ROOT_REGISTERED, 0, varptr, 0, NULL);
			c->set->registered++;
		}
	}
	if (node && i == RUBY_MAX_LIST)
		cut(c);
}

static void vm_field(struct collect *c, uint32_t off, const char *name)
{
	uint64_t v;

	if (target_read_u64(c->t->pid, c->t->vm + off, &v) == 0)
		add(c, v, c->t->vm + off, ROOT_VM, 0, 0, 0, name);
}

static void walk_vm(struct collect *c)
{
	const struct ruby_layout *l = c->l;
	int i;

	vm_field(c, l->vm_top_self, "main");
	for (i = 0; i < 5; i++)
		vm_field(c, l->vm_special_exceptions + 8 * i, "special_exceptions");
	vm_field(c, l->vm_load_path, "$LOAD_PATH");
	vm_field(c, l->vm_expanded_load_path, "expanded_load_path");
	vm_field(c, l->vm_loaded_features, "$LOADED_FEATURES");
	vm_field(c, l->vm_mark_object_ary, "mark_object_ary");
}

int vm_roots_collect(struct root_set *set, const struct ruby_target *t,
		     const struct refs_globals *g, struct class_namer *cn,
		     struct ruby_symbols *syms, char *err, size_t errlen)
{
	struct collect c = {.set = set, .t = t, .l = &t->layout, .g = g, .cn = cn, .syms = syms};
	uint64_t object;

	memset(set, 0, sizeof(*set));
	if (ruby_target_global_value(t, "rb_cObject", &object)) {
		snprintf(err, errlen, "cannot read rb_cObject");
		return -EFAULT;
	}
	walk_constants(&c, object);
	walk_globals(&c);
	walk_threads(&c);
	walk_at_exit(&c);
	walk_registered(&c);
	walk_vm(&c);
	if (c.nomem) {
		snprintf(err, errlen, "out of memory collecting roots");
		return -ENOMEM;
	}
	return 0;
}

void vm_roots_free(struct root_set *set)
{
	free(set->r);
	free(set->ecs);
	strpool_free(&set->names);
	memset(set, 0, sizeof(*set));
}

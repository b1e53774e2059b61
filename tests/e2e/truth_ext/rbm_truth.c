// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ground truth for tests/e2e/test_real.rb, taken by Ruby itself inside the
 * traced process: every allocation and every free, per class, from Ruby's
 * own NEWOBJ and FREEOBJ internal events.  ObjectSpace's Ruby-level APIs
 * lose freed objects, so this is C.
 *
 * Objects are keyed the way rbmemtrace's BPF program keys them (see
 * include/rbmemtrace.h and track() in bpf/rbmemtrace.bpf.c): by the class
 * in the object's header at allocation for ordinary objects; by builtin
 * type (plus imemo type) for imemos, iclasses and hidden objects (klass 0).
 * The key of each live object is remembered by address, so a free counts
 * against the class the object was allocated as, as rbmemtrace does; with
 * it, the site Ruby gives the allocation (rb_tracearg_path and _lineno: the
 * innermost Ruby frame, as ObjectSpace.allocation_sourcefile and _line do),
 * so that the sites of the objects alive at the end can be compared too.
 *
 * NEWOBJ/FREEOBJ hooks must not allocate Ruby objects, and FREEOBJ runs
 * inside the GC: the tables here use libc's malloc, never ruby_xmalloc
 * (which may start a GC) and never st.c (which uses ruby_xmalloc).
 *
 * Built by the Makefile into .output/truth_ext/ against the host Ruby's
 * headers; loaded by truth.rb beside this file.
 */
#include <ruby.h>
#include <ruby/debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exported by libruby 3.1 but not declared in its public headers. */
VALUE rb_mod_name(VALUE mod);
void rb_objspace_each_objects(int (*cb)(void *start, void *end, size_t stride, void *data),
			      void *data);

#define T_IMEMO_TYPE 0x1a
#define T_ICLASS_TYPE 0x1c
#define IMEMO_SHIFT 12
#define IMEMO_MASK 0x0f
#define NAME_MAX_LEN 512

/* A u64 -> u64 map: open addressing, linear probing, backward-shift delete. */
struct map {
	uint64_t *keys; /* 0 is the empty slot: neither an address nor a key is 0 */
	uint64_t *vals;
	size_t cap, len;
};

static size_t slot_of(const struct map *m, uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k & (m->cap - 1);
}

static void map_put(struct map *m, uint64_t k, uint64_t v);

static void map_grow(struct map *m)
{
	struct map old = *m;
	size_t i;

	m->cap = old.cap ? old.cap * 2 : 1 << 16;
	m->len = 0;
	m->keys = calloc(m->cap, sizeof(uint64_t));
	m->vals = calloc(m->cap, sizeof(uint64_t));
	if (!m->keys || !m->vals)
		abort(); /* a truth with holes is worse than none */
	for (i = 0; i < old.cap; i++)
		if (old.keys[i])
			map_put(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
}

static uint64_t *map_get(const struct map *m, uint64_t k)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = slot_of(m, k); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == k)
			return &m->vals[i];
	return NULL;
}

static void map_put(struct map *m, uint64_t k, uint64_t v)
{
	size_t i;

	if ((m->len + 1) * 2 > m->cap)
		map_grow(m);
	for (i = slot_of(m, k); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == k) {
			m->vals[i] = v;
			return;
		}
	m->keys[i] = k;
	m->vals[i] = v;
	m->len++;
}

static int map_del(struct map *m, uint64_t k, uint64_t *v)
{
	size_t i, j, home;

	if (!m->cap)
		return -1;
	for (i = slot_of(m, k); m->keys[i] != k; i = (i + 1) & (m->cap - 1))
		if (!m->keys[i])
			return -1;
	*v = m->vals[i];
	/* Shift back the entries after it that would no longer be found. */
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		home = slot_of(m, m->keys[j]);
		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->len--;
	return 0;
}

/* Per key: counters; keys are classes (heap addresses) or kinds (< 0x1000). */
struct counts {
	uint64_t key;
	uint64_t allocated, freed, walked;
	int class_freed; /* the class itself was freed (and its slot not reused by a class) */
};

static struct map objects; /* address -> site << 32 | index into rows */
static struct map row_of;  /* key -> index into rows */
static struct counts *rows;
static size_t nrows, rows_cap;
static VALUE tracepoint = Qnil;
static int armed, running, finished;
static char *main_script; /* $0: the count starts at its first line */
static char start_file[NAME_MAX_LEN];
static int start_line;
static uint64_t unknown_frees, class_slot_reused;

/* Allocation sites, (path, line) interned by content: a path string may be freed and its
 * address reused. */
struct site {
	char *path;
	int line;
};
static struct site *sites;
static size_t nsites, sites_cap;
static struct map site_of; /* hash of (path, line) -> site index + 1 (chained by probing) */

static uint64_t site_hash(const char *path, long len, int line)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	long i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char) path[i]) * 0x100000001b3ULL;
	h = (h ^ (uint64_t) (uint32_t) line) * 0x100000001b3ULL;
	return h ? h : 1;
}

/* The site index of the allocation under way; 0 is "none" (no Ruby frame). */
static uint32_t site_index(rb_trace_arg_t *ta)
{
	VALUE path = rb_tracearg_path(ta), lineno = rb_tracearg_lineno(ta);
	const char *p;
	long len;
	int line;
	uint64_t h, *at;

	if (!RB_TYPE_P(path, T_STRING))
		return 0;
	p = RSTRING_PTR(path);
	len = RSTRING_LEN(path);
	line = FIXNUM_P(lineno) ? FIX2INT(lineno) : 0;
	/* Another (path, line) with the same hash moves on to the next hash. */
	for (h = site_hash(p, len, line);; h = h * 31 + 7 ? h * 31 + 7 : 1) {
		at = map_get(&site_of, h);
		if (!at)
			break;
		if (sites[*at - 1].line == line && (long) strlen(sites[*at - 1].path) == len &&
		    !memcmp(sites[*at - 1].path, p, len))
			return (uint32_t) *at;
	}
	if (nsites == sites_cap) {
		sites_cap = sites_cap ? sites_cap * 2 : 4096;
		sites = realloc(sites, sites_cap * sizeof(*sites));
		if (!sites)
			abort();
	}
	sites[nsites].path = strndup(p, len);
	if (!sites[nsites].path)
		abort();
	sites[nsites].line = line;
	map_put(&site_of, h, ++nsites);
	return (uint32_t) nsites;
}

static uint64_t key_of(VALUE obj, int *type)
{
	VALUE flags = RBASIC(obj)->flags;

	*type = flags & RUBY_T_MASK;
	if (*type == T_IMEMO_TYPE)
		return *type | ((flags >> IMEMO_SHIFT) & IMEMO_MASK) << 8;
	if (*type == T_ICLASS_TYPE)
		return *type;
	return RBASIC(obj)->klass ? (uint64_t) RBASIC(obj)->klass : (uint64_t) *type;
}

static size_t row_index(uint64_t key)
{
	uint64_t *i = map_get(&row_of, key);

	if (i)
		return *i;
	if (nrows == rows_cap) {
		rows_cap = rows_cap ? rows_cap * 2 : 1024;
		rows = realloc(rows, rows_cap * sizeof(*rows));
		if (!rows)
			abort();
	}
	memset(&rows[nrows], 0, sizeof(*rows));
	rows[nrows].key = key;
	map_put(&row_of, key, nrows);
	return nrows++;
}

static void on_object_event(VALUE tpval, void *data)
{
	rb_trace_arg_t *ta = rb_tracearg_from_tracepoint(tpval);
	VALUE obj = rb_tracearg_object(ta);
	uint64_t idx, *class_row;
	int type;

	(void) data;
	if (!running)
		return;
	if (rb_tracearg_event_flag(ta) == RUBY_INTERNAL_EVENT_NEWOBJ) {
		idx = row_index(key_of(obj, &type));
		rows[idx].allocated++;
		map_put(&objects, obj, (uint64_t) site_index(ta) << 32 | idx);
		/* A new class at a dead class's address: rbmemtrace names what is there at the end.
		 */
		if ((type == T_CLASS || type == T_MODULE) && (class_row = map_get(&row_of, obj)) &&
		    rows[*class_row].class_freed) {
			rows[*class_row].class_freed = 0;
			class_slot_reused++;
		}
		return;
	}
	if (map_del(&objects, obj, &idx)) {
		unknown_frees++; /* allocated before the count started */
	} else {
		rows[(uint32_t) idx].freed++;
	}
	type = RBASIC(obj)->flags & RUBY_T_MASK;
	if ((type == T_CLASS || type == T_MODULE) && (class_row = map_get(&row_of, obj)))
		rows[*class_row].class_freed = 1;
}

/*
 * Starts the count at the main script's first line: launch mode starts
 * tracing when ruby_options returns, after the main script is compiled, and
 * the first line event of the main script is the nearest point Ruby offers.
 * What the VM allocates in between (the top-level binding's env when the
 * script has locals) is counted by rbmemtrace and not here.
 */
static void on_line(rb_event_flag_t ev, VALUE data, VALUE self, ID mid, VALUE klass)
{
	const char *file = rb_sourcefile();

	(void) ev, (void) data, (void) self, (void) mid, (void) klass;
	if (!armed || running || !file || strcmp(file, main_script))
		return;
	snprintf(start_file, sizeof(start_file), "%s", file);
	start_line = rb_sourceline();
	running = 1;
	rb_tracepoint_enable(tracepoint);
	rb_remove_event_hook(on_line);
}

static VALUE truth_arm(VALUE mod, VALUE script)
{
	(void) mod;
	main_script = strdup(StringValueCStr(script));
	tracepoint = rb_tracepoint_new(0, RUBY_INTERNAL_EVENT_NEWOBJ | RUBY_INTERNAL_EVENT_FREEOBJ,
				       on_object_event, NULL);
	rb_gc_register_mark_object(tracepoint);
	armed = 1;
	rb_add_event_hook(on_line, RUBY_EVENT_LINE, Qnil);
	return Qnil;
}

/* Every object still in a heap slot: finishes any lazy sweep first (gc_rest). */
static int walk_page(void *start, void *end, size_t stride, void *data)
{
	char *p;
	uint64_t *idx;

	(void) data;
	for (p = start; p < (char *) end; p += stride) {
		VALUE obj = (VALUE) p;
		int type = RBASIC(obj)->flags & RUBY_T_MASK;

		if (!RBASIC(obj)->flags || type == T_ZOMBIE || type == T_MOVED)
			continue;
		idx = map_get(&objects, obj);
		if (idx)
			rows[(uint32_t) *idx].walked++;
	}
	return 0;
}

static const char *type_name(int type)
{
	static const char *const names[] = {
	    [0x00] = "T_NONE",	 [0x01] = "T_OBJECT", [0x02] = "T_CLASS",   [0x03] = "T_MODULE",
	    [0x04] = "T_FLOAT",	 [0x05] = "T_STRING", [0x06] = "T_REGEXP",  [0x07] = "T_ARRAY",
	    [0x08] = "T_HASH",	 [0x09] = "T_STRUCT", [0x0a] = "T_BIGNUM",  [0x0b] = "T_FILE",
	    [0x0c] = "T_DATA",	 [0x0d] = "T_MATCH",  [0x0e] = "T_COMPLEX", [0x0f] = "T_RATIONAL",
	    [0x11] = "T_NIL",	 [0x12] = "T_TRUE",   [0x13] = "T_FALSE",   [0x14] = "T_SYMBOL",
	    [0x15] = "T_FIXNUM", [0x16] = "T_UNDEF",  [0x1a] = "T_IMEMO",   [0x1b] = "T_NODE",
	    [0x1c] = "T_ICLASS", [0x1d] = "T_ZOMBIE", [0x1e] = "T_MOVED",
	};

	if (type < (int) (sizeof(names) / sizeof(names[0])) && names[type])
		return names[type];
	return "T_UNKNOWN";
}

static const char *imemo_name(int imemo)
{
	static const char *const names[] = {
	    "env",  "cref",   "svar", "throw_data",	"ifunc",    "memo",	 "ment",
	    "iseq", "tmpbuf", "ast",  "parser_strterm", "callinfo", "callcache", "constcache",
	};

	if (imemo < (int) (sizeof(names) / sizeof(names[0])))
		return names[imemo];
	return "unknown";
}

/* A class's name as rbmemtrace's class namer prints it, without allocating. */
static void class_name(VALUE klass, char *buf, size_t len, int depth)
{
	static ID attached_id;
	VALUE path, attached;
	char inner[NAME_MAX_LEN];

	if (!attached_id)
		attached_id = rb_intern("__attached__");
	if (depth > 4) {
		snprintf(buf, len, "?");
		return;
	}
	if (RBASIC(klass)->flags & RUBY_FL_SINGLETON) {
		attached = rb_attr_get(klass, attached_id);
		if (RB_SPECIAL_CONST_P(attached) || NIL_P(attached)) {
			snprintf(buf, len, "#<Class:0x%016lx>", (unsigned long) klass);
		} else if (RB_TYPE_P(attached, T_CLASS) || RB_TYPE_P(attached, T_MODULE)) {
			class_name(attached, inner, sizeof(inner), depth + 1);
			snprintf(buf, len, "#<Class:%s>", inner);
		} else {
			class_name(rb_class_real(RBASIC(attached)->klass), inner, sizeof(inner),
				   depth + 1);
			snprintf(buf, len, "#<Class:#<%s:0x%016lx>>", inner,
				 (unsigned long) attached);
		}
		return;
	}
	path = rb_mod_name(klass);
	if (RB_TYPE_P(path, T_STRING)) {
		snprintf(buf, len, "%.*s", (int) RSTRING_LEN(path), RSTRING_PTR(path));
		return;
	}
	snprintf(buf, len, "#<%s:0x%016lx>", RB_TYPE_P(klass, T_MODULE) ? "Module" : "Class",
		 (unsigned long) klass);
}

static void row_name(const struct counts *r, char *buf, size_t len)
{
	if (r->key >= 0x1000) {
		if (r->class_freed)
			snprintf(buf, len, "#<freed class 0x%016lx>", (unsigned long) r->key);
		else
			class_name((VALUE) r->key, buf, len, 0);
	} else if ((r->key & RUBY_T_MASK) == T_IMEMO_TYPE) {
		snprintf(buf, len, "<imemo:%s>", imemo_name((r->key >> 8) & IMEMO_MASK));
	} else if ((r->key & RUBY_T_MASK) == T_ICLASS_TYPE) {
		snprintf(buf, len, "<iclass>");
	} else {
		snprintf(buf, len, "<hidden:%s>", type_name(r->key & RUBY_T_MASK));
	}
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Per (class, site), the objects alive at the end: [class name, path, line, alive]. */
static void write_sites(FILE *f)
{
	char name[NAME_MAX_LEN];
	struct map per = {0}; /* site << 32 | row -> alive */
	size_t i, n = 0;

	for (i = 0; i < objects.cap; i++)
		if (objects.keys[i]) {
			uint64_t *c = map_get(&per, objects.vals[i] + 1);

			map_put(&per, objects.vals[i] + 1, c ? *c + 1 : 1);
		}
	for (i = 0; i < per.cap; i++) {
		uint64_t v = per.keys[i] - 1;
		uint32_t site = (uint32_t) (v >> 32);

		if (!per.keys[i] || !site)
			continue;
		row_name(&rows[(uint32_t) v], name, sizeof(name));
		fprintf(f, "%s[", n++ ? ",\n" : "\n");
		json_string(f, name);
		fputc(',', f);
		json_string(f, sites[site - 1].path);
		fprintf(f, ",%d,%lu]", sites[site - 1].line, (unsigned long) per.vals[i]);
	}
	free(per.keys);
	free(per.vals);
}

/*
 * Called from the at_exit handler truth.rb registers first, so it runs last:
 * after it only Ruby's own teardown runs before ruby_sig_finalize, where
 * rbmemtrace takes its final census.  Names are resolved without allocating,
 * and the file is written with stdio, so the count it writes is final.
 */
static VALUE truth_finish(VALUE mod, VALUE out)
{
	char name[NAME_MAX_LEN];
	FILE *f;
	size_t i;

	(void) mod;
	if (finished || !running)
		rb_raise(rb_eRuntimeError, "rbm_truth: finish before the count started or twice");
	/* Finishes a lazy sweep (its frees are counted) and sees what is left. */
	rb_objspace_each_objects(walk_page, NULL);
	f = fopen(StringValueCStr(out), "w");
	if (!f)
		rb_sys_fail("rbm_truth: open");
	running = 0;
	finished = 1;
	rb_tracepoint_disable(tracepoint);
	fprintf(f, "{\"start_file\":");
	json_string(f, start_file);
	fprintf(f,
		",\"start_line\":%d,\"unknown_frees\":%lu,\"class_slot_reused\":%lu,\"classes\":[",
		start_line, (unsigned long) unknown_frees, (unsigned long) class_slot_reused);
	for (i = 0; i < nrows; i++) {
		const struct counts *r = &rows[i];

		row_name(r, name, sizeof(name));
		fprintf(f, "%s{\"name\":", i ? ",\n" : "\n");
		json_string(f, name);
		fprintf(
		    f, ",\"key\":%lu,\"allocated\":%lu,\"freed\":%lu,\"alive\":%lu,\"walked\":%lu",
		    (unsigned long) r->key, (unsigned long) r->allocated, (unsigned long) r->freed,
		    (unsigned long) (r->allocated - r->freed), (unsigned long) r->walked);
		/* Named only under an anonymous class (3.1's __tmp_classpath__): by its address
		 * too. */
		if (r->key >= 0x1000 && !r->class_freed &&
		    !(RBASIC((VALUE) r->key)->flags & RUBY_FL_SINGLETON) &&
		    !strncmp(name, "#<", 2) && strstr(name, ">::"))
			fprintf(f, ",\"anonymous_name\":\"#<%s:0x%016lx>\"",
				RB_TYPE_P((VALUE) r->key, T_MODULE) ? "Module" : "Class",
				(unsigned long) r->key);
		fputc('}', f);
	}
	fprintf(f, "\n],\"sites\":[");
	write_sites(f);
	fprintf(f, "\n]}\n");
	if (fclose(f))
		rb_sys_fail("rbm_truth: write");
	return Qnil;
}

void Init_rbm_truth(void)
{
	VALUE mod = rb_define_module("RbmTruth");

	rb_define_module_function(mod, "arm", truth_arm, 1);
	rb_define_module_function(mod, "finish", truth_finish, 1);
}

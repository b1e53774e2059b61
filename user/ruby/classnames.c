// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caps.h"
#include "clock.h"
#include "classnames.h"
#include "rbmemtrace.h"
#include "procmaps.h"
#include "ruby_caps.h"
#include "ruby_string.h"
#include "target_mem.h"

#define NAME_MAX_LEN 512

const char *ruby_type_name(uint32_t type)
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

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "T_UNKNOWN";
}

const char *ruby_imemo_name(uint32_t imemo)
{
	static const char *const names[] = {
	    "env",  "cref",   "svar", "throw_data",	"ifunc",    "memo",	 "ment",
	    "iseq", "tmpbuf", "ast",  "parser_strterm", "callinfo", "callcache", "constcache",
	};

	if (imemo < sizeof(names) / sizeof(names[0]))
		return names[imemo];
	return "unknown";
}

/* Where a class's rb_classext_t is: in the slot (3.3+) or behind RClass.ptr. */
static int class_ext(struct class_namer *cn, uint64_t klass, uint64_t *ext)
{
	if (cn->layout->classext_embedded) {
		*ext = klass + cn->layout->rclass_ext;
		return 0;
	}
	return target_read_u64(cn->pid, klass + cn->layout->rclass_ext, ext) || !*ext ? -ENOENT : 0;
}

/* 3.3+: a VALUE field of the classext (classpath, attached_object); 0 or -ENOENT. */
static int classext_value(struct class_namer *cn, uint64_t klass, uint32_t field, uint64_t *v)
{
	uint64_t ext;

	if (class_ext(cn, klass, &ext) || target_read_u64(cn->pid, ext + field, v) || !*v ||
	    (*v & 7) || *v == 8 /* Qnil */)
		return -ENOENT;
	return 0;
}

/*
 * Walks a class's iv_tbl (an st_table) until match() accepts an entry, and
 * returns that entry's key and value.  Past RUBY_MAX_IVAR_SCAN entries the table
 * is scanned only in part, or refused when `whole` asks for all of it.
 */
static int scan_ivars(struct class_namer *cn, uint64_t klass, bool whole,
		      int (*match)(struct class_namer *, uint64_t key, uint64_t value,
				   uint64_t arg),
		      uint64_t arg, uint64_t *key, uint64_t *value)
{
	const struct ruby_layout *off = cn->layout;
	uint64_t ext, tbl, start, bound, entries, i;
	uint64_t entry[3];

	if (!off->classext_iv_tbl || class_ext(cn, klass, &ext) ||
	    target_read_u64(cn->pid, ext + off->classext_iv_tbl, &tbl) || !tbl ||
	    target_read_u64(cn->pid, tbl + off->st_entries_start, &start) ||
	    target_read_u64(cn->pid, tbl + off->st_entries_bound, &bound) ||
	    target_read_u64(cn->pid, tbl + off->st_entries, &entries) || !entries)
		return -ENOENT;
	if (bound - start > RUBY_MAX_IVAR_SCAN) {
		if (whole)
			return -EINVAL;
		bound = start + RUBY_MAX_IVAR_SCAN;
	}
	for (i = start; i < bound; i++) {
		if (target_read(cn->pid, entries + i * off->st_entry_size, entry, sizeof(entry)))
			return -EFAULT;
		if (match(cn, entry[1], entry[2], arg)) {
			*key = entry[1];
			*value = entry[2];
			return 0;
		}
	}
	return -ENOENT;
}

static int key_equals(struct class_namer *cn, uint64_t key, uint64_t value, uint64_t id)
{
	(void) cn;
	(void) value;
	return key == id;
}

/* Reads ivar `id` of a class.  0 or -errno. */
static int class_ivar(struct class_namer *cn, uint64_t klass, uint64_t id, uint64_t *value)
{
	uint64_t key;

	return scan_ivars(cn, klass, false, key_equals, id, &key, value);
}

/*
 * The class's path String (classext.classpath in 3.3+, else the hidden
 * ivar).  A class named while a compaction still updates references may
 * point at the forwarding slot its path moved from: the path is where that
 * leads.
 */
static int class_path(struct class_namer *cn, uint64_t klass, uint64_t *path)
{
	uint64_t hdr[3];
	int err = cn->layout->classext_classpath
			  ? classext_value(cn, klass, cn->layout->classext_classpath, path)
			  : class_ivar(cn, klass, cn->classpath_id, path);

	if (!err && !target_read(cn->pid, *path, hdr, sizeof(hdr)) &&
	    (hdr[0] & RB_T_MASK) == RB_T_MOVED && hdr[2])
		*path = hdr[2];
	return err;
}

/* A singleton class's object (classext.attached_object in 3.3+, else the hidden ivar). */
static int class_attached(struct class_namer *cn, uint64_t klass, uint64_t *obj)
{
	if (cn->layout->classext_attached_object)
		return classext_value(cn, klass, cn->layout->classext_attached_object, obj);
	if (!cn->attached_id)
		return -ENOENT;
	return class_ivar(cn, klass, cn->attached_id, obj);
}

/* Finds the ivar key whose value satisfies match(); used once at start-up. */
static int find_ivar_id(struct class_namer *cn, uint64_t klass,
			int (*match)(struct class_namer *, uint64_t key, uint64_t value,
				     uint64_t arg),
			uint64_t arg, uint64_t *id)
{
	uint64_t value;

	return scan_ivars(cn, klass, true, match, arg, id, &value);
}

static int value_is_string_object(struct class_namer *cn, uint64_t key, uint64_t value,
				  uint64_t unused)
{
	char buf[16];

	(void) key;
	(void) unused;
	return (value & 7) == 0 && value &&
	       ruby_read_string(cn->pid, cn->layout, value, buf, sizeof(buf)) == 0 &&
	       strcmp(buf, "Object") == 0;
}

static int value_equals(struct class_namer *cn, uint64_t key, uint64_t value, uint64_t expected)
{
	(void) cn;
	(void) key;
	return value == expected;
}

int class_namer_init(struct class_namer *cn, pid_t pid, const struct ruby_layout *off,
		     uint64_t object_class, char *err, size_t errlen)
{
	uint64_t hdr[2];

	memset(cn, 0, sizeof(*cn));
	cn->pid = pid;
	cn->layout = off;
	/* A target that dies now makes every read fail: say that, not "internals differ". */
	if (target_read(pid, object_class, hdr, sizeof(hdr)) ||
	    (hdr[0] & RB_T_MASK) != RB_T_CLASS) {
		snprintf(err, errlen,
			 "rb_cObject does not point at a class: Ruby internals differ "
			 "from the table for %s",
			 off->series);
		return target_gone_error(pid, -EINVAL, err, errlen);
	}
	if (off->classext_classpath) {
		/* 3.3+: no hidden ivars; Object's classpath checks the offsets instead. */
		uint64_t path;

		if (class_path(cn, object_class, &path) ||
		    !value_is_string_object(cn, 0, path, 0)) {
			snprintf(err, errlen,
				 "cannot read Object's class path: Ruby internals "
				 "differ from the layout of %s",
				 off->series);
			return target_gone_error(pid, -EINVAL, err, errlen);
		}
		return 0;
	}
	if (find_ivar_id(cn, object_class, value_is_string_object, 0, &cn->classpath_id)) {
		snprintf(err, errlen,
			 "cannot find Object's class path in its ivars: Ruby "
			 "internals differ from the table for %s",
			 off->series);
		return target_gone_error(pid, -EINVAL, err, errlen);
	}
	/* Object's klass is its singleton class, whose attached object is Object. */
	if (find_ivar_id(cn, hdr[1], value_equals, object_class, &cn->attached_id))
		cn->attached_id = 0; /* singleton classes then print as #<Class:0x...> */
	return 0;
}

/* FNV-1a: not for security, only to tell names apart. */
static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char) *s) * 0x100000001b3ULL;
	return h;
}

char *class_name_fit(const char *name)
{
	size_t len = strlen(name), cut;
	char *out;

	if (len <= CLASS_NAME_MAX)
		return strdup(name);
	/* Cut on a character boundary, leaving room for "...#" and 16 hex digits. */
	cut = CLASS_NAME_MAX - 20;
	while (cut > 0 && ((unsigned char) name[cut] & 0xc0) == 0x80)
		cut--;
	out = malloc(CLASS_NAME_MAX + 1);
	if (out)
		snprintf(out, CLASS_NAME_MAX + 1, "%.*s...#%016" PRIx64, (int) cut, name,
			 name_hash(name));
	return out;
}

static char *format_name(struct class_namer *cn, uint64_t klass, int depth);

static uint64_t real_class(struct class_namer *cn, uint64_t klass)
{
	uint64_t flags;
	int i;

	for (i = 0; i < 8; i++) {
		if (target_read_u64(cn->pid, klass, &flags) || !(flags & cn->layout->fl_singleton) ||
		    target_read_u64(cn->pid, klass + cn->layout->rclass_super, &klass))
			break;
	}
	return klass;
}

static char *singleton_name(struct class_namer *cn, uint64_t klass, int depth)
{
	char buf[NAME_MAX_LEN * 2];
	uint64_t attached, hdr[2];
	char *inner = NULL;

	if (class_attached(cn, klass, &attached) ||
	    target_read(cn->pid, attached, hdr, sizeof(hdr)))
		goto anonymous;
	switch (hdr[0] & RB_T_MASK) {
	case RB_T_CLASS:
	case RB_T_MODULE:
		inner = format_name(cn, attached, depth + 1);
		snprintf(buf, sizeof(buf), "#<Class:%s>", inner ? inner : "?");
		break;
	default:
		/* The object's klass is this singleton class: its real class is the first
		 * non-singleton superclass (RClass.super, right after RBasic). */
		inner = format_name(cn, real_class(cn, hdr[1]), depth + 1);
		snprintf(buf, sizeof(buf), "#<Class:#<%s:0x%016" PRIx64 ">>", inner ? inner : "?",
			 attached);
		break;
	}
	free(inner);
	return strdup(buf);
anonymous:
	snprintf(buf, sizeof(buf), "#<Class:0x%016" PRIx64 ">", klass);
	return strdup(buf);
}

/* What a class's address is named when no class lives there any more. */
#define FREED_CLASS "#<freed class "

static bool is_class_type(uint32_t type)
{
	return type == RB_T_CLASS || type == RB_T_MODULE || type == RB_T_ICLASS;
}

static char *format_name(struct class_namer *cn, uint64_t klass, int depth)
{
	char buf[NAME_MAX_LEN];
	uint64_t hdr[2], path;
	uint32_t type;

	if (depth > 4 || target_read(cn->pid, klass, hdr, sizeof(hdr))) {
		snprintf(buf, sizeof(buf), "#<unreadable class 0x%016" PRIx64 ">", klass);
		return strdup(buf);
	}
	type = hdr[0] & RB_T_MASK;
	if (!is_class_type(type)) {
		/* Freed (and maybe reused) since it was recorded: anonymous classes die. */
		snprintf(buf, sizeof(buf), FREED_CLASS "0x%016" PRIx64 ">", klass);
		return strdup(buf);
	}
	if (hdr[0] & cn->layout->fl_singleton)
		return singleton_name(cn, klass, depth);
	if (class_path(cn, klass, &path) == 0) {
		char *full = malloc(RUBY_MAX_NAME_READ), *name = NULL;

		/* a hostile path may be huge: read RUBY_MAX_NAME_READ, printed as fit cuts it */
		if (full &&
		    ruby_read_string(cn->pid, cn->layout, path, full, RUBY_MAX_NAME_READ) == 0) {
			name = class_name_fit(full);
			if (strlen(full) > CLASS_NAME_MAX)
				caps_count(cn->pid, CAP_CLASS_NAME);
		}
		free(full);
		if (name)
			return name;
	}
	snprintf(buf, sizeof(buf), "#<%s:0x%016" PRIx64 ">",
		 type == RB_T_MODULE ? "Module" : "Class", klass);
	return strdup(buf);
}

/*
 * A class the cache says was freed, at whose address a class lives now
 * (not told as a move).  Looked at once a second at most: the names of a
 * trace's tallies are asked for at every refresh, dead classes' too.
 */
static bool freed_then_reborn(struct class_namer *cn, uint64_t klass, const char *name)
{
	uint64_t flags, now_ms = (uint64_t) (now_seconds() * 1e3);

	if (strncmp(name, FREED_CLASS, strlen(FREED_CLASS)) ||
	    (uintptr_t) u64map_get(&cn->recheck, klass) > now_ms)
		return false;
	u64map_put(&cn->recheck, klass, (void *) (uintptr_t) (now_ms + 1000));
	return target_read_u64(cn->pid, klass, &flags) == 0 && is_class_type(flags & RB_T_MASK);
}

const char *class_namer_name(struct class_namer *cn, uint64_t klass)
{
	char *name = u64map_get(&cn->cache, klass);

	if (name && freed_then_reborn(cn, klass, name)) {
		class_namer_forget(cn, klass);
		name = u64map_get(&cn->cache, klass);
	}
	if (name)
		return name;
	name = format_name(cn, klass, 0);
	if (name && strlen(name) > CLASS_NAME_MAX) { /* a singleton of a long-named class */
		char *fit = class_name_fit(name);

		caps_count(cn->pid, CAP_CLASS_NAME);
		free(name);
		name = fit;
	}
	if (!name)
		return "#<out of memory>";
	if (u64map_put(&cn->cache, klass, name)) {
		free(name);
		return "#<out of memory>";
	}
	return name;
}

const char *class_namer_key_name(struct class_namer *cn, uint64_t klass, uint32_t kind)
{
	static char buf[64];
	uint32_t type = RBM_KIND_TYPE(kind);

	if (type == RB_T_IMEMO) {
		snprintf(buf, sizeof(buf), "<imemo:%s>", ruby_imemo_name(RBM_KIND_IMEMO(kind)));
		return buf;
	}
	if (type == RB_T_ICLASS) /* a module's proxy in an ancestry chain */
		return "<iclass>";
	if (!klass) { /* hidden objects: Ruby's own internal strings, arrays, hashes */
		snprintf(buf, sizeof(buf), "<hidden:%s>", ruby_type_name(type));
		return buf;
	}
	return class_namer_name(cn, klass);
}

void class_namer_forget(struct class_namer *cn, uint64_t klass)
{
	char *name = u64map_get(&cn->cache, klass), **grown;

	if (!name)
		return;
	grown = realloc(cn->retired, (cn->nretired + 1) * sizeof(*grown));
	if (!grown)
		return; /* kept: a stale name rather than a dangling one */
	cn->retired = grown;
	cn->retired[cn->nretired++] = name;
	u64map_put(&cn->cache, klass, NULL);
}

void class_namer_free(struct class_namer *cn)
{
	size_t i;

	u64map_free(&cn->cache, free);
	u64map_free(&cn->recheck, NULL);
	for (i = 0; i < cn->nretired; i++)
		free(cn->retired[i]);
	free(cn->retired);
	cn->retired = NULL;
	cn->nretired = 0;
}

uint64_t class_namer_object_class(struct class_namer *cn, uint64_t klass)
{
	uint64_t flags, super;
	int hops;

	for (hops = 0; hops < 16 && klass; hops++) {
		if (target_read_u64(cn->pid, klass, &flags) ||
		    (!(flags & cn->layout->fl_singleton) && (flags & RB_T_MASK) != RB_T_ICLASS) ||
		    target_read_u64(cn->pid, klass + cn->layout->rclass_super, &super))
			break;
		klass = super;
	}
	return klass;
}

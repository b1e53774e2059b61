/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Class names, read from the target's memory and cached. */
#ifndef RBM_CLASSNAMES_H
#define RBM_CLASSNAMES_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ruby_layout.h"
#include "u64map.h"

struct class_namer {
	pid_t pid;
	const struct ruby_layout *layout;
	uint64_t classpath_id; /* the hidden ivar that holds a class's path */
	uint64_t attached_id;  /* the hidden ivar of a singleton class: its object */
	struct u64map cache;   /* klass -> name */
	struct u64map recheck; /* a freed class's address -> when to look at it again (ms) */
	char **retired;	       /* names forgotten (their class moved): freed with the namer */
	size_t nretired;
};

/*
 * Learns the two hidden ivar IDs from Object and its singleton class, which
 * also checks that the offsets fit this process.  Returns 0 or -errno.
 */
int class_namer_init(struct class_namer *cn, pid_t pid, const struct ruby_layout *off,
		     uint64_t object_class, char *err, size_t errlen);

/* Longest class name handed out, in bytes: report.c's buffers hold 512. */
#define CLASS_NAME_MAX 511

/*
 * A copy of name of at most CLASS_NAME_MAX bytes (malloc'd; NULL if out of
 * memory).  A longer name is cut on a character boundary and gets
 * "...#" and a 64-bit hash of the whole name, so that names sharing a long
 * prefix stay distinct rows.
 */
char *class_name_fit(const char *name);

/*
 * The class's name: "Foo::Bar", "#<Class:0x...>", "#<Class:Foo>"; never
 * NULL, at most CLASS_NAME_MAX bytes (see class_name_fit).
 */
const char *class_namer_name(struct class_namer *cn, uint64_t klass);

/* The display name of a per-class key (kind and klass from the BPF maps). */
const char *class_namer_key_name(struct class_namer *cn, uint64_t klass, uint32_t kind);

/*
 * The class an object's klass stands for, as ObjectSpace.each_object counts
 * it: past its singleton class and the iclasses of the modules it extends.
 */
uint64_t class_namer_object_class(struct class_namer *cn, uint64_t klass);
void class_namer_free(struct class_namer *cn);

/*
 * Forgets the name cached for klass: the class moved away (GC.compact) and
 * another class may take its address.  Names handed out stay valid.
 */
void class_namer_forget(struct class_namer *cn, uint64_t klass);

/* Names of builtin types ("T_STRING") and imemo subtypes ("callcache"). */
const char *ruby_type_name(uint32_t type);
const char *ruby_imemo_name(uint32_t imemo);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Ruby call paths: naming the frames the BPF side recorded. */
#ifndef RBM_STACKS_H
#define RBM_STACKS_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "callpath.h"
#include "classnames.h"
#include "ruby_layout.h"
#include "u64map.h"

struct iseq_info;

/* Names a Ruby ID (a C method's name); 0 or -errno.  Optional. */
typedef int (*id_namer_fn)(void *ctx, uint64_t id, char *buf, size_t n);

/* Kinds of immediate values, by how their VALUE is tagged (special_consts.h). */
enum immediate_kind {
	IMMEDIATE_INTEGER, /* Fixnum: bit 0 */
	IMMEDIATE_FLOAT,   /* flonum: bits 0-1 = 2 */
	IMMEDIATE_SYMBOL,  /* static Symbol: low byte 0x0c */
	IMMEDIATE_NIL,	   /* 0x08 */
	IMMEDIATE_TRUE,	   /* 0x14 */
	IMMEDIATE_FALSE,   /* 0 */
	IMMEDIATE_KINDS,
};

/* The kind of an immediate VALUE, or IMMEDIATE_KINDS if it is none. */
enum immediate_kind immediate_kind_of(uint64_t value);

struct symbolizer {
	pid_t pid;
	const struct ruby_layout *layout;
	struct class_namer *namer;
	id_namer_fn id_namer; /* NULL: C methods print as "Owner#?" */
	void *id_namer_ctx;
	struct u64map iseqs;		 /* iseq -> struct iseq_info */
	struct u64map lines;		 /* hash(iseq, pc) -> line + 1 */
	struct u64map cfuncs;		 /* method entry -> label */
	struct u64map stacks;		 /* stack id -> struct stack */
	struct iseq_info *retired_iseqs; /* replaced at their address; freed last */
	uint64_t line_bytes;		 /* line tables kept (iseqs.c), for their cap */
	uint64_t naming; /* the stack being named: its iseqs checked in one read (stacks.c) */
	/* The classes of immediate receivers; 0: unknown, their methods print unqualified */
	uint64_t immediate_classes[IMMEDIATE_KINDS];
};

void symbolizer_init(struct symbolizer *s, pid_t pid, const struct ruby_layout *off,
		     struct class_namer *namer, id_namer_fn id_namer, void *id_namer_ctx);

/*
 * Names the frames of a stack the BPF side recorded (pairs of words,
 * innermost first).  self_classes, if not NULL, holds the class of each
 * frame's receiver: it qualifies Ruby method labels with their owner (Foo#bar).
 */
const struct stack *symbolizer_add_stack(struct symbolizer *s, uint64_t stack_id,
					 const uint64_t *words, const uint64_t *self_classes,
					 uint32_t depth, bool truncated);
/* A site kept when the path map was full (RBM_SITE_ONLY): its one frame, for the site table. */
const struct stack *symbolizer_add_site(struct symbolizer *s, uint64_t site_id, uint64_t iseq,
					uint64_t pc, uint64_t self_class);
const struct stack *symbolizer_stack(const struct symbolizer *s, uint64_t stack_id);

void symbolizer_free(struct symbolizer *s);

#endif

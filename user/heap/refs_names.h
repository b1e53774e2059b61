/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The words of a retainer path: a reference's label as a Ruby programmer
 * reads it (@sessions, [], {value}, .member, captured items, ::CONST), an
 * object's class, a root's name.  Names are read from the target and
 * cached: an ivar's by its class's iv_index_tbl (3.1) or its shape's chain
 * (3.3+), a Struct member's from the class's __members__, a local's from
 * its iseq's local table.  What cannot be named says what it is
 * ("@?3", "local ?2").  Frames are named by the caller (frame_label): the
 * probing layer knows how to label an iseq and a pc.
 *
 * Hash keys and element indexes are never printed: a label says where a
 * value is held, not what the program stored (keys may be secrets).
 */
#ifndef RBM_REFS_NAMES_H
#define RBM_REFS_NAMES_H
#include <stddef.h>
#include <stdint.h>
#include "classnames.h"
#include "refs.h"
#include "ruby_symbols.h"
#include "u64map.h"
#include "vm_roots.h"

typedef void (*frame_label_fn)(void *ctx, uint64_t iseq, uint64_t pc, char *buf, size_t n);

struct refs_namer {
	pid_t pid;
	const struct ruby_layout *l;
	struct refs_meta *meta;
	struct class_namer *cn;
	struct ruby_symbols *syms;
	frame_label_fn frame_label; /* NULL: frames print as "a frame" */
	void *frame_ctx;
	struct u64map ivars;   /* class (3.1) or shape id + 1 (3.3+) -> struct id_list * */
	struct u64map locals;  /* iseq -> struct id_list * */
	struct u64map members; /* struct class -> struct id_list * */
	struct u64map classes; /* klass -> its name as a path prints it (char *) */
	struct u64map ids;     /* ID -> its name (char *; "" for none) */
};

void refs_namer_init(struct refs_namer *n, pid_t pid, const struct ruby_layout *l,
		     struct refs_meta *meta, struct class_namer *cn, struct ruby_symbols *syms);
void refs_namer_free(struct refs_namer *n);

/* The label's words into buf. */
void refs_label_text(struct refs_namer *n, const struct ref_label *l, char *buf, size_t len);
/* A root's name ("App::Store::CACHE", "req in App::Handler#call (app.rb:23)"). */
void refs_root_text(struct refs_namer *n, const struct root *r, char *buf, size_t len);
/* An object's class as a path prints it: its class, or <imemo:env>, <hidden:T_ARRAY>. */
const char *refs_class_text(struct refs_namer *n, uint64_t flags, uint64_t klass);

/* What a table read in part held, in words: "entries", "elements", "ivars", "constants"... */
const char *refs_holds_text(uint8_t holds);
/* Why it was read in part (enum refs_cut_why), in words. */
const char *refs_cut_text(uint8_t why);

#endif

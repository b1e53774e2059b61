/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The heap layer's bounds on what a target can make a census or a why walk
 * read or keep (docs/caps.md: each one's cost at the bound, and what is
 * said when it is reached); why's decoders and roots name theirs after the
 * Ruby tables and lists they bound (RUBY_MAX_*).  The page table's own bound is the ruby
 * layer's (RUBY_MAX_HEAP_PAGES), shared with the layout proof.
 */
#ifndef RBM_HEAP_CAPS_H
#define RBM_HEAP_CAPS_H
#include "ruby_caps.h"

/*
 * What a why walk may read besides the heap pages (arrays' elements, tables,
 * ivars: the decoders' pieces): HEAP_WALK_READ_PER_HEAP times the heap's
 * pages, at least HEAP_WALK_READ_MIN.  A crafted heap can point millions of
 * objects at one huge region; an honest one's pieces are about its malloc'ed
 * memory.  At ~2 GB/s of process_vm_readv, 1 GiB is half a second.
 */
#define HEAP_WALK_READ_MIN (1ull << 30)
#define HEAP_WALK_READ_PER_HEAP 4
/* The pieces of one round read into one buffer: what the buffer may grow to. */
#define HEAP_ROUND_READ_MAX (64u << 20)
/* Steps of a retainer path followed back to its root (heap/retainers.c). */
#define HEAP_MAX_PATH (1u << 20)

/* ---- why's decoders (refs_*.c) ---- */

/*
 * Entries of one st_table, or VALUEs of one array, read (a chunk at a time,
 * refs.h): the labels' u32 index.  Past it, not read, and said.  The walk's
 * read budget bounds what all tables together read.
 */
#define RUBY_MAX_ST_ENTRIES ((1ull << 32) - 1)
/* Capacity of one rb_id_table (constants, methods) read, a chunk at a time; past it, said. */
#define RUBY_MAX_ID_CAPA (1u << 26)
/* Tables read in part kept per walk, each with its object (why names them); more are counted. */
#define HEAP_MAX_PARTS 4096

/* ---- why's roots (vm_roots.c) ---- */

/* Roots kept in all: 56 bytes each, 56 MiB at the cap. */
#define RUBY_MAX_ROOTS (1u << 20)
/* Capacity of an id table read for roots (globals, constants, fiber locals). */
#define RUBY_MAX_ROOT_ID_CAPA (1u << 20)
#define RUBY_MAX_THREADS 4096
#define RUBY_MAX_FRAMES 4096		/* frames of one thread */
#define RUBY_MAX_FRAME_LOCALS 4096	/* locals of one frame */
#define RUBY_MAX_STACK_WORDS (1u << 20) /* a thread's VM stack: 8 MiB read */
#define RUBY_MAX_LIST 100000		/* at_exit procs, registered addresses */
#define RUBY_MAX_CONSTS 65536		/* constants of one module */

#endif

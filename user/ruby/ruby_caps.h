/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The ruby layer's bounds on what a target can make us read, keep or
 * compute: its heap, its names, its tables and its root lists are read
 * from a process that may be hostile.  One constant per bound,
 * here; docs/caps.md gives each one's cost at the bound and what happens
 * when it is reached (counted in model/caps.h when it cuts a report).
 */
#ifndef RBM_RUBY_CAPS_H
#define RBM_RUBY_CAPS_H

/* ---- the heap ---- */

/* Pages a heap page table may claim: 2^24 of 64 KiB is 1 TiB of heap, beyond plausible. */
#define RUBY_MAX_HEAP_PAGES (1u << 24)

/* ---- class names (classnames.c) ---- */

/* A class path is read this far to tell long names apart (the hash covers it). */
#define RUBY_MAX_NAME_READ 65536
/* Entries of a class's iv_tbl scanned for its hidden class path (3.1). */
#define RUBY_MAX_IVAR_SCAN 4096

/* ---- why's decoders (refs_*.c) ---- */

/* Entries of one st_table, or VALUEs of one array, read; past it, read in part. */
#define RUBY_MAX_ST_ENTRIES (1ull << 26)
/* Capacity of one rb_id_table (constants, methods) read. */
#define RUBY_MAX_ID_CAPA (1u << 22)

/* ---- why's roots (vm_roots.c) ---- */

/* Roots kept in all: 56 bytes each, 56 MiB at the cap. */
#define RUBY_MAX_ROOTS (1u << 20)
/* Capacity of an id table read for roots (globals, constants, fiber locals). */
#define RUBY_MAX_ROOT_ID_CAPA (1u << 20)
#define RUBY_MAX_THREADS 4096
#define RUBY_MAX_FRAMES 4096		 /* frames of one thread */
#define RUBY_MAX_FRAME_LOCALS 4096	 /* locals of one frame */
#define RUBY_MAX_STACK_WORDS (1u << 20) /* a thread's VM stack: 8 MiB read */
#define RUBY_MAX_LIST 100000		 /* at_exit procs, registered addresses */
#define RUBY_MAX_CONSTS 65536		 /* constants of one module */

#endif

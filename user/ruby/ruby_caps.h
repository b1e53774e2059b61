/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The ruby layer's bounds on what a target can make us read, keep or
 * compute: its heap page table and its names are read from a process
 * that may be hostile.  One constant per bound, here; docs/caps.md gives
 * each one's cost at the bound and what happens when it is reached
 * (counted in model/caps.h when it cuts a report).
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

#endif

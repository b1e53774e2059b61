/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What one libruby file says of itself (its version, its layout from DWARF
 * or the table corrected by its code), kept for the run by the file's
 * identity: --all and --match open every process of one Ruby, and reading
 * its DWARF took ~90 ms each time, which made Rubies that start every
 * 0.25 s queue up.  Only the file's knowledge is kept: each process's proof
 * against its own memory (layout_proof.c) still runs at its attach.
 */
#ifndef RBM_LAYOUT_CACHE_H
#define RBM_LAYOUT_CACHE_H
#include <stdbool.h>
#include "ruby_target.h"

/*
 * Fills t's version and file-derived fields from what was kept for the
 * file at host_path; false when nothing was (or the file changed since).
 */
bool layout_cache_get(const char *host_path, struct ruby_target *t);

/* Keeps t's file-derived fields for the file at host_path. */
void layout_cache_put(const char *host_path, const struct ruby_target *t);

/* Forgets everything (tests). */
void layout_cache_clear(void);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Caps hit: how often a bound on what a target can make us spend was
 * reached while reading it.  The target may be hostile (its heap crafted:
 * cycles, huge lengths, enormous tables, names megabytes long): every read
 * loop, table walk and name read is bounded (docs/caps.md lists each bound,
 * its cost and the file that holds it), and a bound that cuts what a report
 * shows is counted here, per traced process, so that the report says so:
 * one text line ("Limits reached: ...") and one JSON object
 * (limits_reached).
 *
 * The readers (process/ to probe/) count with caps_count(pid, cap) as they
 * hit a cap; the code that hands a report its facts copies the counts with
 * caps_read().  The counters are shared by every thread of the run (census
 * walkers, the call-path namer), hence atomic, and kept per process, so
 * that a run tracing several processes reports each one's own.
 */
#ifndef RBM_CAPS_H
#define RBM_CAPS_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * Each cap that can cut a report: its id and its JSON member name (declared
 * in json_keys.h too, as every member is).  Add at the end; never rename.
 */
// clang-format off
#define CAPS(X) \
	X(CAP_CLASS_NAME, class_name_cut)	/* a class name past CLASS_NAME_MAX, cut */ \
	X(CAP_FRAME_TEXT, frame_text_cut)	/* a frame's label or path past its buffer, cut */ \
	X(CAP_LINE_TABLE, line_table_skipped)	/* an iseq's line table not kept: first line */ \
	X(CAP_OWNER_SEARCH, owner_search_cut)	/* a method's owner not found within its budget */ \
	X(CAP_TABLE_READ, table_read_cut)	/* a table or array of an object read in part */ \
	X(CAP_WALK_BYTES, walk_read_budget)	/* memory not read: the heap walk's budget spent */ \
	X(CAP_ROOTS, roots_cut)			/* roots not kept, or a root list cut */ \
	X(CAP_PATH_LENGTH, path_too_long)	/* a retainer path past its length cap */
// clang-format on

enum cap_id {
#define CAP_ENUM(id, key) id,
	CAPS(CAP_ENUM)
#undef CAP_ENUM
	CAP_KINDS
};

struct caps_hit {
	uint64_t n[CAP_KINDS];
};

/* The cap's name, as in the report's text and JSON ("class_name_cut"). */
const char *caps_name(enum cap_id c);

/* Counts one hit of cap c while reading pid (thread-safe; never fails). */
void caps_count(pid_t pid, enum cap_id c);
/* Adds n hits. */
void caps_count_n(pid_t pid, enum cap_id c, uint64_t n);
/* pid's counts since the run started (zeros if none). */
void caps_read(pid_t pid, struct caps_hit *out);
/* Forgets every count (tests). */
void caps_reset(void);

bool caps_any(const struct caps_hit *h);
void caps_add(struct caps_hit *into, const struct caps_hit *from);
/* "class_name_cut 3, roots_cut 1" (the caps hit only) into buf; "" if none. */
void caps_text(const struct caps_hit *h, char *buf, size_t n);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Proved before used: every offset rbmemtrace reads is checked against the
 * live target, by invariants a wrong offset cannot pass, before any figure
 * is computed.  The checks are grouped by what depends on them, and a group
 * that fails turns off exactly that:
 *
 *   gc       vm -> objspace, GC.count, the flags, the allocation counters:
 *            ages (retained vs young), sampling, estimates, GC phases
 *   heap     the page table and pages: the census (census, top, live_end,
 *            garbage awaiting the sweep)
 *   classes  Object, BasicObject, Kernel, String read as themselves: names
 *   stacks   the main thread's frames: sites, labels, lines, call paths
 *   probes   the allocation entry points exist: tracing at all
 *   refs     constants, globals, threads, data types, shapes read as Ruby's
 *            own: retainer paths (`why`)
 *
 * What a mode refuses without, and what it only does without, is the
 * caller's (ruby_target_require).  -v lists every check.
 */
#ifndef RBM_LAYOUT_PROOF_H
#define RBM_LAYOUT_PROOF_H
#include <stdbool.h>
#include <stddef.h>

enum proof_group {
	PROOF_GC,
	PROOF_HEAP,
	PROOF_CLASSES,
	PROOF_STACKS,
	PROOF_PROBES,
	PROOF_REFS,
	PROOF_GROUPS,
};
#define PROOF_BIT(g) (1u << (g))
#define PROOF_ALL ((1u << PROOF_GROUPS) - 1)

enum proof_status {
	PROOF_UNCHECKED = 0,
	PROOF_PROVED,
	PROOF_FAILED,
};

#define PROOF_MAX_CHECKS 12

struct proof_check {
	const char *name;
	bool ok;
	char detail[128]; /* what was read, or why it does not fit */
};

struct group_proof {
	enum proof_status status;
	char why[192]; /* the first failed check, as a user reads it */
	struct proof_check checks[PROOF_MAX_CHECKS];
	unsigned int nchecks;
};

struct layout_proof {
	struct group_proof groups[PROOF_GROUPS];
	double seconds; /* what checking took */
};

/* "gc", "heap"...: the names in JSON and -v. */
const char *proof_group_name(enum proof_group g);
/* What the group gives, as the line that says it is off puts it ("heap census"). */
const char *proof_group_gives(enum proof_group g);

#endif

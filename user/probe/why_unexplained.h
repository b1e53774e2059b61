/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What a why walk leaves unexplained: what is not walked, and the heap's unexplained groups. */
#ifndef RBM_WHY_UNEXPLAINED_H
#define RBM_WHY_UNEXPLAINED_H
#include "refgraph.h"
#include "vm_roots.h"
#include "why_model.h"
#include "why_select.h"

/* What the walk did not read, in words, into r->unexplained (with its counts). */
void why_not_walked(struct why_report *r, const struct root_set *roots, const struct refs_meta *m);
/* The heap's unexplained objects grouped by their heads and named into out.  0, or -ENOMEM. */
int why_unexplained_groups(struct why_context *c, const struct refgraph *g,
			   const struct root_set *roots, struct why_report *out);

#endif

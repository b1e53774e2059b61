// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a why walk leaves unexplained, said: what is not walked (machine
 * stacks, T_DATA marked by C code by type, iseqs, fibers or generic ivars
 * that could not be read), and the heap's unexplained objects grouped by
 * their heads (heap/unexplained.h), each group named by its head's kind and
 * the likely holder of such heads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "classnames.h"
#include "clock.h"
#include "diag.h"
#include "retainers.h"
#include "unexplained.h"
#include "why_unexplained.h"

/* "1204 T_DATA objects marked by C code (time 1100, foo 100, ...)" */
static void opaque_types(const struct refs_meta *m, char *buf, size_t n)
{
	const struct data_type_info *top[3] = {NULL, NULL, NULL};
	size_t i, k, at;
	int j;

	u64map_for_each(&m->data_types, i)
	{
		const struct data_type_info *ti = m->data_types.values[i];

		for (k = 0; k < 3 && ti->objects; k++) {
			if (!top[k] || ti->objects > top[k]->objects) {
				for (j = 2; j > (int) k; j--)
					top[j] = top[j - 1];
				top[k] = ti;
				break;
			}
		}
	}
	at = (size_t) snprintf(buf, n, "%llu T_DATA objects marked by C code (",
			       (unsigned long long) m->gaps.n[GAP_OPAQUE_DATA]);
	for (k = 0; k < 3 && top[k] && at < n; k++)
		at += (size_t) snprintf(buf + at, n - at, "%s%s %llu", k ? ", " : "", top[k]->name,
					(unsigned long long) top[k]->objects);
	if (at < n)
		snprintf(buf + at, n - at, "%s)", m->opaque_types > 3 ? ", ..." : "");
}

static void say(struct why_report *r, const char *s)
{
	if (r->unexplained.nnot_walked < WHY_MAX_NOT_WALKED)
		r->unexplained.not_walked[r->unexplained.nnot_walked++] = why_intern(r, s);
}

void why_not_walked(struct why_report *r, const struct root_set *roots, const struct refs_meta *m)
{
	char buf[256];

	r->walk.conservative_roots = roots->conservative;
	if (!roots->necs || !roots->stack_words) {
		snprintf(buf, sizeof(buf), "the native machine stacks and registers of %u thread%s",
			 roots->threads, roots->threads == 1 ? "" : "s");
		say(r, buf);
	} else if (!r->walk.frozen) {
		say(r, "the registers of the thread holding the GVL (its stack read as it ran)");
	}
	if (roots->stacks_unread || roots->stacks_cut) {
		snprintf(buf, sizeof(buf), "%u machine stacks not readable, %u read in part",
			 roots->stacks_unread, roots->stacks_cut);
		say(r, buf);
	}
	if (m->gaps.n[GAP_OPAQUE_DATA]) {
		opaque_types(m, buf, sizeof(buf));
		say(r, buf);
	}
	say(r, "iseqs' literals and inline caches");
	if (!m->genivs_read) {
		say(r,
		    "generic ivars of objects that are not T_OBJECT (Ruby's table was not read)");
	} else if (m->genivs_missing) {
		snprintf(buf, sizeof(buf),
			 "the generic ivars of %llu objects the table did not hold when read",
			 (unsigned long long) m->genivs_missing);
		say(r, buf);
	}
	if (m->fibers_unproved) {
		snprintf(buf, sizeof(buf),
			 "%llu fibers whose saved context did not point back at them",
			 (unsigned long long) m->fibers_unproved);
		say(r, buf);
	}
	r->unexplained.opaque_data = m->gaps.n[GAP_OPAQUE_DATA];
	r->unexplained.unread = m->gaps.n[GAP_UNREAD];
}

/* The likely holder of heads of kind k, in words. */
static const char *cause_of(const struct unexp_group *k, const char *head)
{
	static const char *const code[] = {"iseq", "callcache", "constcache", "callinfo",
					   "ment", "cref",	"ifunc"};
	size_t i;

	if (k->type == RB_T_IMEMO) {
		for (i = 0; i < sizeof(code) / sizeof(code[0]); i++)
			if (!strcmp(ruby_imemo_name((uint32_t) k->key), code[i]))
				return "code: iseqs and their caches (not walked)";
		if (!strcmp(ruby_imemo_name((uint32_t) k->key), "svar"))
			return "frames' special variables ($~, $_: not walked)";
		return "the VM's working state (not walked)";
	}
	if (k->type == RB_T_DATA && !strncmp(head, "T_DATA ", 7))
		return "a T_DATA no walked object references: a machine stack or C code";
	if (!k->type)
		return "freed since the walk, or not readable: garbage the GC swept meanwhile";
	return "no walked object references them: iseqs' literals, a machine stack, C code";
}

static void group_name(struct why_context *c, const struct unexp_group *k, char *buf, size_t n)
{
	if (k->type == RB_T_DATA && k->key && !(k->key & 7) &&
	    (k->flags & RB_T_MASK) == RB_T_DATA) {
		const struct data_type_info *ti = refs_data_type(&c->meta, k->key);

		if (ti->name[0] && ti->name[0] != '(') {
			snprintf(buf, n, "T_DATA %s", ti->name);
			return;
		}
	}
	snprintf(buf, n, "%s", k->type ? refs_class_text(&c->names, k->flags, k->key) : "(freed)");
}

int why_unexplained_groups(struct why_context *c, const struct refgraph *g,
			   const struct root_set *roots, struct why_report *out)
{
	uint32_t *parent = malloc(((size_t) g->nnodes + 1) * sizeof(*parent));
	double t0 = now_seconds();
	struct unexp_groups u;
	char name[160];
	size_t i;
	int ret;

	if (!parent)
		return -ENOMEM;
	if (retainers_search_split(g, roots, parent, &out->walk.conservative_only) < 0) {
		free(parent);
		return -ENOMEM;
	}
	ret = unexplained_group(g, parent, &u);
	free(parent);
	if (ret)
		return ret;
	out->unexplained.in_heap = u.objects;
	out->unexplained.in_heap_young = u.young;
	for (i = 0; i < u.n && i < WHY_MAX_GROUPS; i++) {
		struct why_group wg = {
		    .objects = u.g[i].objects, .heads = u.g[i].heads, .young = u.g[i].young};

		group_name(c, &u.g[i], name, sizeof(name));
		wg.head = name;
		wg.cause = cause_of(&u.g[i], name);
		why_add_group(out, &wg);
	}
	rbm_info("why: %llu unexplained objects of %llu live, in %zu groups by their heads "
		 "(%.1f ms); %zu conservative roots from %llu words of machine stacks",
		 (unsigned long long) u.objects, (unsigned long long) g->live, u.n,
		 (now_seconds() - t0) * 1e3, roots->conservative,
		 (unsigned long long) roots->stack_words);
	unexplained_free(&u);
	return 0;
}

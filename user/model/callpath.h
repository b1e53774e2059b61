/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A call path as the report holds it: named frames, innermost first.  The
 * probing layer names what BPF recorded into these (probe/stacks.c); the
 * model and the writers only read them.
 */
#ifndef RBM_CALLPATH_H
#define RBM_CALLPATH_H
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct frame {
	const char *label; /* "Foo#bar", "block in Foo#bar", "Integer#times" */
	const char *path;  /* the file; for C methods, "<cfunc>" */
	int line;	   /* 0 for C methods and unknown lines; an eval's may be < 1 */
};

/* A C method's frame (path "<cfunc>"): it allocates for its caller. */
static inline bool frame_is_cfunc(const struct frame *f)
{
	return f->path && !strcmp(f->path, "<cfunc>");
}

/*
 * A Ruby frame whose iseq was read: not a C method nor an iseq gone before
 * it was read (path "?").
 */
static inline bool frame_is_ruby(const struct frame *f)
{
	return f->path && !frame_is_cfunc(f) && strcmp(f->path, "?");
}

struct stack {
	size_t depth;
	bool truncated;	      /* frames beyond --depth were cut */
	bool site_only;	      /* the path map was full: the allocating frame alone, for its site */
	struct frame *frames; /* innermost first */
};

/*
 * The site of a call path: its innermost frame that is not a C method (they
 * allocate for their caller).  When that frame's iseq was gone before it was
 * read, the site is that frame, path "?": its caller's line would look right
 * and be wrong.
 */
const struct frame *stack_site(const struct stack *st);

#endif

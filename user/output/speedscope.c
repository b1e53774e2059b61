// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json,
 * its spec src/lib/file-format-spec.ts): frames shared by two sampled
 * profiles, retained objects (unit "none") and retained bytes (unit
 * "bytes"), a sample per call path and class, root first with the class as
 * its leaf, weighted by what it retains (model/retained_paths.h).  A
 * period's report (trace --every) draws what is in use at its end instead,
 * and says so in the profiles' names.  The member names are speedscope's,
 * not rbmemtrace's JSON (json_keys.h): they are written as plain strings.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "json_writer.h"
#include "retained_paths.h"
#include "speedscope.h"
#include "strpool.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

/* The frames, each once: by a hash of (name, file, line) to its index + 1. */
struct frames {
	struct u64map index;
	const struct frame **v; /* NULL: a class's frame, named by names[i] */
	const char **names;
	size_t n, cap;
	uint32_t *path; /* each sample's frame indices, root first; at[i] where sample i starts */
	size_t *at, npath, path_cap;
};

static uint64_t frame_key(const char *name, const struct frame *f)
{
	uint64_t h = str_hash(name);

	if (f) {
		h = h * 31 + str_hash(f->path ? f->path : "");
		h = h * 31 + (uint64_t)(uint32_t)f->line;
	}
	return h | 1; /* never 0, the map's empty key */
}

static bool same_frame(const struct frames *fs, size_t i, const char *name, const struct frame *f)
{
	if (!!fs->v[i] != !!f || strcmp(fs->names[i], name))
		return false;
	return !f || (fs->v[i]->line == f->line &&
		      !strcmp(fs->v[i]->path ? fs->v[i]->path : "", f->path ? f->path : ""));
}

/* The index of the frame (f NULL: the class name), added if new; -ENOMEM. */
static long frame_index(struct frames *fs, const char *name, const struct frame *f)
{
	uint64_t key = frame_key(name, f);
	uintptr_t at = (uintptr_t)u64map_get(&fs->index, key);

	if (at && same_frame(fs, at - 1, name, f))
		return (long)(at - 1);
	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? fs->cap * 2 : 256;
		const struct frame **v = realloc(fs->v, cap * sizeof(*v));
		const char **names = v ? realloc(fs->names, cap * sizeof(*names)) : NULL;

		if (v)
			fs->v = v;
		if (!names)
			return -ENOMEM;
		fs->names = names;
		fs->cap = cap;
	}
	fs->v[fs->n] = f;
	fs->names[fs->n] = name;
	/* A colliding key keeps its first frame: the new one is found by no lookup, still right. */
	if (!at && u64map_put(&fs->index, key, (void *)(uintptr_t)(fs->n + 1)))
		return -ENOMEM;
	return (long)fs->n++;
}

static int push_index(struct frames *fs, long idx)
{
	if (idx < 0)
		return (int)idx;
	if (fs->npath == fs->path_cap) {
		size_t cap = fs->path_cap ? fs->path_cap * 2 : 1024;
		uint32_t *p = realloc(fs->path, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		fs->path = p;
		fs->path_cap = cap;
	}
	fs->path[fs->npath++] = (uint32_t)idx;
	return 0;
}

static const char truncated_name[] = "(frames beyond --depth)";

/* Sample i's frames, root first: (cut), the outermost frame ... the innermost, the class. */
static int add_sample(struct frames *fs, const struct retained_path *p)
{
	const struct stack *st = p->stack;
	size_t d;
	int err = 0;

	if (st && st->truncated)
		err = push_index(fs, frame_index(fs, truncated_name, NULL));
	for (d = st ? st->depth : 0; !err && d-- > 0;)
		err = push_index(fs, frame_index(fs, st->frames[d].label ? st->frames[d].label : "?",
						 &st->frames[d]));
	return err ?: push_index(fs, frame_index(fs, p->class_name, NULL));
}

static void frames_free(struct frames *fs)
{
	u64map_free(&fs->index, NULL);
	free(fs->v);
	free(fs->names);
	free(fs->path);
	free(fs->at);
}

static void write_frames(struct jw *w, const struct frames *fs)
{
	size_t i;

	jw_object(w, "shared", JW_LINES);
	jw_array(w, "frames", JW_LINES);
	for (i = 0; i < fs->n; i++) {
		const struct frame *f = fs->v[i];

		jw_object(w, NULL, JW_INLINE);
		jw_string(w, "name", fs->names[i]);
		if (f && f->path && frame_is_ruby(f))
			jw_string(w, "file", f->path);
		if (f && frame_is_ruby(f) && f->line > 0)
			jw_int(w, "line", f->line);
		jw_end(w);
	}
	jw_end(w);
	jw_end(w);
}

/* One sampled profile: the samples' stacks, weighted by objects or by bytes. */
static void write_profile(struct jw *w, const struct frames *fs, const struct retained_paths *rp,
			  bool bytes)
{
	size_t i, k;

	jw_object(w, NULL, JW_LINES);
	jw_string(w, "type", "sampled");
	jw_string(w, "name", rp->in_use ? bytes ? "in use bytes (at the period's end)"
						: "in use objects (at the period's end)"
				: bytes ? "retained bytes" : "retained objects");
	jw_string(w, "unit", bytes ? "bytes" : "none");
	jw_u64(w, "startValue", 0);
	jw_u64(w, "endValue", bytes ? rp->bytes : rp->objects);
	jw_array(w, "samples", JW_LINES);
	for (i = 0; i < rp->n; i++) {
		size_t end = i + 1 < rp->n ? fs->at[i + 1] : fs->npath;

		jw_array(w, NULL, JW_COMPACT);
		for (k = fs->at[i]; k < end; k++)
			jw_u64(w, NULL, fs->path[k]);
		jw_end(w);
	}
	jw_end(w);
	jw_array(w, "weights", JW_LINES);
	for (i = 0; i < rp->n; i++)
		jw_u64(w, NULL, bytes ? rp->v[i].bytes : rp->v[i].objects);
	jw_end(w);
	jw_end(w);
}

static void write_file(FILE *out, const struct report *r, const struct frames *fs,
		       const struct retained_paths *rp)
{
	char name[320];
	struct jw w;

	if (r->command[0])
		snprintf(name, sizeof(name), "rbmemtrace: %s (pid %d)", r->command, (int)r->pid);
	else
		snprintf(name, sizeof(name), "rbmemtrace: pid %d", (int)r->pid);
	jw_init(&w, out, 0);
	jw_object(&w, NULL, JW_LINES);
	jw_string(&w, "$schema", SPEEDSCOPE_SCHEMA);
	jw_string(&w, "exporter", "rbmemtrace " RBMEMTRACE_VERSION);
	jw_string(&w, "name", r->merged > 1 ? "rbmemtrace: merged reports" : name);
	jw_int(&w, "activeProfileIndex", 0);
	write_frames(&w, fs);
	jw_array(&w, "profiles", JW_LINES);
	write_profile(&w, fs, rp, false);
	write_profile(&w, fs, rp, true);
	jw_end(&w);
	jw_end(&w);
	fputc('\n', out);
}

int report_write_speedscope(FILE *out, const struct report *r)
{
	struct retained_paths rp;
	struct frames fs = {};
	size_t i;
	int err = report_retained_paths(r, &rp);

	if (err)
		return err;
	fs.at = calloc(rp.n ? rp.n : 1, sizeof(*fs.at));
	err = fs.at ? 0 : -ENOMEM;
	for (i = 0; !err && i < rp.n; i++) {
		fs.at[i] = fs.npath;
		err = add_sample(&fs, &rp.v[i]);
	}
	if (!err)
		write_file(out, r, &fs, &rp);
	frames_free(&fs);
	retained_paths_free(&rp);
	return err;
}

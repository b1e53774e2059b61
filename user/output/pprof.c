// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof output: a gzip-compressed profile.proto (our proto/profile.proto,
 * encoded by protobuf-c) that `go tool pprof` and every pprof reader take
 * for a Go heap profile: the sample types are Go's, alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes.
 *
 * One sample per process, call path, class and age (model_ops.h computes
 * them): its locations are the Ruby frames, innermost first, under a leaf
 * location for the class itself, "Foo (object)", so that -top lists what is
 * kept and the frames above it where.  Labels: class, host, process,
 * ruby_version (strings), pid and age (numbers, for -tagfocus pid=1234 and
 * age=5: ranges).  This writer only encodes what the model computed.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "escape.h"
#include "profile.pb-c.h"
#include "strpool.h"
#include "writers.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

#define NVALUES 4
#define MAX_LABELS 6
#define MAX_COMMENTS 8

/*
 * Unique ids for strings: the string table, and keys that stand for a
 * function ("name\x1ffile") or a location ("name\x1ffile\x1fline").  Keys
 * are hashed; a collision (another key, same hash) moves on to a derived one.
 */
struct idmap {
	struct u64map by_hash; /* hash -> index + 1 */
	char **keys;
	size_t n, cap;
};

/* The index of key, added (copied) if new; -1 when out of memory. */
static ssize_t idmap_get(struct idmap *m, const char *key, bool *added)
{
	uint64_t h = str_hash(key);
	uintptr_t at;
	char **keys;

	for (;;) {
		at = (uintptr_t)u64map_get(&m->by_hash, h);
		if (!at || !strcmp(m->keys[at - 1], key))
			break;
		h = h * 31 + 7 ? h * 31 + 7 : 1;
	}
	*added = !at;
	if (at)
		return (ssize_t)(at - 1);
	if (m->n == m->cap) {
		keys = realloc(m->keys, (m->cap ? m->cap * 2 : 256) * sizeof(*keys));
		if (!keys)
			return -1;
		m->keys = keys;
		m->cap = m->cap ? m->cap * 2 : 256;
	}
	m->keys[m->n] = strdup(key);
	if (!m->keys[m->n] || u64map_put(&m->by_hash, h, (void *)(uintptr_t)(m->n + 1))) {
		free(m->keys[m->n]);
		return -1;
	}
	return (ssize_t)m->n++;
}

static void idmap_free(struct idmap *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->keys[i]);
	free(m->keys);
	u64map_free(&m->by_hash, NULL);
}

/* A location and its one line; pointers between them are set once all are made. */
struct loc_entry {
	Location loc;
	Line line;
	Line *linep;
};

struct sample_entry {
	Sample s;
	uint64_t *locs;
	int64_t values[NVALUES];
	Label labels[MAX_LABELS];
	Label *label_ptrs[MAX_LABELS];
};

/* The profile being built; its string table is strings.keys. */
struct builder {
	Profile p;
	struct idmap strings, functions, locations;
	Function *funcs; /* function i has id i + 1, as location i */
	struct loc_entry *locs;
	struct sample_entry *samples;
	size_t funcs_cap, locs_cap, samples_cap, nsamples;
	bool oom;
};

static void *grow(void *v, size_t *cap, size_t n, size_t size, bool *oom)
{
	void *bigger;

	if (n < *cap)
		return v;
	bigger = realloc(v, (*cap ? *cap * 2 : 256) * size);
	if (!bigger) {
		*oom = true;
		return NULL;
	}
	*cap = *cap ? *cap * 2 : 256;
	return bigger;
}

static bool is_utf8(const char *s)
{
	size_t len;

	for (; *s; s += len)
		if (!(len = utf8_sequence_len((const unsigned char *)s)))
			return false;
	return true;
}

/* Target strings may be invalid UTF-8, which protobuf strings must not be: U+FFFD. */
static char *to_utf8(const char *s)
{
	size_t n = strlen(s), i, o = 0, len;
	char *copy = malloc(n * 3 + 1);

	if (!copy)
		return NULL;
	for (i = 0; i < n; i += len ? len : 1) {
		len = utf8_sequence_len((const unsigned char *)s + i);
		memcpy(copy + o, len ? s + i : "\xef\xbf\xbd", len ? len : 3);
		o += len ? len : 3;
	}
	copy[o] = '\0';
	return copy;
}

static int64_t str_id(struct builder *b, const char *s)
{
	char *clean = is_utf8(s) ? NULL : to_utf8(s);
	bool added;
	ssize_t id;

	if (!is_utf8(s) && !clean) {
		b->oom = true;
		return 0;
	}
	id = idmap_get(&b->strings, clean ? clean : s, &added);
	free(clean);
	if (id < 0) {
		b->oom = true;
		return 0;
	}
	return id;
}

static uint64_t function_id(struct builder *b, const char *name, const char *file)
{
	Function init = PERFTOOLS__PROFILES__FUNCTION__INIT, *f;
	char *key = NULL;
	bool added;
	ssize_t id;

	if (asprintf(&key, "%s\x1f%s", name, file) < 0) {
		b->oom = true;
		return 0;
	}
	id = idmap_get(&b->functions, key, &added);
	free(key);
	if (id < 0 || !(f = grow(b->funcs, &b->funcs_cap, id, sizeof(*f), &b->oom))) {
		b->oom = true;
		return 0;
	}
	b->funcs = f;
	if (added) {
		f[id] = init;
		f[id].id = id + 1;
		/*
		 * No system name: pprof demangles a function whose name is its
		 * system name, and would cut "<top (required)>" or "Foo (object)"
		 * as if they were C++ parameters.
		 */
		f[id].name = str_id(b, name);
		f[id].filename = str_id(b, file);
	}
	return id + 1;
}

static uint64_t location_id(struct builder *b, const char *name, const char *file, int line)
{
	Location init = PERFTOOLS__PROFILES__LOCATION__INIT;
	Line line_init = PERFTOOLS__PROFILES__LINE__INIT;
	struct loc_entry *l;
	char *key = NULL;
	bool added;
	ssize_t id;

	if (asprintf(&key, "%s\x1f%s\x1f%d", name, file, line) < 0) {
		b->oom = true;
		return 0;
	}
	id = idmap_get(&b->locations, key, &added);
	free(key);
	if (id < 0 || !(l = grow(b->locs, &b->locs_cap, id, sizeof(*l), &b->oom))) {
		b->oom = true;
		return 0;
	}
	b->locs = l;
	if (added) {
		l[id].loc = init;
		l[id].loc.id = id + 1;
		l[id].loc.mapping_id = 1;
		l[id].line = line_init;
		l[id].line.line = line;
		l[id].line.function_id = function_id(b, name, file);
	}
	return id + 1;
}

static void add_label(struct sample_entry *e, struct builder *b, const char *key,
		      const char *str, int64_t num)
{
	Label init = PERFTOOLS__PROFILES__LABEL__INIT, *l = &e->labels[e->s.n_label++];

	*l = init;
	l->key = str_id(b, key);
	if (str)
		l->str = str_id(b, str);
	else
		l->num = num;
}

static void add_sample(struct builder *b, const struct report *r, const struct profile_row *row)
{
	Sample init = PERFTOOLS__PROFILES__SAMPLE__INIT;
	const struct stack *st = row->stack;
	struct sample_entry *e;
	char *leaf = NULL;
	size_t i, n = 0;

	e = grow(b->samples, &b->samples_cap, b->nsamples, sizeof(*e), &b->oom);
	if (!e)
		return;
	b->samples = e;
	e = &b->samples[b->nsamples];
	memset(e, 0, sizeof(*e));
	e->s = init;
	e->locs = calloc((st ? st->depth : 0) + 2, sizeof(*e->locs));
	if (!e->locs || asprintf(&leaf, "%s (object)", row->class_name) < 0) {
		free(e->locs);
		b->oom = true;
		return;
	}
	b->nsamples++;
	/* The class is the leaf: -top puts what is kept first, its callers above. */
	e->locs[n++] = location_id(b, leaf, "", 0);
	free(leaf);
	for (i = 0; st && i < st->depth; i++)
		e->locs[n++] = location_id(b, st->frames[i].label, st->frames[i].path,
					   st->frames[i].line);
	if (st && st->truncated)
		e->locs[n++] = location_id(b, "(frames beyond --depth)", "", 0);
	e->s.n_location_id = n;
	e->values[0] = (int64_t)row->alloc_objects;
	e->values[1] = (int64_t)row->alloc_bytes;
	e->values[2] = (int64_t)row->inuse_objects;
	e->values[3] = (int64_t)row->inuse_bytes;
	add_label(e, b, "class", row->class_name, 0);
	add_label(e, b, "pid", NULL, r->pid);
	if (r->host[0])
		add_label(e, b, "host", r->host, 0);
	if (r->command[0])
		add_label(e, b, "process", r->command, 0);
	add_label(e, b, "ruby_version", r->ruby_version, 0);
	/*
	 * Young objects (age 0) and those of unknown age get none: pprof drops a
	 * numeric label of 0, and a unit would make -tagfocus age=5: need one too.
	 */
	if (row->age > 0)
		add_label(e, b, "age", NULL, row->age);
}

/* What a reader of a period's profile must know of a process: gone, or not sampled. */
static void period_comment(struct builder *b, const struct report *r, int64_t *comments)
{
	char line[160];

	if (r->period.target_gone)
		snprintf(line, sizeof(line),
			 "PID %d has exited: this is its last profile (period %" PRIu64 ")", r->pid,
			 r->period.number);
	else if (r->period.untraced)
		snprintf(line, sizeof(line),
			 "PID %d: no sampled window traced an allocation in this period: "
			 "its allocations are on no call path",
			 r->pid);
	else
		return;
	comments[b->p.n_comment++] = str_id(b, line);
}

/* Go's heap profile types, in Go's order, so pprof tools treat this as one. */
static const char *const sample_types[NVALUES][2] = {
	{"alloc_objects", "count"},
	{"alloc_space", "bytes"},
	{"inuse_objects", "count"},
	{"inuse_space", "bytes"},
};

/*
 * Fills the profile's header.  The period says how the counts were taken:
 * 1 when every allocation was traced; under sampling, the largest scale of
 * the processes, for information (the values are already scaled).
 */
static void set_header(struct builder *b, const struct model_view *v, ValueType *types,
		       ValueType **type_ptrs, ValueType *period_type, int64_t *comments)
{
	ValueType init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	double duration = 0, scale = 1, time = 0;
	bool period = false;
	size_t i;

	str_id(b, ""); /* string 0 */
	for (i = 0; i < NVALUES; i++) {
		types[i] = init;
		types[i].type = str_id(b, sample_types[i][0]);
		types[i].unit = str_id(b, sample_types[i][1]);
		type_ptrs[i] = &types[i];
	}
	b->p.n_sample_type = NVALUES;
	b->p.sample_type = type_ptrs;
	/* Objects are what was counted; bytes are an estimate (see model_ops.h). */
	b->p.default_sample_type = types[2].type;
	*period_type = init;
	period_type->type = str_id(b, "space");
	period_type->unit = str_id(b, "bytes");
	b->p.period_type = period_type;
	for (i = 0; i < v->model->nprocs; i++) {
		const struct report *r = v->model->procs[i];
		const struct period_info *pi = &r->period;

		if (pi->on) {
			/* A period: its own length, ending at its census (time_nanos). */
			if (pi->duration_s > duration)
				duration = pi->duration_s;
			if (pi->time > time)
				time = pi->time;
			if (pi->estimated && pi->scale > scale)
				scale = pi->scale;
			period = true;
			continue;
		}
		if (r->duration_s > duration)
			duration = r->duration_s;
		if (r->have_estimates && r->sampling.scale > scale)
			scale = r->sampling.scale;
	}
	b->p.period = (int64_t)(scale + 0.5);
	b->p.duration_nanos = (int64_t)(duration * 1e9);
	b->p.time_nanos = (int64_t)(time * 1e9);
	if (period) {
		comments[0] = str_id(b, "rbmemtrace " RBMEMTRACE_VERSION
					"; inuse = the heap census's live objects and bytes of each "
					"class at the period's end, on the call paths traced objects give");
		comments[1] = str_id(b, "alloc = allocated during the period (its duration), "
					"not since the process started");
	} else {
		comments[0] = str_id(b, "rbmemtrace " RBMEMTRACE_VERSION
					"; inuse = retained + young objects (alive at the end)");
		comments[1] = str_id(b, "bytes: the census's bytes per object of the class, "
					"else 40 per object (one Ruby heap slot)");
	}
	b->p.n_comment = 2;
	for (i = 0; period && i < v->model->nprocs && b->p.n_comment < MAX_COMMENTS; i++)
		period_comment(b, v->model->procs[i], comments);
	b->p.comment = comments;
}

/*
 * One mapping, "ruby", with functions, files and lines all known: pprof
 * names the main binary after it and never tries to symbolize anything.
 */
static Perftools__Profiles__Mapping mapping = PERFTOOLS__PROFILES__MAPPING__INIT;
static Perftools__Profiles__Mapping *mappings[] = {&mapping};

/* Pointers between the parts, once no array moves any more. */
static int link_parts(struct builder *b)
{
	size_t i;

	mapping.id = 1;
	mapping.filename = str_id(b, "ruby");
	mapping.has_functions = mapping.has_filenames = mapping.has_line_numbers = true;
	b->p.mapping = mappings;
	b->p.n_mapping = 1;

	b->p.function = calloc(b->functions.n + 1, sizeof(*b->p.function));
	b->p.location = calloc(b->locations.n + 1, sizeof(*b->p.location));
	b->p.sample = calloc(b->nsamples + 1, sizeof(*b->p.sample));
	if (!b->p.function || !b->p.location || !b->p.sample)
		return -ENOMEM;
	for (i = 0; i < b->functions.n; i++)
		b->p.function[i] = &b->funcs[i];
	b->p.n_function = b->functions.n;
	for (i = 0; i < b->locations.n; i++) {
		struct loc_entry *l = &b->locs[i];

		l->linep = &l->line;
		l->loc.line = &l->linep;
		l->loc.n_line = 1;
		b->p.location[i] = &l->loc;
	}
	b->p.n_location = b->locations.n;
	for (i = 0; i < b->nsamples; i++) {
		struct sample_entry *e = &b->samples[i];
		size_t j;

		for (j = 0; j < e->s.n_label; j++)
			e->label_ptrs[j] = &e->labels[j];
		e->s.label = e->label_ptrs;
		e->s.location_id = e->locs;
		e->s.value = e->values;
		e->s.n_value = NVALUES;
		b->p.sample[i] = &e->s;
	}
	b->p.n_sample = b->nsamples;
	b->p.string_table = b->strings.keys;
	b->p.n_string_table = b->strings.n;
	return 0;
}

/* pprof files are gzip-compressed: deflate with a gzip wrapper, straight to out. */
static int write_gzip(FILE *out, const uint8_t *buf, size_t len)
{
	unsigned char chunk[65536];
	z_stream z = {};
	int ret;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)buf;
	z.avail_in = len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		ret = deflate(&z, Z_FINISH);
		if (ret == Z_STREAM_ERROR)
			break;
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) != sizeof(chunk) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (ret != Z_STREAM_END);
	deflateEnd(&z);
	return ret == Z_STREAM_END ? 0 : -EIO;
}

static void free_builder(struct builder *b)
{
	size_t i;

	for (i = 0; i < b->nsamples; i++)
		free(b->samples[i].locs);
	free(b->samples);
	free(b->funcs);
	free(b->locs);
	free(b->p.function);
	free(b->p.location);
	free(b->p.sample);
	idmap_free(&b->strings);
	idmap_free(&b->functions);
	idmap_free(&b->locations);
}

int model_write_pprof(FILE *out, const struct model_view *v)
{
	Profile init = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType types[NVALUES], *type_ptrs[NVALUES], period_type;
	struct builder b = {.p = init};
	int64_t comments[MAX_COMMENTS];
	uint8_t *buf = NULL;
	size_t i, j, len;
	int err = 0;

	set_header(&b, v, types, type_ptrs, &period_type, comments);
	for (i = 0; !b.oom && i < v->model->nprocs; i++) {
		const struct report *r = v->model->procs[i];
		struct profile_row *rows;
		size_t n;

		if (report_profile_rows(r, &rows, &n)) {
			b.oom = true;
			break;
		}
		for (j = 0; j < n && !b.oom; j++)
			add_sample(&b, r, &rows[j]);
		free(rows);
	}
	if (b.oom || link_parts(&b))
		err = -ENOMEM;
	if (!err) {
		len = perftools__profiles__profile__get_packed_size(&b.p);
		buf = malloc(len + 1);
		if (!buf)
			err = -ENOMEM;
	}
	if (!err) {
		perftools__profiles__profile__pack(&b.p, buf);
		err = write_gzip(out, buf, len);
	}
	free(buf);
	free_builder(&b);
	return err;
}

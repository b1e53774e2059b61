// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* pprof_build.h: one profile.proto built and packed. */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "escape.h"
#include "pprof_build.h"
#include "strpool.h"

/* The index of key, added (copied) if new; -1 when out of memory. */
static ssize_t pb_idmap_get(struct idmap *m, const char *key, bool *added)
{
	uint64_t h = str_hash(key);
	uintptr_t at;
	char **keys;

	for (;;) {
		at = (uintptr_t) u64map_get(&m->by_hash, h);
		if (!at || !strcmp(m->keys[at - 1], key))
			break;
		h = h * 31 + 7 ? h * 31 + 7 : 1;
	}
	*added = !at;
	if (at)
		return (ssize_t) (at - 1);
	if (m->n == m->cap) {
		keys = realloc(m->keys, (m->cap ? m->cap * 2 : 256) * sizeof(*keys));
		if (!keys)
			return -1;
		m->keys = keys;
		m->cap = m->cap ? m->cap * 2 : 256;
	}
	m->keys[m->n] = strdup(key);
	if (!m->keys[m->n] || u64map_put(&m->by_hash, h, (void *) (uintptr_t) (m->n + 1))) {
		free(m->keys[m->n]);
		return -1;
	}
	return (ssize_t) m->n++;
}

static void pb_idmap_free(struct idmap *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->keys[i]);
	free(m->keys);
	u64map_free(&m->by_hash, NULL);
}

void *pb_grow(void *v, size_t *cap, size_t n, size_t size, bool *oom)
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

static bool pb_is_utf8(const char *s)
{
	size_t len;

	for (; *s; s += len)
		if (!(len = utf8_sequence_len((const unsigned char *) s)))
			return false;
	return true;
}

/* Target strings may be invalid UTF-8, which protobuf strings must not be: U+FFFD. */
static char *pb_to_utf8(const char *s)
{
	size_t n = strlen(s), i, o = 0, len;
	char *copy = malloc(n * 3 + 1);

	if (!copy)
		return NULL;
	for (i = 0; i < n; i += len ? len : 1) {
		len = utf8_sequence_len((const unsigned char *) s + i);
		memcpy(copy + o, len ? s + i : "\xef\xbf\xbd", len ? len : 3);
		o += len ? len : 3;
	}
	copy[o] = '\0';
	return copy;
}

int64_t pb_str_id(struct builder *b, const char *s)
{
	char *clean = pb_is_utf8(s) ? NULL : pb_to_utf8(s);
	bool added;
	ssize_t id;

	if (!pb_is_utf8(s) && !clean) {
		b->oom = true;
		return 0;
	}
	id = pb_idmap_get(&b->strings, clean ? clean : s, &added);
	free(clean);
	if (id < 0) {
		b->oom = true;
		return 0;
	}
	return id;
}

uint64_t pb_function_id(struct builder *b, const char *name, const char *file)
{
	Function init = PERFTOOLS__PROFILES__FUNCTION__INIT, *f;
	char *key = NULL;
	bool added;
	ssize_t id;

	if (asprintf(&key, "%s\x1f%s", name, file) < 0) {
		b->oom = true;
		return 0;
	}
	id = pb_idmap_get(&b->functions, key, &added);
	free(key);
	if (id < 0 || !(f = pb_grow(b->funcs, &b->funcs_cap, id, sizeof(*f), &b->oom))) {
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
		f[id].name = pb_str_id(b, name);
		f[id].filename = pb_str_id(b, file);
	}
	return id + 1;
}

uint64_t pb_location_id(struct builder *b, const char *name, const char *file, int line)
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
	id = pb_idmap_get(&b->locations, key, &added);
	free(key);
	if (id < 0 || !(l = pb_grow(b->locs, &b->locs_cap, id, sizeof(*l), &b->oom))) {
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
		l[id].line.function_id = pb_function_id(b, name, file);
	}
	return id + 1;
}

void pb_add_label(struct sample_entry *e, struct builder *b, const char *key, const char *str,
		  int64_t num)
{
	Label init = PERFTOOLS__PROFILES__LABEL__INIT, *l = &e->labels[e->s.n_label++];

	*l = init;
	l->key = pb_str_id(b, key);
	if (str)
		l->str = pb_str_id(b, str);
	else
		l->num = num;
}

/*
 * One mapping, "ruby", with functions, files and lines all known: pprof
 * names the main binary after it and never tries to symbolize anything.
 */
static Perftools__Profiles__Mapping mapping = PERFTOOLS__PROFILES__MAPPING__INIT;
static Perftools__Profiles__Mapping *mappings[] = {&mapping};

/* Pointers between the parts, once no array moves any more.  0 or -ENOMEM. */
static int link_parts(struct builder *b)
{
	size_t i;

	mapping.id = 1;
	mapping.filename = pb_str_id(b, "ruby");
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
		e->s.n_value = b->nvalues ? b->nvalues : NVALUES;
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
	z.next_in = (uint8_t *) buf;
	z.avail_in = len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		ret = deflate(&z, Z_FINISH);
		if (ret == Z_STREAM_ERROR)
			break;
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
		    sizeof(chunk) - z.avail_out) {
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
	pb_idmap_free(&b->strings);
	pb_idmap_free(&b->functions);
	pb_idmap_free(&b->locations);
}

int pb_write_profile(struct builder *b, FILE *out)
{
	uint8_t *buf = NULL;
	size_t len;
	int err = 0;

	if (b->oom || link_parts(b))
		err = -ENOMEM;
	if (!err) {
		len = perftools__profiles__profile__get_packed_size(&b->p);
		buf = malloc(len + 1);
		if (!buf)
			err = -ENOMEM;
	}
	if (!err) {
		perftools__profiles__profile__pack(&b->p, buf);
		err = write_gzip(out, buf, len);
	}
	free(buf);
	free_builder(b);
	return err;
}

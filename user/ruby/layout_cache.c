// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "layout_cache.h"

/* A run sees few distinct libruby files: the oldest entry makes room. */
#define LAYOUT_CACHE_FILES 8

/*
 * A file is the same while its device, inode, size and change time are:
 * ctime moves on every write and cannot be set back by its owner, so a
 * file rewritten in place (a container's, say) is read again.
 */
struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

struct entry {
	struct file_id id;
	char version[32];
	struct ruby_layout layout;
	char layout_from[PATH_MAX + 64];
	char layout_code_diff[320];
	struct layout_decoded decoded;
	double decode_seconds;
	const struct ruby_alloc_points *alloc;
	bool has_usdt;
};

static struct {
	pthread_mutex_t lock;
	struct entry *e[LAYOUT_CACHE_FILES];
	unsigned int next; /* the slot the next new file takes */
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool file_id_of(const char *path, struct file_id *id)
{
	struct stat st;

	if (stat(path, &st))
		return false;
	memset(id, 0, sizeof(*id));
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->size = st.st_size;
	id->mtime = st.st_mtim;
	id->ctime = st.st_ctim;
	return true;
}

static bool same_file(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

bool layout_cache_get(const char *host_path, struct ruby_target *t)
{
	struct file_id id;
	bool found = false;
	unsigned int i;

	if (!file_id_of(host_path, &id))
		return false;
	pthread_mutex_lock(&cache.lock);
	for (i = 0; i < LAYOUT_CACHE_FILES && !found; i++) {
		const struct entry *e = cache.e[i];

		if (!e || !same_file(&e->id, &id))
			continue;
		memcpy(t->version, e->version, sizeof(t->version));
		t->layout = e->layout;
		memcpy(t->layout_from, e->layout_from, sizeof(t->layout_from));
		memcpy(t->layout_code_diff, e->layout_code_diff, sizeof(t->layout_code_diff));
		t->decoded = e->decoded;
		t->decode_seconds = e->decode_seconds;
		t->alloc = e->alloc;
		t->has_usdt = e->has_usdt;
		found = true;
	}
	pthread_mutex_unlock(&cache.lock);
	return found;
}

void layout_cache_put(const char *host_path, const struct ruby_target *t)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (!e)
		return;
	if (!file_id_of(host_path, &e->id)) {
		free(e);
		return;
	}
	memcpy(e->version, t->version, sizeof(e->version));
	e->layout = t->layout;
	memcpy(e->layout_from, t->layout_from, sizeof(e->layout_from));
	memcpy(e->layout_code_diff, t->layout_code_diff, sizeof(e->layout_code_diff));
	e->decoded = t->decoded;
	e->decode_seconds = t->decode_seconds;
	e->alloc = t->alloc;
	e->has_usdt = t->has_usdt;
	pthread_mutex_lock(&cache.lock);
	free(cache.e[cache.next]);
	cache.e[cache.next] = e;
	cache.next = (cache.next + 1) % LAYOUT_CACHE_FILES;
	pthread_mutex_unlock(&cache.lock);
}

void layout_cache_clear(void)
{
	unsigned int i;

	pthread_mutex_lock(&cache.lock);
	for (i = 0; i < LAYOUT_CACHE_FILES; i++) {
		free(cache.e[i]);
		cache.e[i] = NULL;
	}
	cache.next = 0;
	pthread_mutex_unlock(&cache.lock);
}

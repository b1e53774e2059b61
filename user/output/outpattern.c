// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "outpattern.h"

static const struct {
	const char *name;
	unsigned bit;
} fields[] = {
    {"pid", OUTPATTERN_PID},
    {"time", OUTPATTERN_TIME},
    {"host", OUTPATTERN_HOST},
};

/* The field at p ("%{...}"): its bit and length, or 0 when unknown or unterminated. */
static unsigned field_at(const char *p, size_t *len)
{
	size_t i, l;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		l = strlen(fields[i].name);
		if (!strncmp(p + 2, fields[i].name, l) && p[2 + l] == '}') {
			*len = l + 3;
			return fields[i].bit;
		}
	}
	return 0;
}

int outpattern_check(const char *pattern, unsigned *uses, char *err, size_t n)
{
	const char *p;
	size_t len;
	unsigned bit;

	*uses = 0;
	if (!*pattern) {
		snprintf(err, n, "invalid -o PATTERN: it is empty");
		return -EINVAL;
	}
	for (p = pattern; *p; p++) {
		if (*p != '%')
			continue;
		if (p[1] == '%') {
			p++;
			continue;
		}
		bit = p[1] == '{' ? field_at(p, &len) : 0;
		if (!bit) {
			snprintf(err, n,
				 "invalid -o PATTERN %s: '%%' at offset %zu must start %%{pid}, "
				 "%%{time}, %%{host} or %%%%",
				 pattern, (size_t) (p - pattern));
			return -EINVAL;
		}
		*uses |= bit;
		p += len - 1;
	}
	return 0;
}

/* Appends s to out[*o..n); false when it does not fit. */
static bool put(char *out, size_t n, size_t *o, const char *s, size_t len)
{
	if (*o + len >= n)
		return false;
	memcpy(out + *o, s, len);
	*o += len;
	return true;
}

int outpattern_expand(const char *pattern, pid_t pid, time_t t, const char *host, char *out,
		      size_t n)
{
	char buf[256];
	const char *p;
	size_t o = 0, len, i;
	struct tm tm;
	unsigned bit;

	if (!n)
		return -ENAMETOOLONG;
	for (p = pattern; *p; p++) {
		if (*p != '%') {
			if (!put(out, n, &o, p, 1))
				return -ENAMETOOLONG;
			continue;
		}
		if (p[1] == '%') {
			if (!put(out, n, &o, "%", 1))
				return -ENAMETOOLONG;
			p++;
			continue;
		}
		bit = p[1] == '{' ? field_at(p, &len) : 0;
		if (bit == OUTPATTERN_PID) {
			snprintf(buf, sizeof(buf), "%d", (int) pid);
		} else if (bit == OUTPATTERN_TIME) {
			/* UTC, so that names sort by time and mean the same on every host. */
			if (!gmtime_r(&t, &tm))
				return -EINVAL;
			strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
		} else if (bit == OUTPATTERN_HOST) {
			/* Ours, but a name must stay one path component. */
			snprintf(buf, sizeof(buf), "%s", host && *host ? host : "localhost");
			for (i = 0; buf[i]; i++)
				if (buf[i] == '/')
					buf[i] = '_';
		} else {
			return -EINVAL;
		}
		if (!put(out, n, &o, buf, strlen(buf)))
			return -ENAMETOOLONG;
		p += len - 1;
	}
	out[o] = '\0';
	return 0;
}

char *keep_ring_push(struct keep_ring *k, const char *path)
{
	char *copy, *gone = NULL, **paths;

	if (!k->keep)
		return NULL;
	if (k->n && !strcmp(k->paths[k->n - 1], path))
		return NULL;
	copy = strdup(path);
	if (!copy)
		return NULL;
	if (k->n == k->keep) {
		gone = k->paths[0];
		memmove(k->paths, k->paths + 1, (k->n - 1) * sizeof(*k->paths));
		k->n--;
	} else if (!k->paths) {
		paths = calloc(k->keep, sizeof(*paths));
		if (!paths) {
			free(copy);
			return NULL;
		}
		k->paths = paths;
	}
	k->paths[k->n++] = copy;
	return gone;
}

void keep_ring_free(struct keep_ring *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		free(k->paths[i]);
	free(k->paths);
	k->paths = NULL;
	k->n = 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdatomic.h>
#include <string.h>
#include "caps.h"

/*
 * One row per process read in this run, claimed at its first hit.  A run
 * reads at most RBM_MAX_SLOTS (256) traced processes at once; past CAPS_PROCS
 * processes that hit a cap, the others' hits are counted in no report (they
 * are rare: a cap is hit by a hostile or broken target, not by many).
 */
#define CAPS_PROCS 512

static struct {
	atomic_int pid; /* 0: free */
	atomic_uint_fast64_t n[CAP_KINDS];
} procs[CAPS_PROCS];

static const char *const names[CAP_KINDS] = {
#define CAP_NAME(id, key) [id] = #key,
    CAPS(CAP_NAME)
#undef CAP_NAME
};

const char *caps_name(enum cap_id c)
{
	return (unsigned int) c < CAP_KINDS ? names[c] : "?";
}

/* pid's row, claimed if it has none (claim: true); NULL when none is free. */
static int row_of(pid_t pid, bool claim)
{
	int i;

	for (i = 0; i < CAPS_PROCS; i++) {
		int seen = atomic_load(&procs[i].pid);

		if (seen == pid)
			return i;
		if (!seen) {
			int expected = 0;

			if (!claim)
				return -1; /* rows are claimed in order: pid has none */
			if (atomic_compare_exchange_strong(&procs[i].pid, &expected, pid) ||
			    expected == pid)
				return i;
		}
	}
	return -1;
}

void caps_count_n(pid_t pid, enum cap_id c, uint64_t n)
{
	int i;

	if ((unsigned int) c >= CAP_KINDS || !n || pid <= 0)
		return;
	i = row_of(pid, true);
	if (i >= 0)
		atomic_fetch_add(&procs[i].n[c], n);
}

void caps_count(pid_t pid, enum cap_id c)
{
	caps_count_n(pid, c, 1);
}

void caps_read(pid_t pid, struct caps_hit *out)
{
	int i = pid > 0 ? row_of(pid, false) : -1, c;

	memset(out, 0, sizeof(*out));
	for (c = 0; i >= 0 && c < CAP_KINDS; c++)
		out->n[c] = atomic_load(&procs[i].n[c]);
}

void caps_reset(void)
{
	int i, c;

	for (i = 0; i < CAPS_PROCS; i++) {
		atomic_store(&procs[i].pid, 0);
		for (c = 0; c < CAP_KINDS; c++)
			atomic_store(&procs[i].n[c], 0);
	}
}

bool caps_any(const struct caps_hit *h)
{
	int c;

	for (c = 0; c < CAP_KINDS; c++)
		if (h->n[c])
			return true;
	return false;
}

void caps_add(struct caps_hit *into, const struct caps_hit *from)
{
	int c;

	for (c = 0; c < CAP_KINDS; c++)
		into->n[c] += from->n[c];
}

void caps_text(const struct caps_hit *h, char *buf, size_t n)
{
	size_t at = 0;
	int c;

	if (!n)
		return;
	buf[0] = '\0';
	for (c = 0; c < CAP_KINDS && at < n; c++) {
		int k;

		if (!h->n[c])
			continue;
		k = snprintf(buf + at, n - at, "%s%s %llu", at ? ", " : "", names[c],
			     (unsigned long long) h->n[c]);
		if (k < 0)
			break;
		at += (size_t) k;
	}
}

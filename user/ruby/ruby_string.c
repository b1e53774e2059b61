// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include "rbmemtrace.h"
#include "ruby_string.h"
#include "target_mem.h"

int ruby_read_string(pid_t pid, const struct ruby_layout *off, uint64_t str, char *buf, size_t n)
{
	uint64_t full;

	return ruby_read_string_full(pid, off, str, buf, n, &full);
}

int ruby_read_string_full(pid_t pid, const struct ruby_layout *off, uint64_t str, char *buf,
			  size_t n, uint64_t *full)
{
	uint64_t hdr[4], len, ptr;
	int ret;

	*full = 0;
	if (!n)
		return -EINVAL;
	ret = target_read(pid, str, hdr, sizeof(hdr));
	if (ret)
		return ret;
	if ((hdr[0] & RB_T_MASK) != RB_T_STRING)
		return -EINVAL;
	if (hdr[0] & off->rstring_noembed) {
		len = hdr[off->rstring_heap_len / 8];
		ptr = hdr[off->rstring_heap_ptr / 8];
	} else {
		len = (hdr[0] & off->rstring_embed_len_mask) >> off->rstring_embed_len_shift;
		ptr = str + off->rstring_embed_start;
	}
	if (off->rstring_len) /* 3.2+: RString.len, embedded or not */
		len = hdr[off->rstring_len / 8];
	/* the length is the target's word: n bounds what is read, whatever it says */
	*full = len;
	if (len >= n)
		len = n - 1;
	ret = target_read(pid, ptr, buf, len);
	if (ret)
		return ret;
	buf[len] = '\0';
	/* Ruby strings may hold NULs; the name ends at the first. */
	return 0;
}

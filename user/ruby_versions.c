// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "ruby_versions.h"

static const struct ruby_offsets ruby_versions[] = {
	{
		.series = "3.1",
		.verified = "3.1.2, 3.1.7",
		.source = "offsetof() against rb_mjit_min_header-3.1.7.h (ruby3.1-dev)",
		.rclass_ext = 24,
		.classext_iv_tbl = 8,
		.classext_allocator = 96,
		.fl_singleton = 0x1000,
		.st_entries_start = 32,
		.st_entries_bound = 40,
		.st_entries = 48,
		.st_entry_size = 24,
		.rstring_noembed = 0x2000,
		.rstring_embed_len_mask = 0x7c000,
		.rstring_embed_len_shift = 14,
		.rstring_embed_start = 16,
		.rstring_heap_len = 16,
		.rstring_heap_ptr = 24,
		.vm_objspace = 1112,
		.objspace_compact_count = 0,
	},
};

const struct ruby_offsets *ruby_offsets_for(const char *version)
{
	size_t i, len;

	for (i = 0; i < sizeof(ruby_versions) / sizeof(ruby_versions[0]); i++) {
		len = strlen(ruby_versions[i].series);
		/* "3.1" matches "3.1" and "3.1.7", not "3.10.0" */
		if (strncmp(version, ruby_versions[i].series, len) == 0 &&
		    (version[len] == '\0' || version[len] == '.'))
			return &ruby_versions[i];
	}
	return NULL;
}

const char *ruby_supported_series(void)
{
	return "3.1";
}

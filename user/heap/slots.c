// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include <linux/types.h>
#include "rbmemtrace.h"
#include "slots.h"

const char *slot_state_name(enum slot_state st)
{
	static const char *const names[] = {"free", "live", "garbage", "zombie", "moved", "unknown"};

	return (unsigned int)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

uint64_t slot_st_bytes(const struct ruby_layout *hl, const uint8_t *head)
{
	unsigned int entry_power = head[0], bin_power, size_ind;
	uint64_t bins, bytes;

	/* Read from a running target: a table mid-rebuild or freed must not count 2^200. */
	if (entry_power > 40)
		return 0;
	memcpy(&bins, head + hl->st_bins, sizeof(bins));
	bytes = hl->st_size + ((uint64_t)1 << entry_power) * hl->st_entry_size;
	if (bins && entry_power > hl->st_max_power_no_bins) {
		/* st.c's features[]: bin_power = entry_power + 1, bins of 1, 2, 4 or 8 bytes. */
		bin_power = entry_power + 1;
		size_ind = bin_power <= 8 ? 0 : bin_power <= 16 ? 1 : bin_power <= 32 ? 2 : 3;
		bytes += ((uint64_t)1 << bin_power << size_ind) / 8 * 8;
	}
	return bytes;
}

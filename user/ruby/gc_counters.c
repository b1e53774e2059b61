// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include "gc_counters.h"
#include "target_mem.h"

int gc_counters_read(pid_t pid, const struct ruby_layout *l, uint64_t objspace,
		     struct gc_counters *out)
{
	uint64_t v[2];
	uint32_t i;
	int ret;

	out->allocated = out->freed = 0;
	if (!objspace)
		return -ENOENT;
	if ((ret = target_read_u64(pid, objspace + l->objspace_gc_count, &out->gc_count)) ||
	    (ret = target_read(pid, objspace + l->objspace_flags, &out->flags, sizeof(out->flags))))
		return ret;
	if (l->objspace_total_allocated) {
		if ((ret = target_read_u64(pid, objspace + l->objspace_total_allocated,
					   &out->allocated)) ||
		    (ret = target_read_u64(pid, objspace + l->objspace_total_freed, &out->freed)))
			return ret;
		return 0;
	}
	if (!l->pool_total_allocated)
		return -ENOENT;
	for (i = 0; i < l->pool_count; i++) {
		uint64_t pool = objspace + l->objspace_pools + (uint64_t) i * l->pool_size;

		if ((ret = target_read_u64(pid, pool + l->pool_total_allocated, &v[0])) ||
		    (ret = target_read_u64(pid, pool + l->pool_total_freed, &v[1])))
			return ret;
		out->allocated += v[0];
		out->freed += v[1];
	}
	return 0;
}

void gc_counters_freed_at(const struct ruby_layout *l, uint64_t objspace,
			  struct gc_allocated_counter *out)
{
	*out = (struct gc_allocated_counter){0};
	if (!objspace)
		return;
	if (l->objspace_total_allocated)
		out->addr = objspace + l->objspace_total_freed;
	else if (l->pool_total_allocated)
		*out = (struct gc_allocated_counter){.addr = objspace + l->objspace_pools +
							     l->pool_total_freed,
						     .pools = l->pool_count,
						     .stride = l->pool_size};
}

void gc_counters_allocated_at(const struct ruby_layout *l, uint64_t objspace,
			      struct gc_allocated_counter *out)
{
	*out = (struct gc_allocated_counter){0};
	if (!objspace)
		return;
	if (l->objspace_total_allocated)
		out->addr = objspace + l->objspace_total_allocated;
	else if (l->pool_total_allocated)
		*out = (struct gc_allocated_counter){.addr = objspace + l->objspace_pools +
							     l->pool_total_allocated,
						     .pools = l->pool_count,
						     .stride = l->pool_size};
}

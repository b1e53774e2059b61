// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "gc_watch.h"

double gc_watch_wait(struct gc_watch *w, double t, uint64_t count)
{
	double gap;

	if (count != w->count) {
		if (count == w->count + 1 && w->at > 0)
			w->gap = t - w->at;
		else if (count > w->count + 1 && w->looked > 0)
			w->gap = (t - w->looked) / (double) (count - w->count);
		w->count = count;
		w->at = t;
	}
	w->looked = t;
	gap = t - w->at > w->gap ? t - w->at : w->gap;
	gap /= 3;
	return gap < GC_WATCH_MIN ? GC_WATCH_MIN : gap > GC_WATCH_MAX ? GC_WATCH_MAX : gap;
}

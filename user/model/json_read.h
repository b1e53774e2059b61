/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading this tool's JSON reports back into the model: a single report, or
 * a model of several processes (merge, fleet), from any host.
 */
#ifndef RBM_JSON_READ_H
#define RBM_JSON_READ_H
#include <stddef.h>
#include "model_ops.h"
#include "report.h"

/*
 * Appends each process of the report in path to m, and its failed_hosts, if
 * any, to failed (may be NULL).  A model's summary is not read: it is the sum
 * of its processes, recomputed by whoever needs it.  0, or -1 with a one-line
 * message naming path in err, and m as it was.
 */
int json_read_file(const char *path, struct model *m, struct host_failures *failed, char *err,
		   size_t errlen);
/* The same from memory; name stands for the source in messages. */
int json_read_buffer(const char *buf, size_t len, const char *name, struct model *m,
		     struct host_failures *failed, char *err, size_t errlen);

#endif

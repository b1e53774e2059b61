/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The probe layer's bounds on what a target can make the call-path namer
 * and the free tracker read or keep (docs/caps.md: each one's cost at the
 * bound, and what is said when it is reached, counted in model/caps.h).
 */
#ifndef RBM_PROBE_CAPS_H
#define RBM_PROBE_CAPS_H

/* A frame's label or file path, read and kept: longer ones are cut (CAP_FRAME_TEXT). */
#define PROBE_MAX_FRAME_TEXT 1024

/*
 * An iseq's line table is copied out of the target (its frames must name
 * lines after it is freed): 4 bytes an entry kept, plus its succinct index
 * (80 bytes per 512 instructions).  Past either cap, or once the run keeps
 * PROBE_MAX_LINE_BYTES of them, an iseq keeps none and its frames name the
 * method's first line (CAP_LINE_TABLE).
 */
#define PROBE_MAX_LINE_ENTRIES (1u << 20)
#define PROBE_MAX_ISEQ_SIZE (1u << 24) /* instructions: a 2.6 MiB index */
#define PROBE_MAX_LINE_BYTES (256ull << 20)

/*
 * Ruby 3.1 names a method's owner by searching the receiver's ancestry's
 * method tables: at most PROBE_MAX_ANCESTORS classes, PROBE_MAX_MTBL_CAPA
 * entries a table, and PROBE_MAX_OWNER_ENTRIES entries in all, each costing
 * up to four reads (CAP_OWNER_SEARCH).
 */
#define PROBE_MAX_ANCESTORS 256
#define PROBE_MAX_MTBL_CAPA 65536
#define PROBE_MAX_OWNER_ENTRIES 65536

/* Superclass hops from a singleton or iclass to its class (tracker.c). */
#define PROBE_MAX_CLASS_HOPS 1024

#endif

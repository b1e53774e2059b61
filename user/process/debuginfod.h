/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A file's separate debug info by build-id, from the debuginfod servers the
 * system is configured for, through elfutils' libdebuginfod (its cache:
 * $DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client).
 *
 * The servers: $DEBUGINFOD_URLS; when it is unset (sudo drops it) and the
 * administrator enabled Debian's /etc/profile.d/debuginfod.sh, what that
 * script would set: the *.urls files of /etc/debuginfod, joined by spaces.
 * No server configured: no network, an answer at once.
 *
 * Bounded: one try (DEBUGINFOD_RETRY_LIMIT 0 unless set), a transfer that
 * stalls 5 s gives up (DEBUGINFOD_TIMEOUT unless set), and the whole fetch
 * is cancelled after $RBMEMTRACE_DEBUGINFOD_SECONDS (default 10; libdebuginfod
 * checks about once a second, so up to one more).  A cancelled or failed
 * lookup is remembered by libdebuginfod's cache for 10 minutes.
 */
#ifndef RBM_DEBUGINFOD_H
#define RBM_DEBUGINFOD_H
#include <stddef.h>

/*
 * Fetches the debug info of build-id hex ("a1b2...") into the cache; its
 * path in path and the server's URL in url.  0, -ENOSYS when no server is
 * configured, or -errno with why (one line).
 */
int debuginfod_fetch(const char *hex, char *path, size_t n, char *url, size_t urln, char *why,
		     size_t whyn);

/* The servers that would be asked ("" if none), after the configuration above. */
const char *debuginfod_servers(void);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fleet's pure parts: hosts, the remote command, timeouts and why a host failed. */
#ifndef RBM_FLEET_HOSTS_H
#define RBM_FLEET_HOSTS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fleet_host {
	char dest[384]; /* [user@]host, as ssh takes it: a user of 127 bytes, a host of 255 */
	char name[256]; /* the host alone: what its reports' "host" field says */
	char port[8];   /* "" for ssh's default */
};

/* "[user@]host[:port]", "[user@][v6addr]:port" or a bare IPv6 address; 0 or -1 with err. */
int fleet_parse_host(const char *spec, struct fleet_host *h, char *err, size_t errlen);
/*
 * A host of another transport (a container, a pod/NAME): taken as it is, but never one
 * that looks like an option or holds blanks, quotes or controls.  0 or -1 with err.
 */
int fleet_parse_literal_host(const char *spec, struct fleet_host *h, char *err, size_t errlen);
/*
 * The hosts of --hosts: the file it names (one per line, # comments) or a
 * comma-separated list; literal: fleet_parse_literal_host's (not ssh).  Dies with a
 * one-line error on a bad host.
 */
size_t fleet_read_hosts(const char *arg, bool literal, struct fleet_host **hosts);
/* The hosts of text, one a line (# comments), as --hosts-from's command printed them. */
size_t fleet_hosts_from_text(char *text, bool literal, const char *where,
			     struct fleet_host **hosts);
/* PATH --format json ARGS, each word quoted for the remote shell; malloc'ed. */
char *fleet_remote_command(const char *path, char *const *trace, int ntrace);
/* PATH --version, quoted for the remote shell; malloc'ed.  Asked of each host before tracing. */
char *fleet_version_command(const char *path);
/*
 * Whether the rbmemtrace on host, whose --version printed printed ("rbmemtrace X.Y.Z", after
 * whatever a login script printed), writes reports this one (version ours) reads: the same
 * major.minor.  0, or -1 with one line saying why not and what to install in reason.
 */
int fleet_version_check(const char *host, const char *remote_path, const char *printed,
			const char *ours, char *reason, size_t n);
/* -d (or --duration) in the trace options plus a margin, else the default. */
double fleet_default_timeout(char *const *trace, int ntrace, double margin, double dflt);
/* Options fleet sets itself (--format, -o) are not the user's to give: the first found. */
const char *fleet_forbidden_option(char *const *trace, int ntrace);

/*
 * Where the report starts in what the host printed: its first line is "{"
 * alone, so output a launched command printed before it is skipped.
 */
size_t fleet_report_start(const char *out, size_t len);

#define MAX_REPORT_MIB 256UL   /* a host printing more is cut off */
#define FLEET_EXIT_NO_SSH 250 /* the child could not run ssh itself */

/* How one host ended, for its reason. */
struct fleet_outcome {
	bool interrupted, timed_out, too_big;
	bool version_check; /* ended while asking the remote rbmemtrace its version */
	double timeout;
	int wait_status;       /* from waitpid */
	const char *stderr_tail; /* the last bytes ssh and the remote printed on stderr */
	const char *host;
	const char *transport;   /* the --via command's name; NULL: ssh */
	const char *remote_path;
	const char *read_error;  /* json_read's message, when a report was printed but bad */
};

/* One line saying why a host gave no report. */
void fleet_failure_reason(const struct fleet_outcome *o, char *buf, size_t n);

#endif

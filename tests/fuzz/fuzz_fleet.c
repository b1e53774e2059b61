// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fleet's readers (cli/fleet_hosts.c, and the parts of cmd_fleet.c it
 * calls): a --hosts list (one host a line, # comments, as the hosts file
 * is read; fleet_read_hosts itself ends the process on a bad host, so its
 * lines are parsed here as it parses them), and what a remote host prints
 * back: its --version answer, its stderr, and the report after whatever a
 * login script printed (fleet_report_start, then the JSON reader).  The
 * input is: hosts, a NUL, the --version answer, a NUL, stderr, a NUL, stdout.
 */
#include <stdbool.h>
#include "fuzz.h"
#include "fleet_hosts.h"
#include "json_read.h"

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

static void hosts(char *list)
{
	char *line, *save = NULL, *hash, *argv[2];
	struct fleet_host h;
	char err[512];

	for (line = strtok_r(list, "\n,", &save); line; line = strtok_r(NULL, "\n,", &save)) {
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		if (!*trim(line) || fleet_parse_host(trim(line), &h, err, sizeof(err)))
			continue;
		if (!memchr(h.dest, 0, sizeof(h.dest)) || !memchr(h.name, 0, sizeof(h.name)) ||
		    !memchr(h.port, 0, sizeof(h.port)))
			abort();
		argv[0] = h.dest;
		argv[1] = line;
		free(fleet_remote_command(h.name, argv, 2));
		fleet_default_timeout(argv, 2, 5, 60);
		fleet_forbidden_option(argv, 2);
	}
}

static void answer(const char *version, const char *err_tail, const char *out)
{
	struct fleet_outcome o = {.host = "h", .remote_path = out, .stderr_tail = err_tail,
				  .read_error = version, .wait_status = 256};
	struct host_failures failed = {0};
	struct model m = {0};
	char reason[512];
	size_t len = strlen(out), at;

	fleet_version_check("h", "/usr/sbin/rbmemtrace", version, "0.1.0", reason,
			    sizeof(reason));
	fleet_failure_reason(&o, reason, sizeof(reason));
	o.timed_out = true;
	o.version_check = true;
	fleet_failure_reason(&o, reason, sizeof(reason));
	at = fleet_report_start(out, len);
	if (at > len)
		abort();
	json_read_buffer(out + at, len - at, "h", &m, &failed, reason, sizeof(reason));
	model_free(&m);
	host_failures_free(&failed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *list = fuzz_next(&data, &size, '\0');
	char *version = fuzz_next(&data, &size, '\0');
	char *err_tail = fuzz_next(&data, &size, '\0');
	char *out = fuzz_next(&data, &size, '\0');

	hosts(list);
	if (version && err_tail && out)
		answer(version, err_tail, out);
	free(list);
	free(version);
	free(err_tail);
	free(out);
	return 0;
}

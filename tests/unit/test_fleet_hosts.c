// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/cli/fleet_hosts.c: host specs, the remote command's quoting, timeouts, reasons. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "fleet_hosts.h"

static void host_ok(const char *spec, const char *dest, const char *name, const char *port)
{
	struct fleet_host h;
	char err[256] = "";

	cr_assert_eq(fleet_parse_host(spec, &h, err, sizeof(err)), 0, "%s: %s", spec, err);
	cr_expect_str_eq(h.dest, dest, "%s", spec);
	cr_expect_str_eq(h.name, name, "%s", spec);
	cr_expect_str_eq(h.port, port, "%s", spec);
}

static void host_bad(const char *spec)
{
	struct fleet_host h;
	char err[256] = "";

	cr_expect_eq(fleet_parse_host(spec, &h, err, sizeof(err)), -1, "accepted %s", spec);
	cr_expect(strstr(err, "host") != NULL, "%s", err);
}

Test(fleet_hosts, parse)
{
	host_ok("web1", "web1", "web1", "");
	host_ok("root@127.0.0.2:2222", "root@127.0.0.2", "127.0.0.2", "2222");
	host_ok("deploy@web1.example.com", "deploy@web1.example.com", "web1.example.com", "");
	host_ok("[::1]:22", "::1", "::1", "22");
	host_ok("u@[fe80::1]", "u@fe80::1", "fe80::1", "");
	host_ok("fe80::1", "fe80::1", "fe80::1", "");
	host_bad("");
	host_bad("-oProxyCommand=x");
	host_bad("u@-oProxyCommand=x");
	host_bad("web1:0");
	host_bad("web1:70000");
	host_bad("web1:22x");
	host_bad("web 1");
	host_bad("web1;reboot");
	host_bad("[::1]x");
}

Test(fleet_hosts, remote_command_quotes_every_word)
{
	char *trace[] = {"-p", "42", "--class", "It's $(rm -rf /)"};
	char *cmd = fleet_remote_command("/opt/rbm tool/rbmemtrace", trace, 4);

	cr_expect_str_eq(cmd, "'/opt/rbm tool/rbmemtrace' --format json '-p' '42' '--class' "
			      "'It'\\''s $(rm -rf /)'");
	free(cmd);
}

Test(fleet_hosts, timeouts_and_forbidden_options)
{
	char *d1[] = {"-p", "1", "-d", "10"}, *d2[] = {"--duration=2.5"}, *d3[] = {"-d7"};
	char *none[] = {"-p", "1"}, *cmd[] = {"--", "ruby", "-d", "5"};
	char *fmt[] = {"-p", "1", "--format", "text"}, *out[] = {"-o", "x"};

	cr_expect_float_eq(fleet_default_timeout(d1, 4, 30, 120), 40, 1e-9);
	cr_expect_float_eq(fleet_default_timeout(d2, 1, 30, 120), 32.5, 1e-9);
	cr_expect_float_eq(fleet_default_timeout(d3, 1, 30, 120), 37, 1e-9);
	cr_expect_float_eq(fleet_default_timeout(none, 2, 30, 120), 120, 1e-9);
	cr_expect_float_eq(fleet_default_timeout(cmd, 4, 30, 120), 120, 1e-9,
			   "-d of the command is not ours");
	cr_expect_str_eq(fleet_forbidden_option(fmt, 4), "--format");
	cr_expect_str_eq(fleet_forbidden_option(out, 2), "-o");
	cr_expect_null(fleet_forbidden_option(cmd, 4));
	cr_expect_null(fleet_forbidden_option(none, 2));
}

Test(fleet_hosts, report_start_skips_command_output)
{
	static const char plain[] = "{\n  \"pid\": 1\n}\n";
	static const char after[] = "served 3 requests\n{ not this\n{\n  \"pid\": 1\n}\n";

	cr_expect_eq(fleet_report_start(plain, strlen(plain)), 0);
	cr_expect_str_eq(after + fleet_report_start(after, strlen(after)), "{\n  \"pid\": 1\n}\n");
}

static void reason_is(struct fleet_outcome o, const char *want)
{
	char buf[512];

	o.remote_path = o.remote_path ? o.remote_path : "/usr/bin/rbmemtrace";
	o.stderr_tail = o.stderr_tail ? o.stderr_tail : "";
	fleet_failure_reason(&o, buf, sizeof(buf));
	cr_expect_str_eq(buf, want);
}

Test(fleet_hosts, reasons)
{
	reason_is((struct fleet_outcome){.wait_status = 255 << 8,
					 .stderr_tail = "ssh: connect to host h port 22: "
							"Connection refused\r\n"},
		  "ssh: connect to host h port 22: Connection refused");
	reason_is((struct fleet_outcome){.wait_status = 255 << 8,
					 .stderr_tail = "root@h: Permission denied (publickey).\n"},
		  "ssh: root@h: Permission denied (publickey).");
	reason_is((struct fleet_outcome){.wait_status = 127 << 8,
					 .host = "web1",
					 .stderr_tail = "bash: line 1: /usr/bin/rbmemtrace: No such "
							"file or directory\n"},
		  "rbmemtrace is not installed on web1 at /usr/bin/rbmemtrace: install the "
		  "rbmemtrace package (apt-get install ./rbmemtrace_" RBMEMTRACE_VERSION
		  "_amd64.deb)");
	reason_is((struct fleet_outcome){.wait_status = 127 << 8,
					 .host = "web1",
					 .remote_path = "rbmemtrace",
					 .stderr_tail = "sh: 1: rbmemtrace: not found\n"},
		  "rbmemtrace is not installed on web1: install the rbmemtrace package "
		  "(apt-get install ./rbmemtrace_" RBMEMTRACE_VERSION "_amd64.deb)");
	reason_is((struct fleet_outcome){.timed_out = true, .version_check = true, .timeout = 30},
		  "timed out after 30 s asking /usr/bin/rbmemtrace --version");
	reason_is((struct fleet_outcome){.wait_status = 1 << 8,
					 .stderr_tail = "rbmemtrace: not enough privileges: run as "
							"root\nsome other line\n"},
		  "rbmemtrace exited with status 1: rbmemtrace: not enough privileges: run as root");
	reason_is((struct fleet_outcome){.wait_status = 1 << 8,
					 .stderr_tail = "rbmemtrace: process 42 not found\n"},
		  "rbmemtrace exited with status 1: rbmemtrace: process 42 not found");
	reason_is((struct fleet_outcome){.timed_out = true, .timeout = 40},
		  "timed out after 40 s (--timeout)");
	reason_is((struct fleet_outcome){.interrupted = true}, "interrupted before it reported");
	reason_is((struct fleet_outcome){.read_error = "h's report: malformed JSON at line 3"},
		  "malformed report: h's report: malformed JSON at line 3");
	reason_is((struct fleet_outcome){.wait_status = 0}, "no report");
	reason_is((struct fleet_outcome){.wait_status = SIGKILL}, "ssh killed by signal 9");
}

Test(fleet_hosts, version_command_quotes_the_path)
{
	char *cmd = fleet_version_command("/opt/it's/rbmemtrace");

	cr_expect_str_eq(cmd, "'/opt/it'\\''s/rbmemtrace' --version");
	free(cmd);
}

static void compatible(const char *printed, const char *ours)
{
	char reason[640] = "";

	cr_expect_eq(fleet_version_check("web1", "rbmemtrace", printed, ours, reason,
					 sizeof(reason)),
		     0, "\"%s\" against %s: %s", printed, ours, reason);
	cr_expect_str_empty(reason, "a compatible version leaves the reason alone");
}

static void incompatible(const char *printed, const char *ours, const char *want)
{
	char reason[640] = "";

	cr_expect_eq(fleet_version_check("web1", "rbmemtrace", printed, ours, reason,
					 sizeof(reason)),
		     -1, "\"%s\" against %s", printed, ours);
	cr_expect_str_eq(reason, want);
}

#define HINT "(apt-get install ./rbmemtrace_" RBMEMTRACE_VERSION "_amd64.deb)"

Test(fleet_hosts, version_check_wants_the_same_major_minor)
{
	compatible("rbmemtrace 0.1.0\n", "0.1.0");
	compatible("rbmemtrace 0.1.7\n", "0.1.0");
	compatible("rbmemtrace 0.1\n", "0.1.3");
	compatible("Welcome to web1\nrbmemtrace 2.3.1\r\n", "2.3.0");
	incompatible("rbmemtrace 0.0.9\n", "0.1.0",
		     "rbmemtrace 0.0.9 on web1 is too old for this rbmemtrace 0.1.0 (the major.minor "
		     "must match): install the rbmemtrace package " HINT);
	incompatible("rbmemtrace 0.9.0\n", "1.0.0",
		     "rbmemtrace 0.9.0 on web1 is too old for this rbmemtrace 1.0.0 (the major.minor "
		     "must match): install the rbmemtrace package " HINT);
	incompatible("rbmemtrace 0.2.0\n", "0.1.0",
		     "rbmemtrace 0.2.0 on web1 is newer than this rbmemtrace 0.1.0 (the major.minor "
		     "must match): upgrade rbmemtrace here, or install this version there " HINT);
	/* Numbers, not strings: 1.10 is not 1.1. */
	incompatible("rbmemtrace 1.1.0\n", "1.10.0",
		     "rbmemtrace 1.1.0 on web1 is too old for this rbmemtrace 1.10.0 (the major.minor "
		     "must match): install the rbmemtrace package " HINT);
	incompatible("", "0.1.0",
		     "the rbmemtrace on web1 printed no version (--version): install the rbmemtrace "
		     "package " HINT);
	incompatible("Usage: something else\n", "0.1.0",
		     "the rbmemtrace on web1 printed no version (--version): install the rbmemtrace "
		     "package " HINT);
	incompatible("rbmemtrace \x1b[31mdev\n", "0.1.0",
		     "the rbmemtrace on web1 says it is \"rbmemtrace ?[31mdev\", not a version this "
		     "rbmemtrace 0.1.0 can compare: install the rbmemtrace package " HINT);
}

Test(fleet_hosts, reasons_of_another_transport)
{
	reason_is((struct fleet_outcome){.wait_status = 125 << 8,
					 .transport = "podman",
					 .stderr_tail = "Error: no container with name or ID \"c9\" "
							"found: no such container\n"},
		  "podman exited with status 125: Error: no container with name or ID \"c9\" "
		  "found: no such container");
	reason_is((struct fleet_outcome){.wait_status = 1 << 8,
					 .transport = "kubectl",
					 .stderr_tail = "Error from server (NotFound): pods \"x\" not "
							"found\n"},
		  "kubectl exited with status 1: Error from server (NotFound): pods \"x\" not "
		  "found");
	reason_is((struct fleet_outcome){.wait_status = 1 << 8,
					 .transport = "kubectl",
					 .stderr_tail = "rbmemtrace: process 42 not found\n"},
		  "rbmemtrace exited with status 1: rbmemtrace: process 42 not found");
	/* kubectl exec says how the remote command ended after it: rbmemtrace's line wins. */
	reason_is((struct fleet_outcome){.wait_status = 1 << 8,
					 .transport = "kubectl",
					 .stderr_tail = "rbmemtrace: not enough privileges: run as root\n"
							"command terminated with exit code 1\n"},
		  "rbmemtrace exited with status 1: rbmemtrace: not enough privileges: run as root");
	reason_is((struct fleet_outcome){.wait_status = 255 << 8,
					 .transport = "kubectl",
					 .stderr_tail = "boom\n"},
		  "kubectl exited with status 255: boom");
	reason_is((struct fleet_outcome){.wait_status = SIGKILL, .transport = "podman"},
		  "podman killed by signal 9");
}

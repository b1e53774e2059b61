// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/cli/fleet_transport.c: --via templates split without a shell, %h, each host's argv. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "fleet_transport.h"

/* want: the words, '|'-separated. */
static void splits_to(const char *s, const char *want)
{
	struct fleet_words w;
	char err[128] = "", got[1024] = "";

	cr_assert_eq(fleet_split_words(s, &w, err, sizeof(err)), 0, "%s: %s", s, err);
	for (int i = 0; i < w.n; i++) {
		strcat(got, i ? "|" : "");
		strcat(got, w.v[i]);
	}
	cr_expect_null(w.v[w.n]);
	cr_expect_str_eq(got, want, "split of %s", s);
	fleet_words_free(&w);
}

static void split_fails(const char *s, const char *why)
{
	struct fleet_words w;
	char err[128] = "";

	cr_expect_eq(fleet_split_words(s, &w, err, sizeof(err)), -1, "accepted %s", s);
	cr_expect(strstr(err, why) != NULL, "%s: %s", s, err);
}

Test(fleet_transport, split_as_a_shell_would_without_one)
{
	splits_to("ssh %h", "ssh|%h");
	splits_to("  kubectl exec -n rbmemtrace\t%h --  ", "kubectl|exec|-n|rbmemtrace|%h|--");
	splits_to("podman exec 'my ctr' %h", "podman|exec|my ctr|%h");
	splits_to("sh -c \"say \\\"hi\\\" \\\\ $HOME\" %h", "sh|-c|say \"hi\" \\ $HOME|%h");
	splits_to("a\\ b 'c'\"d\"e", "a b|cde");
	splits_to("x '' y", "x||y");
	/* Nothing a shell would do: no variables, globs, commands or separators. */
	splits_to("echo $(reboot); `id` *", "echo|$(reboot);|`id`|*");
	split_fails("podman exec 'ctr %h", "unclosed ' quote");
	split_fails("podman exec \"%h", "unclosed \" quote");
	split_fails("   ", "no command");
}

Test(fleet_transport, too_many_words)
{
	char s[4 * (FLEET_MAX_WORDS + 2)] = "";

	for (int i = 0; i < FLEET_MAX_WORDS + 1; i++)
		strcat(s, "w ");
	split_fails(s, "more than");
}

Test(fleet_transport, host_placeholder)
{
	char *a = fleet_subst_host("--context=%h-ctx", "web1");
	char *b = fleet_subst_host("100%% %h%h", "h");
	char *c = fleet_subst_host("%x %", "h");
	struct fleet_via v;
	char err[256];

	cr_expect_str_eq(a, "--context=web1-ctx");
	cr_expect_str_eq(b, "100% hh");
	cr_expect_str_eq(c, "%x %");
	free(a);
	free(b);
	free(c);
	cr_expect_eq(fleet_via_parse("podman exec", &v, err, sizeof(err)), -1);
	cr_expect(strstr(err, "has no %h") != NULL, "%s", err);
	cr_expect_eq(fleet_via_parse("podman exec %%h", &v, err, sizeof(err)), -1, "%%h is a %%");
	cr_assert_eq(fleet_via_parse("/usr/bin/ssh -J bastion %h", &v, err, sizeof(err)), 0);
	cr_expect(v.ssh);
	fleet_words_free(&v.words);
	cr_assert_eq(fleet_via_parse("kubectl exec %h --", &v, err, sizeof(err)), 0);
	cr_expect(!v.ssh);
	fleet_words_free(&v.words);
}

static void argv_is(char **argv, const char *const *want)
{
	int i;

	cr_assert_not_null(argv);
	for (i = 0; want[i]; i++) {
		cr_assert_not_null(argv[i], "argv ends at %d, before %s", i, want[i]);
		cr_expect_str_eq(argv[i], want[i], "argv[%d]", i);
	}
	cr_expect_null(argv[i], "argv goes on past %d: %s", i, argv[i]);
	fleet_argv_free(argv);
}

Test(fleet_transport, argv_of_a_host)
{
	char *trace[] = {"-p", "42", "--class", "It's $(rm -rf /)"};
	const char *opts[] = {"IdentityFile=/k"};
	struct fleet_cmd version, tr;
	struct fleet_host web, pod;
	struct fleet_via v;
	char err[256];

	cr_assert_eq(fleet_parse_host("root@web1:2222", &web, err, sizeof(err)), 0);
	cr_assert_eq(fleet_parse_literal_host("pod/rbm-x7k2p", &pod, err, sizeof(err)), 0);
	cr_assert_eq(fleet_make_commands("/opt/rbm", trace, 4, &version, &tr), 0);

	/* The default: the argv ssh always had, the command one quoted string. */
	cr_assert_eq(fleet_via_parse("ssh %h", &v, err, sizeof(err)), 0);
	v.ssh_options = opts;
	v.nssh_options = 1;
	argv_is(fleet_exec_argv(&v, &web, 40, &tr),
		(const char *[]){"ssh", "-o", "BatchMode=yes", "-o", "IdentityFile=/k", "-o",
				 "ConnectTimeout=30", "-p", "2222", "root@web1",
				 "'/opt/rbm' --format json '-p' '42' '--class' "
				 "'It'\\''s $(rm -rf /)'", NULL});
	argv_is(fleet_exec_argv(&v, &web, 5, &version),
		(const char *[]){"ssh", "-o", "BatchMode=yes", "-o", "IdentityFile=/k", "-o",
				 "ConnectTimeout=6", "-p", "2222", "root@web1",
				 "'/opt/rbm' --version", NULL});
	fleet_words_free(&v.words);

	/* Any other transport: words as they are, each an argument of its own. */
	cr_assert_eq(fleet_via_parse("kubectl exec -n rbmemtrace %h --", &v, err, sizeof(err)), 0);
	argv_is(fleet_exec_argv(&v, &pod, 40, &tr),
		(const char *[]){"kubectl", "exec", "-n", "rbmemtrace", "pod/rbm-x7k2p", "--",
				 "/opt/rbm", "--format", "json", "-p", "42", "--class",
				 "It's $(rm -rf /)", NULL});
	fleet_words_free(&v.words);
	cr_assert_eq(fleet_via_parse("podman exec 'ctr-%h'", &v, err, sizeof(err)), 0);
	argv_is(fleet_exec_argv(&v, &pod, 40, &version),
		(const char *[]){"podman", "exec", "ctr-pod/rbm-x7k2p", "/opt/rbm", "--version",
				 NULL});
	fleet_words_free(&v.words);
	fleet_cmd_free(&version);
	fleet_cmd_free(&tr);
}

Test(fleet_transport, literal_hosts)
{
	struct fleet_host h;
	char err[256];

	cr_expect_eq(fleet_parse_literal_host("pod/web-5d9c:x", &h, err, sizeof(err)), 0);
	cr_expect_str_eq(h.name, "pod/web-5d9c:x", "no port taken off another transport's host");
	cr_expect_str_empty(h.port);
	cr_expect_eq(fleet_parse_literal_host("-it", &h, err, sizeof(err)), -1);
	cr_expect_eq(fleet_parse_literal_host("a b", &h, err, sizeof(err)), -1);
	cr_expect_eq(fleet_parse_literal_host("a\x1b[2J", &h, err, sizeof(err)), -1);
	cr_expect_eq(fleet_parse_literal_host("", &h, err, sizeof(err)), -1);
}

Test(fleet_transport, capture_reports_the_commands_own_error)
{
	char *ok[] = {"sh", "-c", "printf 'pod/a\\npod/b\\n'", NULL};
	char *bad[] = {"sh", "-c", "echo first >&2; printf 'no such \\033[31mns\\n' >&2; exit 3",
		       NULL};
	char *slow[] = {"sleep", "5", NULL};
	char *missing[] = {"/nonexistent/kubectl", NULL};
	char err[512], *out;

	cr_assert_eq(fleet_capture(ok, 10, 1024, &out, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(out, "pod/a\npod/b\n");
	free(out);
	cr_expect_eq(fleet_capture(bad, 10, 1024, &out, err, sizeof(err)), -1);
	cr_expect_str_eq(err, "sh exited with status 3: no such \\x1b[31mns");
	cr_expect_null(out);
	cr_expect_eq(fleet_capture(slow, 0.3, 1024, &out, err, sizeof(err)), -1);
	cr_expect_str_eq(err, "sleep did not end in 0 s");
	cr_expect_eq(fleet_capture(missing, 10, 1024, &out, err, sizeof(err)), -1);
	cr_expect(strstr(err, "cannot run /nonexistent/kubectl: No such file") != NULL, "%s", err);
	cr_expect_eq(fleet_capture(ok, 10, 4, &out, err, sizeof(err)), -1);
	cr_expect(strstr(err, "printed more than 4 bytes") != NULL, "%s", err);
}

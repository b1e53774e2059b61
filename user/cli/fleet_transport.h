/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * fleet's transports: the --via template (ssh %h, kubectl exec ... %h --, podman exec %h)
 * split into words without a shell, the argv of one host's command, and --hosts-from's
 * command run and read.
 */
#ifndef RBM_FLEET_TRANSPORT_H
#define RBM_FLEET_TRANSPORT_H
#include <stdbool.h>
#include <stddef.h>
#include "fleet_hosts.h"

#define FLEET_MAX_WORDS 64 /* in a --via or --hosts-from command */

struct fleet_words {
	char *v[FLEET_MAX_WORDS + 1]; /* NULL-terminated */
	int n;
};

/*
 * s split into words as a shell would split it, and nothing more: blanks separate, '...'
 * keeps everything, "..." keeps everything but \" and \\, a backslash outside quotes
 * keeps the next character.  No variables, globs or commands.  0, or -1 with err
 * (an unclosed quote, no word, too many).
 */
int fleet_split_words(const char *s, struct fleet_words *w, char *err, size_t errlen);
void fleet_words_free(struct fleet_words *w);
/* Whether a word holds %h (%% is a %). */
bool fleet_words_have_host(const struct fleet_words *w);
/* Whether the template runs ssh (its first word's base name): its options and quoting. */
bool fleet_via_is_ssh(const struct fleet_words *w);
/* word with each %h as host and %% as %; malloc'ed, NULL when out of memory. */
char *fleet_subst_host(const char *word, const char *host);

/*
 * The argv of one host's command: the template's words from the first one on, %h
 * replaced, then the command's words as they are (NULL-terminated, malloc'ed; free with
 * fleet_argv_free).  NULL when out of memory.
 */
char **fleet_host_argv(const struct fleet_words *via, int from, const char *host,
		       char *const *cmd, int ncmd);
void fleet_argv_free(char **argv);

/* A --via template, parsed. */
struct fleet_via {
	struct fleet_words words;
	bool ssh; /* its command is ssh: one quoted string, BatchMode, -o options, -p */
	const char *const *ssh_options; /* --ssh-option's, given as ssh -o each */
	int nssh_options;
};

/* One command a host runs (PATH --version, or PATH --format json TRACE OPTIONS). */
struct fleet_cmd {
	char *shell;  /* for ssh: one string, each word quoted */
	char **words; /* for any other transport: appended as arguments (not owned but the array) */
	int nwords;
};

/*
 * The template split (fleet_split_words) and checked: it must have a %h.  0, or -1
 * with one line in err.
 */
int fleet_via_parse(const char *tmpl, struct fleet_via *v, char *err, size_t errlen);
/* Both commands of each host from --remote-path and the trace options; -ENOMEM. */
int fleet_make_commands(const char *path, char *const *trace, int ntrace,
			struct fleet_cmd *version, struct fleet_cmd *trace_cmd);
void fleet_cmd_free(struct fleet_cmd *c);
/*
 * The argv that runs c on host h.  ssh: ssh -o BatchMode=yes [-o OPT]... -o
 * ConnectTimeout=N [-p PORT] [the template's other words, %h as [user@]host] c->shell;
 * any other: the template's words, %h as the host, then c's words.  NULL-terminated,
 * malloc'ed (fleet_argv_free), NULL when out of memory.
 */
char **fleet_exec_argv(const struct fleet_via *v, const struct fleet_host *h, double timeout,
		       const struct fleet_cmd *c);
/* In a forked child: runs c on h, stdin from /dev/null; never returns. */
void fleet_exec(const struct fleet_via *v, const struct fleet_host *h, double timeout,
		const struct fleet_cmd *c) __attribute__((noreturn));
/* For -v: the command line a host runs. */
void fleet_say_command(const struct fleet_via *v, const struct fleet_host *h,
		       const struct fleet_cmd *c);

/*
 * Runs argv (no shell), its standard output read up to max bytes, for at most timeout
 * seconds: 0 with *out (malloc'ed, terminated), or -1 with one line in err naming the
 * command and its own last line of stderr.  For --hosts-from.
 */
int fleet_capture(char *const *argv, double timeout, size_t max, char **out, char *err,
		  size_t errlen);

#endif

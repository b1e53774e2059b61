/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Messages to the user: one line each, prefixed with the tool's name. */
#ifndef RBM_DIAG_H
#define RBM_DIAG_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

extern int rbm_verbose; /* -v given: explain what is found and attached */

/*
 * Room for one error message handed up to cli/ (a path and its reason):
 * the layers below cli/ never exit; they return -errno (or -1) with the
 * message in a caller's `char *err, size_t errlen`, and cli/ prints it.
 */
#define RBM_ERR_LEN (PATH_MAX + 1024)
/* The line fmt makes into err (errlen bytes), for returning ret with it: `return rbm_fail(...)`. */
int rbm_fail(char *err, size_t errlen, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Prints "rbmemtrace: <message>": an error a user must act on, said by cli/,
 * which then closes what it opened and returns its exit status up to main.
 */
void rbm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * rbm_error, then exit 1.  For cli/ alone (scripts/check-layers.sh), and
 * only before anything is opened (an option that cannot be parsed, an
 * output file that cannot be created): nothing is left to close then.
 */
void rbm_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void rbm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed only with -v. */
void rbm_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

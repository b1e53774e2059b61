/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Messages to the user: one line each, prefixed with the tool's name. */
#ifndef RBM_DIAG_H
#define RBM_DIAG_H
#include <limits.h>
#include <stdbool.h>

extern int rbm_verbose; /* -v given: explain what is found and attached */

/*
 * Room for one error message handed up to cli/ (a path and its reason):
 * the layers below cli/ never exit; they return -errno (or -1) with the
 * message in a caller's `char *err, size_t errlen`, and cli/ prints it.
 */
#define RBM_ERR_LEN (PATH_MAX + 1024)

/*
 * Prints "rbmemtrace: <message>" and exits 1: for errors a user must act on.
 * For cli/ only (scripts/check-layers.sh): it lives here, below every layer,
 * because the hooks it runs (rbm_on_die) are registered from lower layers.
 */
void rbm_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* The same line without exiting: cli/ then closes what it opened and returns its status. */
void rbm_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rbm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed only with -v. */
void rbm_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Run before rbm_die exits, last added first: a launched child must not
 * stay stopped, an output file must not be left half-written.
 */
void rbm_on_die(void (*hook)(void *ctx), void *ctx);
void rbm_on_die_remove(void (*hook)(void *ctx), void *ctx);

#endif

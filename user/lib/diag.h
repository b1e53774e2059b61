/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Messages to the user: one line each, prefixed with the tool's name. */
#ifndef RBM_DIAG_H
#define RBM_DIAG_H
#include <setjmp.h>
#include <stdbool.h>

extern int rbm_verbose; /* -v given: explain what is found and attached */

/* Prints "rbmemtrace: <message>" and exits 1: for errors a user must act on. */
void rbm_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void rbm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed only with -v. */
void rbm_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Run before rbm_die exits, last added first: a launched child must not
 * stay stopped, an output file must not be left half-written.
 */
void rbm_on_die(void (*hook)(void *ctx), void *ctx);
void rbm_on_die_remove(void (*hook)(void *ctx), void *ctx);

/*
 * While set, rbm_die prints its line as a warning and jumps here instead of
 * exiting (its hooks do not run): for a process --all found that vanishes
 * while it is being opened, which must not end the trace of the others.
 * NULL stops catching.
 */
void rbm_die_catch(jmp_buf *env);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "diag.h"

int rbm_verbose;

#define MAX_DIE_HOOKS 4

static struct {
	void (*hook)(void *ctx);
	void *ctx;
} die_hooks[MAX_DIE_HOOKS];
static int ndie_hooks;

void rbm_on_die(void (*hook)(void *ctx), void *ctx)
{
	if (ndie_hooks < MAX_DIE_HOOKS)
		die_hooks[ndie_hooks++] = (typeof(die_hooks[0])){hook, ctx};
}

void rbm_on_die_remove(void (*hook)(void *ctx), void *ctx)
{
	int i;

	for (i = 0; i < ndie_hooks; i++) {
		if (die_hooks[i].hook != hook || die_hooks[i].ctx != ctx)
			continue;
		die_hooks[i] = die_hooks[--ndie_hooks];
		return;
	}
}

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "rbmemtrace: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void rbm_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
	/* Taken off before it runs: a hook that dies itself must not loop. */
	while (ndie_hooks > 0) {
		ndie_hooks--;
		die_hooks[ndie_hooks].hook(die_hooks[ndie_hooks].ctx);
	}
	exit(1);
}

void rbm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
}

void rbm_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

void rbm_info(const char *fmt, ...)
{
	va_list ap;

	if (!rbm_verbose)
		return;
	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "diag.h"

int rbm_verbose;

static void (*die_hook)(void *ctx);
static void *die_hook_ctx;

void rbm_on_die(void (*hook)(void *ctx), void *ctx)
{
	die_hook = hook;
	die_hook_ctx = ctx;
}

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "rbmemtrace: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void rbm_die(const char *fmt, ...)
{
	void (*hook)(void *ctx) = die_hook;
	va_list ap;

	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
	die_hook = NULL; /* a hook that dies itself must not loop */
	if (hook)
		hook(die_hook_ctx);
	exit(1);
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

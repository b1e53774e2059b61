/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading a Ruby String of the target (class paths, labels, file names). */
#ifndef RBM_RUBY_STRING_H
#define RBM_RUBY_STRING_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ruby_layout.h"

/*
 * Reads the bytes of the String at str (embedded or on the heap) into buf,
 * NUL-terminated and cut to n - 1 bytes.  0, -EINVAL if str is no String,
 * or the read's -errno.
 */
int ruby_read_string(pid_t pid, const struct ruby_layout *off, uint64_t str, char *buf, size_t n);
/* The same, and the String's whole length in *full (more than n - 1: it was cut). */
int ruby_read_string_full(pid_t pid, const struct ruby_layout *off, uint64_t str, char *buf,
			  size_t n, uint64_t *full);

#endif

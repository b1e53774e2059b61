/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The symbolizer's iseq cache (iseqs.c), for stacks.c. */
#ifndef RBM_ISEQS_H
#define RBM_ISEQS_H
#include <stdbool.h>
#include <stdint.h>
#include "stacks.h"

struct iseq_info {
	char *label;
	char *qualified; /* "Foo#bar", "block in Foo#bar": once the owner is found */
	char *path;
	uint64_t iseq; /* its address */
	uint32_t type;
	uint64_t local_iseq;
	int first_line;
	uint64_t body;	  /* what the iseq pointed at when read: a cached entry must still */
	uint64_t encoded; /* its instructions, iseq_size words */
	uint32_t iseq_size;
	/*
	 * Its line table, copied when first read: a required file's top-level
	 * and class-body iseqs are freed once the require returns and a GC
	 * runs, and their frames must still name their lines.
	 */
	int32_t *lines; /* line_no of each insns_info entry */
	uint32_t insns_info_size;
	uint8_t *succ; /* the succinct index of entries by position */
	size_t succ_len;
	struct iseq_info *retired_next; /* replaced at its address, kept for named stacks */
	uint64_t checked;		/* symbolizer.naming when found still at its address */
};

/* Whether addr holds an imemo of that kind. */
bool iseqs_is_imemo(struct symbolizer *s, uint64_t addr, uint32_t imemo);
/* A Ruby String of the target as a C string (malloc'ed), or NULL. */
char *iseqs_read_text(struct symbolizer *s, uint64_t str);
/* The iseq at this address now, cached (NULL: unreadable, or not an iseq). */
struct iseq_info *iseqs_get(struct symbolizer *s, uint64_t iseq);
/* The iseq a frame ran: the one at its address now, or a retired one holding its pc. */
struct iseq_info *iseqs_of_frame(struct symbolizer *s, uint64_t iseq, uint64_t pc);
/* The line of the instruction before pc (a caller's pc is past its call). */
int iseqs_line(const struct iseq_info *info, uint64_t pc);
/* The cached iseqs of a path being named, checked in three batched reads. */
void iseqs_check_cached(struct symbolizer *s, const uint64_t *words, uint32_t depth);
void iseqs_free_info(void *p);

/*
 * The rank lookup of Ruby 3.1's succinct bit vector (iseq.c): how many
 * instructions with line info start at or before pos.  `read` fetches len
 * bytes at offset off of the table; it returns 0 on success.
 */
int succ_index_rank(uint32_t pos, int (*read)(void *ctx, uint64_t off, void *buf, size_t len),
		    void *ctx, uint32_t *rank);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * census_dump PID [REPEAT]: takes a heap census of a running Ruby and prints
 * it as tab-separated lines, for bench/census.rb and manual checks:
 *   census <pages> <slots> <live> <free> <garbage> <zombies> <moved> <unjudged>
 *          <bad_pages> <marking> <sweeping> <gc_changed> <best_seconds> <gc_count>
 *   type <T_NAME> <live>
 *   class <live> <bytes> <garbage> <old> <age0> <age1> <age2> <age3> <kind> <name>
 *   rss_kb <tracer's peak RSS>
 * With REPEAT > 1 the census is taken that many times and the fastest time
 * is printed (the counts are the last census's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "census.h"
#include "classnames.h"
#include "elfinfo.h"
#include "procmaps.h"
#include "ruby_versions.h"
#include "target_mem.h"

static int global(pid_t pid, const struct ruby_image *img, const char *name, uint64_t *v)
{
	uint64_t sym;

	if (elf_symbol_value(img->host_path, name, &sym, NULL))
		return -ENOENT;
	return target_read_u64(pid, img->load_bias + sym, v);
}

/* Class names come from the target: print only tame bytes. */
static void print_name(const char *s)
{
	for (; *s; s++)
		putchar(*s > 0x20 && *s < 0x7f ? *s : '?');
	putchar('\n');
}

int main(int argc, char **argv)
{
	char err[PATH_MAX + 256], version[32];
	static struct ruby_image img;
	const struct ruby_offsets *off;
	const struct heap_layout *hl;
	struct class_namer cn;
	struct census c = {};
	uint64_t vm, objspace, object_class;
	double best = 1e9;
	struct rusage ru;
	int i, repeat, ret;
	pid_t pid;
	size_t k;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PID [REPEAT]\n", argv[0]);
		return 2;
	}
	pid = atoi(argv[1]);
	repeat = argc > 2 ? atoi(argv[2]) : 1;
	if (procmaps_find_ruby(pid, &img, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (elf_symbol_string(img.host_path, "ruby_version", version, sizeof(version)) ||
	    !(off = ruby_offsets_for(version)) || !(hl = heap_layout_for(version))) {
		fprintf(stderr, "unsupported Ruby\n");
		return 1;
	}
	if (global(pid, &img, "ruby_current_vm_ptr", &vm) ||
	    target_read_u64(pid, vm + off->vm_objspace, &objspace) ||
	    global(pid, &img, "rb_cObject", &object_class) ||
	    class_namer_init(&cn, pid, off, object_class, err, sizeof(err))) {
		fprintf(stderr, "cannot find the objspace or class names of PID %d\n", pid);
		return 1;
	}
	for (i = 0; i < (repeat > 0 ? repeat : 1); i++) {
		census_free(&c);
		ret = census_take(&c, pid, hl, objspace, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "census: %s\n", err);
			return 1;
		}
		if (c.seconds < best)
			best = c.seconds;
	}
	printf("census\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%d\t%d\t%d\t%.6f\t%lu\n",
	       c.pages, c.slots, c.live, c.free, c.garbage, c.zombies, c.moved, c.unjudged,
	       c.bad_pages, c.marking, c.sweeping, c.gc_count_changed, best, c.gc_count);
	for (k = 0; k < 32; k++)
		if (c.types[k])
			printf("type\t%s\t%lu\n", ruby_type_name(k), c.types[k]);
	u64map_for_each(&c.classes, k)
	{
		struct census_class *cc = c.classes.values[k];

		printf("class\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%lu\t%u\t", cc->live, cc->bytes,
		       cc->garbage, cc->old, cc->age[0], cc->age[1], cc->age[2], cc->age[3],
		       cc->kind);
		print_name(class_namer_key_name(&cn, cc->klass, cc->kind));
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("rss_kb\t%ld\n", ru.ru_maxrss);
	census_free(&c);
	class_namer_free(&cn);
	return 0;
}

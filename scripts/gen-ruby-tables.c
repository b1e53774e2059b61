// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbm-gen-tables: prints the built-in table entries (struct ruby_offsets for
 * user/target/ruby_versions.c, struct heap_layout for user/heap/heap_layout.c)
 * of one Ruby version, read from the DWARF of a libruby built with debug info
 * by the same reader the tool uses at run time (dwarf_layout.c): one reader,
 * so a generated entry and a live DWARF read cannot disagree by construction
 * of two parsers.  scripts/gen-ruby-tables.sh runs it over the test Rubies.
 *
 *   rbm-gen-tables offsets|heap LIBRUBY [VERIFIED]
 *
 * VERIFIED goes into .verified (patch releases checked live with these
 * numbers); the entry is printed with .supported = 0 until the consumers
 * handle the series (the lead flips it).
 */
#include <stdio.h>
#include <string.h>
#include "dwarf_layout.h"
#include "elfinfo.h"

static void print_fields(const void *obj, const struct layout_field *fields, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = layout_field_get(obj, &fields[i]);

		if (!strcmp(fields[i].name, "supported"))
			v = 0;
		if (fields[i].hex && v)
			printf("\t\t.%s = 0x%llx,\n", fields[i].name, (unsigned long long) v);
		else
			printf("\t\t.%s = %llu,\n", fields[i].name, (unsigned long long) v);
	}
}

int main(int argc, char **argv)
{
	struct ruby_offsets off;
	struct heap_layout hl;
	char version[32], series[16], err[2048];
	const char *what = argc > 1 ? argv[1] : "", *lib = argc > 2 ? argv[2] : NULL;
	const char *verified = argc > 3 ? argv[3] : "";
	const char *base;
	size_t n;
	bool heap = !strcmp(what, "heap");

	if (!lib || (!heap && strcmp(what, "offsets"))) {
		fprintf(stderr, "usage: %s offsets|heap LIBRUBY [VERIFIED]\n", argv[0]);
		return 2;
	}
	if (elf_symbol_string(lib, "ruby_version", version, sizeof(version))) {
		fprintf(stderr, "%s: no ruby_version in %s\n", argv[0], lib);
		return 1;
	}
	n = strcspn(version, ".");
	n += version[n] ? 1 + strcspn(version + n + 1, ".") : 0;
	snprintf(series, sizeof(series), "%.*s", (int) n, version);
	if (dwarf_layout_read(lib, NULL, heap ? NULL : &off, heap ? &hl : NULL, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 1;
	}
	base = strrchr(lib, '/');
	base = base ? base + 1 : lib;
	printf("\t{\n");
	printf("\t\t.series = \"%s\",\n", series);
	printf("\t\t.verified = \"%s\",\n", verified);
	printf("\t\t.source = \"DWARF of %s %s (scripts/gen-ruby-tables.sh)\",\n", base, version);
	if (heap)
		print_fields(&hl, heap_layout_fields, heap_layout_nfields);
	else
		print_fields(&off, ruby_offsets_fields, ruby_offsets_nfields);
	printf("\t},\n");
	return 0;
}

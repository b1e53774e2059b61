// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rbm-gen-tables: prints the built-in table entry (struct ruby_layout, for
 * user/ruby/ruby_versions.c) of one Ruby version, read from the DWARF of a
 * libruby built with debug info by the same reader the tool uses at run
 * time (dwarf_layout.c): one reader, so a generated entry and a live DWARF
 * read cannot disagree by construction of two parsers.
 * scripts/gen-ruby-tables.sh runs it over the test Rubies.
 *
 *   rbm-gen-tables LIBRUBY [VERIFIED]
 *
 * VERIFIED goes into .verified (patch releases checked live with these
 * numbers).
 */
#include <stdio.h>
#include <string.h>
#include "dwarf_layout.h"
#include "elfinfo.h"

int main(int argc, char **argv)
{
	struct ruby_layout l;
	char version[32], series[16], err[2048];
	const char *lib = argc > 1 ? argv[1] : NULL, *verified = argc > 2 ? argv[2] : "";
	const char *base;
	size_t n, i;

	if (!lib) {
		fprintf(stderr, "usage: %s LIBRUBY [VERIFIED]\n", argv[0]);
		return 2;
	}
	if (elf_symbol_string(lib, "ruby_version", version, sizeof(version))) {
		fprintf(stderr, "%s: no ruby_version in %s\n", argv[0], lib);
		return 1;
	}
	n = strcspn(version, ".");
	n += version[n] ? 1 + strcspn(version + n + 1, ".") : 0;
	snprintf(series, sizeof(series), "%.*s", (int) n, version);
	if (dwarf_layout_read(lib, NULL, version, &l, NULL, 0, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 1;
	}
	base = strrchr(lib, '/');
	base = base ? base + 1 : lib;
	printf("\t{\n");
	printf("\t\t.series = \"%s\",\n", series);
	printf("\t\t.verified = \"%s\",\n", verified);
	printf("\t\t.source = \"the %s table (generated from the DWARF of %s %s)\",\n", series,
	       base, version);
	for (i = 0; i < ruby_layout_nfields; i++) {
		const struct layout_field *f = &ruby_layout_fields[i];
		unsigned long long v = layout_field_get(&l, f);

		if (f->hex && v)
			printf("\t\t.%s = 0x%llx,\n", f->name, v);
		else
			printf("\t\t.%s = %llu,\n", f->name, v);
	}
	printf("\t},\n");
	return 0;
}

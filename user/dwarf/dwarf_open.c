// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Opening an ELF file's DWARF (or its separate debug file), its list of CUs, their units. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdwelf.h>
#include "debuginfod.h"
#include "dwarf_types_impl.h"
#include "dwarf_caps.h"
#include "target_file.h"
#include "u64map.h"

static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static bool has_debug_info(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".debug_info"))
			return true;
	}
	return false;
}

/*
 * The files come from the target's root (its libruby, debug files beside
 * it): opened as target_file_open does, inside that root, never blocking on
 * a FIFO put where a debug file is looked for, and no bigger than its cap.
 */
static int open_elf(const char *path, int *fd, Elf **elf)
{
	*fd = target_file_open(path);
	if (*fd < 0) {
		errno = -*fd;
		*fd = -1;
		return -1;
	}
	/* private: hide_unused_sections edits section headers in memory, never the file */
	*elf = elf_begin(*fd, ELF_C_READ_MMAP_PRIVATE, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		if (*elf)
			elf_end(*elf);
		close(*fd);
		*fd = -1;
		return -1;
	}
	return 0;
}

/* The file's build-id in hex; false if it has none. */
static bool build_id_hex(Elf *elf, char *hex, size_t n)
{
	const unsigned char *id;
	ssize_t len, i;

	len = dwelf_elf_gnu_build_id(elf, (const void **) &id);
	if (len <= 1 || (size_t) len * 2 + 1 > n)
		return false;
	for (i = 0; i < len; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	return true;
}

/* Separate debug files, as gdb looks for them: build-id first, then debuglink. */
static int find_debug_file(const char *path, const char *root, Elf *elf, char *out, size_t outlen)
{
	const char *link;
	char dir[2048], buf[2048], hex[256];
	GElf_Word crc;
	ssize_t i;
	int fd;
	Elf *e;
	const char *fmts[] = {"%s/%s", "%s/.debug/%s", "%s/usr/lib/debug%s/%s"};

	if (!root || !strcmp(root, "/"))
		root = "";
	if (build_id_hex(elf, hex, sizeof(hex))) {
		snprintf(out, outlen, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, hex,
			 hex + 2);
		if (!open_elf(out, &fd, &e)) {
			bool ok = has_debug_info(e);

			elf_end(e);
			close(fd);
			if (ok)
				return 0;
		}
	}
	link = dwelf_elf_gnu_debuglink(elf, &crc);
	if (!link || strchr(link, '/'))
		return -ENOENT;
	snprintf(buf, sizeof(buf), "%s", path);
	snprintf(dir, sizeof(dir), "%s", dirname(buf));
	for (i = 0; i < 3; i++) {
		if (i < 2)
			snprintf(out, outlen, fmts[i], dir, link);
		else
			snprintf(out, outlen, fmts[i], root, dir, link);
		if (!strcmp(out, path) || open_elf(out, &fd, &e))
			continue;
		if (has_debug_info(e)) {
			elf_end(e);
			close(fd);
			return 0;
		}
		elf_end(e);
		close(fd);
	}
	return -1;
}

/* The debug file from debuginfod, by build-id (process/debuginfod.h). */
static int fetch_debug_file(struct dwarf_types *dt, const char *path, char *out, size_t outlen,
			    char *err, size_t errlen)
{
	char hex[256], why[512];
	int ret;

	if (!build_id_hex(dt->elf, hex, sizeof(hex))) {
		errf(err, errlen, "%s has no DWARF (.debug_info), no debug file and no build-id",
		     path);
		return -1;
	}
	ret = debuginfod_fetch(hex, out, outlen, dt->origin, sizeof(dt->origin), why, sizeof(why));
	if (ret == -ENOSYS) {
		errf(err, errlen, "%s has no DWARF (.debug_info) and no debug file was found", path);
		return -1;
	}
	if (ret) {
		errf(err, errlen, "%s has no DWARF (.debug_info), no local debug file, and %s", path,
		     why);
		return -1;
	}
	return 0;
}

/*
 * libdw inflates every compressed .debug_* section when it opens a file:
 * ~290 ms for libruby 3.4's (zlib), of which line tables, location and range
 * lists (not needed for types) are ~40%.  Marking them SHT_NOBITS in
 * libelf's in-memory copy makes libdw skip them.
 */
static void hide_unused_sections(Elf *elf)
{
	static const char *const unused[] = {".debug_line",  ".debug_loclists", ".debug_rnglists",
					     ".debug_loc",   ".debug_ranges",	".debug_aranges",
					     ".debug_frame", ".debug_pubnames", ".debug_pubtypes"};
	size_t shstrndx, i;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		for (i = 0; i < sizeof(unused) / sizeof(unused[0]); i++) {
			if (strcmp(name, unused[i]))
				continue;
			sh.sh_type = SHT_NOBITS;
			gelf_update_shdr(scn, &sh);
		}
	}
}

/*
 * What libdw will inflate from the sections it reads (SHF_COMPRESSED, or
 * GNU's .zdebug: "ZLIB" and a big-endian size), as the headers claim: a
 * crafted file can claim terabytes from a few bytes.
 */
static uint64_t inflated_bytes(Elf *elf)
{
	uint64_t total = 0, size;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Chdr ch;
		Elf_Data *raw;
		int i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		size = 0;
		if (sh.sh_flags & SHF_COMPRESSED) {
			size = gelf_getchdr(scn, &ch) ? ch.ch_size : UINT64_MAX;
		} else if ((name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
			   !strncmp(name, ".zdebug", 7)) {
			raw = elf_rawdata(scn, NULL);
			if (!raw || raw->d_size < 12 || memcmp(raw->d_buf, "ZLIB", 4))
				continue;
			for (i = 0; i < 8; i++)
				size = size << 8 | ((const uint8_t *) raw->d_buf)[4 + i];
		}
		if (size > DWARF_MAX_INFLATED - total)
			return UINT64_MAX;
		total += size;
	}
	return total;
}

static int list_cus(struct dwarf_types *dt)
{
	Dwarf_Off off = 0, next;
	size_t hsize, cap = 0;

	while (dwarf_next_unit(dt->dbg, off, &next, &hsize, NULL, NULL, NULL, NULL, NULL, NULL) ==
	       0) {
		Dwarf_Die die;
		struct dt_cu *cu;

		if (!dwarf_offdie(dt->dbg, off + hsize, &die) ||
		    dwarf_tag(&die) != DW_TAG_compile_unit) {
			off = next;
			continue;
		}
		if (dt->ncus == cap) {
			struct dt_cu *p;

			cap = cap ? 2 * cap : 256;
			p = realloc(dt->cus, cap * sizeof(*p));
			if (!p)
				return -1;
			dt->cus = p;
		}
		cu = &dt->cus[dt->ncus++];
		memset(cu, 0, sizeof(*cu));
		cu->die_off = off + hsize;
		cu->name = dwarf_diename(&die);
		if (!cu->name)
			cu->name = "";
		off = next;
	}
	return 0;
}

static uint64_t unit_key(const struct dt_units *u, Dwarf_Die *unit)
{
	uint64_t key = dwarf_dieoffset(unit);

	return dwarf_cu_getdwarf(unit->cu) == u->dt->dbg ? key : key | 1ull << 63;
}

static int add_unit(struct dt_units *u, Dwarf_Die *unit)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 16;
		Dwarf_Die *p = realloc(u->die, cap * sizeof(*p));

		if (!p)
			return -1;
		u->die = p;
		u->cap = cap;
	}
	if (u64map_put(&u->seen, unit_key(u, unit), u))
		return -1;
	u->die[u->n++] = *unit;
	return 0;
}

int dt_units_start(struct dwarf_types *dt, const struct dt_cu *cu, struct dt_units *u)
{
	Dwarf_Die die;

	memset(u, 0, sizeof(*u));
	u->dt = dt;
	if (dwarf_offdie(dt->dbg, cu->die_off, &die) && add_unit(u, &die) == 0)
		return 0;
	dt_units_free(u);
	return -1;
}

/*
 * Each unit once, however many times it is imported: a crafted unit imported 64 times by a CU
 * and 64 times by itself was indexed again at each import, 4 deep (57 s and 592 MB for one CU).
 * No depth limit: the count bounds it, and dwz's imports are up to 8 deep.
 */
int dt_units_import(struct dt_units *u, Dwarf_Die *import)
{
	Dwarf_Attribute a;
	Dwarf_Die unit;

	if (u->n > DWARF_MAX_UNIT_IMPORTS || !dwarf_attr(import, DW_AT_import, &a) ||
	    !dwarf_formref_die(&a, &unit) || u64map_get(&u->seen, unit_key(u, &unit)))
		return 0;
	return add_unit(u, &unit);
}

void dt_units_free(struct dt_units *u)
{
	u64map_free(&u->seen, NULL);
	free(u->die);
	u->die = NULL;
	u->n = u->cap = 0;
}

/*
 * An import may name any DIE, not only a unit's: its children are walked up to its unit's end
 * at most.  A unit libdw cannot measure counts as the whole budget.
 */
uint64_t dt_unit_bytes(Dwarf_Die *unit)
{
	Dwarf_Off at = dwarf_dieoffset(unit), start = at - dwarf_cuoffset(unit), next;

	if (dwarf_next_unit(dwarf_cu_getdwarf(unit->cu), start, &next, NULL, NULL, NULL, NULL,
			    NULL, NULL, NULL) ||
	    next <= at)
		return UINT64_MAX;
	return next - at;
}

int dwarf_types_use_cus(struct dwarf_types *dt, const char *const *names)
{
	size_t i, j, n = 0;
	int found = 0;

	if (!names) {
		for (i = 0; i < dt->ncus; i++)
			dt->use[i] = i;
		dt->nuse = dt->ncus;
		return (int) dt->ncus;
	}
	for (j = 0; names[j]; j++) {
		size_t len = strlen(names[j]);

		for (i = 0; i < dt->ncus; i++) {
			const char *cn = dt->cus[i].name;
			size_t cl = strlen(cn);

			if (!strcmp(cn, names[j]) || (cl > len && cn[cl - len - 1] == '/' &&
						      !strcmp(cn + cl - len, names[j]))) {
				dt->use[n++] = i;
				found++;
				break;
			}
		}
	}
	dt->nuse = n;
	return found;
}

int dwarf_types_open(const char *path, const char *root, struct dwarf_types **out, char *err,
		     size_t errlen)
{
	struct dwarf_types *dt;
	char debug[sizeof(dt->file)];

	*out = NULL;
	elf_version(EV_CURRENT);
	dt = calloc(1, sizeof(*dt));
	if (!dt)
		return errf(err, errlen, "out of memory"), -1;
	if (open_elf(path, &dt->fd, (Elf **) &dt->elf)) {
		errf(err, errlen, "cannot open %s as an ELF file: %s", path,
		     errno ? strerror(errno) : elf_errmsg(-1));
		free(dt);
		return -1;
	}
	snprintf(dt->file, sizeof(dt->file), "%s", path);
	dt->index_entries_left = DWARF_MAX_INDEXED;
	dt->index_bytes_left = DWARF_MAX_INDEX_BYTES;
	dt->macros_left = DWARF_MAX_MACROS;
	dt->macro_bytes_left = DWARF_MAX_MACRO_BYTES;
	if (!has_debug_info(dt->elf)) {
		if (find_debug_file(path, root, dt->elf, debug, sizeof(debug)) &&
		    fetch_debug_file(dt, path, debug, sizeof(debug), err, errlen))
			goto fail;
		elf_end(dt->elf);
		close(dt->fd);
		dt->elf = NULL;
		if (open_elf(debug, &dt->fd, (Elf **) &dt->elf)) {
			errf(err, errlen, "cannot open %s", debug);
			free(dt);
			return -1;
		}
		snprintf(dt->file, sizeof(dt->file), "%s", debug);
	}
	hide_unused_sections(dt->elf);
	if (inflated_bytes(dt->elf) > DWARF_MAX_INFLATED) {
		errf(err, errlen,
		     "the DWARF of %s inflates to more than %llu MiB, the cap: not read", dt->file,
		     (unsigned long long) (DWARF_MAX_INFLATED >> 20));
		goto fail;
	}
	dt->dbg = dwarf_begin_elf(dt->elf, DWARF_C_READ, NULL);
	if (!dt->dbg) {
		errf(err, errlen, "cannot read the DWARF of %s: %s", dt->file, dwarf_errmsg(-1));
		goto fail;
	}
	if (list_cus(dt) || !(dt->use = calloc(dt->ncus + 1, sizeof(*dt->use)))) {
		errf(err, errlen, "out of memory");
		goto fail;
	}
	dwarf_types_use_cus(dt, NULL);
	*out = dt;
	return 0;
fail:
	dwarf_types_close(dt);
	return -1;
}

void dwarf_types_close(struct dwarf_types *dt)
{
	size_t i;

	if (!dt)
		return;
	for (i = 0; i < dt->ncus; i++) {
		free(dt->cus[i].names);
		free(dt->cus[i].enums);
		dt_free_macros(&dt->cus[i]);
	}
	free(dt->cus);
	free(dt->use);
	if (dt->dbg)
		dwarf_end(dt->dbg);
	if (dt->elf)
		elf_end(dt->elf);
	if (dt->fd >= 0)
		close(dt->fd);
	free(dt);
}

const char *dwarf_types_file(const struct dwarf_types *dt)
{
	return dt->file;
}

const char *dwarf_types_origin(const struct dwarf_types *dt)
{
	return dt->origin;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The DWARF walks (dwarf/: types, members, enumerators, .debug_macro and
 * the constant expressions of macros; ruby/dwarf_layout.c on top) on the
 * DWARF of a hostile libruby or debug file.  The input is a flags byte,
 * then the sections below in this order, each ended by SEP (an empty one
 * is left out of the file), then queries, one a line: "T type" (its size),
 * "M type path" (a member), "N type" (its members' names), "E name" (an
 * enumerator), "C name" (a macro's value).  The sections are written into
 * an ELF file (a memfd) as a linked libruby holds them; flag bit i marks
 * section i SHF_COMPRESSED (its bytes then start with an Elf64_Chdr).
 * Every query runs, then a fixed list, then the whole Ruby layout reader.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include "fuzz.h"
#include "dwarf_layout.h"
#include "dwarf_types.h"
#include "ruby_layout.h"

#define SEP "@@SECTION@@"

static const char *const sections[] = {
    ".debug_abbrev",	  ".debug_info", ".debug_str", ".debug_str_offsets", ".debug_addr",
    ".debug_line_str",	  ".debug_macro", ".debug_macinfo", ".debug_line", ".debug_rnglists",
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

static const char *const fixed[] = {
    "T struct fix_outer", "M struct fix_outer as.heap.len", "M fix_outer_t inners[2].v[1]",
    "M struct fix_outer deep", "N struct fix_outer", "E FIX_NEG", "C FIX_MASK", "C FIX_SIZE",
    "C FIX_BOMB19", "C FIX_RED", "M struct RString as.heap.ptr", "C RSTRING_NOEMBED",
    "T rb_objspace_t", NULL,
};

static char root[64];

/* The sections as a linked file holds them (no relocations to apply), and their names. */
static int write_elf(int fd, uint8_t flags, const uint8_t **piece, const size_t *len)
{
	char shstr[256] = "";
	size_t shlen = 1, i;
	Elf_Scn *scn;
	Elf_Data *d;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	int ret = -1;

	if (!e || !gelf_newehdr(e, ELFCLASS64) || !gelf_getehdr(e, &eh))
		goto out;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	for (i = 0; i <= NSECTIONS; i++) {
		const char *name = i < NSECTIONS ? sections[i] : ".shstrtab";

		if (i < NSECTIONS && !len[i])
			continue;
		if (!(scn = elf_newscn(e)) || !(d = elf_newdata(scn)) || !gelf_getshdr(scn, &sh))
			goto out;
		memset(&sh, 0, sizeof(sh));
		sh.sh_name = shlen;
		memcpy(shstr + shlen, name, strlen(name) + 1);
		shlen += strlen(name) + 1;
		d->d_align = 1;
		d->d_type = ELF_T_BYTE;
		if (i < NSECTIONS) {
			d->d_buf = (void *) piece[i];
			d->d_size = len[i];
			sh.sh_type = SHT_PROGBITS;
			sh.sh_flags = i < 8 && (flags & (1u << i)) ? SHF_COMPRESSED : 0;
		} else {
			d->d_buf = shstr;
			d->d_size = shlen;
			sh.sh_type = SHT_STRTAB;
			eh.e_shstrndx = elf_ndxscn(scn);
		}
		if (!gelf_update_shdr(scn, &sh))
			goto out;
	}
	if (!gelf_update_ehdr(e, &eh) || elf_update(e, ELF_C_WRITE) < 0)
		goto out;
	ret = 0;
out:
	if (e)
		elf_end(e);
	return ret;
}

static void query(struct dwarf_types *dt, char *q)
{
	const char *names[16];
	struct dwarf_field f;
	char *space;
	uint64_t size;
	int64_t v;

	if (strlen(q) < 3 || q[1] != ' ')
		return;
	switch (q[0]) {
	case 'T':
		dwarf_type_size(dt, q + 2, &size);
		break;
	case 'M':
		space = strrchr(q + 2, ' ');
		if (!space)
			return;
		*space = '\0';
		dwarf_member(dt, q + 2, space + 1, &f);
		*space = ' ';
		break;
	case 'N':
		dwarf_member_names(dt, q + 2, names, 16);
		break;
	case 'E':
		dwarf_enumerator(dt, q + 2, &v);
		break;
	case 'C':
		dwarf_constant(dt, q + 2, &v);
		break;
	}
}

static void walk(const char *path, char *queries)
{
	char err[1024], *line, *save = NULL, copy[128];
	struct ruby_layout *l;
	struct dwarf_types *dt;
	size_t i;

	if (dwarf_types_open(path, root, &dt, err, sizeof(err)))
		return;
	for (line = strtok_r(queries, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		query(dt, line);
	for (i = 0; fixed[i]; i++) {
		snprintf(copy, sizeof(copy), "%s", fixed[i]);
		query(dt, copy);
	}
	l = malloc(sizeof(*l));
	if (l)
		dwarf_layout_from(dt, "3.1.2", l, err, sizeof(err));
	free(l);
	dwarf_types_close(dt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *piece[NSECTIONS] = {0}, *end = data + size, *at;
	size_t len[NSECTIONS] = {0}, i;
	char path[64], *queries;
	uint8_t flags;
	int fd;

	if (!size)
		return 0;
	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/rbm-fuzz-dwarf-XXXXXX");
		if (!mkdtemp(root))
			abort();
		unsetenv("DEBUGINFOD_URLS");
		elf_version(EV_CURRENT);
	}
	flags = *data++;
	for (i = 0; i < NSECTIONS && data < end; i++) {
		at = memmem(data, (size_t) (end - data), SEP, strlen(SEP));
		piece[i] = data;
		len[i] = at ? (size_t) (at - data) : (size_t) (end - data);
		data = at ? at + strlen(SEP) : end;
	}
	queries = fuzz_str(data, (size_t) (end - data));
	fd = memfd_create("fuzz-dwarf", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!write_elf(fd, flags, piece, len))
		walk(path, queries);
	close(fd);
	free(queries);
	return 0;
}

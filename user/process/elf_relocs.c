// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <gelf.h>
#include <stddef.h>
#include "elf_relocs.h"

/* The relocations of one SHT_RELA section, against the symbol table it links to. */
static int section_each(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			int (*visit)(const struct elf_reloc *r, void *arg), void *arg)
{
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	Elf_Data *data = elf_getdata(scn, NULL), *symdata;
	GElf_Shdr symsh;
	size_t i;
	int ret;

	if (!symscn || !gelf_getshdr(symscn, &symsh) || !data)
		return 0;
	symdata = elf_getdata(symscn, NULL);
	for (i = 0; symdata && i < sh->sh_size / sh->sh_entsize; i++) {
		GElf_Rela rela;
		GElf_Sym sym;
		struct elf_reloc r;

		if (!gelf_getrela(data, i, &rela) ||
		    !gelf_getsym(symdata, GELF_R_SYM(rela.r_info), &sym))
			continue;
		r.offset = rela.r_offset;
		r.type = GELF_R_TYPE(rela.r_info);
		r.name = elf_strptr(elf, symsh.sh_link, sym.st_name);
		r.sym_value = sym.st_value;
		r.sym_defined = sym.st_shndx != SHN_UNDEF;
		if ((ret = visit(&r, arg)))
			return ret;
	}
	return 0;
}

int elf_relocs_each(Elf *elf, int (*visit)(const struct elf_reloc *r, void *arg), void *arg)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int ret;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    sh.sh_entsize < sizeof(Elf32_Rela))
			continue;
		if ((ret = section_each(elf, scn, &sh, visit, arg)))
			return ret;
	}
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_code.h"
#include "elf_relocs.h"
#include "target_file.h"

struct elf_code {
	int fd;
	Elf *elf;
};

int elf_code_open(const char *path, struct elf_code **out)
{
	struct elf_code *ec;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	ec = calloc(1, sizeof(*ec));
	if (!ec)
		return -ENOMEM;
	ec->fd = target_file_open(path); /* never block on a FIFO the target put there */
	if (ec->fd < 0) {
		int err = ec->fd;

		free(ec);
		return err;
	}
	ec->elf = elf_begin(ec->fd, ELF_C_READ, NULL);
	if (!ec->elf || elf_kind(ec->elf) != ELF_K_ELF) {
		elf_code_close(ec);
		return -ENOEXEC;
	}
	*out = ec;
	return 0;
}

void elf_code_close(struct elf_code *ec)
{
	if (!ec)
		return;
	if (ec->elf)
		elf_end(ec->elf);
	close(ec->fd);
	free(ec);
}

/* The section holding vaddr (with file contents), and its data. */
static Elf_Data *section_at(struct elf_code *ec, uint64_t vaddr, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(ec->elf, scn))) {
		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS ||
		    !(sh->sh_flags & SHF_ALLOC))
			continue;
		if (vaddr >= sh->sh_addr && vaddr < sh->sh_addr + sh->sh_size)
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

/* Calls fn for each symbol of .dynsym and .symtab until it returns non-zero. */
static int each_symbol(struct elf_code *ec,
		       int (*fn)(void *ctx, const GElf_Sym *sym, const char *name), void *ctx)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(ec->elf, scn))) {
		Elf_Data *data;
		size_t i;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    sh.sh_entsize < sizeof(Elf32_Sym)) /* a crafted 1 loops once a byte */
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			int ret;

			if (!gelf_getsym(data, i, &sym))
				continue;
			name = elf_strptr(ec->elf, sh.sh_link, sym.st_name);
			if (name && (ret = fn(ctx, &sym, name)))
				return ret;
		}
	}
	return 0;
}

struct by_name {
	const char *name;
	GElf_Sym sym;
};

static int match_function(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct by_name *b = ctx;

	if (sym->st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym->st_info) != STT_FUNC ||
	    strcmp(name, b->name))
		return 0;
	b->sym = *sym;
	return 1;
}

int elf_code_function(struct elf_code *ec, const char *name, uint8_t *buf, size_t *len,
		      uint64_t *vaddr)
{
	struct by_name b = {.name = name};
	Elf_Data *data;
	GElf_Shdr sh;
	size_t n;

	if (each_symbol(ec, match_function, &b) != 1)
		return -ENOENT;
	data = section_at(ec, b.sym.st_value, &sh);
	if (!data || !data->d_buf)
		return -ENOENT;
	n = b.sym.st_size && b.sym.st_size < *len ? b.sym.st_size : *len;
	if (b.sym.st_value - sh.sh_addr + n > data->d_size)
		n = data->d_size - (b.sym.st_value - sh.sh_addr);
	memcpy(buf, (const uint8_t *) data->d_buf + (b.sym.st_value - sh.sh_addr), n);
	*len = n;
	*vaddr = b.sym.st_value;
	return 0;
}

struct reloc_query {
	uint64_t slot;
	unsigned int type;
	char *name;
	size_t n;
	uint64_t *value;
};

/* 1: r is the query's, copied out; -ENOENT: it is, but its name does not read; 0: not it. */
static int match_reloc(const struct elf_reloc *r, void *arg)
{
	struct reloc_query *q = arg;

	if (r->offset != q->slot || r->type != q->type)
		return 0;
	if (!r->name)
		return -ENOENT;
	snprintf(q->name, q->n, "%s", r->name);
	if (q->value)
		*q->value = r->sym_defined ? r->sym_value : 0;
	return 1;
}

/* The relocation (of `type`) whose r_offset is slot: its symbol's name and value. */
static int reloc_symbol(struct elf_code *ec, uint64_t slot, unsigned int type, char *name, size_t n,
			uint64_t *value)
{
	struct reloc_query q = {slot, type, name, n, value};
	int ret = elf_relocs_each(ec->elf, match_reloc, &q);

	return ret == 1 ? 0 : ret ? ret : -ENOENT;
}

int elf_code_plt_symbol(struct elf_code *ec, uint64_t vaddr, char *name, size_t n)
{
	GElf_Shdr sh;
	Elf_Data *data = section_at(ec, vaddr, &sh);
	const uint8_t *p;
	size_t at, i;

	if (!data || !data->d_buf)
		return -ENOENT;
	at = vaddr - sh.sh_addr;
	p = (const uint8_t *) data->d_buf;
	/* An entry is `[endbr64] [bnd] jmp *disp32(%rip)` (ff 25) within its first 16 bytes. */
	for (i = at; i + 6 <= data->d_size && i < at + 16; i++) {
		int32_t disp;

		if (p[i] != 0xff || p[i + 1] != 0x25)
			continue;
		memcpy(&disp, p + i + 2, sizeof(disp));
		return reloc_symbol(ec, sh.sh_addr + i + 6 + (int64_t) disp, R_X86_64_JUMP_SLOT,
				    name, n, NULL);
	}
	return -ENOENT;
}

int elf_code_got_symbol(struct elf_code *ec, uint64_t vaddr, char *name, size_t n, uint64_t *value)
{
	return reloc_symbol(ec, vaddr, R_X86_64_GLOB_DAT, name, n, value);
}

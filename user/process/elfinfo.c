// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf_relocs.h"
#include "elfinfo.h"
#include "target_file.h"

struct elf_file {
	int fd;
	Elf *elf;
};

static int elf_file_open(const char *path, struct elf_file *ef)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	/* Paths come from the target: never block on a FIFO it put there. */
	ef->fd = target_file_open(path);
	if (ef->fd < 0)
		return ef->fd;
	ef->elf = elf_begin(ef->fd, ELF_C_READ, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF) {
		if (ef->elf)
			elf_end(ef->elf);
		close(ef->fd);
		return -ENOEXEC;
	}
	return 0;
}

static void elf_file_close(struct elf_file *ef)
{
	elf_end(ef->elf);
	close(ef->fd);
}

static int find_symbol(Elf *elf, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t i, count;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || sh.sh_entsize < sizeof(Elf32_Sym)) /* a crafted 1 loops once a byte */
			continue;
		count = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < count; i++) {
			GElf_Sym sym;
			const char *sname;

			if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			sname = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (sname && strcmp(sname, name) == 0) {
				*out = sym;
				return 0;
			}
		}
	}
	return -ENOENT;
}

int elf_symbol_value(const char *path, const char *name, uint64_t *value, uint64_t *size)
{
	struct elf_file ef;
	GElf_Sym sym;
	int ret;

	ret = elf_file_open(path, &ef);
	if (ret)
		return ret;
	ret = find_symbol(ef.elf, name, &sym);
	if (!ret) {
		*value = sym.st_value;
		if (size)
			*size = sym.st_size;
	}
	elf_file_close(&ef);
	return ret;
}

int elf_symbol_string(const char *path, const char *name, char *buf, size_t n)
{
	struct elf_file ef;
	Elf_Scn *scn;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	uint64_t at;
	size_t len;
	int ret;

	if (!n)
		return -EINVAL;
	ret = elf_file_open(path, &ef);
	if (ret)
		return ret;
	ret = find_symbol(ef.elf, name, &sym);
	if (ret)
		goto out;
	ret = -ENOENT;
	scn = elf_getscn(ef.elf, sym.st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
		goto out;
	data = elf_getdata(scn, NULL);
	if (!data || sym.st_value < sh.sh_addr || sym.st_value - sh.sh_addr >= data->d_size)
		goto out;
	at = sym.st_value - sh.sh_addr;
	len = strnlen((const char *)data->d_buf + at, data->d_size - at);
	if (len >= n || len == data->d_size - at) /* too long or not terminated */
		goto out;
	memcpy(buf, (const char *)data->d_buf + at, len + 1);
	ret = 0;
out:
	elf_file_close(&ef);
	return ret;
}

struct tls_query {
	const char *name;
	uint64_t *slot;
};

static int match_tls_module(const struct elf_reloc *r, void *arg)
{
	struct tls_query *q = arg;

	if (r->type != R_X86_64_DTPMOD64 || !r->name || strcmp(r->name, q->name))
		return 0;
	*q->slot = r->offset;
	return 1;
}

int elf_tls_module_slot(const char *path, const char *name, uint64_t *slot)
{
	struct elf_file ef;
	struct tls_query q = {name, slot};
	int ret;

	ret = elf_file_open(path, &ef);
	if (ret)
		return ret;
	ret = elf_relocs_each(ef.elf, match_tls_module, &q) == 1 ? 0 : -ENOENT;
	elf_file_close(&ef);
	return ret;
}

/* The first PT_LOAD segment that holds vaddr, or with any_vaddr, the first one. */
static int find_load_segment(const char *path, uint64_t vaddr, bool any_vaddr, GElf_Phdr *found)
{
	struct elf_file ef;
	size_t i, phnum;
	int ret;

	ret = elf_file_open(path, &ef);
	if (ret)
		return ret;
	ret = -ENOENT;
	if (elf_getphdrnum(ef.elf, &phnum) == 0) {
		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(ef.elf, i, &ph) && ph.p_type == PT_LOAD &&
			    (any_vaddr || (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz))) {
				*found = ph;
				ret = 0;
				break;
			}
		}
	}
	elf_file_close(&ef);
	return ret;
}

int elf_first_load_vaddr(const char *path, uint64_t *vaddr)
{
	GElf_Phdr ph;
	int ret = find_load_segment(path, 0, true, &ph);

	if (!ret)
		*vaddr = ph.p_vaddr;
	return ret;
}

int elf_vaddr_to_offset(const char *path, uint64_t vaddr, uint64_t *offset)
{
	GElf_Phdr ph;
	int ret = find_load_segment(path, vaddr, false, &ph);

	if (!ret)
		*offset = vaddr - ph.p_vaddr + ph.p_offset;
	return ret;
}

bool elf_has_usdt(const char *path, const char *provider, const char *name)
{
	struct elf_file ef;
	Elf_Scn *scn = NULL;
	bool found = false;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_file_open(path, &ef))
		return false;
	if (elf_getshdrstrndx(ef.elf, &shstrndx))
		goto out;
	while (!found && (scn = elf_nextscn(ef.elf, scn))) {
		const char *sname;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		sname = elf_strptr(ef.elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".note.stapsdt"))
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			/* desc: pc, base, semaphore (3 addresses), then provider\0name\0args\0 */
			const char *desc = (const char *)data->d_buf + desc_off;
			size_t addrs = 3 * (gelf_getclass(ef.elf) == ELFCLASS32 ? 4 : 8);
			const char *prov, *probe;

			if (nh.n_type != 3 || nh.n_descsz <= addrs)
				continue;
			prov = desc + addrs;
			probe = prov + strnlen(prov, nh.n_descsz - addrs) + 1;
			if (probe < desc + nh.n_descsz && strcmp(prov, provider) == 0 &&
			    strncmp(probe, name, desc + nh.n_descsz - probe) == 0) {
				found = true;
				break;
			}
		}
	}
out:
	elf_file_close(&ef);
	return found;
}

static int try_dir(const char *dir, const char *origin, const char *lib, char *out, size_t n)
{
	char path[PATH_MAX];

	if (strncmp(dir, "$ORIGIN", 7) == 0)
		snprintf(path, sizeof(path), "%s%s/%s", origin, dir + 7, lib);
	else
		snprintf(path, sizeof(path), "%s/%s", dir, lib);
	if (access(path, R_OK))
		return -ENOENT;
	snprintf(out, n, "%s", path);
	return 0;
}

static int search_path_list(const char *list, const char *origin, const char *lib, char *out,
			    size_t n)
{
	char *copy, *dir, *save = NULL;
	int ret = -ENOENT;

	if (!list || !*list)
		return -ENOENT;
	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (dir = strtok_r(copy, ":", &save); dir && ret; dir = strtok_r(NULL, ":", &save))
		ret = try_dir(dir, origin, lib, out, n);
	free(copy);
	return ret;
}

/* The first DT_NEEDED that starts with prefix, and the file's DT_RUNPATH and DT_RPATH. */
static int dynamic_names(const char *path, const char *prefix, char *needed, size_t nn,
			 char *runpath, char *rpath)
{
	struct elf_file ef;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int ret;

	ret = elf_file_open(path, &ef);
	if (ret)
		return ret;
	while ((scn = elf_nextscn(ef.elf, scn))) {
		Elf_Data *data;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(data, i, &dyn))
				continue;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(ef.elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED && !needed[0] && strncmp(s, prefix, strlen(prefix)) == 0)
				snprintf(needed, nn, "%s", s);
			else if (dyn.d_tag == DT_RUNPATH && !runpath[0])
				snprintf(runpath, PATH_MAX, "%s", s);
			else if (dyn.d_tag == DT_RPATH && !rpath[0])
				snprintf(rpath, PATH_MAX, "%s", s);
		}
	}
	elf_file_close(&ef);
	return needed[0] ? 0 : -ENOENT;
}

int elf_needed_name(const char *path, const char *prefix, char *out, size_t n)
{
	char runpath[PATH_MAX] = "", rpath[PATH_MAX] = "";

	out[0] = '\0';
	return dynamic_names(path, prefix, out, n, runpath, rpath);
}

int elf_resolve_needed(const char *path, const char *prefix, char *out, size_t n)
{
	static const char *const system_dirs =
		"/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib/aarch64-linux-gnu:"
		"/usr/lib/aarch64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib:/usr/local/lib";
	char needed[256] = "", runpath[PATH_MAX] = "", rpath[PATH_MAX] = "", origin[PATH_MAX];
	int ret;

	ret = dynamic_names(path, prefix, needed, sizeof(needed), runpath, rpath);
	if (ret)
		return ret;

	/* $ORIGIN: the directory of the file, as dirname() would give it. */
	snprintf(origin, sizeof(origin), "%s", path);
	if (strrchr(origin, '/'))
		*strrchr(origin, '/') = '\0';
	else
		snprintf(origin, sizeof(origin), ".");
	/* ld.so's order: DT_RPATH (only without DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH. */
	if ((!runpath[0] && !search_path_list(rpath, origin, needed, out, n)) ||
	    !search_path_list(getenv("LD_LIBRARY_PATH"), origin, needed, out, n) ||
	    !search_path_list(runpath, origin, needed, out, n) ||
	    !search_path_list(system_dirs, origin, needed, out, n))
		return 0;
	return -ENOENT;
}

// SPDX-License-Identifier: MIT
/* Opens an ELF file for its symbol tables and loadable segments (see elf_tables.h). */
#include "probe/elf_tables.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error_message.h"

bool elf_file_identity_same(const struct elf_file_identity *a, const struct elf_file_identity *b)
{
	return a->device == b->device && a->inode == b->inode && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

void elf_file_close(struct elf_file *file)
{
	free(file->loads);
	library_file_close_elf(&file->file);
	memset(file, 0, sizeof(*file));
	file->file.fd = -1;
}

int elf_file_stat(const char *path, struct elf_file_identity *identity, char *error,
		  size_t error_size)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		int err = errno;

		if (err == ENOENT)
			return error_fail(
				error, error_size, err,
				"cannot open %s: no such file; check the path (a library of a "
				"process in a container is reached through /proc/PID/root)",
				path);
		if (err == EACCES || err == EPERM)
			return error_fail(
				error, error_size, err,
				"cannot open %s: permission denied; run tcheck-bpf as root", path);
		return error_fail(error, error_size, err, "cannot open %s: %s", path,
				  strerror(err));
	}
	if (!S_ISREG(st.st_mode))
		return error_fail(error, error_size, ENOEXEC, "%s is not an ELF file", path);
	identity->device = st.st_dev;
	identity->inode = st.st_ino;
	identity->size = st.st_size;
	identity->mtime = st.st_mtim;
	return 0;
}

int elf_file_open(const char *path, struct elf_file *file, char *error, size_t error_size)
{
	size_t header_count;
	int err;

	memset(file, 0, sizeof(*file));
	err = library_file_open_elf(path, &file->file, error, error_size);
	if (err == -ENOEXEC)
		return error_fail(error, error_size, ENOEXEC, "%s is not an ELF file", path);
	if (err)
		return err;
	if (elf_getphdrnum(file->file.elf, &header_count) != 0) {
		elf_file_close(file);
		return error_fail(error, error_size, ENOEXEC, "%s is a damaged ELF file: %s", path,
				  elf_errmsg(-1));
	}
	file->loads = calloc(header_count ? header_count : 1, sizeof(*file->loads));
	if (!file->loads) {
		elf_file_close(file);
		return error_fail(error, error_size, ENOMEM, "out of memory reading %s", path);
	}
	for (size_t i = 0; i < header_count; i++) {
		GElf_Phdr header;

		if (gelf_getphdr(file->file.elf, (int)i, &header) && header.p_type == PT_LOAD)
			file->loads[file->load_count++] = header;
	}
	for (Elf_Scn *section = elf_nextscn(file->file.elf, NULL); section;
	     section = elf_nextscn(file->file.elf, section)) {
		GElf_Shdr header;

		if (!gelf_getshdr(section, &header))
			continue;
		if (header.sh_type == SHT_DYNSYM)
			file->dynsym = section;
		else if (header.sh_type == SHT_SYMTAB)
			file->symtab = section;
	}
	return 0;
}

int elf_file_open_with_symbols(const char *path, struct elf_file *file, const char *wanted,
			       char *error, size_t error_size)
{
	struct elf_file_identity identity = { 0 };
	int err;

	err = elf_file_stat(path, &identity, error, error_size);
	if (err)
		return err;
	err = elf_file_open(path, file, error, error_size);
	if (err)
		return err;
	if (!file->dynsym && !file->symtab) {
		elf_file_close(file);
		return error_fail(error, error_size, ENODATA,
				  "%s has no symbol table (it was stripped): %s cannot be found in "
				  "it",
				  path, wanted);
	}
	return 0;
}

bool elf_file_offset_of(const struct elf_file *file, uint64_t address, uint64_t *file_offset)
{
	for (size_t i = 0; i < file->load_count; i++) {
		const GElf_Phdr *load = &file->loads[i];

		if (address >= load->p_vaddr && address < load->p_vaddr + load->p_filesz) {
			*file_offset = address - load->p_vaddr + load->p_offset;
			return true;
		}
	}
	return false;
}

bool symbol_table_open(struct elf_file *file, Elf_Scn *section, struct symbol_table *table)
{
	Elf_Data *strings;
	GElf_Shdr header;

	if (!section || !gelf_getshdr(section, &header) || header.sh_entsize == 0)
		return false;
	table->symbols = elf_getdata(section, NULL);
	strings = elf_getdata(elf_getscn(file->file.elf, header.sh_link), NULL);
	if (!table->symbols || !strings || !strings->d_buf)
		return false;
	table->count = header.sh_size / header.sh_entsize;
	table->strings = strings->d_buf;
	table->strings_size = strings->d_size;
	return true;
}

const char *symbol_table_name(const struct symbol_table *table, const GElf_Sym *symbol)
{
	if (symbol->st_name >= table->strings_size ||
	    !memchr(table->strings + symbol->st_name, '\0', table->strings_size - symbol->st_name))
		return NULL;
	return table->strings + symbol->st_name;
}

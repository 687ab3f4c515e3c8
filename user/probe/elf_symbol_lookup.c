// SPDX-License-Identifier: MIT
/* Finds a symbol of an ELF file by its name, or every function whose name starts a certain way. */
#include "probe/elf_symbol_lookup.h"

#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <string.h>

#include "base/error_message.h"
#include "probe/elf_tables.h"

static bool find_in_table(struct elf_file *file, Elf_Scn *section, const char *name,
			  GElf_Sym *found)
{
	struct symbol_table table;

	if (!symbol_table_open(file, section, &table))
		return false;
	for (size_t i = 0; i < table.count; i++) {
		const char *text;
		GElf_Sym symbol;
		int type;

		if (!gelf_getsym(table.symbols, (int)i, &symbol) || symbol.st_shndx == SHN_UNDEF)
			continue;
		type = GELF_ST_TYPE(symbol.st_info);
		if (type == STT_SECTION || type == STT_FILE || type == STT_TLS)
			continue;
		text = symbol_table_name(&table, &symbol);
		if (text && strcmp(text, name) == 0) {
			*found = symbol;
			return true;
		}
	}
	return false;
}

int elf_symbol_find(const char *path, const char *name, struct elf_symbol_location *location,
		    char *error, size_t error_size)
{
	struct elf_file file;
	GElf_Sym symbol;
	int err;

	err = elf_file_open_with_symbols(path, &file, name, error, error_size);
	if (err)
		return err;
	if (!find_in_table(&file, file.dynsym, name, &symbol) &&
	    !find_in_table(&file, file.symtab, name, &symbol)) {
		elf_file_close(&file);
		return error_fail(
			error, error_size, ENOENT,
			"%s does not define the symbol %s; check that it is the right file "
			"and version",
			path, name);
	}
	location->address = symbol.st_value;
	location->size = symbol.st_size;
	if (!elf_file_offset_of(&file, symbol.st_value, &location->file_offset)) {
		elf_file_close(&file);
		return error_fail(error, error_size, ERANGE,
				  "the symbol %s of %s at 0x%llx has no bytes in the file (it is "
				  "zero-initialised data), so it has no file offset",
				  name, path, (unsigned long long)symbol.st_value);
	}
	elf_file_close(&file);
	return 0;
}

int elf_symbol_file_offset(const char *path, const char *name, uint64_t *file_offset, char *error,
			   size_t error_size)
{
	struct elf_symbol_location location = { 0 };
	int err = elf_symbol_find(path, name, &location, error, error_size);

	if (!err)
		*file_offset = location.file_offset;
	return err;
}

static bool name_has_prefix(const char *name, const char *const *prefixes, size_t prefix_count)
{
	for (size_t i = 0; i < prefix_count; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

static int visit_functions_in_table(struct elf_file *file, Elf_Scn *section,
				    const char *const *prefixes, size_t prefix_count,
				    elf_function_visit_fn visit, void *context)
{
	struct symbol_table table;

	if (!symbol_table_open(file, section, &table))
		return 0;
	for (size_t i = 0; i < table.count; i++) {
		struct elf_symbol_location location;
		const char *text;
		GElf_Sym symbol;
		int err;

		if (!gelf_getsym(table.symbols, (int)i, &symbol) || symbol.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_size == 0)
			continue;
		text = symbol_table_name(&table, &symbol);
		if (!text || !name_has_prefix(text, prefixes, prefix_count))
			continue;
		location.address = symbol.st_value;
		location.size = symbol.st_size;
		if (!elf_file_offset_of(file, symbol.st_value, &location.file_offset))
			continue;
		err = visit(context, text, &location);
		if (err)
			return err;
	}
	return 0;
}

int elf_functions_with_prefixes(const char *path, const char *const *prefixes, size_t prefix_count,
				elf_function_visit_fn visit, void *context, char *error,
				size_t error_size)
{
	struct elf_file file;
	int err;

	err = elf_file_open_with_symbols(path, &file, "its functions", error, error_size);
	if (err)
		return err;
	err = visit_functions_in_table(&file, file.dynsym, prefixes, prefix_count, visit, context);
	if (!err)
		err = visit_functions_in_table(&file, file.symtab, prefixes, prefix_count, visit,
					       context);
	elf_file_close(&file);
	return err;
}

// SPDX-License-Identifier: MIT
/* The names libtorch_cpu.so exports with a prefix, and the probe sites found among them. */
#include "python/torch_probe_sites.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/error_message.h"
#include "probe/library_file.h"
#include "probe/uprobe_entry_site.h"

void torch_name_list_free(struct torch_name_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		free(list->names[i]);
	free(list->names);
	memset(list, 0, sizeof(*list));
}

static int name_list_add(struct torch_name_list *list, const char *name, size_t length)
{
	if (growable_array_room_for_one((void **)&list->names, list->count, &list->capacity,
					sizeof(*list->names)))
		return -ENOMEM;
	list->names[list->count] = strndup(name, length);
	if (!list->names[list->count])
		return -ENOMEM;
	list->count++;
	return 0;
}

static int compare_names(const void *left, const void *right)
{
	return strcmp(*(char *const *)left, *(char *const *)right);
}

static void name_list_finish(struct torch_name_list *list)
{
	size_t kept = 0;

	if (list->count)
		qsort(list->names, list->count, sizeof(*list->names), compare_names);
	for (size_t i = 0; i < list->count; i++) {
		if (kept && strcmp(list->names[kept - 1], list->names[i]) == 0)
			free(list->names[i]);
		else
			list->names[kept++] = list->names[i];
	}
	list->count = kept;
}

int torch_dynamic_names_with_prefix(const char *path, const char *prefix,
				    struct torch_name_list *list, char *error, size_t error_size)
{
	size_t prefix_length = strlen(prefix);
	Elf_Data *strings = NULL;
	struct library_elf file;
	int err;

	err = library_file_open_elf(path, &file, error, error_size);
	if (err)
		return err;
	for (Elf_Scn *section = elf_nextscn(file.elf, NULL); section && !strings;
	     section = elf_nextscn(file.elf, section)) {
		GElf_Shdr header;

		if (gelf_getshdr(section, &header) && header.sh_type == SHT_DYNSYM)
			strings = elf_getdata(elf_getscn(file.elf, header.sh_link), NULL);
	}
	if (!strings || !strings->d_buf) {
		err = error_fail(error, error_size, ENODATA,
				 "%s has no dynamic symbol table, so it exports no functions",
				 path);
	} else {
		const char *text = strings->d_buf, *end = text + strings->d_size;

		for (const char *found = memmem(text, end - text, prefix, prefix_length);
		     found && !err;
		     found = memmem(found + 1, end - found - 1, prefix, prefix_length))
			err = name_list_add(list, found, strnlen(found, end - found));
		if (err)
			error_format(error, error_size, "out of memory reading the names of %s",
				     path);
	}
	library_file_close_elf(&file);
	if (err)
		torch_name_list_free(list);
	else
		name_list_finish(list);
	return err;
}

int torch_single_defined_symbol(const char *path, const struct torch_name_list *names,
				const char **name, struct elf_symbol_location *location)
{
	size_t defined = 0;

	for (size_t i = 0; i < names->count; i++) {
		struct elf_symbol_location found;

		if (elf_symbol_find(path, names->names[i], &found, NULL, 0) != 0)
			continue;
		if (defined++ == 0) {
			*name = names->names[i];
			*location = found;
		}
	}
	return defined == 0 ? -ENOENT : defined == 1 ? 0 : -EMLINK;
}

int torch_probe_site_set(struct torch_probe_site *site, const char *symbol, bool exported,
			 const struct elf_symbol_location *location)
{
	site->symbol = strdup(symbol);
	site->exported = exported;
	site->address = location->address;
	site->file_offset = location->file_offset;
	return site->symbol ? 0 : -ENOMEM;
}

int torch_probe_site_set_reading(struct torch_probe_site *site, const char *format, ...)
{
	va_list arguments;
	char *reading;
	int written;

	va_start(arguments, format);
	written = vasprintf(&reading, format, arguments);
	va_end(arguments);
	if (written < 0)
		return -ENOMEM;
	free(site->reading);
	site->reading = reading;
	return 0;
}

void torch_probe_site_free(struct torch_probe_site *site)
{
	free(site->symbol);
	free(site->reading);
	memset(site, 0, sizeof(*site));
}

int torch_probe_site_move_to_emulated_instruction(const char *path, struct torch_probe_site *site)
{
	uint64_t moved =
		uprobe_cheap_entry_file_offset(path, site->file_offset) - site->file_offset;
	char *reading;

	if (moved == 0)
		return 0;
	site->file_offset += moved;
	site->address += moved;
	if (asprintf(&reading,
		     "%s (probed +%d bytes in, on the first instruction the kernel emulates "
		     "instead of single-stepping: past a leading endbr64 or compare; the "
		     "registers are still the entry's)",
		     site->reading ? site->reading : "", (int)moved) < 0)
		return -ENOMEM;
	free(site->reading);
	site->reading = reading;
	return 0;
}

// SPDX-License-Identifier: MIT
/* Finds the NCCL API functions an ELF file defines and the file offsets uprobes attach at. */
#include "probe/elf_symbols.h"

#include <errno.h>
#include <gelf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/growable_array.h"
#include "base/error_message.h"
#include "model/nccl_api.h"
#include "probe/elf_tables.h"

/*
 * The sentences of failures that depend only on the file's contents, so a
 * cached failure is described again for whichever path reached the file.
 */
static int fail_cached(char *error, size_t error_size, int err, const char *path)
{
	switch (err) {
	case ENOEXEC:
		return error_fail(error, error_size, err, "%s is not an ELF file", path);
	case ENODATA:
		return error_fail(
			error, error_size, err,
			"%s has no symbol table (it was stripped): its NCCL functions cannot "
			"be found; use a build that keeps .dynsym or .symtab",
			path);
	case ENOMSG:
		return error_fail(
			error, error_size, err,
			"%s defines no NCCL API function (it may only call into libnccl); "
			"point tcheck-bpf at the library that defines ncclAllReduce",
			path);
	default:
		return error_fail(error, error_size, err, "cannot read the symbols of %s: %s", path,
				  strerror(err));
	}
}

/* What is known about one file; each part is computed at most once. */
struct cache_entry {
	struct elf_file_identity identity;
	int has_nccl; /* 1, 0, or -1 not yet known */
	bool scanned;
	int scan_result;	      /* 0 or the negative errno of the scan */
	struct nccl_library *library; /* when scan_result is 0 */
	struct cache_entry *next;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cache_entry *cache;

/* Called with cache_lock held. */
static struct cache_entry *cache_entry_for(const struct elf_file_identity *identity)
{
	struct cache_entry *entry;

	for (entry = cache; entry; entry = entry->next)
		if (elf_file_identity_same(&entry->identity, identity))
			return entry;
	entry = calloc(1, sizeof(*entry));
	if (!entry)
		return NULL;
	entry->identity = *identity;
	entry->has_nccl = -1;
	entry->next = cache;
	cache = entry;
	return entry;
}

void elf_symbols_cache_clear(void)
{
	pthread_mutex_lock(&cache_lock);
	while (cache) {
		struct cache_entry *next = cache->next;

		nccl_library_free(cache->library);
		free(cache);
		cache = next;
	}
	pthread_mutex_unlock(&cache_lock);
}

/*
 * The table function a defined function symbol names, or NULL. Undefined
 * symbols are left out: a library that calls ncclAllReduce is not NCCL.
 */
static const struct nccl_function *nccl_function_of(const struct symbol_table *table,
						    const GElf_Sym *symbol, const char **name)
{
	const char *text;

	if (symbol->st_shndx == SHN_UNDEF || GELF_ST_TYPE(symbol->st_info) != STT_FUNC ||
	    symbol->st_size == 0)
		return NULL;
	text = symbol_table_name(table, symbol);
	/* Cheap filter before the table lookup: most of a big library's symbols fail here. */
	if (!text || (text[0] != 'n' && text[0] != 'p'))
		return NULL;
	*name = text;
	return nccl_function_by_name(text);
}

/* One defined NCCL symbol, before symbols at one address are merged. */
struct symbol_candidate {
	uint64_t address;
	uint64_t size;
	int function_index;
	bool strong;	  /* STB_GLOBAL: "pncclX", the implementation the weak "ncclX" aliases */
	const char *name; /* points into the file's string table */
};

struct candidate_list {
	struct symbol_candidate *items;
	size_t count;
	size_t capacity;
};

static int collect_candidates(struct elf_file *file, Elf_Scn *section,
			      struct candidate_list *candidates)
{
	struct symbol_table table;

	if (!symbol_table_open(file, section, &table))
		return 0;
	for (size_t i = 0; i < table.count; i++) {
		const struct nccl_function *function;
		const char *name = NULL;
		GElf_Sym symbol;

		if (!gelf_getsym(table.symbols, (int)i, &symbol))
			continue;
		function = nccl_function_of(&table, &symbol, &name);
		if (!function)
			continue;
		if (growable_array_room_for_one((void **)&candidates->items, candidates->count,
						&candidates->capacity, sizeof(*candidates->items)))
			return -ENOMEM;
		candidates->items[candidates->count++] = (struct symbol_candidate){
			.address = symbol.st_value,
			.size = symbol.st_size,
			.function_index = nccl_function_index(function),
			.strong = GELF_ST_BIND(symbol.st_info) == STB_GLOBAL,
			.name = name,
		};
	}
	return 0;
}

static int compare_candidates(const void *left, const void *right)
{
	const struct symbol_candidate *a = left, *b = right;

	if (a->address != b->address)
		return a->address < b->address ? -1 : 1;
	/* The strong symbol first, so it decides which function an address is. */
	return (int)b->strong - (int)a->strong;
}

static bool has_name(const struct nccl_symbol *symbol, const char *name)
{
	for (size_t i = 0; i < symbol->name_count; i++)
		if (strcmp(symbol->names[i], name) == 0)
			return true;
	return false;
}

void nccl_library_free(struct nccl_library *library)
{
	if (!library)
		return;
	for (size_t i = 0; i < library->symbol_count; i++)
		for (size_t j = 0; j < library->symbols[i].name_count; j++)
			free(library->symbols[i].names[j]);
	free(library->symbols);
	free(library->path);
	free(library);
}

/* Merges candidates sorted by address into one probe site per address. */
static int merge_candidates(const struct elf_file *file, struct candidate_list *candidates,
			    struct nccl_library *library)
{
	library->symbols =
		calloc(candidates->count ? candidates->count : 1, sizeof(*library->symbols));
	if (!library->symbols)
		return -ENOMEM;
	for (size_t i = 0; i < candidates->count; i++) {
		const struct symbol_candidate *candidate = &candidates->items[i];
		struct nccl_symbol *site =
			library->symbol_count ? &library->symbols[library->symbol_count - 1] : NULL;
		uint64_t file_offset;

		if (!site || site->address != candidate->address) {
			/* A symbol with no bytes in the file cannot carry a uprobe. */
			if (!elf_file_offset_of(file, candidate->address, &file_offset))
				continue;
			site = &library->symbols[library->symbol_count++];
			site->function_index = candidate->function_index;
			site->address = candidate->address;
			site->file_offset = file_offset;
			site->size = candidate->size;
		}
		if (has_name(site, candidate->name) || site->name_count == NCCL_SYMBOL_MAX_NAMES)
			continue;
		site->names[site->name_count] = strdup(candidate->name);
		if (!site->names[site->name_count])
			return -ENOMEM;
		site->name_count++;
	}
	return 0;
}

static void format_build_id(const uint8_t *bytes, size_t length, char *hex, size_t hex_size)
{
	size_t i;

	for (i = 0; i < length && 2 * i + 2 < hex_size; i++)
		snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
	hex[2 * i] = '\0';
}

static bool build_id_in_notes(Elf_Data *data, char *hex, size_t hex_size)
{
	size_t offset = 0, name_offset, description_offset;
	GElf_Nhdr note;

	while (data && offset < data->d_size &&
	       (offset = gelf_getnote(data, offset, &note, &name_offset, &description_offset)) >
		       0) {
		if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_offset, "GNU", 4) == 0) {
			format_build_id((const uint8_t *)data->d_buf + description_offset,
					note.n_descsz, hex, hex_size);
			return true;
		}
	}
	return false;
}

/* The NT_GNU_BUILD_ID note, from the note sections or, without section headers, the segments. */
static void read_build_id(struct elf_file *file, char *hex, size_t hex_size)
{
	size_t header_count;

	hex[0] = '\0';
	for (Elf_Scn *section = elf_nextscn(file->file.elf, NULL); section;
	     section = elf_nextscn(file->file.elf, section)) {
		GElf_Shdr header;

		if (gelf_getshdr(section, &header) && header.sh_type == SHT_NOTE &&
		    build_id_in_notes(elf_getdata(section, NULL), hex, hex_size))
			return;
	}
	if (elf_getphdrnum(file->file.elf, &header_count) != 0)
		return;
	for (size_t i = 0; i < header_count; i++) {
		GElf_Phdr header;
		Elf_Data *notes;

		if (!gelf_getphdr(file->file.elf, (int)i, &header) || header.p_type != PT_NOTE)
			continue;
		notes = elf_getdata_rawchunk(file->file.elf, (int64_t)header.p_offset,
					     header.p_filesz,
					     header.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (build_id_in_notes(notes, hex, hex_size))
			return;
	}
}

static int scan_file(const char *path, struct nccl_library **result, char *error, size_t error_size)
{
	struct candidate_list candidates = { 0 };
	struct nccl_library *library = NULL;
	struct elf_file file;
	int err;

	err = elf_file_open(path, &file, error, error_size);
	if (err)
		return err;
	if (!file.dynsym && !file.symtab) {
		err = fail_cached(error, error_size, ENODATA, path);
		goto out;
	}
	err = collect_candidates(&file, file.dynsym, &candidates);
	if (!err)
		err = collect_candidates(&file, file.symtab, &candidates);
	if (err) {
		err = error_fail(error, error_size, ENOMEM,
				 "out of memory reading the symbols of %s", path);
		goto out;
	}
	if (candidates.count)
		qsort(candidates.items, candidates.count, sizeof(*candidates.items),
		      compare_candidates);
	library = calloc(1, sizeof(*library));
	if (!library || merge_candidates(&file, &candidates, library) != 0) {
		err = error_fail(error, error_size, ENOMEM,
				 "out of memory reading the symbols of %s", path);
		goto out;
	}
	if (library->symbol_count == 0) {
		err = fail_cached(error, error_size, ENOMSG, path);
		goto out;
	}
	read_build_id(&file, library->build_id, sizeof(library->build_id));
	*result = library;
	library = NULL;
out:
	nccl_library_free(library);
	free(candidates.items);
	elf_file_close(&file);
	return err;
}

static struct nccl_library *library_copy(const struct nccl_library *source, const char *path)
{
	struct nccl_library *copy = calloc(1, sizeof(*copy));

	if (!copy)
		return NULL;
	memcpy(copy->build_id, source->build_id, sizeof(copy->build_id));
	copy->path = strdup(path);
	copy->symbols =
		calloc(source->symbol_count ? source->symbol_count : 1, sizeof(*copy->symbols));
	if (!copy->path || !copy->symbols)
		goto fail;
	for (size_t i = 0; i < source->symbol_count; i++) {
		copy->symbols[i] = source->symbols[i];
		copy->symbols[i].name_count = 0;
		copy->symbol_count++;
		for (size_t j = 0; j < source->symbols[i].name_count; j++) {
			copy->symbols[i].names[j] = strdup(source->symbols[i].names[j]);
			if (!copy->symbols[i].names[j])
				goto fail;
			copy->symbols[i].name_count++;
		}
	}
	return copy;
fail:
	nccl_library_free(copy);
	return NULL;
}

/* Failures a file's contents cause are cached; those of reading it (ENOMEM, EIO) are not. */
static bool cacheable(int result)
{
	return result == 0 || result == -ENOEXEC || result == -ENODATA || result == -ENOMSG;
}

int nccl_library_scan(const char *path, struct nccl_library **library, char *error,
		      size_t error_size)
{
	struct elf_file_identity identity = { 0 };
	struct nccl_library *scanned = NULL;
	struct cache_entry *entry;
	int err;

	*library = NULL;
	err = elf_file_stat(path, &identity, error, error_size);
	if (err)
		return err;
	/* Held across the scan so that ranks asking at once wait for one parse. */
	pthread_mutex_lock(&cache_lock);
	entry = cache_entry_for(&identity);
	if (entry && entry->scanned) {
		err = entry->scan_result;
		if (!err) {
			*library = library_copy(entry->library, path);
			if (!*library)
				err = -ENOMEM;
		}
		pthread_mutex_unlock(&cache_lock);
		if (err == -ENOMEM)
			return error_fail(error, error_size, ENOMEM, "out of memory reading %s",
					  path);
		return err ? fail_cached(error, error_size, -err, path) : 0;
	}
	err = scan_file(path, &scanned, error, error_size);
	if (entry && cacheable(err)) {
		entry->scanned = true;
		entry->scan_result = err;
		entry->has_nccl = err == 0;
		if (!err)
			entry->library = library_copy(scanned, path);
		if (!err && !entry->library)
			entry->scanned = false;
	}
	pthread_mutex_unlock(&cache_lock);
	*library = scanned;
	return err;
}

const struct nccl_symbol *nccl_library_find(const struct nccl_library *library,
					    size_t function_index)
{
	for (size_t i = 0; i < library->symbol_count; i++)
		if (library->symbols[i].function_index == (int)function_index)
			return &library->symbols[i];
	return NULL;
}

size_t nccl_library_missing(const struct nccl_library *library, char *buffer, size_t size)
{
	size_t missing = 0, used = 0;

	if (size)
		buffer[0] = '\0';
	for (size_t i = 0; i < nccl_function_count(); i++) {
		int written;

		if (nccl_library_find(library, i))
			continue;
		missing++;
		if (used >= size)
			continue;
		written = snprintf(buffer + used, size - used, "%s%s", missing > 1 ? ", " : "",
				   nccl_function_at(i)->name);
		used += written > 0 ? (size_t)written : 0;
	}
	return missing;
}

static bool table_has_nccl(struct elf_file *file, Elf_Scn *section)
{
	struct symbol_table table;

	if (!symbol_table_open(file, section, &table))
		return false;
	for (size_t i = 0; i < table.count; i++) {
		const char *name;
		GElf_Sym symbol;

		if (gelf_getsym(table.symbols, (int)i, &symbol) &&
		    nccl_function_of(&table, &symbol, &name))
			return true;
	}
	return false;
}

int elf_file_has_nccl(const char *path, char *error, size_t error_size)
{
	struct elf_file_identity identity = { 0 };
	struct cache_entry *entry;
	struct elf_file file;
	int err, found;

	err = elf_file_stat(path, &identity, error, error_size);
	if (err)
		return err == -ENOEXEC ? 0 : err;
	pthread_mutex_lock(&cache_lock);
	entry = cache_entry_for(&identity);
	if (entry && entry->has_nccl >= 0) {
		found = entry->has_nccl;
		pthread_mutex_unlock(&cache_lock);
		return found;
	}
	err = elf_file_open(path, &file, error, error_size);
	if (err) {
		/* Data files (fonts, locale archives) are mapped too: they simply hold no NCCL. */
		if (err == -ENOEXEC && entry)
			entry->has_nccl = 0;
		pthread_mutex_unlock(&cache_lock);
		return err == -ENOEXEC ? 0 : err;
	}
	/* .dynsym is small even in libtorch_cuda; .symtab is read only when the exports miss. */
	found = table_has_nccl(&file, file.dynsym) || table_has_nccl(&file, file.symtab);
	elf_file_close(&file);
	if (entry)
		entry->has_nccl = found;
	pthread_mutex_unlock(&cache_lock);
	return found;
}

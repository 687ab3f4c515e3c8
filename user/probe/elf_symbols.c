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
#include "probe/library_file.h"

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

/* A file is the same file while its device, inode, size and mtime are. */
struct file_identity {
	dev_t device;
	ino_t inode;
	off_t size;
	struct timespec mtime;
};

/* What is known about one file; each part is computed at most once. */
struct cache_entry {
	struct file_identity identity;
	int has_nccl; /* 1, 0, or -1 not yet known */
	bool scanned;
	int scan_result;	      /* 0 or the negative errno of the scan */
	struct nccl_library *library; /* when scan_result is 0 */
	struct cache_entry *next;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cache_entry *cache;

static bool same_file(const struct file_identity *a, const struct file_identity *b)
{
	return a->device == b->device && a->inode == b->inode && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Called with cache_lock held. */
static struct cache_entry *cache_entry_for(const struct file_identity *identity)
{
	struct cache_entry *entry;

	for (entry = cache; entry; entry = entry->next)
		if (same_file(&entry->identity, identity))
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

/* An open ELF file and the parts every lookup needs. */
struct elf_file {
	struct library_elf file;
	GElf_Phdr *loads; /* PT_LOAD headers */
	size_t load_count;
	Elf_Scn *dynsym;
	Elf_Scn *symtab;
};

static void elf_file_close(struct elf_file *file)
{
	free(file->loads);
	library_file_close_elf(&file->file);
	memset(file, 0, sizeof(*file));
	file->file.fd = -1;
}

static int stat_file(const char *path, struct file_identity *identity, char *error,
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

static int elf_file_open(const char *path, struct elf_file *file, char *error, size_t error_size)
{
	size_t header_count;
	int err;

	memset(file, 0, sizeof(*file));
	err = library_file_open_elf(path, &file->file, error, error_size);
	if (err == -ENOEXEC)
		return fail_cached(error, error_size, ENOEXEC, path);
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

/* The file offset of the bytes at a virtual address, from the PT_LOAD holding them. */
static bool address_to_file_offset(const struct elf_file *file, uint64_t address,
				   uint64_t *file_offset)
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

/* A symbol table with its string table, for walking without a lookup per name. */
struct symbol_table {
	Elf_Data *symbols;
	size_t count;
	const char *strings;
	size_t strings_size;
};

static bool symbol_table_open(struct elf_file *file, Elf_Scn *section, struct symbol_table *table)
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

static const char *symbol_name(const struct symbol_table *table, const GElf_Sym *symbol)
{
	if (symbol->st_name >= table->strings_size ||
	    !memchr(table->strings + symbol->st_name, '\0', table->strings_size - symbol->st_name))
		return NULL;
	return table->strings + symbol->st_name;
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
	text = symbol_name(table, symbol);
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
			if (!address_to_file_offset(file, candidate->address, &file_offset))
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
	struct file_identity identity = { 0 };
	struct nccl_library *scanned = NULL;
	struct cache_entry *entry;
	int err;

	*library = NULL;
	err = stat_file(path, &identity, error, error_size);
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
	struct file_identity identity = { 0 };
	struct cache_entry *entry;
	struct elf_file file;
	int err, found;

	err = stat_file(path, &identity, error, error_size);
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
		text = symbol_name(&table, &symbol);
		if (text && strcmp(text, name) == 0) {
			*found = symbol;
			return true;
		}
	}
	return false;
}

/* Opens a file that has a symbol table; 'wanted' names what was looked for, for the sentence. */
static int elf_file_open_with_symbols(const char *path, struct elf_file *file, const char *wanted,
				      char *error, size_t error_size)
{
	struct file_identity identity = { 0 };
	int err;

	err = stat_file(path, &identity, error, error_size);
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
	if (!address_to_file_offset(&file, symbol.st_value, &location->file_offset)) {
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
		text = symbol_name(&table, &symbol);
		if (!text || !name_has_prefix(text, prefixes, prefix_count))
			continue;
		location.address = symbol.st_value;
		location.size = symbol.st_size;
		if (!address_to_file_offset(file, symbol.st_value, &location.file_offset))
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

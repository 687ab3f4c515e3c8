// SPDX-License-Identifier: MIT
/* Tests of finding NCCL functions and their uprobe file offsets in ELF files built here. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/nccl_api.h"
#include "probe/elf_symbol_lookup.h"
#include "probe/elf_symbols.h"
#include "loaded_code.h"
#include "unit.h"

#define REAL_NCCL "/usr/local/cuda/lib/libnccl.so.2"

/*
 * A library shaped like libnccl: the strong pncclX with its weak ncclX
 * alias, a function without alias, a hidden one only .symtab keeps (as
 * when NCCL is linked into libtorch_cuda), and a call into an NCCL
 * function it does not define. Functions are non-trivial so that no two
 * share an address.
 */
static const char nccl_like_source[] =
	"#include <stddef.h>\n"
	"volatile long sink;\n"
	"int pncclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st)\n"
	"{ sink += (long)n * 3 + t + op; return (int)(sink & 3); }\n"
	"extern __typeof(pncclAllReduce) ncclAllReduce __attribute__((weak, "
	"alias(\"pncclAllReduce\")));\n"
	"int pncclSend(const void *b, size_t n, int t, int peer, void *c, void *st)\n"
	"{ sink -= (long)n + peer * 7; return (int)(sink & 1); }\n"
	"__attribute__((visibility(\"hidden\"))) int ncclGroupEnd(void)\n"
	"{ sink ^= 0x55; return (int)(sink & 7); }\n"
	"extern int ncclRecv(void *, size_t, int, int, void *, void *) __attribute__((weak));\n"
	"int notNccl(int x) { sink += x; return ncclRecv ? ncclRecv(0, 0, 0, 0, 0, 0) : "
	"ncclGroupEnd(); }\n";

/* A library that only calls NCCL, like a framework linked against libnccl. */
static const char nccl_user_source[] = "extern int ncclAllReduce(void);\n"
				       "int callsNccl(void) { return ncclAllReduce() + 1; }\n";

/* A program without libc whose every symbol table is stripped away. */
static const char bare_program_source[] = "void _start(void) { for (;;) ; }\n";

static char fixture_directory[64];

static void remove_fixtures(void)
{
	char command[128];

	snprintf(command, sizeof(command), "rm -rf '%s'", fixture_directory);
	if (system(command) != 0)
		fprintf(stderr, "could not remove the test fixtures in %s\n", fixture_directory);
}

/* Builds the fixtures once per run, in a fresh directory under /tmp. */
static bool fixtures_ready(void)
{
	static int state = -1;
	char command[1024];
	FILE *file;

	if (state >= 0)
		return state == 1;
	state = 0;
	snprintf(fixture_directory, sizeof(fixture_directory), "/tmp/tcheck-elf-XXXXXX");
	if (!mkdtemp(fixture_directory))
		return false;
	atexit(remove_fixtures);
	const struct {
		const char *name;
		const char *text;
	} sources[] = { { "nccl_like.c", nccl_like_source },
			{ "nccl_user.c", nccl_user_source },
			{ "bare.c", bare_program_source },
			{ "not_elf.txt", "this is not an ELF file\n" } };
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		snprintf(command, sizeof(command), "%s/%s", fixture_directory, sources[i].name);
		file = fopen(command, "w");
		if (!file)
			return false;
		fputs(sources[i].text, file);
		fclose(file);
	}
	/* A text segment away from 0 makes virtual addresses differ from file offsets. */
	snprintf(command, sizeof(command),
		 "cd %s && cc -shared -fPIC -g -O1 -fno-omit-frame-pointer "
		 "-Wl,-Ttext-segment=0x200000 -o libnccl_like.so nccl_like.c && "
		 "strip --strip-all -o libnccl_like_stripped.so libnccl_like.so && "
		 "cc -shared -fPIC -g -o libnccl_user.so nccl_user.c && "
		 "cc -static -nostdlib -O1 -o bare bare.c && strip --strip-all bare",
		 fixture_directory);
	if (system(command) != 0)
		return false;
	state = 1;
	return true;
}

static void fixture_path(char *path, size_t size, const char *name)
{
	snprintf(path, size, "%s/%s", fixture_directory, name);
}

static size_t function_index(const char *name)
{
	return (size_t)nccl_function_index(nccl_function_by_name(name));
}

static bool has_name(const struct nccl_symbol *symbol, const char *name)
{
	for (size_t i = 0; i < symbol->name_count; i++)
		if (strcmp(symbol->names[i], name) == 0)
			return true;
	return false;
}

/* The address nm gives a defined symbol, read independently of libelf. */
static uint64_t nm_address(const char *path, const char *name)
{
	char command[512], line[512], symbol_name[256], type;
	unsigned long long address;
	uint64_t found = 0;
	FILE *output;

	snprintf(command, sizeof(command), "nm --defined-only '%s'", path);
	output = popen(command, "r");
	if (!output)
		return 0;
	while (fgets(line, sizeof(line), output))
		if (sscanf(line, "%llx %c %255s", &address, &type, symbol_name) == 3 &&
		    strcmp(symbol_name, name) == 0)
			found = address;
	pclose(output);
	return found;
}

/*
 * The second, independent check of a file offset: the bytes the dynamic
 * loader put at the symbol's address must be the file's bytes there.
 */
static bool loaded_bytes_match(void *handle, const char *name, const char *path,
			       uint64_t file_offset, uint64_t size)
{
	unsigned char from_file[32];
	size_t length = size < sizeof(from_file) ? (size_t)size : sizeof(from_file);
	const void *loaded = dlsym(handle, name);
	ssize_t got;
	int fd;

	if (!loaded || length == 0)
		return false;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	got = pread(fd, from_file, length, (off_t)file_offset);
	close(fd);
	return got == (ssize_t)length && loaded_code_matches(loaded, from_file, length);
}

UNIT_TEST(elf_symbols, one_entry_per_address_with_every_name)
{
	const struct nccl_symbol *all_reduce, *send, *group_end;
	struct nccl_library *library;
	char path[128], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "libnccl_like.so");
	CU_ASSERT_EQUAL_FATAL(nccl_library_scan(path, &library, error, sizeof(error)), 0);
	CU_ASSERT_STRING_EQUAL(library->path, path);
	CU_ASSERT_EQUAL(strlen(library->build_id), 40);
	CU_ASSERT_EQUAL(library->symbol_count, 3);

	all_reduce = nccl_library_find(library, function_index("ncclAllReduce"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(all_reduce);
	CU_ASSERT_EQUAL(all_reduce->name_count, 2);
	CU_ASSERT(has_name(all_reduce, "pncclAllReduce"));
	CU_ASSERT(has_name(all_reduce, "ncclAllReduce"));
	CU_ASSERT_EQUAL(all_reduce->address, nm_address(path, "pncclAllReduce"));
	CU_ASSERT_EQUAL(all_reduce->address, nm_address(path, "ncclAllReduce"));
	/* The text segment starts at 0x200000 in memory but near 0 in the file. */
	CU_ASSERT_EQUAL(all_reduce->address - all_reduce->file_offset, 0x200000);

	send = nccl_library_find(library, function_index("ncclSend"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(send);
	CU_ASSERT_EQUAL(send->name_count, 1);
	CU_ASSERT_STRING_EQUAL(send->names[0], "pncclSend");
	CU_ASSERT_EQUAL(send->address, nm_address(path, "pncclSend"));

	group_end = nccl_library_find(library, function_index("ncclGroupEnd"));
	CU_ASSERT_PTR_NOT_NULL(group_end);

	/* Called but not defined here: ncclRecv belongs to another library. */
	CU_ASSERT_PTR_NULL(nccl_library_find(library, function_index("ncclRecv")));
	for (size_t i = 0; i < library->symbol_count; i++)
		for (size_t j = 0; j < library->symbols[i].name_count; j++)
			CU_ASSERT(strcmp(library->symbols[i].names[j], "notNccl") != 0);
	nccl_library_free(library);
}

UNIT_TEST(elf_symbols, file_offsets_hold_the_loaded_bytes)
{
	const struct nccl_symbol *all_reduce;
	struct nccl_library *library;
	char path[128], error[512] = "";
	void *handle;

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "libnccl_like.so");
	CU_ASSERT_EQUAL_FATAL(nccl_library_scan(path, &library, error, sizeof(error)), 0);
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(handle);
	for (size_t i = 0; i < library->symbol_count; i++) {
		const struct nccl_symbol *symbol = &library->symbols[i];

		/* Hidden symbols cannot be looked up with dlsym. */
		if (!dlsym(handle, symbol->names[0]))
			continue;
		CU_ASSERT(loaded_bytes_match(handle, symbol->names[0], path, symbol->file_offset,
					     symbol->size));
	}
	all_reduce = nccl_library_find(library, function_index("ncclAllReduce"));
	CU_ASSERT_PTR_NOT_NULL(all_reduce);
	if (all_reduce)
		CU_ASSERT(loaded_bytes_match(handle, "ncclAllReduce", path, all_reduce->file_offset,
					     all_reduce->size));
	dlclose(handle);
	nccl_library_free(library);
}

UNIT_TEST(elf_symbols, stripped_library_keeps_its_exports)
{
	struct nccl_library *full, *stripped;
	char path[128], stripped_path[128], error[512] = "";
	const struct nccl_symbol *all_reduce;

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "libnccl_like.so");
	fixture_path(stripped_path, sizeof(stripped_path), "libnccl_like_stripped.so");
	CU_ASSERT_EQUAL_FATAL(nccl_library_scan(path, &full, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL_FATAL(nccl_library_scan(stripped_path, &stripped, error, sizeof(error)), 0);
	/* .dynsym survives strip --strip-all; the hidden ncclGroupEnd lived only in .symtab. */
	CU_ASSERT_EQUAL(stripped->symbol_count, 2);
	CU_ASSERT_PTR_NULL(nccl_library_find(stripped, function_index("ncclGroupEnd")));
	all_reduce = nccl_library_find(stripped, function_index("ncclAllReduce"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(all_reduce);
	CU_ASSERT_EQUAL(all_reduce->name_count, 2);
	CU_ASSERT_EQUAL(all_reduce->file_offset,
			nccl_library_find(full, function_index("ncclAllReduce"))->file_offset);
	CU_ASSERT_STRING_EQUAL(stripped->build_id, full->build_id);
	nccl_library_free(full);
	nccl_library_free(stripped);
}

UNIT_TEST(elf_symbols, reports_which_functions_are_missing)
{
	struct nccl_library *library;
	char path[128], error[512] = "", missing[2048];
	size_t count;

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "libnccl_like.so");
	CU_ASSERT_EQUAL_FATAL(nccl_library_scan(path, &library, error, sizeof(error)), 0);
	count = nccl_library_missing(library, missing, sizeof(missing));
	CU_ASSERT_EQUAL(count, nccl_function_count() - 3);
	CU_ASSERT_PTR_NOT_NULL(strstr(missing, "ncclRecv"));
	CU_ASSERT_PTR_NULL(strstr(missing, "ncclAllReduce"));
	/* A short buffer is cut, never overrun. */
	CU_ASSERT_EQUAL(nccl_library_missing(library, missing, 8), count);
	CU_ASSERT_EQUAL(strlen(missing), 7);
	nccl_library_free(library);
}

UNIT_TEST(elf_symbols, files_without_nccl)
{
	struct nccl_library *library = NULL;
	char path[128], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "libnccl_user.so");
	CU_ASSERT_EQUAL(nccl_library_scan(path, &library, error, sizeof(error)), -ENOMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "defines no NCCL API function"));
	CU_ASSERT_PTR_NULL(library);
	CU_ASSERT_EQUAL(elf_file_has_nccl(path, error, sizeof(error)), 0);

	fixture_path(path, sizeof(path), "not_elf.txt");
	CU_ASSERT_EQUAL(nccl_library_scan(path, &library, error, sizeof(error)), -ENOEXEC);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "is not an ELF file"));
	CU_ASSERT_EQUAL(elf_file_has_nccl(path, error, sizeof(error)), 0);

	fixture_path(path, sizeof(path), "bare");
	CU_ASSERT_EQUAL(nccl_library_scan(path, &library, error, sizeof(error)), -ENODATA);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "stripped"));

	fixture_path(path, sizeof(path), "no-such-library.so");
	CU_ASSERT_EQUAL(nccl_library_scan(path, &library, error, sizeof(error)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no such file"));
	CU_ASSERT_EQUAL(elf_file_has_nccl(path, error, sizeof(error)), -ENOENT);

	/* A cached failure is described again for the path asked about. */
	fixture_path(path, sizeof(path), "libnccl_user.so");
	CU_ASSERT_EQUAL(nccl_library_scan(path, &library, error, sizeof(error)), -ENOMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, path));
}

UNIT_TEST(elf_symbols, quick_check)
{
	char path[128], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "libnccl_like.so");
	CU_ASSERT_EQUAL(elf_file_has_nccl(path, error, sizeof(error)), 1);
	fixture_path(path, sizeof(path), "libnccl_like_stripped.so");
	CU_ASSERT_EQUAL(elf_file_has_nccl(path, error, sizeof(error)), 1);
	CU_ASSERT_EQUAL(elf_file_has_nccl("/proc/self/exe", error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(elf_file_has_nccl("/tmp", error, sizeof(error)), 0);
}

UNIT_TEST(elf_symbols, cache_follows_the_file_not_the_path)
{
	struct nccl_library *first, *through_link, *rebuilt;
	char path[128], link_path[128], command[512], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "libcache.so");
	fixture_path(link_path, sizeof(link_path), "libcache-link.so");
	snprintf(command, sizeof(command), "cp %s/libnccl_like.so %s && ln -sf %s %s",
		 fixture_directory, path, path, link_path);
	CU_ASSERT_FATAL(system(command) == 0);
	CU_ASSERT_EQUAL_FATAL(nccl_library_scan(path, &first, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL_FATAL(nccl_library_scan(link_path, &through_link, error, sizeof(error)), 0);
	CU_ASSERT_STRING_EQUAL(through_link->path, link_path);
	CU_ASSERT_EQUAL(through_link->symbol_count, first->symbol_count);

	/* A new file at the same path (a new inode) is scanned again. */
	snprintf(command, sizeof(command), "rm -f %s && cp %s/libnccl_user.so %s", path,
		 fixture_directory, path);
	CU_ASSERT_FATAL(system(command) == 0);
	CU_ASSERT_EQUAL(nccl_library_scan(path, &rebuilt, error, sizeof(error)), -ENOMSG);
	nccl_library_free(first);
	nccl_library_free(through_link);
	elf_symbols_cache_clear();
}

UNIT_TEST(elf_symbols, symbol_by_exact_name)
{
	struct elf_symbol_location location;
	char path[128], error[512] = "";
	uint64_t file_offset = 0;
	void *handle;

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "libnccl_like.so");
	CU_ASSERT_EQUAL_FATAL(elf_symbol_find(path, "notNccl", &location, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(location.address, nm_address(path, "notNccl"));
	CU_ASSERT_EQUAL(elf_symbol_file_offset(path, "notNccl", &file_offset, error, sizeof(error)),
			0);
	CU_ASSERT_EQUAL(file_offset, location.file_offset);
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(handle);
	CU_ASSERT(loaded_bytes_match(handle, "notNccl", path, file_offset, location.size));
	dlclose(handle);

	CU_ASSERT_EQUAL(
		elf_symbol_file_offset(path, "ncclRecv", &file_offset, error, sizeof(error)),
		-ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "does not define the symbol ncclRecv"));
	/* The hidden function is found through .symtab. */
	CU_ASSERT_EQUAL(
		elf_symbol_file_offset(path, "ncclGroupEnd", &file_offset, error, sizeof(error)),
		0);
	/* A zero-initialised variable has no bytes in the file. */
	CU_ASSERT_EQUAL(elf_symbol_find(path, "sink", &location, error, sizeof(error)), -ERANGE);

	if (access("/lib64/ld-linux-x86-64.so.2", R_OK) == 0)
		CU_ASSERT_EQUAL(elf_symbol_file_offset("/lib64/ld-linux-x86-64.so.2",
						       "_dl_debug_state", &file_offset, error,
						       sizeof(error)),
				0);
}

UNIT_TEST(elf_symbols, real_nccl)
{
	struct nccl_library *library;
	char error[512] = "", missing[2048];
	size_t distinct = 0, checked = 0;
	void *handle;

	if (access(REAL_NCCL, R_OK) != 0) {
		CU_PASS("no real NCCL at " REAL_NCCL ": skipped");
		return;
	}
	CU_ASSERT_EQUAL(elf_file_has_nccl(REAL_NCCL, error, sizeof(error)), 1);
	CU_ASSERT_EQUAL_FATAL(nccl_library_scan(REAL_NCCL, &library, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(strlen(library->build_id), 40);
	for (size_t i = 0; i < nccl_function_count(); i++) {
		const struct nccl_symbol *symbol = nccl_library_find(library, i);

		if (nccl_function_at(i)->kind != NCCL_KIND_COLLECTIVE)
			continue;
		CU_ASSERT_PTR_NOT_NULL(symbol);
		/* The weak ncclX and the strong pncclX collapse into one probe site. */
		if (symbol)
			CU_ASSERT_EQUAL(symbol->name_count, 2);
	}
	for (size_t i = 0; i < library->symbol_count; i++)
		if (i == 0 || library->symbols[i].address != library->symbols[i - 1].address)
			distinct++;
	CU_ASSERT_EQUAL(distinct, library->symbol_count);
	CU_ASSERT_EQUAL(nccl_library_missing(library, missing, sizeof(missing)), 0);

	handle = dlopen(REAL_NCCL, RTLD_LAZY | RTLD_LOCAL);
	if (!handle) {
		CU_PASS("dlopen of the real NCCL failed: offsets not compared with loaded bytes");
	} else {
		for (size_t i = 0; i < library->symbol_count; i++)
			for (size_t j = 0; j < library->symbols[i].name_count; j++) {
				CU_ASSERT(loaded_bytes_match(
					handle, library->symbols[i].names[j], REAL_NCCL,
					library->symbols[i].file_offset, library->symbols[i].size));
				checked++;
			}
		CU_ASSERT_EQUAL(checked, 2 * library->symbol_count);
		dlclose(handle);
	}
	nccl_library_free(library);
}

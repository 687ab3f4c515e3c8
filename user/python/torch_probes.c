// SPDX-License-Identifier: MIT
/* Finds the uprobe sites of record_function scopes and ATen operators in libtorch_cpu.so. */
#include "python/torch_probes.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/log.h"
#include "probe/elf_symbols.h"
#include "probe/process_maps.h"
#include "probe/uprobe_entry_site.h"

#define LIBRARY_NAME "libtorch_cpu.so"

/* Mangled-name prefixes; the rest of each name encodes a signature that varies by release. */
#define ENTER_NEW_PREFIX "_ZN5torch8autograd8profiler25record_function_enter_newE"
#define ENGINE_EXECUTE_PREFIX "_ZN5torch8autograd6Engine7executeE"
#define OPERATOR_PREFIX "_ZN2at4_ops"
#define OPERATOR_CALL_SUFFIX "4callE"

#define RECORD_FUNCTION_END "_ZN2at14RecordFunction3endEv"
#define RECORD_FUNCTION_CONSTRUCTOR "_ZN2at14RecordFunctionC1ENS_11RecordScopeE"
#define RECORD_FUNCTION_BASE_CONSTRUCTOR "_ZN2at14RecordFunctionC2ENS_11RecordScopeE"

/* The name the 1.13 sources give the internal function both enter operators call. */
#define SHARED_ENTER_NAME                                                               \
	"torch::autograd::profiler::record_function_enter(std::string const&, "         \
	"c10::optional<std::string> const&, at::RecordFunction&), internal, called by " \
	"record_function_enter_new"

/* A symbolic link chain longer than this is not followed. */
#define LINK_DEPTH_LIMIT 8
#define VERSION_FILE_LIMIT (256 * 1024)
#define INTERNAL_CALL_CANDIDATES 8
/* The internal function lies in the same code segment, near its caller. */
#define INTERNAL_CALL_REACH (64ull << 20)

const char *const torch_default_ops[] = {
	"add_", "mul_", "zero_", "_foreach_add_", "_foreach_mul_", "_foreach_zero_",
};
const size_t torch_default_op_count = sizeof(torch_default_ops) / sizeof(torch_default_ops[0]);

const char *torch_register_name(enum torch_register which)
{
	switch (which) {
	case TORCH_REGISTER_RDI:
		return "rdi";
	case TORCH_REGISTER_RSI:
		return "rsi";
	case TORCH_REGISTER_RDX:
		return "rdx";
	case TORCH_REGISTER_NONE:
		break;
	}
	return "none";
}

int torch_version_parse(const char *text, struct torch_version *version)
{
	char *end;
	long major, minor, patch = -1;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	major = strtol(text, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return -EINVAL;
	minor = strtol(end + 1, &end, 10);
	if (*end == '.' && isdigit((unsigned char)end[1]))
		patch = strtol(end + 1, &end, 10);
	if (major > 1000 || minor > 1000 || patch > 1000)
		return -EINVAL;
	version->major = (int)major;
	version->minor = (int)minor;
	version->patch = (int)patch;
	snprintf(version->text, sizeof(version->text), "%s", text);
	version->source[0] = '\0';
	return 0;
}

/* Where a version was read, for messages: a path cut short there still says enough. */
__attribute__((format(printf, 3, 4))) static void describe_source(char *source, size_t size,
								  const char *format, ...)
{
	va_list arguments;

	va_start(arguments, format);
	vsnprintf(source, size, format, arguments);
	va_end(arguments);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The directory part of path, without the trailing slash; "" for a bare name. */
static void directory_of(const char *path, char *directory, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t length = slash ? (size_t)(slash - path) : 0;

	if (slash == path)
		length = 1;
	snprintf(directory, size, "%.*s", (int)length, path);
}

/* Reads __version__ = '...' from a torch/version.py; 0 when found. */
static int version_from_package_file(const char *file_path, struct torch_version *version)
{
	char *text, *cursor, *line, *quote, *closing;
	struct torch_version found;
	FILE *file;
	size_t length;
	int err = -ENOENT;

	file = fopen(file_path, "re");
	if (!file)
		return -errno;
	text = calloc(1, VERSION_FILE_LIMIT + 1);
	if (!text) {
		fclose(file);
		return -ENOMEM;
	}
	length = fread(text, 1, VERSION_FILE_LIMIT, file);
	fclose(file);
	text[length] = '\0';
	cursor = text;
	while ((line = strsep(&cursor, "\n"))) {
		if (strncmp(line, "__version__", strlen("__version__")) != 0)
			continue;
		quote = strpbrk(line, "'\"");
		if (!quote)
			break;
		closing = strchr(quote + 1, *quote);
		if (!closing)
			break;
		*closing = '\0';
		if (torch_version_parse(quote + 1, &found) == 0) {
			describe_source(found.source, sizeof(found.source), "%s", file_path);
			*version = found;
			err = 0;
		} else {
			err = -EINVAL;
		}
		break;
	}
	free(text);
	return err;
}

/* torch/lib/libtorch_cpu.so has torch/version.py two levels up (pip and conda packages). */
static int version_from_package(const char *library_path, struct torch_version *version)
{
	char lib_directory[PATH_MAX], torch_directory[PATH_MAX], version_path[PATH_MAX + 16];

	directory_of(library_path, lib_directory, sizeof(lib_directory));
	if (strcmp(base_name(lib_directory), "lib") != 0)
		return -ENOENT;
	directory_of(lib_directory, torch_directory, sizeof(torch_directory));
	if (strcmp(base_name(torch_directory), "torch") != 0)
		return -ENOENT;
	snprintf(version_path, sizeof(version_path), "%s/version.py", torch_directory);
	return version_from_package_file(version_path, version);
}

/* libtorch_cpu.so.1.13.0: the version distributions put in the file name. */
static int version_from_file_name(const char *library_path, struct torch_version *version)
{
	const char *name = base_name(library_path);
	struct torch_version found;

	if (strncmp(name, LIBRARY_NAME ".", strlen(LIBRARY_NAME ".")) != 0)
		return -ENOENT;
	if (torch_version_parse(name + strlen(LIBRARY_NAME "."), &found) != 0)
		return -ENOENT;
	describe_source(found.source, sizeof(found.source), "the file name %s", library_path);
	*version = found;
	return 0;
}

/* "/proc/PID/root" when path goes through it, so absolute link targets stay inside. */
static size_t proc_root_length(const char *path)
{
	const char *cursor;

	if (strncmp(path, "/proc/", 6) != 0)
		return 0;
	for (cursor = path + 6; isdigit((unsigned char)*cursor); cursor++)
		;
	if (cursor == path + 6 || strncmp(cursor, "/root/", 6) != 0)
		return 0;
	return (size_t)(cursor + 5 - path);
}

int torch_version_detect(const char *library_path, struct torch_version *version, char *error,
			 size_t error_size)
{
	char current[PATH_MAX], target[PATH_MAX], next[PATH_MAX * 2 + 2];
	size_t root_length = proc_root_length(library_path);

	snprintf(current, sizeof(current), "%s", library_path);
	for (int depth = 0; depth <= LINK_DEPTH_LIMIT; depth++) {
		struct stat st;
		ssize_t length;

		if (version_from_package(current, version) == 0 ||
		    version_from_file_name(current, version) == 0)
			return 0;
		if (lstat(current, &st) != 0 || !S_ISLNK(st.st_mode))
			break;
		length = readlink(current, target, sizeof(target) - 1);
		if (length <= 0)
			break;
		target[length] = '\0';
		if (target[0] == '/') {
			snprintf(next, sizeof(next), "%.*s%s", (int)root_length, library_path,
				 target);
		} else {
			char directory[PATH_MAX];

			directory_of(current, directory, sizeof(directory));
			snprintf(next, sizeof(next), "%s/%s", directory, target);
		}
		if (strlen(next) >= sizeof(current))
			break;
		memcpy(current, next, strlen(next) + 1);
	}
	return error_fail(error, error_size, ENOENT,
			  "cannot tell which torch version %s belongs to: it is neither in a torch "
			  "package's lib/ directory with torch/version.py beside it, nor named "
			  "with its version (libtorch_cpu.so.MAJOR.MINOR)",
			  library_path);
}

/* Names found in a string table, sorted and without repeats once finished. */
struct name_list {
	char **names;
	size_t count;
	size_t capacity;
};

static void name_list_free(struct name_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		free(list->names[i]);
	free(list->names);
	memset(list, 0, sizeof(*list));
}

static int name_list_add(struct name_list *list, const char *name, size_t length)
{
	if (list->count == list->capacity) {
		size_t capacity = list->capacity ? list->capacity * 2 : 64;
		char **names = realloc(list->names, capacity * sizeof(*names));

		if (!names)
			return -ENOMEM;
		list->names = names;
		list->capacity = capacity;
	}
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

static void name_list_finish(struct name_list *list)
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

/*
 * Every string of the dynamic string table that starts with prefix,
 * wherever it starts (names ending alike may share bytes); the list is
 * left empty on failure. Only names come from here: whether a name is a
 * defined symbol, and where, is asked of elf_symbols, which drops imports.
 */
static int dynamic_names_with_prefix(const char *path, const char *prefix, struct name_list *list,
				     char *error, size_t error_size)
{
	size_t prefix_length = strlen(prefix);
	Elf_Data *strings = NULL;
	Elf *elf;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error_fail(error, error_size, errno, "cannot open %s: %s", path,
				  strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return error_fail(error, error_size, ENOEXEC, "%s is not an ELF file", path);
	}
	for (Elf_Scn *section = elf_nextscn(elf, NULL); section && !strings;
	     section = elf_nextscn(elf, section)) {
		GElf_Shdr header;

		if (gelf_getshdr(section, &header) && header.sh_type == SHT_DYNSYM)
			strings = elf_getdata(elf_getscn(elf, header.sh_link), NULL);
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
	elf_end(elf);
	close(fd);
	if (err)
		name_list_free(list);
	else
		name_list_finish(list);
	return err;
}

/* The one defined symbol among names; -ENOENT when none is, -EMLINK when several are. */
static int single_defined_symbol(const char *path, const struct name_list *names, const char **name,
				 struct elf_symbol_location *location)
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

/*
 * The at::_ops struct name in OPERATOR_PREFIX <length> <name> "4callE";
 * false for the redispatch entry and every other member.
 */
static bool operator_of_symbol(const char *symbol, const char **name, size_t *length)
{
	const char *cursor;
	char *end;
	unsigned long count;

	if (strncmp(symbol, OPERATOR_PREFIX, strlen(OPERATOR_PREFIX)) != 0)
		return false;
	cursor = symbol + strlen(OPERATOR_PREFIX);
	if (!isdigit((unsigned char)*cursor))
		return false;
	count = strtoul(cursor, &end, 10);
	if (count == 0 || strnlen(end, count) < count)
		return false;
	if (strncmp(end + count, OPERATOR_CALL_SUFFIX, strlen(OPERATOR_CALL_SUFFIX)) != 0)
		return false;
	*name = end;
	*length = count;
	return true;
}

bool torch_op_symbol_matches(const char *symbol, const char *request, char *operator_name,
			     size_t operator_name_size)
{
	const char *name, *dot = strchr(request, '.');
	size_t length, base_length = dot ? (size_t)(dot - request) : strlen(request);
	bool matches;

	if (base_length == 0 || !operator_of_symbol(symbol, &name, &length))
		return false;
	if (dot && strcmp(dot + 1, "default") == 0) {
		matches = length == base_length && strncmp(name, request, base_length) == 0;
	} else if (dot) {
		size_t overload_length = strlen(dot + 1);

		matches = overload_length && length == base_length + 1 + overload_length &&
			  strncmp(name, request, base_length) == 0 && name[base_length] == '_' &&
			  strncmp(name + base_length + 1, dot + 1, overload_length) == 0;
	} else {
		matches = strncmp(name, request, base_length) == 0 &&
			  (length == base_length ||
			   (length > base_length + 1 && name[base_length] == '_' &&
			    name[base_length + 1] != '_'));
	}
	if (matches && operator_name)
		snprintf(operator_name, operator_name_size, "%.*s", (int)length, name);
	return matches;
}

/* A PLT entry jumps through the GOT at once, with or without an IBT landing pad first. */
static bool is_plt_stub(const uint8_t bytes[16])
{
	const uint8_t *cursor = bytes;

	if (cursor[0] == 0xf3 && cursor[1] == 0x0f && cursor[2] == 0x1e && cursor[3] == 0xfa)
		cursor += 4;
	if (cursor[0] == 0xf2)
		cursor++;
	return cursor[0] == 0xff && cursor[1] == 0x25;
}

/* The first instruction of a compiled function: endbr64, a push, or making room on the stack. */
static bool looks_like_function_entry(const uint8_t bytes[16])
{
	if (bytes[0] == 0xf3 && bytes[1] == 0x0f && bytes[2] == 0x1e && bytes[3] == 0xfa)
		return true;
	if (bytes[0] >= 0x50 && bytes[0] <= 0x57)
		return true;
	if (bytes[0] == 0x41 && bytes[1] >= 0x50 && bytes[1] <= 0x57)
		return true;
	return bytes[0] == 0x48 && (bytes[1] == 0x83 || bytes[1] == 0x81) && bytes[2] == 0xec;
}

int torch_find_internal_call(const uint8_t *code, size_t size, uint64_t address,
			     int (*read_target)(void *context, uint64_t address, uint8_t bytes[16]),
			     void *context, uint64_t *target)
{
	uint64_t candidates[INTERNAL_CALL_CANDIDATES];
	size_t candidate_count = 0;

	for (size_t i = 0; i + 5 <= size; i++) {
		uint8_t bytes[16];
		uint64_t destination;
		int32_t displacement;
		bool known = false;

		/* call rel32: the target is relative to the next instruction. */
		if (code[i] != 0xe8)
			continue;
		memcpy(&displacement, code + i + 1, sizeof(displacement));
		destination = address + i + 5 + (int64_t)displacement;
		if (destination >= address && destination < address + size)
			continue;
		if (destination + INTERNAL_CALL_REACH < address ||
		    destination > address + INTERNAL_CALL_REACH)
			continue;
		if (read_target(context, destination, bytes) != 0 || is_plt_stub(bytes) ||
		    !looks_like_function_entry(bytes))
			continue;
		for (size_t j = 0; j < candidate_count; j++)
			known = known || candidates[j] == destination;
		if (!known && candidate_count < INTERNAL_CALL_CANDIDATES)
			candidates[candidate_count++] = destination;
	}
	if (candidate_count == 0)
		return -ENOENT;
	if (candidate_count > 1)
		return -EMLINK;
	*target = candidates[0];
	return 0;
}

/* Reads code of one file by virtual address, for code in the segment of a known symbol. */
struct code_reader {
	int fd;
	uint64_t address_minus_offset; /* of the segment holding the known symbol */
	uint64_t file_size;
};

static int read_code(void *context, uint64_t address, uint8_t bytes[16])
{
	struct code_reader *reader = context;
	uint64_t offset = address - reader->address_minus_offset;

	if (address < reader->address_minus_offset || offset + 16 > reader->file_size)
		return -ERANGE;
	return pread(reader->fd, bytes, 16, (off_t)offset) == 16 ? 0 : -EIO;
}

static int set_site(struct torch_probe_site *site, const char *symbol, bool exported,
		    const struct elf_symbol_location *location)
{
	site->symbol = strdup(symbol);
	site->exported = exported;
	site->address = location->address;
	site->file_offset = location->file_offset;
	return site->symbol ? 0 : -ENOMEM;
}

__attribute__((format(printf, 2, 3))) static int set_reading(struct torch_probe_site *site,
							     const char *format, ...)
{
	va_list arguments;
	int written;

	va_start(arguments, format);
	written = vasprintf(&site->reading, format, arguments);
	va_end(arguments);
	if (written < 0) {
		site->reading = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void site_free(struct torch_probe_site *site)
{
	free(site->symbol);
	free(site->reading);
	memset(site, 0, sizeof(*site));
}

static const char *string_layout(enum torch_string_abi abi)
{
	return abi == TORCH_STRING_CXX11
		       ? "a std::string: data pointer at +0, length at +8"
		       : "a std::string of the pre-C++11 ABI: a pointer at +0 to "
			 "the characters, the length in the 8 bytes 24 before them";
}

/* The argument layout of the optional args string, from the enter function's mangled name. */
static const char *optional_layout(const char *enter_symbol, enum torch_string_abi abi)
{
	if (strstr(enter_symbol, "N3c108optionalI"))
		return "a c10::optional<std::string>: engaged byte at +0, the string at +8";
	if (abi == TORCH_STRING_CXX11)
		return "a std::optional<std::string>: the string at +0, engaged byte at +32";
	return "a std::optional<std::string>: the string at +0, engaged byte at +8";
}

static int refuse_version(const struct torch_version *version, char *error, size_t error_size)
{
	return error_fail(error, error_size, ENOTSUP,
			  "torch %s (read from %s) is not a version whose record_function scope "
			  "functions are known: tcheck-bpf knows torch 1.13 and 2.x; see "
			  "docs/torch-scopes.md to add one",
			  version->text, version->source);
}

static int choose_method(struct torch_probes *probes, char *error, size_t error_size)
{
	const struct torch_version *version = &probes->version;

	if (version->major == 1 && version->minor == 13) {
		probes->scopes.method = TORCH_SCOPE_SHARED_ENTER;
		probes->scopes.verified = true;
		return 0;
	}
	/*
	 * 2.x builds seen so far (Debian's 2.6) keep 1.13's shape: the exported
	 * enter makes one internal call that gets the name and the key. Where
	 * that shape is missing, resolve_scopes falls back to the constructor.
	 */
	if (version->major == 2) {
		probes->scopes.method = TORCH_SCOPE_SHARED_ENTER;
		probes->scopes.verified = true;
		return 0;
	}
	return refuse_version(version, error, error_size);
}

/* 1.13: follows the exported enter function's one internal call to the function both share. */
static int resolve_shared_enter(struct torch_probes *probes, const char *enter_new_symbol,
				const struct elf_symbol_location *enter_new, char *error,
				size_t error_size)
{
	struct elf_symbol_location shared = { 0 };
	struct code_reader reader;
	uint8_t *code;
	struct stat st;
	uint64_t target;
	int err;

	if (enter_new->size == 0 || enter_new->size > 4096)
		return error_fail(error, error_size, ENOEXEC,
				  "%s gives record_function_enter_new a size of %llu bytes; its "
				  "call to the shared enter function cannot be read",
				  probes->host_path, (unsigned long long)enter_new->size);
	reader.fd = open(probes->host_path, O_RDONLY | O_CLOEXEC);
	if (reader.fd < 0)
		return error_fail(error, error_size, errno, "cannot open %s: %s", probes->host_path,
				  strerror(errno));
	code = malloc(enter_new->size);
	if (!code || fstat(reader.fd, &st) != 0 ||
	    pread(reader.fd, code, enter_new->size, (off_t)enter_new->file_offset) !=
		    (ssize_t)enter_new->size) {
		free(code);
		close(reader.fd);
		return error_fail(error, error_size, EIO, "cannot read the code of %s in %s",
				  enter_new_symbol, probes->host_path);
	}
	reader.address_minus_offset = enter_new->address - enter_new->file_offset;
	reader.file_size = (uint64_t)st.st_size;
	err = torch_find_internal_call(code, enter_new->size, enter_new->address, read_code,
				       &reader, &target);
	free(code);
	close(reader.fd);
	if (err)
		return error_fail(error, error_size, ENOENT,
				  "record_function_enter_new in %s makes %s direct call to an "
				  "internal function, so the function that receives the scope name "
				  "in torch 1.13 cannot be told apart; this build differs from "
				  "Debian's 1.13",
				  probes->host_path, err == -ENOENT ? "no" : "more than one");
	shared.address = target;
	shared.file_offset = target - reader.address_minus_offset;
	return set_site(&probes->scopes.enter, SHARED_ENTER_NAME, false, &shared);
}

/*
 * Moves a site past a leading compare onto the conditional jump after it
 * when its first instruction would be single-stepped (uprobe_entry_site.h);
 * says so in its reading. Left where it is when the code cannot be read.
 */
static int move_to_emulated_instruction(const char *path, struct torch_probe_site *site)
{
	uint8_t code[16];
	char *reading;
	int fd, offset;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (pread(fd, code, sizeof(code), (off_t)site->file_offset) != (ssize_t)sizeof(code)) {
		close(fd);
		return 0;
	}
	close(fd);
	offset = uprobe_cheap_entry_offset(code, sizeof(code));
	if (offset <= 0)
		return 0;
	site->file_offset += (uint64_t)offset;
	site->address += (uint64_t)offset;
	if (asprintf(&reading,
		     "%s (probed +%d bytes in, on the conditional jump after the "
		     "leading compare: the kernel emulates it instead of single-stepping "
		     "the compare; the registers are still the entry's)",
		     site->reading ? site->reading : "", offset) < 0)
		return -ENOMEM;
	free(site->reading);
	site->reading = reading;
	return 0;
}

/* The enter site is the internal function the exported enter calls: name in rdi, key in rdx. */
static int use_shared_enter(struct torch_probes *probes, const char *enter_new_symbol,
			    const struct elf_symbol_location *enter_new, const char *optional,
			    char *error, size_t error_size)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	int err;

	err = resolve_shared_enter(probes, enter_new_symbol, enter_new, error, error_size);
	if (!err)
		err = set_reading(&scopes->enter,
				  "rdi -> the scope name, %s; rsi -> the args, %s; rdx -> "
				  "the at::RecordFunction, the key its exit passes",
				  string_layout(scopes->string_abi), optional);
	if (!err)
		err = move_to_emulated_instruction(probes->host_path, &scopes->enter);
	if (!err)
		err = set_site(
			&scopes->key, scopes->enter.symbol, false,
			&(struct elf_symbol_location){ .address = scopes->enter.address,
						       .file_offset = scopes->enter.file_offset });
	if (!err)
		err = set_reading(&scopes->key, "rdx at the enter site: the key");
	scopes->name_register = TORCH_REGISTER_RDI;
	scopes->args_register = TORCH_REGISTER_RSI;
	scopes->key_register = TORCH_REGISTER_RDX;
	return err;
}

/* The exported enter gives the name; the next RecordFunction constructor on the thread the key. */
static int use_enter_then_constructor(struct torch_probes *probes, const char *enter_new_symbol,
				      const struct elf_symbol_location *enter_new,
				      const char *optional, char *error, size_t error_size)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	const char *constructor = RECORD_FUNCTION_CONSTRUCTOR;
	struct elf_symbol_location location = { 0 };
	int err;

	err = set_site(&scopes->enter, enter_new_symbol, true, enter_new);
	if (!err)
		err = set_reading(&scopes->enter,
				  "rsi -> the scope name, %s; rdx -> the args, %s; rdi -> "
				  "the slot the returned _RecordFunction pointer is written "
				  "to (an intrusive_ptr returned through a hidden pointer)",
				  string_layout(scopes->string_abi), optional);
	if (!err && elf_symbol_find(probes->host_path, constructor, &location, NULL, 0)) {
		constructor = RECORD_FUNCTION_BASE_CONSTRUCTOR;
		err = elf_symbol_find(probes->host_path, constructor, &location, error, error_size);
	}
	if (!err)
		err = set_site(&scopes->key, constructor, true, &location);
	if (!err)
		err = set_reading(&scopes->key,
				  "rdi -> the at::RecordFunction being built, sil -> its "
				  "RecordScope (7, USER_SCOPE); the first call on a thread "
				  "after an enter builds that scope's key");
	scopes->name_register = TORCH_REGISTER_RSI;
	scopes->args_register = TORCH_REGISTER_RDX;
	scopes->key_register = TORCH_REGISTER_RDI;
	return err;
}

static int resolve_scopes(struct torch_probes *probes, char *error, size_t error_size)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	struct name_list names = { 0 };
	struct elf_symbol_location enter_new = { 0 }, location = { 0 };
	const char *enter_new_symbol = NULL, *optional;
	int err;

	err = dynamic_names_with_prefix(probes->host_path, ENTER_NEW_PREFIX, &names, error,
					error_size);
	if (err)
		return err;
	err = single_defined_symbol(probes->host_path, &names, &enter_new_symbol, &enter_new);
	if (err) {
		name_list_free(&names);
		return error_fail(error, error_size, ENOENT,
				  "%s %s torch::autograd::profiler::record_function_enter_new, the "
				  "exported function record_function scopes are found from",
				  probes->host_path,
				  err == -ENOENT ? "does not export" : "exports more than one");
	}
	if (strstr(enter_new_symbol, "NSt7__cxx1112basic_string")) {
		scopes->string_abi = TORCH_STRING_CXX11;
	} else if (strstr(enter_new_symbol, "RKSs")) {
		scopes->string_abi = TORCH_STRING_COW;
	} else {
		err = error_fail(error, error_size, ENOTSUP,
				 "%s: the scope name argument of %s is of no known std::string "
				 "layout",
				 probes->host_path, enter_new_symbol);
		name_list_free(&names);
		return err;
	}
	optional = optional_layout(enter_new_symbol, scopes->string_abi);
	if (scopes->method == TORCH_SCOPE_SHARED_ENTER) {
		err = use_shared_enter(probes, enter_new_symbol, &enter_new, optional, error,
				       error_size);
		/* A 2.x build whose enter inlined its helper: the constructor gives the key. */
		if (err && probes->version.major == 2) {
			log_debug("torch %s: %s; following the constructor instead",
				  probes->version.text, error);
			scopes->method = TORCH_SCOPE_ENTER_THEN_CONSTRUCTOR;
			scopes->verified = false;
		}
	}
	if (scopes->method == TORCH_SCOPE_ENTER_THEN_CONSTRUCTOR)
		err = use_enter_then_constructor(probes, enter_new_symbol, &enter_new, optional,
						 error, error_size);
	name_list_free(&names);
	if (err)
		return err == -ENOMEM ? error_fail(error, error_size, ENOMEM, "out of memory")
				      : err;
	err = elf_symbol_find(probes->host_path, RECORD_FUNCTION_END, &location, error, error_size);
	if (!err)
		err = set_site(&scopes->exit, RECORD_FUNCTION_END, true, &location);
	if (!err)
		err = set_reading(
			&scopes->exit,
			"rdi -> the at::RecordFunction ending, equal to its enter's key; "
			"it runs again when the handle is destroyed and around every "
			"autograd node: close the open scope with that key, ignore the rest");
	if (!err)
		err = move_to_emulated_instruction(probes->host_path, &scopes->exit);
	scopes->exit_register = TORCH_REGISTER_RDI;
	return err == -ENOMEM ? error_fail(error, error_size, ENOMEM, "out of memory") : err;
}

/* torch::autograd::Engine::execute: optional, left empty when the library lacks it. */
static int resolve_backward(struct torch_probes *probes, char *error, size_t error_size)
{
	struct name_list names = { 0 };
	struct elf_symbol_location location;
	const char *symbol;
	int err;

	err = dynamic_names_with_prefix(probes->host_path, ENGINE_EXECUTE_PREFIX, &names, error,
					error_size);
	if (err)
		return err;
	if (single_defined_symbol(probes->host_path, &names, &symbol, &location) == 0) {
		err = set_site(&probes->backward, symbol, true, &location);
		if (!err)
			err = set_reading(&probes->backward,
					  "rdi -> the slot of the returned gradients (a "
					  "std::vector returned by value), rsi -> the Engine; "
					  "entry: a backward pass starts, return: it has ended");
	}
	name_list_free(&names);
	return err ? error_fail(error, error_size, ENOMEM, "out of memory") : 0;
}

/*
 * The constructors every c10d process group runs with its rank and size:
 * ProcessGroup(int, int) under 1.13's backends, Backend(int, int) under
 * 2.x's (gloo, NCCL, MPI alike). Optional: left empty when absent.
 */
static int resolve_process_groups(struct torch_probes *probes, char *error, size_t error_size)
{
	static const char *const constructors[TORCH_PROCESS_GROUP_SITES] = {
		"_ZN4c10d12ProcessGroupC2Eii",
		"_ZN4c10d7BackendC2Eii",
	};
	struct elf_symbol_location location;
	int err = 0;

	for (int i = 0; !err && i < TORCH_PROCESS_GROUP_SITES; i++) {
		if (elf_symbol_find(probes->host_path, constructors[i], &location, NULL, 0))
			continue;
		err = set_site(&probes->process_groups[i], constructors[i], true, &location);
		if (!err)
			err = move_to_emulated_instruction(probes->host_path,
							   &probes->process_groups[i]);
		if (!err)
			err = set_reading(&probes->process_groups[i],
					  "rdi -> the group being built, esi -> this process's "
					  "rank in it, edx -> its size; the first group a "
					  "process builds is the world");
	}
	return err ? error_fail(error, error_size, ENOMEM, "out of memory") : 0;
}

/* How an operator's arguments sit in registers, from the in-place and out= marks in its name. */
static const char *operator_reading(const char *operator_name, const char *symbol)
{
	const char *name = operator_name;
	bool list, in_place, out;
	size_t length;

	/* __and__, __iand__: the marks below do not apply to Python's special names. */
	if (strncmp(name, "__", 2) == 0)
		return "entry: the operator was called; its schema tells whether a Tensor "
		       "returned by value puts a hidden return slot in rdi";
	while (*name == '_')
		name++;
	length = strlen(name);
	list = strstr(symbol, OPERATOR_CALL_SUFFIX "N3c108ArrayRefINS_6TensorE") != NULL;
	in_place = length && (name[length - 1] == '_' || strstr(name, "__"));
	out = length > 4 && strcmp(name + length - 4, "_out") == 0;
	if (list && (in_place || out))
		return "entry: the operator was called; it returns nothing: rdi -> the first "
		       "tensor list's at::Tensor array, rsi -> its length, the other arguments "
		       "in order from rdx";
	if (list)
		return "entry: the operator was called; it returns a tensor list by value: rdi -> "
		       "the hidden return slot, rsi -> the first tensor list's at::Tensor "
		       "array, rdx -> its length";
	if (in_place || out)
		return "entry: the operator was called; it returns a reference: rdi -> the first "
		       "argument (an at::Tensor & or const at::Tensor &: a pointer to the "
		       "TensorImpl * slot), the others in order from rsi";
	return "entry: the operator was called; it returns a Tensor by value: rdi -> the hidden "
	       "return slot, the arguments in order from rsi";
}

static int add_operator(struct torch_probes *probes, const char *request, const char *symbol,
			const char *operator_name, const struct elf_symbol_location *location)
{
	struct torch_op_probe *ops, *op;

	ops = realloc(probes->ops, (probes->op_count + 1) * sizeof(*ops));
	if (!ops)
		return -ENOMEM;
	probes->ops = ops;
	op = &ops[probes->op_count++];
	memset(op, 0, sizeof(*op));
	op->request = strdup(request);
	op->operator_name = strdup(operator_name);
	if (!op->request || !op->operator_name || set_site(&op->site, symbol, true, location))
		return -ENOMEM;
	return set_reading(&op->site, "%s", operator_reading(operator_name, symbol));
}

static int resolve_operators(struct torch_probes *probes, const char *const *requests,
			     size_t request_count, char *error, size_t error_size)
{
	struct name_list names = { 0 };
	int err;

	if (request_count == 0)
		return 0;
	err = dynamic_names_with_prefix(probes->host_path, OPERATOR_PREFIX, &names, error,
					error_size);
	if (err)
		return err;
	for (size_t r = 0; r < request_count && !err; r++) {
		size_t found = 0;

		for (size_t i = 0; i < names.count && !err; i++) {
			struct elf_symbol_location location;
			char operator_name[256];

			if (!torch_op_symbol_matches(names.names[i], requests[r], operator_name,
						     sizeof(operator_name)) ||
			    elf_symbol_find(probes->host_path, names.names[i], &location, NULL,
					    0) != 0)
				continue;
			err = add_operator(probes, requests[r], names.names[i], operator_name,
					   &location);
			if (err)
				error_format(error, error_size, "out of memory");
			found++;
		}
		if (!err && found == 0)
			err = error_fail(error, error_size, ENOENT,
					 "%s has no ATen operator %s: no exported "
					 "at::_ops::...::call matches it; name it as PyTorch's "
					 "schema does, e.g. add_ for every overload or add_.Tensor "
					 "for one",
					 probes->host_path, requests[r]);
	}
	name_list_free(&names);
	return err;
}

static int resolve_all(struct torch_probes *probes, const char *const *ops, size_t op_count,
		       char *error, size_t error_size)
{
	int err;

	err = torch_version_detect(probes->host_path, &probes->version, error, error_size);
	if (!err)
		err = choose_method(probes, error, error_size);
	if (!err)
		err = resolve_scopes(probes, error, error_size);
	if (!err)
		err = resolve_backward(probes, error, error_size);
	if (!err)
		err = resolve_process_groups(probes, error, error_size);
	if (!err)
		err = resolve_operators(probes, ops, op_count, error, error_size);
	return err;
}

static struct torch_probes *probes_create(const char *path, const char *host_path)
{
	struct torch_probes *probes = calloc(1, sizeof(*probes));

	if (!probes)
		return NULL;
	probes->library_path = strdup(path);
	probes->host_path = strdup(host_path);
	if (!probes->library_path || !probes->host_path) {
		torch_probes_free(probes);
		return NULL;
	}
	return probes;
}

int torch_probes_resolve(const char *library_path, const char *const *ops, size_t op_count,
			 struct torch_probes **probes, char *error, size_t error_size)
{
	struct torch_probes *result;
	int err;

	*probes = NULL;
	if (access(library_path, R_OK) != 0)
		return error_fail(error, error_size, errno, "cannot read %s: %s", library_path,
				  strerror(errno));
	result = probes_create(library_path, library_path);
	if (!result)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	err = resolve_all(result, ops, op_count, error, error_size);
	if (err) {
		torch_probes_free(result);
		return err;
	}
	*probes = result;
	return 0;
}

static bool is_torch_library(const char *path)
{
	const char *name = base_name(path);
	size_t length = strlen(LIBRARY_NAME);

	return strncmp(name, LIBRARY_NAME, length) == 0 &&
	       (name[length] == '\0' || name[length] == '.');
}

int torch_probes_resolve_process(pid_t pid, const char *const *ops, size_t op_count,
				 struct torch_probes **probes, char *error, size_t error_size)
{
	struct mapped_file_list list = { 0 };
	const struct mapped_file *library = NULL;
	struct torch_probes *result;
	int err;

	*probes = NULL;
	err = process_maps_read(pid, &list, error, error_size);
	if (err)
		return err;
	for (size_t i = 0; i < list.count && !library; i++)
		if (is_torch_library(list.files[i].path))
			library = &list.files[i];
	if (!library) {
		mapped_file_list_free(&list);
		return error_fail(error, error_size, ENOENT,
				  "process %d has not mapped libtorch_cpu.so: it is not a PyTorch "
				  "process, or it has not imported torch yet",
				  (int)pid);
	}
	result = probes_create(library->path, library->host_path);
	mapped_file_list_free(&list);
	if (!result)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	err = resolve_all(result, ops, op_count, error, error_size);
	if (err) {
		torch_probes_free(result);
		return err;
	}
	*probes = result;
	return 0;
}

void torch_probes_free(struct torch_probes *probes)
{
	if (!probes)
		return;
	site_free(&probes->scopes.enter);
	site_free(&probes->scopes.key);
	site_free(&probes->scopes.exit);
	site_free(&probes->backward);
	for (int i = 0; i < TORCH_PROCESS_GROUP_SITES; i++)
		site_free(&probes->process_groups[i]);
	for (size_t i = 0; i < probes->op_count; i++) {
		free(probes->ops[i].request);
		free(probes->ops[i].operator_name);
		site_free(&probes->ops[i].site);
	}
	free(probes->ops);
	free(probes->library_path);
	free(probes->host_path);
	free(probes);
}

static void print_site(FILE *out, const char *role, const struct torch_probe_site *site)
{
	if (!site->symbol) {
		fprintf(out, "%-10s not found\n", role);
		return;
	}
	fprintf(out, "%-10s offset 0x%llx (address 0x%llx) %s%s\n           %s\n", role,
		(unsigned long long)site->file_offset, (unsigned long long)site->address,
		site->symbol, site->exported ? "" : " [not exported]",
		site->reading ? site->reading : "");
}

void torch_probes_print(const struct torch_probes *probes, FILE *out)
{
	fprintf(out, "library    %s\n", probes->library_path);
	fprintf(out, "torch      %s (from %s)%s\n", probes->version.text, probes->version.source,
		probes->scopes.verified ? "" : "; scope sites read from the sources, not watched");
	print_site(out, "enter", &probes->scopes.enter);
	print_site(out, "key", &probes->scopes.key);
	print_site(out, "exit", &probes->scopes.exit);
	print_site(out, "backward", &probes->backward);
	for (int i = 0; i < TORCH_PROCESS_GROUP_SITES; i++)
		print_site(out, "process group", &probes->process_groups[i]);
	for (size_t i = 0; i < probes->op_count; i++)
		print_site(out, probes->ops[i].operator_name, &probes->ops[i].site);
}

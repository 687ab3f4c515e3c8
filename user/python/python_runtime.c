// SPDX-License-Identifier: MIT
/* Finds the mapped file of a process that holds CPython: its load bias, version and addresses. */
#include "python/python_layout.h"

#include <ctype.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/remote_memory.h"
#include "probe/elf_symbol_lookup.h"
#include "probe/library_file.h"
#include "probe/process_maps.h"
#include "probe/uprobe_entry_site.h"

#define EVAL_FRAME_SYMBOL "_PyEval_EvalFrameDefault"

/* A version as people write it: "3.13.0rc2", "3.9.18", or "3.9" when the micro is unknown. */
static void version_text(char *text, size_t size, int major, int minor, int micro,
			 uint32_t hex_version)
{
	static const char *const levels[16] = { [0xA] = "a", [0xB] = "b", [0xC] = "rc" };
	unsigned int level = (hex_version >> 4) & 0xF;
	unsigned int serial = hex_version & 0xF;

	if (micro < 0)
		snprintf(text, size, "%d.%d", major, minor);
	else if (hex_version && levels[level])
		snprintf(text, size, "%d.%d.%d%s%u", major, minor, micro, levels[level], serial);
	else
		snprintf(text, size, "%d.%d.%d", major, minor, micro);
}

/* An open ELF file, for what the symbol helpers do not give: headers, sections, bytes. */
struct elf_view {
	struct library_elf file;
	GElf_Ehdr header;
};

static void elf_view_close(struct elf_view *view)
{
	library_file_close_elf(&view->file);
}

static int elf_view_open(const char *path, struct elf_view *view, char *error, size_t error_size)
{
	int err;

	memset(view, 0, sizeof(*view));
	err = library_file_open_elf(path, &view->file, error, error_size);
	if (err)
		return err;
	if (!gelf_getehdr(view->file.elf, &view->header)) {
		elf_view_close(view);
		return error_fail(error, error_size, ENOEXEC, "%s is a damaged ELF file", path);
	}
	return 0;
}

/* The first program header of a type, through its index. */
static bool elf_view_program_header(struct elf_view *view, uint32_t type, size_t *index,
				    GElf_Phdr *header)
{
	size_t count;

	if (elf_getphdrnum(view->file.elf, &count) != 0)
		return false;
	for (size_t i = *index; i < count; i++) {
		if (gelf_getphdr(view->file.elf, (int)i, header) && header->p_type == type) {
			*index = i + 1;
			return true;
		}
	}
	return false;
}

/* The file offset of a virtual address whose bytes lie in the file. */
static bool elf_view_file_offset(struct elf_view *view, uint64_t address, uint64_t *offset)
{
	GElf_Phdr load;
	size_t index = 0;

	while (elf_view_program_header(view, PT_LOAD, &index, &load)) {
		if (address >= load.p_vaddr && address < load.p_vaddr + load.p_filesz) {
			*offset = address - load.p_vaddr + load.p_offset;
			return true;
		}
	}
	return false;
}

static bool read_exact(int fd, uint64_t offset, void *buffer, size_t size)
{
	return pread(fd, buffer, size, (off_t)offset) == (ssize_t)size;
}

/*
 * The load bias of a mapped file: its lowest region maps file offset O at
 * address A, and the PT_LOAD holding O puts that byte at p_vaddr + O -
 * p_offset, so bias = A - O - p_vaddr + p_offset.
 */
static int load_bias_of(struct elf_view *view, const struct mapped_file *file, uint64_t *bias,
			char *error, size_t error_size)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	const struct mapped_region *region = &file->regions[0];
	GElf_Phdr load;
	size_t index = 0;

	while (elf_view_program_header(view, PT_LOAD, &index, &load)) {
		uint64_t first_page = load.p_offset & ~(page - 1);

		if (region->offset >= first_page &&
		    region->offset < load.p_offset + load.p_filesz) {
			*bias = region->start - region->offset - load.p_vaddr + load.p_offset;
			return 0;
		}
	}
	return error_fail(error, error_size, ENOEXEC,
			  "%s is mapped at 0x%llx from file offset 0x%llx, which no PT_LOAD "
			  "segment of the file holds: the file on disk is not the one the "
			  "process loaded (was it replaced?)",
			  file->path, (unsigned long long)region->start,
			  (unsigned long long)region->offset);
}

/*
 * "python3.10", "3.13t", "dm" out of "libpython3.13t.so.1.0" or
 * "python3.10": false when the name carries no version.
 */
static bool version_from_file_name(const char *path, int *major, int *minor, char *abi_flags,
				   size_t abi_flags_size)
{
	const char *base = strrchr(path, '/');
	const char *cursor;
	char *end;
	size_t length = 0;
	long value;

	base = base ? base + 1 : path;
	cursor = strstr(base, "python");
	if (!cursor)
		return false;
	cursor += strlen("python");
	if (!isdigit((unsigned char)cursor[0]))
		return false;
	value = strtol(cursor, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return false;
	*major = (int)value;
	cursor = end + 1;
	*minor = (int)strtol(cursor, &end, 10);
	while (islower((unsigned char)end[length]) && length + 1 < abi_flags_size)
		length++;
	memcpy(abi_flags, end, length);
	abi_flags[length] = '\0';
	return true;
}

/*
 * The micro version of files without Py_Version (3.10 and older): their
 * .rodata holds PY_VERSION, "3.10.13", as the tail of some NUL-ended string
 * (the linker merges it into the install prefix). -1 when it is not there.
 */
static int micro_from_read_only_data(struct elf_view *view, int major, int minor)
{
	char prefix[16];
	size_t prefix_length, section_index;
	Elf_Scn *section = NULL;
	Elf_Data *data;

	if (elf_getshdrstrndx(view->file.elf, &section_index) != 0)
		return -1;
	while ((section = elf_nextscn(view->file.elf, section))) {
		GElf_Shdr header;
		const char *name;

		if (!gelf_getshdr(section, &header))
			continue;
		name = elf_strptr(view->file.elf, section_index, header.sh_name);
		if (name && strcmp(name, ".rodata") == 0 && header.sh_type == SHT_PROGBITS)
			break;
	}
	data = section ? elf_getdata(section, NULL) : NULL;
	if (!data || !data->d_buf)
		return -1;
	prefix_length = (size_t)snprintf(prefix, sizeof(prefix), "%d.%d.", major, minor);
	for (const char *text = data->d_buf, *end = text + data->d_size, *found;
	     (found = memmem(text, (size_t)(end - text), prefix, prefix_length));
	     text = found + 1) {
		const char *digits = found + prefix_length;
		const char *cursor = digits;

		/* "3.10.13\0" after a '/' or '-', never inside a longer number. */
		if (found > (const char *)data->d_buf &&
		    (isdigit((unsigned char)found[-1]) || found[-1] == '.'))
			continue;
		while (cursor < end && isdigit((unsigned char)*cursor))
			cursor++;
		if (cursor > digits && cursor < end && *cursor == '\0' && cursor - digits < 4)
			return atoi(digits);
	}
	return -1;
}

/*
 * The GOT slot the dynamic loader fills with this module's TLS module id:
 * the target of an R_X86_64_DTPMOD64 relocation against the module itself
 * (symbol 0), preferring the pair whose offset half is _Py_tss_tstate's.
 */
static uint64_t module_id_slot_of(struct elf_view *view, uint64_t variable_offset)
{
	uint64_t any_slot = 0;
	Elf_Scn *section = NULL;

	while ((section = elf_nextscn(view->file.elf, section))) {
		GElf_Shdr header;
		Elf_Data *data;

		if (!gelf_getshdr(section, &header) || header.sh_type != SHT_RELA ||
		    header.sh_entsize == 0)
			continue;
		data = elf_getdata(section, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < header.sh_size / header.sh_entsize; i++) {
			uint64_t offset_slot, offset_value = 0;
			GElf_Rela relocation;

			if (!gelf_getrela(data, (int)i, &relocation) ||
			    GELF_R_TYPE(relocation.r_info) != R_X86_64_DTPMOD64 ||
			    GELF_R_SYM(relocation.r_info) != 0)
				continue;
			if (!any_slot)
				any_slot = relocation.r_offset;
			if (elf_view_file_offset(view, relocation.r_offset + 8, &offset_slot) &&
			    read_exact(view->file.fd, offset_slot, &offset_value,
				       sizeof(offset_value)) &&
			    offset_value == variable_offset)
				return relocation.r_offset;
		}
	}
	return any_slot;
}

/*
 * The value of a defined STT_TLS symbol: its offset in the module's TLS
 * block. elf_symbol_find leaves TLS symbols out on purpose (their values
 * are no addresses), so this one kind is looked up here.
 */
static bool thread_local_symbol(struct elf_view *view, const char *name, uint64_t *offset)
{
	Elf_Scn *section = NULL;

	while ((section = elf_nextscn(view->file.elf, section))) {
		GElf_Shdr header;
		Elf_Data *data;

		if (!gelf_getshdr(section, &header) ||
		    (header.sh_type != SHT_SYMTAB && header.sh_type != SHT_DYNSYM) ||
		    header.sh_entsize == 0 || !(data = elf_getdata(section, NULL)))
			continue;
		for (size_t i = 0; i < header.sh_size / header.sh_entsize; i++) {
			const char *symbol_name;
			GElf_Sym symbol;

			if (!gelf_getsym(data, (int)i, &symbol) ||
			    GELF_ST_TYPE(symbol.st_info) != STT_TLS || symbol.st_shndx == SHN_UNDEF)
				continue;
			symbol_name = elf_strptr(view->file.elf, header.sh_link, symbol.st_name);
			if (symbol_name && strcmp(symbol_name, name) == 0) {
				*offset = symbol.st_value;
				return true;
			}
		}
	}
	return false;
}

static void thread_local_find(struct elf_view *view, struct python_runtime *runtime)
{
	struct python_thread_local *thread_local = &runtime->thread_local;
	uint64_t slot;
	GElf_Phdr block;
	size_t index = 0;

	memset(thread_local, 0, sizeof(*thread_local));
	if (!thread_local_symbol(view, "_Py_tss_tstate", &thread_local->variable_offset) ||
	    !elf_view_program_header(view, PT_TLS, &index, &block))
		return;
	thread_local->known = true;
	thread_local->block_size = block.p_memsz;
	thread_local->block_align = block.p_align;
	/* A program (it names its loader) owns module 1 and needs no GOT slot to find it. */
	index = 0;
	thread_local->in_executable = view->header.e_type == ET_EXEC ||
				      elf_view_program_header(view, PT_INTERP, &index, &block);
	if (thread_local->in_executable) {
		thread_local->module_id = 1;
		return;
	}
	slot = module_id_slot_of(view, thread_local->variable_offset);
	if (!slot)
		return;
	thread_local->module_id_address = slot + runtime->load_bias;
	if (remote_memory_read(runtime->pid, thread_local->module_id_address,
			       &thread_local->module_id, sizeof(thread_local->module_id), NULL,
			       0) != 0)
		thread_local->module_id = 0;
}

/* The runtime address of a symbol, 0 when the file lacks it. */
static uint64_t symbol_address(const struct python_runtime *runtime, const char *name)
{
	struct elf_symbol_location location;
	int err = elf_symbol_find(runtime->host_path, name, &location, NULL, 0);

	/* Data in .bss (-ERANGE) has no file offset, but elf_symbol_find gives its address. */
	if (err != 0 && err != -ERANGE)
		return 0;
	return location.address + runtime->load_bias;
}

static int version_find(struct elf_view *view, struct python_runtime *runtime, char *error,
			size_t error_size)
{
	struct elf_symbol_location location;
	uint64_t value = 0;
	int major = 0, minor = 0;
	bool named;

	named = version_from_file_name(runtime->path, &major, &minor, runtime->abi_flags,
				       sizeof(runtime->abi_flags));
	/* const unsigned long Py_Version: 8 bytes of read-only data on x86-64, 3.11+. */
	if (elf_symbol_find(runtime->host_path, "Py_Version", &location, NULL, 0) == 0 &&
	    location.size >= 4 && location.size <= sizeof(value) &&
	    read_exact(view->file.fd, location.file_offset, &value, location.size)) {
		runtime->hex_version = (uint32_t)value;
		runtime->major = (int)((value >> 24) & 0xFF);
		runtime->minor = (int)((value >> 16) & 0xFF);
		runtime->micro = (int)((value >> 8) & 0xFF);
		runtime->version_source = PYTHON_VERSION_FROM_SYMBOL;
	} else if (named) {
		runtime->hex_version = 0;
		runtime->major = major;
		runtime->minor = minor;
		runtime->micro = micro_from_read_only_data(view, major, minor);
		runtime->version_source = PYTHON_VERSION_FROM_FILE_NAME;
	} else {
		return error_fail(error, error_size, ENOMSG,
				  "cannot tell which Python version %s is: it has no Py_Version "
				  "symbol (Python 3.10 and older lack it) and its name does not "
				  "say (libpython3.X.so, python3.X)",
				  runtime->path);
	}
	version_text(runtime->version, sizeof(runtime->version), runtime->major, runtime->minor,
		     runtime->micro, runtime->hex_version);
	return 0;
}

/*
 * Fills runtime from a file that defines _PyEval_EvalFrameDefault: mapped
 * by pid, or (file NULL, pid 0) as the file itself, at load bias 0.
 */
static int runtime_describe(pid_t pid, const char *path, const char *host_path,
			    const struct mapped_file *file,
			    const struct elf_symbol_location *eval_frame,
			    struct python_runtime *runtime, char *error, size_t error_size)
{
	struct python_addresses *addresses = &runtime->addresses;
	struct elf_symbol_location location;
	struct elf_view view;
	int err;

	memset(runtime, 0, sizeof(*runtime));
	runtime->pid = pid;
	snprintf(runtime->path, sizeof(runtime->path), "%s", path);
	snprintf(runtime->host_path, sizeof(runtime->host_path), "%s", host_path);
	/*
	 * A build with CET (Debian trixie's 3.13) opens the evaluator with
	 * endbr64, which the kernel single-steps: a second trap on every entry,
	 * more than three times the cost of the push behind it, where the probe goes.
	 */
	runtime->eval_frame_file_offset =
		uprobe_cheap_entry_file_offset(host_path, eval_frame->file_offset);
	runtime->eval_frame_probe_skip = runtime->eval_frame_file_offset - eval_frame->file_offset;
	err = elf_view_open(host_path, &view, error, error_size);
	if (err)
		return err;
	runtime->x86_64 = view.header.e_machine == EM_X86_64;
	err = file ? load_bias_of(&view, file, &runtime->load_bias, error, error_size) : 0;
	if (!err)
		err = version_find(&view, runtime, error, error_size);
	if (err) {
		elf_view_close(&view);
		return err;
	}
	addresses->eval_frame = eval_frame->address + runtime->load_bias;
	addresses->runtime_state = symbol_address(runtime, "_PyRuntime");
	addresses->long_type = symbol_address(runtime, "PyLong_Type");
	addresses->float_type = symbol_address(runtime, "PyFloat_Type");
	addresses->bool_type = symbol_address(runtime, "PyBool_Type");
	addresses->unicode_type = symbol_address(runtime, "PyUnicode_Type");
	addresses->code_type = symbol_address(runtime, "PyCode_Type");
	addresses->none = symbol_address(runtime, "_Py_NoneStruct");
	addresses->true_object = symbol_address(runtime, "_Py_TrueStruct");
	addresses->false_object = symbol_address(runtime, "_Py_FalseStruct");
	addresses->system_exit = symbol_address(runtime, "PyExc_SystemExit");
	if (elf_symbol_find(runtime->host_path, "_PyRuntime", &location, NULL, 0) == 0)
		runtime->runtime_state_file_offset = location.file_offset;
	/* What the default sys.excepthook calls with an uncaught exception. */
	if (elf_symbol_find(runtime->host_path, "PyErr_Display", &location, NULL, 0) == 0)
		runtime->err_display_file_offset = location.file_offset;
	/* Where sys.exit raises SystemExit: a handler may exit with its exception. */
	if (elf_symbol_find(runtime->host_path, "PyErr_SetObject", &location, NULL, 0) == 0)
		runtime->set_object_file_offset = location.file_offset;
	if (runtime->major == 3 && runtime->minor >= 12)
		thread_local_find(&view, runtime);
	elf_view_close(&view);
	return 0;
}

/* Interpreter files first: they are few, and big libraries (libtorch) are slow to scan. */
static bool looks_like_python(const struct mapped_file *file)
{
	const char *base = strrchr(file->path, '/');

	base = base ? base + 1 : file->path;
	return strncmp(base, "libpython", 9) == 0 || strncmp(base, "python", 6) == 0;
}

int python_runtime_find(pid_t pid, struct python_runtime *runtime, char *error, size_t error_size)
{
	const struct mapped_file *unreadable = NULL;
	struct mapped_file_list list;
	int err;

	err = process_maps_read(pid, &list, error, error_size);
	if (err)
		return err;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < list.count; i++) {
			const struct mapped_file *file = &list.files[i];
			struct elf_symbol_location eval_frame;

			if (looks_like_python(file) != (pass == 0) ||
			    !strchr(file->permissions, 'x') || file->region_count == 0)
				continue;
			if (pass == 0 && !unreadable && access(file->host_path, R_OK) != 0)
				unreadable = file;
			if (elf_symbol_find(file->host_path, EVAL_FRAME_SYMBOL, &eval_frame, NULL,
					    0) != 0)
				continue;
			err = runtime_describe(pid, file->path, file->host_path, file, &eval_frame,
					       runtime, error, error_size);
			mapped_file_list_free(&list);
			return err;
		}
	}
	/* An interpreter by its name that cannot be opened is not "no interpreter". */
	if (unreadable)
		err = error_fail(error, error_size, EACCES,
				 "pid %d maps %s, a Python interpreter by its name, but no path "
				 "from here opens it (tried %s): its Python calls are not followed",
				 (int)pid, unreadable->path, unreadable->host_path);
	else
		err = error_fail(
			error, error_size, ENOENT,
			"pid %d runs no CPython interpreter: none of its %zu mapped files "
			"defines %s; check the pid (a launcher's workers are its children)",
			(int)pid, list.count, EVAL_FRAME_SYMBOL);
	mapped_file_list_free(&list);
	return err;
}

int python_runtime_describe_file(const char *path, const char *host_path,
				 struct python_runtime *runtime, char *error, size_t error_size)
{
	struct elf_symbol_location eval_frame;

	if (elf_symbol_find(host_path, EVAL_FRAME_SYMBOL, &eval_frame, NULL, 0) != 0)
		return error_fail(error, error_size, ENOENT, "%s does not define %s: no CPython",
				  path, EVAL_FRAME_SYMBOL);
	return runtime_describe(0, path, host_path, NULL, &eval_frame, runtime, error, error_size);
}

/* What the kernel takes for an image's start_code: the lowest executable PT_LOAD's address. */
int python_runtime_code_start(const char *host_path, uint64_t *start, char *error,
			      size_t error_size)
{
	struct elf_view view;
	GElf_Phdr load;
	size_t index = 0;
	int err = elf_view_open(host_path, &view, error, error_size);

	if (err)
		return err;
	*start = UINT64_MAX;
	while (elf_view_program_header(&view, PT_LOAD, &index, &load))
		if ((load.p_flags & PF_X) && load.p_vaddr < *start)
			*start = load.p_vaddr;
	elf_view_close(&view);
	if (*start == UINT64_MAX)
		return error_fail(error, error_size, ENOEXEC, "%s has no executable segment",
				  host_path);
	return 0;
}

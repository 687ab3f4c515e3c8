// SPDX-License-Identifier: MIT
/* c10d process groups' sequence numbers read from a running process; see the header. */
#include "record/process_group_sequence.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/remote_memory.h"
#include "probe/elf_symbol_lookup.h"
#include "probe/library_file.h"

#define CODE_BYTES 48
/* A group's size beyond this is no size: the member read is something else. */
#define RANKS_MAX 65536
/* A sequence number torch counts up from 0 (2.x) or from a 31-bit random start (1.13). */
#define SEQUENCE_MAX (1ll << 40)

/* The process group classes and what their backend is called. */
static const struct {
	const char *type_name; /* as RTTI spells it */
	const char *class_name;
	const char *backend;
} group_classes[] = {
	{ "N4c10d16ProcessGroupGlooE", "ProcessGroupGloo", "gloo" },
	{ "N4c10d16ProcessGroupNCCLE", "ProcessGroupNCCL", "nccl" },
};

/* The bases a group class may have, and their (int rank, int size) constructors. */
static const struct {
	const char *type_name;
	const char *constructor;
} rank_bases[] = {
	{ "N4c10d7BackendE", "_ZN4c10d7BackendC2Eii" },
	{ "N4c10d12ProcessGroupE", "_ZN4c10d12ProcessGroupC2Eii" },
};

struct process_group_layout_entry {
	char *host_path;
	size_t class_index;
	int err; /* 0: layout holds */
	struct c10d_sequence_layout layout;
	char note[256];
	bool rank_looked_up;
	int32_t rank_offset; /* -1: not known (the size follows it) */
};

static int32_t little_endian_32(const uint8_t *bytes)
{
	return (int32_t)((uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
			 (uint32_t)bytes[3] << 24);
}

/* `mov disp(%rdi),%rax; ret`: the member's offset, or -1. */
static int64_t plain_load(const uint8_t *code, size_t size)
{
	if (size >= 8 && code[0] == 0x48 && code[1] == 0x8b && code[2] == 0x87 && code[7] == 0xc3)
		return little_endian_32(code + 3);
	if (size >= 5 && code[0] == 0x48 && code[1] == 0x8b && code[2] == 0x47 && code[4] == 0xc3)
		return code[3];
	return -1;
}

int c10d_sequence_layout_decode(const uint8_t *code, size_t size,
				struct c10d_sequence_layout *layout)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	int64_t offset;
	size_t at;

	memset(layout, 0, sizeof(*layout));
	if (size >= sizeof(endbr64) && memcmp(code, endbr64, sizeof(endbr64)) == 0) {
		code += sizeof(endbr64);
		size -= sizeof(endbr64);
	}
	offset = plain_load(code, size);
	if (offset > 0) {
		layout->value_offset = (uint32_t)offset;
		return 0;
	}
	/*
	 * torch 1.13: `cmpb $0,flag(%rdi); jne L; xor %eax,%eax; ret; ...
	 * L: add $member,%rdi; jmp SequenceNum::get`, and SequenceNum::get
	 * returns its c10::optional<uint64_t>: a set flag at +0, the value at +8.
	 */
	if (size < 6 || code[0] != 0x80 || code[1] != 0x7f || code[3] != 0 || code[4] != 0x75)
		return -ENOENT;
	at = 6 + code[5];
	if (code[5] >= 0x80 || at + 5 > size || code[at] != 0x48 || code[at + 1] != 0x83 ||
	    code[at + 2] != 0xc7 || code[at + 4] != 0xe9 || code[at + 3] >= 0x80 || code[2] == 0)
		return -ENOENT;
	layout->set_flag_offsets[0] = code[2];
	layout->set_flag_offsets[1] = code[at + 3];
	layout->value_offset = code[at + 3] + 8u;
	return 0;
}

int c10d_rank_offset_decode(const uint8_t *code, size_t size)
{
	/* The stores come before the constructor calls anything, within its first bytes. */
	size_t end = size < 96 ? size : 96;

	for (size_t i = 0; i + 3 <= end; i++) {
		if (code[i] != 0x89 || code[i + 1] != 0x77 || code[i + 2] >= 0x80)
			continue;
		for (size_t j = 0; j + 3 <= end; j++)
			if (code[j] == 0x89 && code[j + 1] == 0x57 &&
			    code[j + 2] == code[i + 2] + 4)
				return code[i + 2];
	}
	return -ENOENT;
}

static bool heap_pointer(uint64_t word, const struct mapped_file_list *maps)
{
	return word >= 0x10000 && word < 0x800000000000ull && !(word & 7) &&
	       !mapped_file_list_find_address(maps, word, NULL);
}

/* The std::type_info of the object's dynamic type, through its vtable. */
static int object_type_info(pid_t pid, uint64_t address, const struct mapped_file_list *maps,
			    uint64_t *type_info, const struct mapped_file **vtable_file)
{
	uint64_t vtable;
	const struct mapped_file *file;

	if (!heap_pointer(address, maps) || remote_memory_read_u64(pid, address, &vtable) != 0 ||
	    !(file = mapped_file_list_find_address(maps, vtable, NULL)) ||
	    remote_memory_read_u64(pid, vtable - 8, type_info) != 0 ||
	    !mapped_file_list_find_address(maps, *type_info, NULL))
		return -ENOENT;
	if (vtable_file)
		*vtable_file = file;
	return 0;
}

/* The mangled name a std::type_info holds. */
static int type_info_name(pid_t pid, uint64_t type_info, const struct mapped_file_list *maps,
			  char *name, size_t size)
{
	uint64_t name_address;

	if (size == 0 || remote_memory_read_u64(pid, type_info + 8, &name_address) != 0 ||
	    !mapped_file_list_find_address(maps, name_address, NULL) ||
	    remote_memory_read(pid, name_address, name, size, NULL, 0) != 0)
		return -ENOENT;
	name[size - 1] = '\0';
	return 0;
}

int remote_object_type_name(pid_t pid, uint64_t address, const struct mapped_file_list *maps,
			    char *name, size_t size, const struct mapped_file **vtable_file)
{
	uint64_t type_info;

	if (object_type_info(pid, address, maps, &type_info, vtable_file) != 0)
		return -ENOENT;
	return type_info_name(pid, type_info, maps, name, size);
}

/*
 * Where the object's class keeps its rank: its single base (the
 * __si_class_type_info's base, after the name) is one of rank_bases, whose
 * constructor stores it. -1 when not known.
 */
static int32_t rank_offset_find(pid_t pid, uint64_t address, const struct mapped_file_list *maps,
				const char *host_path)
{
	struct elf_symbol_location location;
	uint64_t type_info, base;
	uint8_t code[96];
	char name[64], error[160];
	size_t b;

	if (object_type_info(pid, address, maps, &type_info, NULL) != 0 ||
	    remote_memory_read_u64(pid, type_info + 16, &base) != 0 ||
	    !mapped_file_list_find_address(maps, base, NULL) ||
	    type_info_name(pid, base, maps, name, sizeof(name)) != 0)
		return -1;
	for (b = 0; b < sizeof(rank_bases) / sizeof(rank_bases[0]); b++)
		if (strcmp(name, rank_bases[b].type_name) == 0)
			break;
	if (b == sizeof(rank_bases) / sizeof(rank_bases[0]) ||
	    elf_symbol_find(host_path, rank_bases[b].constructor, &location, error,
			    sizeof(error)) != 0 ||
	    library_file_read_at(host_path, location.file_offset, code, sizeof(code), NULL, 0))
		return -1;
	return c10d_rank_offset_decode(code, sizeof(code));
}

/* The process's rank in the group and the group's size, -1 each when they do not read as such. */
static void rank_read(pid_t pid, struct process_group_reading *group,
		      struct process_group_layout_entry *entry, const struct mapped_file_list *maps)
{
	int32_t values[2];

	group->rank = group->size = -1;
	if (!entry->rank_looked_up) {
		entry->rank_offset = rank_offset_find(pid, group->pointer, maps, entry->host_path);
		entry->rank_looked_up = true;
	}
	if (entry->rank_offset < 0 ||
	    remote_memory_read(pid, group->pointer + (uint64_t)entry->rank_offset, values,
			       sizeof(values), NULL, 0) != 0 ||
	    values[1] < 1 || values[1] > RANKS_MAX || values[0] < 0 || values[0] >= values[1])
		return;
	group->rank = values[0];
	group->size = values[1];
}

static void layout_find(struct process_group_layout_entry *entry)
{
	struct elf_symbol_location location;
	uint8_t code[CODE_BYTES];
	char symbol[128], error[160];

	snprintf(symbol, sizeof(symbol), "_ZN4c10d%zu%s25getSequenceNumberForGroupEv",
		 strlen(group_classes[entry->class_index].class_name),
		 group_classes[entry->class_index].class_name);
	entry->err = elf_symbol_find(entry->host_path, symbol, &location, error, sizeof(error));
	if (entry->err) {
		snprintf(entry->note, sizeof(entry->note),
			 "c10d::%s::getSequenceNumberForGroup is not found in %.120s",
			 group_classes[entry->class_index].class_name, entry->host_path);
		return;
	}
	entry->err = library_file_read_at(entry->host_path, location.file_offset, code,
					  sizeof(code), NULL, 0);
	if (!entry->err)
		entry->err = c10d_sequence_layout_decode(code, sizeof(code), &entry->layout);
	if (entry->err)
		snprintf(entry->note, sizeof(entry->note),
			 "the code of c10d::%s::getSequenceNumberForGroup in %.120s is not a form "
			 "known here: its sequence numbers are not read",
			 group_classes[entry->class_index].class_name, entry->host_path);
}

static struct process_group_layout_entry *layout_for(struct process_group_layouts *layouts,
						     const char *host_path, size_t class_index)
{
	struct process_group_layout_entry *entry;

	for (size_t i = 0; i < layouts->count; i++)
		if (layouts->entries[i].class_index == class_index &&
		    strcmp(layouts->entries[i].host_path, host_path) == 0)
			return &layouts->entries[i];
	if (growable_array_room_for_one((void **)&layouts->entries, layouts->count,
					&layouts->capacity, sizeof(*layouts->entries)))
		return NULL;
	entry = &layouts->entries[layouts->count];
	memset(entry, 0, sizeof(*entry));
	entry->host_path = strdup(host_path);
	if (!entry->host_path)
		return NULL;
	entry->class_index = class_index;
	layouts->count++;
	layout_find(entry);
	return entry;
}

void process_group_layouts_free(struct process_group_layouts *layouts)
{
	for (size_t i = 0; i < layouts->count; i++)
		free(layouts->entries[i].host_path);
	free(layouts->entries);
	memset(layouts, 0, sizeof(*layouts));
}

/* The group's number, or -1 with the reason in note. */
static int64_t sequence_read(pid_t pid, uint64_t pointer,
			     const struct process_group_layout_entry *entry, char *note,
			     size_t note_size)
{
	const struct c10d_sequence_layout *layout = &entry->layout;
	uint64_t value;
	uint8_t flag;

	if (entry->err) {
		if (!note[0])
			snprintf(note, note_size, "%s", entry->note);
		return -1;
	}
	for (size_t i = 0; i < 2 && layout->set_flag_offsets[i]; i++) {
		if (remote_memory_read(pid, pointer + layout->set_flag_offsets[i], &flag, 1, NULL,
				       0) != 0 ||
		    flag > 1)
			return -1;
		if (flag == 0) {
			if (!note[0])
				snprintf(note, note_size,
					 "a c10d::%s of pid %d has no sequence number set",
					 group_classes[entry->class_index].class_name, (int)pid);
			return -1;
		}
	}
	if (remote_memory_read_u64(pid, pointer + layout->value_offset, &value) != 0 ||
	    value >= (uint64_t)SEQUENCE_MAX) {
		if (!note[0])
			snprintf(note, note_size,
				 "the sequence number of a c10d::%s of pid %d does not read as one",
				 group_classes[entry->class_index].class_name, (int)pid);
		return -1;
	}
	return (int64_t)value;
}

static bool already_found(const struct process_group_reading *groups, size_t count,
			  uint64_t pointer)
{
	for (size_t i = 0; i < count; i++)
		if (groups[i].pointer == pointer)
			return true;
	return false;
}

int process_groups_from_words(pid_t pid, const uint64_t *words, size_t count,
			      const struct mapped_file_list *maps,
			      struct process_group_layouts *layouts,
			      struct process_group_reading **groups, size_t *group_count,
			      size_t *capacity, char *note, size_t note_size)
{
	for (size_t i = 0; i < count; i++) {
		struct process_group_layout_entry *entry;
		const struct mapped_file *file;
		struct process_group_reading *group;
		char name[64];
		size_t c;

		if (!heap_pointer(words[i], maps) ||
		    already_found(*groups, *group_count, words[i]) ||
		    remote_object_type_name(pid, words[i], maps, name, sizeof(name), &file) != 0)
			continue;
		for (c = 0; c < sizeof(group_classes) / sizeof(group_classes[0]); c++)
			if (strcmp(name, group_classes[c].type_name) == 0)
				break;
		if (c == sizeof(group_classes) / sizeof(group_classes[0]))
			continue;
		entry = layout_for(layouts, file->host_path, c);
		if (!entry || growable_array_room_for_one((void **)groups, *group_count, capacity,
							  sizeof(**groups)))
			return -ENOMEM;
		group = &(*groups)[(*group_count)++];
		group->pointer = words[i];
		snprintf(group->backend, sizeof(group->backend), "%s", group_classes[c].backend);
		group->sequence = sequence_read(pid, words[i], entry, note, note_size);
		rank_read(pid, group, entry, maps);
	}
	return 0;
}

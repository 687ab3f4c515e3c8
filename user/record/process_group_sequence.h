/* SPDX-License-Identifier: MIT */
/*
 * The sequence number of each c10d process group (ProcessGroupGloo,
 * ProcessGroupNCCL) of a running process, read from its memory on arrival:
 * the number torch's own `_get_sequence_number_for_group()` returns, which
 * counts the collectives the process has issued on the group. A group is
 * found as a pointer on a thread's stack whose object's C++ type (read
 * through its vtable's RTTI) is one of those classes; where the number sits
 * in the object is read from the machine code of the class's exported
 * getSequenceNumberForGroup, so no per-version table is needed, and a form
 * of that code not known here is said, never guessed. The group's rank and
 * size are read the same way: the class's base (c10d::Backend in torch 2.x,
 * c10d::ProcessGroup in 1.13) is read from the object's RTTI, and where the
 * base keeps them from the machine code of its exported (int rank, int
 * size) constructor.
 */
#ifndef TCHECK_PROCESS_GROUP_SEQUENCE_H
#define TCHECK_PROCESS_GROUP_SEQUENCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe/process_maps.h"

/* Where getSequenceNumberForGroup reads the number in the object. */
struct c10d_sequence_layout {
	uint32_t value_offset; /* the uint64_t sequence number */
	/*
	 * Bytes that are 1 when the number is set (torch 1.13 keeps it in a
	 * c10::optional<SequenceNum> holding a c10::optional<uint64_t>); 0: none.
	 */
	uint32_t set_flag_offsets[2];
};

/*
 * Decodes the machine code of getSequenceNumberForGroup (x86-64): a plain
 * load of a member (torch 2.x: `mov disp(%rdi),%rax; ret`) or torch 1.13's
 * test of the optional then jump to SequenceNum::get. -ENOENT for another form.
 */
int c10d_sequence_layout_decode(const uint8_t *code, size_t size,
				struct c10d_sequence_layout *layout);

/*
 * Decodes the start of a base class's (int rank, int size) constructor
 * (x86-64): the stores `mov %esi,disp(%rdi)` and `mov %edx,disp+4(%rdi)`
 * among its first instructions. The rank's offset, or -ENOENT.
 */
int c10d_rank_offset_decode(const uint8_t *code, size_t size);

/* The C++ type name of the object at 'address' ("N4c10d16ProcessGroupGlooE"), via its vtable. */
int remote_object_type_name(pid_t pid, uint64_t address, const struct mapped_file_list *maps,
			    char *name, size_t size, const struct mapped_file **vtable_file);

/* A process group found in a process. */
struct process_group_reading {
	uint64_t pointer;
	char backend[8];  /* "gloo", "nccl" */
	int64_t sequence; /* -1: not readable (why in the note) */
	int rank, size;	  /* the process's rank in the group and its size; -1: not readable */
};

/* The layouts met in one snapshot, per library and class. */
struct process_group_layouts {
	struct process_group_layout_entry *entries;
	size_t count;
	size_t capacity;
};
void process_group_layouts_free(struct process_group_layouts *layouts);

/*
 * Adds to groups (growing it) each process group one of the words points
 * at and not yet in it; a group whose number cannot be read gets sequence
 * -1 and the reason in note (when note is still empty).
 */
int process_groups_from_words(pid_t pid, const uint64_t *words, size_t count,
			      const struct mapped_file_list *maps,
			      struct process_group_layouts *layouts,
			      struct process_group_reading **groups, size_t *group_count,
			      size_t *capacity, char *note, size_t note_size);

#endif /* TCHECK_PROCESS_GROUP_SEQUENCE_H */

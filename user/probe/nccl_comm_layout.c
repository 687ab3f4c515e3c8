// SPDX-License-Identifier: MIT
/* Finds struct ncclComm's identity members in DWARF and reads them from a live process. */
#include "probe/nccl_comm_layout.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/remote_memory.h"
#include "probe/library_file.h"

#define COMM_STRUCT_NAME "ncclComm"

enum comm_member_index {
	MEMBER_COMM_HASH,
	MEMBER_RANK,
	MEMBER_NRANKS,
	MEMBER_OP_COUNT,
	MEMBER_REQUIRED_COUNT, /* the members above are needed; those below are not */
	MEMBER_START_MAGIC = MEMBER_REQUIRED_COUNT,
	MEMBER_END_MAGIC,
	MEMBER_COUNT,
};

/* Why a file has no layout; both are facts about its contents, so they are cached. */
enum layout_absence {
	LAYOUT_PRESENT,
	LAYOUT_NO_DWARF,
	LAYOUT_NO_DEFINITION,
};

/* Anonymous structs and unions inside struct ncclComm are followed this deep. */
#define ANONYMOUS_NESTING_LIMIT 8

/* The members sought, by their name in NCCL's source and their place in the layout. */
static const char *const member_names[MEMBER_COUNT] = {
	[MEMBER_COMM_HASH] = "commHash",     [MEMBER_RANK] = "rank",
	[MEMBER_NRANKS] = "nRanks",	     [MEMBER_OP_COUNT] = "opCount",
	[MEMBER_START_MAGIC] = "startMagic", [MEMBER_END_MAGIC] = "endMagic",
};

static struct nccl_comm_member *layout_member(struct nccl_comm_layout *layout, int index)
{
	struct nccl_comm_member *members[MEMBER_COUNT] = {
		[MEMBER_COMM_HASH] = &layout->comm_hash,
		[MEMBER_RANK] = &layout->rank,
		[MEMBER_NRANKS] = &layout->nranks,
		[MEMBER_OP_COUNT] = &layout->op_count,
		[MEMBER_START_MAGIC] = &layout->start_magic,
		[MEMBER_END_MAGIC] = &layout->end_magic,
	};

	return members[index];
}

static const struct nccl_comm_member *layout_member_const(const struct nccl_comm_layout *layout,
							  int index)
{
	return layout_member((struct nccl_comm_layout *)layout, index);
}

static void layout_reset(struct nccl_comm_layout *layout)
{
	layout->struct_size = -1;
	for (int i = 0; i < MEMBER_COUNT; i++)
		layout_member(layout, i)->offset = layout_member(layout, i)->size = -1;
}

/* How good a definition is: the needed members first, then the magics. */
#define LAYOUT_SCORE_FULL \
	(MEMBER_REQUIRED_COUNT * MEMBER_COUNT + (MEMBER_COUNT - MEMBER_REQUIRED_COUNT))

static int layout_score(const struct nccl_comm_layout *layout)
{
	int needed = 0, optional = 0;

	for (int i = 0; i < MEMBER_COUNT; i++) {
		if (layout_member_const(layout, i)->offset < 0)
			continue;
		if (i < MEMBER_REQUIRED_COUNT)
			needed++;
		else
			optional++;
	}
	return needed * MEMBER_COUNT + optional;
}

/* Describes the members a found definition lacks; returns how many. */
static int describe_missing(const struct nccl_comm_layout *layout, const char *path, char *error,
			    size_t error_size)
{
	char names[64] = "";
	int missing = 0;

	for (int i = 0; i < MEMBER_REQUIRED_COUNT; i++) {
		if (layout_member_const(layout, i)->offset >= 0)
			continue;
		missing++;
		strncat(names, missing > 1 ? ", " : "", sizeof(names) - strlen(names) - 1);
		strncat(names, member_names[i], sizeof(names) - strlen(names) - 1);
	}
	if (missing && error && error_size)
		snprintf(error, error_size,
			 "struct ncclComm in %s has no member %s (another NCCL version?): those "
			 "values of existing communicators will be unknown",
			 path, names);
	return missing;
}

static bool is_declaration(Dwarf_Die *die)
{
	Dwarf_Attribute attribute;
	bool flag = false;

	return dwarf_attr(die, DW_AT_declaration, &attribute) &&
	       dwarf_formflag(&attribute, &flag) == 0 && flag;
}

/* A member's byte offset: a constant, or DW_OP_plus_uconst in DWARF 2 expressions. */
static bool member_offset(Dwarf_Die *member, int64_t *offset)
{
	Dwarf_Attribute attribute;
	Dwarf_Word value;
	Dwarf_Op *expression;
	size_t length;

	if (dwarf_attr(member, DW_AT_data_member_location, &attribute)) {
		if (dwarf_formudata(&attribute, &value) == 0) {
			*offset = (int64_t)value;
			return true;
		}
		if (dwarf_getlocation(&attribute, &expression, &length) == 0 && length == 1 &&
		    expression[0].atom == DW_OP_plus_uconst) {
			*offset = (int64_t)expression[0].number;
			return true;
		}
		return false;
	}
	if (dwarf_attr(member, DW_AT_data_bit_offset, &attribute) &&
	    dwarf_formudata(&attribute, &value) == 0) {
		*offset = (int64_t)(value / 8);
		return true;
	}
	/* Members of a union carry no location: they all start at 0. */
	*offset = 0;
	return true;
}

static bool member_type(Dwarf_Die *member, Dwarf_Die *type)
{
	Dwarf_Attribute attribute;

	return dwarf_attr_integrate(member, DW_AT_type, &attribute) &&
	       dwarf_formref_die(&attribute, type) && dwarf_peel_type(type, type) == 0;
}

/* Fills the sought members found among the children of a struct or union at base. */
static void collect_members(Dwarf_Die *aggregate, int64_t base, int depth,
			    struct nccl_comm_layout *layout)
{
	Dwarf_Die member;

	if (depth > ANONYMOUS_NESTING_LIMIT || dwarf_child(aggregate, &member) != 0)
		return;
	do {
		const char *name;
		Dwarf_Die type;
		Dwarf_Word size;
		int64_t offset;

		/* C++ static data members are declarations: they are not in the object. */
		if (dwarf_tag(&member) != DW_TAG_member || is_declaration(&member) ||
		    !member_offset(&member, &offset))
			continue;
		name = dwarf_diename(&member);
		if (!name) {
			int tag;

			if (!member_type(&member, &type))
				continue;
			tag = dwarf_tag(&type);
			if (tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
			    tag == DW_TAG_class_type)
				collect_members(&type, base + offset, depth + 1, layout);
			continue;
		}
		for (int i = 0; i < MEMBER_COUNT; i++) {
			struct nccl_comm_member *found = layout_member(layout, i);

			if (found->offset >= 0 || strcmp(name, member_names[i]) != 0)
				continue;
			found->offset = base + offset;
			found->size = member_type(&member, &type) &&
						      dwarf_aggregate_size(&type, &size) == 0
					      ? (int64_t)size
					      : -1;
		}
	} while (dwarf_siblingof(&member, &member) == 0);
}

/* The best definition seen so far; the search ends when one has every member. */
struct layout_search {
	struct nccl_comm_layout best;
	int best_score; /* layout_score of best; -1 before any definition */
};

static bool search_done(const struct layout_search *search)
{
	return search->best_score == LAYOUT_SCORE_FULL;
}

static void consider_definition(Dwarf_Die *structure, struct layout_search *search)
{
	struct nccl_comm_layout layout;
	Dwarf_Word size;
	int score;

	layout_reset(&layout);
	if (dwarf_aggregate_size(structure, &size) == 0)
		layout.struct_size = (int64_t)size;
	collect_members(structure, 0, 0, &layout);
	score = layout_score(&layout);
	if (score > search->best_score) {
		search->best = layout;
		search->best_score = score;
	}
}

static bool is_structure(int tag)
{
	return tag == DW_TAG_structure_type || tag == DW_TAG_class_type;
}

/*
 * Checks one DIE that may be struct ncclComm: the definition itself, a
 * typedef of it, or a declaration standing for a definition in a type
 * unit (-fdebug-types-section).
 */
static void consider_die(Dwarf_Die *die, int tag, struct layout_search *search)
{
	Dwarf_Attribute attribute;
	Dwarf_Die target;
	const char *name = dwarf_diename(die);

	if (!name || strcmp(name, COMM_STRUCT_NAME) != 0)
		return;
	if (tag == DW_TAG_typedef) {
		if (!dwarf_attr(die, DW_AT_type, &attribute) ||
		    !dwarf_formref_die(&attribute, &target) || dwarf_peel_type(&target, &target))
			return;
		die = &target;
		if (!is_structure(dwarf_tag(die)))
			return;
	}
	if (!is_declaration(die)) {
		consider_definition(die, search);
		return;
	}
	if (dwarf_attr(die, DW_AT_signature, &attribute) &&
	    dwarf_formref_die(&attribute, &target) && !is_declaration(&target))
		consider_definition(&target, search);
}

/*
 * Looks at the children of a unit or namespace without descending into
 * functions or other types: struct ncclComm is declared at file or
 * namespace scope, and skipping bodies is what keeps this fast.
 */
static void search_scope(Dwarf_Die *scope, struct layout_search *search)
{
	Dwarf_Die child;

	if (dwarf_child(scope, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);

		if (is_structure(tag) || tag == DW_TAG_typedef)
			consider_die(&child, tag, search);
		else if (tag == DW_TAG_namespace)
			search_scope(&child, search);
	} while (!search_done(search) && dwarf_siblingof(&child, &child) == 0);
}

/* The slow path, for a definition nested in a function or another type. */
static void search_everywhere(Dwarf_Die *scope, struct layout_search *search)
{
	Dwarf_Die child;

	if (dwarf_child(scope, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);

		if (is_structure(tag) || tag == DW_TAG_typedef)
			consider_die(&child, tag, search);
		if (!search_done(search) && dwarf_haschildren(&child))
			search_everywhere(&child, search);
	} while (!search_done(search) && dwarf_siblingof(&child, &child) == 0);
}

static void search_units(Dwarf *dwarf, bool everywhere, struct layout_search *search)
{
	Dwarf_CU *unit = NULL;
	Dwarf_Die unit_die;

	/* Type units (.debug_types) come too: their type is a child of the unit DIE. */
	while (!search_done(search) &&
	       dwarf_get_units(dwarf, unit, &unit, NULL, NULL, &unit_die, NULL) == 0) {
		if (everywhere)
			search_everywhere(&unit_die, search);
		else
			search_scope(&unit_die, search);
	}
}

static int describe_absence(enum layout_absence absence, const char *path, char *error,
			    size_t error_size)
{
	if (absence == LAYOUT_NO_DWARF)
		return error_fail(
			error, error_size, ENOENT,
			"%s has no DWARF debug information: the rank and identity of "
			"communicators created before attaching cannot be read; use an NCCL "
			"build with debug information",
			path);
	return error_fail(
		error, error_size, ENOENT,
		"%s has no definition of struct ncclComm in its DWARF: the rank and identity "
		"of communicators created before attaching cannot be read",
		path);
}

/* Returns 0 with *absence saying whether a definition was found, or a negative errno. */
static int find_layout(const char *path, struct nccl_comm_layout *layout,
		       enum layout_absence *absence, char *error, size_t error_size)
{
	struct layout_search search = { .best_score = -1 };
	Dwarf *dwarf;
	int fd;

	layout_reset(layout);
	fd = library_file_open(path, error, error_size);
	if (fd < 0)
		return fd;
	dwarf = dwarf_begin(fd, DWARF_C_READ);
	if (!dwarf) {
		close(fd);
		*absence = LAYOUT_NO_DWARF;
		return 0;
	}
	search_units(dwarf, false, &search);
	if (search.best_score < 0)
		search_units(dwarf, true, &search);
	dwarf_end(dwarf);
	close(fd);
	if (search.best_score < 0) {
		*absence = LAYOUT_NO_DEFINITION;
		return 0;
	}
	*layout = search.best;
	*absence = LAYOUT_PRESENT;
	return 0;
}

/* A file is the same file while its device, inode, size and mtime are. */
struct layout_cache_entry {
	dev_t device;
	ino_t inode;
	off_t size;
	struct timespec mtime;
	enum layout_absence absence;
	struct nccl_comm_layout layout;
	struct layout_cache_entry *next;
};

static pthread_mutex_t layout_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct layout_cache_entry *layout_cache;

void nccl_comm_layout_cache_clear(void)
{
	pthread_mutex_lock(&layout_cache_lock);
	while (layout_cache) {
		struct layout_cache_entry *next = layout_cache->next;

		free(layout_cache);
		layout_cache = next;
	}
	pthread_mutex_unlock(&layout_cache_lock);
}

static struct layout_cache_entry *layout_cache_lookup(const struct stat *st)
{
	for (struct layout_cache_entry *entry = layout_cache; entry; entry = entry->next)
		if (entry->device == st->st_dev && entry->inode == st->st_ino &&
		    entry->size == st->st_size && entry->mtime.tv_sec == st->st_mtim.tv_sec &&
		    entry->mtime.tv_nsec == st->st_mtim.tv_nsec)
			return entry;
	return NULL;
}

int nccl_comm_layout_find(const char *path, struct nccl_comm_layout *layout, char *error,
			  size_t error_size)
{
	enum layout_absence absence = LAYOUT_NO_DEFINITION;
	struct layout_cache_entry *entry;
	struct stat st;
	int err;

	layout_reset(layout);
	if (stat(path, &st) != 0) {
		err = errno;
		if (err == ENOENT)
			return error_fail(error, error_size, err, "cannot open %s: no such file",
					  path);
		return error_fail(error, error_size, err, "cannot open %s: %s", path,
				  strerror(err));
	}
	/* Held across the search so that ranks asking at once wait for one parse. */
	pthread_mutex_lock(&layout_cache_lock);
	entry = layout_cache_lookup(&st);
	if (entry) {
		*layout = entry->layout;
		absence = entry->absence;
	} else {
		err = find_layout(path, layout, &absence, error, error_size);
		if (err) {
			pthread_mutex_unlock(&layout_cache_lock);
			return err;
		}
		entry = calloc(1, sizeof(*entry));
		if (entry) {
			entry->device = st.st_dev;
			entry->inode = st.st_ino;
			entry->size = st.st_size;
			entry->mtime = st.st_mtim;
			entry->absence = absence;
			entry->layout = *layout;
			entry->next = layout_cache;
			layout_cache = entry;
		}
	}
	pthread_mutex_unlock(&layout_cache_lock);
	if (absence != LAYOUT_PRESENT)
		return describe_absence(absence, path, error, error_size);
	return describe_missing(layout, path, error, error_size);
}

/* A member as read: sizes other than 1, 2, 4 and 8 bytes are not integers we know. */
static bool member_readable(const struct nccl_comm_member *member)
{
	return member->offset >= 0 &&
	       (member->size == 1 || member->size == 2 || member->size == 4 || member->size == 8);
}

static uint64_t unsigned_value(const uint8_t *bytes, int64_t size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1:
		memcpy(&u8, bytes, 1);
		return u8;
	case 2:
		memcpy(&u16, bytes, 2);
		return u16;
	case 4:
		memcpy(&u32, bytes, 4);
		return u32;
	default:
		memcpy(&u64, bytes, 8);
		return u64;
	}
}

static int64_t signed_value(const uint8_t *bytes, int64_t size)
{
	uint64_t value = unsigned_value(bytes, size);
	int shift = 64 - 8 * (int)size;

	/* Sign-extend from the member's width. */
	return shift ? (int64_t)(value << shift) >> shift : (int64_t)value;
}

int nccl_comm_read(pid_t pid, uint64_t comm_pointer, const struct nccl_comm_layout *layout,
		   struct nccl_comm_values *values, char *error, size_t error_size)
{
	struct remote_span spans[MEMBER_COUNT];
	uint8_t buffers[MEMBER_COUNT][8];
	int indexes[MEMBER_COUNT], count = 0, needed = 0, err;
	bool magic_read = false, magic_mismatch = false;

	memset(values, 0, sizeof(*values));
	values->rank = values->nranks = -1;
	if (comm_pointer == 0)
		return error_fail(error, error_size, EFAULT,
				  "cannot read a communicator of pid %d: the pointer is NULL",
				  (int)pid);
	for (int i = 0; i < MEMBER_COUNT; i++) {
		const struct nccl_comm_member *member = layout_member_const(layout, i);

		if (!member_readable(member))
			continue;
		spans[count].address = comm_pointer + (uint64_t)member->offset;
		spans[count].buffer = buffers[count];
		spans[count].size = (size_t)member->size;
		indexes[count] = i;
		count++;
		needed += i < MEMBER_REQUIRED_COUNT;
	}
	if (needed == 0)
		return error_fail(
			error, error_size, EINVAL,
			"the layout of struct ncclComm has none of commHash, rank, nRanks, "
			"opCount: nothing to read");
	/* A stale pointer usually means the communicator was destroyed. */
	err = remote_memory_read_spans(pid, spans, (size_t)count, "struct ncclComm", error,
				       error_size);
	if (err)
		return err;
	for (int i = 0; i < count; i++) {
		int64_t size = layout_member_const(layout, indexes[i])->size;

		switch (indexes[i]) {
		case MEMBER_COMM_HASH:
			values->comm_hash = unsigned_value(buffers[i], size);
			values->valid |= NCCL_COMM_HAS_COMM_HASH;
			break;
		case MEMBER_RANK:
			values->rank = (int32_t)signed_value(buffers[i], size);
			values->valid |= NCCL_COMM_HAS_RANK;
			break;
		case MEMBER_NRANKS:
			values->nranks = (int32_t)signed_value(buffers[i], size);
			values->valid |= NCCL_COMM_HAS_NRANKS;
			break;
		case MEMBER_OP_COUNT:
			values->op_count = unsigned_value(buffers[i], size);
			values->valid |= NCCL_COMM_HAS_OP_COUNT;
			break;
		default: /* a magic: each one read must be NCCL's */
			if (unsigned_value(buffers[i], size) != NCCL_COMM_MAGIC)
				magic_mismatch = true;
			magic_read = true;
			break;
		}
	}
	if (magic_read) {
		values->valid |= NCCL_COMM_HAS_MAGIC;
		values->magic_matches = !magic_mismatch;
	}
	return 0;
}

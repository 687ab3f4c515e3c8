/* SPDX-License-Identifier: MIT */
/*
 * Where struct ncclComm keeps a communicator's identity, found in the
 * library's DWARF (the layout changes between NCCL versions), and reading
 * those members out of a running process without stopping it, so that
 * communicators created before the tracer attached can still be named.
 * Functions return 0 or a negative errno and fill error with a sentence.
 */
#ifndef TCHECK_NCCL_COMM_LAYOUT_H
#define TCHECK_NCCL_COMM_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A member of struct ncclComm; both -1 when the definition lacks it. */
struct nccl_comm_member {
	int64_t offset; /* bytes from the start of the struct */
	int64_t size;	/* bytes */
};

struct nccl_comm_layout {
	int64_t struct_size;		   /* sizeof(struct ncclComm) */
	struct nccl_comm_member comm_hash; /* uint64_t commHash */
	struct nccl_comm_member rank;	   /* int rank */
	struct nccl_comm_member nranks;	   /* int nRanks */
	struct nccl_comm_member op_count;  /* uint64_t opCount */
	/* Optional: NCCL sets both to NCCL_COMM_MAGIC while a communicator lives. */
	struct nccl_comm_member start_magic; /* uint64_t startMagic */
	struct nccl_comm_member end_magic;   /* uint64_t endMagic */
};

/* The value of startMagic and endMagic in a live communicator (NCCL's NCCL_MAGIC). */
#define NCCL_COMM_MAGIC 0x0280028002800280ULL

/*
 * Finds the definition of struct ncclComm in the DWARF of an ELF file and
 * the members above. Returns 0 when commHash, rank, nRanks and opCount are
 * found (the magics are looked for too, and left at -1 when absent), the
 * number of those four missing (error names them) when some are not, and -ENOENT when
 * the file has no DWARF or no such definition. Cached per (device, inode,
 * mtime).
 */
int nccl_comm_layout_find(const char *path, struct nccl_comm_layout *layout, char *error,
			  size_t error_size);

/* Which members of struct nccl_comm_values were read. */
#define NCCL_COMM_HAS_COMM_HASH (1u << 0)
#define NCCL_COMM_HAS_RANK (1u << 1)
#define NCCL_COMM_HAS_NRANKS (1u << 2)
#define NCCL_COMM_HAS_OP_COUNT (1u << 3)
#define NCCL_COMM_HAS_MAGIC (1u << 4) /* startMagic (and endMagic, where known) */

struct nccl_comm_values {
	uint64_t comm_hash;
	int32_t rank;	/* -1 when not read */
	int32_t nranks; /* -1 when not read */
	uint64_t op_count;
	/* With NCCL_COMM_HAS_MAGIC: every magic read is NCCL_COMM_MAGIC. */
	bool magic_matches;
	uint32_t valid; /* NCCL_COMM_HAS_* */
};

/*
 * Reads the members the layout has from a communicator of process pid
 * with process_vm_readv: the process is neither stopped nor written to.
 * A word that only might point at a communicator (one found on a stack) is
 * one where the magics match; without them in the layout, nothing tells.
 * Fails with -EFAULT when the pointer is not mapped (a destroyed
 * communicator), -ESRCH when the process is gone, -EPERM without the
 * right to read its memory.
 */
int nccl_comm_read(pid_t pid, uint64_t comm_pointer, const struct nccl_comm_layout *layout,
		   struct nccl_comm_values *values, char *error, size_t error_size);

/* Drops every cached layout. */
void nccl_comm_layout_cache_clear(void);

#endif /* TCHECK_NCCL_COMM_LAYOUT_H */

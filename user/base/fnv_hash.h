/* SPDX-License-Identifier: MIT */
/*
 * FNV-1a, 64 bits, with the standard offset basis and prime: the one hash of
 * names and byte strings in the daemon and the inference engine. Every use
 * is in memory (interning, map keys); no stored file holds one of these.
 */
#ifndef TCHECK_FNV_HASH_H
#define TCHECK_FNV_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_OFFSET_BASIS 0xcbf29ce484222325ULL
#define FNV1A_PRIME 0x100000001b3ULL

/* Folds 'length' bytes into 'hash' (start with FNV1A_OFFSET_BASIS). */
uint64_t fnv1a_add_bytes(uint64_t hash, const void *bytes, size_t length);
/* Folds the eight bytes of 'value', least significant first. */
uint64_t fnv1a_add_u64(uint64_t hash, uint64_t value);
/* The hash of a byte string. */
uint64_t fnv1a_bytes(const void *bytes, size_t length);
/* The hash of a NUL-terminated string, without the NUL. */
uint64_t fnv1a_string(const char *text);

#endif /* TCHECK_FNV_HASH_H */

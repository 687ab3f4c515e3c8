/* SPDX-License-Identifier: MIT */
/* Helpers the NCCL test double exports beyond nccl.h: streams, and identities for ground truth. */
#ifndef NCCL_DOUBLE_HELPERS_H
#define NCCL_DOUBLE_HELPERS_H

#include <stdint.h>

#include "nccl.h"

/*
 * How the double behaves where NCCL leaves room or needs a GPU:
 *
 * - Ranks are processes on one machine. A communicator is a POSIX shared-memory segment named
 *   in the unique id (children of splits: parent name + split number + colour). Buffers are host
 *   pointers; data really moves and is reduced (sum, prod, max, min, avg on the 8-bit, 32-bit and
 *   64-bit integers and on float32/float64; half, bfloat16 and fp8 results are rank 0's data).
 * - Calls check their arguments, enqueue and return: a thread per stream completes operations
 *   in order. Collectives of a communicator run in issue order; so do messages between two
 *   ranks. The operations of one group progress together, so grouped sends and receives never
 *   deadlock.
 * - A collective whose ranks disagree on kind, datatype, op or root waits for ever, as NCCL would
 *   hang. Ranks that disagree only on the count all use the smallest one, leave the rest of
 *   their receive buffers untouched and print a warning. A message longer than the receive
 *   buffer is cut to fit.
 * - A blocked operation fails with ncclRemoteError when a peer process is gone, when a peer
 *   aborted or revoked the communicator, or after DOUBLE_TIMEOUT_ENV milliseconds without
 *   progress; it then marks the communicator broken so the peers fail too. Later operations
 *   on the same stream fail at once until doubleStreamSynchronize() reports the error.
 * - commHash of a comm made from an id is the DJB2a hash of the id; of a split child it is that
 *   hash carried on over the split number (uint32, 1 for the parent's first split or shrink)
 *   and the colour (int32, -2 for a shrink), both as little-endian bytes.
 * - opCount counts the collective and point-to-point calls issued on the comm (ncclBcast once,
 *   through the ncclBroadcast it calls).
 */

#ifdef __cplusplus
extern "C" {
#endif

/* Largest payload one rank may contribute to one operation; larger calls get ncclInvalidArgument.
 */
#define DOUBLE_MAX_MESSAGE_BYTES (4u << 20)
/* Most ranks one communicator may have. */
#define DOUBLE_MAX_RANKS 64
/* Milliseconds a blocked operation waits for its peers before failing; 0 waits for ever. */
#define DOUBLE_TIMEOUT_ENV "NCCL_DOUBLE_TIMEOUT_MS"
/*
 * "1": blocking mode, as gloo and NCCL's blocking paths are: every collective,
 * send, receive and ncclGroupEnd returns only once its operations have
 * finished on every rank taking part, so a rank that never joins leaves the
 * others blocked inside the call. Unset or "0": calls enqueue and return.
 */
#define DOUBLE_BLOCKING_ENV "NCCL_DOUBLE_BLOCKING"

/* Streams stand in for CUDA streams: operations enqueued on one complete in order. */
ncclResult_t doubleStreamCreate(cudaStream_t *stream);
/* Blocks until everything enqueued on the stream is done; returns the first failure since the
 * previous call, or ncclSuccess. NULL is the per-process default stream. */
ncclResult_t doubleStreamSynchronize(cudaStream_t stream);
ncclResult_t doubleStreamDestroy(cudaStream_t stream);

/* The identity the library stores in comm->commHash (the same on every rank of the comm). */
ncclResult_t doubleCommGetHash(ncclComm_t comm, uint64_t *hash);
/* Collectives and point-to-point calls issued on the comm so far (comm->opCount). */
ncclResult_t doubleCommGetOpCount(ncclComm_t comm, uint64_t *count);
/* DJB2a over the id bytes as signed chars: what commHash is for a comm made from this id. */
uint64_t doubleUniqueIdHash(const ncclUniqueId *id);

#ifdef __cplusplus
}
#endif

#endif /* NCCL_DOUBLE_HELPERS_H */

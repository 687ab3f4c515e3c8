// SPDX-License-Identifier: MIT
/* Entry points that move no data: version, errors, unique ids, queries and registration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "double_internal.h"

_Static_assert(sizeof(struct double_unique_id) == NCCL_UNIQUE_ID_BYTES,
	       "the id layout must fill ncclUniqueId exactly");

#define DOUBLE_REGISTRATION_MAGIC 0x6e6f697473696752ULL

struct double_registration {
	uint64_t magic;
	const struct ncclComm *comm;
	void *buffer;
	size_t size;
};

ncclResult_t pncclGetVersion(int *version)
{
	double_library_init();
	if (!version)
		return ncclInvalidArgument;
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclGetVersion);

const char *pncclGetErrorString(ncclResult_t result)
{
	double_library_init();
	switch (result) {
	case ncclSuccess:
		return "success";
	case ncclUnhandledCudaError:
		return "a CUDA call failed";
	case ncclSystemError:
		return "a system call or allocation failed";
	case ncclInternalError:
		return "internal inconsistency in the library";
	case ncclInvalidArgument:
		return "an argument is out of range or NULL";
	case ncclInvalidUsage:
		return "the call is not allowed in this state, or ranks disagree on it";
	case ncclRemoteError:
		return "a peer aborted, died or did not answer in time";
	case ncclInProgress:
		return "the operation is still in progress";
	default:
		return "unknown result code";
	}
}
DOUBLE_WEAK_ALIAS(ncclGetErrorString);

ncclResult_t double_new_unique_id(ncclUniqueId *id)
{
	struct double_unique_id fields;
	uint64_t nonce;

	memset(&fields, 0, sizeof(fields));
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce) ||
	    getrandom(fields.entropy, sizeof(fields.entropy), 0) != sizeof(fields.entropy))
		return ncclSystemError;
	fields.magic = DOUBLE_UNIQUE_ID_MAGIC;
	snprintf(fields.shm_name, sizeof(fields.shm_name), "/nccl-double-%d-%016llx", (int)getpid(),
		 (unsigned long long)nonce);
	memcpy(id->internal, &fields, sizeof(fields));
	return ncclSuccess;
}

ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId)
{
	double_library_init();
	if (!uniqueId)
		return ncclInvalidArgument;
	return double_new_unique_id(uniqueId);
}
DOUBLE_WEAK_ALIAS(ncclGetUniqueId);

/* Reports errors that happened after calls returned: a failed operation, or a peer's abort. */
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	int error;

	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || !asyncError)
		return ncclInvalidArgument;
	error = atomic_load(&comm->async_error);
	if (error == ncclSuccess && atomic_load(&comm->header->broken))
		error = ncclRemoteError;
	*asyncError = (ncclResult_t)error;
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommGetAsyncError);

ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || !count)
		return ncclInvalidArgument;
	*count = comm->nRanks;
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommCount);

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || !device)
		return ncclInvalidArgument;
	*device = comm->cudaDev;
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommCuDevice);

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || !rank)
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommUserRank);

/* Host memory needs no registration: the handle only remembers the call, to check its undoing. */
ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
	struct double_registration *registration;
	ncclResult_t result;

	double_library_init();
	result = double_comm_check(comm);
	if (result != ncclSuccess)
		return result;
	if (!buff || !size || !handle)
		return ncclInvalidArgument;
	registration = malloc(sizeof(*registration));
	if (!registration)
		return ncclSystemError;
	registration->magic = DOUBLE_REGISTRATION_MAGIC;
	registration->comm = comm;
	registration->buffer = buff;
	registration->size = size;
	*handle = registration;
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommRegister);

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle)
{
	struct double_registration *registration = handle;

	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || !registration ||
	    registration->magic != DOUBLE_REGISTRATION_MAGIC || registration->comm != comm)
		return ncclInvalidArgument;
	registration->magic = 0;
	free(registration);
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommDeregister);

ncclResult_t doubleCommGetHash(ncclComm_t comm, uint64_t *hash)
{
	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || !hash)
		return ncclInvalidArgument;
	*hash = comm->commHash;
	return ncclSuccess;
}

ncclResult_t doubleCommGetOpCount(ncclComm_t comm, uint64_t *count)
{
	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || !count)
		return ncclInvalidArgument;
	*count = __atomic_load_n(&comm->opCount, __ATOMIC_RELAXED);
	return ncclSuccess;
}

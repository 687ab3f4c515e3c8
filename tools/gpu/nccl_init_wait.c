// SPDX-License-Identifier: MIT
/*
 * Rank 0 of a two-rank communicator whose rank 1 never comes: it blocks
 * inside ncclCommInitRank for ever, as a job does when one rank never
 * starts. For tools/gpu/gpu-open-call.sh, against the real NCCL on a GPU.
 */
#include <stdio.h>

#include "nccl.h"

int main(void)
{
	ncclUniqueId id;
	ncclComm_t comm;
	ncclResult_t result = ncclGetUniqueId(&id);

	if (result != ncclSuccess) {
		fprintf(stderr, "ncclGetUniqueId: %d\n", (int)result);
		return 1;
	}
	printf("rank 0 of 2 enters ncclCommInitRank\n");
	fflush(stdout);
	result = ncclCommInitRank(&comm, 2, id, 0);
	printf("ncclCommInitRank returned %d\n", (int)result);
	return 0;
}

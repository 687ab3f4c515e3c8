// SPDX-License-Identifier: MIT
/* Per-rank step times from the progress model; see step_time.h. */
#include "diagnose/step_time.h"

size_t step_time_of_ranks(const struct progress_comm *comm, int64_t step,
			  struct rank_step_time *times, size_t capacity)
{
	const struct progress_slot *start, *end;
	size_t count = 0;

	if (!comm->period || step < 1)
		return 0;
	start = progress_comm_slot(comm, progress_comm_step_end(comm, step - 1));
	end = progress_comm_slot(comm, progress_comm_step_end(comm, step));
	if (!start || !end)
		return 0;
	for (int32_t rank = 0; rank < comm->nranks && count < capacity; rank++) {
		if (!start->arrival_ns[rank] || end->arrival_ns[rank] <= start->arrival_ns[rank] ||
		    ((start->guessed | end->guessed) & (1ULL << rank)))
			continue;
		times[count++] = (struct rank_step_time){
			.rank = rank,
			.pid = comm->ranks[rank].pid,
			.seconds = (double)(end->arrival_ns[rank] - start->arrival_ns[rank]) / 1e9,
		};
	}
	return count;
}

// SPDX-License-Identifier: MIT
/* What a process did between two activity samples; see the header. */
#include "model/activity_interval.h"

uint64_t counter_growth(uint64_t earlier, uint64_t later)
{
	return later > earlier ? later - earlier : 0;
}

uint64_t activity_storage_growth(const struct trace_activity_sample *earlier,
				 const struct trace_activity_sample *later)
{
	return counter_growth(earlier->read_bytes, later->read_bytes) +
	       counter_growth(earlier->write_bytes, later->write_bytes);
}

uint64_t activity_syscall_growth(const struct trace_activity_sample *earlier,
				 const struct trace_activity_sample *later)
{
	return counter_growth(earlier->read_chars, later->read_chars) +
	       counter_growth(earlier->write_chars, later->write_chars);
}

enum activity_kind activity_interval_kind(const struct trace_activity_sample *earlier,
					  const struct trace_activity_sample *later)
{
	uint64_t interval_ns = counter_growth(earlier->timestamp_ns, later->timestamp_ns);

	if (activity_storage_growth(earlier, later) >= ACTIVITY_BUSY_STORAGE_BYTES ||
	    activity_syscall_growth(earlier, later) >= ACTIVITY_BUSY_SYSCALL_BYTES)
		return ACTIVITY_FILE_IO;
	if (later->threads_io_wait)
		return ACTIVITY_IO_WAIT;
	if (interval_ns && (double)counter_growth(earlier->cpu_ns, later->cpu_ns) >=
				   ACTIVITY_BUSY_CPU_SHARE * (double)interval_ns)
		return ACTIVITY_COMPUTING;
	return ACTIVITY_IDLE;
}

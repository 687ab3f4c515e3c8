// SPDX-License-Identifier: MIT
/* Job ranks in text: "job rank N" or "no job rank" (job_rank_text.h). */
#include "base/job_rank_text.h"

#include <stdio.h>

const char *job_rank_text(int32_t job_rank, char text[JOB_RANK_TEXT_SIZE])
{
	if (job_rank < 0)
		snprintf(text, JOB_RANK_TEXT_SIZE, "no job rank");
	else
		snprintf(text, JOB_RANK_TEXT_SIZE, "job rank %d", (int)job_rank);
	return text;
}

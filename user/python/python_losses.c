// SPDX-License-Identifier: MIT
/* The recorder's closing warnings about Python events it knows it missed. */
#include "python/python_losses.h"

#include <stdio.h>

#include "base/log.h"
#include "probe/process_info.h"
#include "tcheck/probe_abi.h"

struct python_kernel_drops python_kernel_drops_of(const uint64_t *counters)
{
	return (struct python_kernel_drops){ counters[TCHECK_COUNTER_PYTHON_DROPS],
					     counters[TCHECK_COUNTER_PYTHON_TOO_DEEP] };
}

size_t python_losses_sentences(const struct python_tracer_losses *losses,
			       struct python_kernel_drops kernel,
			       char sentences[PYTHON_LOSSES_SENTENCES][320])
{
	size_t count = 0;

	if (kernel.ring_full)
		snprintf(sentences[count++], 320,
			 "%llu Python calls, torch scopes or torch operators were lost in the "
			 "kernel, the ring buffer being full; raise --ring-buffer-mb",
			 (unsigned long long)kernel.ring_full);
	if (kernel.too_deep)
		snprintf(sentences[count++], 320,
			 "%llu Python calls or torch scopes were nested deeper than the probes "
			 "follow (32 calls of followed or not yet named code, 8 scopes, on a "
			 "thread) and are not in the trace; torch.compile's tracing runs code "
			 "that deep, and a larger ring buffer does not help",
			 (unsigned long long)kernel.too_deep);
	if (losses->refused_processes)
		snprintf(sentences[count++], 320,
			 "%u process%s run%s a CPython that cannot be followed (said above): "
			 "%s Python calls are not in the trace",
			 losses->refused_processes, losses->refused_processes == 1 ? "" : "es",
			 losses->refused_processes == 1 ? "s" : "",
			 losses->refused_processes == 1 ? "its" : "their");
	if (losses->unprobed_processes)
		snprintf(sentences[count++], 320,
			 "the frame evaluator of %u process%s could not be probed (said above): "
			 "%s Python calls are not in the trace",
			 losses->unprobed_processes, losses->unprobed_processes == 1 ? "" : "es",
			 losses->unprobed_processes == 1 ? "its" : "their");
	if (losses->ended_unnamed_calls)
		snprintf(sentences[count++], 320,
			 "%llu Python calls are not in the trace: their process had ended before "
			 "the recorder, behind on its events, could name their code (said per "
			 "process above)",
			 (unsigned long long)losses->ended_unnamed_calls);
	if (losses->unfollowed_events) {
		char pids[PYTHON_LOSSES_PIDS_NAMED * 12] = "";
		size_t used = 0;

		for (uint32_t i = 0; i < losses->unfollowed_pid_count && used < sizeof(pids); i++)
			used += (size_t)snprintf(pids + used, sizeof(pids) - used, "%s%u",
						 i ? ", " : "", losses->unfollowed_pids[i]);
		snprintf(sentences[count++], 320,
			 "%llu Python calls, torch scopes or torch operators came from processes "
			 "whose Python was not being followed (pid %s%s) and are not in the trace",
			 (unsigned long long)losses->unfollowed_events, pids,
			 losses->unfollowed_pid_count == PYTHON_LOSSES_PIDS_NAMED ? ", ..." : "");
	}
	return count;
}

uint64_t python_losses_events(const struct python_tracer_losses *losses,
			      struct python_kernel_drops kernel)
{
	return kernel.ring_full + kernel.too_deep + losses->unfollowed_events +
	       losses->ended_unnamed_calls;
}

void python_losses_count_unfollowed(struct python_tracer_losses *losses, uint32_t pid)
{
	losses->unfollowed_events++;
	for (uint32_t i = 0; i < losses->unfollowed_pid_count; i++)
		if (losses->unfollowed_pids[i] == pid)
			return;
	if (losses->unfollowed_pid_count < PYTHON_LOSSES_PIDS_NAMED)
		losses->unfollowed_pids[losses->unfollowed_pid_count++] = pid;
}

void python_losses_count_unnamed(struct python_tracer_losses *losses, uint32_t pid, bool *said)
{
	if (!process_has_ended((pid_t)pid)) {
		losses->unnamed_calls++;
		return;
	}
	losses->ended_unnamed_calls++;
	if (*said)
		return;
	*said = true;
	log_warning("process %u had ended before the recorder could name the Python calls of it "
		    "still queued (the recorder was behind): they are not in the trace",
		    pid);
}

void python_losses_report(const struct python_tracer_losses *losses,
			  struct python_kernel_drops kernel)
{
	char sentences[PYTHON_LOSSES_SENTENCES][320];
	size_t count;

	count = python_losses_sentences(losses, kernel, sentences);
	for (size_t i = 0; i < count; i++)
		log_warning("%s", sentences[i]);
	/* Mostly module bodies run once at import and freed at once: not a warning. */
	if (losses->unnamed_calls)
		log_info("%llu Python calls were of code objects freed before they could be named "
			 "(module bodies run at import, short-lived functions): not recorded",
			 (unsigned long long)losses->unnamed_calls);
	/*
	 * The trace shows these frames as such; freed module bodies make most of
	 * them: about the recording, not the job (-v).
	 */
	if (losses->unnamed_callers)
		log_info("%llu callers in the Python stacks of recorded calls are written as "
			 "\"" PYTHON_UNREADABLE_FRAME "\": their code objects were freed (module "
			 "bodies run at import) or their process had ended before they were read",
			 (unsigned long long)losses->unnamed_callers);
	if (losses->device_contents)
		log_notice(
			"%llu torch operators worked on tensors in device memory, which is not "
			"read: replicas are compared by their update operators and scalars only, "
			"not by their parameters' contents",
			(unsigned long long)losses->device_contents);
	if (losses->unread_module_classes)
		log_notice("%llu module calls are recorded without their module's class: the type "
			   "of their self argument could not be read from the process",
			   (unsigned long long)losses->unread_module_classes);
	if (losses->unplaced_modules)
		log_notice("%llu module calls are recorded with their class but no attribute path: "
			   "their module was not found under the top module of their thread, or "
			   "the module dicts could not be read (CPython 3.11 to 3.14 are read)",
			   (unsigned long long)losses->unplaced_modules);
	if (losses->unread_train_overrides)
		log_notice(
			"%llu module calls of modules no train() or eval() had reached are not "
			"judged by TrainOverrideRan: whether their class overrides train() could "
			"not be read from the process (CPython 3.11 to 3.14 are read)",
			(unsigned long long)losses->unread_train_overrides);
	if (losses->backward_ends_missed)
		log_notice("%llu backward passes have no end in the trace (an exception left "
			   "them, the recording stopped inside, or they returned by a path the "
			   "probes do not cover): recorded at their start only",
			   (unsigned long long)losses->backward_ends_missed);
	if (losses->unreadable_contents)
		log_notice("the contents of %llu torch operators' tensors could not be read "
			   "(freed, or laid out otherwise than in torch 1.13 and 2.x): no digest "
			   "for them",
			   (unsigned long long)losses->unreadable_contents);
}

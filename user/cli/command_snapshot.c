// SPDX-License-Identifier: MIT
/* `tcheck-bpf snapshot`: a running job's state read once, from outside, as text or JSON. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/output_file.h"
#include "cli/commands.h"
#include "record/job_snapshot.h"

#define SNAPSHOT_PIDS_MAX 1024

static bool snapshot_has_unread(const struct job_snapshot *snapshot)
{
	for (size_t i = 0; i < snapshot->count; i++)
		if (snapshot->processes[i].unread_note[0])
			return true;
	return false;
}

static const char snapshot_help[] =
	"Usage: tcheck-bpf snapshot --pid PID [--pid PID...] [--json] [-o FILE]\n"
	"\n"
	"Reads the state of the running processes of one job, from outside and without\n"
	"waiting for a call, and says which rank the others wait for (a rank named as\n"
	"lagging is read again 0.3 s later, and stays named only if it is still behind\n"
	"and did no work of its own in between). For each process: every thread's Python\n"
	"stack (read from the interpreter's state), the NCCL, c10d or gloo function each\n"
	"thread is blocked in (its stack words matched against those functions), each\n"
	"NCCL communicator's operation count and each c10d process group's sequence\n"
	"number (torch's own, read from memory). A rank whose count is behind the\n"
	"others', or no thread of which is inside the collective the others wait in, is\n"
	"named with that collective, its sequence number and, where the others' Python\n"
	"stacks show the pattern, the first call it did not make. What cannot be read is\n"
	"said with the reason (a \"..._note\" field); a process whose reading does not\n"
	"move on for 10 s (memory on a hung mount) is left unread, said in its\n"
	"unread_note, and the others are read. The processes are neither stopped,\n"
	"signalled nor written to: the dump cannot hang on the GIL as an in-process one\n"
	"can. Needs root (or CAP_SYS_PTRACE) to read another process's memory.\n"
	"\n"
	"Options:\n"
	"  -p, --pid PID     a process of the job (repeat for every rank)\n"
	"  -j, --json        one JSON object: findings, then every process's\n"
	"                    communicators, process groups and threads with their\n"
	"                    stacks (fields below)\n"
	"  -o, --output FILE write there (through a temporary file renamed into place;\n"
	"                    \"-\": standard output) instead of standard output\n"
	"  -h, --help        this text\n"
	"\n"
	"JSON fields: summary; findings[]: rank, pid, collective, seq (the sequence\n"
	"number the others wait in), last_seq (the lagging rank's own last, c10d),\n"
	"comm_id, waiting_ranks, doing, missed (the first call it did not make);\n"
	"processes[]: pid, rank, communicators[] (comm_id, rank, nranks, op_count),\n"
	"process_groups[] (backend, seq, rank, size), threads[] (tid, name, native:\n"
	"function, library, collective; python: function, file, first_line per\n"
	"frame), unread_note (a process not read).\n"
	"\n"
	"Exit status: 0 no rank lags; 1 a rank lags (a hang); 2 bad input or a process\n"
	"that cannot be read (one left unread: the others are still written).\n"
	"\n"
	"Examples:\n"
	"  sudo tcheck-bpf snapshot --pid 4242 --pid 4243\n"
	"  sudo tcheck-bpf snapshot --pid 4242 --pid 4243 --json | jq '.findings'\n"
	"  sudo tcheck-bpf snapshot --pid 4242 --pid 4243 --json -o hung.json\n"
	"  {\"kind\":\"snapshot\",\"summary\":\"rank 1 (pid 4243) never joined c10d::allreduce\n"
	"   seq 12 (its last: 11) ...\",\"findings\":[{\"rank\":1,\"collective\":\n"
	"   \"c10d::allreduce\",\"seq\":12,\"last_seq\":11,\"missed\":\"Tensor.backward\n"
	"   (_tensor.py), called from train as rank 0 did\",...}],\"processes\":[{\"pid\":\n"
	"   4242,\"rank\":0,\"process_groups\":[{\"backend\":\"gloo\",\"seq\":12,\"rank\":0,\n"
	"   \"size\":2}],...}]}\n";

/* Written as every output is (base/output_file): aside and renamed, "-" standard output. */
static int write_output(const char *path, const struct job_snapshot *snapshot,
			const struct snapshot_diagnosis *diagnosis, bool json)
{
	struct output_file output;
	char error[512];
	int err;

	if (output_file_open(&output, path, 0, error, sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	if (json)
		err = job_snapshot_write_json(snapshot, diagnosis, output.stream);
	else {
		job_snapshot_write_text(snapshot, diagnosis, output.stream);
		err = ferror(output.stream) ? -1 : 0;
	}
	if (output_file_close(&output, err == 0, error, sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	if (err)
		log_error("cannot write the snapshot to %s", path ? path : "standard output");
	return err ? -1 : 0;
}

int command_snapshot(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	pid_t pids[SNAPSHOT_PIDS_MAX];
	struct snapshot_diagnosis diagnosis;
	struct job_snapshot snapshot;
	const char *output = NULL;
	size_t pid_count = 0;
	bool json = false;
	char error[512];
	int option, err;

	optind = 1;
	while ((option = getopt_long(argc, argv, "p:jo:h", long_options, NULL)) != -1) {
		switch (option) {
		case 'p':
			if (pid_count == SNAPSHOT_PIDS_MAX) {
				log_error("at most %d --pid options", SNAPSHOT_PIDS_MAX);
				return 2;
			}
			if (parse_pid(optarg, &pids[pid_count]))
				return 2;
			pid_count++;
			break;
		case 'j':
			json = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			fputs(snapshot_help, stdout);
			return 0;
		default:
			fputs(snapshot_help, stderr);
			return 2;
		}
	}
	if (optind < argc || pid_count == 0) {
		log_error(pid_count ? "unexpected argument '%s' (see tcheck-bpf snapshot --help)"
				    : "snapshot needs --pid PID, once for each process of the job",
			  optind < argc ? argv[optind] : "");
		return 2;
	}
	err = job_snapshot_read(pids, pid_count, &snapshot, error, sizeof(error));
	if (err) {
		log_error("%s", error);
		return 2;
	}
	if (job_snapshot_diagnose(&snapshot, &diagnosis) != 0) {
		log_error("out of memory judging the snapshot");
		job_snapshot_free(&snapshot);
		return 2;
	}
	/* One reading is one instant: a rank named as lagging is read again to confirm it. */
	if (diagnosis.count && job_snapshot_confirm(pids, pid_count, &snapshot, &diagnosis) != 0)
		return 2;
	err = write_output(output, &snapshot, &diagnosis, json);
	if (!err && diagnosis.count)
		err = 1;
	else if (err || snapshot_has_unread(&snapshot))
		err = 2;
	snapshot_diagnosis_free(&diagnosis);
	job_snapshot_free(&snapshot);
	return err;
}

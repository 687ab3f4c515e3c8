// SPDX-License-Identifier: MIT
/*
 * Fuzzes the agent's config file reader through the agent's own command
 * line: `agent --config FILE --help` reads FILE, then prints the help and
 * stops before attaching anything, so no BPF and no root are needed.
 */
#include <stdint.h>
#include <stdio.h>

#include "cli/commands.h"
#include "fuzz_input.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_input_silence_stdout();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char verb[] = "agent", config[] = "--config", help[] = "--help";
	char path[64];
	char *arguments[] = { verb, config, path, help, NULL };

	snprintf(path, sizeof(path), "%s", fuzz_input_path(data, size));
	command_agent(4, arguments);
	return 0;
}

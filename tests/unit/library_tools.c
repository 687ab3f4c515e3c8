// SPDX-License-Identifier: MIT
/*
 * nm and objdump run on a real library: what the probe-site tests compare
 * the sites found by the code under test with.
 */
#include "library_tools.h"

#include <stdio.h>
#include <string.h>

uint64_t nm_symbol(const char *library, const char *symbol, uint64_t *size)
{
	char command[1024], line[2048], name[1024];
	unsigned long long address, length;
	uint64_t found = 0;
	FILE *output;

	snprintf(command, sizeof(command), "nm -D -S --defined-only '%s' 2>/dev/null", library);
	output = popen(command, "r");
	if (!output)
		return 0;
	while (fgets(line, sizeof(line), output))
		if (sscanf(line, "%llx %llx %*s %1023s", &address, &length, name) == 3 &&
		    strcmp(name, symbol) == 0) {
			found = address;
			*size = length;
		}
	pclose(output);
	return found;
}

/* objdump's disassembly of [start, stop), one line at a time to 'line_seen'. */
static bool objdump_lines(const char *library, uint64_t start, uint64_t stop,
			  bool (*line_seen)(const char *line, const void *wanted),
			  const void *wanted)
{
	char command[2048], line[4096];
	bool found = false;
	FILE *output;

	snprintf(command, sizeof(command),
		 "objdump -d --no-show-raw-insn --start-address=0x%llx --stop-address=0x%llx "
		 "'%s' 2>/dev/null",
		 (unsigned long long)start, (unsigned long long)stop, library);
	output = popen(command, "r");
	if (!output)
		return false;
	while (fgets(line, sizeof(line), output))
		found |= line_seen(line, wanted);
	pclose(output);
	return found;
}

/* The line of the instruction 'wanted' names ("address:\tmnemonic"), operands or none after. */
static bool line_is_instruction(const char *line, const void *wanted)
{
	const char *found = strstr(line, wanted);
	char after;

	if (!found)
		return false;
	after = found[strlen(wanted)];
	return after == ' ' || after == '\n' || after == '\0';
}

bool objdump_instruction_is(const char *library, uint64_t address, const char *mnemonic)
{
	char expected[128];

	snprintf(expected, sizeof(expected), "%llx:\t%s", (unsigned long long)address, mnemonic);
	return objdump_lines(library, address, address + 16, line_is_instruction, expected);
}

/* A call whose target objdump names <symbol> or <symbol@plt>. */
static bool line_calls(const char *line, const void *symbol)
{
	char direct[1100], plt[1100];

	snprintf(direct, sizeof(direct), "<%s>", (const char *)symbol);
	snprintf(plt, sizeof(plt), "<%s@plt>", (const char *)symbol);
	return strstr(line, "\tcall ") && (strstr(line, direct) || strstr(line, plt));
}

/* The jmp at the address 'wanted' starts a line with, to <symbol> or <symbol@plt>. */
struct jump_wanted {
	char start[64];
	const char *symbol;
};

static bool line_jumps(const char *line, const void *wanted)
{
	const struct jump_wanted *jump = wanted;
	char direct[1100], plt[1100];

	snprintf(direct, sizeof(direct), "<%s>", jump->symbol);
	snprintf(plt, sizeof(plt), "<%s@plt>", jump->symbol);
	return strstr(line, jump->start) && (strstr(line, direct) || strstr(line, plt));
}

bool objdump_instruction_jumps_to(const char *library, uint64_t address, const char *symbol)
{
	struct jump_wanted jump = { .symbol = symbol };

	snprintf(jump.start, sizeof(jump.start), "%llx:\tjmp ", (unsigned long long)address);
	return objdump_lines(library, address, address + 16, line_jumps, &jump);
}

bool objdump_function_calls(const char *library, uint64_t address, uint64_t size,
			    const char *symbol)
{
	return objdump_lines(library, address, address + size, line_calls, symbol);
}

/* Every line of command's output that holds 'wanted', by its leading address; how many. */
static size_t addresses_of_lines(const char *command, const char *wanted, uint64_t *found,
				 size_t max)
{
	char line[1024];
	unsigned long long address;
	size_t count = 0;
	FILE *output = popen(command, "r");

	if (!output)
		return 0;
	while (fgets(line, sizeof(line), output))
		if (strstr(line, wanted) && sscanf(line, " %llx", &address) == 1 && count < max)
			found[count++] = address;
	pclose(output);
	return count;
}

uint64_t objdump_plt_stub(const char *library, const char *symbol)
{
	char command[1024], wanted[256];
	uint64_t found = 0;

	snprintf(command, sizeof(command), "objdump -d -j .plt -j .plt.sec '%s' 2>/dev/null",
		 library);
	snprintf(wanted, sizeof(wanted), "<%s@plt>:", symbol);
	return addresses_of_lines(command, wanted, &found, 1) ? found : 0;
}

size_t objdump_plt_calls(const char *library, const char *symbol, uint64_t *found, size_t max)
{
	char command[1024], wanted[256];

	snprintf(command, sizeof(command), "objdump -d --no-show-raw-insn '%s' 2>/dev/null",
		 library);
	snprintf(wanted, sizeof(wanted), "<%s@plt>\n", symbol);
	return addresses_of_lines(command, wanted, found, max);
}

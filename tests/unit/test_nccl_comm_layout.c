// SPDX-License-Identifier: MIT
/* Tests of finding struct ncclComm's members in DWARF and reading them from another process. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe/nccl_comm_layout.h"
#include "unit.h"

#define REAL_NCCL "/usr/local/cuda/lib/libnccl.so.2"

/*
 * A program with struct ncclComm's members behind padding, opCount in an
 * anonymous union. It prints offsetof of each member and sizeof, then the
 * address of a communicator it filled; given an argument it keeps running
 * until its standard input closes.
 */
static const char plain_source[] =
	"#include <stddef.h>\n"
	"#include <stdint.h>\n"
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <unistd.h>\n"
	"struct ncclComm {\n"
	"	char head[40];\n"
	"	struct { int a; char pad[100]; } settings;\n"
	"	uint64_t commHash;\n"
	"	char gap[13];\n"
	"	int rank;\n"
	"	int nRanks;\n"
	"	double spread[7];\n"
	"	union { uint64_t opCount; uint64_t collOpCount; };\n"
	"	char tail[3];\n"
	"};\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	struct ncclComm *comm = calloc(1, sizeof(*comm));\n"
	"	char byte;\n"
	"	comm->commHash = 0x1122334455667788ULL;\n"
	"	comm->rank = 5;\n"
	"	comm->nRanks = 16;\n"
	"	comm->opCount = 99;\n"
	"	printf(\"%zu %zu %zu %zu %zu\\n\", offsetof(struct ncclComm, commHash),\n"
	"	       offsetof(struct ncclComm, rank), offsetof(struct ncclComm, nRanks),\n"
	"	       offsetof(struct ncclComm, opCount), sizeof(struct ncclComm));\n"
	"	printf(\"%p\\n\", (void *)comm);\n"
	"	fflush(stdout);\n"
	"	while (argc > 1 && read(0, &byte, 1) > 0)\n"
	"		;\n"
	"	free(comm);\n"
	"	return 0;\n"
	"}\n";

/* NCCL's own shape: C++, inside namespaces, with a static member that takes no room. */
static const char namespaced_source[] = "#include <cstdint>\n"
					"namespace nccl {\n"
					"namespace detail {\n"
					"struct ncclComm {\n"
					"	char head[24];\n"
					"	uint64_t commHash;\n"
					"	int rank;\n"
					"	int nRanks;\n"
					"	static int instances;\n"
					"	uint64_t opCount;\n"
					"};\n"
					"}\n"
					"}\n"
					"int nccl::detail::ncclComm::instances;\n"
					"nccl::detail::ncclComm kept;\n"
					"int main() { return kept.rank; }\n";

/* Defined only inside a function, and without opCount. */
static const char nested_source[] =
	"#include <stdint.h>\n"
	"int main(void)\n"
	"{\n"
	"	struct ncclComm { int pad[3]; uint64_t commHash; int rank;\n"
	"			  int nRanks; } comm = { { 0 }, 0, 0, 0 };\n"
	"	volatile struct ncclComm *kept = &comm;\n"
	"	return kept->rank;\n"
	"}\n";

/* An anonymous struct reached through a typedef of that name. */
static const char typedefed_source[] = "#include <stdint.h>\n"
				       "typedef struct {\n"
				       "	uint64_t commHash;\n"
				       "	int rank;\n"
				       "	int nRanks;\n"
				       "	uint64_t opCount;\n"
				       "} ncclComm;\n"
				       "ncclComm kept;\n"
				       "int main(void) { return kept.rank; }\n";

/* Only a declaration, as in a file that passes communicators around. */
static const char declared_source[] = "struct ncclComm;\n"
				      "struct ncclComm *held;\n"
				      "int main(void) { return held != 0; }\n";

static char fixture_directory[64];
static bool have_cxx;

static void remove_fixtures(void)
{
	char command[128];

	snprintf(command, sizeof(command), "rm -rf '%s'", fixture_directory);
	if (system(command) != 0)
		fprintf(stderr, "could not remove the test fixtures in %s\n", fixture_directory);
}

static bool write_text(const char *name, const char *text)
{
	char path[128];
	FILE *file;

	snprintf(path, sizeof(path), "%s/%s", fixture_directory, name);
	file = fopen(path, "w");
	if (!file)
		return false;
	fputs(text, file);
	return fclose(file) == 0;
}

static bool fixtures_ready(void)
{
	static int state = -1;
	char command[1024];

	if (state >= 0)
		return state == 1;
	state = 0;
	snprintf(fixture_directory, sizeof(fixture_directory), "/tmp/tcheck-dwarf-XXXXXX");
	if (!mkdtemp(fixture_directory))
		return false;
	atexit(remove_fixtures);
	if (!write_text("plain.c", plain_source) ||
	    !write_text("namespaced.cc", namespaced_source) ||
	    !write_text("nested.c", nested_source) || !write_text("declared.c", declared_source) ||
	    !write_text("typedefed.c", typedefed_source))
		return false;
	snprintf(command, sizeof(command),
		 "cd %s && cc -g -O0 -o plain plain.c && cc -O0 -o plain_no_dwarf plain.c && "
		 "cc -g -O0 -o nested nested.c && cc -g -O0 -o declared declared.c && "
		 "cc -g -O0 -o typedefed typedefed.c",
		 fixture_directory);
	if (system(command) != 0)
		return false;
	snprintf(command, sizeof(command),
		 "cd %s && command -v c++ >/dev/null && c++ -g -O0 -o namespaced namespaced.cc",
		 fixture_directory);
	have_cxx = system(command) == 0;
	state = 1;
	return true;
}

static void fixture_path(char *path, size_t size, const char *name)
{
	snprintf(path, size, "%s/%s", fixture_directory, name);
}

/* A fixture program running with pipes to its standard input and output. */
struct running_fixture {
	pid_t pid;
	FILE *output;
	int input;
};

static bool fixture_start(const char *path, struct running_fixture *fixture)
{
	int to_child[2], from_child[2];

	if (pipe(to_child) != 0)
		return false;
	if (pipe(from_child) != 0) {
		close(to_child[0]);
		close(to_child[1]);
		return false;
	}
	fixture->pid = fork();
	if (fixture->pid == 0) {
		dup2(to_child[0], 0);
		dup2(from_child[1], 1);
		close(to_child[1]);
		close(from_child[0]);
		execl(path, path, "hold", (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	fixture->input = to_child[1];
	fixture->output = fdopen(from_child[0], "r");
	return fixture->pid > 0 && fixture->output;
}

static void fixture_stop(struct running_fixture *fixture)
{
	if (fixture->input >= 0)
		close(fixture->input);
	if (fixture->output)
		fclose(fixture->output);
	if (fixture->pid > 0)
		waitpid(fixture->pid, NULL, 0);
}

UNIT_TEST(nccl_comm_layout, offsets_match_offsetof)
{
	unsigned long long expected[5], pointer;
	struct running_fixture fixture = { .pid = -1, .output = NULL, .input = -1 };
	struct nccl_comm_layout layout;
	struct nccl_comm_values values;
	char path[128], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "plain");
	CU_ASSERT_FATAL(fixture_start(path, &fixture));
	CU_ASSERT_FATAL(fscanf(fixture.output, "%llu %llu %llu %llu %llu %llx", &expected[0],
			       &expected[1], &expected[2], &expected[3], &expected[4],
			       &pointer) == 6);

	CU_ASSERT_EQUAL_FATAL(nccl_comm_layout_find(path, &layout, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(layout.comm_hash.offset, (int64_t)expected[0]);
	CU_ASSERT_EQUAL(layout.rank.offset, (int64_t)expected[1]);
	CU_ASSERT_EQUAL(layout.nranks.offset, (int64_t)expected[2]);
	CU_ASSERT_EQUAL(layout.op_count.offset, (int64_t)expected[3]);
	CU_ASSERT_EQUAL(layout.struct_size, (int64_t)expected[4]);
	CU_ASSERT_EQUAL(layout.comm_hash.size, 8);
	CU_ASSERT_EQUAL(layout.rank.size, 4);
	CU_ASSERT_EQUAL(layout.nranks.size, 4);
	CU_ASSERT_EQUAL(layout.op_count.size, 8);

	/* The same layout reads the communicator the running program filled. */
	CU_ASSERT_EQUAL(
		nccl_comm_read(fixture.pid, pointer, &layout, &values, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(values.comm_hash, 0x1122334455667788ULL);
	CU_ASSERT_EQUAL(values.rank, 5);
	CU_ASSERT_EQUAL(values.nranks, 16);
	CU_ASSERT_EQUAL(values.op_count, 99);
	CU_ASSERT_EQUAL(values.valid, NCCL_COMM_HAS_COMM_HASH | NCCL_COMM_HAS_RANK |
					      NCCL_COMM_HAS_NRANKS | NCCL_COMM_HAS_OP_COUNT);
	fixture_stop(&fixture);
}

UNIT_TEST(nccl_comm_layout, inside_namespaces)
{
	struct nccl_comm_layout layout;
	char path[128], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	if (!have_cxx) {
		CU_PASS("no C++ compiler: the namespaced fixture was not built");
		return;
	}
	fixture_path(path, sizeof(path), "namespaced");
	CU_ASSERT_EQUAL_FATAL(nccl_comm_layout_find(path, &layout, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(layout.comm_hash.offset, 24);
	CU_ASSERT_EQUAL(layout.rank.offset, 32);
	CU_ASSERT_EQUAL(layout.nranks.offset, 36);
	CU_ASSERT_EQUAL(layout.op_count.offset, 40);
	CU_ASSERT_EQUAL(layout.struct_size, 48);
}

UNIT_TEST(nccl_comm_layout, through_a_typedef)
{
	struct nccl_comm_layout layout;
	char path[128], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "typedefed");
	CU_ASSERT_EQUAL_FATAL(nccl_comm_layout_find(path, &layout, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(layout.comm_hash.offset, 0);
	CU_ASSERT_EQUAL(layout.rank.offset, 8);
	CU_ASSERT_EQUAL(layout.nranks.offset, 12);
	CU_ASSERT_EQUAL(layout.op_count.offset, 16);
	CU_ASSERT_EQUAL(layout.struct_size, 24);
}

UNIT_TEST(nccl_comm_layout, nested_definition_with_a_missing_member)
{
	struct nccl_comm_layout layout;
	char path[128], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "nested");
	CU_ASSERT_EQUAL(nccl_comm_layout_find(path, &layout, error, sizeof(error)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no member opCount"));
	CU_ASSERT_EQUAL(layout.comm_hash.offset, 16);
	CU_ASSERT_EQUAL(layout.rank.offset, 24);
	CU_ASSERT_EQUAL(layout.nranks.offset, 28);
	CU_ASSERT_EQUAL(layout.op_count.offset, -1);
	CU_ASSERT_EQUAL(layout.op_count.size, -1);
	/* Cached, and described the same way. */
	error[0] = '\0';
	CU_ASSERT_EQUAL(nccl_comm_layout_find(path, &layout, error, sizeof(error)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no member opCount"));
}

UNIT_TEST(nccl_comm_layout, not_found)
{
	struct nccl_comm_layout layout;
	char path[128], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "declared");
	CU_ASSERT_EQUAL(nccl_comm_layout_find(path, &layout, error, sizeof(error)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no definition of struct ncclComm"));
	CU_ASSERT_EQUAL(layout.rank.offset, -1);

	fixture_path(path, sizeof(path), "plain_no_dwarf");
	CU_ASSERT_EQUAL(nccl_comm_layout_find(path, &layout, error, sizeof(error)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no DWARF"));

	fixture_path(path, sizeof(path), "no-such-file");
	CU_ASSERT_EQUAL(nccl_comm_layout_find(path, &layout, error, sizeof(error)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no such file"));
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

UNIT_TEST(nccl_comm_layout, real_nccl)
{
	struct nccl_comm_layout layout;
	const struct nccl_comm_member *members[4] = { &layout.comm_hash, &layout.rank,
						      &layout.nranks, &layout.op_count };
	char error[512] = "";
	struct timespec start;
	double elapsed;

	if (access(REAL_NCCL, R_OK) != 0) {
		CU_PASS("no real NCCL at " REAL_NCCL ": skipped");
		return;
	}
	nccl_comm_layout_cache_clear();
	clock_gettime(CLOCK_MONOTONIC, &start);
	CU_ASSERT_EQUAL_FATAL(nccl_comm_layout_find(REAL_NCCL, &layout, error, sizeof(error)), 0);
	elapsed = seconds_since(&start);
	CU_ASSERT(elapsed < 2.0);
	CU_ASSERT_EQUAL(layout.comm_hash.size, 8);
	CU_ASSERT_EQUAL(layout.rank.size, 4);
	CU_ASSERT_EQUAL(layout.nranks.size, 4);
	CU_ASSERT_EQUAL(layout.op_count.size, 8);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT(members[i]->offset >= 0);
		CU_ASSERT(members[i]->offset + members[i]->size <= layout.struct_size);
		for (int j = i + 1; j < 4; j++)
			CU_ASSERT(members[i]->offset != members[j]->offset);
	}
	/* rank and nRanks sit side by side in every NCCL version. */
	CU_ASSERT_EQUAL(layout.nranks.offset, layout.rank.offset + 4);
	/* The magics open and close the struct. */
	CU_ASSERT_EQUAL(layout.start_magic.offset, 0);
	CU_ASSERT_EQUAL(layout.start_magic.size, 8);
	CU_ASSERT_EQUAL(layout.end_magic.offset, layout.struct_size - 8);
	CU_ASSERT_EQUAL(layout.end_magic.size, 8);

	clock_gettime(CLOCK_MONOTONIC, &start);
	CU_ASSERT_EQUAL(nccl_comm_layout_find(REAL_NCCL, &layout, error, sizeof(error)), 0);
	CU_ASSERT(seconds_since(&start) < 0.01);
}

/* A communicator of the test's own making, for reads without DWARF. */
struct test_comm {
	uint64_t startMagic;
	uint64_t commHash;
	int rank;
	int nRanks;
	char gap[20];
	uint64_t opCount;
	uint64_t endMagic;
};

static struct nccl_comm_layout test_comm_layout(void)
{
	return (struct nccl_comm_layout){
		.struct_size = sizeof(struct test_comm),
		.comm_hash = { offsetof(struct test_comm, commHash), 8 },
		.rank = { offsetof(struct test_comm, rank), 4 },
		.nranks = { offsetof(struct test_comm, nRanks), 4 },
		.op_count = { offsetof(struct test_comm, opCount), 8 },
		.start_magic = { offsetof(struct test_comm, startMagic), 8 },
		.end_magic = { offsetof(struct test_comm, endMagic), 8 },
	};
}

/*
 * Forks a child holding a test_comm at the very end of a mapped page, the
 * next page unmapped, and returns the communicator's address in the child.
 */
static pid_t start_page_end_child(uint64_t *comm_address)
{
	long page = sysconf(_SC_PAGESIZE);
	int report[2];
	pid_t pid;

	if (pipe(report) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char *pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct test_comm *comm;
		uint64_t address;

		if (pages == MAP_FAILED || munmap(pages + page, page) != 0)
			_exit(1);
		comm = (struct test_comm *)(pages + page - sizeof(*comm));
		comm->startMagic = comm->endMagic = NCCL_COMM_MAGIC;
		comm->commHash = 0xabcdef0123456789ULL;
		comm->rank = -7;
		comm->nRanks = 8;
		comm->opCount = 1234567;
		address = (uint64_t)(uintptr_t)comm;
		if (write(report[1], &address, sizeof(address)) != sizeof(address))
			_exit(1);
		pause();
		_exit(0);
	}
	close(report[1]);
	if (pid < 0 || read(report[0], comm_address, sizeof(*comm_address)) !=
			       (ssize_t)sizeof(*comm_address)) {
		close(report[0]);
		return -1;
	}
	close(report[0]);
	return pid;
}

UNIT_TEST(nccl_comm_layout, read_from_a_child)
{
	struct nccl_comm_layout layout = test_comm_layout();
	struct nccl_comm_values values;
	char error[512] = "";
	uint64_t address = 0;
	pid_t child = start_page_end_child(&address);

	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL(nccl_comm_read(child, address, &layout, &values, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(values.comm_hash, 0xabcdef0123456789ULL);
	CU_ASSERT_EQUAL(values.rank, -7);
	CU_ASSERT_EQUAL(values.nranks, 8);
	CU_ASSERT_EQUAL(values.op_count, 1234567);
	CU_ASSERT(values.valid & NCCL_COMM_HAS_MAGIC);
	CU_ASSERT(values.magic_matches);

	/*
	 * Read 8 bytes early, startMagic lands before the struct and endMagic on
	 * opCount: a word that is not a communicator's address does not match.
	 */
	CU_ASSERT_EQUAL(nccl_comm_read(child, address - 8, &layout, &values, error, sizeof(error)),
			0);
	CU_ASSERT(values.valid & NCCL_COMM_HAS_MAGIC);
	CU_ASSERT_FALSE(values.magic_matches);

	/* Shifted by 16 bytes, opCount falls on the unmapped page: a stale pointer. */
	CU_ASSERT_EQUAL(nccl_comm_read(child, address + 16, &layout, &values, error, sizeof(error)),
			-EFAULT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "stale"));
	CU_ASSERT_EQUAL(values.valid, 0);
	CU_ASSERT_EQUAL(values.rank, -1);

	CU_ASSERT_EQUAL(nccl_comm_read(child, 0x10, &layout, &values, error, sizeof(error)),
			-EFAULT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "not mapped"));
	CU_ASSERT_EQUAL(nccl_comm_read(child, 0, &layout, &values, error, sizeof(error)), -EFAULT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "NULL"));

	/* Members the layout lacks are left unread. */
	layout.op_count.offset = layout.op_count.size = -1;
	layout.start_magic.offset = layout.start_magic.size = -1;
	layout.end_magic.offset = layout.end_magic.size = -1;
	CU_ASSERT_EQUAL(nccl_comm_read(child, address, &layout, &values, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(values.valid,
			NCCL_COMM_HAS_COMM_HASH | NCCL_COMM_HAS_RANK | NCCL_COMM_HAS_NRANKS);
	CU_ASSERT_FALSE(values.magic_matches);
	CU_ASSERT_EQUAL(values.op_count, 0);

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* The process is gone now. */
	CU_ASSERT_EQUAL(nccl_comm_read(child, address, &layout, &values, error, sizeof(error)),
			-ESRCH);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no process with pid"));
}

// SPDX-License-Identifier: MIT
/* Pods and training processes found from outside: cgroup texts and log links as the kubelet writes
 * them. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/pod_identity.h"
#include "probe/process_finder.h"
#include "unit.h"

#define ID "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"

UNIT_TEST(pod_identity, container_ids_from_cgroup_paths)
{
	char id[65];

	/* containerd with the systemd cgroup driver, cgroup v2. */
	CU_ASSERT(pod_identity_container_id(
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_"
		"aaaa_bbbb_cccc_0123456789ab.slice/cri-containerd-" ID ".scope\n",
		id));
	CU_ASSERT_STRING_EQUAL(id, ID);
	/* cgroupfs driver, v1 lines: docker-<id> and a bare id. */
	CU_ASSERT(pod_identity_container_id("12:pids:/kubepods/besteffort/pod1234/" ID "\n", id));
	CU_ASSERT_STRING_EQUAL(id, ID);
	CU_ASSERT(pod_identity_container_id("0::/system.slice/docker-" ID ".scope\n", id));
	/* A process on the host, and a 65-digit run that is no id. */
	CU_ASSERT_FALSE(
		pod_identity_container_id("0::/user.slice/user-0.slice/session-1.scope\n", id));
	CU_ASSERT_FALSE(pod_identity_container_id("0::/x/" ID "0\n", id));
}

UNIT_TEST(pod_identity, names_from_kubelet_log_links)
{
	char directory[] = "/tmp/tcheck-pods.XXXXXX", path[512];
	struct pod_identity identity;
	const char *names[] = {
		"other-pod_default_main-" ID "0.log",
		"trainer-0_ml-team_pytorch-" ID ".log",
		"sidecar_ml-team_tcheck-bpf-"
		"0000000000000000000000000000000000000000000000000000000000000000.log",
	};

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(directory));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", directory, names[i]);
		close(open(path, O_CREAT | O_WRONLY, 0600));
	}
	memset(&identity, 0, sizeof(identity));
	CU_ASSERT_TRUE(pod_identity_from_logs(directory, ID, &identity));
	CU_ASSERT_STRING_EQUAL(identity.pod, "trainer-0");
	CU_ASSERT_STRING_EQUAL(identity.namespace, "ml-team");
	CU_ASSERT_STRING_EQUAL(identity.container, "pytorch");
	CU_ASSERT_FALSE(pod_identity_from_logs(
		directory, "1111111111111111111111111111111111111111111111111111111111111111",
		&identity));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", directory, names[i]);
		unlink(path);
	}
	rmdir(directory);
}

UNIT_TEST(process_finder, training_processes_by_their_libraries)
{
	static const char nccl[] =
		"7f0000000000-7f0000100000 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n"
		"7f0000200000-7f0000300000 r-xp 00000000 08:01 13 "
		"/opt/conda/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2\n";
	static const char torch_cuda[] = "7f0000200000-7f0000300000 r-xp 00000000 08:01 13 "
					 "/opt/torch/lib/libtorch_cuda.so\n";
	static const char torch_cpu[] = "7f0000200000-7f0000300000 r-xp 00000000 08:01 13 "
					"/usr/lib/torch/lib/libtorch_cpu.so\n";
	/* A directory named like the library is not the library. */
	static const char lookalike[] =
		"7f0000200000-7f0000300000 r-xp 00000000 08:01 13 /home/libnccl/bin/tool\n";

	CU_ASSERT_TRUE(process_finder_maps_match(nccl, false));
	CU_ASSERT_TRUE(process_finder_maps_match(torch_cuda, false));
	CU_ASSERT_FALSE(process_finder_maps_match(torch_cpu, false));
	CU_ASSERT_TRUE(process_finder_maps_match(torch_cpu, true));
	CU_ASSERT_FALSE(process_finder_maps_match(lookalike, true));
	CU_ASSERT_FALSE(process_finder_maps_match("", true));
}

// SPDX-License-Identifier: MIT
/*
 * A library that looks like NCCL to tcheck-bpf (it exports ncclAllReduce)
 * but whose function the kernel refuses to probe: on x86-64 it begins with
 * a byte that is no valid instruction there (0x06, push es in 32-bit code),
 * so every uprobe attachment to it fails. Nothing ever calls it; a process
 * only maps it, to provoke a probe attach failure deterministically.
 */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl ncclAllReduce\n"
	".type ncclAllReduce, @function\n"
	"ncclAllReduce:\n"
	".byte 0x06\n"
	"ret\n"
	".size ncclAllReduce, .-ncclAllReduce\n");
#else
int ncclAllReduce(void);
int ncclAllReduce(void)
{
	return 0;
}
#endif

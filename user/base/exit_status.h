/* SPDX-License-Identifier: MIT */
/*
 * The exit statuses of the verbs that judge or read traces (check, check
 * --rules, diff, infer, dump), one table for all, as the man page's EXIT
 * STATUS and each verb's --help give it.
 */
#ifndef TCHECK_EXIT_STATUS_H
#define TCHECK_EXIT_STATUS_H

enum exit_status {
	EXIT_CLEAN = 0,	    /* judged: nothing found (or the output written) */
	EXIT_FINDINGS = 1,  /* hangs, slowdowns, mismatches, crashes, violations, differences */
	EXIT_BAD_INPUT = 2, /* a wrong command line, or input that cannot be read or used */
	EXIT_NOTHING_TO_JUDGE = 3, /* read, but no call, no event, or too little to learn */
	EXIT_FAILED = 4,	   /* tcheck-bpf failed: an output not written, out of memory */
};

/* The table, as each verb's --help ends. */
#define EXIT_STATUS_HELP                                                                      \
	"Exit status: 0 judged, nothing found; 1 findings; 2 a wrong command line or input\n" \
	"that cannot be read; 3 nothing to judge (no calls, no events, too little to\n"       \
	"learn); 4 tcheck-bpf failed (an output could not be written).\n"

#endif /* TCHECK_EXIT_STATUS_H */

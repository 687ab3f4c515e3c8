#!/bin/bash
# record -- COMMAND passes the command's exit status through, and a failing
# rank (a numerically checked workload) is not hidden by the tracer.
source "$(dirname "$0")/lib.sh"
set +e
"$TCHECK" --quiet record -o "$SCRATCH/false.trace" -- sh -c 'exit 3'
status=$?
set -e
[ "$status" -eq 3 ] || fail "record returned $status for a command that exited 3"
"$TCHECK" dump "$SCRATCH/false.trace" >/dev/null || fail "a trace with no calls must still read"

# A command that cannot be started is said in one sentence with the status a
# shell gives for it (the shell's own status is the truth compared with), is
# no crash, and leaves no trace behind nor touches the file --force names.
expect_cannot_run() {
	local command=$1 reason=$2 shell_status status
	set +e
	sh -c "\"$command\"" 2>/dev/null
	shell_status=$?
	"$TCHECK" record -o "$SCRATCH/none.trace" -- "$command" 2>"$SCRATCH/none.err"
	status=$?
	set -e
	[ "$status" -eq "$shell_status" ] ||
		fail "record returned $status for '$command', a shell $shell_status"
	grep -qx "tcheck-bpf: error: cannot run $command: $reason" "$SCRATCH/none.err" ||
		fail "no 'cannot run $command: $reason' sentence: $(cat "$SCRATCH/none.err")"
	[ "$(wc -l <"$SCRATCH/none.err")" -eq 1 ] ||
		fail "more than the one sentence for '$command': $(cat "$SCRATCH/none.err")"
	[ ! -e "$SCRATCH/none.trace" ] || fail "a trace was left for '$command', which never ran"
}
expect_cannot_run /nonexistent/cmd "No such file or directory"
expect_cannot_run tcheck-no-such-command "No such file or directory"
printf 'not a program\n' >"$SCRATCH/not-executable"
chmod 644 "$SCRATCH/not-executable"
expect_cannot_run "$SCRATCH/not-executable" "Permission denied"

printf 'an earlier recording\n' >"$SCRATCH/keep.trace"
set +e
"$TCHECK" --quiet record --force -o "$SCRATCH/keep.trace" -- /nonexistent/cmd 2>/dev/null
status=$?
set -e
[ "$status" -eq 127 ] || fail "record --force returned $status for a missing command"
[ "$(cat "$SCRATCH/keep.trace")" = "an earlier recording" ] ||
	fail "record --force replaced a file although the command never ran"

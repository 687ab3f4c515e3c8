#!/bin/bash
# Runs every end-to-end test (tests/e2e/test_*.sh) and prints one closing
# line "N passed, N failed, N skipped". A test exits 0 to pass, 77 to skip.
# Each result line gives the test's wall-clock time and the CPU time its
# processes used.
#
# Tests run E2E_JOBS at a time (default 2): most of them wait far more than
# they compute (on a job's steps, a pause, a hang's limit). A test that must
# have the machine to itself says why in a line "# e2e-alone: REASON": it
# asserts timing that a busy machine would spoil (no slowdown in a healthy
# job, a finding within a fraction of a second), or it acts on processes it
# did not start. Those run first, one at a time; then the others side by
# side, the ones with the longest time limit first.
#
#   E2E_ONLY=NAME[,NAME]   only the tests whose name contains one of the NAMEs
#   E2E_TORCH_STACKS=LIST  the torch stacks a Python test runs on
#   E2E_JOBS=N             how many tests run at once
#
# A test that fails while the machine itself was paused and restored (a
# virtual machine's snapshot: the kernel logs "virtual machine fork" when it
# resumes from one) runs once more, and its closing line says so. A pause of
# seconds spoils any time limit, and the traced processes that ran across one
# have been seen to crash in code that no probe touches (a stack off by eight
# bytes in libtorch_python, 64 ms after the restore). Its first log is printed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
jobs=${E2E_JOBS:-2}
passed=0 failed=0 skipped=0 failures=()
if [ "$(id -u)" -ne 0 ]; then
	echo "end-to-end tests load BPF programs: run them as root (sudo make test)" >&2
	exit 1
fi
case $jobs in
'' | *[!0-9]* | 0) echo "E2E_JOBS must be a number of tests, 1 or more (not '$jobs')" >&2; exit 2 ;;
esac
results=$(mktemp -d /tmp/tcheck-e2e-results.XXXXXX)
trap 'rm -rf "$results"' EXIT
# What the tests of this run share (lib.sh: SHARED_REFERENCES).
export E2E_SHARED=$results/shared
mkdir -p "$E2E_SHARED"

# A test's time limit: 600 s, or what a line "# e2e-timeout: SECONDS" in it says (a suite
# that records dozens of programs on a slow stack).
time_limit() {
	local declared
	declared=$(sed -n 's/^# e2e-timeout: \([0-9][0-9]*\)$/\1/p' "$1" | head -n 1)
	echo "${declared:-600}"
}

# "1m2.345s" (as the times builtin writes it) in milliseconds.
milliseconds() {
	local minutes=${1%%m*} seconds=${1#*m}
	seconds=${seconds%s}
	echo $((minutes * 60000 + 10#${seconds%.*} * 1000 + 10#${seconds#*.}))
}

# The kernel's last line saying that this machine resumed from a snapshot of it, if any
# (the last one, not a count: the kernel's log drops its oldest lines as it fills).
vm_last_restore() {
	dmesg 2>/dev/null | grep 'virtual machine fork' | tail -n 1
}

# run_test NUMBER FILE STACK: one run, in a shell of its own. Writes its log, then a
# status file "EXIT WALL_MS CPU_MS RESTORED": CPU time is what the processes it waited for
# used; RESTORED, 1 when the machine resumed from a snapshot while it ran.
run_test() {
	local number=$1 test=$2 stack=$3 start status user system restore restored=0
	restore=$(vm_last_restore)
	start=$(date +%s%N)
	# Not the list of runs the loop below reads: a test gets no input.
	TCHECK_TORCH_STACK=$stack timeout "$(time_limit "$test")" bash "$test" </dev/null \
		>"$results/$number.log" 2>&1
	status=$?
	times >"$results/$number.times"
	read -r user system < <(sed -n 2p "$results/$number.times")
	[ "$(vm_last_restore)" = "$restore" ] || restored=1
	echo "$status $((($(date +%s%N) - start) / 1000000)) $(($(milliseconds "$user") + $(milliseconds "$system"))) $restored" \
		>"$results/$number.status"
}

declare -A test_files=() test_stacks=()
rerun_count=0

# report NUMBER NAME: the closing PASS, SKIP or FAIL line of a finished run. A failed run
# across which the machine was restored from a snapshot runs once more (as NUMBER.again).
report() {
	local number=$1 name=$2 status wall_ms cpu_ms restored took
	read -r status wall_ms cpu_ms restored <"$results/$number.status" ||
		status=1 wall_ms=0 cpu_ms=0 restored=0
	took="$((wall_ms / 1000)).$((wall_ms % 1000 / 100))s, cpu $((cpu_ms / 1000)).$((cpu_ms % 1000 / 100))s"
	if [ "$status" != 0 ] && [ "$status" != 77 ] && [ "${restored:-0}" = 1 ] &&
		[[ "$number" != *.again ]]; then
		rerun_count=$((rerun_count + 1))
		echo "RERUN $name (exit $status, $took): the machine was paused and restored from a" \
			"snapshot while it ran (\"virtual machine fork\" in the kernel log); its first log:"
		sed 's/^/    /' "$results/$number.log" | tail -n 40
		run_test "$number.again" "${test_files[$number]}" "${test_stacks[$number]}" &
		wait $!
		report "$number.again" "$name (run again)"
		return
	fi
	case $status in
	0) passed=$((passed + 1)); echo "PASS $name ($took)" ;;
	77) skipped=$((skipped + 1)); echo "SKIP $name: $(tail -n 1 "$results/$number.log")" ;;
	*) failed=$((failed + 1)); failures+=("$name"); echo "FAIL $name (exit $status, $took)"
	   sed 's/^/    /' "$results/$number.log" | tail -n 40 ;;
	esac
}

# Whether E2E_ONLY (none, or NAME,NAME...) takes a test: its name contains one of them.
wanted() {
	local want wants
	[ -z "${E2E_ONLY:-}" ] && return 0
	IFS=, read -ra wants <<<"$E2E_ONLY"
	for want in "${wants[@]}"; do
		[ -n "$want" ] && [[ "$1" == *"$want"* ]] && return 0
	done
	return 1
}

# The runs to make, as "TIME_LIMIT ALONE NAME FILE STACK" lines.
runs() {
	local test name limit alone stack
	for test in "$here"/test_*.sh; do
		name=$(basename "$test" .sh)
		wanted "$name" || continue
		limit=$(time_limit "$test")
		alone=0
		grep -q '^# e2e-alone: ' "$test" && alone=1
		# A test that calls torch_stack (lib.sh) runs once on each torch stack.
		if grep -q '^torch_stack$' "$test"; then
			for stack in ${E2E_TORCH_STACKS:-torch-1.13 torch-2.6 torch-2.14}; do
				echo "$limit $alone ${name}[$stack] $test $stack"
			done
		else
			echo "$limit $alone $name $test -"
		fi
	done
}

declare -A running=()
# Waits for one of the running tests to end and reports it.
collect_one() {
	local pid number name
	wait -n -p pid "${!running[@]}"
	read -r number name <<<"${running[$pid]}"
	report "$number" "$name"
	unset "running[$pid]"
}

began=$(date +%s)
number=0
# The lone tests first, then the rest, longest time limit first (sort -s keeps the
# alphabetical order among equals).
while read -r limit alone name test stack; do
	number=$((number + 1))
	[ "$stack" = - ] && stack=""
	test_files[$number]=$test test_stacks[$number]=$stack
	if [ "$alone" = 1 ]; then
		while [ ${#running[@]} -gt 0 ]; do collect_one; done
		# In a shell of its own too: times counts what that shell waited for.
		run_test "$number" "$test" "$stack" &
		wait $!
		report "$number" "$name"
		continue
	fi
	while [ ${#running[@]} -ge "$jobs" ]; do collect_one; done
	run_test "$number" "$test" "$stack" &
	running[$!]="$number $name"
done < <(runs | sort -s -k2,2nr -k1,1nr)
while [ ${#running[@]} -gt 0 ]; do collect_one; done

echo
took=$(($(date +%s) - began))
echo "e2e: $passed passed, $failed failed, $skipped skipped in $((took / 60)) min $((took % 60)) s, $jobs at a time$([ "$rerun_count" -gt 0 ] && echo ", $rerun_count run again after a snapshot restore")"
[ "$failed" -eq 0 ] || echo "failed: ${failures[*]}"
[ "$failed" -eq 0 ]

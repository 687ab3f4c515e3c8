#!/bin/bash
# Runs every end-to-end test (tests/e2e/test_*.sh) and prints one closing
# line "N passed, N failed, N skipped". A test exits 0 to pass, 77 to skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
passed=0 failed=0 skipped=0 failures=()
if [ "$(id -u)" -ne 0 ]; then
	echo "end-to-end tests load BPF programs: run them as root (sudo make test)" >&2
	exit 1
fi
# A test's time limit: 600 s, or what a line "# e2e-timeout: SECONDS" in it says (a suite
# that records dozens of programs on a slow stack).
time_limit() {
	local declared
	declared=$(sed -n 's/^# e2e-timeout: \([0-9][0-9]*\)$/\1/p' "$1" | head -n 1)
	echo "${declared:-600}"
}

# run_test NAME FILE [STACK]: one run, with its closing PASS, SKIP or FAIL line.
run_test() {
	local name=$1 test=$2 stack=${3:-} log start status elapsed_ms seconds
	log=$(mktemp)
	start=$(date +%s%N)
	TCHECK_TORCH_STACK=$stack timeout "$(time_limit "$test")" bash "$test" >"$log" 2>&1
	status=$?
	elapsed_ms=$((($(date +%s%N) - start) / 1000000))
	seconds="$((elapsed_ms / 1000)).$((elapsed_ms % 1000 / 100))"
	case $status in
	0) passed=$((passed + 1)); echo "PASS $name (${seconds}s)" ;;
	77) skipped=$((skipped + 1)); echo "SKIP $name: $(tail -n 1 "$log")" ;;
	*) failed=$((failed + 1)); failures+=("$name"); echo "FAIL $name (exit $status, ${seconds}s)"
	   sed 's/^/    /' "$log" | tail -n 40 ;;
	esac
	rm -f "$log"
}

for test in "$here"/test_*.sh; do
	name=$(basename "$test" .sh)
	[ -n "${E2E_ONLY:-}" ] && [[ "$name" != *"$E2E_ONLY"* ]] && continue
	# A test that calls torch_stack (lib.sh) runs once on each torch stack.
	if grep -q '^torch_stack$' "$test"; then
		for stack in ${E2E_TORCH_STACKS:-torch-1.13 torch-2.6 torch-2.14}; do
			run_test "$name[$stack]" "$test" "$stack"
		done
	else
		run_test "$name" "$test"
	fi
done
echo
echo "e2e: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

#!/bin/bash
# Quiet by default: recording a healthy CPU training job prints what concerns
# the job (what is traced, what was recorded) and not the recorder's own
# notes: torch maps libibverbs, but the job holds no verbs device, so the
# paragraph on untracked devices is said with -v only, as is the count of
# callers written as <unreadable>. With -v both are said, so nothing is lost.
source "$(dirname "$0")/lib.sh"
torch_stack
WORKLOADS="$ROOT/tests/workloads/python"
record() { # OUTPUT_PREFIX [GLOBAL OPTIONS]
	local prefix=$1
	shift
	"$TCHECK" "$@" record -o "$SCRATCH/$prefix.trace" --python -- $TORCH_PYTHON \
		"$WORKLOADS/train_cpu.py" --steps 4 --eval-every 2 --log "$SCRATCH/$prefix.jsonl" \
		>/dev/null 2>"$SCRATCH/$prefix.err" || fail "record $* failed: $(cat "$SCRATCH/$prefix.err")"
}
record quiet
grep -q "Python calls, torch scopes and operators recorded" "$SCRATCH/quiet.err" ||
	fail "the closing count of the job's Python calls is gone: $(cat "$SCRATCH/quiet.err")"
! grep -n "work requests:" "$SCRATCH/quiet.err" || fail "a note on verbs devices the job never opened is printed by default"
! grep -n "callers in the Python stacks" "$SCRATCH/quiet.err" || fail "the <unreadable> count is printed by default"
! grep -n "crash:" "$SCRATCH/quiet.err" || fail "a healthy job reads as a crash"
record verbose -v
# Debian's torch 1.13 and 2.6 both link libibverbs: its note is there with -v.
grep -q "work requests: process [0-9]* maps .*libibverbs.* and holds no verbs device yet" \
	"$SCRATCH/verbose.err" || fail "-v does not say which verbs devices are tracked: $(cat "$SCRATCH/verbose.err")"
echo "default: $(wc -l <"$SCRATCH/quiet.err") lines; -v: $(wc -l <"$SCRATCH/verbose.err") lines"

#!/bin/bash
# Records the NCCL test double's 8-rank job twice with the same options and
# once with each of several single changes, and checks that tcheck-bpf diff
# reports nothing for the first pair (other pids, addresses and times) and
# exactly the change for each other pair: its kind, rank, step and
# communicator, as the workload's options and its own log say.
source "$(dirname "$0")/lib.sh"

JOB=(--ranks 8 --tp 2 --pp 2 --steps 4)

record() {
	local name=$1
	shift
	"$TCHECK" --quiet record -o "$SCRATCH/$name.trace" -- \
		"$WORKLOAD" "${JOB[@]}" --log-dir "$SCRATCH/$name-log" "$@" >/dev/null 2>"$SCRATCH/$name.stderr" ||
		fail "record of $name exited $?"
}

# Runs diff --json on a pair; its differences go to $SCRATCH/NAME.jsonl.
diff_pair() {
	local name=$1 expected=$2 status=0
	"$TCHECK" diff "$SCRATCH/$3.trace" "$SCRATCH/$4.trace" --json >"$SCRATCH/$name.all" || status=$?
	[ "$status" = "$expected" ] || fail "diff of $name exited $status, expected $expected"
	grep '"kind":"difference"' "$SCRATCH/$name.all" >"$SCRATCH/$name.jsonl" || true
}

# Checks the pair's only differences: each line is a jq condition; every
# difference must meet one and each condition must be met by one difference.
expect_only() {
	local name=$1 condition
	shift
	local total
	total=$(wc -l <"$SCRATCH/$name.jsonl")
	[ "$total" = "$#" ] || { cat "$SCRATCH/$name.jsonl" >&2; fail "$name: $total differences, expected $#"; }
	for condition in "$@"; do
		[ "$(jq -c "select($condition)" "$SCRATCH/$name.jsonl" | wc -l)" = 1 ] ||
			{ cat "$SCRATCH/$name.jsonl" >&2; fail "$name: no difference where $condition"; }
	done
}

# The call the workload logged at a step of a rank, with a name and a value.
logged() {
	grep "\"step\":$3," "$SCRATCH/$1-log/rank-$2.jsonl" | grep -c "$4" || true
}

record reference
record same
record count --mismatch-count 3:2
record datatype --mismatch-datatype 2:1
record extra --extra-call 5:3
record moved --wrong-comm 2

# The same job twice: nothing.
diff_pair same 0 reference same
[ ! -s "$SCRATCH/same.jsonl" ] || fail "two runs of the same job differ: $(cat "$SCRATCH/same.jsonl")"
grep -q '^tcheck-bpf: 0 difference' <<<"$("$TCHECK" diff "$SCRATCH/reference.trace" "$SCRATCH/same.trace")" ||
	fail "the text report of the same job does not say 0 differences"

# At step 2 every rank issued its tensor-parallel all-reduce on the data-parallel
# communicator. Each communicator has one name on every rank: the ranks of one
# tensor-parallel group (rank = stage*4 + dp_index*2 + tp_index) name their
# reference alike, those of one data-parallel group their candidate alike,
# and different groups differently.
diff_pair moved 1 reference moved
[ "$(wc -l <"$SCRATCH/moved.jsonl")" = 8 ] || { cat "$SCRATCH/moved.jsonl" >&2; fail "moved: not one difference per rank"; }
moved_name() { jq -r "select(.job_rank == $1 and .what == \"communicator\" and .step == 2) | .$2" "$SCRATCH/moved.jsonl"; }
for group in "0 1" "2 3" "4 5" "6 7"; do
	set -- $group
	[ "$(moved_name "$1" reference)" = "$(moved_name "$2" reference)" ] ||
		fail "tensor-parallel group $group: two names, $(moved_name "$1" reference) and $(moved_name "$2" reference)"
done
for group in "0 2" "1 3" "4 6" "5 7"; do
	set -- $group
	[ "$(moved_name "$1" candidate)" = "$(moved_name "$2" candidate)" ] ||
		fail "data-parallel group $group: two names, $(moved_name "$1" candidate) and $(moved_name "$2" candidate)"
done
[ "$(for rank in 0 2 4 6; do moved_name $rank reference; done | sort -u | wc -l)" = 4 ] ||
	fail "the four tensor-parallel groups do not have four names"
[ "$(for rank in 0 1 4 5; do moved_name $rank candidate; done | sort -u | wc -l)" = 4 ] ||
	fail "the four data-parallel groups do not have four names"
dp_of_rank_3=$(moved_name 3 candidate)
dp_of_rank_2=$(moved_name 2 candidate)

# Rank 3 passed count 1001 to the data-parallel float32 all-reduce of step 2.
[ "$(logged count 3 2 '"count":1001')" = 1 ] || fail "the workload did not log count 1001 at rank 3 step 2"
diff_pair count 1 reference count
expect_only count ".what == \"count\" and .job_rank == 3 and .step == 2 and .reference == 1000 and .candidate == 1001 and .communicator == \"$dp_of_rank_3\""

# Rank 2 reduced its int32 bucket as uint32 at step 1.
diff_pair datatype 1 reference datatype
expect_only datatype ".what == \"datatype\" and .job_rank == 2 and .step == 1 and .reference == \"ncclInt32\" and .candidate == \"ncclUint32\" and .communicator == \"$dp_of_rank_2\""

# Rank 5 sent to itself at step 3 on the world communicator: an extra call,
# and, the other way round, a missing one.
[ "$(logged extra 5 3 '"name":"ncclSend"' )" -ge 1 ] || fail "the workload did not log rank 5's send"
diff_pair extra 1 reference extra
expect_only extra '.what == "extra_call" and .job_rank == 5 and .step == 3 and (.communicator | endswith("(8 ranks)")) and (.candidate | startswith("ncclSend count=4"))'
diff_pair missing 1 extra reference
expect_only missing '.what == "missing_call" and .job_rank == 5 and .step == 3 and (.communicator | endswith("(8 ranks)")) and (.reference | startswith("ncclSend count=4"))'

# Bad input: a missing trace, a damaged one, one side only.
status=0; "$TCHECK" diff "$SCRATCH/reference.trace" "$SCRATCH/absent.trace" 2>/dev/null || status=$?
[ "$status" = 2 ] || fail "diff with a missing trace exited $status, expected 2"
printf 'not a trace at all, not at all' >"$SCRATCH/garbage.trace"
status=0; "$TCHECK" diff "$SCRATCH/reference.trace" "$SCRATCH/garbage.trace" 2>/dev/null || status=$?
[ "$status" = 2 ] || fail "diff with a damaged trace exited $status, expected 2"
status=0; "$TCHECK" diff "$SCRATCH/reference.trace" 2>/dev/null || status=$?
[ "$status" = 2 ] || fail "diff with one trace exited $status, expected 2"
echo "diff: same job agrees; count, datatype, extra, missing and moved calls reported exactly, one name per communicator"

#!/bin/bash
# A 2-rank gloo DDP job already hung before tcheck-bpf arrives: rank 1 sleeps
# for ever in Python before its backward at step 5 (outside any collective),
# rank 0 waits in the step's all-reduce. `snapshot --json` and `attach` read
# the state within seconds and name rank 1 and c10d::allreduce, with every
# rank's Python stack, held against the workload's own log (the fault record:
# rank, step, the calls it never makes, its process group's sequence number)
# and its source (where the sleep is).
# The attach's trace holds that state: `check` of it names the same hang,
# and attach's live findings (--events) are the same as check's.
source "$(dirname "$0")/lib.sh"
torch_stack

dir="$SCRATCH/stop"
mkdir -p "$dir"
setsid $TORCH_PYTHON "$ROOT/tests/workloads/python/train_ddp.py" --steps 20 \
	--fault stop:1:5 --timeout 120 --log-dir "$dir/log" >"$dir/out" 2>&1 &
BACKGROUND_PIDS+=($!)
deadline=$((SECONDS + 90))
until grep -qs '"kind": "fault"' "$dir/log/rank-1.jsonl"; do
	[ $SECONDS -lt $deadline ] || fail "rank 1 never logged its fault: $(tail -3 "$dir/out")"
	sleep 0.2
done
# Rank 0 runs on into the step's all-reduce, and waits there.
wait_until_blocked "$(log_pid "$dir/log/rank-0.jsonl")"
ranks=$(pgrep -f -- "train_ddp.py --worker .*--log-dir $dir/log" | sort -n)
[ "$(echo "$ranks" | wc -l)" = 2 ] || fail "expected 2 rank processes, found: $ranks"
pid_options=$(for pid in $ranks; do printf -- '--pid %s ' "$pid"; done)

started=$(date +%s.%N)
status=0
"$TCHECK" snapshot $pid_options --json -o "$dir/snapshot.json" 2>"$dir/snapshot.err" || status=$?
elapsed=$(echo "$(date +%s.%N) - $started" | bc)
[ "$status" = 1 ] || fail "snapshot exited $status, not 1 (a rank lags): $(snapshot_summary "$dir/snapshot.json") $(cat "$dir/snapshot.err")"
echo "snapshot read and judged in $elapsed s"
(($(echo "$elapsed < 5" | bc))) || fail "the snapshot took $elapsed s"
"$TCHECK" attach $pid_options --python --duration 3 -o "$dir/hung.trace" \
	--events "$dir/live.jsonl" >"$dir/attach.out" 2>&1 ||
	fail "attach failed: $(tail -3 "$dir/attach.out")"
status=0
"$TCHECK" check "$dir/hung.trace" >"$dir/check.out" 2>&1 || status=$?
[ "$status" = 1 ] || fail "check of the hung job's trace exited $status, not 1: $(cat "$dir/check.out")"
"$TCHECK" check --json "$dir/hung.trace" >"$dir/check.jsonl" 2>"$dir/check-json.err" || true

python3 - "$dir" "$ROOT/tests/workloads/python/train_ddp.py" <<'PY' || fail "the snapshot does not match the workload's log"
import json, os, sys
directory, source = sys.argv[1], sys.argv[2]
records = [json.loads(l) for l in open(os.path.join(directory, "log", "rank-1.jsonl"))]
fault = next(r for r in records if r.get("kind") == "fault")
snapshot = json.load(open(os.path.join(directory, "snapshot.json")))
by_rank = {p["rank"]: p for p in snapshot["processes"]}
assert sorted(by_rank) == [0, 1], by_rank.keys()
assert len(snapshot["findings"]) == 1, snapshot["findings"]
finding = snapshot["findings"][0]
assert finding["rank"] == fault["fault_rank"] == 1, (finding, fault)
assert finding["pid"] == fault["pid"] == by_rank[1]["pid"], (finding, fault)
assert finding["collective"] == fault["next_call"], (finding, fault)
# The process group's sequence numbers, read from memory, are the ones the program's
# torch gives: rank 1 logged its last before it stopped; rank 0 waits in the next one.
last = fault["c10d_sequence"]
assert finding["seq"] == last + 1 and finding["last_seq"] == last, (finding, fault)
assert [g["backend"] for g in by_rank[1]["process_groups"]] == ["gloo"], by_rank[1]
assert by_rank[1]["process_groups"][0]["seq"] == last, (by_rank[1]["process_groups"], fault)
assert all(g["seq"] > last for g in by_rank[0]["process_groups"]) and \
    by_rank[0]["process_groups"], (by_rank[0]["process_groups"], fault)
said_sequence = "seq {} (its last: {})".format(last + 1, last)
# The first call rank 1 did not make: the one the workload says comes after its hook,
# which rank 0 made from the same function.
missed = finding["missed"]
assert missed and missed.startswith(fault["next_python_call"] + " (") and \
    missed.endswith(" as rank 0 did"), (finding, fault)

# Every field the man page and --help document is there, in one reading.
assert {"kind", "time_ns", "read_seconds", "judged", "summary", "findings",
        "processes"} <= set(snapshot), snapshot.keys()
assert {"rank", "pid", "collective", "seq", "last_seq", "comm_id", "waiting_ranks", "doing",
        "missed"} <= set(finding), finding.keys()
for process in snapshot["processes"]:
    assert {"pid", "rank", "command", "communicators", "process_groups",
            "threads"} <= set(process), process.keys()
    assert all({"tid", "name", "native"} <= set(t) for t in process["threads"]), process

def main_stack(rank):
    process = by_rank[rank]
    thread = next(t for t in process["threads"] if t["tid"] == process["pid"])
    assert thread.get("python"), (rank, thread, process.get("python_note"))
    return thread["python"]

# Rank 1 sleeps inside the fault hook: its innermost frame is the hook's, whose def
# line in the source precedes the sleep.
stuck = main_stack(1)
lines = open(source).read().splitlines()
outer = next(i for i, line in enumerate(lines) if line.startswith("def fault_before_backward("))
hook_line = next(i for i in range(outer, len(lines)) if "def hook(step):" in lines[i]) + 1
assert stuck[0]["function"].startswith("fault_before_backward.") and \
    stuck[0]["file"].endswith("train_ddp.py") and stuck[0]["first_line"] == hook_line, stuck[0]
assert stuck[-1]["function"] == "<module>", stuck[-1]
assert not any(t["native"] and t["native"].get("collective") for t in by_rank[1]["threads"])
# Rank 0 is in its backward pass, and one of its threads runs the all-reduce.
waiting = main_stack(0)
assert any(f["function"].endswith("backward") for f in waiting), waiting
assert any(t["native"] and t["native"].get("collective") == "c10d::allreduce"
           for t in by_rank[0]["threads"]), by_rank[0]["threads"]
attach = open(os.path.join(directory, "attach.out")).read()
said = "on arrival: snapshot of 2 process(es)"
assert said in attach and "rank 1 (pid {}) never joined c10d::allreduce {}".format(
    fault["pid"], said_sequence) in attach, attach[:3000]
assert "fault_before_backward" in attach, attach[:3000]
# The trace: check names the same rank and collective, with both ranks' stacks, and
# its findings are the live ones.
check = open(os.path.join(directory, "check.out")).read()
assert "hang on arrival: rank 1 (pid {}) never joined c10d::allreduce {}".format(
    fault["pid"], said_sequence) in check, check
assert "1 hang(s)" in check, check
offline = [json.loads(l) for l in open(os.path.join(directory, "check.jsonl")) if l.strip()]
live = [json.loads(l) for l in open(os.path.join(directory, "live.jsonl")) if l.strip()]
hangs = [f for f in offline if f["kind"] == "hang"]
assert len(hangs) == 1 and hangs[0]["on_arrival"] and hangs[0]["rank"] == 1, offline
assert hangs[0]["pid"] == fault["pid"] and hangs[0]["collective"] == fault["next_call"], hangs
assert hangs[0]["seq"] == last + 1 and hangs[0]["missed"] == missed, hangs
assert "the first call it did not make: " + missed in check, check
assert {r["rank"]: r["seq"] for r in hangs[0]["ranks"]}[1] == last, hangs
stacks = {r["rank"]: r["python_stack"] for r in hangs[0]["ranks"]}
assert stacks[1].startswith(stuck[0]["function"]) and "backward" in stacks[0], stacks
assert [f for f in live if f["kind"] == "hang"] == hangs, (live, hangs)
print("rank 1 named in c10d::allreduce", said_sequence, "; stacks:", stuck[0]["function"], "|", waiting[0]["function"])
PY
echo "PASS: snapshot of a gloo DDP job hung before the attach"

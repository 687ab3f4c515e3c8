#!/bin/bash
# --freeze-on-crash: a Python process whose uncaught exception is about to end
# it is stopped (SIGSTOP) before the traceback is printed, stays stopped and
# inspectable, and SIGCONT lets it print its traceback and exit as it would
# have. Its crash report then carries the exception's type, message and the
# function that raised it, as the script states them. A spawned worker whose
# exception torch.multiprocessing.spawn's wrapper catches (then sys.exit(1))
# is stopped too, inside the handler, and its launcher waits for it. Without
# the option the same script is never stopped.
source "$(dirname "$0")/lib.sh"
torch_stack

cat >"$SCRATCH/raiser.py" <<'PY'
import os, sys, time
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(2)  # the recorder attaches its Python probes meanwhile

def inner_function():
    raise ValueError("frozen before the traceback")

inner_function()
PY

state_of() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }

"$TCHECK" record --freeze-on-crash --events "$SCRATCH/events.jsonl" -o "$SCRATCH/trace" -- \
	$TORCH_PYTHON "$SCRATCH/raiser.py" "$SCRATCH/pid" 2>"$SCRATCH/record.err" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
wait_for_file "$SCRATCH/pid" 30
pid=$(cat "$SCRATCH/pid")
for _ in $(seq 100); do
	[ "$(state_of "$pid")" = T ] && break
	sleep 0.1
done
[ "$(state_of "$pid")" = T ] || fail "process $pid was not stopped: state $(state_of "$pid"): $(cat "$SCRATCH/record.err")"
sleep 1
[ "$(state_of "$pid")" = T ] || fail "process $pid did not stay stopped"
# Stopped before the traceback: the interpreter has not printed it, and is inspectable.
grep -q "Traceback (most recent call last)" "$SCRATCH/record.err" &&
	fail "the traceback was printed before the stop"
grep -q "process $pid is stopped before printing its uncaught ValueError" "$SCRATCH/record.err" ||
	fail "the recorder did not say which process it stopped: $(cat "$SCRATCH/record.err")"
[ -r "/proc/$pid/maps" ] && grep -q python "/proc/$pid/maps" || fail "the stopped process cannot be inspected"
kill -CONT "$pid"
status=0
wait "$recorder" || status=$?
[ $status -eq 1 ] || fail "record should exit with the script's status 1, not $status"
grep -q "Traceback (most recent call last)" "$SCRATCH/record.err" ||
	fail "after SIGCONT the script did not print its traceback: $(cat "$SCRATCH/record.err")"
python3 - "$SCRATCH/events.jsonl" "$pid" <<'PY' || fail "the crash report does not match the script"
import json, sys
crashes = [r for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "crash"]
mine = [r for r in crashes if r["pid"] == int(sys.argv[2])]
assert len(mine) == 1, crashes
exception = mine[0]["exception"]
assert mine[0]["reason"] == "exit" and mine[0]["exit_status"] == 1, mine[0]
assert exception["type"] == "ValueError", exception
assert exception["message"] == "frozen before the traceback", exception
assert exception["python_stack"][0].endswith("inner_function"), exception
print("frozen, continued, reported:", exception)
PY

# mp.spawn: the worker is stopped in its launcher's handler, the launcher waits for it.
SPAWN_LOG="$SCRATCH/spawn"
"$TCHECK" record --freeze-on-crash --events "$SCRATCH/spawn.jsonl" -o "$SCRATCH/spawn.trace" -- \
	$TORCH_PYTHON "$ROOT/tests/workloads/python/launcher_exceptions.py" --launcher spawn \
	--world-size 2 --steps 6 --fault-rank 1 --fault-step 3 --log-dir "$SPAWN_LOG" \
	>"$SCRATCH/spawn.out" 2>&1 &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
worker=""
for _ in $(seq 600); do
	worker=$(grep -h '"kind": "raise"' "$SPAWN_LOG/rank-1.jsonl" 2>/dev/null |
		python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["pid"])' 2>/dev/null) &&
		break
	sleep 0.1
done
[ -n "$worker" ] || fail "worker 1 did not log its exception: $(tail -5 "$SCRATCH/spawn.out")"
for _ in $(seq 100); do
	[ "$(state_of "$worker")" = T ] && break
	sleep 0.1
done
[ "$(state_of "$worker")" = T ] || fail "worker $worker was not stopped: $(tail -5 "$SCRATCH/spawn.out")"
sleep 1
[ "$(state_of "$worker")" = T ] || fail "worker $worker did not stay stopped"
grep -q "process $worker is stopped as it calls sys.exit with a failure after catching its ValueError" \
	"$SCRATCH/spawn.out" || fail "the recorder did not say which worker it stopped: $(cat "$SCRATCH/spawn.out")"
grep -q ProcessRaisedException "$SCRATCH/spawn.out" && fail "the launcher saw the worker end while it was stopped"
kill -CONT "$worker"
# The launcher's own uncaught ProcessRaisedException stops it in its turn: let it go as well.
for _ in $(seq 600); do
	process_running "$recorder" || break
	for pid in $(descendants_of "$recorder"); do
		[ "$(state_of "$pid")" = T ] && kill -CONT "$pid" 2>/dev/null
	done
	sleep 0.1
done
status=0
wait "$recorder" || status=$?
[ $status -eq 1 ] || fail "record of the spawn job exited $status: $(tail -5 "$SCRATCH/spawn.out")"
python3 - "$SCRATCH/spawn.jsonl" "$SPAWN_LOG/rank-1.jsonl" <<'PY' || fail "the worker's crash report"
import json, sys
raised = next(r for r in map(json.loads, open(sys.argv[2])) if r["kind"] == "raise")
crashes = [r for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "crash"]
mine = [r for r in crashes if r["pid"] == raised["pid"]]
assert len(mine) == 1 and mine[0]["exit_status"] == 1, crashes
exception = mine[0]["exception"]
assert exception["type"] == raised["type"] and exception["message"] == raised["message"], exception
assert exception["handled_at_exit"] is True, exception
print("spawned worker frozen in its handler, continued, reported:", exception["type"])
PY

# Without the option: never stopped, the same report.
rm -f "$SCRATCH/pid"
status=0
"$TCHECK" record --python --events "$SCRATCH/plain.jsonl" -o "$SCRATCH/plain.trace" -- \
	$TORCH_PYTHON "$SCRATCH/raiser.py" "$SCRATCH/pid" 2>"$SCRATCH/plain.err" || status=$?
[ $status -eq 1 ] || fail "record without --freeze-on-crash exited $status: $(tail -3 "$SCRATCH/plain.err")"
grep -q "is stopped before printing" "$SCRATCH/plain.err" && fail "stopped without --freeze-on-crash"
grep -q '"type":"ValueError"' "$SCRATCH/plain.jsonl" || fail "no exception in the plain run's report"
echo "PASS"

#!/bin/bash
# Python calls entered from C, on every CPython installed here (3.10-3.13,
# and Debian sid's 3.14 chrooted into the root torch-root.sh sid builds):
# the trace holds, per function, exactly the calls the workload logged
# itself making from C (on 3.10, which enters the evaluator for every
# call, all its calls), with exceptions marked, their primitive arguments
# and callers as the workload saw them; 3.9 is refused clearly.
# The first exec of an interpreter file is held (fanotify) until its frame
# evaluator is probed, so an interpreter in the executable itself (Debian's
# python3.11, 3.13 and 3.14, the chrooted ones included) shows no unseen
# window on its FIRST run, nor on the second. Where a window remains (an
# interpreter in a libpython, mapped after the exec), the recorder must say
# so (the process record's python_unseen window and a warning naming the
# pid), and only calls the workload logged inside that window may be
# missing. A process that ends before the recorder has caught up with its
# events loses the calls it could not name; that too must be said, naming
# the pid.
source "$(dirname "$0")/lib.sh"
WORKLOAD_PY="$ROOT/tests/workloads/python/pure_python.py"
checked=0
pythons=()
for python in /usr/bin/python3.11 /root/.pyenv/versions/3.1[0-3]*/bin/python3; do
	if [ -x "$python" ]; then pythons+=("$python"); fi
done
if [ -f "$TORCH2_ROOT/.tcheck-ready" ]; then
	pythons+=("$ROOT/tools/stacks/in-root.sh $TORCH2_ROOT --share $ROOT --share /tmp -- /usr/bin/python3.13")
fi
if [ -f "$TORCH214_ROOT/.tcheck-ready" ]; then
	pythons+=("$ROOT/tools/stacks/in-root.sh $TORCH214_ROOT --share $ROOT --share /tmp -- /usr/bin/python3.14")
fi
for python in "${pythons[@]}"; do
	log="$SCRATCH/$(echo "$python" | tr -c 'a-zA-Z0-9.\n' _ | tail -c 60).jsonl"
	rm -f "$SCRATCH/py.trace" # record refuses to replace a trace
	# shellcheck disable=SC2086 # a chrooted interpreter's command is words
	rm -f "$log" "$log.second"
	# shellcheck disable=SC2086 # a chrooted interpreter's command is words
	"$TCHECK" --quiet record -o "$SCRATCH/py.trace" --python-filter pure_python. -- \
		sh -c "$python $WORKLOAD_PY --iterations 20 --log $log &&
			$python $WORKLOAD_PY --iterations 3 --log $log.second" \
		>/dev/null 2>"$SCRATCH/py.err" || fail "record of $python failed: $(cat "$SCRATCH/py.err")"
	"$TCHECK" dump "$SCRATCH/py.trace" >"$SCRATCH/py.jsonl"
	# An interpreter in a libpython is mapped after the exec: only one in the
	# executable itself is followed by the kernel from the exec on.
	# shellcheck disable=SC2086 # a chrooted interpreter's command is words
	shared=$($python -c 'import sysconfig; print(sysconfig.get_config_var("Py_ENABLE_SHARED") or 0)')
	python3 - "$SCRATCH/py.jsonl" "$log" "$python" "$SCRATCH/py.err" "$log.second" "$shared" <<'PY' || fail "Python calls differ on $python"
import collections, json, re, sys
records = [json.loads(l) for l in open(sys.argv[1])]
said = open(sys.argv[4]).read()
def logged_calls(path):
    return [r for r in map(json.loads, open(path)) if r.get("kind") == "call"]
def may_start_by(path, end):
    # Sequence numbers of calls logged after the window's end whose entry may
    # still lie inside it: the workload stamps a call some microseconds after
    # its entry, so only the thread's previous record bounds the entry from
    # below. Such a call may be missing (unseen) or present (seen).
    if not end:
        return set()
    maybe, last = set(), {}
    for r in sorted((r for r in map(json.loads, open(path)) if "seq" in r and "ts_ns" in r),
                    key=lambda r: r["seq"]):
        tid = r.get("tid")
        if r.get("kind") == "call" and r["ts_ns"] > end and last.get(tid, 0) <= end:
            maybe.add(r["seq"])
        last[tid] = r["ts_ns"]
    return maybe
def unseen_until(pid):
    # The end of the window in which the trace says pid's Python went unseen, 0 none.
    windows = [r["python_unseen_to_ns"] or 0 for r in records if r["kind"] == "process" and r["pid"] == pid]
    return windows[-1] if windows else 0
# The second run: the interpreter file is known by then, so the kernel follows
# it from its exec: no window, and every call it logged from C is there.
second = logged_calls(sys.argv[5])
second_pid = second[0]["pid"]
second_window = unseen_until(second_pid)
assert sys.argv[6] != "0" or second_window == 0, (sys.argv[3], "second run unseen", second_window)
if second_window:
    assert f"process {second_pid} ran Python for" in said, (sys.argv[3], "second window not said", said)
second_maybe = may_start_by(sys.argv[5], second_window)
second_counted = [c for c in second if c["ts_ns"] > second_window and (
    c["entered_from"] == "c" or tuple(map(int, c["python"].split(".")[:2])) < (3, 11))]
second_want = collections.Counter(c["line"] for c in second_counted if c["seq"] not in second_maybe)
second_may = collections.Counter(c["line"] for c in second_counted if c["seq"] in second_maybe)
second_got = collections.Counter(r["line"] for r in records if r["kind"] == "py" and r["pid"] == second_pid
                                 and r["line"] in second_want + second_may and r["ts_ns"] > second_window)
def ended_loss_said(pid):
    # The recorder fell behind and the process ended first (or was never
    # followed): said with its pid, in one of the two sentences for it.
    return (f"process {pid} had ended before the recorder could" in said or
            re.search(rf"not being followed \(pid [^)]*\b{pid}\b", said) is not None)
assert not second_got - second_want - second_may, (sys.argv[3], "second run, extra", second_got - second_want)
assert not second_want - second_got or ended_loss_said(second_pid), \
    (sys.argv[3], "second run, missing and not said", second_want - second_got, said[-800:])
calls = logged_calls(sys.argv[2])
pid = calls[0]["pid"]
window_end = unseen_until(pid)
# Its first exec was held until the probes were on: followed from its start.
assert sys.argv[6] != "0" or window_end == 0, (sys.argv[3], "first run unseen", window_end)
if window_end:
    assert f"process {pid} ran Python for" in said, (sys.argv[3], "unseen window not said", said)
trace = [r for r in records if r.get("pid") == pid]
version = tuple(int(x) for x in calls[0]["python"].split(".")[:2])
# A function is known by its first line (3.10 has no co_qualname, so bare
# names like __init__ would collide); names are checked where 3.11+ has them.
seen_from_c = [c for c in calls if version < (3, 11) or c["entered_from"] == "c"]
# Calls the workload logged inside the window the recorder said it did not see.
in_window = [c for c in seen_from_c if c["ts_ns"] <= window_end]
seen_from_c = [c for c in seen_from_c if c["ts_ns"] > window_end]
assert seen_from_c, (sys.argv[3], "every call fell in the unseen window", window_end)
maybe = may_start_by(sys.argv[2], window_end)
want = collections.Counter((c["line"], c["raised"]) for c in seen_from_c if c["seq"] not in maybe)
may_be_seen = collections.Counter((c["line"], c["raised"]) for c in seen_from_c if c["seq"] in maybe)
traced = [t for t in trace if t["kind"] == "py" and t["name"] != "pure_python.<module>"
          and t["ts_ns"] > window_end]
got = collections.Counter((t["line"], t["raised"]) for t in traced)
logged_name = {c["line"]: c["qualname"] for c in calls}
for t in traced:
    if t["line"] in logged_name and version >= (3, 11):
        assert t["name"] == "pure_python." + logged_name[t["line"]], (t["name"], logged_name[t["line"]])
missing = want - got
if missing and ended_loss_said(pid):
    # Said: the recorder fell behind and the process ended first. What is
    # there must still be what the workload did (no call it did not log).
    assert not (got - want - may_be_seen), (sys.argv[3], "extra", got - want)
    print(f"{sys.argv[3]}: {sum(missing.values())} calls lost and said (process {pid} ended first)")
    sys.exit(0)
# Functions the workload logs as entered from C are counted exactly; others it
# does not log (class bodies, its own recorder) or enters from Python may appear.
from_c_names = {n for (n, _) in want}
extra = {k: v for k, v in (got - want - may_be_seen).items() if k[0] in from_c_names}
assert not missing and not extra, f"{sys.argv[3]}: missing {dict(missing)}, extra {extra}"
assert any(raised for (_, raised) in got), "no raised call recorded"
# Arguments and callers, call by call: the n-th traced call of a function is
# its n-th logged call (by entry time). Primitive arguments only; a str is cut
# to the 16 bytes of characters the probe copies, ints beyond 64 bits are left out.
def expected_value(value, kind):
    if kind == "str":
        width = 1 if max(map(ord, value), default=0) < 256 else 2 if max(map(ord, value)) < 65536 else 4
        kept = 16 // width
        return value if len(value) <= kept else value[:kept] + "..."
    return value
def expected_args(call):
    return {a["name"]: expected_value(a["value"], a["type"]) for a in call["args"]
            if a["type"] in ("NoneType", "bool", "float", "str")
            or (a["type"] == "int" and -2**63 <= a["value"] < 2**63)}
checked_args = checked_callers = 0
types_seen = set()
for key in want:
    logged = sorted((c for c in seen_from_c if (c["line"], c["raised"]) == key), key=lambda c: c["ts_ns"])
    seen = sorted((t for t in traced if (t["line"], t["raised"]) == key), key=lambda t: t["ts_ns"])
    # Calls that may have started in the window are the earliest: those
    # missing leave the last len(seen) logged ones to pair with.
    for call, event in zip(logged[len(logged) - len(seen):] if len(seen) <= len(logged) else logged, seen):
        assert event["args"] == expected_args(call), (sys.argv[3], call["qualname"], event["args"], call["args"])
        types_seen |= {a["type"] for a in call["args"] if a["name"] in event["args"]}
        checked_args += len(event["args"])
        callers = call["callers"][:8]
        assert len(event["py_stack"]) == len(callers), (sys.argv[3], call["qualname"], event["py_stack"], callers)
        for name, logged_name in zip(event["py_stack"], callers):
            assert name.endswith("." + logged_name), (sys.argv[3], call["qualname"], event["py_stack"], callers)
        checked_callers += len(callers)
assert types_seen >= {"NoneType", "bool", "int", "float", "str"}, types_seen
assert checked_args and checked_callers
print(f"{sys.argv[3]}: {checked_args} arguments and {checked_callers} callers match")
print(f"{sys.argv[3]} ({calls[0]['python']}): {sum(got.values())} calls match; "
      f"{len(in_window)} logged in the {'said' if window_end else 'no'} unseen window; "
      f"second run: {sum(second_got.values())} calls, followed from its exec")
PY
	checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || skip "no CPython 3.10-3.13 installed"
old=$(ls -d /root/.pyenv/versions/3.9*/bin/python3 2>/dev/null | head -n 1)
if [ -n "$old" ]; then
	"$TCHECK" --quiet record -o "$SCRATCH/old.trace" --python -- "$old" -c 'import time; time.sleep(0.3)' \
		2>"$SCRATCH/old.err" >/dev/null || true
	grep -q "is not supported" "$SCRATCH/old.err" || fail "Python 3.9 should be refused: $(cat "$SCRATCH/old.err")"
fi

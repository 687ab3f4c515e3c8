#!/bin/bash
# An 8-rank DDP job recorded with plain `record --python` and a ring buffer
# large enough that nothing is dropped in the kernel: each rank's trace holds
# the DDP forward calls its own log counts (Module._call_impl on the
# DistributedDataParallel module), or the recorder said, naming that rank's
# pid, why they are missing (it fell behind and the rank ended first, or the
# rank ran Python before it was followed). Never a rank without its calls
# and a closing line that says nothing was lost.
source "$(dirname "$0")/lib.sh"
torch_stack
mkdir -p "$SCRATCH/eight"
# shellcheck disable=SC2086 # a chrooted interpreter's command is words
"$TCHECK" record --python --ring-buffer-mb 256 -o "$SCRATCH/eight/trace" \
	-- $TORCH_PYTHON "$ROOT/tests/workloads/python/train_ddp.py" --world-size 8 --steps 4 \
	--log-dir "$SCRATCH/eight/log" >"$SCRATCH/eight/out" 2>&1 ||
	fail "the 8-rank recording failed: $(tail -5 "$SCRATCH/eight/out")"
"$TCHECK" dump "$SCRATCH/eight/trace" >"$SCRATCH/eight/trace.jsonl" || fail "dump"
python3 - "$SCRATCH/eight" <<'PY' || fail "a rank lost its Python calls unsaid"
import collections, glob, json, os, re, sys
folder = sys.argv[1]
said = open(os.path.join(folder, "out")).read()
forwards = collections.Counter()
windows = {}
for line in open(os.path.join(folder, "trace.jsonl")):
    record = json.loads(line)
    if record["kind"] == "process":
        windows[record["pid"]] = record["python_unseen_to_ns"] or 0
    elif (record["kind"] == "py" and record["name"].endswith("_call_impl")
          and record["args"].get("module") == "DistributedDataParallel"):
        forwards[record["pid"]] += 1
def loss_said(pid):
    return (f"process {pid} had ended before the recorder could" in said or
            re.search(rf"not being followed \(pid [^)]*\b{pid}\b", said) is not None)
report = []
for path in sorted(glob.glob(os.path.join(folder, "log", "rank-*.jsonl"))):
    logged = [json.loads(l) for l in open(path)]
    # Module._call_impl on torch 1.13, Module._wrapped_call_impl on torch 2.
    calls = [c for c in logged if c.get("api", "").endswith("_call_impl")]
    assert calls, (path, "the rank logged no forward")
    pid = calls[0]["pid"]
    # Calls logged inside a window the recorder said it did not see may be missing.
    want = len([c for c in calls if c["ts_ns"] > windows.get(pid, 0)])
    got = forwards[pid]
    assert got <= len(calls), (path, "more DDP forwards than logged", got, len(calls))
    assert got >= want or loss_said(pid), (path, pid, got, want, said[-1500:])
    report.append(f"rank pid {pid}: {got} of {len(calls)} forwards"
                  + ("" if got >= want else " (loss said)"))
assert len(report) == 8, report
print("; ".join(report))
PY

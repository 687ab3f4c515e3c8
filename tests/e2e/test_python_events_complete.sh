#!/bin/bash
# Every training process's Python events reach the trace, in every step, run
# after run: the silent-error suite's recordings (DDP ranks started by exec,
# one-process runs that rebuild their optimizer), checked per process against
# the workloads' own logs. A recording that lost events must say so: the
# recorder's closing line counts them, and the test shows what it said.
source "$(dirname "$0")/lib.sh"
torch_stack
PY="$ROOT/tests/workloads/python"
OPTIONS=(--torch-op add_ --torch-op mul_ --python-filter torch.optim.sgd.SGD.__init__)

record() { # name, command...
	local name=$1
	shift
	"$TCHECK" record -o "$SCRATCH/$name.trace" "${OPTIONS[@]}" -- "$@" \
		>"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err" ||
		fail "$name: recording failed: $(cat "$SCRATCH/$name.err")"
	"$TCHECK" dump "$SCRATCH/$name.trace" >"$SCRATCH/$name.jsonl" || fail "$name: dump"
}

for run in 1 2; do
	record "ddp$run" $TORCH_PYTHON "$PY/train_ddp.py" --world-size 2 --steps 6 --seed "$run" \
		--clip 1.0 --no-module-hooks --log-dir "$SCRATCH/ddp$run-log"
	record "cpu$run" $TORCH_PYTHON "$PY/silent_errors.py" --steps 6 --trigger 3 \
		--rebuild-at "$((run + 2))" --log "$SCRATCH/cpu$run.json"
done

python3 - "$SCRATCH" <<'PY' || fail "events missing (see above)"
import json, os, re, sys
scratch = sys.argv[1]
STEP, ZERO, INIT = ("Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad",
                    "torch.optim.sgd.SGD.__init__")


def events(name):
    """Per pid: name -> sorted steps of its events."""
    by_pid = {}
    for line in open(os.path.join(scratch, name + ".jsonl")):
        record = json.loads(line)
        if record["kind"] in ("py", "torch_scope", "torch_op"):
            by_pid.setdefault(record["pid"], {}).setdefault(record["name"], []).append(
                record["step"])
    return by_pid


def check(name, pid, steps, constructions, seen):
    """One training process: what its log says it did, against what the trace holds."""
    got = seen.get(pid, {})
    problems = []
    for scope in (STEP, ZERO):
        if sorted(got.get(scope, [])) != steps:
            problems.append("{} at steps {}, the log says {}".format(scope, sorted(got.get(scope, [])), steps))
    if len(got.get(INIT, [])) != constructions:
        problems.append("{} {} times, the log says {}".format(INIT, len(got.get(INIT, [])), constructions))
    operator_steps = set(got.get("aten::add_.Tensor", []))
    if not set(steps) <= operator_steps:
        problems.append("aten::add_.Tensor missing in steps {}".format(sorted(set(steps) - operator_steps)))
    said = open(os.path.join(scratch, name + ".err")).read()
    lost = re.search(r"Python process(?:es)?, (\d+) lost", said)
    if lost is None:
        problems.append("the recorder's closing line does not count the events lost")
    if problems:
        print("{} process {}: {}\n  the recorder said: {}".format(name, pid, "; ".join(problems),
                                                               said.strip()[-1500:]))
    return not problems


ok, processes = True, 0
for run in (1, 2):
    seen = events("ddp{}".format(run))
    log_dir = os.path.join(scratch, "ddp{}-log".format(run))
    for rank in json.load(open(os.path.join(log_dir, "launcher.json")))["ranks"]:
        calls = [json.loads(line) for line in open(os.path.join(log_dir, "rank-{}.jsonl".format(rank["rank"])))]
        steps = sorted(c["step"] for c in calls if c.get("kind") == "api" and c["call"] == "optimizer.step()")
        built = sum(1 for c in calls if c.get("kind") == "api" and c["call"].startswith("SGD("))
        assert steps and built, (rank, len(calls))
        ok &= check("ddp{}".format(run), rank["pid"], steps, built, seen)
        processes += 1
    seen = events("cpu{}".format(run))
    truth = json.load(open(os.path.join(scratch, "cpu{}.json".format(run))))
    steps = [s["step"] for s in truth["steps"]]
    built = 1 + sum(1 for s in truth["steps"] if s.get("rebuilt_optimizer"))
    assert built == 2, truth
    trainers = [pid for pid, names in seen.items() if STEP in names or INIT in names]
    if len(trainers) != 1:
        print("cpu{}: {} processes with optimizer events, expected 1".format(run, len(trainers)))
        ok = False
        continue
    ok &= check("cpu{}".format(run), trainers[0], steps, built, seen)
    processes += 1
assert ok
print("{} training processes: every step's scopes, operators and constructions recorded".format(processes))
PY
echo "every training process's Python events recorded in every step, four runs"

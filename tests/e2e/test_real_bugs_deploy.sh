#!/bin/bash
# The real-bug suite in deploy mode (tools/eval/real_bugs_eval.py --deploy), as a user deploys
# it: rules inferred from `record --python` recordings of the three healthy references, then
# each program recorded with `record --rules` and judged by what the recorder found live.
# Asserted against the programs' own logs: a zero_grad() never called (APISequence), an
# optimizer over part of the model (TrainableUpdated) and a backbone trained without the
# model.train() that runs its class's train() override (TrainOverrideRan: the recorder
# follows Module.__setattr__ and reads the class live) and a nested post_init() that runs
# _init_weights again (InitialisedOnce: only zero_ and the scopes probed, the frames read at
# zero_ on a parameter) flagged at their trigger step and not before, their fixed twins clean; and a healthy model split between two optimizers whose
# program looks at the first one's updates between the two steps gives no violation. That
# look runs Python code for the first time between the two steps: the probes send a first
# call before the daemon has named its code, and such a call must not decide in which step
# the operators run between the two steps fall (torch 1.13's second step opens with one):
# live, a step judged before the second optimizer's updates reads as updates lost.
source "$(dirname "$0")/lib.sh"
torch_stack
# The healthy program in a folder of its own, laid out as in the repository.
shapes="$ROOT/tests/workloads/python/healthy_shapes"
mkdir -p "$SCRATCH/healthy/shapes" "$SCRATCH/healthy/pipelines"
cp "$shapes/split_optimizers.py" "$shapes/shapes_common.py" "$SCRATCH/healthy/shapes/"
cp "$ROOT/tests/workloads/python/pipelines/pipeline_common.py" "$SCRATCH/healthy/pipelines/"
cp "$ROOT/tests/workloads/python/rendezvous_port.py" "$SCRATCH/healthy/"
status=0
python3 "$ROOT/tools/eval/real_bugs_eval.py" --tcheck "$TCHECK" --work "$SCRATCH/suite" --deploy \
	--python "$TORCH_PYTHON" --jobs "$EVAL_JOBS" $SHARED_REFERENCES \
	--only so_60335387_no_zero_grad.py,optimizer_on_part_of_model.py,mmpretrain_702_frozen_stages.py,transformers_17877_double_init.py \
	--healthy-dir "$SCRATCH/healthy/shapes" --results "$SCRATCH/results.json" \
	>"$SCRATCH/suite.txt" 2>&1 || status=$?
# 1: a bug missed or a healthy program flagged (said below); 2: an error.
[ "$status" -le 1 ] || fail "suite exited $status: $(tail -20 "$SCRATCH/suite.txt")"
python3 - "$SCRATCH/results.json" "$SCRATCH/suite" <<'PY' || fail "results: $(tail -20 "$SCRATCH/suite.txt")"
import glob, json, os, sys
results = json.load(open(sys.argv[1]))
bugs = {b["script"]: b for b in results["bugs"]}
expected = {"so_60335387_no_zero_grad.py": "APISequence",
            "optimizer_on_part_of_model.py": "TrainableUpdated",
            "mmpretrain_702_frozen_stages.py": "TrainOverrideRan",
            "transformers_17877_double_init.py": "InitialisedOnce"}
assert set(bugs) == set(expected), bugs.keys()
for script, relation in expected.items():
    bug = bugs[script]
    logs = glob.glob(os.path.join(sys.argv[2], "bug*-" + script[:-3] + "-buggy.log",
                                  "rank-*.jsonl"))
    records = [json.loads(line) for path in logs for line in open(path)]
    first = min(r["step"] for r in records if r.get("kind") == "step" and r["symptom"])
    assert first == bug["trigger_step"], (script, first, bug)
    assert bug["caught"] and bug["violations_before_trigger"] == 0, bug
    assert relation in bug["relations"], bug
    assert bug["violations_fixed"] == 0, bug
    assert not bug["other_live_findings"]["buggy"] and not bug["other_live_findings"]["fixed"], bug
healthy = results["healthy"]
assert [h["script"] for h in healthy] == ["split_optimizers.py"], healthy
split = healthy[0]
# Its own log: 10 steps, each changing the parameters; the trace: 10 steps, not 20.
assert split["logged_steps"] == 10 and split["optimizer_steps_seen"] == [10], split
assert split["violations"] == 0, split
assert not split["other_live_findings"], split
print("deploy mode: {} of {} caught at their trigger, the split optimizers clean".format(
    sum(b["caught"] for b in bugs.values()), len(bugs)))
PY

#!/bin/bash
# Healthy programs of common shapes against rules from healthy programs of other shapes
# (tools/eval/healthy_shapes_eval.py), as a user works: the cross suite's three reference
# programs recorded with plain `record --python`, rules inferred once, then the programs of
# tests/workloads/python/healthy_shapes/ recorded the same way and checked with
# `check --rules`; and rules from healthy 2- and 4-rank NCCL workload jobs checked on its
# healthy 8-rank job. Asserted: no violation on any of them, each judged (the trace shows as
# many optimizer steps per process as the program's own log), and the 8-rank job really moves
# collectives of a layout the references did not have (the NCCL jobs, which use no torch,
# on the first stack only).
# Each stack runs a third of the 102 programs (--part), and on every stack those whose torch
# code differs between releases: the three stacks together run every program once, 40 runs a
# stack, two recorded at a time (EVAL_JOBS). `make eval-real` runs all of them on each stack.
# e2e-timeout: 1200
source "$(dirname "$0")/lib.sh"
torch_stack
# The NCCL jobs use no torch: the first part alone runs them.
nccl_option=--no-nccl
case "$TORCH_STACK" in
torch-1.13) part=1/3 nccl_option="" ;;
torch-2.6) part=2/3 ;;
*) part=3/3 ;;
esac
status=0
python3 "$ROOT/tools/eval/healthy_shapes_eval.py" --tcheck "$TCHECK" --work "$SCRATCH/shapes" \
	--python "$TORCH_PYTHON" --jobs "$EVAL_JOBS" $SHARED_REFERENCES --results "$SCRATCH/results.json" \
	--part "$part" $nccl_option >"$SCRATCH/out.txt" 2>&1 ||
	status=$?
[ "$status" -le 1 ] || fail "driver exited $status: $(tail -20 "$SCRATCH/out.txt")"
python3 - "$SCRATCH/results.json" "$ROOT/tools/eval" "$part" <<'PY' || fail "results: $(tail -20 "$SCRATCH/out.txt")"
import json, sys
sys.path.insert(0, sys.argv[2])
import healthy_shapes_eval
results = json.load(open(sys.argv[1]))
shapes, nccl = results["shapes"], results["nccl"]
# Every program of the part ran: a third of the 96 and those of every part.
expected = healthy_shapes_eval.shapes_of_part(sys.argv[3])
assert len(healthy_shapes_eval.SHAPES) >= 96 and len(expected) >= 38, len(expected)
assert [(s["script"], s["options"]) for s in shapes] == \
    [(script, options) for _, (script, options, _) in expected], shapes
# Every program trained (its log) and the tool saw every optimizer step of every rank.
for shape in shapes:
    assert shape["judged"], shape
    assert all(steps == 10 for steps in shape["logged_steps"].values()), shape
assert {shape["ranks"] for shape in shapes} >= {1, 2, 4}, shapes
# No false alarm on any of them: zero_grad after the step or set_to_none, accumulation, a
# warm-up by hand, a reloaded optimizer, foreach and fused AdamW, the ZeRO-1 program (its
# ranks update other shards and set their gradients to None by hand), DDP at every size, a
# head trained on a body frozen from the start, clipping with OneCycleLR, tied embeddings,
# steps skipped by loss scaling, DDP accumulation in no_sync(), torch's ZeroRedundancyOptimizer
# (its step runs the local optimizer's: one step, not two), an EMA copy and a distillation
# teacher kept in eval() beside the model that trains, the model's own zero_grad(), PyTorch's
# MNIST example (evaluation and scheduler once an epoch), batch norms frozen by model.apply(),
# a model's parameters split between two optimizers (two classes, or two Adam, or with an EMA
# of each optimizer's parameters moved between the two steps: forty operators), zero_grad()
# between forward and backward, activation checkpointing (backward passes inside the backward),
# gradual unfreezing, two backward calls a step, ReduceLROnPlateau, optimizer.step(closure)
# (once, or up to 4 times a step by LBFGS),
# three GANs whose optimizers take turns (the discriminator's first with the models' own
# zero_grad(), or the generator's first with the optimizers', or WGAN-GP's critic with its
# gradient penalty), the original WGAN's five critic steps for each generator step, SAC's
# critic, policy and temperature (a step that reads no layer), DDPG's actor and critic with target copies read under no_grad, an
# averaged model (SWA) evaluated under no_grad, PPO's epochs over a rollout taken under
# no_grad, a distillation teacher run under no_grad but never put in eval(), a model
# wrapped by torch.compile, LoRA adapters on frozen linears, multi-task training by turns and
# top-1 experts (parameters left out of a step's forward, and so unchanged), a warm-up from a
# learning rate of 0 (a first step that changes nothing), stochastic depth, a discriminator
# frozen by requires_grad for the generator's step, a spectral-normalised discriminator (its
# weights computed from weight_orig at each forward) and weight-normalised convolutions, a
# sparse embedding under SparseAdam, two views a step under RAdam, a step decay of the
# learning rate written by hand (PyTorch's ImageNet example), a matrix factorisation of raw
# tensors (no module call at all), pipeline stages and tensor-parallel shards of equal shapes
# on other ranks (not replicas), local SGD's replicas trained alone between averagings,
# adversarial training and SAM (a backward before zero_grad, two zero_grad a step),
# PCGrad's gradients set by hand, a body handed to the optimizer by add_param_group, data
# parallelism written by hand, bfloat16 autocast training beside a float32 evaluation under
# no_grad, fine-tuning in eval() from the first step, a new head and a new optimizer for a
# second phase, MAML's inner loop of functional updates, MoCo's key encoder moved by momentum,
# Rprop, Adagrad and ASGD, a bfloat16 model trained through float32 master weights, DDP whose
# rank 0 alone evaluates, a DataLoader's worker processes, and activation checkpointing: a
# teacher whose checkpointed blocks run under no_grad (their regions never run again, rightly),
# a frozen checkpointed backbone under a trained head, and LoRA adapters in blocks checkpointed
# without reentrance (torch 2 stops each recomputation by raising through its module calls), and
# a backbone held at a learning rate of 0 while a new head warms up, and torch's GradScaler under
# CPU autocast skipping an overflowing iteration (torch 2.3 and later), and an orthogonal
# recurrent weight computed by torch.nn.utils.parametrize from its original at each access.
# Two optimizers stepped one after the other are one training step: 10 steps, not 20; a GAN's
# or DDPG's two, with a backward between them, take turns: 20 steps of 10 iterations.
# Those of them in this part:
split = [s for s in shapes if s["script"] in ("split_optimizers.py", "ema_per_optimizer.py")]
assert all(s["optimizer_steps_seen"] == [10] for s in split), split
turns = [s for s in shapes if s["script"] in ("gan_two_optimizers.py", "gan_generator_first.py",
                                              "wgan_gp.py", "ddpg_actor_critic.py")]
assert all(s["optimizer_steps_seen"] == [20] for s in turns), turns
# The original WGAN and SAC log each optimizer step: 10, the critic's several in a row, or the
# critic's, the policy's and the temperature's in turn.
each = [s for s in shapes if s["script"] in ("wgan_critic_steps.py", "sac_temperature.py")]
assert all(s["optimizer_steps_seen"] == [10] for s in each), each
flagged = [(s["script"], s["options"], s["violations"], s["rules"], s["recording_losses"])
           for s in shapes if s["violations"]]
assert not flagged, flagged
# The 8-rank job gathers with another layout than the references' jobs (its data-parallel
# group), and the rules from 2 and 4 ranks say nothing against it.
assert (nccl is None) == (sys.argv[3] != "1/3"), nccl
if nccl is not None:
    assert len(nccl["all_gathers_on_8_ranks"]) >= 2, nccl
    assert nccl["rules"] > 0 and nccl["violations"] == 0, nccl
print("{} healthy programs judged (part {}), none flagged".format(len(shapes), sys.argv[3]) +
      ("; rules from 2 and 4 ranks ({}) give nothing on 8 ranks".format(nccl["rules"]) if nccl else ""))
PY
# torch.compile (torch 2) ran the model's code on fake tensors while it compiled: the trace
# holds those linear reads as reads of no data (data:weight false, no tensor identity), which
# ParametersUpdated had taken for weights the step left unchanged.
if [ "$TORCH_STACK" != torch-1.13 ]; then
	compiled=$(ls "$SCRATCH"/shapes/shape*-compiled_model.trace) || fail "no compiled_model trace"
	"$TCHECK" dump "$compiled" >"$SCRATCH/compiled.jsonl" || fail "dump of $compiled"
	python3 - "$SCRATCH/compiled.jsonl" <<'PY' || fail "the compiled model's fake reads"
import json, sys
reads = [json.loads(line) for line in open(sys.argv[1])]
reads = [r for r in reads if r.get("kind") == "torch_op" and r["name"] == "aten::linear"]
fake = [r for r in reads if r["args"].get("data:weight") is False]
assert fake and all("tensor:weight" not in r["args"] for r in fake), reads[:4]
print("{} reads of fake weights while torch.compile traced the model".format(len(fake)))
PY
fi

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""False alarms on healthy programs of common shapes, and rules carried to another world size.

Used as a user would: the three reference programs of the cross-pipeline
suite (tests/workloads/python/pipelines/, see silent_cross_eval.py) are
recorded with `tcheck-bpf record --python` and nothing else, `tcheck-bpf
infer` runs once on them, and every healthy program of
tests/workloads/python/healthy_shapes/ is recorded the same way and checked
with `tcheck-bpf check --rules`. Each program's own log (DIR/rank-R.jsonl)
says how many optimizer steps every rank took; a program counts as judged
only when the trace shows at least that many optimizer steps per process
(otherwise "0 violations" would say nothing). Then rules inferred from
healthy 2-rank and 4-rank jobs of the NCCL workload (two programs) are
checked on its healthy 8-rank job.

Writes the results as JSON (--results) and a table on stdout.
Exit status: 0 no violation anywhere and every program judged, 1 otherwise,
2 on errors. Needs root (BPF).
"""
import argparse
import glob
import json
import os
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import silent_cross_eval as cross  # noqa: E402

SHAPES_DIR = os.path.join(cross.ROOT, "tests", "workloads", "python", "healthy_shapes")
NCCL_WORKLOAD = os.path.join(cross.ROOT, ".output", "tests", "nccl-workload")
STEPS = 10

# script, its options, the shape
SHAPES = [
    ("zero_grad_after_step.py", [], "MLP, SGD momentum, zero_grad() after the step"),
    ("set_to_none_after_step.py", [], "CNN, Adam, zero_grad(set_to_none=True) after the step"),
    ("accumulation.py", [], "MLP, SGD, 4 micro-batches accumulated per step"),
    ("warmup_by_hand.py", [], "MLP, SGD momentum, learning rate set by hand in steps 0-3"),
    ("optimizer_reload.py", [], "MLP, Adam, model and optimizer re-created from a checkpoint "
     "at step 5"),
    ("adamw_foreach_eval.py", [], "MLP with dropout, AdamW foreach, evaluation in every step"),
    ("adamw_foreach_eval.py", ["--fused"], "the same with AdamW fused (foreach on torch < 2.4)"),
    ("zero1_sharded.py", ["--world-size", "2"], "ZeRO-1-style Adam sharded by hand, 2 ranks"),
    ("zero1_sharded.py", ["--world-size", "4"], "the same, 4 ranks"),
    ("ddp_world.py", ["--world-size", "1"], "DDP MLP, SGD momentum, 1 rank"),
    ("ddp_world.py", ["--world-size", "2"], "the same DDP program, 2 ranks"),
    ("ddp_world.py", ["--world-size", "4"], "the same DDP program, 4 ranks"),
    ("head_finetune.py", [], "CNN body frozen from the start in eval(), SGD on the head, "
     "model.zero_grad(), StepLR"),
    ("clip_onecycle.py", [], "AdamW with a no-decay group, clip_grad_norm_, OneCycleLR"),
    ("tied_embeddings.py", [], "GRU language model, output tied to the embedding, evaluation "
     "every 4 steps"),
    ("loss_scale_skip.py", [], "dynamic loss scaling by hand: overflowing iterations skip "
     "their step"),
    ("ddp_no_sync_accumulation.py", ["--world-size", "2"], "DDP, 3 micro-batches, two of them "
     "in no_sync(), 2 ranks"),
    ("zero_redundancy.py", ["--world-size", "2"], "DDP with torch's ZeroRedundancyOptimizer "
     "(Adam state sharded), 2 ranks"),
    ("zero_redundancy.py", ["--world-size", "8"], "the same at 8 ranks, more than its 6 "
     "parameters: two ranks' shares are empty"),
    ("local_sgd.py", ["--world-size", "4"], "local SGD: each rank trains alone, the parameters "
     "averaged with all_reduce after every fourth step"),
    ("ema_shadow.py", [], "Adam and an EMA copy kept in eval(), the model never given train()"),
    ("module_zero_grad.py", [], "SGD momentum, the model's own zero_grad(), clip_grad_norm_"),
    ("mnist_epochs.py", [], "PyTorch's MNIST example: Adadelta, evaluation and StepLR once an "
     "epoch"),
    ("distill_teacher.py", [], "distillation: student put in train(), then the teacher in "
     "eval()"),
    ("frozen_batchnorm.py", [], "fine-tuning with the batch norms put back in eval() by "
     "model.apply()"),
    ("split_optimizers.py", [], "one model's parameters split between SGD (matrices) and AdamW "
     "(the rest), both stepped each iteration, the first one's updates looked at between"),
    ("split_optimizers.py", ["--same-class"], "the same split between two Adam optimizers"),
    ("ema_per_optimizer.py", [], "a 20-block model split between SGD and AdamW, each "
     "optimizer's step followed at once by an EMA of its parameters"),
    ("zero_grad_before_backward.py", [], "PyTorch's \"Learning PyTorch with Examples\" loop: "
     "forward, zero_grad(), backward, step (RMSprop)"),
    ("checkpointed.py", [], "activation checkpointing: blocks run through "
     "torch.utils.checkpoint, Adam"),
    ("gradual_unfreeze.py", [], "gradual unfreezing: the body gets requires_grad at step 3, "
     "AdamW over all from the start"),
    ("two_losses_retain.py", [], "two losses, two backward calls (retain_graph), "
     "clip_grad_value_, SGD Nesterov"),
    ("plateau.py", [], "ReduceLROnPlateau on a validation in eval() every 3 steps"),
    ("closure_step.py", [], "optimizer.step(closure) as Lightning runs it: zero_grad, forward "
     "and backward inside the step"),
    ("gan_two_optimizers.py", [], "DCGAN: the discriminator's step, then the generator's, "
     "each model's own zero_grad()"),
    ("gan_generator_first.py", [], "GAN stepping the generator first, then the discriminator, "
     "each optimizer's zero_grad()"),
    ("lbfgs_closure.py", [], "LBFGS stepped with a closure it evaluates up to 4 times a step "
     "(zero_grad, forward, backward)"),
    ("ddpg_actor_critic.py", [], "DDPG: critic and actor, each with its Adam, target copies "
     "read under no_grad and moved by Polyak averaging"),
    ("swa_average.py", [], "stochastic weight averaging: AveragedModel updated from step 4, "
     "evaluated under no_grad, SWALR"),
    ("wgan_gp.py", [], "WGAN-GP: the critic's gradient penalty through autograd.grad "
     "(create_graph), then the generator"),
    ("wgan_critic_steps.py", [], "the original WGAN: five critic steps (weights clipped) for "
     "each generator step, RMSprop"),
    ("sac_temperature.py", [], "SAC: critic, policy and a temperature tensor, each with its "
     "Adam, stepped in turn"),
    ("matrix_factorization.py", [], "matrix factorisation of raw nn.Parameter tensors, no "
     "nn.Module, Adam"),
    ("ppo_epochs.py", [], "PPO: a rollout under no_grad, then 2 epochs of 2 minibatches, "
     "clip_grad_norm_"),
    ("distill_no_grad.py", [], "distillation with the teacher under no_grad only, never put "
     "in eval()"),
    ("compiled_model.py", [], "a model wrapped by torch.compile (aot_eager; eager on torch "
     "1.13), AdamW"),
    ("lora_adapters.py", [], "LoRA: frozen base linears, low-rank adapters (B zero at the "
     "start) and a head trained by AdamW"),
    ("alternating_tasks.py", [], "multi-task by turns: a shared trunk, one of two heads a "
     "step, one Adam over all"),
    ("top1_experts.py", [], "mixture of experts, top-1 routing: experts no token chose get "
     "no gradient"),
    ("linear_warmup_from_zero.py", [], "AdamW, linear warm-up from a learning rate of 0 "
     "(LambdaLR), clip_grad_norm_"),
    ("stochastic_depth.py", [], "stochastic depth: whole residual blocks skipped at random, "
     "evaluation every 3 steps"),
    ("requires_grad_toggle_gan.py", [], "GAN whose discriminator's requires_grad is turned "
     "off for the generator's step (CycleGAN)"),
    ("spectral_norm_gan.py", [], "SN-GAN: a spectral-normalised discriminator, hinge loss, "
     "its step first"),
    ("sparse_embedding.py", [], "sparse embedding under SparseAdam beside Adam, evaluation "
     "under inference_mode()"),
    ("radam_two_views.py", [], "contrastive learning of two views (NT-Xent), RAdam"),
    ("weight_norm_convs.py", [], "1-D convolutions under weight_norm (vocoders), AdamW, "
     "ExponentialLR"),
    ("step_decay_by_hand.py", [], "PyTorch's ImageNet example's adjust_learning_rate: the "
     "learning rate set by hand each epoch, dropping tenfold"),
    ("pipeline_two_stages.py", ["--world-size", "4"], "pipeline parallel by hand: 4 stages of "
     "the same shapes, activations and gradients sent between ranks"),
    ("tensor_parallel_columns.py", ["--world-size", "2"], "a column-parallel linear by hand: "
     "shards of one shape on 2 ranks, a replicated head"),
    ("adversarial_fgsm.py", [], "adversarial training: a backward for the input's gradient, "
     "zero_grad(), then the training backward"),
    ("sam_two_passes.py", [], "SAM: two backward passes and two zero_grad() a step, a climb "
     "by hand between"),
    ("pcgrad_multitask.py", [], "PCGrad: task gradients by autograd.grad, projected and set "
     "by hand, no backward call"),
    ("add_param_group_unfreeze.py", [], "a frozen body unfrozen at step 4 and handed to SGD by "
     "add_param_group"),
    ("average_gradients_by_hand.py", ["--world-size", "2"], "data parallelism by hand "
     "(PyTorch's tutorial): parameters broadcast, gradients all-reduced one by one, 2 ranks"),
    ("autocast_bf16_eval.py", [], "training under CPU bfloat16 autocast, a float32 evaluation "
     "under no_grad every 3 steps"),
    ("finetune_in_eval_mode.py", [], "fine-tuning with the whole model kept in eval() (dropout "
     "off, batch norm frozen) from the start"),
    ("new_head_second_phase.py", [], "two-phase transfer: a new head and a new Adam replace "
     "the head and SGD at step 5"),
    ("maml_inner_loop.py", [], "MAML: inner-loop updates of fast weights by autograd.grad "
     "(create_graph), one meta step of Adam"),
    ("moco_momentum_encoder.py", [], "MoCo: a key encoder in training mode under no_grad, "
     "moved by momentum from the query encoder"),
    ("other_optimizers.py", ["--optimizer", "Rprop"], "Rprop: signs and step sizes, no "
     "momentum buffer"),
    ("other_optimizers.py", ["--optimizer", "Adagrad"], "Adagrad: no mul_ in its step"),
    ("other_optimizers.py", ["--optimizer", "ASGD"], "ASGD: averaging from step 3"),
    ("master_weights_by_hand.py", [], "mixed precision by hand: a bfloat16 model, SGD over "
     "float32 masters copied back after each step"),
    ("ddp_rank0_evaluates.py", ["--world-size", "2"], "DDP with batch norm, rank 0 alone "
     "evaluating and saving every third step, a barrier"),
    ("dataloader_workers.py", [], "a DataLoader with two worker processes, shuffled and "
     "augmented"),
    ("inference_mode_eval.py", ["--autocast"], "bfloat16 autocast training, a float32 "
     "evaluation under torch.inference_mode() every third step"),
    ("partial_last_batch.py", [], "packed LSTM over sequences of varied length, the last "
     "batch of each epoch smaller"),
    ("transformer_padding_eval.py", [], "Transformer encoder with padding masks, LambdaLR "
     "warm-up, evaluation in the loop"),
    ("restore_best_weights.py", [], "the best weights restored with load_state_dict() and the "
     "learning rate halved when validation worsens"),
    ("grad_enabled_phases.py", [], "the transfer-learning tutorial: train and val phases "
     "through one loop under set_grad_enabled(), zero_grad() in both"),
    ("ddp_metrics_all_reduce.py", ["--world-size", "2"], "DDP, every rank evaluating its "
     "shard under inference_mode(), metrics and loss all-reduced, 2 ranks"),
    ("teacher_forcing_seq2seq.py", [], "GRU encoder-decoder, two Adam optimizers, teacher "
     "forcing drawn per batch"),
    ("prompt_tuning.py", [], "prompt tuning: the model frozen whole, a soft prompt joined "
     "with torch.cat trained alone"),
    ("sgdr_warm_restarts.py", [], "SGDR: CosineAnnealingWarmRestarts, the rate back at its "
     "top every 3 steps, SGD Nesterov with weight decay, batch norm"),
    ("batch_size_ramp.py", [], "a batch ramped from 4 to 16 samples and length-bucketed "
     "sequences: another input shape each step, the rate scaled with the batch"),
    ("binary_weights_ste.py", [], "a binarised network: sign() weights through a straight-"
     "through estimator, the real weights clipped to [-1, 1] by hand after each step"),
    ("weight_standardization.py", [], "weight-standardised convolutions (a computed weight "
     "each forward) with group norm, LambdaLR warm-up, an evaluation every third step"),
    ("lookahead_by_hand.py", [], "Lookahead around Adam: every third step the weights set "
     "by hand (copy_ under no_grad) to slow weights pulled toward them"),
    ("skip_nonfinite_batch.py", [], "an iteration whose loss is not finite skips its "
     "backward and step (every fourth batch holds a NaN)"),
    ("layerwise_lr_decay.py", [], "layer-wise learning-rate decay: two AdamW groups per "
     "layer, rates decaying by 0.7 a layer down, all decayed to zero by LambdaLR"),
    ("checkpointed_teacher.py", [], "distillation where both models run their blocks through "
     "reentrant checkpointing, the teacher under no_grad in training mode"),
    ("checkpoint_frozen_backbone.py", [], "a frozen backbone still run through reentrant "
     "checkpointing (its blocks never run again), a head trained on it, validation under "
     "no_grad without eval()"),
    ("checkpoint_non_reentrant.py", [], "LoRA adapters over a frozen embedding in blocks "
     "checkpointed with use_reentrant=False"),
    ("backbone_zero_lr_warmup.py", [], "a backbone's learning rate held at 0 by LambdaLR for "
     "4 steps while a new head warms up, AdamW with weight decay"),
    ("grad_scaler_autocast.py", [], "torch's GradScaler under CPU autocast (torch 2.3 and "
     "later; disabled before): unscale_, clipping, an overflowing first iteration skipped"),
    ("parametrize_orthogonal.py", [], "a recurrent weight kept orthogonal by "
     "torch.nn.utils.parametrize (computed from its original at each access), Adam with "
     "clipping, zero_grad(set_to_none) after the step, a cached evaluation"),
    ("mc_dropout_uncertainty.py", [], "Monte Carlo dropout: the model in eval(), its dropout "
     "modules back in train(), 4 sampled predictions every third step"),
    ("periodic_head_reset.py", [], "the head re-initialised by reset_parameters() every 4 "
     "steps and its Adam state dropped (plasticity resets)"),
    ("optimizer_per_epoch.py", [], "an SGD with momentum built anew at the start of every "
     "epoch (fresh buffers), the same model throughout"),
    ("linear_probe_then_finetune.py", [], "LP-FT: a head trained alone on a frozen backbone, "
     "then a new SGD over both at a tenth of the rate"),
    ("progressive_growing.py", [], "residual blocks added at steps 3 and 6, a new SGD "
     "(Nesterov) over old and new parameters each time"),
    ("optimizer_rebuilt_for_decay.py", [], "the learning rate halved each epoch by building a "
     "new SGD at the decayed rate (no scheduler, no state loaded)"),
    ("vit_init_weights.py", [], "a vision transformer initialised as timm's (zeros_ on "
     "biases after each LayerNorm's own), inside a classifier with an initialisation of its "
     "own and a zeroed head"),
]

# Shapes whose program or whose torch code differs from one torch release to the next (fused
# and compiled optimizers, autocast, ZeRO, checkpointing, parametrisations, functional
# updates): a --part runs them all, on each stack.
EVERY_PART = {
    ("adamw_foreach_eval.py", ("--fused",)), ("zero_redundancy.py", ("--world-size", "2")),
    ("ddp_world.py", ("--world-size", "2")), ("checkpointed.py", ()),
    ("spectral_norm_gan.py", ()), ("weight_norm_convs.py", ()), ("compiled_model.py", ()),
    ("maml_inner_loop.py", ()), ("inference_mode_eval.py", ("--autocast",)),
    ("checkpoint_non_reentrant.py", ()), ("grad_scaler_autocast.py", ()),
    ("parametrize_orthogonal.py", ()), ("vit_init_weights.py", ()),
}


def shapes_of_part(part):
    """The shapes of part 'K/N' (1 <= K <= N): every N-th, from the K-th, and EVERY_PART.

    N parts together hold every shape; each holds the shapes of EVERY_PART. None: all.
    """
    if part is None:
        return list(enumerate(SHAPES))
    try:
        number, parts = (int(field) for field in part.split("/"))
    except ValueError:
        number = parts = 0
    if not 1 <= number <= parts:
        raise ValueError("--part takes K/N with 1 <= K <= N, not '{}'".format(part))
    return [(index, shape) for index, shape in enumerate(SHAPES)
            if index % parts == number - 1 or (shape[0], tuple(shape[1])) in EVERY_PART]


def record_shape(suite, index, script, options):
    stem = "shape{}-{}".format(index, script[:-3])
    trace, log_dir = suite.path(stem + ".trace"), suite.path(stem + "-log")
    cross.progress("[{}] recording {} {}".format(suite.next_number(), script, " ".join(options)))
    cross.remove_trace(trace)  # record refuses to replace a trace
    result = cross.run([suite.tcheck, "record", "-o", trace, "--python", "--", *suite.python,
                        os.path.join(SHAPES_DIR, script), *options, "--steps", str(STEPS),
                        "--log-dir", log_dir])
    # What the recorder said it missed: a violation on a lossy recording may be the loss's.
    losses = [line.split("warning: ", 1)[1] for line in result.stderr.splitlines()
              if "warning: " in line and ("not in the trace" in line or " lost" in line)]
    return trace, log_dir, losses


def logged_steps(log_dir):
    """Optimizer steps per rank, from the program's own log.

    Every step changes some parameter of the rank, but one taken at a
    learning rate of 0 (a warm-up that starts there).
    """
    steps = {}
    for path in glob.glob(os.path.join(log_dir, "rank-*.jsonl")):
        with open(path, encoding="utf-8") as lines:
            records = [json.loads(line) for line in lines if line.strip()]
        if not records or not all(record["parameters_changed"] or record["lr"] == 0
                                  for record in records):
            raise RuntimeError("{}: a step changed no parameter of the rank".format(path))
        steps[records[0]["rank"]] = len(records)
    return steps


def check_shape(suite, rules, index, shape):
    script, options, description = shape
    trace, log_dir, losses = record_shape(suite, index, script, options)
    truth = logged_steps(log_dir)
    seen = suite.steps_seen(trace)
    violations = suite.check(rules, trace)
    return {
        "script": script, "options": options, "shape": description,
        "ranks": len(truth), "logged_steps": truth, "optimizer_steps_seen": seen,
        "judged": len(seen) == len(truth) and bool(seen) and min(seen) >= min(truth.values()),
        "violations": len(violations),
        "rules": sorted({v["invariant"] for v in violations}),
        "recording_losses": losses,
    }


def nccl_world_sizes(suite):
    """Rules from healthy 2- and 4-rank NCCL workload jobs, checked on its healthy 8-rank job."""
    traces = {}
    for ranks in (2, 4, 8):
        trace = suite.path("nccl-{}.trace".format(ranks))
        cross.progress("recording the NCCL workload, {} ranks".format(ranks))
        cross.remove_trace(trace)  # record refuses to replace a trace
        cross.run([suite.tcheck, "--quiet", "record", "-o", trace, "--", NCCL_WORKLOAD,
                   "--ranks", str(ranks), "--steps", "12", "--log-dir",
                   suite.path("nccl-{}-log".format(ranks))])
        traces[ranks] = trace
    rules = suite.path("nccl-rules-2-4.json")
    cross.run([suite.tcheck, "infer", "-o", rules, traces[2], traces[4]])
    violations = suite.check(rules, traces[8])
    gathers = set()
    for line in cross.run([suite.tcheck, "dump", traces[8]]).stdout.splitlines():
        record = json.loads(line)
        if record.get("kind") == "nccl" and record.get("name") == "ncclAllGather":
            gathers.add((record["args"]["sendcount"], record["args"]["datatype"]))
    return {"rules": len(cross.rule_texts(rules)), "violations": len(violations),
            "firing": sorted({v["invariant"] for v in violations}),
            "all_gathers_on_8_ranks": sorted(gathers)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tcheck", default=os.path.join(cross.ROOT, "tcheck-bpf"),
                        help="the tcheck-bpf binary (default: the one built in this checkout)")
    parser.add_argument("--work", default=None, metavar="DIR",
                        help="keep traces and logs here (default: a new folder in /tmp); a "
                             "chrooted --python must see it")
    parser.add_argument("--python", default="/usr/bin/python3", metavar="CMD",
                        help="the command line that runs the workloads (default /usr/bin/python3)")
    parser.add_argument("--results", default=None, metavar="FILE", help="write the results here")
    parser.add_argument("--no-nccl", action="store_true",
                        help="leave out the NCCL workload's world sizes")
    parser.add_argument("--part", default=None, metavar="K/N",
                        help="run only part K of N: every N-th program from the K-th, and those "
                             "whose torch code differs between releases (the N parts hold "
                             "every program; default: all)")
    cross.add_jobs_option(parser)
    cross.add_shared_references_option(parser)
    args = parser.parse_args()
    try:
        selected = shapes_of_part(args.part)
    except ValueError as error:
        parser.error(str(error))
    if os.geteuid() != 0:
        print("healthy_shapes_eval: records with BPF: run it as root", file=sys.stderr)
        return 2
    work = args.work or tempfile.mkdtemp(prefix="tcheck-shapes.")
    os.makedirs(work, exist_ok=True)
    suite = cross.Suite(args.tcheck, work, shlex.split(args.python))
    try:
        rules = suite.infer(args.jobs, args.shared_references)
        shapes = cross.in_parallel(lambda item: check_shape(suite, rules, *item),
                                   selected, args.jobs)
        nccl = None if args.no_nccl else nccl_world_sizes(suite)
    except (RuntimeError, OSError, ValueError, KeyError) as error:
        print("healthy_shapes_eval: {} (work folder {})".format(error, work), file=sys.stderr)
        return 2
    for shape in shapes:
        print("{:<26} {:<14} judged={} violations={} {}".format(
            shape["script"], " ".join(shape["options"]), shape["judged"], shape["violations"],
            "; ".join(rule[:70] for rule in shape["rules"][:3])))
        for loss in shape["recording_losses"]:
            print("    the recording: " + loss)
    if nccl:
        print("NCCL workload, rules from 2 and 4 ranks ({} rules) on 8 ranks: {} violations {}"
              .format(nccl["rules"], nccl["violations"], "; ".join(nccl["firing"][:3])))
    if args.results:
        with open(args.results, "w", encoding="utf-8") as out:
            json.dump({"work": work, "shapes": shapes, "nccl": nccl}, out, indent=1)
            out.write("\n")
    ok = all(shape["judged"] and shape["violations"] == 0 for shape in shapes) and \
        (nccl is None or nccl["violations"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

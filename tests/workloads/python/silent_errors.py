#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One-process CPU training with a chosen silent error, for the silent-error suite.

The same model, data and optimizer as train_cpu.py (training_common.py), in a
plain training loop. Healthy by default; --bug picks one silent error, which
begins at step --trigger K (the run goes on and finishes normally):

  zero-grad      optimizer.zero_grad() is no longer called: gradients pile up.
  unused-params  the optimizer is built on the parameters of a model instance
                 that is then replaced (a re-created model, as after reloading
                 weights into a fresh one): the model trained is never updated.
                 It starts at step 0 whatever --trigger says.
  frozen         layer 0 is frozen by mistake (requires_grad False) at step K:
                 a gradual-unfreezing schedule with the condition inverted.
  lr             at step K the optimizer is rebuilt from the configuration and
                 its state loaded back, as a resume does; the configured
                 learning rate is 10x (a unit mix-up) and is applied.

The fixed variant (--bug none, the default) runs the same code paths with the
mistake corrected: the optimizer is still rebuilt at step K with --rebuild-at K,
with the right learning rate. --log writes the truth as JSON: the bug, the step
it takes effect, and what the loop did at every step.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import training_common  # noqa: E402

BUGS = ("none", "zero-grad", "unused-params", "frozen", "lr")
MOMENTUM = 0.9


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bug", choices=BUGS, default="none")
    parser.add_argument("--trigger", type=int, default=5, metavar="K",
                        help="the step the bug takes effect (default 5)")
    parser.add_argument("--rebuild-at", type=int, default=None, metavar="K",
                        help="rebuild the optimizer at step K and load its state (--bug lr "
                             "does it at --trigger)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--log", required=True, metavar="PATH")
    return parser.parse_args(argv)


def build_optimizer(parameters, lr):
    return torch.optim.SGD(parameters, lr=lr, momentum=MOMENTUM)


def rebuild_optimizer(model, old, lr):
    """What a resume does: a fresh optimizer from the configuration, its state loaded back."""
    optimizer = build_optimizer(model.parameters(), lr)
    optimizer.load_state_dict(old.state_dict())
    for group in optimizer.param_groups:
        group["lr"] = lr
    return optimizer


def main(argv=None):
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    torch.manual_seed(args.seed)
    model = training_common.ThreeLayerMLP()
    optimizer = build_optimizer(model.parameters(), args.lr)
    trigger = 0 if args.bug == "unused-params" else args.trigger
    if args.bug == "unused-params":
        # The model is built again (weights copied in) but the optimizer keeps the old one's.
        fresh = training_common.ThreeLayerMLP()
        fresh.load_state_dict(model.state_dict())
        model = fresh
    inputs = torch.randn(args.steps, args.batch_size, training_common.INPUT_FEATURES)
    targets = torch.randn(args.steps, args.batch_size, training_common.OUTPUT_FEATURES)
    rebuild_at = args.trigger if args.bug == "lr" else args.rebuild_at
    steps = []
    model.train()
    for step in range(args.steps):
        record = {"step": step, "zero_grad": False, "lr": None, "frozen_layers": []}
        if step == rebuild_at:
            lr = args.lr * 10 if args.bug == "lr" else args.lr
            optimizer = rebuild_optimizer(model, optimizer, lr)
            record["rebuilt_optimizer"] = True
        if args.bug == "frozen" and step >= trigger:
            for parameter in model.layers[0].parameters():
                parameter.requires_grad_(False)
            record["frozen_layers"] = [0]
        if args.bug != "zero-grad" or step < trigger:
            optimizer.zero_grad()
            record["zero_grad"] = True
        loss = torch.nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        record["lr"] = optimizer.param_groups[0]["lr"]
        record["optimizer_updates_model"] = all(
            any(parameter is owned for owned in model.parameters())
            for group in optimizer.param_groups for parameter in group["params"])
        record["loss"] = loss.item()
        steps.append(record)
    with open(args.log, "w", encoding="utf-8") as log:
        json.dump({"bug": args.bug, "trigger_step": None if args.bug == "none" else trigger,
                   "steps": steps}, log, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A model whose backbone's class overrides train(), trained on CPU, logging when train() ran.

The backbone freezes its first stage in its train(self, mode) override, as
mmpretrain's backbones do (the stage's parameters stop requiring grad and
it goes to eval()); the model holding it and its head inherit
nn.Module.train(). `--call-train` says when the program calls
model.train(): `never` (the override never runs: the frozen stage
trains), `before` (before the first step) or a step number (called at the
start of that step). The log (JSON lines) holds a first line with the
classes, then one line per step: the step, whether model.train() has run
by then, and whether the frozen stage's first weight changed in the step.
This is the truth module_train_not_run is compared with
(tests/e2e/test_train_override.sh).
"""
import argparse
import json
import time

import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([nn.Sequential(nn.Linear(8, 16), nn.ReLU()),
                                     nn.Sequential(nn.Linear(16, 16), nn.ReLU())])

    def train(self, mode=True):
        super().train(mode)
        self.stages[0].eval()
        for parameter in self.stages[0].parameters():
            parameter.requires_grad = False
        return self

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.backbone(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--call-train", default="before", metavar="never|before|STEP")
    parser.add_argument("--step-sleep-ms", type=float, default=0.0)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    call_at = {"never": None, "before": 0}.get(args.call_train, None)
    if args.call_train not in ("never", "before"):
        call_at = int(args.call_train)
    torch.manual_seed(0)
    model = Classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(1)
    frozen = model.backbone.stages[0][0].weight
    trained = False
    with open(args.log, "w") as log:
        log.write(json.dumps({"kind": "run", "overriding": "Backbone",
                              "call_train": args.call_train}) + "\n")
        log.flush()
        for step in range(args.steps):
            if call_at is not None and step == call_at:
                model.train()
                trained = True
            before = frozen.detach().clone()
            inputs = torch.randn(16, 8, generator=generator)
            labels = torch.randint(0, 3, (16,), generator=generator)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
            log.write(json.dumps({"kind": "step", "step": step, "train_called": trained,
                                  "frozen_changed": not torch.equal(before, frozen),
                                  "loss": loss.item()}) + "\n")
            log.flush()
            if args.step_sleep_ms:
                time.sleep(args.step_sleep_ms / 1000.0)


if __name__ == "__main__":
    main()

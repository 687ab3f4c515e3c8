"""A nested model trained for a few steps on CPU, logging where each module sits in it.

The model is an encoder whose layers are a ModuleList of blocks, each block
holding a nested attribute (an attention module with its own projection) and
an nn.Sequential; an MSELoss is called beside it. The log (JSON lines) holds
the model's own named_modules() with each module's class, then, from a
forward pre-hook on every module, each module call in call order: the
top module's class and the module's named_modules() name under it (""
for the top module itself). This is the truth a trace's module paths are
compared with (tests/e2e/test_module_paths.sh).
"""
import argparse
import json
import time

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return torch.tanh(self.proj(x))


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.attn = Attention(width)
        self.mlp = nn.Sequential(nn.Linear(width, width), nn.ReLU())

    def forward(self, x):
        return x + self.mlp(self.attn(x))


class Encoder(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.embed = nn.Linear(4, width)
        self.layers = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--log", required=True)
    parser.add_argument("--step-sleep-ms", type=float, default=0.0,
                        help="sleep this long after each step (a run that lasts while attached)")
    options = parser.parse_args()
    torch.manual_seed(0)
    model = Encoder(8, options.depth)
    loss_function = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with open(options.log, "w") as log:
        def write(record):
            log.write(json.dumps(record) + "\n")

        for top in (model, loss_function):
            for name, module in top.named_modules():
                write({"kind": "named_module", "top": type(top).__name__, "name": name,
                       "class": type(module).__name__})

                def pre_hook(module, inputs, top=top, name=name):
                    write({"kind": "call", "top": type(top).__name__, "name": name,
                           "class": type(module).__name__})

                module.register_forward_pre_hook(pre_hook)
        inputs, targets = torch.randn(16, 4), torch.randn(16, 1)
        for step in range(options.steps):
            optimizer.zero_grad()
            loss = loss_function(model(inputs), targets)
            loss.backward()
            optimizer.step()
            write({"kind": "step", "step": step, "loss": loss.item()})
            if options.step_sleep_ms:
                log.flush()
                time.sleep(options.step_sleep_ms / 1000)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""LoRA adapters inside reentrant gradient checkpointing over frozen embeddings never train.

locuslab/open-unlearning#178 (and transformers#26221, open_clip#573): a
PEFT LoRA model is trained with gradient checkpointing, whose reentrant form
(`torch.utils.checkpoint.checkpoint(..., use_reentrant=True)`, the default
before torch 2.4) needs an input that requires grad. The base model is
frozen, so the embeddings' output does not: every checkpointed block's
output is cut from autograd, its LoRA matrices never get a gradient and
never change, while the adapter outside the checkpointed blocks (on the
output head) trains and the loss falls. torch only warns once ("None of the
inputs have requires_grad=True"). The fixed twin does what transformers'
`enable_input_require_grads()` does: a forward hook on the embedding makes
its output require grad. Symptom per step: a LoRA matrix of a block did not
change.

    /usr/bin/python3 open_unlearning_178_checkpoint_lora.py --bug --log-dir /tmp/lora-checkpoint
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

import bug_common as common  # noqa: E402

VOCABULARY, WIDTH, RANK = 64, 32, 4


class LoraLinear(nn.Module):
    """A frozen linear layer and a trainable low-rank update as PEFT builds it: lora_A and
    lora_B linear layers without bias, B starting at zero."""

    def __init__(self, inputs, outputs):
        super().__init__()
        self.base = nn.Linear(inputs, outputs)
        self.base.requires_grad_(False)
        self.lora_a = nn.Linear(inputs, RANK, bias=False)
        self.lora_b = nn.Linear(RANK, outputs, bias=False)
        nn.init.zeros_(self.lora_b.weight)

    def forward(self, x):
        return self.base(x) + self.lora_b(self.lora_a(x))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.norm.requires_grad_(False)
        self.up = LoraLinear(WIDTH, 2 * WIDTH)
        self.down = LoraLinear(2 * WIDTH, WIDTH)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH)
        self.embedding.requires_grad_(False)
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.head = LoraLinear(WIDTH, VOCABULARY)

    def forward(self, tokens):
        hidden = self.embedding(tokens)
        for block in self.blocks:
            hidden = checkpoint(block, hidden, use_reentrant=True)
        return self.head(hidden)


def main():
    args = common.parser(__doc__.splitlines()[0], "no input of the checkpointed blocks "
                         "requires grad (enable_input_require_grads() not called)").parse_args()
    torch.manual_seed(args.seed)
    model = LanguageModel()
    if not args.bug:
        model.embedding.register_forward_hook(lambda module, inputs, output:
                                              output.requires_grad_(True))
    adapters = [p for p in model.parameters() if p.requires_grad]
    in_blocks = [p for p in model.blocks.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(adapters, lr=1e-2)
    generator = torch.Generator().manual_seed(args.seed + 1)
    tokens = torch.randint(0, VOCABULARY, (args.steps, 8, 12), generator=generator)
    log = common.TruthLog(args, "LoRA under reentrant gradient checkpointing",
                          "the blocks' adapters never updated", 0)
    for step in range(args.steps):
        optimizer.zero_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's one warning, as users ignore it
            logits = model(tokens[step, :, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCABULARY),
                                           tokens[step, :, 1:].reshape(-1))
        loss.backward()
        before = common.snapshot(in_blocks)
        optimizer.step()
        moved = common.changed(before, in_blocks)
        log.step(step, not all(moved), loss=loss.item(), block_adapters_changed=sum(moved),
                 block_adapters=len(in_blocks))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

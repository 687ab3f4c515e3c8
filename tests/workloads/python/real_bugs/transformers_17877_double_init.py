#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""transformers#17877: weights initialised again and again (`_init_weights` per nesting level).

`PreTrainedModel.post_init()` applies `_init_weights` to every submodule; a
model that nests another pretrained-style model ran it once for the inner
model's construction and again for the outer one's (and GPT-2's scaled
`c_proj` rule re-drew those weights once more): start-up slows down and a
special initialisation can be overwritten by the generic one, silently. Here a
GPT-like block stack inside a language-model wrapper, each calling
`post_init()`; the buggy twin re-applies the initialisation to modules
already done, the fixed twin marks them (`_is_initialised`, the fix). Then
training with AdamW. Symptom per step: some parameter was initialised more
than once before training (a set-up bug: step 0).

    /usr/bin/python3 transformers_17877_double_init.py --bug --log-dir /tmp/tf17877
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

INIT_RANGE, LAYERS = 0.02, 2
# id(weight) -> how many times the generic initialiser drew it (GPT-2's scaled c_proj
# re-draw, once per block by design, is not counted)
INITIALISED = {}


class PretrainedStyle(nn.Module):
    buggy = False

    def _init_weights(self, module):
        if getattr(module, "_is_initialised", False) and not self.buggy:
            return
        # Through .data, as GPT-2's _init_weights of the report's time wrote it.
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=INIT_RANGE)
            module.bias.data.zero_()
            INITIALISED[id(module.weight)] = INITIALISED.get(id(module.weight), 0) + 1
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        for name, parameter in module.named_parameters():
            if name == "c_proj.weight":
                parameter.data.normal_(mean=0.0, std=INIT_RANGE / math.sqrt(2 * LAYERS))
        module._is_initialised = True

    def post_init(self):
        self.apply(self._init_weights)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc, self.c_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.ln = nn.LayerNorm(width)

    def forward(self, x):
        return x + self.c_proj(torch.relu(self.c_fc(self.ln(x))))


class Body(PretrainedStyle):
    def __init__(self, width):
        super().__init__()
        self.embed = nn.Linear(4, width)
        self.blocks = nn.Sequential(*[Block(width) for _ in range(LAYERS)])
        self.post_init()

    def forward(self, x):
        return self.blocks(self.embed(x))


class LanguageModel(PretrainedStyle):
    def __init__(self, width):
        super().__init__()
        self.transformer = Body(width)
        self.lm_head = nn.Linear(width, 4)
        self.post_init()

    def forward(self, x):
        return self.lm_head(self.transformer(x))


def main():
    args = common.parser(__doc__.splitlines()[0], "post_init() re-initialises modules "
                         "already initialised").parse_args()
    PretrainedStyle.buggy = args.bug
    torch.manual_seed(args.seed)
    model = LanguageModel(16)
    most = max(INITIALISED.values())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 8, 6, 4, generator=generator)
    log = common.TruthLog(args, "transformers#17877", "parameters initialised more than once", 0)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step][:, :-1]), inputs[step][:, 1:])
        loss.backward()
        optimizer.step()
        log.step(step, step == 0 and most > 1, loss=loss.item(),
                 most_initialisations_of_a_parameter=most)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

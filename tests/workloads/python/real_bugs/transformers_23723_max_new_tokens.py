#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""transformers#23723: max_new_tokens not respected after a long prompt is trimmed.

Whisper's `generate()` computed the stopping length from the prompt's length
before the prompt was cut to fit the context window: with a long prompt,
`max_new_tokens=10` gave 25 new tokens, silently (or an index error later).
Here a small next-token model is trained with SGD and, after each step, a
sample is generated as a training callback does; prompts grow, and from step
K (3) they are longer than the context (12 tokens) and get trimmed. The buggy
twin's stopping length is `len(untrimmed prompt) + max_new_tokens` counted on
the trimmed sequence; the fixed twin counts from the trimmed prompt. Symptom
per step: the sample has more new tokens than max_new_tokens (4).

    /usr/bin/python3 transformers_23723_max_new_tokens.py --bug --log-dir /tmp/tf23723
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

CONTEXT, MAX_NEW, VOCAB, TRIGGER = 12, 4, 11, 3


def generate(model, prompt, buggy):
    """Greedy decoding of at most MAX_NEW tokens after the prompt (trimmed to the context)."""
    stop_at = len(prompt) + MAX_NEW if buggy else None
    prompt = prompt[-(CONTEXT - MAX_NEW):]
    if stop_at is None:
        stop_at = len(prompt) + MAX_NEW
    tokens = list(prompt)
    with torch.no_grad():
        while len(tokens) < stop_at:
            logits = model(torch.tensor(tokens[-CONTEXT:]).unsqueeze(0))
            tokens.append(int(logits[0, -1].argmax()))
    return len(tokens) - len(prompt)


def main():
    args = common.parser(__doc__.splitlines()[0], "the stopping length counts the untrimmed "
                         "prompt").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Embedding(VOCAB, 16), nn.Linear(16, 32), nn.ReLU(),
                          nn.Linear(32, VOCAB))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    generator = torch.Generator().manual_seed(args.seed + 1)
    sequences = torch.randint(0, VOCAB, (args.steps, 8, CONTEXT), generator=generator)
    log = common.TruthLog(args, "transformers#23723", "more tokens than max_new_tokens", TRIGGER)
    for step in range(args.steps):
        model.train()
        optimizer.zero_grad()
        batch = sequences[step]
        logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        model.eval()
        prompt = [int(t) for t in torch.randint(0, VOCAB, (3 + 2 * step,), generator=generator)]
        new_tokens = generate(model, prompt, args.bug)
        log.step(step, new_tokens > MAX_NEW, loss=loss.item(), prompt_tokens=len(prompt),
                 new_tokens=new_tokens)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

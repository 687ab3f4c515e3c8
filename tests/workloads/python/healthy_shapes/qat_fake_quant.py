#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: quantization-aware training: fake-quantized weights and activations, then observers frozen.

PyTorch's eager-mode QAT recipe on CPU: a small CNN with QuantStub and
DeQuantStub, `get_default_qat_qconfig("fbgemm")`, `prepare_qat()` (each conv
and linear then reads a fake-quantized copy of its weight), SGD with
momentum; from --freeze-at (6) the observers are disabled and the batch-norm
statistics frozen, as the recipe does in its last epochs. One process, CPU.

    /usr/bin/python3 qat_fake_quant.py --steps 10 --log-dir /tmp/qat
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.ao import quantization  # noqa: E402

import shapes_common as common  # noqa: E402


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = quantization.QuantStub()
        self.conv = nn.Conv2d(1, 6, 3)
        self.bn = nn.BatchNorm2d(6)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(24, 4)
        self.dequant = quantization.DeQuantStub()

    def forward(self, x):
        x = self.pool(self.relu(self.bn(self.conv(self.quant(x)))))
        return self.dequant(self.fc(self.flatten(x)))


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--freeze-at", type=int, default=6, metavar="K",
                         help="disable the observers and freeze batch norm at step K (default 6)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = SmallCNN()
    model.train()
    model.qconfig = quantization.get_default_qat_qconfig("fbgemm")
    quantization.prepare_qat(model, inplace=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    parameters = list(model.parameters())
    images, labels = torch.randn(args.steps, 8, 1, 10, 10), torch.randint(0, 4, (args.steps, 8))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step == args.freeze_at:
            model.apply(quantization.disable_observer)
            model.apply(nn.intrinsic.qat.freeze_bn_stats)
        before = common.snapshot(parameters)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

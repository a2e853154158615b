"""Fixture i4_external_cpu_tensors: a program with no delegate whose weights are external
tensors (to_executorch with ExecutorchBackendConfig(external_constants=True)), stored in the
`.ptd` file beside it; etvk-host resolves them by name at load.

    /tmp/etpy/bin/python scripts/export_external_cpu.py [OUT_DIR]   (default tests/fixtures)
"""

import os
import sys

import torch
from executorch.exir import ExecutorchBackendConfig, to_edge

from fixture_io import tensor_entry, write_io

NAME = "i4_external_cpu_tensors"


class ScaleShift(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 8))
        self.b = torch.nn.Parameter(torch.randn(8))

    def forward(self, x):
        return x * self.w + self.b


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    torch.manual_seed(31)
    model = ScaleShift().eval()
    x = torch.randn(4, 8)
    program = to_edge(torch.export.export(model, (x,))).to_executorch(
        ExecutorchBackendConfig(external_constants=True)
    )
    d = os.path.join(out, NAME)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.pte"), "wb") as f:
        f.write(program.buffer)
    program.write_tensor_data_to_file(d)
    cases = []
    for i in range(2):
        xi = x if i == 0 else torch.randn(4, 8)
        with torch.no_grad():
            y = model(xi)
        cases.append(
            {
                "inputs": [tensor_entry(d, f"case{i}_in0", xi)],
                "outputs": [tensor_entry(d, f"case{i}_out0", y)],
            }
        )
    write_io(d, NAME, "x * w + b on the CPU, w [4, 8] and b [8] external tensors in "
             "_default_external_constant.ptd; input [4, 8]", cases, 1e-6, "eager PyTorch (fp32)", False)
    print(NAME, "->", d)


if __name__ == "__main__":
    main()

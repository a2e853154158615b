#!/usr/bin/env python3
"""Export a program with no delegate and no constant data (the exporter then writes no
extended header and one empty segment), whose ops all run on etvk-host's CPU kernels, in
the fixture layout of tests/fixtures/. Expected outputs are eager PyTorch.

Needs executorch 1.5.1 and torch 2.13.0 (PyPI), e.g.
    /tmp/etpy/bin/python scripts/export_host_only.py tests/fixtures
"""

import json
import os
import sys

import torch
from executorch.exir import to_edge_transform_and_lower

from fixture_io import tensor_entry, write_io


class StridedMeans(torch.nn.Module):
    def forward(self, x):
        window = torch.as_strided(x, (2, 3, 2), (7, 0, 3), 4)
        return window, x.mean(dim=(-1,), keepdim=True), x.mean(dim=(0, 1))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    name = "i1_host_only_no_constants"
    torch.manual_seed(28)
    model = StridedMeans()
    shape = [5, 6]
    program = to_edge_transform_and_lower(torch.export.export(model, (torch.randn(shape),)))
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.pte"), "wb") as f:
        f.write(program.to_executorch().buffer)
    cases = []
    for i in range(2):
        x = torch.randn(shape) * (1.0 + i)
        ys = model(x)
        cases.append(
            {
                "inputs": [tensor_entry(d, f"case{i}_in0", x)],
                "outputs": [tensor_entry(d, f"case{i}_out{j}", y) for j, y in enumerate(ys)],
            }
        )
    write_io(
        d,
        name,
        "no delegate, no constants (no extended header, one empty segment): as_strided_copy "
        "with a zero stride and an offset, mean over [-1] keepdim and over [0, 1]; input [5, 6]",
        cases,
        1e-5,
        "eager PyTorch (fp32)",
        False,
    )
    graph = program.exported_program().graph_module
    summary = {
        "name": name,
        "exporter": "executorch 1.5.1, torch 2.13.0 (scripts/export_host_only.py)",
        "top_level_ops": [str(n.target) for n in graph.graph.nodes if n.op == "call_function"],
    }
    with open(os.path.join(d, "export.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(name, "->", d)


if __name__ == "__main__":
    main()

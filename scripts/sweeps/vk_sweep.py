"""Run executorch's own Vulkan delegate tests (backends/vulkan/test/test_vulkan_delegate.py),
dumping every lowered program with its sample / test inputs and eager outputs in the fixture
layout instead of running ExecuTorch's runtime; `disable_test` wrappers are unwrapped.

    /tmp/etpy/bin/python scripts/sweeps/vk_sweep.py OUT_DIR [TestVulkanBackend.test_x ...]
    target/release/etvk check OUT_DIR/*
"""
import os, sys, unittest, traceback, inspect
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch
from fixture_io import tensor_entry, write_io
from executorch.extension.pytree import tree_flatten
import executorch.backends.vulkan.test.test_vulkan_delegate as tvd

OUT = sys.argv[1]
COUNT = {}

def current_test():
    for f in inspect.stack():
        if f.function.startswith("test_"):
            return f.function
    return "unknown"

def dump(self, et_program, model, sample_inputs, atol=1e-3, rtol=1e-1, test_inputs=None, first_output_only=False):
    name = current_test()
    COUNT[name] = COUNT.get(name, 0) + 1
    d = os.path.join(OUT, f"{name}_{COUNT[name]}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.pte"), "wb") as f:
        f.write(et_program.buffer)
    cases = []
    for i, inp in enumerate([sample_inputs] + list(test_inputs or [])):
        flat, _ = tree_flatten(inp)
        with torch.no_grad():
            ref = model(*inp)
        refs, _ = tree_flatten(ref)
        cases.append({
            "inputs": [tensor_entry(d, f"case{i}_in{k}", t if isinstance(t, torch.Tensor) else torch.tensor(t)) for k, t in enumerate(flat)],
            "outputs": [tensor_entry(d, f"case{i}_out{k}", t if isinstance(t, torch.Tensor) else torch.tensor(t)) for k, t in enumerate(refs)],
        })
    write_io(d, name, name, cases, max(atol, 1e-3), "eager PyTorch", False)
    io = os.path.join(d, "io.json")
    import json
    j = json.load(open(io)); j["atol"] = atol; j["rtol"] = rtol; j["first_output_only"] = first_output_only
    json.dump(j, open(io, "w"), indent=1)
    print("DUMPED", d, flush=True)

tvd.TestVulkanBackend.run_delegated_model_and_check_output = dump
for k, v in list(vars(tvd.TestVulkanBackend).items()):
    if k.startswith("test_") and hasattr(v, "__wrapped__"):
        setattr(tvd.TestVulkanBackend, k, v.__wrapped__)
if __name__ == "__main__":
    unittest.main(module=tvd, argv=["x"] + sys.argv[2:], verbosity=2, exit=False)

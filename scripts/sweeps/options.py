"""The Vulkan partitioner's compile options on two small models (an embedding / linear /
conv1d one and one that mutates a buffer), each lowered program dumped with two calls of
inputs and eager outputs in the fixture layout, for `etvk check`.

    /tmp/etpy/bin/python scripts/sweeps/options.py OUT_DIR [OPTION_NAME...]
"""
import os, sys, torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fixture_io import tensor_entry, write_io
from executorch.exir import to_edge_transform_and_lower
from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
from executorch.backends.vulkan.serialization.vulkan_graph_schema import VkStorageType, VkMemoryLayout
torch.manual_seed(0)
OUT = sys.argv[1]
class Mix(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(20, 8)
        self.lin = torch.nn.Linear(8, 8)
        self.conv = torch.nn.Conv1d(8, 8, 3, padding=1)
    def forward(self, ids, x):
        e = self.emb(ids)                       # [1, T, 8]
        pos = torch.arange(ids.shape[1]).float()  # int64 arange
        h = self.lin(e + x) + pos[None, :, None] * 0.1
        h = self.conv(h.transpose(1, 2)).transpose(1, 2)
        return torch.softmax(h, -1) + h.sum(-1, keepdim=True)
class Mut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.zeros(4, 8))
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        self.acc.add_(self.lin(x))
        return self.acc * 2.0
OPTS = {
 "default": {},
 "no_downcast": {"downcast_64_bit": False},
 "skip_mem_plan": {"skip_memory_planning": True},
 "skip_tag": {"skip_tag_memory_metadata": True},
 "small_tex": {"small_texture_limits": True},
 "buffer": {"storage_type_override": VkStorageType.BUFFER},
 "width_packed": {"memory_layout_override": VkMemoryLayout.TENSOR_WIDTH_PACKED},
 "channels_packed": {"memory_layout_override": VkMemoryLayout.TENSOR_CHANNELS_PACKED},
 "fp16": {"force_fp16": True},
 "alias_mut": {"alias_buffer_mutations": True},
 "external": {"external_constants_max_data_bytes": 1 << 20},
}
for mname, mk, ins in [("mix", Mix, lambda: (torch.randint(0, 20, (1, 6)), torch.randn(1, 6, 8))), ("mut", Mut, lambda: (torch.randn(4, 8),))]:
    for oname, opts in OPTS.items():
        if len(sys.argv) > 2 and oname not in sys.argv[2:]: continue
        tag = f"{mname}_{oname}"
        try:
            m = mk().eval()
            args = ins()
            ep = torch.export.export(m, args, strict=False)
            lowered = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(dict(opts))])
            prog = lowered.to_executorch()
            d = os.path.join(OUT, tag); os.makedirs(d, exist_ok=True)
            open(f"{d}/model.pte", "wb").write(prog.buffer)
            if hasattr(prog, "write_tensor_data_to_file"):
                prog.write_tensor_data_to_file(d)
            cases = []
            ref = mk().eval(); ref.load_state_dict(m.state_dict())
            for i in range(2):
                a = args if i == 0 else ins()
                with torch.no_grad(): y = ref(*a)
                cases.append({"inputs": [tensor_entry(d, f"case{i}_in{k}", t) for k, t in enumerate(a)], "outputs": [tensor_entry(d, f"case{i}_out0", y)]})
            tol = 2e-2 if "fp16" in oname else 1e-3
            write_io(d, tag, tag, cases, tol, "eager", False)
            print("DUMPED", tag, os.listdir(d) if oname == "external" else "", flush=True)
        except Exception as e:
            print("FAILED", tag, repr(e)[:300], flush=True)

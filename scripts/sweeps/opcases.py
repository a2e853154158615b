"""ExecuTorch's Vulkan op-test suites (op_tests/cases.py) as exported single-op programs:
tensor-typed args given as shapes become inputs (weights of conv / linear / norms become
constants), other args are baked in; eager outputs are the expectation. Dirs already
holding an io.json are skipped, so runs resume; WORKER/WORKERS splits the ops.

    /tmp/etpy/bin/python scripts/sweeps/opcases.py OUT_DIR 0/1 [aten.op.overload ...]
    target/release/etvk check OUT_DIR/*
"""
import os, sys, json, traceback, random
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch
from fixture_io import tensor_entry, write_io
from executorch.extension.pytree import tree_flatten
from executorch.exir import to_edge_transform_and_lower
from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
from executorch.backends.vulkan.test.op_tests.cases import test_suites

OUT = sys.argv[1]
worker, workers = (int(x) for x in sys.argv[2].split("/"))
only = sys.argv[3:]
CONST = {"aten.convolution.default": {1, 2}, "aten.linear.default": {1, 2},
         "aten.native_layer_norm.default": {2, 3}, "aten.native_group_norm.default": {1, 2},
         "aten._native_batch_norm_legit_no_training.default": {1, 2, 3, 4},
         "aten._weight_int8pack_mm.default": {1, 2}}
LITERAL_INDEX = {"aten.index_select.default", "aten.embedding.default", "aten.gather.default"}
torch.manual_seed(0)

def is_shape(v):
    return isinstance(v, int) or (isinstance(v, (tuple, list)) and all(isinstance(i, int) for i in v))

def shape_of(v):
    return (v,) if isinstance(v, int) else tuple(v)

for oi, (op, suites) in enumerate(test_suites.items()):
    if only and op not in only:
        continue
    if oi % workers != worker:
        continue
    if not isinstance(suites, list):
        suites = [suites]
    name_, overload = op.rsplit(".", 1)
    fn = getattr(getattr(torch.ops.aten, name_.split(".", 1)[1]), overload)
    sargs = fn._schema.arguments
    for si, suite in enumerate(suites):
        lo, hi = suite.data_range
        for ci, case in enumerate(suite.input_cases):
            tag = f"{op}_{si}_{ci}"
            d = os.path.join(OUT, tag)
            if os.path.exists(os.path.join(d, "io.json")):
                continue
            try:
                case = case if isinstance(case, tuple) else (case,)
                inputs, consts, plan = [], {}, []
                for k, (v, sa) in enumerate(zip(case, sargs)):
                    t = str(sa.type)
                    if op in LITERAL_INDEX and sa.name in ("index", "indices"):
                        consts[k] = torch.tensor(v, dtype=torch.long)
                        plan.append(("const", k))
                    elif t in ("Tensor", "Optional[Tensor]") and v is not None and is_shape(v):
                        if sa.name in ("self", "input", "weight") and op in LITERAL_INDEX:
                            x = torch.rand(shape_of(v)) * (hi - lo) + lo
                        elif op == "aten._weight_int8pack_mm.default" and k == 1:
                            x = torch.randint(-128, 127, shape_of(v), dtype=torch.int8)
                        elif op.startswith("aten.bitwise") or op.startswith("aten.logical"):
                            x = torch.rand(shape_of(v)) > 0.5
                        else:
                            r = suite.arg_data_range.get(sa.name, (lo, hi)) if hasattr(suite, "arg_data_range") else (lo, hi)
                            x = torch.rand(shape_of(v)) * (r[1] - r[0]) + r[0]
                        if k in CONST.get(op, ()) or (op == "aten.embedding.default" and k == 0):
                            consts[k] = x
                            plan.append(("const", k))
                        else:
                            plan.append(("in", len(inputs)))
                            inputs.append(x)
                    elif t in ("List[Tensor]", "List[Optional[Tensor]]"):
                        lst = []
                        for s in v:
                            if s is None:
                                lst.append(None)
                            else:
                                if op == "aten.index.Tensor":
                                    xs = shape_of(case[0])
                                    lst.append(("in", len(inputs)))
                                    inputs.append(torch.randint(0, xs[0], shape_of(s)))
                                else:
                                    lst.append(("in", len(inputs)))
                                    inputs.append(torch.rand(shape_of(s)) * (hi - lo) + lo)
                        plan.append(("list", lst))
                    else:
                        if v == "false": v = False
                        if v == "true": v = True
                        plan.append(("lit", v))
                names = [sa.name if sa.kwarg_only else None for sa in sargs[:len(case)]]

                class M(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        for k, c in consts.items():
                            self.register_buffer(f"c{k}", c)
                    def forward(self, *xs):
                        args, kw = [], {}
                        for p, nm in zip(plan, names):
                            if p[0] == "in": a = xs[p[1]]
                            elif p[0] == "const": a = getattr(self, f"c{p[1]}")
                            elif p[0] == "list": a = [None if e is None else xs[e[1]] for e in p[1]]
                            else: a = p[1]
                            if nm: kw[nm] = a
                            else: args.append(a)
                        return fn(*args, **kw)
                m = M().eval()
                with torch.no_grad():
                    ref = m(*inputs)
                ep = torch.export.export(m, tuple(inputs), strict=False)
                prog = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner({})]).to_executorch()
                os.makedirs(d, exist_ok=True)
                open(os.path.join(d, "model.pte"), "wb").write(prog.buffer)
                refs, _ = tree_flatten(ref)
                cases = [{"inputs": [tensor_entry(d, f"case0_in{k}", t) for k, t in enumerate(inputs)],
                          "outputs": [tensor_entry(d, f"case0_out{k}", t if isinstance(t, torch.Tensor) else torch.tensor(t)) for k, t in enumerate(refs)]}]
                write_io(d, tag, str(case)[:300], cases, 1e-3, "eager", False)
                print("DUMPED", tag, flush=True)
            except Exception as e:
                print("FAILED", tag, repr(e)[:200], flush=True)

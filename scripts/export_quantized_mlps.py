#!/usr/bin/env python3
"""Export small torchao-quantized MLPs through ExecuTorch's Vulkan partitioner: 8da4w (int8
dynamic per-token activations, int4 group-wise weights, Int8DynamicActivationIntxWeightConfig)
int8 weight-only (IntxWeightOnlyConfig(int8, PerAxis(0)): dequantize_affine before
aten.linear in the delegate) and PT2E 8-bit weights (VulkanQuantizer: _weight_int8pack_mm), and
an 8da4w torch.nn.TransformerEncoderLayer, and PT2E static int8 programs (XNNPACKQuantizer:
the et_vk.q8ta_* ops; h7, h8), in the fixture layout of tests/fixtures/ (model.pte, io.json, caseN_inK.bin / caseN_outK.bin, and the
top-level graph's ops in export.json). Expected outputs are eager PyTorch on the same quantized
module.

Needs executorch 1.5.1, torch 2.13.0, torchao 0.18.0 (PyPI), e.g.
    python3 -m venv /tmp/etpy
    /tmp/etpy/bin/pip install executorch==1.5.1 torchao==0.18.0 torch==2.13.0
    /tmp/etpy/bin/python scripts/export_quantized_mlps.py tests/fixtures [NAME ...]
(names: export only those fixtures).
"""

import json
import os
import sys

import torch
from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization import (
    Int8DynamicActivationIntxWeightConfig,
    IntxWeightOnlyConfig,
    quantize_,
)
from torchao.quantization.granularity import PerAxis, PerGroup

from fixture_io import tensor_entry, write_io




class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(128, 96, bias=True)
        self.down = torch.nn.Linear(96, 32, bias=False)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def write_case(out_dir, i, tensors, kind):
    return [tensor_entry(out_dir, f"case{i}_{kind}{j}", t) for j, t in enumerate(tensors)]


def pt2e_8bit_weights(model, example):
    """PT2E with the VulkanQuantizer's symmetric 8-bit weight config: the delegate then holds
    aten._weight_int8pack_mm (FuseQuantizedOps)."""
    from executorch.backends.vulkan.quantizer.vulkan_quantizer import (
        VulkanQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    graph = torch.export.export(model, example).module()
    quantizer = VulkanQuantizer()
    quantizer.set_global(get_symmetric_quantization_config(is_dynamic=False, weight_bits=8))
    prepared = prepare_pt2e(graph, quantizer)
    prepared(*example)
    return convert_pt2e(prepared)


def pt2e_static_int8(model, example, calibration=4):
    """PT2E static int8 (XNNPACKQuantizer, get_symmetric_quantization_config(is_per_channel=True):
    int8 per-tensor activations, int8 per-channel weights), calibrated on `calibration` random
    batches of the example's shape: the Vulkan partitioner fuses the quantize / dequantize
    pairs into et_vk.q8ta_* ops (linear, conv2d (dw, pw, transposed), add, relu,
    pixel_shuffle)."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        get_symmetric_quantization_config,
        XNNPACKQuantizer,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    graph = torch.export.export(model, example).module()
    quantizer = XNNPACKQuantizer()
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=False))
    prepared = prepare_pt2e(graph, quantizer)
    for _ in range(calibration):
        prepared(torch.randn(example[0].shape) * 2.0)
    return convert_pt2e(prepared)


class TinyCnn(torch.nn.Module):
    """Every q8ta op of a static int8 export in one small CNN: stem conv + relu, depthwise
    conv + relu, pointwise conv, residual add + relu, strided conv, max pool + relu
    (q8ta_relu), transposed conv, conv, pixel shuffle, conv, global average pool, linear."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = torch.nn.Conv2d(8, 8, 1)
        self.down = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up = torch.nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.expand = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.tail = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.stem(x))
        z = self.pw(torch.relu(self.dw(y)))
        y = torch.relu(y + z)
        d = torch.relu(torch.nn.functional.max_pool2d(self.down(y), 2))
        e = torch.nn.functional.pixel_shuffle(self.expand(self.up(d)), 2)
        p = torch.nn.functional.adaptive_avg_pool2d(self.tail(e), 1).flatten(1)
        return self.fc(p)


# Fixture names to export (all when empty): the command line after the output folder.
ONLY = set()

# io.json note of the static int8 fixtures (their f64_reference_tol).
STATIC_INT8_NOTE = (
    "static int8 activations: the f64 reference interpreter sums the dequantized operands "
    "exactly and can round a sum to a neighbouring int8 step where fp32 PyTorch does not, so "
    "it is compared with this tolerance; the GPU run keeps atol / rtol"
)


def encoder_layer():
    """torch.nn.TransformerEncoderLayer (d_model 64, 4 heads, GELU feed-forward 128)."""
    return torch.nn.TransformerEncoderLayer(
        d_model=64,
        nhead=4,
        dim_feedforward=128,
        dropout=0.0,
        batch_first=True,
        activation="gelu",
    )


def export(
    out_dir, name, description, shapes, dynamic_batch, config=None, pt2e=False, build=Mlp,
    static_int8=False,
    seed=27,
):
    if ONLY and name not in ONLY:
        return
    torch.manual_seed(seed)
    model = build().eval()
    example = (torch.randn(shapes[0]),)
    if static_int8:
        model = pt2e_static_int8(model, example)
    elif pt2e:
        model = pt2e_8bit_weights(model, example)
    else:
        quantize_(
            model,
            config
            or Int8DynamicActivationIntxWeightConfig(
                weight_dtype=torch.int4, weight_granularity=PerGroup(32)
            ),
        )
    dynamic = None
    if dynamic_batch:
        dynamic = ({0: torch.export.Dim("batch", min=1, max=16)},)
    ep = torch.export.export(model, example, dynamic_shapes=dynamic)
    options = {"require_dynamic_shapes": True} if dynamic_batch else {}
    lowered = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(options)])
    program = lowered.to_executorch()
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.pte"), "wb") as f:
        f.write(program.buffer)
    cases = []
    for i, shape in enumerate(shapes):
        x = torch.randn(shape) * (1.0 + i)
        with torch.no_grad():
            y = model(x)
        cases.append(
            {
                "inputs": write_case(d, i, [x], "in"),
                "outputs": write_case(d, i, [y], "out"),
            }
        )
    write_io(
        d,
        name,
        description,
        cases,
        1e-3,
        "eager PyTorch (fp32) on the same quantized module",
        config is None and not pt2e,
    )
    if static_int8:
        path = os.path.join(d, "io.json")
        with open(path) as f:
            io = json.load(f)
        io["f64_reference_note"] = STATIC_INT8_NOTE
        with open(path, "w") as f:
            json.dump(io, f, indent=1)
    graph = lowered.exported_program().graph_module
    delegated = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    summary = {
        "name": name,
        "exporter": "executorch 1.5.1, torch 2.13.0, torchao 0.18.0 (scripts/export_quantized_mlps.py)",
        "top_level_ops": delegated,
    }
    with open(os.path.join(d, "export.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(name, "->", d)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    ONLY.update(sys.argv[2:])
    export(
        out,
        "h1_mlp_8da4w",
        "Linear(128->96, bias) -> ReLU -> Linear(96->32) with torchao "
        "Int8DynamicActivationIntxWeightConfig(int4, PerGroup(32)); input [4,128]",
        [[4, 128], [4, 128]],
        False,
    )
    export(
        out,
        "h2_mlp_8da4w_dynamic_batch",
        "the h1 MLP with a dynamic batch Dim(1..16); example batch 4; cases batch 4, 1, 7, 16",
        [[4, 128], [1, 128], [7, 128], [16, 128]],
        True,
    )
    export(
        out,
        "h3_mlp_int8_weight_only",
        "the h1 MLP with torchao IntxWeightOnlyConfig(int8, PerAxis(0)) (dequantize_affine + "
        "aten.linear in the delegate); input [4,128]",
        [[4, 128], [4, 128]],
        False,
        IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)),
    )
    export(
        out,
        "h4_mlp_pt2e_int8_weights",
        "the h1 MLP through PT2E with the VulkanQuantizer's symmetric 8-bit weights "
        "(aten._weight_int8pack_mm in the delegate); input [4,128]",
        [[4, 128], [4, 128]],
        False,
        pt2e=True,
    )
    export(
        out,
        "h6_mlp_int4_per_channel",
        "the h1 MLP with torchao IntxWeightOnlyConfig(int4, PerAxis(0)) (et_vk.linear_q4gsw "
        "with one group per row); input [4,128]",
        [[4, 128], [4, 128]],
        False,
        IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerAxis(0)),
    )
    export(
        out,
        "h5_encoder_layer_8da4w",
        "torch.nn.TransformerEncoderLayer (d_model 64, 4 heads, GELU feed-forward 128, "
        "batch_first) with 8da4w linears (the attention's packed in_proj stays fp32); "
        "input [2, 8, 64]: three delegates with CPU ops between them",
        [[2, 8, 64], [2, 8, 64]],
        False,
        build=encoder_layer,
    )
    export(
        out,
        "h7_mlp_pt2e_q8ta",
        "the h1 MLP through PT2E static int8 (XNNPACKQuantizer per-channel: int8 activations "
        "and weights): quantize_per_tensor -> et_vk.q8ta_linear (relu fused) -> "
        "et_vk.q8ta_linear -> dequantize_per_tensor in the delegate; input [4,128]",
        [[4, 128], [4, 128]],
        False,
        static_int8=True,
    )
    export(
        out,
        "h8_cnn_pt2e_q8ta",
        "a tiny CNN through PT2E static int8 (XNNPACKQuantizer per-channel): q8ta_conv2d, "
        "q8ta_conv2d_dw, q8ta_conv2d_pw, q8ta_add, q8ta_relu (after an fp32 max pool between "
        "dequantize / quantize), q8ta_conv2d_transposed, q8ta_pixel_shuffle, mean, "
        "q8ta_linear_gemv; input [1,3,8,8]",
        [[1, 3, 8, 8], [1, 3, 8, 8], [1, 3, 8, 8]],
        False,
        build=TinyCnn,
        static_int8=True,
    )
    export(
        out,
        "h9_mobilenet_v2_q8ta",
        "torchvision mobilenet_v2(width_mult 0.5, num_classes 10) through PT2E static int8: "
        "ReLU6 clamps into the q8ta convolutions, residual q8ta_add; the exporter serializes "
        "equal scalars once, so an output zero point 6 shares ReLU6's Double 6.0; input "
        "[1,3,64,64]",
        [[1, 3, 64, 64], [1, 3, 64, 64]],
        False,
        build=lambda: __import__("torchvision").models.mobilenet_v2(
            width_mult=0.5, num_classes=10
        ),
        static_int8=True,
        # A seed whose calibration gives an output zero point of 6 (shared with a 6.0).
        seed=30,
    )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Export small convolutional networks through ExecuTorch's Vulkan partitioner, in the fixture
layout of tests/fixtures/ (model.pte, io.json, caseN_inK.bin / caseN_outK.bin, export.json).
Expected outputs are eager PyTorch (fp32) on the same module in eval mode (batch norms are
folded into the convolutions by the exporter).

Needs executorch 1.5.1, torch 2.13.0, torchvision 0.28.0 (PyPI), e.g.
    python3 -m venv /tmp/etpy
    /tmp/etpy/bin/pip install executorch==1.5.1 torchao==0.18.0 torch==2.13.0
    /tmp/etpy/bin/pip install --no-deps torchvision==0.28.0
    /tmp/etpy/bin/python scripts/export_vision.py tests/fixtures [NAME...]
"""

import json
import os
import sys

import torch
import torchvision
from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
from executorch.exir import to_edge_transform_and_lower
from torchvision.models.resnet import BasicBlock

import executorch.backends.vulkan.custom_ops_lib  # noqa: F401 (registers et_vk ops)
from fixture_io import tensor_entry, write_io


def randomize(model):
    """Variance-preserving random weights, small random biases and non-trivial batch-norm
    statistics everywhere: torchvision's own initialization leaves some of these networks
    with outputs near 1e-8 whatever the input, which would make a fixture that checks
    nothing."""
    gen = torch.Generator().manual_seed(28)

    def uniform(t, bound, offset=0.0):
        t.copy_((torch.rand(t.shape, generator=gen) * 2 - 1) * bound + offset)

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.ConvTranspose2d, torch.nn.Linear)):
                fan_in = m.weight[0].numel()
                if isinstance(m, torch.nn.ConvTranspose2d):
                    fan_in = m.weight.shape[0] * m.weight[0, 0].numel() // m.stride[0] // m.stride[1]
                uniform(m.weight, (6.0 / fan_in) ** 0.5)
                if m.bias is not None:
                    uniform(m.bias, 0.1)
            elif isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                uniform(m.running_mean, 0.2)
                uniform(m.running_var, 0.5, 1.0)
                uniform(m.weight, 0.5, 1.0)
                uniform(m.bias, 0.2)
    return model


class ConvZoo(torch.nn.Module):
    """Every convolution form the partitioner delegates: strided conv + BN + ReLU6 (fused
    into et_vk.conv_with_clamp), depthwise, dilated, grouped, bias-free 1x1, transposed with
    output_padding, a residual add, then a global mean and a linear head."""

    def __init__(self):
        super().__init__()
        bn = torch.nn.BatchNorm2d
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), bn(8), torch.nn.ReLU6()
        )
        self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.dilated = torch.nn.Conv2d(8, 12, 3, padding=2, dilation=2)
        self.grouped = torch.nn.Conv2d(12, 12, (3, 1), stride=(1, 2), padding=(1, 0), groups=3)
        self.pointwise = torch.nn.Conv2d(12, 8, 1, bias=False)
        self.up = torch.nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.head = torch.nn.Linear(6, 5)

    def forward(self, x):
        y = self.stem(x)
        y = torch.relu(self.depthwise(y)) + y
        y = self.dilated(y)
        y = self.grouped(y)
        y = self.pointwise(y)
        y = self.up(y)
        return self.head(y.mean(dim=(2, 3)))


class Conv1dStack(torch.nn.Module):
    """An audio-style feature extractor: strided 1-D convolutions with GELU."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv1d(1, 16, 10, stride=5)
        self.c2 = torch.nn.Conv1d(16, 16, 3, stride=2, padding=1, groups=4)
        self.c3 = torch.nn.Conv1d(16, 8, 3, dilation=2, bias=False)

    def forward(self, x):
        y = torch.nn.functional.gelu(self.c1(x))
        y = torch.nn.functional.gelu(self.c2(y))
        return self.c3(y)


def tiny_resnet():
    """ResNet layout (7x7 stem, max pool, BasicBlocks with a strided downsample, average
    pool, fc) at widths 16 / 32."""
    down = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 1, stride=2, bias=False), torch.nn.BatchNorm2d(32))
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, stride=2, padding=1),
        BasicBlock(16, 16),
        BasicBlock(16, 32, stride=2, downsample=down),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 10),
    )


class SegTiny(torch.nn.Module):
    """A small encoder-decoder (UNet / segmentation-head style): two strided encoder stages,
    a bilinear x2 upsample (align_corners False, by scale factor) concatenated with the
    stride-2 skip, a nearest x2 upsample (nn.Upsample) concatenated with the full-size skip,
    F.pad with a constant before an unpadded convolution, a pixel shuffle, and a final
    bilinear resize by 0.75 with align_corners True."""

    def __init__(self):
        super().__init__()
        bn = torch.nn.BatchNorm2d
        relu = torch.nn.ReLU
        self.enc1 = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), bn(8), relu())
        self.enc2 = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3, stride=2, padding=1), bn(16), relu())
        self.enc3 = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, stride=2, padding=1), relu())
        self.dec2 = torch.nn.Conv2d(32, 8, 3, padding=1)
        self.up = torch.nn.Upsample(scale_factor=2)
        self.dec1 = torch.nn.Conv2d(16, 8, 3)
        self.expand = torch.nn.Conv2d(8, 16, 1)
        self.head = torch.nn.Conv2d(4, 3, 1)

    def forward(self, x):
        f = torch.nn.functional
        s1 = self.enc1(x)
        s2 = self.enc2(s1)
        y = self.enc3(s2)
        y = f.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False)
        y = torch.relu(self.dec2(torch.cat([y, s2], 1)))
        y = torch.cat([self.up(y), s1], 1)
        y = f.pad(y, (1, 1, 1, 1), value=0.5)
        y = torch.relu(self.dec1(y))
        y = f.pixel_shuffle(self.expand(y), 2)
        y = self.head(y)
        return f.interpolate(y, scale_factor=0.75, mode="bilinear", align_corners=True)


class CpuOpsMix(torch.nn.Module):
    """Delegated convolutions around the ops ExecuTorch's Vulkan partitioner leaves on the
    CPU: instance norm (a stats-free batch norm), topk, sort, cumsum, max over a dim, var,
    erf, sign, elu."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.InstanceNorm2d(3, affine=True)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        f = torch.nn.functional
        y = self.conv(self.norm(x)).flatten(2)
        top = torch.topk(y, 5, dim=-1)[0]
        s = torch.sort(y, dim=-1, descending=True)[0][..., :5]
        c = torch.cumsum(top - s + torch.erf(top), dim=-1)
        m = torch.max(y, dim=-1, keepdim=True)[0]
        v = torch.var(y, dim=-1, keepdim=True)
        return f.elu(c * torch.sign(m) + v)


class DynamicEdges(torch.nn.Module):
    """Shape-dependent graphs with dynamic batch and width: replicate padding of the width
    to a multiple of 4 (exported as arange / clamp to a SymInt / index.Tensor), clamp to
    the batch size (a SymInt bound), ceil-mode average and padded max pooling of the
    padded map (both [N, C, ceil(H / 2), W' / 2]), summed. No flatten: a view bakes the
    static dims into its sizes."""

    def forward(self, x):
        f = torch.nn.functional
        n, w = x.shape[0], x.shape[3]
        y = f.pad(x, (0, 4 * ((w + 3) // 4) - w, 0, 0), mode="replicate")
        a = f.avg_pool2d(y, 2, 2, ceil_mode=True)
        m = f.max_pool2d(y, 3, 2, padding=1)
        return m + torch.clamp(a * 4.0, max=n)


class Int64Graph(torch.nn.Module):
    """Int64 tensors kept in the delegate (exported with downcast_64_bit False): ids computed
    from x as int64, an embedding, an index_select by an int64 constant, an int64 argmax
    output beside the float one."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 6)
        self.register_buffer("pick", torch.tensor([5, 0, 3, 3], dtype=torch.int64))

    def forward(self, x):
        ids = (x.abs() * 4.0).long().clamp(0, 9)
        e = self.emb(ids)
        y = torch.index_select(e, 2, self.pick) + x.unsqueeze(-1)
        return y, torch.argmax(y, dim=-1)


class MaskIndexMix(torch.nn.Module):
    """Attention with a boolean mask built from ones / triu / eye (exported as CPU arange,
    clamp.Tensor, eq.Tensor, unsqueeze, any), F.unfold (index.Tensor on the CPU), a scatter
    of a value and a gather, around delegated matmuls and softmax."""

    def forward(self, x):
        f = torch.nn.functional
        n = x.shape[2]
        keep = torch.triu(torch.ones(n, n, dtype=torch.bool)).logical_not() | torch.eye(
            n, dtype=torch.bool
        )
        a = f.scaled_dot_product_attention(x, x * 0.5, x + 1.0, attn_mask=keep)
        patches = f.unfold(a[:, :1], kernel_size=2, stride=2)
        marks = torch.zeros(2, 4).scatter(1, torch.tensor([[1], [3]]), 1.5)
        picked = torch.gather(x[0, 0, :2, :4], 1, torch.tensor([[0, 3], [2, 1]]))
        return patches.sum() + (marks[:, :2] * picked).sum() + a.mean()


class VideoPoolTiny(torch.nn.Module):
    """A video-style stem the partitioner leaves on the CPU (Conv3d, BatchNorm3d as
    _native_batch_norm_legit_no_training, relu between them), the time mean, a delegated 2-D
    convolution, then AdaptiveAvgPool2d to a size that does not divide the map (overlapping
    bins: _adaptive_avg_pool2d on the CPU) and a linear head."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv3d(3, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm3d(6)
        self.conv = torch.nn.Conv2d(6, 8, 3)
        self.pool = torch.nn.AdaptiveAvgPool2d((3, 4))
        self.head = torch.nn.Linear(8 * 3 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.stem(x))).mean(dim=2)
        y = self.pool(torch.relu(self.conv(y)))
        return self.head(y.flatten(1))


class WarpTiny(torch.nn.Module):
    """RIFE-style warp: a predicted flow added to the identity grid, grid_sample (bilinear,
    border, align_corners: the configuration ExecuTorch's partitioner delegates), then
    et_vk.grid_priors on the warped map."""

    def __init__(self):
        super().__init__()
        self.flow = torch.nn.Conv2d(3, 2, 3, padding=1)

    def forward(self, x):
        f = torch.nn.functional
        _, _, h, w = x.shape
        ys = torch.linspace(-1.0, 1.0, h)
        xs = torch.linspace(-1.0, 1.0, w)
        gy, gx = torch.meshgrid(ys, xs, indexing="ij")
        base = torch.stack((gx, gy), dim=-1).unsqueeze(0)
        grid = base + torch.tanh(self.flow(x)).permute(0, 2, 3, 1) * 0.3
        warped = f.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True)
        priors = torch.ops.et_vk.grid_priors(warped, 8, 0.5)
        return torch.cat([warped.flatten(), priors.flatten() * 0.01])


MODELS = {
    "v1_conv_zoo": (
        "ConvZoo: strided conv + BN + ReLU6 (conv_with_clamp), depthwise, dilated, grouped "
        "(3x1, stride (1, 2)), bias-free 1x1, ConvTranspose2d (stride 2, output_padding 1), "
        "residual add, global mean, linear; input [1, 3, 20, 24]",
        ConvZoo,
        [[1, 3, 20, 24], [1, 3, 20, 24]],
        None,
    ),
    "v6_conv_zoo_batch2": (
        "ConvZoo at batch 2: the partitioner keeps its convolutions on the CPU "
        "(aten::convolution.out) and delegates the batch norm it can no longer fold "
        "(aten._native_batch_norm_legit_no_training), ReLU6, the residual add, the linear; "
        "input [2, 3, 20, 24]",
        ConvZoo,
        [[2, 3, 20, 24], [2, 3, 20, 24]],
        None,
    ),
    "v2_conv1d_dynamic_length": (
        "Conv1d stack (k10 s5, grouped k3 s2 p1, dilated k3, GELU) with a dynamic input "
        "length Dim(64..400); example length 200; cases 200, 64, 333, 400",
        Conv1dStack,
        [[1, 1, 200], [1, 1, 64], [1, 1, 333], [1, 1, 400]],
        ({2: torch.export.Dim("length", min=64, max=400)},),
    ),
    "v3_mobilenet_v3_small": (
        "torchvision mobilenet_v3_small(width_mult=0.25, num_classes=10) (hardswish, "
        "squeeze-excitation with hardsigmoid, depthwise 5x5, conv_with_clamp); input "
        "[1, 3, 64, 64]",
        lambda: torchvision.models.mobilenet_v3_small(width_mult=0.25, num_classes=10),
        [[1, 3, 64, 64], [1, 3, 64, 64]],
        None,
    ),
    "v4_resnet_tiny": (
        "ResNet layout at widths 16 / 32 (7x7 stem, max pool 3 s2 p1, torchvision "
        "BasicBlocks with a strided downsample, adaptive average pool, fc); input "
        "[1, 3, 48, 40]",
        tiny_resnet,
        [[1, 3, 48, 40], [1, 3, 48, 40]],
        None,
    ),
    "v5_shufflenet_tiny": (
        "torchvision ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10) (max "
        "pool, channel split and shuffle, cat; its final mean runs on the CPU); input "
        "[1, 3, 64, 64]",
        lambda: torchvision.models.shufflenetv2.ShuffleNetV2(
            [2, 2, 2], [8, 16, 32, 64, 128], num_classes=10
        ),
        [[1, 3, 64, 64], [1, 3, 64, 64]],
        None,
    ),
    "v7_segmentation_tiny": (
        "SegTiny: conv + BN + ReLU encoder (stride 2 twice), bilinear x2 upsample by scale "
        "factor (align_corners False) + skip concat, nearest x2 nn.Upsample + skip concat, "
        "F.pad (1, 1, 1, 1) value 0.5 (constant_pad_nd), unpadded 3x3 conv, pixel_shuffle(2), "
        "1x1 head, bilinear resize by 0.75 (align_corners True); input [1, 3, 32, 40], output "
        "[1, 3, 48, 60]",
        SegTiny,
        [[1, 3, 32, 40], [1, 3, 32, 40]],
        None,
    ),
    "v9_swin_tiny": (
        "torchvision SwinTransformer(patch [4, 4], embed_dim 16, depths [2, 2], heads [2, 4], "
        "window [4, 4]): shifted windows (the attention masks built by slice_scatter / fmod "
        "on the CPU between delegates that return constant counters), relative position "
        "bias (index.Tensor), patch merging, layer norms, GELU; input [1, 3, 32, 32]",
        lambda: torchvision.models.swin_transformer.SwinTransformer(
            patch_size=[4, 4],
            embed_dim=16,
            depths=[2, 2],
            num_heads=[2, 4],
            window_size=[4, 4],
            num_classes=10,
        ),
        [[1, 3, 32, 32], [1, 3, 32, 32]],
        None,
    ),
    "i2_cpu_ops_mix": (
        "CpuOpsMix: InstanceNorm2d (the partitioner leaves aten._native_batch_norm_legit "
        "no_stats on the CPU), conv, then topk / sort / cumsum / max.dim / var / erf / sign / "
        "elu, which stay on the CPU between delegates; input [1, 3, 6, 6], output [1, 4, 5]",
        CpuOpsMix,
        [[1, 3, 6, 6], [1, 3, 6, 6]],
        None,
    ),
    "i3_mask_index_mix": (
        "MaskIndexMix: scaled_dot_product_attention with a boolean mask built from ones / "
        "triu / eye (CPU arange, clamp.Tensor, eq.Tensor, unsqueeze_copy, any), F.unfold "
        "(CPU index.Tensor), scatter of a value and gather; input [1, 2, 6, 8], output []",
        MaskIndexMix,
        [[1, 2, 6, 8], [1, 2, 6, 8]],
        None,
    ),
    "i5_video_pool_cpu": (
        "VideoPoolTiny: Conv3d, BatchNorm3d (CPU _native_batch_norm_legit_no_training) and "
        "relu on the CPU, the time mean, a delegated conv, AdaptiveAvgPool2d((3, 4)) over a 9 x 9 "
        "map (CPU _adaptive_avg_pool2d, overlapping bins), a linear head; input "
        "[1, 3, 4, 11, 11], output [1, 10]",
        VideoPoolTiny,
        [[1, 3, 4, 11, 11], [1, 3, 4, 11, 11]],
        None,
    ),
    "v10_dynamic_edges": (
        "DynamicEdges: Dim batch 1..4 and width 4..16 (example [2, 3, 8, 10]); replicate pad "
        "of the width to a multiple of 4, avg_pool2d(2, ceil_mode) and "
        "max_pool2d(3, 2, padding 1) of the padded map, max + clamp(4 avg, max=batch). Cases [2, 3, 8, 10], "
        "[1, 3, 8, 13], [3, 3, 8, 5], and [5, 3, 8, 6]: batch 5 passes its bound 4 while "
        "the elements fit the bound's, which ExecuTorch's resize accepts (its own delegate "
        "tests feed such inputs)",
        DynamicEdges,
        [[2, 3, 8, 10], [1, 3, 8, 13], [3, 3, 8, 5], [5, 3, 8, 6]],
        ({0: torch.export.Dim("batch", min=1, max=4), 3: torch.export.Dim("width", min=4, max=16)},),
    ),
    "v11_int64_graph": (
        "Int64Graph, exported with the compile option downcast_64_bit False (int64 tensors "
        "in the VkGraph): ids = clamp(long(4 |x|), 0, 9), embedding(10, 6), index_select by "
        "an int64 constant [5, 0, 3, 3], plus x; outputs y [2, 5, 4] and argmax(y, -1) "
        "(int64); input [2, 5]",
        Int64Graph,
        [[2, 5], [2, 5]],
        None,
    ),
    "v12_external_constants": (
        "tiny_resnet (as v4) exported with the compile option external_constants_max_data_bytes "
        "= 1 MiB: every weight lives in a .ptd file beside the program (ExecuTorch's "
        "program-data separation), looked up by key at load; input [1, 3, 32, 32]",
        tiny_resnet,
        [[1, 3, 32, 32], [1, 3, 32, 32]],
        None,
    ),
    "v8_warp_grid_priors": (
        "WarpTiny: conv flow + tanh added to the identity grid, F.grid_sample (bilinear, "
        "border, align_corners True), et_vk.grid_priors(stride 8, offset 0.5) on the warped "
        "map; output the flattened warp and 0.01 * priors; input [1, 3, 12, 10]",
        WarpTiny,
        [[1, 3, 12, 10], [1, 3, 12, 10]],
        None,
    ),
}


# Compile options beyond the defaults, by model.
OPTIONS = {
    "v11_int64_graph": {"downcast_64_bit": False},
    "v12_external_constants": {"external_constants_max_data_bytes": 1 << 20},
}


def export(out_dir, name):
    description, build, shapes, dynamic = MODELS[name]
    torch.manual_seed(28)
    model = randomize(build()).eval()
    example = (torch.randn(shapes[0]),)
    ep = torch.export.export(model, example, dynamic_shapes=dynamic)
    options = {"require_dynamic_shapes": True} if dynamic else {}
    options.update(OPTIONS.get(name, {}))
    lowered = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(options)])
    program = lowered.to_executorch()
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.pte"), "wb") as f:
        f.write(program.buffer)
    if "external_constants_max_data_bytes" in options:
        # The constants go to `.ptd` files beside the program.
        program.write_tensor_data_to_file(d)
    cases = []
    for i, shape in enumerate(shapes):
        x = torch.randn(shape) * (1.0 + 0.5 * i)
        with torch.no_grad():
            y = model(x)
        cases.append(
            {
                "inputs": [tensor_entry(d, f"case{i}_in0", x)],
                "outputs": [
                    tensor_entry(d, f"case{i}_out{k}", t)
                    for k, t in enumerate(y if isinstance(y, tuple) else (y,))
                ],
            }
        )
    # A fixture must depend on its input: outputs of a useful size that differ per case.
    outs = [torch.from_numpy(__import__("numpy").load(os.path.join(d, c["outputs"][0]["npy"]))) for c in cases]
    assert min(float(o.abs().max()) for o in outs) > 0.05, [float(o.abs().max()) for o in outs]
    if outs[0].shape == outs[1].shape:
        assert float((outs[0] - outs[1]).abs().max()) > 0.05 * float(outs[0].abs().max())
    write_io(d, name, description, cases, 1e-3, "eager PyTorch (fp32), eval mode", False)
    graph = lowered.exported_program().graph_module
    summary = {
        "name": name,
        "exporter": "executorch 1.5.1, torch 2.13.0, torchvision 0.28.0 (scripts/export_vision.py)",
        "top_level_ops": [str(n.target) for n in graph.graph.nodes if n.op == "call_function"],
    }
    with open(os.path.join(d, "export.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(name, "->", d)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    for name in sys.argv[2:] or MODELS:
        export(out, name)


if __name__ == "__main__":
    main()

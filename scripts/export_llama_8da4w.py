#!/usr/bin/env python3
"""Export a tiny ExecuTorch Llama (examples/models/llama, llama3 architecture, random weights)
through export_llm's own code with the Vulkan backend and 8da4w quantization (int8 dynamic
per-token activations, int4 weights in groups of 32: the configuration ExecuTorch documents
for Llama on Vulkan), with a KV cache (use_kv_cache + use_sdpa_with_kv_cache), in the fixture
layout of tests/fixtures/. The expected logits come from the same quantized module run eagerly,
calls of 5, 1, 1, 1 and 3 tokens at positions 0, 5, 6, 7, 8 (the export has a dynamic
token count, 1..15; the program is stateful: its cases must run in order on one loaded
method).

Needs executorch 1.5.1, torch 2.13.0, torchao 0.18.0 (see scripts/export_quantized_mlps.py).
    /tmp/etpy/bin/python scripts/export_llama_8da4w.py tests/fixtures [NAME ...]
"""

import json
import os
import shutil
import sys
import tempfile

import torch
from executorch.examples.models.llama.export_llama_lib import _export_llama
from executorch.examples.models.llama.llama_transformer import construct_transformer
from executorch.examples.models.llama.model_args import ModelArgs
from executorch.extension.llm.export.config.llm_config import LlmConfig, ModelType

from fixture_io import tensor_entry, write_io



# name -> (group size, 4-bit embedding quantization spec or None, force_fp16, params
# overrides, description)
VARIANTS = {
    "e6_llama3_tiny_kvcache_8da4w": (32, None, False, {}, "fp32 graph"),
    "e7_llama3_tiny_kvcache_8da4w_fp16_emb4": (
        64,
        "4,32",
        True,
        {},
        "force_fp16 graph (fp16 tensors on the GPU), 4-bit embedding table (group 32)",
    ),
    "e9_llama3_tiny_kvcache_8da4w_emb8": (
        32,
        "8,0",
        False,
        {},
        "8-bit per-row embedding table (embedding_quantize 8,0), which the partitioner leaves "
        "on the CPU (quantized_decomposed::embedding_byte before the delegate)",
    ),
    "e10_llama3_tiny_nokv_8da4w": (
        32,
        None,
        False,
        {"use_kv_cache": False},
        "no KV cache (use_kv_cache False): every call a whole sequence, the causal mask a bool "
        "tensor sliced in a delegate, four delegates with CPU ops between them",
    ),
    "e8_qwen_style_tiny_kvcache_8da4w": (
        32,
        None,
        False,
        {
            "n_heads": 4,
            "n_kv_heads": 2,
            "head_dim": 16,
            "use_qk_norm": True,
            "qk_norm_before_rope": True,
            "use_hf_rope": True,
            "partial_rotary_factor": 0.5,
            "attention_qkv_bias": True,
        },
        "Qwen-style attention: grouped-query (4 heads, 2 kv heads, head_dim 16), q / k "
        "RMSNorm before RoPE, HF rotate-half RoPE on half of each head, q / k / v biases",
    ),
    "e11_llama31_tiny_kvcache_4w_mqa": (
        32,
        None,
        False,
        {
            "qmode": "4w",
            "dim": 96,
            "n_heads": 3,
            "n_kv_heads": 1,
            "ffn_dim_multiplier": 1.3,
            "multiple_of": 64,
            "use_scaled_rope": True,
        },
        "int4 weight-only linears (export_llm qmode 4w: et_vk.linear_q4gsw), multi-query "
        "attention (3 heads, 1 kv head, head_dim 32), Llama 3.1 scaled RoPE, "
        "ffn_dim_multiplier 1.3 with multiple_of 64",
    ),
}
PARAMS = {
    "dim": 64,
    "n_layers": 2,
    "n_heads": 2,
    "n_kv_heads": 2,
    "vocab_size": 128,
    "multiple_of": 32,
    "norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "use_scaled_rope": False,
}
# Calls: a prefill of 5 tokens, three single-token decode steps, a second prefill of 3.
CALLS = [[5, 17, 99, 3, 64], [127], [0], [42], [7, 88, 21]]


def export(out, name, group, emb, fp16, overrides, what, max_seq=16, max_context=32):
    work = tempfile.mkdtemp()
    overrides = dict(overrides)
    kv = overrides.pop("use_kv_cache", True)
    qmode = overrides.pop("qmode", "8da4w")
    params = dict(PARAMS, **overrides)
    params_path = os.path.join(work, "params.json")
    with open(params_path, "w") as f:
        json.dump(params, f)
    # A random-weight checkpoint (export_llm's own default initialization leaves buffers
    # uninitialized): the transformer built on the CPU with the same arguments, seeded.
    torch.manual_seed(27)
    args = ModelArgs(max_seq_len=max_seq, max_context_len=max_context, **params)
    ckpt_path = os.path.join(work, "checkpoint.pth")
    torch.save(construct_transformer(args).state_dict(), ckpt_path)
    cfg = LlmConfig()
    cfg.base.checkpoint = ckpt_path
    cfg.base.model_class = ModelType.llama3
    cfg.base.params = params_path
    cfg.model.use_kv_cache = kv
    cfg.model.use_sdpa_with_kv_cache = kv
    cfg.export.max_seq_length = max_seq
    cfg.export.max_context_length = max_context
    cfg.export.output_dir = work
    cfg.export.output_name = os.path.join(work, "model.pte")
    cfg.quantization.qmode = qmode
    cfg.quantization.group_size = group
    cfg.quantization.embedding_quantize = emb
    cfg.backend.vulkan.enabled = True
    cfg.backend.vulkan.force_fp16 = fp16
    torch.manual_seed(27)
    builder = _export_llama(cfg)
    model = builder.model.eval()
    # Fresh caches for the eager reference (export traced with fake tensors).
    for buf_name, buf in model.named_buffers():
        if "cache" in buf_name:
            buf.zero_()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(work, "model.pte"), os.path.join(d, "model.pte"))
    cases = []
    pos = 0
    with torch.no_grad():
        # Without a KV cache every call is a whole sequence (no input_pos).
        for i, toks in enumerate(CALLS if kv else [[5, 17, 99, 3, 64], [127], list(range(15))]):
            tokens = torch.tensor([toks], dtype=torch.long)
            input_pos = torch.tensor([pos], dtype=torch.long)
            pos += len(toks)
            logits = model(tokens, {"input_pos": input_pos}) if kv else model(tokens)
            if isinstance(logits, tuple):
                logits = logits[0]
            inputs = [tensor_entry(d, f"case{i}_in0", tokens)]
            if kv:
                inputs.append(tensor_entry(d, f"case{i}_in1", input_pos))
            cases.append(
                {
                    "inputs": inputs,
                    "outputs": [tensor_entry(d, f"case{i}_out0", logits.reshape(1, -1))],
                }
            )
    if kv:
        calls = (
            f"use_kv_cache + use_sdpa_with_kv_cache, max_seq_length {max_seq}, "
            f"max_context_length {max_context}, "
            "dynamic token count (1..15). STATEFUL: cases in order: prefill 5 tokens at 0, "
            "decode at 5, 6, 7, prefill 3 at 8."
        )
    else:
        calls = (
            f"no KV cache, max_seq_length {max_seq}, dynamic token count (1..15); calls of 5, 1 and "
            "15 tokens, each a whole sequence."
        )
    description = (
        "ExecuTorch Llama (llama3 arch) via export_llm's code with backend.vulkan "
        f"and qmode {qmode} (group {group}), {what}: dim {params['dim']}, 2 layers, vocab 128, "
        f"params {json.dumps(params)}, random weights, " + calls
    )
    write_io(
        d,
        name,
        description,
        cases,
        # fp16 storage: activations rounded to fp16 between ops on the GPU.
        3e-2 if fp16 else 1e-3,
        "eager PyTorch (fp32) on the same quantized module, the same calls in order",
        qmode == "8da4w",
    )
    print(name, "->", d)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    only = sys.argv[2:]
    for name, (group, emb, fp16, overrides, what) in VARIANTS.items():
        if not only or name in only:
            export(out, name, group, emb, fp16, overrides, what)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Main demo: set-up, build, then token generation with a real ExecuTorch Llama export, LoRA
# fine-tuning on a frozen 4-bit base, and every exported fixture checked against PyTorch, on
# Vulkan (the GPU, or lavapipe when there is none). Usage: scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

cargo build --release -p etvk-cli -p etvk-ffi
etvk=target/release/etvk

echo "== Vulkan devices (ETVK_DEVICE=<index or name> picks one)"
$etvk devices
echo
echo "== token generation: a real ExecuTorch Llama export (llama3 architecture, 1 layer, dim 64,"
echo "   vocab 128, random weights) with its KV cache on the GPU: prefill, then greedy decode"
$etvk generate tests/fixtures/e5_llama3_tiny_kvcache_fp32/model.pte \
    --prompt-tokens 1,2,3,4 --max-new 16 --profile
echo
echo "== the same program, sampled (temperature 0.8, top-p 0.9, seed 7)"
$etvk generate tests/fixtures/e5_llama3_tiny_kvcache_fp32/model.pte \
    --prompt-tokens 1,2,3,4 --max-new 16 --temperature 0.8 --top-p 0.9 --seed 7 | tail -3
echo
echo "== 8da4w (int8 dynamic activations, int4 weights): export_llm's Llama, 2 layers, one"
echo "   prefill call for the 4 prompt tokens (dynamic token count), then greedy decode"
$etvk generate tests/fixtures/e6_llama3_tiny_kvcache_8da4w/model.pte \
    --prompt-tokens 1,2,3,4 --max-new 12 | tail -3
echo
echo "== LoRA fine-tuning on a frozen 4-bit base, on the GPU, vs PyTorch step by step"
$etvk finetune --reference tests/fixtures/lora_reference
echo
echo "== every case of the exported fixtures vs PyTorch's outputs"
fixtures=()
for f in a_linear_fp32 a3_linear_fp32_buffer_storage b_mlp_fp32 g1_mlp_dynamic_batch \
         c1_linear_q4gsw_gs32 d1_linear_qcs4w f1_linear_q4gsw_backward f3_linear_dW \
         e1_llama_block_fp32 e2_llama_block_q4gsw e4_llama_block_etvk_sdpa_fp32 \
         g3_llama_block_dynamic_seq e5_llama3_tiny_kvcache_fp32; do
    fixtures+=("tests/fixtures/$f")
done
$etvk check "${fixtures[@]}"

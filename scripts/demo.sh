#!/usr/bin/env bash
# Main demo: set-up, build, then run real ExecuTorch-exported programs on Vulkan (the GPU, or
# lavapipe when there is none) through the host runtime and the etvk plugin, checking every
# output against eager PyTorch's. Usage: scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

cargo build --release -p etvk-cli -p etvk-ffi
etvk=target/release/etvk

echo "== Vulkan devices"
$etvk devices
echo
echo "== a real exported program: layout and delegate graph"
$etvk inspect tests/fixtures/b_mlp_fp32/model.pte | head -40
echo
echo "== run it: etvk run (writes out/call{i}_out{j}.npy)"
out=$(mktemp -d)
$etvk run tests/fixtures/b_mlp_fp32/model.pte \
    --call tests/fixtures/b_mlp_fp32/case0_in0.npy --call tests/fixtures/b_mlp_fp32/case1_in0.npy \
    --out-dir "$out"
echo
echo "== every case of the exported fixtures vs PyTorch's outputs"
fixtures=()
for f in a_linear_fp32 a3_linear_fp32_buffer_storage b_mlp_fp32 g1_mlp_dynamic_batch \
         c1_linear_q4gsw_gs32 d1_linear_qcs4w f1_linear_q4gsw_backward f3_linear_dW \
         e1_llama_block_fp32 e2_llama_block_q4gsw e4_llama_block_etvk_sdpa_fp32 \
         g3_llama_block_dynamic_seq e5_llama3_tiny_kvcache_fp32; do
    if $etvk inspect "tests/fixtures/$f/model.pte" | grep -q "\[unsupported\]"; then
        echo "(skipping $f: uses ops this build does not implement yet)"
    else
        fixtures+=("tests/fixtures/$f")
    fi
done
$etvk check "${fixtures[@]}"
echo
echo "== LoRA fine-tuning on a frozen 4-bit base, on the GPU, vs PyTorch step by step"
$etvk finetune --reference tests/fixtures/lora_reference

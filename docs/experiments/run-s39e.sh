#!/usr/bin/env bash
# Session 39, fifth run: the KV-cache attention's value loop at long context. With the split
# keys sized per step (8042e05), run 2 (H100) took 84.6 us per whole execute at 600 new tokens
# on the dim-4096 local export (run-s38-sdpa.sh's header says how to make it). A chunk of 64
# keys walks its values in rounds of VK = 8 keys: 8 dependent rounds. Variants (sdpa.comp's
# VK and KG defines, swapped in by ETVK_SPIRV_OVERRIDE_DIR): more keys per round, and KG key
# groups that split a chunk's keys (KG times fewer rounds, the groups added at the row's
# end); and a wave of 528 workgroups for the split (ETVK_SDPA_WAVE) instead of 264.
# Each line: the tokens' checksum and the whole-execute line (GPU time per execute, us).
# Here:   bash docs/experiments/run-s39e.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s39e.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
# name  wave  defines
VARIANTS=(
    "built 264 -"
    "vk16 264 VK=16u"
    "vk32 264 VK=32u"
    "kg2 264 KG=2"
    "kg4 264 KG=4"
    "vk16_kg2 264 VK=16u,KG=2"
    "built_w528 528 -"
    "kg2_w528 528 KG=2"
    "kg4_w528 528 KG=4"
)
exp_prepare() {
    exp_carry_model /tmp/bigfx/llama_dim4096_ctx1024_8da4w
    local v name defs args
    for v in "${VARIANTS[@]}"; do
        read -r name _ defs <<<"$v"
        [ "$defs" = - ] && continue
        args=()
        for d in ${defs//,/ }; do args+=("-D$d"); done
        exp_comp "$name" sdpa_kv_f32 sdpa.comp -O -DDTYPE=float -DFUSED_KV=1 "${args[@]}"
        exp_comp "$name" sdpa_kv_rope_f32 sdpa.comp -O -DDTYPE=float -DFUSED_KV=1 -DROPE=1 "${args[@]}"
        exp_comp "$name" sdpa_kv_rope_hf_f32 sdpa.comp -O -DDTYPE=float -DFUSED_KV=1 -DROPE=2 "${args[@]}"
    done
}
exp_begin "$0" "$@"
m=.gl/models/llama_dim4096_ctx1024_8da4w
{
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for round in 1 2; do
        for v in "${VARIANTS[@]}"; do
            read -r name wave defs <<<"$v"
            ovr=
            [ "$defs" = - ] || ovr=.gl/ovr_$name
            for n in 12 600; do
                echo -n "$name $n: "
                ETVK_SDPA_WAVE=$wave ETVK_SPIRV_OVERRIDE_DIR=$ovr exp_whole $m/model.pte $n
            done
        done
    done
    echo "== checks"
    for v in "${VARIANTS[@]}"; do
        read -r name wave defs <<<"$v"
        ovr=
        [ "$defs" = - ] || ovr=.gl/ovr_$name
        echo -n "$name: "
        ETVK_SDPA_WAVE=$wave ETVK_SPIRV_OVERRIDE_DIR=$ovr timeout 60 .gl/bin/etvk check $m 2>&1 | tail -1
    done
} 2>&1 | tee "$OUT/s39e.txt"

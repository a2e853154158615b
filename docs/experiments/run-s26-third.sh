#!/usr/bin/env bash
# Session 26, run 3: `restrict` on every read-only storage buffer (SPIR-V Restrict +
# NonWritable: the driver may read them through the non-coherent read-only path). No shader
# declared it. Compiled from a copy of shaders/ with `readonly buffer` -> `readonly restrict
# buffer` everywhere, with each variant's manifest defines:
#   ovr_rs: the memory-bound kernels timed here AND bench_read (the ceiling's own kernel);
#   ovr_rsk: the same kernels, bench_read as built (so the ceiling column stays comparable);
#   ovr_rnt: ovr_rsk's GEMVs with Nontemporal weight loads.
# Interleaved with the built binary (no override), M = 1 GEMV / backward, M = 8 / 32 int8
# forward, portable M = 512, the ceiling itself (bench read).
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s26-third.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s26-third.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    rm -rf .gl/ovr_rs .gl/ovr_rsk
    EXP_SHADERS=$(mktemp -d)
    cp shaders/* "$EXP_SHADERS/"
    sed -i 's/readonly buffer/readonly restrict buffer/' "$EXP_SHADERS"/*.comp "$EXP_SHADERS"/*.glsl
    for d in rs rsk; do
        exp_comp $d q4_linear_gemv_half q4_linear_gemv_half.comp -O
        exp_comp $d q4_linear_gemv_half_sliced q4_linear_gemv_half.comp -O -DSLICED=1
        exp_comp $d q4_linear_bwd_wide_f16t_m1_c8 q4_linear_bwd_wide.comp \
            -DMT=1 -DUR=2 -DPREFETCH=2 -DDEC=1 -DNPF=64 -DCW=8
        for cw in 8 16; do
            exp_comp $d q4_linear_bwd_wide_f16_m1_c$cw q4_linear_bwd_wide.comp \
                -DMT=1 -DUR=2 -DPREFETCH=1 -DDEC=1 -DCW=$cw
        done
        exp_comp $d q4_mma_limbs q4_mma_limbs.comp -O
        exp_comp $d q4_linear_reduce q4_linear_reduce.comp -O
        exp_comp $d q4_linear_mma_f1 q4_linear_mma.comp -DMF=1 -DSTEP=4
        exp_comp $d q4_linear_mma_f4 q4_linear_mma.comp -O -DMF=4 -DSTEP=2
        exp_comp $d q4_linear_tiled_fwd_t128 q4_linear_tiled.comp -O -DDBUF=1 -DBWD=0 -DTILE=128
    done
    exp_comp rs bench_read bench_read.comp -O
    # ovr_rnt: the restrict GEMVs with their weight loads marked Nontemporal (no glslang
    # keyword here: the SPIR-V is patched).
    rm -rf .gl/ovr_rnt; mkdir -p .gl/ovr_rnt
    for v in q4_linear_gemv_half q4_linear_gemv_half_sliced; do
        spirv-dis .gl/ovr_rsk/$v.spv | sed -E 's/(OpLoad %v2uint %[0-9]+)$/\1 Nontemporal/' |
            spirv-as --target-env vulkan1.2 -o .gl/ovr_rnt/$v.spv -
        spirv-val --target-env vulkan1.2 .gl/ovr_rnt/$v.spv
    done
    exp_comp rs bench_read_words bench_read.comp -O -DWORDS=1
    exp_comp rs bench_read_pairs bench_read.comp -O -DPAIRS=1
}
exp_begin "$0" "$@"
b() { ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$1 exp_row .gl/bin/etvk bench "${@:2}"; }
{
    for v in built rs built rs; do
        echo "== read, $v"
        ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$v .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 |
            grep -E 'ceiling|u32|copy|GB/s' | head -8
    done
    for c in "linear_q4gsw 1 8192 8192" "linear_q4gsw 1 28672 8192" "linear_q4gsw 1 8192 28672" \
             "linear_qcs4w 1 8192 8192" "linear_q4gsw_backward 1 8192 8192" \
             "linear_q4gsw_backward 1 28672 8192" "linear_q4gsw 8 8192 8192" \
             "linear_q4gsw 32 8192 8192"; do
        set -- $c
        vs="built rsk rs built rsk rs"
        [ "$2" = 1 ] && [ "$1" != linear_q4gsw_backward ] && vs="built rsk rnt rs built rsk rnt rs"
        for v in $vs; do
            echo -n "$v $1 M=$2 N=$3 K=$4: "; b $v "$1" --m "$2" --n "$3" --k "$4"
        done
    done
    for v in built rsk built rsk; do
        echo -n "portable $v M=512 8192^2: "; ETVK_Q4_MMA=0 b $v linear_q4gsw --m 512 --n 8192 --k 8192
    done
} 2>&1 | tee "$OUT/s26-third.txt"

#!/usr/bin/env bash
# Session 34, run 2 (the first H200 lent since session 29): session 32-33's work timed on an
# H200. The FMA GEMV defaults (M = 4 two words per lane at K <= 4096, M = 8 at K <= 4096)
# against `ETVK_Q4_FMA=0`, interleaved twice; whole-execute GPU time and decode wall time of
# the tiny Llama exports with session 33's graph-level changes against its starting behaviour
# (`ETVK_VIEW_ALIAS=0 ETVK_BARRIERS=all ETVK_FUSE=0 ETVK_FENCE_SPIN_US=0`), and this session's
# incremental resize passes against full ones (`ETVK_RESIZE=full`), with host time per phase.
# Here:   scripts/device-bench.sh prepare && bash docs/experiments/run-s34-first.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s34-first.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_begin "$0" "$@"
conf() {
    case $1 in
        old) echo "ETVK_VIEW_ALIAS=0 ETVK_BARRIERS=all ETVK_FUSE=0 ETVK_FENCE_SPIN_US=0 ETVK_RESIZE=full" ;;
        full) echo "ETVK_RESIZE=full" ;;
        new) echo "ETVK_X=1" ;;
    esac
}
{
    .gl/bin/etvk bench read --ceiling-mib 1024 2>&1 | grep -E 'ceiling' || true
    echo "== FMA GEMV defaults against ETVK_Q4_FMA=0 (SKIP_FMA=1: skipped)"
    [ "${SKIP_FMA:-}" = 1 ] || for c in "4 4096 4096" "4 14336 4096" "4 8192 8192" "8 4096 4096" "8 14336 4096" "8 2048 2048"; do
        set -- $c
        for v in old new old new; do
            echo -n "$v q4gsw M=$1 N=$2 K=$3: "
            if [ $v = old ]; then
                ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m $1 --n "$2" --k "$3"
            else
                exp_row .gl/bin/etvk bench linear_q4gsw --m $1 --n "$2" --k "$3"
            fi
        done
    done
    echo "== M = 8 without int8 tensor cores (ETVK_Q4_MMA=0): FMA (default) against ETVK_Q4_FMA=0"
    [ "${SKIP_FMA:-}" = 1 ] || for c in "8 8192 8192" "8 28672 8192" "8 8192 16384"; do
        set -- $c
        for v in old new; do
            echo -n "$v q4gsw M=$1 N=$2 K=$3: "
            if [ $v = old ]; then
                ETVK_Q4_MMA=0 ETVK_Q4_FMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m $1 --n "$2" --k "$3"
            else
                ETVK_Q4_MMA=0 exp_row .gl/bin/etvk bench linear_q4gsw --m $1 --n "$2" --k "$3"
            fi
        done
    done
    echo "== whole executes and decode wall time, session 33's start (old), full resize passes (full), now (new) (SKIP_GRAPH=1: skipped)"
    [ "${SKIP_GRAPH:-}" = 1 ] || for round in 1 2; do
        for f in e5_llama3_tiny_kvcache_fp32 e6_llama3_tiny_kvcache_8da4w \
            e8_qwen_style_tiny_kvcache_8da4w e11_llama31_tiny_kvcache_4w_mqa; do
            for c in old full new; do
                echo -n "$c $f: "
                env $(conf $c) ETVK_HOST_TIMING=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 2>&1 | grep -E '^decode|host timing' | tr '\n' ' '
                env $(conf $c) ETVK_PROFILE_WHOLE=1 .gl/bin/etvk generate tests/fixtures/$f/model.pte \
                    --prompt-tokens 1,2,3,4 --max-new 40 --profile 2>&1 | grep -E 'whole' | tr '\n' ' '
                echo
            done
        done
    done
    [ "${SKIP_GRAPH:-}" = 1 ] || for f in v9_swin_tiny v3_mobilenet_v3_small; do
        d=tests/fixtures/$f
        ins=$(ls $d/case0_in*.npy | sort | tr '\n' ',' | sed 's/,$//')
        calls=()
        for i in $(seq 20); do calls+=(--call "$ins"); done
        for c in old new; do
            echo -n "$c $f: "
            env $(conf $c) ETVK_PROFILE_WHOLE=1 .gl/bin/etvk run $d/model.pte "${calls[@]}" --profile 2>&1 |
                grep -E 'whole' | tr '\n' ' '
            echo
        done
    done
} 2>&1 | tee "$OUT/s34-first.txt"

#!/usr/bin/env bash
# Session 45, first run: the half GEMV's `_tickets` form (blocks past the first two rounds
# handed out by a counter, opt-in by ETVK_Q4_HALF_TICKETS=1) against the built stride walk
# at M = 1, interleaved rounds, on rows where workgroups walk more than two blocks; its GPU
# test; then each workgroup's timeline (TIMELINE = 2 by override, ETVK_SHADER_CLOCK=1: when
# it started, made its limbs, summed each block, ended; docs/experiments/timeline.py) for
# both walks; then `etvk bench alu` (the f16 / int8 "A built from registers" probes, untimed).
# Session 46 added XFIRST (x asked for before the first batch; override) to the A/B and the
# timelines; session 47 a timeline of a launch after the replays beside the first launch's,
# and the same-size plain read by launches of persistent size.
# Here:   rm -rf .gl/bin/* .gl/ovr_* && bash scripts/device-bench.sh prepare && bash docs/experiments/run-s45a.sh prepare
# There:  (device tool, carry [".gl"])  bash .gl/run-s45a.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/experiment.sh
if [ -f "$dir/experiment.sh" ]; then . "$dir/experiment.sh"; else . "$dir/../../scripts/experiment.sh"; fi
exp_prepare() {
    exp_pack_bins
    exp_comp tl q4_linear_gemv_half q4_linear_gemv_half.comp -O -DTIMELINE=2
    exp_comp tl q4_linear_gemv_half_tickets q4_linear_gemv_half.comp -O -DTIMELINE=2 -DTICKETS=1
    # Session 46: x asked for before the first batch (XFIRST; the timeline showed x arriving
    # 2.7 us after the start, behind the first batch's 5.4 MB).
    exp_comp xf q4_linear_gemv_half q4_linear_gemv_half.comp -O -DXFIRST=1
    exp_comp tlxf q4_linear_gemv_half q4_linear_gemv_half.comp -O -DTIMELINE=2 -DXFIRST=1
    cp docs/experiments/timeline.py .gl/
}
exp_begin "$0" "$@"
{
    exp_header
    # SHORT=1 (a short device budget): two shapes, fewer launch sizes, no third round.
    shapes="8192 8192|28672 8192|14336 4096|32768 2048"
    [ -n "${SHORT:-}" ] && shapes="8192 8192|28672 8192"
    ab() {
        IFS='|' read -ra list <<<"$shapes"
        for nk in "${list[@]}"; do
            read -r n k <<<"$nk"
            echo -n "stride  N=$n K=$k: "; exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "tickets N=$n K=$k: "; ETVK_Q4_HALF_TICKETS=1 exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
            echo -n "xfirst  N=$n K=$k: "; ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_xf exp_row2g linear_q4gsw --m 1 --n "$n" --k "$k"
        done
    }
    timelines() {
        for nk in "8192 8192" "28672 8192"; do
            read -r n k <<<"$nk"
            for walk in stride tickets xfirst; do
                t=0; [ $walk = tickets ] && t=1
                o=.gl/ovr_tl; [ $walk = xfirst ] && o=.gl/ovr_tlxf
                p="$OUT/tl-$walk-$n-$k-$1"
                ETVK_Q4_HALF_TICKETS=$t ETVK_SHADER_CLOCK=1 ETVK_SELF_CHECKS=0 ETVK_SPIRV_OVERRIDE_DIR=$o \
                    ETVK_BENCH_DUMP="$p" timeout 120 .gl/bin/etvk bench linear_q4gsw --m 1 --n "$n" --k "$k" \
                    --iters 3 --ceiling-mib 64 2>&1 | grep -oE "kernels [a-z0-9_ +]*" | head -1 || true
                rm -f "$p.w.u8" "$p.s.f32" "$p.x.f32"
                echo "-- $walk N=$n K=$k round $1, first launch"
                python3 .gl/timeline.py "$p.out.f32" || echo "(no python3: read $p.out.f32 here)"
                echo "-- $walk N=$n K=$k round $1, a launch after the timed replays"
                python3 .gl/timeline.py "$p.warm.out.f32" || echo "(no python3: read $p.warm.out.f32 here)"
            done
        done
    }
    # Session 47: the plain read of the op's bytes by launches of persistent size (528 x 256 =
    # the half GEMV's 264 x 512 invocations; twice, four times that) beside the default
    # read's launch of one element per invocation: is the 0.70 that read reaches its launch
    # shape's, and what a persistent walk of these bytes could reach.
    same_reads() {
        for nk in "8192 8192" "28672 8192"; do
            read -r n k <<<"$nk"
            groups="264 528 1056 2112"
            [ -n "${SHORT:-}" ] && groups="528 2112"
            for g in $groups; do
                echo -n "N=$n K=$k: "
                ETVK_SAME_READ_GROUPS=$g timeout 120 .gl/bin/etvk bench linear_q4gsw --m 1 --n "$n" \
                    --k "$k" --iters 5 --ceiling-mib 2048 2>&1 | grep -E "^same-size" | tr '\n' ' ' || true
                echo
            done
        done
    }
    # Most telling rows first (the device time left may end the run).
    echo "== round 1"; ab
    echo "== same-size reads by launch size"; same_reads
    echo "== timelines (first launch of a bench; wrong results on purpose)"; timelines 1
    echo "== round 2"; ab
    echo "== GPU tests (ticketed form forced; then every half GEMV test)"
    q4_tests half_gemv
    if [ -z "${SHORT:-}" ]; then
    echo "== qcs4w 8192^2, 256 workgroups"
    echo -n "stride  qcs4w: "; exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
    echo -n "tickets qcs4w: "; ETVK_Q4_HALF_TICKETS=1 exp_row2g linear_qcs4w --m 1 --n 8192 --k 8192
    echo -n "stride  wgs256: "; ETVK_Q4_WIDE_WGS=256 exp_row2g linear_q4gsw --m 1 --n 8192 --k 8192
    echo -n "tickets wgs256: "; ETVK_Q4_HALF_TICKETS=1 ETVK_Q4_WIDE_WGS=256 exp_row2g linear_q4gsw --m 1 --n 8192 --k 8192
    echo "== round 3"; ab
    echo "== timelines 2"; timelines 2
    fi
    echo "== bench alu"
    timeout 120 .gl/bin/etvk bench alu 2>&1 | tail -30 || true
} 2>&1 | tee "$OUT/s45a.txt"

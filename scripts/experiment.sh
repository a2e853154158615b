# Helpers of the experiment scripts in docs/experiments/ (run-s24-*.sh and later), sourced
# by them here (from docs/experiments/) and on the H200 (from .gl/, where
# `scripts/device-bench.sh prepare` copies this file). Each such script: `prepare` here
# compiles its shader variants into override directories and copies itself to .gl/; run
# there (device tool, carry [".gl"]) it times them against the built kernels.

# Where exp_comp reads the shader sources: shaders/, or exp_patched's copy.
EXP_SHADERS=shaders

# Sets EXP_SELF (the script's absolute path) and moves to the repository root, from a script
# in docs/experiments/ or in .gl/. Usage: exp_setup "$0"
exp_setup() {
    local dir
    dir=$(cd "$(dirname "$1")" && pwd)
    EXP_SELF="$dir/$(basename "$1")"
    case "$(basename "$dir")" in .gl) cd "$dir/.." ;; *) cd "$dir/../.." ;; esac
}

# The start of an experiment script after it sourced this file: exp_setup, then with
# `prepare` as the first argument the script's own exp_prepare (when it defines one) and a
# copy of the script in .gl/, and exit; otherwise (there) .gl/device-env.sh is sourced.
# Usage: exp_begin "$0" "$@"
exp_begin() {
    exp_setup "$1"
    if [ "${2:-}" = "prepare" ]; then
        if declare -F exp_prepare >/dev/null; then exp_prepare; fi
        cp "$EXP_SELF" .gl/
        exit 0
    fi
    # shellcheck source=scripts/device-env.sh
    . .gl/device-env.sh
}

# Builds commit REV's etvk in a worktree (/tmp/etvk-old) and copies it to .gl/bin_old/, the
# "before" binary of an A/B run. Usage: exp_old_binary REV
exp_old_binary() {
    local old=/tmp/etvk-old
    [ -d "$old" ] || git worktree add -f "$old" "$1"
    (cd "$old" && git checkout -q "$1" && cargo build --release -p etvk-cli)
    mkdir -p .gl/bin_old
    cp "$old/target/release/etvk" .gl/bin_old/
}

# Builds the etvk-tests test binary TEST (e.g. ops) and copies it to .gl/bin/ (replacing an
# older one), to run there as .gl/bin/TEST-*. Usage: exp_test_binary TEST
exp_test_binary() {
    cargo test --release -p etvk-tests --test "$1" --no-run
    rm -f .gl/bin/"$1"-*
    cp "$(ls -t target/release/deps/"$1"-* | grep -v '\.d$' | head -1)" .gl/bin/
}

# Replaces what .gl/ carries with the release etvk and its plugin (stripped, gzipped: the
# working tree and .gl must stay under the 64 MiB carry), plus the current helper scripts,
# and no validation layer (the GPU-test scripts add it back). Usage: exp_carry_bins
exp_carry_bins() {
    rm -rf .gl/bin/* .gl/ovr_* .gl/models .gl/run-s3*.sh .gl/vulkan-validationlayers_*.deb
    mkdir -p .gl/bin
    cp target/release/etvk target/release/libetvk.so .gl/bin/
    strip .gl/bin/*
    gzip -9 -f .gl/bin/*
    cp scripts/device-env.sh scripts/experiment.sh .gl/
}

# exp_carry_bins plus the program directory SRC as .gl/models/NAME (a local export too large
# to commit). Usage: exp_carry_model SRC
exp_carry_model() {
    exp_carry_bins
    mkdir -p .gl/models
    cp -r "$1" .gl/models/
}

# There: one generation of N new tokens after a 4-token prompt on one line: a checksum of the
# tokens and the GPU time per whole execute (ETVK_PROFILE_WHOLE). Usage: exp_whole PTE N
exp_whole() {
    ETVK_PROFILE_WHOLE=1 timeout 120 .gl/bin/etvk generate "$1" --prompt-tokens 1,2,3,4 \
        --max-new "$2" --profile 2>&1 | grep -E 'whole|^generated' | while IFS= read -r line; do
            case $line in
                generated:*) echo -n "tokens $(echo "$line" | md5sum | cut -c1-8) " ;;
                *) echo -n "$line " ;;
            esac
        done
    echo
}

# There: one bench of BIN on one line (its f64 check and sampled error, the kernels that
# ran, the table row, any error): EXP_ITERS replays (10) against an EXP_CEILING_MIB read
# ceiling (512). Usage: exp_line BIN OP --m M --n N --k K
exp_line() {
    local bin=$1
    shift
    timeout 120 "$bin" bench "$@" --iters "${EXP_ITERS:-10}" --ceiling-mib "${EXP_CEILING_MIB:-512}" 2>&1 |
        grep -E 'check|^\| linear|rror' | sed 's/.*check/check/' | tr '\n' ' ' || true
    echo
}

# There: exp_line of the carried etvk at 30 replays against a 2-GiB ceiling (each row's
# fraction against the same read as the header's; not exp_row below, which takes the
# whole command). Usage: exp_row2g OP --m M --n N --k K
exp_row2g() {
    EXP_ITERS=30 EXP_CEILING_MIB=2048 exp_line .gl/bin/etvk "$@"
}

# There: the card and driver, and the 2-GiB read and copy ceilings, as a run's first lines.
exp_header() {
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    .gl/bin/etvk bench read --ceiling-mib 2048 2>&1 | grep -iE "read|copy" | head -4
}

# Here, after `scripts/device-bench.sh prepare` (the release binaries, the q4_linear test
# binary and the loader / validation .debs in .gl/): adds the ops test binary and strips and
# gzips .gl/bin (the carry stays under 64 MiB). Usage: exp_carry_tests
exp_carry_tests() {
    exp_test_binary ops
    exp_pack_bins
}

# Here, after `scripts/device-bench.sh prepare`: strips and gzips .gl/bin again (what an
# exp_prepare that adds nothing to the binaries does; the carry stays under 64 MiB).
exp_pack_bins() {
    rm -f .gl/bin/*.gz
    strip .gl/bin/* || true
    gzip -9 -f .gl/bin/*
}

# There: exp_line of the carried etvk's linear_q4gsw. Usage: exp_q4_row --m M --n N --k K
exp_q4_row() {
    exp_line .gl/bin/etvk linear_q4gsw "$@"
}

# Variants of the cooperative_matrix2 forward, one string each: "NAME MODE TILE DEFS" with
# MODE the ETVK_Q4_MMA value (cm2 or cm2_f16), TILE its ETVK_Q4_CM2_TILE (M x N) and DEFS
# shaders/q4_linear_cm2.comp's defines, comma-separated. exp_cm2_build compiles each into
# .gl/ovr_NAME/ (tools/glsl2spv; Debian's glslc preprocesses); there exp_cm2_table times the
# default kernel and each variant at M = 512, 8192^2 and M = 2048, 28672 x 8192, a line each.
# Usage: exp_cm2_build "${VARIANTS[@]}" / exp_cm2_table "${VARIANTS[@]}"
exp_cm2_build() {
    local v name mode tile defs args variant d
    for v in "$@"; do
        read -r name mode tile defs <<<"$v"
        args=()
        for d in ${defs//,/ }; do args+=("-D$d"); done
        variant=q4_linear_cm2
        [ "$mode" = cm2_f16 ] && variant=q4_linear_cm2_f16
        mkdir -p .gl/ovr_"$name"
        glslc -E "${args[@]}" -I shaders shaders/q4_linear_cm2.comp |
            tools/glsl2spv/target/release/glsl2spv .gl/ovr_"$name"/$variant.spv
    done
}
exp_cm2_table() {
    local shape v name mode tile
    for shape in "512 8192 8192" "2048 28672 8192"; do
        set -- $shape "$@"
        echo "== M = $1, N x K = $2 x $3"
        echo -n "built (ETVK_Q4_MMA=on): "
        ETVK_Q4_MMA=on exp_q4_row --m $1 --n $2 --k $3
        local m=$1 n=$2 k=$3
        shift 3
        for v in "$@"; do
            read -r name mode tile _ <<<"$v"
            echo -n "$name: "
            ETVK_Q4_MMA=$mode ETVK_SPIRV_OVERRIDE_DIR=.gl/ovr_$name ETVK_Q4_CM2_TILE=$tile \
                exp_q4_row --m $m --n $n --k $k
        done
    done
}

# Compiles SRC into .gl/ovr_DIR/VARIANT.spv (a directory for ETVK_SPIRV_OVERRIDE_DIR) with
# the glslc flags of crates/shaders/build.rs; FLAGS: -O (the manifest's default; left out
# for an opt=0 variant) and -D... Usage: exp_comp DIR VARIANT SRC [FLAGS...]
exp_comp() {
    local d=.gl/ovr_$1 v=$2 src=$3
    shift 3
    mkdir -p "$d"
    glslc --target-env=vulkan1.2 -fshader-stage=compute -I "$EXP_SHADERS" "$@" \
        -o "$d/$v.spv" "$EXP_SHADERS/$src"
}

# Compiles from a copy of commit REV's shaders/ (the "before" side of an A/B by override).
# Usage: exp_shaders_at REV
exp_shaders_at() {
    EXP_SHADERS=$(mktemp -d)
    git archive "$1" shaders | tar -x -C "$EXP_SHADERS" --strip-components=1
}

# The 8da4w GEMVs that quantize x themselves at M = 1 (the half GEMV's `_dq`,
# `_tickets_dq`, `_early_dq`, `_sliced_dq`) and M = 2..8 (`_dp4_persist_dq`), from
# EXP_SHADERS into .gl/ovr_DIR. Usage: exp_comp_dq_gemvs DIR
exp_comp_dq_gemvs() {
    exp_comp "$1" q4_linear_gemv_half_dq q4_linear_gemv_half.comp -O -DDQ=1
    exp_comp "$1" q4_linear_gemv_half_tickets_dq q4_linear_gemv_half.comp -O -DTICKETS=1 -DDQ=1
    exp_comp "$1" q4_linear_gemv_half_early_dq q4_linear_gemv_half.comp -O -DEARLY=1 -DDQ=1
    exp_comp "$1" q4_linear_gemv_half_sliced_dq q4_linear_gemv_half.comp -O -DSLICED=1 -DDQ=1
    exp_comp "$1" q4_linear_gemv_wide_dp4_persist_dq q4_linear_gemv_wide.comp -O -DDP4=1 \
        -DPERSIST=1 -DRW=8 -DDQ=1
}

# There, after exp_carry_tests: the q4_linear tests, then the ops binary's tests named by
# FILTERS, only what is not a passing test's line. Usage: exp_device_tests FILTER...
exp_device_tests() {
    echo "== q4_linear tests"
    for t in .gl/bin/q4_linear-*; do
        timeout 200 "$t" --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | tail -12 || true
    done
    echo "== ops tests: $*"
    for t in .gl/bin/ops-*; do
        timeout 200 "$t" --test-threads=2 "$@" 2>&1 | grep -v ' \.\.\. ok$' | tail -12 || true
    done
}

# Compiles from a copy of shaders/ (the working tree's, or commit REV's) with DIFF applied:
# a diff of shaders/ kept in docs/experiments/, the switch of an experiment whose source was
# not kept. Usage: exp_patched DIFF [REV]
exp_patched() {
    local diff
    diff=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    EXP_SHADERS=$(mktemp -d)
    if [ -n "${2:-}" ]; then
        git archive "$2" shaders | tar -x -C "$EXP_SHADERS" --strip-components=1
    else
        cp -r shaders/. "$EXP_SHADERS/"
    fi
    (cd "$EXP_SHADERS" && git apply -p2 "$diff")
}

# One bench on one line (there): the kernels that ran and the table row, with any check
# mismatch, error or failed self-check. Usage: exp_row ETVK_BENCH_COMMAND...
exp_row() {
    "$@" --iters 20 --ceiling-mib 1024 2>&1 |
        grep -E '^\| linear|kernels|MISMATCH|rror|self-check|failed' |
        sed 's/.*kernels/kernels/' | tr '\n' ' ' || true
    echo
}

# One shape of an A/B run: .gl/bin_old (exp_old_binary) and .gl/bin interleaved twice, a
# line each. Usage: exp_ab OP M N K
exp_ab() {
    local v
    for v in bin_old bin bin_old bin; do
        echo -n "$v $1 M=$2 N=$3 K=$4: "
        exp_row ".gl/$v/etvk" bench "$1" --m "$2" --n "$3" --k "$4"
    done
}

# Here: the built etvk and the q4_linear test binary into .gl/bin/, OLD (an etvk binary built
# from an earlier commit) into .gl/bin_old/, and the validation layer the tests need.
# Usage: exp_carry_ab OLD
exp_carry_ab() {
    exp_carry_bins
    cargo test --release -p etvk-runtime --test q4_linear --no-run
    cp "$(ls -t target/release/deps/q4_linear-* | grep -v '\.d$' | head -1)" .gl/bin/q4_linear
    mkdir -p .gl/bin_old
    cp "$1" .gl/bin_old/etvk
    strip .gl/bin/q4_linear .gl/bin_old/etvk
    gzip -9 -f .gl/bin/q4_linear .gl/bin_old/etvk
    cp target/keep/vulkan-validationlayers_*.deb .gl/
}

# There: the backward at M = 8 and 4 on five shapes, .gl/bin_old against .gl/bin, two
# interleaved rounds; the forward at the same M; the q4_linear tests. Usage: exp_staged_ab
exp_staged_ab() {
    local round shape n k m b
    gzip -d -f .gl/bin_old/etvk.gz && chmod +x .gl/bin_old/etvk
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    for round in 1 2; do
        for shape in "8192 28672" "8192 8192" "28672 8192" "4096 14336" "14336 4096"; do
            read -r n k <<<"$shape"
            for m in 8 4; do
                for b in old new; do
                    echo -n "r$round $b M=$m N=$n K=$k: "
                    local bin=.gl/bin/etvk
                    [ "$b" = old ] && bin=.gl/bin_old/etvk
                    EXP_ITERS=20 exp_line "$bin" linear_q4gsw_backward --m $m --n $n --k $k
                done
            done
        done
    done
    echo "== forward M = 8 / 4"
    for shape in "8192 28672" "8192 8192" "28672 8192"; do
        read -r n k <<<"$shape"
        for m in 8 4; do echo -n "fwd M=$m N=$n K=$k: "; exp_q4_row --m $m --n $n --k $k; done
    done
    echo "== q4_linear tests"
    timeout 300 .gl/bin/q4_linear --test-threads=2 2>&1 | grep -v ' \.\.\. ok$' | tail -30 || true
}

# Here: only BIN (an etvk binary, e.g. an earlier commit's) as .gl/bin/etvk, with the helper
# scripts; no plugin, overrides or validation layer. Usage: exp_carry_binary BIN
exp_carry_binary() {
    rm -rf .gl/bin .gl/bin_old .gl/ovr_* .gl/run-s3*.sh .gl/vulkan-validationlayers_*.deb
    mkdir -p .gl/bin
    cp "$1" .gl/bin/etvk
    strip .gl/bin/etvk
    gzip -9 -f .gl/bin/etvk
    cp scripts/device-env.sh scripts/experiment.sh .gl/
}

# The ops test binary that `exp_carry_tests` carried, run there on FILTERs: only what is not a
# passing test's line. Usage: exp_ops_tests FILTER...
exp_ops_tests() {
    local t
    for t in .gl/bin/ops-*; do
        timeout 200 "$t" --test-threads=2 "$@" 2>&1 | grep -v ' \.\.\. ok$' | tail -20 || true
    done
}

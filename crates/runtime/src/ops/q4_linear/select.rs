//! Kernel selection and launch geometry of the 4-bit linears: which kernel serves which M
//! (and where the tensor cores, their self-checks, forced choices and thresholds allow it),
//! split-K slices, workgroup targets and the GEMV / wide-backward shapes. Pure functions of
//! the op's geometry and the device's capabilities; the module above builds the nodes.

use super::*;

/// Output tile of `q4_linear_tiled.comp` (its `TILE` define).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tile {
    /// 32 x 128 (`TILE=32`), for 8 < M <= 32.
    T32x128,
    /// 64 x 64.
    T64,
    /// 128 x 128 (needs [`T128_SHARED_BYTES`] of shared memory).
    T128,
    /// 128 x 128 through VK_NV_cooperative_matrix2 (`q4_linear_cm2`, [`cm2_forward`]): the
    /// f16 forward's inputs, exact codes and two MMAs per step.
    Cm2,
    /// As [`Tile::Cm2`] with fp16 weights and one MMA per step (`q4_linear_cm2_f16`).
    Cm2F16,
}

impl Tile {
    /// (rows of M, output columns) per workgroup.
    pub(super) fn shape(self) -> (usize, usize) {
        match self {
            Tile::T32x128 => (32, 128),
            Tile::T64 => (64, 64),
            Tile::T128 => (128, 128),
            Tile::Cm2 | Tile::Cm2F16 => cm2_tile(),
        }
    }

    /// Workgroups a split-K launch aims for: one full wave of resident workgroups on a large
    /// GPU, so that no compute unit runs a single workgroup's latency-bound reduction while
    /// the others idle. Device-independent on purpose (Vulkan does not report the number of
    /// compute units, and the choice must be the same at build and resize time): 4 resident
    /// workgroups on each of an H200's 132 SMs for the tiles with 16 accumulators per
    /// invocation, 2 for the 128 x 128 tile (64 accumulators, 4x the registers). On a
    /// smaller GPU the same split is more than one wave, which costs only the partial sums'
    /// traffic (at most 22 MiB, see [`split_k`]).
    pub(super) fn split_target(self) -> usize {
        match self {
            Tile::T32x128 | Tile::T64 => 528,
            Tile::T128 | Tile::Cm2 | Tile::Cm2F16 => 264,
        }
    }

    /// Tiles of an M x `cols` output.
    pub(super) fn count(self, m: usize, cols: usize) -> usize {
        let (bm, bc) = self.shape();
        m.div_ceil(bm)
            .max(1)
            .saturating_mul(cols.div_ceil(bc).max(1))
    }
}

/// One kernel of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
    /// GEMV for M <= MT: lane groups per row (`q4_linear_gemv`).
    Gemv(u32),
    /// GEMV for M = 1 over long rows: the workgroup splits K, [`WIDE_GEMV_ROWS`] rows per
    /// block (`q4_linear_gemv_wide_m1`; `dp4`: its packed int8 dot-product variant).
    /// `persist` = NT > 0: the persistent int8 form with NT invocations per workgroup
    /// (`_dp4_persist`, [`persist_gemv_local`]), one wave of workgroups walking the row
    /// blocks.
    GemvWide { dp4: bool, persist: u32 },
    /// The persistent int8 GEMV with half a chunk per invocation (`q4_linear_gemv_half`):
    /// M = 1 over rows of any length, cut into `slices` of at most 256 chunks
    /// ([`half_gemv_slices`]), `local` invocations per workgroup ([`half_gemv_local`]); from
    /// two slices the `_sliced` variant, whose workgroups sum the slices themselves.
    /// `early` (one slice only): the `_early` variant, which loads a block's second batch of
    /// rows with its first ([`half_gemv_early`]).
    /// `tickets` (one slice, not `early`): the `_tickets` variant, whose workgroups take their
    /// blocks past the first two rounds from a counter ([`half_gemv_tickets`]).
    GemvHalf {
        slices: u32,
        local: u32,
        early: bool,
        tickets: bool,
    },
    /// M = 2..=`mt` in fp32 FMAs, one pass over the weights for every row
    /// (`q4_linear_gemv_fma_m{mt}`): a lane per packed word of a slice of the row (`slices`
    /// slices of at most [`FMA_GEMV_LOCAL`] words, `local` invocations), the rows' sums
    /// meeting by subgroup shuffles; from two slices its workgroups sum the slices
    /// themselves ([`fma_gemv`]).
    /// `wpl`: packed words per lane (1, or 2 at `mt` <= 4: `q4_linear_gemv_fma_w2_m{mt}`).
    GemvFma {
        mt: u32,
        slices: u32,
        local: u32,
        wpl: u32,
    },
    /// Tiled GEMM / backward; `split`: the split-K variant (partial sums + the reduce).
    Tiled { tile: Tile, split: bool },
    /// Backward split over N for M <= MT, plus the reduce dispatch.
    SplitN(u32),
    /// Backward at M = `mt` (1 or 2) over long rows: a lane per uvec4 chunk column, rows
    /// split over slices (`q4_linear_bwd_wide_m{mt}_c{cw}`), summed by the last workgroup of
    /// each column block to finish (no reduce dispatch); at M = 2 both activation rows share
    /// each code's decode. `dec`: the M = 1 decode ([`WideDecode`]; M = 2 takes the magic).
    BwdWide { cw: u32, mt: u32, dec: WideDecode },
    /// Backward at M = 3..=MT (4 or 8) over long rows whose scale groups are whole chunks:
    /// stages of the weight through shared memory, narrow lanes over all MT rows
    /// (`q4_linear_bwd_staged_m{4,8}`), one dispatch like [`Kernel::BwdWide`].
    BwdStaged(u32),
    /// Forward on the tensor cores for M >= [`MMA_MIN_M`]: int8 MMAs of 16 weight rows by
    /// 8 * `frags` activation rows per workgroup (`q4_linear_mma_f{frags}`), activations as
    /// int8 limbs from a `q4_mma_limbs` node; `emulated`: the same kernel with plain
    /// arithmetic for the MMAs (`q4_linear_mma_emu_f*`, tests on any device); `reg`: the
    /// form that builds its MMA operands in registers (`q4_linear_mma_reg_f{frags}`).
    Mma {
        frags: u32,
        emulated: bool,
        reg: bool,
    },
    /// Backward on the tensor cores for M > 8 (`q4_linear_bwd_mma_*`): fp16 hi / lo MMAs of
    /// d_out and the dequantized weight over `tile`'s output tiles (T32x128 or T128), d_out's
    /// row scales from a `q4_bwd_rowscale` node; `split`: partial sums, which the last
    /// workgroup of each tile adds up (counters as the wide kernel's);
    /// `emulated`: the same kernel with plain arithmetic for the MMAs (tests on any device).
    BwdMma {
        tile: Tile,
        split: bool,
        emulated: bool,
    },
    /// Forward on the f16 tensor cores at M >= [`fwd_f16_min_m`] (`q4_linear_fwd_mma_*`): the
    /// backward's kernel with the W tile transposed, x's rows as scaled fp16 hi / lo pairs
    /// from a `q4_bwd_rowscale` node, whole `tile`s (no split), the bias added at the store.
    /// `x16`: x came in as fp16, so its scaled rows are exact in one fp16 and each fragment
    /// pair takes two MMAs (`q4_linear_fwd_mma_x16_*`). `codes`: the weight scales stay out of
    /// the MMAs (`q4_linear_fwd_mma_c_*`: the W tile holds the codes alone, each 16-k product
    /// scaled as it is accumulated; two MMAs per fragment pair, one with `x16`), where every
    /// 16 k lie in one group ([`codes_form`]). `split` (codes form only): partial sums over
    /// slices of k ([`fwd_mma_split`]), which the last workgroup of each tile adds up with the
    /// bias.
    FwdMma {
        tile: Tile,
        emulated: bool,
        x16: bool,
        codes: bool,
        split: bool,
    },
}

/// Whether a direction may take the f16 tensor-core kernels ([`Kernel::BwdMma`],
/// [`Kernel::FwdMma`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum F16Mma {
    Off,
    /// NV f16 cooperative matrices; `t128`: the 128 x 128 tile fits shared memory too.
    Native {
        t128: bool,
    },
    /// Forced (`etvk_q4_bwd` = `mma_emulated`, `etvk_q4_gemv` = `f16_emulated`): the emulated
    /// kernel, 32 x 128 tiles.
    Emulated,
}

/// The smallest MT in {1, 2, 4, 8} with M <= MT (M <= 8).
pub(super) fn small_mt(m: usize) -> u32 {
    match m {
        0..=1 => 1,
        2 => 2,
        3..=4 => 4,
        _ => 8,
    }
}

/// Split-K geometry of a tiled launch: `slices` slices of `len` reduction columns (the last
/// one shorter unless `len` divides R); `slices == 1` is the unsplit kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SplitK {
    pub(super) slices: usize,
    /// A multiple of [`TILE_BR`].
    pub(super) len: usize,
}

/// Split-K for `tile` over an M x `cols` output reducing over `r` columns:
/// `S = round(target / tiles)` ([`Tile::split_target`]; rounded to nearest, so a launch with
/// over 2/3 of the target's workgroups stays whole), at most `R / 256` (slices of >= 256
/// columns); then the slice length `ceil(R / S)` rounded up to a multiple of 32, and
/// `S = ceil(R / len)` (every slice non-empty). S never grows with M, and
/// `S * tiles <= 4/3 * target`, so the partial sums (`S * M * C` floats) stay below
/// `4/3 * target * BM * BC` floats: 22 MiB for the 128 x 128 tile, 11 MiB for the others.
///
/// At the H200 benchmark shapes (C = outputs of the launch, R = its reduction):
/// - C = R = 8192: M = 16, 32: 64 tiles of 32 x 128, S = 8 slices of 1024 (512 workgroups);
///   M = 64: 128 tiles of 64 x 64, S = 4 of 2048 (512); M = 128: 64 tiles of 128 x 128,
///   S = 4 of 2048 (256), or without the shared memory for that tile 256 tiles of 64 x 64,
///   S = 2 of 4096 (512); M = 512: 256 tiles of 128 x 128, whole.
/// - C = 28672, R = 8192: M = 32: 224 tiles, S = 2 of 4096; M = 64, 128: whole.
/// - C = 8192, R = 28672: M = 32: S = 8 of 3584; M = 64, 128: S = 4 of 7168.
pub(super) fn split_k(tile: Tile, m: usize, cols: usize, r: usize) -> SplitK {
    split_k_for(tile, m, cols, r, tile.split_target())
}

/// [`split_k`] aiming at `target` workgroups.
pub(super) fn split_k_for(tile: Tile, m: usize, cols: usize, r: usize, target: usize) -> SplitK {
    let r = r.max(1);
    let tiles = tile.count(m, cols);
    let want = (target + tiles / 2) / tiles;
    let s = want.min(r / SPLIT_K_MIN_LEN).max(1);
    let len = r.div_ceil(s).next_multiple_of(TILE_BR);
    SplitK {
        slices: r.div_ceil(len),
        len,
    }
}

/// The tiled kernel for M > 8 rows, `cols` output columns and a reduction over `r`.
pub(super) fn tiled_kernel(m: usize, cols: usize, r: usize, big_tiles: bool) -> Kernel {
    let tile = if m <= T32_MAX_M {
        Tile::T32x128
    } else if big_tiles && m >= 128 && cols >= 128 {
        Tile::T128
    } else {
        Tile::T64
    };
    Kernel::Tiled {
        tile,
        split: split_k(tile, m, cols, r).slices > 1,
    }
}

/// Forward kernel for M rows, N outputs and x rows of K; `wide`: the wide GEMV M = 1 takes
/// ([`wide_gemv`]), and M <= 8 when it is an int8 form (its workgroups split over the
/// activation rows, each row's weight pass shared through L2).
pub(super) fn forward_kernel(
    m: usize,
    n: usize,
    k: usize,
    big_tiles: bool,
    wide: Option<Kernel>,
    (mma, (f16, f16_from)): (Int8Mma, (F16Mma, usize)),
) -> Kernel {
    match f16 {
        F16Mma::Native { t128 } if m >= f16_from => {
            let tile = if t128 && m >= BWD_MMA_T128_MIN_M {
                Tile::T128
            } else {
                Tile::T32x128
            };
            return Kernel::FwdMma {
                tile,
                emulated: false,
                x16: false,
                codes: false,
                split: false,
            };
        }
        F16Mma::Emulated if m >= f16_from => {
            return Kernel::FwdMma {
                tile: Tile::T32x128,
                emulated: true,
                x16: false,
                codes: false,
                split: false,
            };
        }
        _ => {}
    }
    if mma != Int8Mma::Off && m >= mma_min_m() {
        let frags = mma_fragments(m);
        return Kernel::Mma {
            frags,
            emulated: matches!(mma, Int8Mma::Emulated | Int8Mma::EmulatedReg),
            reg: matches!(mma, Int8Mma::NativeReg | Int8Mma::EmulatedReg),
        };
    }
    match (m, wide) {
        (0..=1, Some(w)) => w,
        // The int8 GEMVs serve M <= 8 by splitting their workgroups over the rows; the
        // half-chunk form only M = 1, its rows taking the chunk-per-invocation forms at
        // M >= 2 (faster there: docs/performance.md, session 5).
        (2..=8, Some(w @ Kernel::GemvWide { dp4: true, .. })) => w,
        // Rows take the persistent form down to PERSIST_MIN_CHUNKS, the lane groups below.
        (2..=8, w @ Some(Kernel::GemvHalf { slices: 1, .. })) => {
            persistent_gemv(n, k, w).unwrap_or(Kernel::Gemv(small_mt(m)))
        }
        (2..=8, Some(Kernel::GemvHalf { .. })) => Kernel::GemvWide {
            dp4: true,
            persist: 0,
        },
        (0..=8, _) => Kernel::Gemv(small_mt(m)),
        _ => tiled_kernel(m, n, k, big_tiles),
    }
}

/// The persistent int8 GEMV ([`Kernel::GemvWide`] with `persist`) over `n` rows of `k`
/// codes, where it serves M = 2..8: rows the unsliced half GEMV takes at M = 1 (`wide`, from
/// [`wide_gemv`]) of at least [`PERSIST_MIN_CHUNKS`] chunks.
pub(super) fn persistent_gemv(n: usize, k: usize, wide: Option<Kernel>) -> Option<Kernel> {
    match (wide, k.div_ceil(32)) {
        (Some(Kernel::GemvHalf { slices: 1, .. }), kc) if kc >= PERSIST_MIN_CHUNKS => {
            Some(Kernel::GemvWide {
                dp4: true,
                persist: persist_gemv_local(kc, persist_max_chunks(kc, n)),
            })
        }
        _ => None,
    }
}

/// Whether an 8da4w linear's M = 8 goes to the persistent int8 GEMV's DQ form (which
/// quantizes the raw x itself: no choose_qparams node) rather than the int8 tensor-core
/// forward (after that node): rows of at most 256 chunks (two workgroups per SM) of a weight
/// under [`LIMBS_PREPASS_MIN_WEIGHTS`] codes. H100 (docs/performance.md, session 42), us
/// tensor cores against the DQ GEMV: 8192^2 59.0 / 53.4-54.0, N = 14336, K = 8192 93.6 /
/// 83.3; past the bounds the tensor cores won: N = 28672, K = 8192 157.1-157.5 / 158.9-160.4,
/// N = 4096, K = 14336 57.6-57.8 / 58.2-58.5.
pub(super) fn dq_persist_at_m8(n: usize, kpad: usize) -> bool {
    kpad <= 256 * 32 && n.saturating_mul(kpad) < LIMBS_PREPASS_MIN_WEIGHTS
}

/// Most invocations (packed words of a slice) of the FMA GEMV ([`Kernel::GemvFma`]).
pub(super) const FMA_GEMV_LOCAL: usize = 256;

/// Where the FMA GEMV ([`Kernel::GemvFma`]) runs for an op: its geometry and the M it
/// serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FmaGemv {
    /// (slices, local) with one word per lane.
    one: (u32, u32),
    /// (slices, local) with two, and the fewest rows served so (M <= 4 only).
    two: Option<((u32, u32), usize)>,
    /// The fewest rows served with one word per lane (at most 8).
    min_m: usize,
}

impl FmaGemv {
    /// The kernel at M rows, where this form serves them.
    pub(super) fn at(self, m: usize) -> Option<Kernel> {
        let (geometry, wpl) = match self.two {
            Some((two, from)) if (from..=4).contains(&m) => (two, 2),
            _ if (self.min_m..=8).contains(&m) => (self.one, 1),
            _ => return None,
        };
        Some(Kernel::GemvFma {
            mt: small_mt(m),
            slices: geometry.0,
            local: geometry.1,
            wpl,
        })
    }
}

/// Longest rows (K) on which the FMA GEMV takes M = 8 from the int8 tensor-core forward.
/// H100 (docs/performance.md, session 32), M = 8: N = K = 2048 9.1 us against 19.0, 3072^2
/// 14.6 against 23.4, 4096^2 19.5 against 25.9, N = 8192, K = 3072 26.0 against 30.3,
/// N = 14336, K = 4096 49.6 against 53.0; at K = 8192 it lost (8192^2 53.1-54.9 against
/// 51.9-52.8, N = 28672 160-170 against 157), at K = 28672 more (194 against 143).
pub(super) const FMA_GEMV_MAX_K_BESIDE_MMA: usize = 4096;

/// Longest rows on which it takes M = 8 from the persistent int8 GEMV (no int8 tensor
/// cores). H100 (session 33), M = 8: 8192^2 54.9 us against 57.6, N = 28672, K = 8192 169
/// against 190, 4096^2 19.5 against 21.3; N = 8192, K = 28672 194.4 against 190.9. The
/// bound lies between the longest row measured winning and the shortest losing (untimed).
pub(super) const FMA_GEMV_MAX_K_ALONE: usize = 16384;

/// Longest rows on which the two-words-per-lane form takes M = 4 from the persistent int8
/// GEMV. H100 (session 33), M = 4: 4096^2 13.4 us against 14.3, N = 14336, K = 4096 29.1
/// against 31.0; at K = 8192 mixed (8192^2 34.3 against 33.8, N = 28672 97.3 against
/// 100.5), so left to the int8 GEMV; at M = 2 it lost on every shape (8192^2 27.2 against
/// 23.2).
pub(super) const FMA_GEMV_W2_MAX_K: usize = 4096;

/// The FMA GEMV for `q`'s rows, or None where it does not run: scale groups of whole words,
/// subgroups of 8..=128 invocations (a power of two: its butterfly holds one of 8 rows per
/// lane group, its shared sums one slot per subgroup of at most 256 / 8) with shuffles, its
/// shader supported; not where compile spec [`Q4_FMA_SPEC`](crate::builder::Q4_FMA_SPEC)
/// (else `ETVK_Q4_FMA`) is `off` or `0`, nor where another GEMV form is forced.
/// `etvk_q4_gemv` = `fma` / `fma_w2` force one / two words per lane at M = 2..8 (two at
/// M <= 4). By default it serves M = 8 on rows of at most [`FMA_GEMV_MAX_K_BESIDE_MMA`]
/// beside the int8 tensor-core forward (`int8_mma`), [`FMA_GEMV_MAX_K_ALONE`] without, and
/// M = 4 with two words per lane on rows of at most [`FMA_GEMV_W2_MAX_K`]: elsewhere at
/// M = 2..7 the int8 GEMVs were as fast or faster on every shape measured (H100, sessions
/// 32-33).
pub(super) fn fma_gemv(g: &GraphBuilder<'_>, q: &Q4, int8_mma: bool) -> Option<FmaGemv> {
    let setting = g
        .q4_fma
        .clone()
        .or_else(|| std::env::var("ETVK_Q4_FMA").ok());
    let off = matches!(setting.as_deref(), Some("off" | "0"));
    let forced = forced_gemv(g);
    let caps = g.caps();
    let sg = caps.subgroup_size;
    let max_k_one = if int8_mma {
        FMA_GEMV_MAX_K_BESIDE_MMA
    } else {
        FMA_GEMV_MAX_K_ALONE
    };
    let (min_m, pairs_from) = match forced.as_deref() {
        Some("fma") => (2, None),
        Some("fma_w2") => (2, Some(2)),
        Some(_) => return None,
        None if off => return None,
        None => (
            if q.kpad <= max_k_one { 8 } else { usize::MAX },
            (q.kpad <= FMA_GEMV_W2_MAX_K).then_some(4),
        ),
    };
    let ok = (q.groups == 1 || group_word_shift(q.gs) != u32::MAX)
        && caps.subgroup_shuffle
        && sg.is_power_of_two()
        && (8..=128).contains(&sg)
        && g.shader_supported(ShaderId::Q4LinearGemvFmaM8);
    if !ok {
        return None;
    }
    let words = q.kpad / 8;
    // Slices of at most FMA_GEMV_LOCAL lanes, each `wpl` words (a whole number of them).
    let geometry = |wpl: usize| -> Option<(u32, u32)> {
        let slices = words.div_ceil(FMA_GEMV_LOCAL * wpl).max(1);
        let lanes = fma_gemv_slice_words(q.kpad, slices as u32, wpl as u32) / wpl;
        let local = lanes
            .next_multiple_of(32.max(sg as usize))
            .min(FMA_GEMV_LOCAL.max(sg as usize));
        Some((u32::try_from(slices).ok()?, u32::try_from(local).ok()?))
    };
    // Two words per lane: one uvec2 load (packed rows are whole 32-code chunks, so an even
    // number of words) in one scale group (groups of >= 16 codes).
    let pairs = (q.groups == 1 || (1..u32::MAX).contains(&group_word_shift(q.gs)))
        && g.shader_supported(ShaderId::Q4LinearGemvFmaW2M4);
    let two = match pairs_from {
        Some(from) if pairs => Some((geometry(2)?, from)),
        _ => None,
    };
    if min_m > 8 && two.is_none() {
        return None;
    }
    Some(FmaGemv {
        one: geometry(1)?,
        two,
        min_m,
    })
}

/// Words per slice of the FMA GEMV over rows of `kpad` codes in `slices` slices at `wpl`
/// words per lane (a multiple of `wpl`).
pub(super) fn fma_gemv_slice_words(kpad: usize, slices: u32, wpl: u32) -> usize {
    (kpad / 8)
        .div_ceil(slices.max(1) as usize)
        .next_multiple_of(wpl.max(1) as usize)
}

/// Block sets (workgroups per slice) of the FMA GEMV over `n` rows at `local` invocations:
/// the persistent wave ([`persistent_wave`] of 256-invocation workgroups) split over the
/// slices, at most one per row block.
pub(super) fn fma_gemv_sets(n: usize, slices: u32, local: u32) -> usize {
    (persistent_wave(local, FMA_GEMV_LOCAL as u32) / slices.max(1) as usize)
        .clamp(1, n.div_ceil(PERSISTENT_GEMV_ROWS).max(1))
}

/// Whether the f16 forward may keep the weight scales out of its MMAs (`Kernel::FwdMma`'s
/// `codes`): every 16 k of the reduction lie in one group (group size a multiple of 16, or
/// one group per row), unless `ETVK_Q4_FWD_CODES=0` (benchmarks compare the forms). The
/// native kernels also need their self-check passed (`f16_codes_ok`, at the call).
pub(super) fn codes_form(q: &Q4) -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let off = *OFF.get_or_init(|| std::env::var("ETVK_Q4_FWD_CODES").is_ok_and(|v| v == "0"));
    !off && (q.groups == 1 || q.gs.is_multiple_of(16))
}

/// Whether the codes form runs where `form` ([`codes_form`]) allows it under f16 `mode`: the
/// native kernels read their scales in one fragment element order and have a self-check of
/// their own (`native_ok`, asked only when it decides: it runs the check on first use), and
/// where that fails the hi / lo form runs; the emulated ones depend on no element order.
pub(super) fn codes_form_runs(form: bool, mode: F16Mma, native_ok: impl FnOnce() -> bool) -> bool {
    form && match mode {
        F16Mma::Native { .. } => native_ok(),
        F16Mma::Emulated => true,
        F16Mma::Off => false,
    }
}

/// Fewest activation rows of the tensor-core forward ([`Kernel::Mma`]): one MMA fragment's 8.
pub(super) const MMA_MIN_M: usize = 8;

/// The int8 tensor-core forward's threshold: [`MMA_MIN_M`], or `ETVK_Q4_MMA_M` (benchmarks).
pub(super) fn mma_min_m() -> usize {
    static FROM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *FROM.get_or_init(|| workgroup_target("ETVK_Q4_MMA_M", MMA_MIN_M))
}

/// Fewest activation rows of the f16 tensor-core forward ([`Kernel::FwdMma`]):
/// `ETVK_Q4_FWD_F16_M` when set (benchmarks), else the op's `default`.
pub(super) fn fwd_f16_min_m(default: usize) -> usize {
    static FROM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let set = *FROM.get_or_init(|| workgroup_target("ETVK_Q4_FWD_F16_M", 0));
    if set > 0 {
        set
    } else {
        default
    }
}

/// linear_q4gsw's f16 forward from M = 128. H200: the codes form with split-K against the
/// int8 kernel at M = 128 (session 15 run 4): 284.1 / 951.7 / 837.3 us against 340.1 /
/// 1168.3 / 1154.6 at 8192^2 / N = 28672 / K = 28672, fp16 x 250.3 against 350.7 at 8192^2;
/// at M = 256 511.2 / 1740.8 against 649.3 / 2263.2. At M = 64 and 32 its 32 x 128 tiles lose
/// (236.3 against 185.4, 131.4 against 102.6 at 8192^2).
pub(super) const FWD_F16_MIN_M: usize = 128;
/// linear_qcs4w's from M = 128 too, although its int8 kernel rescales once per row, not per
/// chunk (run 4 at M = 128: 261.9 / 892.7 / 771.1 against 297.1 / 1021.4 / 1003.5 us; run 2
/// at M = 256: 481.4 / 1759.4 / 1571.6 against 577.9 / 1953.7 / 1986.4).
pub(super) const QCS4W_F16_MIN_M: usize = 128;

/// Whether the forward may take the f16 tensor-core kernel ([`Kernel::FwdMma`]), and from
/// which M: where the backward's tensor-core kernels run (they share the self-check), from
/// [`fwd_f16_min_m`] (`from` by default); with the GEMV choice forced to `f16` (native) or
/// `f16_emulated` (plain arithmetic for the MMAs, any device), from M = 9 (tests). Off
/// when the graph's largest M (`max_m`) stays below that: only graphs that can reach the
/// kernel consult the tensor cores and so maybe run their self-check (an M = 1 decode graph
/// does not), as the backward does.
pub(super) fn f16_forward(g: &GraphBuilder<'_>, from: usize, max_m: usize) -> (F16Mma, usize) {
    const FORCED_FROM: usize = 9;
    let shared = g.caps().max_shared_memory_size;
    let forced = forced_gemv(g);
    let from = match forced.as_deref() {
        Some("f16" | "f16_emulated") => FORCED_FROM,
        Some(_) => return (F16Mma::Off, usize::MAX),
        None => fwd_f16_min_m(from),
    };
    if max_m < from {
        return (F16Mma::Off, usize::MAX);
    }
    let native = || match f16_mma_native(g) {
        F16Mma::Native { t128 } if shared >= FWD_MMA_T32_SHARED_BYTES => F16Mma::Native {
            t128: t128 && shared >= FWD_MMA_T128_SHARED_BYTES,
        },
        _ => F16Mma::Off,
    };
    let mode = if forced.as_deref() == Some("f16_emulated") {
        let ok = g.shader_supported(ShaderId::Q4LinearFwdMmaEmuT32x128)
            && shared >= FWD_MMA_T32_SHARED_BYTES;
        if ok {
            F16Mma::Emulated
        } else {
            F16Mma::Off
        }
    } else {
        native()
    };
    (mode, from)
}

/// (rows of M, output columns) of the `q4_linear_cm2` tiles: 128 x 128, or
/// `ETVK_Q4_CM2_TILE` = `MxN` for experiments with SPIR-V built for other tiles
/// (`ETVK_SPIRV_OVERRIDE_DIR`; the shader's BN x BM).
fn cm2_tile() -> (usize, usize) {
    static TILE: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
    *TILE.get_or_init(|| {
        std::env::var("ETVK_Q4_CM2_TILE")
            .ok()
            .and_then(|v| {
                let (m, n) = v.split_once('x')?;
                Some((m.parse().ok()?, n.parse().ok()?))
            })
            .filter(|&(m, n): &(usize, usize)| m > 0 && n > 0)
            .unwrap_or((128, 128))
    })
}

/// The VK_NV_cooperative_matrix2 tile that replaces the f16 forward's kernels
/// ([`Kernel::FwdMma`]) for `q`, if any: with compile spec `etvk_q4_mma` (else
/// `ETVK_Q4_MMA`) = `cm2`, [`Tile::Cm2`] (exact: whole 32-column steps in one scale group,
/// or one group per row), or `cm2_f16`, [`Tile::Cm2F16`] (fp16 weights: the precision of
/// llama.cpp's q4_0 path, ~1e-5 relative here, not the fp32 tolerance); where the device
/// runs their shaders and x came in as fp32 (`x16` false: the hi / lo pairs). Not the
/// default: on an H100 the exact form ran at 46.6-46.7 TFLOP/s at M = 512 / 2048 against
/// 77-79 for the coopmat1 codes kernel, the fp16 form at 64 (docs/performance.md, sessions
/// 39-40).
pub(super) fn cm2_forward(g: &GraphBuilder<'_>, q: &Q4, x16: bool) -> Option<Tile> {
    let (tile, shader) = match mma_setting(g)?.as_str() {
        "cm2" => (Tile::Cm2, ShaderId::Q4LinearCm2),
        "cm2_f16" => (Tile::Cm2F16, ShaderId::Q4LinearCm2F16),
        _ => return None,
    };
    let steps_in_groups = q.groups == 1 || q.gs.is_multiple_of(32);
    (!x16 && (steps_in_groups || tile == Tile::Cm2F16) && g.shader_supported(shader))
        .then_some(tile)
}

/// Shared memory of the f16 tensor-core forward: the backward's, with the W tiles
/// transposed (128 rows of 4 + 1 uvec4 instead of 32 of 16 + 1).
pub(super) const FWD_MMA_T32_SHARED_BYTES: u32 = fwd_mma_shared_bytes(32);
pub(crate) const FWD_MMA_T128_SHARED_BYTES: u32 = fwd_mma_shared_bytes(128);

pub(super) const fn fwd_mma_shared_bytes(bm: u32) -> u32 {
    2 * bm * 5 * 16 + 2 * 128 * 5 * 16 + 8 * 128 * 4 + 2 * bm * 4 + 16
}

/// 8-row fragments per workgroup of the tensor-core forward: 1, 2 or 4 (the fewest that
/// cover M, at most 4), so that small M wastes no MMA rows and large M reuses each decoded
/// weight tile for 32 rows.
pub(super) fn mma_fragments(m: usize) -> u32 {
    match m {
        0..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}

/// The MMA shape the tensor-core forward is written for: D (16 x 8, int32) = A (16 x 32,
/// int8) * B (32 x 8, int8) + C.
pub(crate) const MMA_SHAPE: &str = "16x8x32 s8*s8+s32->s32";

/// Which int8 tensor-core forward ([`Kernel::Mma`]) an op may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Int8Mma {
    Off,
    Native,
    /// The same kernel with plain arithmetic for the MMAs, where forced (tests on any device).
    Emulated,
    /// Native, the register-operand form (`q4_linear_mma_reg_*`, every fragment count).
    NativeReg,
    /// The register-operand form emulated (compile spec `etvk_q4_mma` = `emulated_reg`).
    EmulatedReg,
}

/// The int8 tensor-core forward `q` may take: natively with NV int8 cooperative matrices of
/// [`MMA_SHAPE`] and 32-invocation subgroups (its workgroup is 8 of them); emulated where
/// compile spec `etvk_q4_mma` (else `ETVK_Q4_MMA`) = `emulated`; either needs scale groups
/// of whole 32-code chunks (or one group per row) and rows of fewer than 2^16 chunks (packed
/// push constants). `off` / `0` turn it off. Natively only after its self-check passed
/// ([`BackendInner::int8_mma_ok`](crate::backend::BackendInner::int8_mma_ok)), which runs
/// only for graphs whose largest M (`max_m`) reaches the kernel.
pub(super) fn mma_forward(g: &GraphBuilder<'_>, q: &Q4, max_m: usize) -> Int8Mma {
    let groups = q.groups == 1 || q.gs.is_multiple_of(32);
    if !groups || q.kpad / 32 >= 1 << 16 || mma_turned_off(g) || max_m < mma_min_m() {
        return Int8Mma::Off;
    }
    let emulated = match mma_setting(g).as_deref() {
        Some("emulated") => Some((ShaderId::Q4LinearMmaEmuF1, Int8Mma::Emulated)),
        Some("emulated_reg") => Some((ShaderId::Q4LinearMmaRegEmuF1, Int8Mma::EmulatedReg)),
        _ => None,
    };
    if let Some((shader, form)) = emulated {
        let ok = g.shader_supported(shader) && g.shader_supported(ShaderId::Q4MmaLimbs);
        return if ok { form } else { Int8Mma::Off };
    }
    let caps = g.caps();
    let shape = caps
        .cooperative_matrix_nv_shapes
        .iter()
        .any(|s| s.to_string() == MMA_SHAPE);
    if shape
        && caps.subgroup_size == 32
        && g.shader_supported(ShaderId::Q4LinearMmaF1)
        && g.shader_supported(ShaderId::Q4MmaLimbs)
        && g.be.int8_mma_ok()
    {
        // The register-operand form only where asked for (`ETVK_Q4_MMA_REG=1`) and where it
        // passed its own self-check: on an H100 it ran 1.2-2.2x slower than the tiles at
        // M = 8..32 (docs/performance.md, sessions 43-44).
        let reg = std::env::var("ETVK_Q4_MMA_REG").is_ok_and(|v| v == "1")
            && g.shader_supported(ShaderId::Q4LinearMmaRegF1)
            && g.be.int8_mma_reg_spec().is_some();
        if reg {
            Int8Mma::NativeReg
        } else {
            Int8Mma::Native
        }
    } else {
        Int8Mma::Off
    }
}

/// The MMA shape of the tensor-core backward: D (16 x 8, fp32) = A (16 x 16, fp16) * B
/// (16 x 8, fp16) + C.
pub(crate) const BWD_MMA_SHAPE: &str = "16x8x16 f16*f16+f32->f32";

/// Shared memory of the tensor-core backward's 32 x 128 tiles (steps of 32 rows) and 128 x
/// 128 tiles (two sets of 16-row step tiles, `DBUF` in the shader: H200, M = 512 at 8192^2
/// 1058 -> 1011 us, session 23; the 32 x 128 tiles lost 3-12% with them at M = 16..64).
pub(super) const BWD_MMA_T32_SHARED_BYTES: u32 = bwd_mma_shared_bytes(32, 32, 1);
pub(crate) const BWD_MMA_T128_SHARED_BYTES: u32 = bwd_mma_shared_bytes(128, 16, 2);

/// For BM-row tiles, steps of `br` reduction rows and `sets` sets of step tiles.
pub(super) const fn bwd_mma_shared_bytes(bm: u32, br: u32, sets: u32) -> u32 {
    // Per set: d_out hi + lo rows of br / 8 + 1 uvec4, W hi + lo rows of 16 + 1 uvec4 for each
    // of the br rows; then 8 staging tiles of 16 x 8 floats, two row-scale arrays, 16 bytes of
    // workgroup maximum.
    sets * (2 * bm * (br / 8 + 1) * 16 + 2 * br * 17 * 16) + 8 * 128 * 4 + 2 * bm * 4 + 16
}

/// Whether the backward takes the tensor-core kernel at M > 8: where [`f16_mma_native`]
/// admits it and no other backward is forced; or the emulated kernel when the backward is
/// forced to `mma_emulated`. H200 (docs/performance.md, session 14, run 6): M = 32 at 8192^2
/// 122.0 us against the portable tiled kernel's 194.0 (session 13), M = 512 1039.1 against
/// 1928.3.
pub(super) fn mma_backward(g: &GraphBuilder<'_>) -> F16Mma {
    let caps = g.caps();
    let shared = caps.max_shared_memory_size;
    match forced_bwd(g).as_deref() {
        Some("mma_emulated") => {
            if g.shader_supported(ShaderId::Q4LinearBwdMmaEmuT32x128)
                && shared >= BWD_MMA_T32_SHARED_BYTES
            {
                F16Mma::Emulated
            } else {
                F16Mma::Off
            }
        }
        Some(_) => F16Mma::Off,
        None => f16_mma_native(g),
    }
}

/// The native f16 tensor-core kernels (both directions) where this device runs them right:
/// NV cooperative matrices of [`BWD_MMA_SHAPE`], 32-invocation subgroups and the 32 x 128
/// tile's shared memory, not turned off by compile spec `etvk_q4_mma` = `off` (else
/// `ETVK_Q4_MMA=0`), and passing their self-check on this device (once per backend:
/// [`crate::ops::q4_mma_check`]).
pub(super) fn f16_mma_native(g: &GraphBuilder<'_>) -> F16Mma {
    let caps = g.caps();
    let shared = caps.max_shared_memory_size;
    if mma_turned_off(g) {
        return F16Mma::Off;
    }
    let shape = caps
        .cooperative_matrix_nv_shapes
        .iter()
        .any(|s| s.to_string() == BWD_MMA_SHAPE);
    let t128 = shared >= BWD_MMA_T128_SHARED_BYTES;
    // The self-check runs last: only where everything else admits the kernel.
    if shape
        && caps.subgroup_size == 32
        && shared >= BWD_MMA_T32_SHARED_BYTES
        && g.shader_supported(ShaderId::Q4LinearBwdMmaT32x128)
        && g.shader_supported(ShaderId::Q4BwdRowscale)
        && g.be.f16_mma_ok()
    {
        F16Mma::Native { t128 }
    } else {
        F16Mma::Off
    }
}

/// Rows from which the tensor-core backward takes 128 x 128 tiles (32 x 128 below).
pub(super) const BWD_MMA_T128_MIN_M: usize = 65;

/// The tensor-core backward for M rows, `cols` output columns and a reduction over `r`.
pub(super) fn mma_backward_kernel(m: usize, cols: usize, r: usize, mode: F16Mma) -> Option<Kernel> {
    let (tile, emulated) = match mode {
        F16Mma::Off => return None,
        F16Mma::Native { t128 } if t128 && m >= BWD_MMA_T128_MIN_M => (Tile::T128, false),
        F16Mma::Native { .. } => (Tile::T32x128, false),
        F16Mma::Emulated => (Tile::T32x128, true),
    };
    Some(Kernel::BwdMma {
        tile,
        split: bwd_mma_split(tile, m, cols, r).slices > 1,
        emulated,
    })
}

/// Reduction rows per slice of the tensor-core backward's 32 x 128 tiles, at most.
pub(super) const BWD_MMA_T32_MAX_SLICE: usize = 2048;

/// Workgroups the 32 x 128 tensor-core backward's split-K aims for before
/// [`BWD_MMA_T32_MAX_SLICE`] cuts its slices: one wave at two workgroups per SM of an H200.
pub(super) const BWD_MMA_T32_TARGET: usize = 264;

/// Split-K of the tensor-core backward: [`split_k`]'s for the 128 x 128 tile; for the 32 x
/// 128 tile, aimed at [`BWD_MMA_T32_TARGET`] workgroups with slices of at most
/// [`BWD_MMA_T32_MAX_SLICE`] rows. H200 sweep at M = 16 / 32 / 64 over the three shapes
/// (docs/performance.md, session 12): slices of 2048 rows were the fastest or within 1% of
/// it everywhere, also where they make fractional waves (224 tiles x 4 slices: 446 us
/// against 509 for 2 slices of 4096); 1024 rows cost 2-3% at 8192^2 (156 against 152 us);
/// slices of 4096 and longer run up to 1.14x slower (M = 64 unsplit over 8192 rows: 4814
/// us, session 10). Fewer tiles than a wave split further, down to [`SPLIT_K_MIN_LEN`].
pub(super) fn bwd_mma_split(tile: Tile, m: usize, cols: usize, r: usize) -> SplitK {
    if tile != Tile::T32x128 {
        return split_k_for(tile, m, cols, r, bwd_mma_target(tile.split_target()));
    }
    let sk = split_k_for(tile, m, cols, r, bwd_mma_target(BWD_MMA_T32_TARGET));
    if sk.len <= BWD_MMA_T32_MAX_SLICE {
        return sk;
    }
    let len = r
        .div_ceil(r.div_ceil(BWD_MMA_T32_MAX_SLICE))
        .next_multiple_of(TILE_BR);
    SplitK {
        slices: r.div_ceil(len),
        len,
    }
}

/// Split-K of the f16 forward's codes form over x rows of `r` for `cols` outputs: none once
/// its tiles fill the GPU, else slices (of at least [`SPLIT_K_MIN_LEN`]) towards one wave:
/// one 128 x 128 workgroup per SM of an H200 (255 registers), two of 32 x 128 (121).
pub(super) fn fwd_mma_split(tile: Tile, m: usize, cols: usize, r: usize) -> SplitK {
    let target = match tile {
        Tile::T128 => FWD_MMA_T128_WAVE,
        _ => 2 * FWD_MMA_T128_WAVE,
    };
    split_k_for(tile, m, cols, r, target)
}

/// Resident 128 x 128 workgroups of the f16 forward: one per SM of an H200.
pub(super) const FWD_MMA_T128_WAVE: usize = 132;

/// Whether compile spec [`Q4_MMA_SPEC`](crate::builder::Q4_MMA_SPEC) (else `ETVK_Q4_MMA`)
/// turns the tensor-core kernels off (`off` or `0`).
pub(super) fn mma_turned_off(g: &GraphBuilder<'_>) -> bool {
    matches!(mma_setting(g).as_deref(), Some("off" | "0"))
}

/// Compile spec [`Q4_MMA_SPEC`](crate::builder::Q4_MMA_SPEC), else `ETVK_Q4_MMA`.
fn mma_setting(g: &GraphBuilder<'_>) -> Option<String> {
    g.q4_mma
        .clone()
        .or_else(|| std::env::var("ETVK_Q4_MMA").ok())
}

/// Chunks per step of the tensor-core forward (its manifest `STEP`): 4, or 2 at 4 fragments
/// (whose limb tiles would otherwise pass 32 KiB of shared memory).
pub(super) fn mma_step(mf: u32) -> usize {
    if mf >= 4 {
        2
    } else {
        4
    }
}

/// Weight rows per workgroup of the tensor-core forward (16 per subgroup, 8 subgroups).
pub(super) const MMA_ROWS: usize = 128;

/// 16-row tiles per subgroup of the register-operand forward `sh` (its `TT` define in
/// `shaders/manifest.txt`, read from the compiled variant so the launch's strips cannot
/// disagree with the kernel), sharing each chunk's B fragments; 1 where it has none.
/// H100 (docs/performance.md, session 44): 4 at one fragment 62.1 us at M = 8, 8192^2
/// (8: 69.9; before TT, 71.2), 2 at four 122.7 at M = 32 (168.7 before); at two 131.2
/// against 107.3 before (a 236 KB binary: try 1 there).
pub(super) fn mma_reg_tiles(sh: ShaderId) -> usize {
    sh.info()
        .defines
        .iter()
        .find(|(name, _)| *name == "TT")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(1)
}

/// Weight rows per workgroup of the int8 tensor-core forward `kn` ([`Kernel::Mma`]): 128
/// for the tiles, 128 x TT for the register-operand form.
pub(super) fn mma_rows_per_workgroup(kn: Kernel) -> usize {
    match kn {
        Kernel::Mma { reg: true, .. } => MMA_ROWS * mma_reg_tiles(shader_of(kn, false)),
        _ => MMA_ROWS,
    }
}

/// Workgroups of the tensor-core forward resident at once: two per SM of an H200 (114-120
/// registers), or `ETVK_Q4_MMA_WGS` (benchmarks).
pub(super) const MMA_RESIDENT_WGS: usize = 264;

/// Workgroups the tensor-core backward's split-K aims for: `default`, or
/// `ETVK_Q4_BWD_MMA_WGS` (benchmarks; read once per process, so build and resize agree).
pub(super) fn bwd_mma_target(default: usize) -> usize {
    static TARGET: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    TARGET
        .get_or_init(|| {
            std::env::var("ETVK_Q4_BWD_MMA_WGS")
                .ok()
                .map(|_| workgroup_target("ETVK_Q4_BWD_MMA_WGS", 1))
        })
        .unwrap_or(default)
}

pub(super) fn mma_resident_wgs() -> usize {
    static TARGET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *TARGET.get_or_init(|| workgroup_target("ETVK_Q4_MMA_WGS", MMA_RESIDENT_WGS))
}

/// Split-K of the tensor-core forward for M rows, N outputs, `kc` chunks per row and
/// workgroups of `rows` weight rows ([`mma_rows_per_workgroup`]):
/// `slices` workgroups per (row strip, row tile) with `len` chunks each (a multiple of the
/// step; the last slice may be shorter), at least two steps per slice.
///
/// The slice count minimizes the waves of resident workgroups times the work of one,
/// `ceil(tiles * s / resident) / s`, taking the fewest slices within 5% of the minimum
/// (each slice adds partial sums to reduce). H200 (docs/performance.md, session 9): 224
/// tiles ran 178 us unsplit, 182 at 2 slices (1.7 waves), 169 at 5 (4.2 waves): a last
/// wave that is nearly full costs less than a single wave that leaves SMs with one
/// workgroup.
pub(super) fn mma_split(m: usize, n: usize, kc: usize, mf: u32, rows: usize) -> SplitK {
    let step = mma_step(mf);
    let kc = kc.max(1);
    let tiles = n.div_ceil(rows.max(1)).max(1) * m.div_ceil(8 * mf as usize).max(1);
    let resident = mma_resident_wgs().max(1);
    let most = (kc / (2 * step)).clamp(1, 64);
    // Waves per slice as a fraction: compare w_a / s_a < w_b / s_b by cross-multiplying.
    let waves = |s: usize| tiles.saturating_mul(s).div_ceil(resident);
    let mut min = 1;
    for s in 2..=most {
        if waves(s) * min < waves(min) * s {
            min = s;
        }
    }
    // The fewest slices within 5% of the minimum: the minimum alone can sit at many slices
    // that gain under 1% over a few (224 tiles: 20 slices, 0.8% better than 7).
    let best = (1..=min)
        .find(|&s| waves(s) * min * 100 <= 105 * waves(min) * s)
        .unwrap_or(min);
    let len = kc.div_ceil(best).next_multiple_of(step);
    SplitK {
        slices: kc.div_ceil(len),
        len,
    }
}

/// Chunks per scale group for the tensor-core forward (one group per row: the whole row).
pub(super) fn mma_chunks_per_group(q: &Q4) -> usize {
    if q.groups == 1 {
        (q.kpad / 32).max(1)
    } else {
        q.gs / 32
    }
}

/// Rows of at least this many chunks (K >= 1024) take the persistent int8 GEMV at M = 2..8
/// where the half form runs M = 1: H200, N = 8192, K = 2048: M = 2 16.1 -> 10.9 us, M = 4
/// 24.9 -> 14.4 against the lane groups; N = 4096, K = 1024: M = 2 13.4 -> 7.7, M = 4 12.8
/// -> 9.3 (docs/performance.md, session 21, runs 5 and 8). Shorter rows were not measured
/// and keep the lane groups.
pub(super) const PERSIST_MIN_CHUNKS: usize = 32;

/// Rows of at least this many chunks (K >= 512) take the wide backward at M = 1 (else the
/// split-N one): H200, split-N -> wide, N x K 8192 x 2048 26.2 -> 11.8 us, 2048 x 2048
/// 15.4 -> 8.4, 32768 x 2048 38.7 -> 20.0, 8192 x 3072 25.2 -> 13.0, 4096 x 1024 17.6 ->
/// 9.0, 2048 x 512 14.6 -> 7.8 (docs/performance.md, session 21); until then it served
/// rows of >= 128 chunks only.
pub(super) const WIDE_BWD_MIN_CHUNKS: usize = 16;

/// Packed rows of at least this many uvec4 chunks use the wide GEMV at M = 1: its 256
/// invocations split a row's chunks, so shorter rows would leave most of them idle.
pub(super) const WIDE_GEMV_MIN_CHUNKS: usize = 128;

/// Weights (N * Kpad) from which the int8 GEMV takes its activation limbs from a pre-pass
/// node instead of making them in every workgroup: the pre-pass costs a dispatch (~4 us on
/// an H200) and saves ~18% of the GEMV (N = 28672, K = 8192: 60.4 -> 55.9 us; 8192^2: 21.0
/// -> 22.8 us, a loss).
pub(super) const LIMBS_PREPASS_MIN_WEIGHTS: usize = 1 << 27;

/// Whether every scale group is a power-of-two number of 32-code chunks (or one group spans
/// the row): the kernels that read one scale per chunk (int8 GEMVs, staged backward).
pub(super) fn groups_are_whole_chunks(q: &Q4) -> bool {
    let shift = group_word_shift(q.gs);
    q.groups == 1 || (shift != u32::MAX && shift >= 2)
}

/// The forced GEMV choice: compile spec [`Q4_GEMV_SPEC`](crate::builder::Q4_GEMV_SPEC), else `ETVK_Q4_GEMV` (`lanes`,
/// `wide`, `wide_dp4`, `wide_dp4_pre`, `wide_dp4_persist`, `half`; `f16` / `f16_emulated`
/// force the f16 tensor-core forward from M = 9 instead, see [`f16_forward`]).
pub(super) fn forced_gemv(g: &GraphBuilder<'_>) -> Option<String> {
    g.q4_gemv
        .clone()
        .or_else(|| std::env::var("ETVK_Q4_GEMV").ok())
}

/// Whether the int8 GEMV's limbs come from a pre-pass ([`LIMBS_PREPASS_MIN_WEIGHTS`]; forced
/// by `wide_dp4_pre` / `wide_dp4`).
pub(super) fn limbs_prepass(g: &GraphBuilder<'_>, q: &Q4) -> bool {
    match forced_gemv(g).as_deref() {
        Some("wide_dp4_pre") => true,
        Some("wide_dp4") => false,
        _ => q.n.saturating_mul(q.kpad) >= LIMBS_PREPASS_MIN_WEIGHTS,
    }
}

/// Output rows per workgroup of the wide GEMV (`RW` in q4_linear_gemv_wide.comp).
pub(super) const WIDE_GEMV_ROWS: usize = 16;
/// Most chunks of the persistent int8 GEMV at M = 2..8 over rows of `kc` chunks and `n`
/// rows where the half-chunk GEMV takes them whole at M = 1: 256 (two workgroups of up to
/// 256 per SM), or 512 (one workgroup of up to 512 per SM) for rows of 257..512 chunks, which
/// the half-chunk GEMV only takes whole on devices with workgroups of 1024 and its 20+ KiB
/// of shared memory (this form needs 512 and 18 KiB), unless the weight is large enough for
/// the activation limbs' pre-pass ([`LIMBS_PREPASS_MIN_WEIGHTS`]), which is level with it.
/// H100 (docs/performance.md, session 41), against the unpersistent form those rows took:
/// N = 8192, K = 14336 M = 2 / 4 46.1 -> 38.8 / 79.5 -> 63.0 us, N = 4096, K = 11008 22.8 ->
/// 20.4 / 36.8 -> 30.2; the pre-pass form at N = 8192, K = 16384 42.8-43.0 / 65.3-65.4
/// against 40.9-43.8 / 64.0-65.2. `ETVK_Q4_PERSIST_MAX_CHUNKS=256` (benchmarks) keeps 256.
pub(super) fn persist_max_chunks(kc: usize, n: usize) -> usize {
    static CAP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cap = *CAP.get_or_init(|| {
        std::env::var("ETVK_Q4_PERSIST_MAX_CHUNKS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&c| c == 256)
            .unwrap_or(512)
    });
    if kc > 256 && cap > 256 && n.saturating_mul(kc * 32) < LIMBS_PREPASS_MIN_WEIGHTS {
        512
    } else {
        256
    }
}

/// Invocations per workgroup of the persistent int8 GEMV over rows of `kc` chunks (one chunk
/// each): one per chunk in whole subgroups of 32, at most `max_chunks` (256: two workgroups
/// per SM at 94 registers; 512: one per SM, [`persist_max_chunks`]); 0 past it (the form
/// does not take such rows). `ETVK_Q4_PERSIST_LOCAL` (benchmarks) widens it to a multiple of
/// 32 up to 256.
pub(super) fn persist_gemv_local(kc: usize, max_chunks: usize) -> u32 {
    if kc > max_chunks {
        return 0;
    }
    let fit = kc.next_multiple_of(32).clamp(32, max_chunks.max(32)) as u32;
    static WIDER: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let wider = *WIDER.get_or_init(|| wider_local("ETVK_Q4_PERSIST_LOCAL", 256));
    wider.map_or(fit, |l| l.max(fit))
}

/// A benchmark's wider workgroup from environment variable `var`: a multiple of 32 up to
/// `max`, else None.
fn wider_local(var: &str, max: u32) -> Option<u32> {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&l| l > 0 && l % 32 == 0 && l <= max)
}

/// Invocations of the half-chunk persistent GEMV (`q4_linear_gemv_half`) up to which two
/// workgroups share an SM: half a chunk each over rows (or slices) of up to 256 chunks; at
/// 60 registers two workgroups of 512 share an SM of an H200 (8192^2: 16.1 us against the
/// 256-invocation form's 17.5).
pub(super) const HALF_GEMV_LOCAL: u32 = 512;

/// Most invocations of a half-chunk GEMV workgroup on any device: longer rows (up to 512
/// chunks) in one workgroup per SM instead of two slices whose workgroups add each other's
/// sums after a ticket (where the device's limits allow, [`half_gemv_max_chunks`]).
pub(super) const HALF_GEMV_LOCAL_MAX: u32 = 1024;

/// Shared memory of `q4_linear_gemv_half` at `local` invocations: the block sums' two
/// stages (8 + 1 floats per invocation) and the variants' fixed arrays (the DQ forms'
/// 64 vec4s, the norm's 128 floats, the sliced form's flag).
pub(super) fn half_gemv_shared_bytes(local: u32) -> u32 {
    36 * local + 1024 + 512 + 16
}

/// Most chunks one workgroup of the half-chunk GEMV holds (half a chunk per invocation):
/// 256 (512 invocations) everywhere, up to 512 where the device takes workgroups of up to
/// [`HALF_GEMV_LOCAL_MAX`] in x with the shared memory they need and subgroups of at least
/// local / 128 (the DQ and norm forms keep a partial per subgroup in 128 slots).
/// `ETVK_Q4_HALF_MAX_CHUNKS` (benchmarks: 256 gives the earlier geometry) lowers it.
pub fn half_gemv_max_chunks(caps: &etvk_vulkan::DeviceCaps) -> usize {
    let max = half_gemv_max_chunks_for(
        caps.max_workgroup_invocations
            .min(caps.max_workgroup_size[0]),
        caps.subgroup_size,
        caps.max_shared_memory_size,
    );
    static CAP: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let cap = *CAP.get_or_init(|| {
        std::env::var("ETVK_Q4_HALF_MAX_CHUNKS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&c| (32..=512).contains(&c) && c % 32 == 0)
    });
    cap.map_or(max, |c| c.max(HALF_GEMV_LOCAL as usize / 2).min(max))
}

/// Most chunks per slice of the half-chunk GEMV over rows of `kc` chunks where one workgroup
/// holds up to `wide` ([`half_gemv_max_chunks`]): `wide` where the whole row fits, else 256.
/// Wider workgroups pay where they leave the row unsliced; in slices, two workgroups of up
/// to 512 per SM beat one wider one (H100, session 41: N = 8192, K = 28672 in two slices of
/// 448 chunks 57.1-57.2 us against four of 224's 56.5-56.6; whole rows of 344..512 chunks
/// 5.4-12% faster than two slices, 264 chunks 1.3%).
pub(super) fn half_gemv_slice_limit(kc: usize, wide: usize) -> usize {
    let narrow = HALF_GEMV_LOCAL as usize / 2;
    if kc <= wide {
        wide.max(narrow)
    } else {
        narrow
    }
}

/// [`half_gemv_max_chunks`] from the limits: workgroups of `invocations` in x, subgroups of
/// `subgroup`, `shared` bytes of shared memory.
pub(super) fn half_gemv_max_chunks_for(invocations: u32, subgroup: u32, shared: u32) -> usize {
    let mut local = HALF_GEMV_LOCAL_MAX
        .min(invocations)
        .min(subgroup.saturating_mul(128));
    while local > HALF_GEMV_LOCAL && half_gemv_shared_bytes(local) > shared {
        local -= 32;
    }
    (local.max(HALF_GEMV_LOCAL) / 2) as usize
}

/// Invocations per workgroup of the half-chunk GEMV over rows of `kc` chunks, slices of at
/// most `max_chunks` ([`half_gemv_max_chunks`]): one per half chunk of a slice (of the row
/// when unsliced), in whole subgroups of 32; so no more than 31 idle (slices of 224 chunks
/// idled 64 of 512). `ETVK_Q4_HALF_LOCAL` (benchmarks) widens it to a multiple of 32 up to
/// 512.
pub(super) fn half_gemv_local(kc: usize, max_chunks: usize) -> u32 {
    let cs = half_gemv_slice_chunks(kc, half_gemv_slices(kc, max_chunks));
    let fit = (2 * cs)
        .next_multiple_of(32)
        .clamp(32, 2 * max_chunks.max(16)) as u32;
    static WIDER: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let wider = *WIDER.get_or_init(|| wider_local("ETVK_Q4_HALF_LOCAL", HALF_GEMV_LOCAL));
    wider.map_or(fit, |l| l.max(fit))
}

/// Resident workgroups of a persistent GEMV's wave at `local` invocations per workgroup:
/// the persistent target's two workgroups of `full` invocations per SM (the half-chunk
/// form's 512, the chunk-per-invocation form's 256), as many invocations in smaller ones; at
/// most 8192 (the launch stays one row of the grid: the shaders count their workgroups from
/// the launch size).
/// Workgroups wider than `full` take an SM each (a half-chunk GEMV of more than 512
/// invocations at ~60 registers: the register file holds 1024 invocations).
pub(super) fn persistent_wave(local: u32, full: u32) -> usize {
    if local > full {
        return (persistent_gemv_target() / 2).max(1);
    }
    let per_two = (2 * full / local.max(1)).max(2) as usize;
    (persistent_gemv_target() * per_two / 2).min(8192)
}

/// Slices of a row of `kc` chunks in the half-chunk GEMV: one invocation holds one half
/// chunk's activation limbs, so a slice is at most `max_chunks` chunks
/// ([`half_gemv_slice_limit`]); the slices are as even as the chunks allow
/// ([`half_gemv_slice_chunks`]).
pub(super) fn half_gemv_slices(kc: usize, max_chunks: usize) -> usize {
    kc.div_ceil(max_chunks.max(1)).max(1)
}

/// Whether the unsliced half-chunk GEMV over `n` rows takes its `_early` variant: where
/// every workgroup of its launch ([`half_gemv_sets`]) does at most one row block and the
/// workgroup is at most 256 wide. H200 (docs/performance.md, session 26): 0.3 us faster at
/// 4096^2, N = 1024 and 4096 at K = 4096 / 2048 / 1024, N = 8192 at K = 2048; level at N =
/// 2048, K = 4096; 0.1-0.2 us slower with workgroups of 512 (K > 4096) and 0.6-1.6 us
/// slower where workgroups walk several blocks (the loop's extra branch).
pub(super) fn half_gemv_early(slices: usize, local: u32, n: usize) -> bool {
    slices == 1 && local <= 256 && n.div_ceil(PERSISTENT_GEMV_ROWS) <= half_gemv_sets(1, local)
}

/// Whether the unsliced half-chunk GEMV over `n` rows takes its `_tickets` variant (blocks
/// past the first two rounds handed out by a counter): where its workgroups walk at least
/// [`HALF_TICKETS_MIN_BLOCKS`] blocks each. On an H100 (docs/performance.md, sessions 46-47)
/// 2.0-2.7% faster where they walk 13-14 (N = 28672, K = 8192: 55.7 -> 54.2 us, four rounds
/// in two sessions), 0.1-0.2 us faster at 3.4 (N = 14336, K = 4096), 0.2 us slower at 3.9
/// on 8192^2 and 0-0.1 on N = 32768, K = 2048; no H200 timing yet. The DQ forms take the same
/// rule (session 48, H100: 8da4w N = 28672, K = 8192 55.3-55.4 -> 55.1-55.2 us).
/// `ETVK_Q4_HALF_TICKETS=1`: wherever they walk more than two; `=0`: never.
pub(super) fn half_gemv_tickets(slices: usize, local: u32, n: usize) -> bool {
    static MODE: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    let mode = *MODE.get_or_init(|| match std::env::var("ETVK_Q4_HALF_TICKETS").as_deref() {
        Ok("1") => Some(true),
        Ok("0") => Some(false),
        _ => None,
    });
    let blocks = n.div_ceil(PERSISTENT_GEMV_ROWS);
    let sets = half_gemv_sets(1, local);
    slices == 1
        && match mode {
            Some(forced) => forced && blocks > 2 * sets,
            None => blocks >= HALF_TICKETS_MIN_BLOCKS * sets,
        }
}

/// Blocks per workgroup from which the half GEMV hands its blocks out by tickets.
pub(super) const HALF_TICKETS_MIN_BLOCKS: usize = 8;

/// Block sets of the half-chunk GEMV at `local` invocations (workgroups per slice, at
/// most): the resident wave ([`persistent_wave`]) split evenly over the slices, at least one
/// each.
pub(super) fn half_gemv_sets(slices: usize, local: u32) -> usize {
    (persistent_wave(local, HALF_GEMV_LOCAL) / slices.max(1)).max(1)
}

/// Workgroups per slice of the half-chunk GEMV over `blocks` row blocks with a wave of
/// `sets`: as few as walk the blocks in as many rounds as the wave would, where that keeps
/// at least 7/8 of the wave (8192^2: 256 workgroups of 4 blocks each instead of 264, of which
/// 32 walked 3), so that every workgroup walks the same number of blocks, or one fewer where
/// they do not divide; the launch's time follows its busiest workgroups. Where balancing
/// would cost more of the wave (265 blocks: 133 workgroups of 2) the whole wave runs: the
/// walk is bound by its loads in flight, which a smaller launch cuts (docs/performance.md,
/// session 47). H100: 19.1 against 19.3 us at 8192^2 (session 47); with the tickets rule,
/// 18.8-18.9 against 18.9-19.0 at 8192^2 and 53.6-53.7 against 54.3-54.6 at N = 28672
/// (session 48, three rounds).
/// `ETVK_Q4_HALF_BALANCED=0`: the whole wave always.
pub(super) fn half_gemv_launch_sets(blocks: usize, sets: usize) -> usize {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let on = *ON.get_or_init(|| std::env::var("ETVK_Q4_HALF_BALANCED").map_or(true, |v| v != "0"));
    let sets = sets.max(1);
    if blocks <= sets {
        return blocks;
    }
    let balanced = blocks.div_ceil(blocks.div_ceil(sets));
    if on && 8 * balanced >= 7 * sets {
        balanced
    } else {
        sets
    }
}

/// Chunks per slice of the half-chunk GEMV over rows of `kc` chunks in `slices` slices.
pub(super) fn half_gemv_slice_chunks(kc: usize, slices: usize) -> usize {
    kc.div_ceil(slices.max(1))
}

/// Rows per block of the persistent wide GEMV (its manifest `RW`): 8 rows need 94 registers
/// against 16 rows' 110, and ran ~1% faster on an H200 (17.5 / 44.0 us against 17.7 / 44.5
/// at 8192^2 / N = 28672, K = 8192).
pub(super) const PERSISTENT_GEMV_ROWS: usize = 8;

/// The wide GEMV M = 1 uses, or `None` for the lane-group GEMV: long rows (short ones would
/// idle most of the workgroup) take the wide kernel, in its int8 dot-product form when the
/// device has packed int8 dot products and every scale group is a power-of-two number of
/// 32-code chunks (or one group spans the row); the float form serves every group size.
/// Where its workgroup fits, the int8 form at M = 1 is the half-chunk GEMV (rows of any
/// length: whole up to 256 chunks, or 512 on devices that take workgroups of 1024; longer
/// rows in slices of at most 256).
/// Compile spec [`Q4_GEMV_SPEC`](crate::builder::Q4_GEMV_SPEC), else `ETVK_Q4_GEMV`, = `lanes` | `wide` | `wide_dp4` |
/// `wide_dp4_pre` | `wide_dp4_persist` | `half` overrides the choice (tests, benchmarks).
pub(super) fn wide_gemv(g: &GraphBuilder<'_>, q: &Q4) -> Option<Kernel> {
    let kpad = q.kpad;
    let dp4_ok = groups_are_whole_chunks(q) && g.shader_supported(ShaderId::Q4LinearGemvWideM1Dp4);
    // The persistent form holds one chunk's limbs per invocation: rows of at most 256
    // chunks ([`persist_gemv_local`]).
    let kc = kpad / 32;
    let persist = if dp4_ok {
        persist_gemv_local(kc, 256)
    } else {
        0
    };
    // The half-chunk form (whole rows of up to 256 chunks, 512 where the device takes
    // workgroups of 1024; longer rows in slices of at most 256), where its workgroup fits.
    let caps = g.caps();
    let max_chunks = half_gemv_slice_limit(kc, half_gemv_max_chunks(caps));
    let slices = half_gemv_slices(kc, max_chunks);
    let local = half_gemv_local(kc, max_chunks);
    let forced = forced_gemv(g);
    let early = match forced.as_deref() {
        Some("half_early") => slices == 1,
        Some("half_late" | "half_tickets") => false,
        _ => half_gemv_early(slices, local, q.n),
    };
    let tickets = match forced.as_deref() {
        Some("half_tickets") => slices == 1,
        Some("half_early" | "half_late") => false,
        _ => !early && half_gemv_tickets(slices, local, q.n),
    };
    let half = Kernel::GemvHalf {
        slices: u32::try_from(slices).unwrap_or(u32::MAX),
        local,
        early,
        tickets,
    };
    let half_fits = dp4_ok
        && caps.max_workgroup_invocations >= local
        && caps.max_workgroup_size[0] >= local
        && caps.max_shared_memory_size >= half_gemv_shared_bytes(local)
        && g.shader_supported(shader_of(half, false));
    // With its workgroups fitted to the row (or slice) it beat every other form at M = 1
    // on every row length measured (H200: 4096^2 9.7 -> 8.6 us against the persistent
    // form, N = 8192, K = 8448 in two slices of 132 chunks 23.3 -> 19.0 against the wide
    // one, N = 8192, K = 2048 21.4 -> 8.6 and N = 1024, K = 512 9.2 -> 5.0 against the
    // lane groups; docs/performance.md, session 21).
    let wide = |dp4, persist| Kernel::GemvWide { dp4, persist };
    match forced_gemv(g).as_deref() {
        Some("lanes") => None,
        Some("wide") => Some(wide(false, 0)),
        Some("wide_dp4" | "wide_dp4_pre") if dp4_ok => Some(wide(true, 0)),
        Some("wide_dp4_persist") if persist > 0 => Some(wide(true, persist)),
        _ if half_fits => Some(half),
        _ => (kc >= WIDE_GEMV_MIN_CHUNKS).then_some(wide(dp4_ok, persist)),
    }
}

/// Backward kernel for M rows, `kout` output columns and N weight rows (the reduction);
/// `wide`: the wide backward M = 1 takes ([`wide_backward`]).
pub(super) fn backward_kernel(
    m: usize,
    kout: usize,
    n: usize,
    big_tiles: bool,
    wide: Option<Kernel>,
    staged: bool,
    mma: F16Mma,
) -> Kernel {
    match (m, wide) {
        (0..=1, Some(w)) => w,
        (2, Some(Kernel::BwdWide { cw, .. })) => Kernel::BwdWide {
            cw,
            mt: 2,
            dec: WideDecode::Magic,
        },
        (3..=8, Some(_)) if staged => Kernel::BwdStaged(if m <= 4 { 4 } else { 8 }),
        (0..=8, _) => Kernel::SplitN(small_mt(m)),
        _ => mma_backward_kernel(m, kout, n, mma)
            .unwrap_or_else(|| tiled_kernel(m, kout, n, big_tiles)),
    }
}

/// The wide backward's M = 1 decode (session 19, docs/performance.md: 20.5 -> 19.2 us at
/// 8192^2 with both, ~-3% with the fp16 decode alone on the long shapes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WideDecode {
    /// Codes ORed into 2^23's mantissa (`q4_linear_bwd_wide_m{1,2}_*`): any device.
    Magic,
    /// Codes as fp16 subnormals (`q4_linear_bwd_wide_f16_m1_*`), after a self-check
    /// (`ops/q4_wide_check.rs`); groups of whole chunks.
    F16,
    /// [`WideDecode::F16`] plus 64 invocations that touch the workgroup's weights ahead of
    /// its row groups (`q4_linear_bwd_wide_f16t_m1_*`): at launches of at most two workgroups
    /// per SM (the extra invocations' registers leave no room for a third).
    F16Touch,
}

/// The wide backward M = 1 uses, or `None` for the split-N kernel: packed rows of at least
/// [`WIDE_BWD_MIN_CHUNKS`] chunks (shorter ones would leave most lanes of a column block
/// idle); its M = 2 form and the staged backward (M = 3..8) serve the same rows. Compile
/// spec [`Q4_BWD_SPEC`](crate::builder::Q4_BWD_SPEC), else `ETVK_Q4_BWD`, = `split` |
/// `staged` | `wide[_c8|_c16|_c32][_magic|_f16|_f16t]` overrides the choice (tests,
/// benchmarks; a forced fp16 decode still needs its self-check passed, else the
/// magic decode runs). `m1`: whether the graph can run M = 1 (else the fp16 decode, which
/// only M = 1 takes, is not self-checked for it).
pub(super) fn wide_backward(g: &GraphBuilder<'_>, q: &Q4, m1: bool) -> Option<Kernel> {
    let kc = q.kpad / 32;
    let forced = forced_bwd(g);
    let parsed = forced.as_deref().and_then(parse_forced_wide);
    let (cw, dec) = match (forced.as_deref(), parsed) {
        (Some("split"), _) => return None,
        (Some("staged"), _) => (None, None),
        (_, Some(p)) => p,
        _ if kc >= WIDE_BWD_MIN_CHUNKS => (None, None),
        _ => return None,
    };
    let cw = cw.unwrap_or_else(|| widest_bwd_cw(q.n, kc, wide_bwd_target(q.n, kc)));
    let dec = dec.unwrap_or_else(|| {
        if !groups_are_whole_chunks(q) {
            WideDecode::Magic
        } else if wide_bwd_target(q.n, kc) <= WIDE_BWD_TARGET {
            WideDecode::F16Touch
        } else {
            WideDecode::F16
        }
    });
    // The touch variants' workgroups of 320 need a device that takes them (Vulkan promises
    // only 128 invocations).
    let local = wide_m1_shader(cw, WideDecode::F16Touch).info().local_size[0];
    let caps = g.caps();
    let dec = if dec == WideDecode::F16Touch
        && (caps.max_workgroup_invocations < local || caps.max_workgroup_size[0] < local)
    {
        WideDecode::F16
    } else {
        dec
    };
    let dec = match dec {
        WideDecode::Magic => WideDecode::Magic,
        _ if m1 && g.be.wide_f16_ok(wide_m1_shader(cw, dec)) => dec,
        _ => WideDecode::Magic,
    };
    Some(Kernel::BwdWide { cw, mt: 1, dec })
}

/// `wide[_cCW][_DECODE]` -> the forced column width and decode (None: the runtime's choice);
/// None for another string.
pub(super) fn parse_forced_wide(f: &str) -> Option<(Option<u32>, Option<WideDecode>)> {
    let mut rest = f.strip_prefix("wide")?;
    let mut cw = None;
    for (tag, w) in [("_c8", 8), ("_c16", 16), ("_c32", 32)] {
        if let Some(r) = rest.strip_prefix(tag) {
            cw = Some(w);
            rest = r;
        }
    }
    let dec = match rest {
        "" => None,
        "_magic" => Some(WideDecode::Magic),
        "_f16" => Some(WideDecode::F16),
        "_f16t" => Some(WideDecode::F16Touch),
        _ => return None,
    };
    Some((cw, dec))
}

/// Values of compile spec [`Q4_MMA_SPEC`](crate::builder::Q4_MMA_SPEC).
const MMA_SETTINGS: &[&str] = &[
    "on",
    "1",
    "off",
    "0",
    "emulated",
    "emulated_reg",
    "cm2",
    "cm2_f16",
];

/// Values of compile spec [`Q4_FMA_SPEC`](crate::builder::Q4_FMA_SPEC).
const FMA_SETTINGS: &[&str] = &["on", "1", "off", "0"];

/// Rejects a value of the 4-bit linears' compile specs (`etvk_q4_gemv`, `etvk_q4_bwd`,
/// `etvk_q4_mma`, `etvk_q4_fma`) that no kernel choice reads: a typo would otherwise leave the default in
/// place without a word. (The `ETVK_Q4_*` environment variables of benchmarks are not
/// checked.)
pub(crate) fn check_compile_specs(
    gemv: Option<&str>,
    bwd: Option<&str>,
    mma: Option<&str>,
    fma: Option<&str>,
) -> Result<()> {
    let bad = |name: &str, v: &str, allowed: &str| {
        Err(crate::error::invalid_arg(format!(
            "compile spec {name} = {v:?} is not one of {allowed}"
        )))
    };
    if let Some(v) = gemv.filter(|v| !crate::builder::Q4_GEMV_FORMS.contains(v)) {
        return bad(
            crate::builder::Q4_GEMV_SPEC,
            v,
            &crate::builder::Q4_GEMV_FORMS.join(", "),
        );
    }
    if let Some(v) = bwd.filter(|v| {
        !["split", "staged", "mma_emulated"].contains(v) && parse_forced_wide(v).is_none()
    }) {
        return bad(
            crate::builder::Q4_BWD_SPEC,
            v,
            "split, staged, mma_emulated, wide[_c8|_c16|_c32][_magic|_f16|_f16t]",
        );
    }
    if let Some(v) = mma.filter(|v| !MMA_SETTINGS.contains(v)) {
        return bad(crate::builder::Q4_MMA_SPEC, v, &MMA_SETTINGS.join(", "));
    }
    if let Some(v) = fma.filter(|v| !FMA_SETTINGS.contains(v)) {
        return bad(crate::builder::Q4_FMA_SPEC, v, &FMA_SETTINGS.join(", "));
    }
    Ok(())
}

/// The forced backward choice: compile spec [`Q4_BWD_SPEC`](crate::builder::Q4_BWD_SPEC), else `ETVK_Q4_BWD`.
pub(super) fn forced_bwd(g: &GraphBuilder<'_>) -> Option<String> {
    g.q4_bwd
        .clone()
        .or_else(|| std::env::var("ETVK_Q4_BWD").ok())
}

/// The wide backward's column-block width for N rows of `kc` chunks: the one whose geometry
/// launches the most workgroups within `target` (the kernel is latency-bound, so its speed
/// follows the resident workgroups: H200, N = 8192, K = 28672: 252 workgroups of 32 chunks
/// 66.5 us, 224 of 8 chunks 71.8 us), the narrowest on a tie (fewer slices for the last
/// workgroup to sum: 8192^2, 256 workgroups each: 8 chunks 23.7 us, 32 chunks 26.2 us).
pub(super) fn widest_bwd_cw(n: usize, kc: usize, target: usize) -> u32 {
    let mut best = (0, 8);
    // Blocks wider than the row would idle columns (H200, N = 2048, K = 512: 32 chunks
    // 11.0 us, 8 chunks 7.8; session 21).
    for cw in [8u32, 16, 32]
        .into_iter()
        .filter(|&cw| cw == 8 || cw as usize <= kc)
    {
        let geo = wide_bwd_geometry(n, kc, cw, target);
        let wgs = geo.blocks * geo.slices;
        if wgs <= target && wgs > best.0 {
            best = (wgs, cw);
        }
    }
    best.1
}

/// The wide backward kernel for N rows of `kc` chunks (its launch target:
/// [`wide_bwd_target`]), with the magic decode (the decode needs the device: [`wide_backward`]).
#[cfg(test)]
pub(super) fn widest_bwd(n: usize, kc: usize) -> Kernel {
    Kernel::BwdWide {
        cw: widest_bwd_cw(n, kc, wide_bwd_target(n, kc)),
        mt: 1,
        dec: WideDecode::Magic,
    }
}

/// Workgroups the wide backward aims for: two per SM of an H200 ([`WIDE_BWD_TARGET`]), or
/// three ([`WIDE_BWD_TARGET_DEEP`]: its 78 registers per invocation leave room for three
/// 256-invocation workgroups) when each row group would still walk at least
/// [`WIDE_BWD_DEEP_MIN_ROWS`] rows. H200 (journal, session 4), two / three per SM: N = 28672,
/// K = 8192 55.3 / 51.8 us; N = 8192, K = 28672 55.0 / 51.7 us; but 8192^2 (24 rows per row
/// group at three per SM) 20.6 / 21.6 us. Device-independent like [`Tile::split_target`];
/// `ETVK_Q4_BWD_WGS` overrides it (benchmarks). Weights of at most
/// [`WIDE_BWD_SMALL_CODES`] codes take one per SM ([`WIDE_BWD_TARGET_SMALL`]): fewer
/// slices for the last workgroup of each column block to add.
pub(super) fn wide_bwd_target(n: usize, kc: usize) -> usize {
    if let Some(t) = wide_bwd_target_override() {
        return t;
    }
    if n.saturating_mul(kc).saturating_mul(32) <= WIDE_BWD_SMALL_CODES {
        return WIDE_BWD_TARGET_SMALL;
    }
    let deep = WIDE_BWD_TARGET_DEEP;
    let cw = widest_bwd_cw(n, kc, deep);
    let geo = wide_bwd_geometry(n, kc, cw, deep);
    let row_groups = (LOCAL / cw).max(1) as usize;
    if geo.rows / row_groups >= WIDE_BWD_DEEP_MIN_ROWS {
        deep
    } else {
        WIDE_BWD_TARGET
    }
}
pub(super) const WIDE_BWD_TARGET: usize = 264;
/// H200 (docs/performance.md, session 25 run 5, timed through `ETVK_Q4_BWD_WGS=132`, which
/// reaches the same geometry and decode): one workgroup per SM against two, us: 4096^2 11.5 -> 11.0, N = 8192, K = 2048 12.0 -> 11.3; level at 2048^2,
/// N = 4096, K = 1024 and N = 2048, K = 8192 (2^24 codes); slower from 2^25 codes on (N =
/// 4096, K = 8192 13.7 -> 14.5; 14336 x 4096 17.8 -> 20.0).
pub(super) const WIDE_BWD_TARGET_SMALL: usize = 132;
pub(super) const WIDE_BWD_SMALL_CODES: usize = 1 << 24;
pub(super) const WIDE_BWD_TARGET_DEEP: usize = 396;
pub(super) const WIDE_BWD_DEEP_MIN_ROWS: usize = 64;

/// Geometry of the wide backward for N weight rows and `kc` chunks per packed row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WideBwdGeometry {
    /// Column blocks of CW chunks (the kernel's `CW`).
    pub(super) blocks: usize,
    /// Rows per slice, a multiple of 4 * RG, RG = 256 / CW row groups (each row group's rows then
    /// start 16-byte aligned in d_out).
    pub(super) rows: usize,
    /// Slices: `ceil(n / rows)`, all non-empty.
    pub(super) slices: usize,
}

pub(super) fn wide_bwd_geometry(n: usize, kc: usize, cw: u32, target: usize) -> WideBwdGeometry {
    let cw = cw.max(1) as usize;
    let blocks = kc.div_ceil(cw).max(1);
    let unit = 4 * (LOCAL as usize / cw).max(1);
    let n = n.max(1);
    // Rounded down: one workgroup past a full wave costs a second wave.
    let want = (target.max(1) / blocks).clamp(1, n.div_ceil(unit));
    let rows = n.div_ceil(want).next_multiple_of(unit);
    WideBwdGeometry {
        blocks,
        rows,
        slices: n.div_ceil(rows),
    }
}

/// Workgroups of the persistent wide GEMV: two per SM of an H200 (128 registers per
/// invocation leave room for two 256-invocation workgroups), so that every workgroup is
/// resident at once. `ETVK_Q4_WIDE_WGS` overrides it (benchmarks).
pub(super) const PERSISTENT_GEMV_TARGET: usize = 264;

/// Read once per process: the launch computation runs at every resize.
pub(super) fn persistent_gemv_target() -> usize {
    static TARGET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *TARGET.get_or_init(|| workgroup_target("ETVK_Q4_WIDE_WGS", PERSISTENT_GEMV_TARGET))
}

/// Workgroups of the M = 2 wide backward and the staged backward at MT = 4: two per SM
/// (their 64 accumulators per invocation leave no room for a third), or `ETVK_Q4_BWD_WGS`.
pub(super) fn bwd_target_two_per_sm() -> usize {
    wide_bwd_target_override().unwrap_or(WIDE_BWD_TARGET)
}

/// Workgroups of the staged backward at MT = `mt`: at MT = 8 one per SM (144 registers
/// leave no room for a second, so 264 ran as two waves: H200 57.9 / 162.9 / 182.4 us at
/// 8192^2 / N = 28672, K = 8192 / N = 8192, K = 28672 against 53.2 / 156.1 / 175.8 at 132),
/// at MT = 4 two (100 registers), or `ETVK_Q4_BWD_WGS`.
pub(super) fn staged_bwd_target(mt: u32) -> usize {
    wide_bwd_target_override().unwrap_or(if mt >= 8 {
        WIDE_BWD_TARGET / 2
    } else {
        WIDE_BWD_TARGET
    })
}

/// `ETVK_Q4_BWD_WGS`, when set to a positive number (read once per process).
pub(super) fn wide_bwd_target_override() -> Option<usize> {
    static TARGET: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *TARGET.get_or_init(|| {
        let t = workgroup_target("ETVK_Q4_BWD_WGS", 0);
        (t > 0).then_some(t)
    })
}

/// A workgroup-count target: environment variable `var` when it holds a positive number
/// (benchmarks compare launch sizes), else `default`; at most 8192 (the persistent GEMV's
/// launch must stay one row of the grid).
pub(super) fn workgroup_target(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v: &usize| v > 0)
        .unwrap_or(default)
        .min(8192)
}

/// Geometry of the split backward for N weight rows and `kout` output columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SplitGeometry {
    /// Packed words per row that hold output columns (`ceil(kout / 8)`); the partial rows
    /// are `8 * kwo` floats long.
    pub(super) kwo: usize,
    /// Weight rows per slice (a multiple of 4, so the shader's vec4 loads of `d_out` stay
    /// aligned).
    pub(super) rows: usize,
    /// Slices: `ceil(n / rows)`, all non-empty.
    pub(super) slices: usize,
}

/// Slices of the split backward: about [`SPLIT_INVOCATIONS`] invocations (one per word
/// column and slice) with at least [`SPLIT_MIN_ROWS`] rows per slice (unless N itself is
/// smaller: then one slice). Independent of M.
pub(super) fn split_geometry(n: usize, kout: usize) -> SplitGeometry {
    let kwo = kout.div_ceil(8).max(1);
    let n = n.max(1);
    // floor(N / 16) slices at most, so that ceil(N / slices) >= 16.
    let want = SPLIT_INVOCATIONS
        .div_ceil(kwo)
        .clamp(1, (n / SPLIT_MIN_ROWS).max(1));
    let rows = n.div_ceil(want).next_multiple_of(4);
    SplitGeometry {
        kwo,
        rows,
        slices: n.div_ceil(rows),
    }
}

/// M past which no kernel choice changes: the tile is fixed for M >= 128, and at least
/// `ceil(M / 128) > 528` tiles exceed every tile's split-K target, so nothing splits.
pub(super) const STABLE_M: usize = 128 * 528;

/// What one op's resize fn can pick over the M values it can see: every M in `0..=max_m`
/// when the graph is dynamic, only `max_m` otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    /// Distinct kernels, `max_m`'s first (only these pipelines are built).
    pub(super) kernels: Vec<Kernel>,
    /// The largest `scratch(m, kernel)` over those M: floats of partial sums to allocate.
    pub(super) scratch_floats: usize,
}

/// [`Plan`] for a `choose` of the shape of [`forward_kernel`] / [`backward_kernel`], whose
/// partial sums `scratch` are `S * M * C` with S fixed while the tile and its tile count are.
/// Above M = 8 both change only between runs of M with equal `ceil(M / BM)` (every BM is a
/// multiple of 32) or at a tile's range (9..=32, 33..=127, 128..), and the scratch grows
/// with M within a run, so the last M of each run (a multiple of 32, or 127, or max_m) shows
/// every kernel and the largest scratch; past [`STABLE_M`] nothing changes. About 2k
/// evaluations at most, where a scan of every M would cost 67k per op.
pub(super) fn plan(
    max_m: usize,
    dynamic: bool,
    choose: impl Fn(usize) -> Kernel,
    scratch: impl Fn(usize, Kernel) -> usize,
) -> Plan {
    let mut p = Plan {
        kernels: Vec::new(),
        scratch_floats: 0,
    };
    let mut see = |m: usize| {
        let k = choose(m);
        if !p.kernels.contains(&k) {
            p.kernels.push(k);
        }
        p.scratch_floats = p.scratch_floats.max(scratch(m, k));
    };
    see(max_m);
    if dynamic {
        // 16: the last M of the tensor-core forward's two-fragment run (mma_fragments).
        let last_of_runs = (0..=8).chain([16, 127]).chain((32..=STABLE_M).step_by(32));
        for m in last_of_runs.filter(|&m| m < max_m) {
            see(m);
        }
    }
    p
}

/// The M = 1 wide backward's variant for CW = `cw` (8, 16, else 32) and `dec`.
fn wide_m1_shader(cw: u32, dec: WideDecode) -> ShaderId {
    use WideDecode::{F16Touch, Magic, F16};
    match (cw, dec) {
        (8, Magic) => ShaderId::Q4LinearBwdWideM1C8,
        (16, Magic) => ShaderId::Q4LinearBwdWideM1C16,
        (_, Magic) => ShaderId::Q4LinearBwdWideM1C32,
        (8, F16) => ShaderId::Q4LinearBwdWideF16M1C8,
        (16, F16) => ShaderId::Q4LinearBwdWideF16M1C16,
        (_, F16) => ShaderId::Q4LinearBwdWideF16M1C32,
        (8, F16Touch) => ShaderId::Q4LinearBwdWideF16tM1C8,
        (16, F16Touch) => ShaderId::Q4LinearBwdWideF16tM1C16,
        (_, F16Touch) => ShaderId::Q4LinearBwdWideF16tM1C32,
    }
}

pub(super) fn shader_of(k: Kernel, backward: bool) -> ShaderId {
    use Tile::*;
    match (k, backward) {
        (Kernel::Gemv(1), _) => ShaderId::Q4LinearGemvM1,
        (Kernel::Gemv(2), _) => ShaderId::Q4LinearGemvM2,
        (Kernel::Gemv(4), _) => ShaderId::Q4LinearGemvM4,
        (Kernel::Gemv(_), _) => ShaderId::Q4LinearGemvM8,
        (Kernel::GemvWide { dp4: false, .. }, _) => ShaderId::Q4LinearGemvWideM1,
        (Kernel::GemvWide { persist, .. }, _) if persist > 0 => {
            ShaderId::Q4LinearGemvWideDp4Persist
        }
        (
            Kernel::GemvHalf {
                slices: 1,
                early: true,
                ..
            },
            _,
        ) => ShaderId::Q4LinearGemvHalfEarly,
        (
            Kernel::GemvHalf {
                slices: 1,
                tickets: true,
                ..
            },
            _,
        ) => ShaderId::Q4LinearGemvHalfTickets,
        (Kernel::GemvHalf { slices: 1, .. }, _) => ShaderId::Q4LinearGemvHalf,
        (Kernel::GemvHalf { .. }, _) => ShaderId::Q4LinearGemvHalfSliced,
        (Kernel::GemvFma { mt: 2, wpl: 2, .. }, _) => ShaderId::Q4LinearGemvFmaW2M2,
        (Kernel::GemvFma { wpl: 2, .. }, _) => ShaderId::Q4LinearGemvFmaW2M4,
        (Kernel::GemvFma { mt: 2, .. }, _) => ShaderId::Q4LinearGemvFmaM2,
        (Kernel::GemvFma { mt: 4, .. }, _) => ShaderId::Q4LinearGemvFmaM4,
        (Kernel::GemvFma { .. }, _) => ShaderId::Q4LinearGemvFmaM8,
        (Kernel::GemvWide { .. }, _) => ShaderId::Q4LinearGemvWideM1Dp4,
        (Kernel::SplitN(1), _) => ShaderId::Q4LinearBwdSplitM1,
        (Kernel::SplitN(2), _) => ShaderId::Q4LinearBwdSplitM2,
        (Kernel::SplitN(4), _) => ShaderId::Q4LinearBwdSplitM4,
        (Kernel::SplitN(_), _) => ShaderId::Q4LinearBwdSplitM8,
        (Kernel::BwdStaged(4), _) => ShaderId::Q4LinearBwdStagedM4,
        (Kernel::BwdStaged(_), _) => ShaderId::Q4LinearBwdStagedM8,
        (Kernel::BwdWide { cw: 8, mt: 2, .. }, _) => ShaderId::Q4LinearBwdWideM2C8,
        (Kernel::BwdWide { cw: 16, mt: 2, .. }, _) => ShaderId::Q4LinearBwdWideM2C16,
        (Kernel::BwdWide { mt: 2, .. }, _) => ShaderId::Q4LinearBwdWideM2C32,
        (Kernel::BwdWide { cw, dec, .. }, _) => wide_m1_shader(cw, dec),
        (
            Kernel::Mma {
                frags,
                emulated,
                reg: true,
            },
            _,
        ) => match (frags, emulated) {
            (1, false) => ShaderId::Q4LinearMmaRegF1,
            (1, true) => ShaderId::Q4LinearMmaRegEmuF1,
            (2, false) => ShaderId::Q4LinearMmaRegF2,
            (2, true) => ShaderId::Q4LinearMmaRegEmuF2,
            (_, false) => ShaderId::Q4LinearMmaRegF4,
            (_, true) => ShaderId::Q4LinearMmaRegEmuF4,
        },
        (
            Kernel::Mma {
                frags: 1, emulated, ..
            },
            _,
        ) => match emulated {
            false => ShaderId::Q4LinearMmaF1,
            true => ShaderId::Q4LinearMmaEmuF1,
        },
        (
            Kernel::Mma {
                frags: 2, emulated, ..
            },
            _,
        ) => match emulated {
            false => ShaderId::Q4LinearMmaF2,
            true => ShaderId::Q4LinearMmaEmuF2,
        },
        (Kernel::Mma { emulated, .. }, _) => match emulated {
            false => ShaderId::Q4LinearMmaF4,
            true => ShaderId::Q4LinearMmaEmuF4,
        },
        (
            Kernel::BwdMma {
                emulated: true,
                split,
                ..
            },
            _,
        ) => match split {
            false => ShaderId::Q4LinearBwdMmaEmuT32x128,
            true => ShaderId::Q4LinearBwdMmaEmuT32x128Split,
        },
        (
            Kernel::FwdMma {
                tile: Tile::Cm2, ..
            },
            _,
        ) => ShaderId::Q4LinearCm2,
        (
            Kernel::FwdMma {
                tile: Tile::Cm2F16, ..
            },
            _,
        ) => ShaderId::Q4LinearCm2F16,
        (
            Kernel::FwdMma {
                tile,
                emulated,
                x16,
                codes: true,
                split: true,
            },
            _,
        ) => match (emulated, x16, tile) {
            (true, false, _) => ShaderId::Q4LinearFwdMmaCEmuT32x128Split,
            (true, true, _) => ShaderId::Q4LinearFwdMmaCX16EmuT32x128Split,
            (false, false, T128) => ShaderId::Q4LinearFwdMmaCT128Split,
            (false, false, _) => ShaderId::Q4LinearFwdMmaCT32x128Split,
            (false, true, T128) => ShaderId::Q4LinearFwdMmaCX16T128Split,
            (false, true, _) => ShaderId::Q4LinearFwdMmaCX16T32x128Split,
        },
        (
            Kernel::FwdMma {
                tile,
                emulated,
                x16,
                codes,
                ..
            },
            _,
        ) => match (codes, emulated, x16, tile) {
            (false, true, false, _) => ShaderId::Q4LinearFwdMmaEmuT32x128,
            (false, true, true, _) => ShaderId::Q4LinearFwdMmaX16EmuT32x128,
            (false, false, false, T128) => ShaderId::Q4LinearFwdMmaT128,
            (false, false, false, _) => ShaderId::Q4LinearFwdMmaT32x128,
            (false, false, true, T128) => ShaderId::Q4LinearFwdMmaX16T128,
            (false, false, true, _) => ShaderId::Q4LinearFwdMmaX16T32x128,
            (true, true, false, _) => ShaderId::Q4LinearFwdMmaCEmuT32x128,
            (true, true, true, _) => ShaderId::Q4LinearFwdMmaCX16EmuT32x128,
            (true, false, false, T128) => ShaderId::Q4LinearFwdMmaCT128,
            (true, false, false, _) => ShaderId::Q4LinearFwdMmaCT32x128,
            (true, false, true, T128) => ShaderId::Q4LinearFwdMmaCX16T128,
            (true, false, true, _) => ShaderId::Q4LinearFwdMmaCX16T32x128,
        },
        (Kernel::BwdMma { tile, split, .. }, _) => match (tile, split) {
            (T128, false) => ShaderId::Q4LinearBwdMmaT128,
            (T128, true) => ShaderId::Q4LinearBwdMmaT128Split,
            (_, false) => ShaderId::Q4LinearBwdMmaT32x128,
            (_, true) => ShaderId::Q4LinearBwdMmaT32x128Split,
        },
        (Kernel::Tiled { tile, split }, bwd) => match (tile, split, bwd) {
            (T32x128, false, false) => ShaderId::Q4LinearTiledFwdT32x128,
            (T64, false, false) => ShaderId::Q4LinearTiledFwdT64,
            (T128 | Cm2 | Cm2F16, false, false) => ShaderId::Q4LinearTiledFwdT128,
            (T32x128, true, false) => ShaderId::Q4LinearTiledFwdT32x128Split,
            (T64, true, false) => ShaderId::Q4LinearTiledFwdT64Split,
            (T128 | Cm2 | Cm2F16, true, false) => ShaderId::Q4LinearTiledFwdT128Split,
            (T32x128, false, true) => ShaderId::Q4LinearTiledBwdT32x128,
            (T64, false, true) => ShaderId::Q4LinearTiledBwdT64,
            (T128 | Cm2 | Cm2F16, false, true) => ShaderId::Q4LinearTiledBwdT128,
            (T32x128, true, true) => ShaderId::Q4LinearTiledBwdT32x128Split,
            (T64, true, true) => ShaderId::Q4LinearTiledBwdT64Split,
            (T128 | Cm2 | Cm2F16, true, true) => ShaderId::Q4LinearTiledBwdT128Split,
        },
    }
}

/// GEMV lanes per row group: about 16 packed words of a row per lane, 8..=64 (>= MT * R,
/// the lanes that finish the sums); the rest of the 256 invocations are row groups. Long rows
/// get 64 lanes so that even N = 8192 keeps ~130k invocations in flight on a large GPU.
pub(super) fn gemv_lanes(kpad: usize, _mt: u32) -> u32 {
    (kpad / 8 / 16).next_power_of_two().clamp(8, 64) as u32
}

/// Output rows per GEMV workgroup: each lane group owns `8 / MT` rows (q4_linear_gemv.comp).
pub(super) fn gemv_rows_per_group(kernel: Kernel, kpad: usize) -> usize {
    match kernel {
        Kernel::Gemv(mt) => gemv_shape(kernel, kpad).1 * (4 / mt as usize).max(1),
        Kernel::GemvWide { persist, .. } if persist > 0 => PERSISTENT_GEMV_ROWS,
        Kernel::GemvHalf { .. } => PERSISTENT_GEMV_ROWS,
        Kernel::GemvWide { .. } => WIDE_GEMV_ROWS,
        _ => 1,
    }
}

/// (lanes per row group, row groups per workgroup) of a GEMV kernel; `(1, 1)` for tiled
/// kernels.
pub(super) fn gemv_shape(kernel: Kernel, kpad: usize) -> (u32, usize) {
    match kernel {
        Kernel::Gemv(mt) => {
            let lanes = gemv_lanes(kpad, mt);
            (lanes, (LOCAL / lanes) as usize)
        }
        _ => (1, 1),
    }
}

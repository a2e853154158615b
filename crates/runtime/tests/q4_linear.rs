//! The 4-bit linear family (`et_vk.linear_q4gsw`, its alias and backward,
//! `et_vk.linear_qcs4w`) against an f64 CPU reference, the packed-weight prepack (CPU and
//! GPU packers bit for bit, one shared buffer for forward + backward), the load-time
//! limits, dynamic M re-selecting kernels, and the exporter fixtures c1 / d1 / f1.
//!
//! Random data per the issue: codes uniform in [0, 15], scales uniform in [0.005, 0.015],
//! activations uniform in [-1, 1], fresh per case (seeded, so failures reproduce).

mod common;
use common::*;

use etvk_format::ir::DataType;
use etvk_format::writer::{named_key, GraphBuilder};
use etvk_runtime::prepack::q4::{pack_q4_weights, NibbleOrder};
use etvk_runtime::*;

const Q4GSW: &str = "et_vk.linear_q4gsw.default";
const Q4GSW_ALIAS: &str = "et_vk.q4gsw_linear.default";
const Q4GSW_BWD: &str = "et_vk.linear_q4gsw_backward.default";
const QCS4W: &str = "et_vk.linear_qcs4w.default";
/// Compile spec of the tensor-core forward (`etvk_runtime`'s `Q4_MMA_SPEC`).
const MMA_SPEC: &str = "etvk_q4_mma";
const FMA_SPEC: &str = "etvk_q4_fma";

/// Compile spec turning the FMA GEMV (M = 2..8) off, for tests of the kernels it replaces.
fn fma_off() -> (String, Vec<u8>) {
    (FMA_SPEC.to_string(), b"off".to_vec())
}

/// Whether the device runs the FMA GEMV at M = 2..8 (scale groups of whole 8-code words):
/// subgroup shuffles in subgroups of 8..=128 invocations.
fn fma_runs(be: &Backend) -> bool {
    let caps = be.device_caps();
    caps.subgroup_shuffle
        && caps.subgroup_size.is_power_of_two()
        && (8..=128).contains(&caps.subgroup_size)
}

/// splitmix64: a small seeded PRNG (no dependencies).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    fn code(&mut self) -> u8 {
        (self.next_u64() >> 60) as u8
    }
    fn floats(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi) as f32).collect()
    }
}

/// Random 4-bit weights: codes [n][k] for k < K (padding up to 2 * row_bytes is code 8, as
/// the exporter writes it) and their serialized bytes in `order`.
struct Weights {
    n: usize,
    /// Logical K (codes past it are 8).
    k: usize,
    row_bytes: usize,
    codes: Vec<u8>,
    bytes: Vec<u8>,
}

fn random_weights(
    rng: &mut Rng,
    n: usize,
    k: usize,
    row_bytes: usize,
    order: NibbleOrder,
) -> Weights {
    let kp = 2 * row_bytes;
    assert!(kp >= k);
    let mut codes = vec![8u8; n * kp];
    for r in 0..n {
        for c in 0..k {
            codes[r * kp + c] = rng.code();
        }
    }
    let bytes = serialize(&codes, n, row_bytes, order);
    Weights {
        n,
        k,
        row_bytes,
        codes,
        bytes,
    }
}

fn serialize(codes: &[u8], n: usize, row_bytes: usize, order: NibbleOrder) -> Vec<u8> {
    let kp = 2 * row_bytes;
    let mut out = vec![0u8; n * row_bytes];
    for r in 0..n {
        for j in 0..row_bytes {
            let (even, odd) = (codes[r * kp + 2 * j], codes[r * kp + 2 * j + 1]);
            out[r * row_bytes + j] = match order {
                NibbleOrder::EvenLow => even | (odd << 4),
                NibbleOrder::EvenHigh => (even << 4) | odd,
            };
        }
    }
    out
}

impl Weights {
    fn kp(&self) -> usize {
        2 * self.row_bytes
    }
    /// q(n, k) = code - 8 for k < Kp.
    fn q(&self, n: usize, k: usize) -> f64 {
        self.codes[n * self.kp() + k] as f64 - 8.0
    }
}

/// Dequantized W[n][k] (k < Kp) with q4gsw per-group scales `[G, n_pad]` (k >= G * gs: 0).
fn dequant_gsw(w: &Weights, scales: &[f32], n_pad: usize, gs: usize) -> Vec<f64> {
    let g_count = scales.len() / n_pad;
    let kp = w.kp();
    let mut out = vec![0f64; w.n * kp];
    for n in 0..w.n {
        for k in 0..kp {
            let g = k / gs;
            if g < g_count {
                out[n * kp + k] = w.q(n, k) * scales[g * n_pad + n] as f64;
            }
        }
    }
    out
}

/// out[m][n] = sum_{k < K} x[m][k] * wd[n][k] + bias[n].
fn ref_forward(
    x: &[f32],
    wd: &[f64],
    kp: usize,
    bias: Option<&[f32]>,
    m: usize,
    k: usize,
    n: usize,
) -> Vec<f64> {
    let mut out = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = bias.map(|b| b[j] as f64).unwrap_or(0.0);
            for kk in 0..k {
                acc += x[i * k + kk] as f64 * wd[j * kp + kk];
            }
            out[i * n + j] = acc;
        }
    }
    out
}

/// dx[m][k] = sum_n dy[m][n] * wd[n][k] for k < kout.
fn ref_backward(dy: &[f32], wd: &[f64], kp: usize, m: usize, n: usize, kout: usize) -> Vec<f64> {
    let mut out = vec![0f64; m * kout];
    for i in 0..m {
        for k in 0..kout {
            let mut acc = 0f64;
            for j in 0..n {
                acc += dy[i * n + j] as f64 * wd[j * kp + k];
            }
            out[i * kout + k] = acc;
        }
    }
    out
}

/// `||got - want|| / ||want|| <= 1e-5`.
fn assert_rel(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let (mut num, mut den) = (0f64, 0f64);
    for (g, w) in got.iter().zip(want) {
        num += (*g as f64 - w).powi(2);
        den += w * w;
    }
    let rel = (num / den.max(1e-300)).sqrt();
    assert!(rel <= 1e-5, "{what}: relative error {rel:e} > 1e-5");
}

fn f32b(v: &[f32]) -> Vec<u8> {
    f32_bytes(v)
}

/// A graph under construction plus its named data.
struct G {
    b: GraphBuilder,
    named: MapData,
}

impl G {
    fn new() -> G {
        G {
            b: GraphBuilder::new(),
            named: MapData::default(),
        }
    }
    fn constant(&mut self, dtype: DataType, dims: &[usize], bytes: Vec<u8>) -> usize {
        let key = named_key(&bytes);
        let id = self.b.add_constant_named(dtype, dims, &key);
        self.named.0.insert(key, bytes);
        id
    }
    fn input(&mut self, dims: &[usize]) -> usize {
        let id = self.b.add_tensor(DataType::Float32, dims);
        self.b.mark_input(id);
        id
    }
    fn output(&mut self, dims: &[usize]) -> usize {
        let id = self.b.add_tensor(DataType::Float32, dims);
        self.b.mark_output(id);
        id
    }
    /// Loads with the portable forward kernels unless `specs` names the tensor-core one's
    /// spec (these tests name the portable kernels they expect; the tensor-core forward has
    /// tests of its own).
    fn load(self, be: &std::sync::Arc<Backend>, specs: &[(String, Vec<u8>)]) -> Result<Delegate> {
        let blob = self.b.finish_delegate();
        let mut specs = specs.to_vec();
        if !specs.iter().any(|(k, _)| k == MMA_SPEC) {
            specs.push((MMA_SPEC.to_string(), b"off".to_vec()));
        }
        Delegate::init(be, &blob, &specs, &self.named)
    }
}

fn dynamic() -> Vec<(String, Vec<u8>)> {
    vec![("require_dynamic_shapes".to_string(), vec![1])]
}

/// One random q4gsw problem: weights, transposed scales [G, round4(N)], its dequantized W.
struct Q4gswCase {
    w: Weights,
    scales: Vec<f32>,
    groups: usize,
    n_pad: usize,
    gs: usize,
    wd: Vec<f64>,
}

fn q4gsw_case(rng: &mut Rng, k: usize, n: usize, gs: usize) -> Q4gswCase {
    let row_bytes = k.div_ceil(8) * 4; // Kp = K rounded up to 8
    let w = random_weights(rng, n, k, row_bytes, NibbleOrder::EvenLow);
    let groups = k.div_ceil(gs);
    let n_pad = n.div_ceil(4) * 4;
    let scales = rng.floats(groups * n_pad, 0.005, 0.015);
    let wd = dequant_gsw(&w, &scales, n_pad, gs);
    Q4gswCase {
        w,
        scales,
        groups,
        n_pad,
        gs,
        wd,
    }
}

/// Add the weights, scales and group size of `c` to `g`: (weights, scales, gs) value ids.
fn add_q4gsw_consts(g: &mut G, c: &Q4gswCase) -> (usize, usize, usize) {
    let w = g.constant(DataType::Uint8, &[c.w.n, c.w.row_bytes], c.w.bytes.clone());
    let s = g.constant(DataType::Float32, &[c.groups, c.n_pad], f32b(&c.scales));
    let gs = g.b.add_int(c.gs as i64);
    (w, s, gs)
}

fn run1(d: &mut Delegate, x_dims: &[usize], x: &[f32]) -> (Vec<usize>, Vec<f32>) {
    let mut args = vec![host_f32(x_dims, x), empty_out()];
    d.execute(&mut args).unwrap();
    out_f32(&args[1])
}

/// Forward q4gsw with x sizes `lead ++ [K]`, optionally with a (padded) bias; returns the
/// profile's node names.
fn check_forward(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    shape: (usize, usize, usize),
    bias: bool,
    op: &str,
) -> Vec<String> {
    check_forward_specs(be, seed, lead, shape, bias, op, &[])
}

/// [`check_forward`] with compile specs (e.g. a forced GEMV).
fn check_forward_specs(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    shape: (usize, usize, usize),
    bias: bool,
    op: &str,
    specs: &[(String, Vec<u8>)],
) -> Vec<String> {
    check_forward_scaled(be, seed, lead, shape, bias, op, specs, |_, _| 1.0)
}

/// [`check_forward_specs`] with x[m][k] scaled by `x_scale(m, k)`; each output row is also
/// checked on its own (rows of very different sizes must each keep fp32's precision).
#[allow(clippy::too_many_arguments)]
fn check_forward_scaled(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    (k, n, gs): (usize, usize, usize),
    bias: bool,
    op: &str,
    specs: &[(String, Vec<u8>)],
    x_scale: impl Fn(usize, usize) -> f32,
) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let c = q4gsw_case(&mut rng, k, n, gs);
    let m: usize = lead.iter().product();
    let mut x = rng.floats(m * k, -1.0, 1.0);
    for (i, v) in x.iter_mut().enumerate() {
        *v *= x_scale(i / k.max(1), i % k.max(1));
    }
    let bias_v = rng.floats(c.n_pad, -1.0, 1.0);
    let mut g = G::new();
    let mut xd = lead.to_vec();
    xd.push(k);
    let mut od = lead.to_vec();
    od.push(n);
    let xi = g.input(&xd);
    let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
    let b = if bias {
        g.constant(DataType::Float32, &[c.n_pad], f32b(&bias_v))
    } else {
        g.b.add_null()
    };
    let o = g.output(&od);
    g.b.add_op(op, &[xi, w, s, gsv, b, o]);
    let mut d = g.load(be, specs).unwrap();
    let (sizes, got) = run1(&mut d, &xd, &x);
    assert_eq!(sizes, od);
    let want = ref_forward(&x, &c.wd, c.w.kp(), bias.then_some(&bias_v[..]), m, k, n);
    let what = format!("{op} lead {lead:?} K {k} N {n} gs {gs} bias {bias}");
    assert_rel(&got, &want, &what);
    for r in 0..m {
        let span = r * n..(r + 1) * n;
        if want[span.clone()].iter().any(|v| *v != 0.0) {
            assert_rel(&got[span.clone()], &want[span], &format!("{what}, row {r}"));
        }
    }
    let names: Vec<String> = d.profile().into_iter().map(|p| p.0).collect();
    assert!(names.iter().all(|p| p.starts_with(op)), "{names:?}");
    names
}

/// Profile names of a split-K tiled kernel and its reduce.
fn split_names(op: &str, tiled: &str) -> Vec<String> {
    vec![
        format!("{op}/q4_linear_tiled_{tiled}_split"),
        format!("{op}/q4_linear_reduce"),
    ]
}

/// Backward with d_out sizes `lead ++ [N]` -> d_x `lead ++ [Kp]`, at shapes too small to
/// split K (the tiled kernels run whole).
fn check_backward(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    k: usize,
    n: usize,
    gs: usize,
) {
    let names = check_backward_cols(be, seed, lead, (k, n, gs), None);
    // M <= 8: the split-N kernel and its reduce, on rows of >= 16 chunks the wide kernel at
    // M = 1, 2 (its decode is the device's) and the staged one above (groups of whole
    // chunks); above 8: one tiled kernel.
    let m: usize = lead.iter().product();
    let whole_chunks = gs.is_multiple_of(32) && (gs / 32).is_power_of_two();
    let want_names = match m {
        1 | 2 if k.div_ceil(32) >= 16 => vec![format!("{Q4GSW_BWD}/q4_linear_bwd_wide_*m{m}_c*")],
        3..=8 if k.div_ceil(32) >= 16 && whole_chunks => {
            vec![format!(
                "{Q4GSW_BWD}/q4_linear_bwd_staged_m{}",
                if m <= 4 { 4 } else { 8 }
            )]
        }
        0..=8 => {
            let mt = m.next_power_of_two();
            vec![
                format!("{Q4GSW_BWD}/q4_linear_bwd_split_m{mt}"),
                format!("{Q4GSW_BWD}/q4_linear_reduce"),
            ]
        }
        9..=32 => vec![format!("{Q4GSW_BWD}/q4_linear_tiled_bwd_t32x128")],
        // The 128 x 128 tile where the device has its shared memory (an H200; lavapipe's
        // 32 KiB do not hold it).
        _ if big_tiles(be) && m >= 128 && k >= 128 => {
            vec![format!("{Q4GSW_BWD}/q4_linear_tiled_bwd_t128")]
        }
        _ => vec![format!("{Q4GSW_BWD}/q4_linear_tiled_bwd_t64")],
    };
    assert_names(&names, &want_names, &format!("backward lead {lead:?}"));
}

/// Profile names against expected ones, where a `*` in an expected name stands for any run
/// of characters (the device-dependent parts: a decode's tag, a column width).
fn assert_names(got: &[String], want: &[String], what: &str) {
    let matches = |g: &str, w: &str| {
        let mut rest = g;
        let parts: Vec<&str> = w.split('*').collect();
        for (i, part) in parts.iter().enumerate() {
            if i == 0 {
                let Some(r) = rest.strip_prefix(part) else {
                    return false;
                };
                rest = r;
            } else if i == parts.len() - 1 {
                return rest.ends_with(part);
            } else {
                let Some(at) = rest.find(part) else {
                    return false;
                };
                rest = &rest[at + part.len()..];
            }
        }
        rest.is_empty()
    };
    assert!(
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| matches(g, w)),
        "{what}: got {got:?}, want {want:?}"
    );
}

/// Whether the device holds the 128 x 128 tile's ~33 KiB of shared memory (the runtime's rule).
fn big_tiles(be: &std::sync::Arc<Backend>) -> bool {
    be.device_caps().max_shared_memory_size >= 2 * 32 * (128 / 4 + 1) * 16
}

/// Backward with d_out sizes `lead ++ [N]` -> d_x `lead ++ [kout]` (default Kp); returns the
/// profile's node names.
fn check_backward_cols(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    (k, n, gs): (usize, usize, usize),
    kout: Option<usize>,
) -> Vec<String> {
    check_backward_forced(be, seed, lead, (k, n, gs), kout, None)
}

/// [`check_backward_cols`] with the backward kernel at M = 1 forced by `etvk_q4_bwd`.
fn check_backward_forced(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    shape: (usize, usize, usize),
    kout: Option<usize>,
    force: Option<&str>,
) -> Vec<String> {
    let specs: Vec<(String, Vec<u8>)> = force
        .map(|f| vec![("etvk_q4_bwd".to_string(), f.as_bytes().to_vec())])
        .unwrap_or_default();
    check_backward_specs(be, seed, lead, shape, kout, &specs, |_| 1.0)
}

/// [`check_backward_forced`] with compile specs `specs` and d_out row m scaled by
/// `row_scale(m)` (gradients of very different sizes per row).
fn check_backward_specs(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    dims: (usize, usize, usize),
    kout: Option<usize>,
    specs: &[(String, Vec<u8>)],
    row_scale: impl Fn(usize) -> f32,
) -> Vec<String> {
    check_backward_scaled(
        be,
        seed,
        lead,
        dims,
        kout,
        specs,
        |m, _| row_scale(m),
        |_| 1.0,
    )
}

/// [`check_backward_specs`] with d_out[m][j] scaled by `dy_scale(m, j)` and every scale of
/// weight row `r` multiplied by `weight_row_scale(r)`.
#[allow(clippy::too_many_arguments)]
fn check_backward_scaled(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    (k, n, gs): (usize, usize, usize),
    kout: Option<usize>,
    specs: &[(String, Vec<u8>)],
    dy_scale: impl Fn(usize, usize) -> f32,
    weight_row_scale: impl Fn(usize) -> f32,
) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let mut c = q4gsw_case(&mut rng, k, n, gs);
    for (i, v) in c.scales.iter_mut().enumerate() {
        *v *= weight_row_scale(i % c.n_pad);
    }
    c.wd = dequant_gsw(&c.w, &c.scales, c.n_pad, c.gs);
    let m: usize = lead.iter().product();
    let kp = c.w.kp();
    let kout = kout.unwrap_or(kp);
    let mut dy = rng.floats(m * n, -1.0, 1.0);
    for (i, v) in dy.iter_mut().enumerate() {
        *v *= dy_scale(i / n.max(1), i % n.max(1));
    }
    let mut g = G::new();
    let mut yd = lead.to_vec();
    yd.push(n);
    let mut xd = lead.to_vec();
    xd.push(kout);
    let yi = g.input(&yd);
    let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
    let o = g.output(&xd);
    g.b.add_op(Q4GSW_BWD, &[yi, w, s, gsv, o]);
    let mut d = g.load(be, specs).unwrap();
    let (sizes, got) = run1(&mut d, &yd, &dy);
    assert_eq!(sizes, xd);
    // Kernels that keep state across launches (the wide kernel's counters) restore it, and
    // every sum runs in a fixed order: a second execute gives the same bits.
    let (_, again) = run1(&mut d, &yd, &dy);
    assert!(
        again
            .iter()
            .zip(&got)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "backward lead {lead:?}: a second execute differs"
    );
    let want = ref_backward(&dy, &c.wd, kp, m, n, kout);
    let what = format!("backward lead {lead:?} K {k} N {n} gs {gs} d_x cols {kout}");
    assert_rel(&got, &want, &what);
    // Row by row too: d_out rows of very different sizes must each keep fp32's precision,
    // not only the largest ones that dominate the norm.
    for r in 0..m {
        let span = r * kout..(r + 1) * kout;
        if want[span.clone()].iter().any(|v| *v != 0.0) {
            assert_rel(&got[span.clone()], &want[span], &format!("{what}, row {r}"));
        }
    }
    d.profile().into_iter().map(|p| p.0).collect()
}

/// The wide backward's finished-slice counters are back at zero after every launch and no
/// partial sum of one launch leaks into the next: one loaded dynamic program runs M = 1, 2,
/// 1, 2, 1 (the M = 1 and M = 2 kernels share the counters and the scratch; at 32-chunk
/// column blocks, 22 slices of 32 rows) with fresh d_out each time, each checked against f64.
#[test]
fn wide_backward_relaunches_with_fresh_data() {
    let be = backend();
    let m1 = if wide_f16_decode_runs(&be) {
        "f16t_m1"
    } else {
        "m1"
    };
    let (mut d, c, mut rng) = dynamic_backward(&be, 360, (4160, 700, 32), 2, None);
    for m in [1, 2, 1, 2, 1] {
        let names = backward_step(&mut d, &mut rng, &c, m, 700);
        let form = if m == 1 { m1 } else { "m2" };
        assert_eq!(
            names,
            vec![format!("{Q4GSW_BWD}/q4_linear_bwd_wide_{form}_c32")]
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Whether the wide backward's fp16 decode passed its self-check on this device (a forced
/// fp16 kernel runs, not the magic one). Lavapipe keeps fp16 subnormals: there it must, or
/// CI would not run the fp16 kernels at all.
fn wide_f16_decode_runs(be: &std::sync::Arc<Backend>) -> bool {
    let names = check_backward_forced(be, 399, &[1], (4160, 40, 32), None, Some("wide_c8_f16"));
    let runs = names == vec![format!("{Q4GSW_BWD}/q4_linear_bwd_wide_f16_m1_c8")];
    if be.device_description().contains("llvmpipe") {
        assert!(runs, "lavapipe: {names:?}");
    }
    runs
}

/// A loaded dynamic program of one backward over a random K x N weight (group size gs) for
/// up to `max_m` rows of d_out (`force`: the `etvk_q4_bwd` spec), its weight, and the
/// generator that made it.
fn dynamic_backward(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    dims: (usize, usize, usize),
    max_m: usize,
    force: Option<&str>,
) -> (Delegate, Q4gswCase, Rng) {
    dynamic_backward_specs(be, seed, dims, max_m, &dynamic_forced("etvk_q4_bwd", force))
}

/// [`dynamic_backward`] loaded with compile specs `specs` (the dynamic-shapes one included).
fn dynamic_backward_specs(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    (k, n, gs): (usize, usize, usize),
    max_m: usize,
    specs: &[(String, Vec<u8>)],
) -> (Delegate, Q4gswCase, Rng) {
    let mut rng = Rng::new(seed);
    let c = q4gsw_case(&mut rng, k, n, gs);
    let mut g = G::new();
    let yi = g.input(&[max_m, n]);
    let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
    let o = g.output(&[max_m, c.w.kp()]);
    g.b.add_op(Q4GSW_BWD, &[yi, w, s, gsv, o]);
    let d = g.load(be, specs).unwrap();
    (d, c, rng)
}

/// A loaded dynamic program of one forward with bias (`bias_len` values, N or N padded) over
/// a random K x N weight for up to `max_m` rows of x (`force`: the `etvk_q4_gemv` spec): the
/// program, its weight, its bias and the generator that made them.
fn dynamic_forward(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    dims: (usize, usize, usize),
    rows: (usize, usize),
    force: Option<&str>,
) -> (Delegate, Q4gswCase, Vec<f32>, Rng) {
    dynamic_forward_specs(be, seed, dims, rows, &dynamic_forced("etvk_q4_gemv", force))
}

/// [`dynamic_forward`] loaded with compile specs `specs` (the dynamic-shapes one included).
fn dynamic_forward_specs(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    (k, n, gs): (usize, usize, usize),
    (max_m, bias_len): (usize, usize),
    specs: &[(String, Vec<u8>)],
) -> (Delegate, Q4gswCase, Vec<f32>, Rng) {
    let mut rng = Rng::new(seed);
    let c = q4gsw_case(&mut rng, k, n, gs);
    let bias_v = rng.floats(bias_len, -1.0, 1.0);
    let mut g = G::new();
    let xi = g.input(&[max_m, k]);
    let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
    let b = g.constant(DataType::Float32, &[bias_len], f32b(&bias_v));
    let o = g.output(&[max_m, n]);
    g.b.add_op(Q4GSW, &[xi, w, s, gsv, b, o]);
    let d = g.load(be, specs).unwrap();
    (d, c, bias_v, rng)
}

/// The dynamic-shapes spec, and compile spec `key` = `force` when given.
fn dynamic_forced(key: &str, force: Option<&str>) -> Vec<(String, Vec<u8>)> {
    let mut specs = dynamic();
    if let Some(f) = force {
        specs.push((key.to_string(), f.as_bytes().to_vec()));
    }
    specs
}

/// One launch of a [`dynamic_forward`] program at M rows of fresh x, checked against f64
/// (`what` names the case); returns the profile's node names.
fn forward_step(
    d: &mut Delegate,
    rng: &mut Rng,
    c: &Q4gswCase,
    bias: &[f32],
    m: usize,
    what: &str,
) -> Vec<String> {
    let (k, n) = (c.w.k, c.w.n);
    let x = rng.floats(m * k, -1.0, 1.0);
    let (sizes, got) = run1(d, &[m, k], &x);
    assert_eq!(sizes, vec![m, n]);
    let want = ref_forward(&x, &c.wd, c.w.kp(), Some(bias), m, k, n);
    assert_rel(&got, &want, &format!("{what} M {m}"));
    d.profile().into_iter().map(|p| p.0).collect()
}

/// The issue's (M, K, N, group_size) table plus odd shapes (N % 4 != 0, K % 8 != 0, x's K
/// unpadded).
const SHAPES: &[(usize, usize, usize, usize)] = &[
    (1, 64, 32, 16),
    (4, 64, 32, 16),
    (5, 128, 64, 32),
    (32, 256, 128, 64),
    (256, 128, 128, 32),
    (1, 2048, 512, 32),
    (7, 96, 40, 32),
    (3, 100, 37, 4),
    (9, 44, 5, 12),
];

#[test]
fn q4gsw_forward_matches_f64_reference() {
    let be = backend();
    for (i, &(m, k, n, gs)) in SHAPES.iter().enumerate() {
        for bias in [false, true] {
            let names = check_forward(
                &be,
                100 + 2 * i as u64 + bias as u64,
                &[m],
                (k, n, gs),
                bias,
                Q4GSW,
            );
            // Reductions of <= 256 columns never split.
            assert_eq!(names.len(), 1, "{names:?}");
        }
    }
    // Leading dims [2, 3, K], both entry names.
    check_forward(&be, 7, &[2, 3], (64, 32, 16), true, Q4GSW);
    check_forward(&be, 8, &[2, 3], (96, 40, 32), false, Q4GSW_ALIAS);
    check_forward(&be, 9, &[2, 2, 3], (64, 48, 32), true, Q4GSW_ALIAS);
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn q4gsw_backward_matches_f64_reference() {
    let be = backend();
    for (i, &(m, k, n, gs)) in SHAPES.iter().enumerate() {
        check_backward(&be, 200 + i as u64, &[m], k, n, gs);
    }
    check_backward(&be, 300, &[2, 3], 64, 32, 16);
    check_backward(&be, 301, &[2, 3], 96, 40, 32);
    assert_eq!(be.validation_error_count(), 0);
}

/// The split-N backward with many row slices (N = 1000: 50 slices of 20 rows), a group size
/// that is no power of two (the per-half-word group division), K not a multiple of 32
/// (packed rows padded past Kp = 200) and M = 3 on the MT = 4 variant; then a d_x narrower
/// than Kp (the last packed word only partly written out) and N % 4 != 0 (the scalar d_out
/// loads, a short last slice).
#[test]
fn q4gsw_backward_split_many_slices_odd_groups() {
    let be = backend();
    check_backward(&be, 310, &[3], 200, 1000, 20);
    let split_n = |mt: usize| {
        vec![
            format!("{Q4GSW_BWD}/q4_linear_bwd_split_m{mt}"),
            format!("{Q4GSW_BWD}/q4_linear_reduce"),
        ]
    };
    assert_eq!(
        check_backward_cols(&be, 311, &[1], (200, 1000, 20), Some(197)),
        split_n(1)
    );
    assert_eq!(
        check_backward_cols(&be, 312, &[2], (200, 999, 20), Some(195)),
        split_n(2)
    );
    assert_eq!(be.validation_error_count(), 0);
}

/// The wide backward at M = 1 (a lane per uvec4 chunk column, the rows split over slices,
/// which the last workgroup of each column block sums): picked by default for rows of >= 128
/// chunks, forced elsewhere. Covers column blocks of 8, 16 and 32 chunks with dead lanes
/// (KC = 130), N % 4 != 0 (scalar d_out loads), several slices with a short last one, group
/// sizes inside a chunk (20: one scale per half-word) and chunk-aligned ones (32, 128), a d_x
/// narrower than Kp, and `split` forcing the split-N kernel back; the M = 2 form and the
/// staged kernel (M = 3..8) at the same kinds of shapes, with leading dims.
#[test]
fn wide_and_staged_backward() {
    let be = backend();
    let f16 = wide_f16_decode_runs(&be);
    // The M = 1 kernel the runtime picks by itself: the fp16 decode with touch invocations
    // (every launch here is small: two workgroups per SM at most) where the groups are whole
    // chunks and the device passed the decode's self-check, else the magic decode.
    let wide = |cw: usize, gs: usize| {
        let form = if f16 && gs.is_multiple_of(32) {
            "f16t_m1"
        } else {
            "m1"
        };
        vec![format!("{Q4GSW_BWD}/q4_linear_bwd_wide_{form}_c{cw}")]
    };
    let forced = |cw: usize, form: &str| {
        let form = if f16 || form == "m1" { form } else { "m1" };
        vec![format!("{Q4GSW_BWD}/q4_linear_bwd_wide_{form}_c{cw}")]
    };
    let wide2 = |cw: usize| vec![format!("{Q4GSW_BWD}/q4_linear_bwd_wide_m2_c{cw}")];
    let split_names_m = |mt: usize| {
        vec![
            format!("{Q4GSW_BWD}/q4_linear_bwd_split_m{mt}"),
            format!("{Q4GSW_BWD}/q4_linear_reduce"),
        ]
    };
    let split = split_names_m(1);
    // ((K, N, group size), d_x columns, forced kernel, profile names)
    type Case<'a> = (
        (usize, usize, usize),
        Option<usize>,
        Option<&'a str>,
        Vec<String>,
    );
    let cases: &[Case] = &[
        ((4160, 37, 32), None, None, wide(8, 32)),
        ((4160, 64, 128), Some(4150), None, wide(8, 128)),
        ((4160, 64, 32), None, Some("split"), split.clone()),
        ((4100, 1000, 20), Some(4097), Some("wide_c32"), wide(32, 20)),
        ((4160, 700, 32), Some(4153), Some("wide_c8"), wide(8, 32)),
        ((200, 1000, 20), Some(197), Some("wide_c8"), wide(8, 20)),
        ((1000, 999, 64), None, Some("wide_c16"), wide(16, 64)),
        ((64, 3, 16), None, Some("wide_c32"), wide(32, 16)),
        // Each decode forced: the magic one where the fp16 one would run, the fp16 ones
        // without touch invocations, over groups inside a chunk (their magic path inside the
        // fp16 variant) and one group per row (G = 1).
        (
            (4160, 700, 32),
            Some(4153),
            Some("wide_c8_magic"),
            forced(8, "m1"),
        ),
        (
            (4160, 700, 32),
            None,
            Some("wide_c16_f16"),
            forced(16, "f16_m1"),
        ),
        (
            (4100, 1000, 20),
            Some(4097),
            Some("wide_c32_f16"),
            forced(32, "f16_m1"),
        ),
        (
            (4160, 301, 4160),
            None,
            Some("wide_c8_f16"),
            forced(8, "f16_m1"),
        ),
        (
            (1000, 999, 64),
            Some(990),
            Some("wide_c32_f16t"),
            forced(32, "f16t_m1"),
        ),
        (
            (4160, 301, 4160),
            None,
            Some("wide_c16_f16t"),
            forced(16, "f16t_m1"),
        ),
    ];
    for (i, (shape, kout, force, names)) in cases.iter().enumerate() {
        let got = check_backward_forced(&be, 320 + i as u64, &[1], *shape, *kout, *force);
        assert_eq!(&got, names, "{shape:?} forced {force:?}");
    }
    // M = 2: both activation rows share each code's decode (leading dims [2] and [1, 2]).
    let cases2: &[(&[usize], Case)] = &[
        (&[2], ((4160, 37, 32), None, None, wide2(8))),
        (&[1, 2], ((4160, 64, 128), Some(4150), None, wide2(8))),
        (
            &[2],
            ((4100, 1000, 20), Some(4097), Some("wide_c32"), wide2(32)),
        ),
        (
            &[2, 1],
            ((1000, 999, 64), None, Some("wide_c16"), wide2(16)),
        ),
        (&[2], ((64, 3, 16), None, Some("wide_c8"), wide2(8))),
    ];
    for (i, (lead, (shape, kout, force, names))) in cases2.iter().enumerate() {
        let got = check_backward_forced(&be, 340 + i as u64, lead, *shape, *kout, *force);
        assert_eq!(&got, names, "lead {lead:?} {shape:?} forced {force:?}");
    }
    // M = 3..8: the staged kernel where the scale groups are whole chunks (a partial last
    // column block, slices cut short by N, groups of 2 chunks), split-N where they are not
    // (gs = 20) or when forced (`split`).
    let staged = |mt: usize| vec![format!("{Q4GSW_BWD}/q4_linear_bwd_staged_m{mt}")];
    let cases3: &[(&[usize], Case)] = &[
        (&[3], ((4160, 37, 32), None, None, staged(4))),
        (
            &[3],
            ((4160, 37, 32), None, Some("split"), split_names_m(4)),
        ),
        (
            &[6],
            ((4160, 37, 32), None, Some("split"), split_names_m(8)),
        ),
        (
            &[2, 3],
            ((4400, 300, 64), Some(4390), Some("staged"), staged(8)),
        ),
        (&[8], ((4160, 1000, 32), None, Some("staged"), staged(8))),
        (
            &[4, 1],
            ((1000, 999, 64), Some(997), Some("staged"), staged(4)),
        ),
        (&[7], ((64, 3, 32), None, Some("staged"), staged(8))),
        (&[3], ((4100, 64, 20), None, None, split_names_m(4))),
    ];
    for (i, (lead, (shape, kout, force, names))) in cases3.iter().enumerate() {
        let got = check_backward_forced(&be, 360 + i as u64, lead, *shape, *kout, *force);
        assert_eq!(&got, names, "lead {lead:?} {shape:?} forced {force:?}");
    }
    // One dynamic program whose M moves between the wide kernels (M = 1,
    // 2; 16-chunk blocks launch the most workgroups for N = 70) and the staged ones (M =
    // 3..8): every M writes d_x in one dispatch, so the node has no reduce.
    let n = 70;
    let (mut d, c, mut rng) = dynamic_backward(&be, 330, (4160, n, 32), 8, None);
    let m1 = if f16 {
        "bwd_wide_f16t_m1_c16"
    } else {
        "bwd_wide_m1_c16"
    };
    for (m, kernel) in [
        (1, m1),
        (2, "bwd_wide_m2_c16"),
        (3, "bwd_staged_m4"),
        (8, "bwd_staged_m8"),
        (5, "bwd_staged_m8"),
        (2, "bwd_wide_m2_c16"),
        (4, "bwd_staged_m4"),
        (1, m1),
    ] {
        let names = backward_step(&mut d, &mut rng, &c, m, n);
        assert_eq!(
            names,
            vec![format!("{Q4GSW_BWD}/q4_linear_{kernel}")],
            "M = {m}"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Split-K of the tiled kernels (8 < M, few tiles, reductions of >= 512 columns): the split
/// variant's partial sums and the reduce (which adds the bias) against the f64 reference.
/// Covers both tiles lavapipe runs (32 x 128 for M <= 32, 64 x 64 above), 2 to 8 slices,
/// reductions that are no multiple of 32 (a short last slice ending mid-step), a group size
/// that is no power of two (20, with K a multiple of it), odd N and leading dims.
#[test]
fn q4gsw_forward_split_k() {
    let be = backend();
    // (lead, K, N, gs, tile): slices = min(round(target / tiles), K / 256).
    let cases: &[(&[usize], usize, usize, usize, &str)] = &[
        (&[16], 512, 64, 32, "t32x128"),   // 1 tile, 2 slices of 256
        (&[32], 2048, 200, 32, "t32x128"), // 2 tiles, 8 slices of 256
        (&[32], 2000, 199, 20, "t32x128"), // 7 slices of 288, the last 272
        (&[2, 8], 1000, 130, 20, "t32x128"),
        (&[48], 1024, 100, 32, "t64"), // 2 tiles of 64 x 64, 4 slices
        (&[33], 777, 61, 4, "t64"),    // K odd: x rows unpadded
    ];
    for (i, &(lead, k, n, gs, tile)) in cases.iter().enumerate() {
        for bias in [false, true] {
            let names = check_forward(
                &be,
                1000 + 2 * i as u64 + bias as u64,
                lead,
                (k, n, gs),
                bias,
                if i % 2 == 0 { Q4GSW } else { Q4GSW_ALIAS },
            );
            let op = if i % 2 == 0 { Q4GSW } else { Q4GSW_ALIAS };
            assert_eq!(names, split_names(op, &format!("fwd_{tile}")), "case {i}");
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Split-K of the tiled backward: the reduction runs over N, tiles over (M, d_x columns).
#[test]
fn q4gsw_backward_split_k() {
    let be = backend();
    // (lead, K, N, gs, d_x cols, tile)
    type Case<'a> = (&'a [usize], usize, usize, usize, Option<usize>, &'a str);
    let cases: &[Case] = &[
        (&[16], 64, 512, 32, None, "t32x128"),
        (&[32], 200, 2000, 20, None, "t32x128"),
        (&[24], 100, 1001, 20, Some(97), "t32x128"), // odd N, d_x narrower than Kp
        (&[2, 10], 128, 600, 32, None, "t32x128"),   // 2 slices of 320, the last 280
        (&[40], 128, 1024, 32, None, "t64"),
    ];
    for (i, &(lead, k, n, gs, kout, tile)) in cases.iter().enumerate() {
        let names = check_backward_cols(&be, 1100 + i as u64, lead, (k, n, gs), kout);
        assert_eq!(
            names,
            split_names(Q4GSW_BWD, &format!("bwd_{tile}")),
            "case {i}"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn qcs4w_matches_f64_reference() {
    let be = backend();
    for (i, &(lead, k, n)) in [
        (&[1usize][..], 64usize, 32usize),
        (&[3], 64, 32),
        (&[64], 64, 32),
        (&[1], 256, 96),
        (&[3], 63, 37),
        (&[2, 3], 128, 40),
        (&[17], 33, 7),
        (&[4], 8230, 13),
    ]
    .iter()
    .enumerate()
    {
        check_qcs4w(&be, 400 + i as u64, lead, k, n, &[]);
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// qcs4w `cases` (lead, K, N) against the f64 reference with compile `specs`, seeds from
/// `seed`; each must run a kernel whose name contains `kernel`.
fn qcs4w_cases_take(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    cases: &[(&[usize], usize, usize)],
    specs: &[(String, Vec<u8>)],
    kernel: &str,
) {
    for (i, &(lead, k, n)) in cases.iter().enumerate() {
        let names = check_qcs4w(be, seed + i as u64, lead, k, n, specs);
        assert!(
            names.iter().any(|p| p.contains(kernel)),
            "qcs4w lead {lead:?}: {names:?}"
        );
    }
}

/// qcs4w with x sizes `lead ++ [K]` against the f64 reference; returns the profile's names.
fn check_qcs4w(
    be: &std::sync::Arc<Backend>,
    seed: u64,
    lead: &[usize],
    k: usize,
    n: usize,
    specs: &[(String, Vec<u8>)],
) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let w = random_weights(&mut rng, n, k, k.div_ceil(2), NibbleOrder::EvenHigh);
    let scales = rng.floats(n, 0.005, 0.015);
    let m: usize = lead.iter().product();
    let x = rng.floats(m * k, -1.0, 1.0);
    let mut g = G::new();
    let mut xd = lead.to_vec();
    xd.push(k);
    let mut od = lead.to_vec();
    od.push(n);
    let xi = g.input(&xd);
    let wi = g.constant(DataType::Uint8, &[n, w.row_bytes], w.bytes.clone());
    let si = g.constant(DataType::Float32, &[n], f32b(&scales));
    let o = g.output(&od);
    g.b.add_op(QCS4W, &[xi, wi, si, o]);
    let mut d = g.load(be, specs).unwrap();
    let (sizes, got) = run1(&mut d, &xd, &x);
    assert_eq!(sizes, od);
    let kp = w.kp();
    let mut wd = vec![0f64; n * kp];
    for r in 0..n {
        for c in 0..kp {
            wd[r * kp + c] = w.q(r, c) * scales[r] as f64;
        }
    }
    let want = ref_forward(&x, &wd, kp, None, m, k, n);
    assert_rel(&got, &want, &format!("qcs4w lead {lead:?} K {k} N {n}"));
    assert_eq!(w.k, k);
    d.profile().into_iter().map(|p| p.0).collect()
}

/// The tensor-core forward (M >= 8) against the f64 reference where the device has it (NV
/// int8 cooperative matrices: an H200, not lavapipe); elsewhere the same cases check that
/// asking for it falls back to the portable kernels. Shapes cover one and several row tiles
/// (8, 16, 32 rows per workgroup), M not a multiple of 8, N not a multiple of the 128-row
/// strip, K not a multiple of 32, group sizes 32, 64 and 128, split-K, bias, leading dims,
/// and one scale group per row (qcs4w).
#[test]
fn tensor_core_forward_matches_f64_reference() {
    let be = backend();
    let on = [(MMA_SPEC.to_string(), b"on".to_vec()), fma_off()];
    let has_mma = has_int8_mma(&be);
    let cases: &[(&[usize], usize, usize, usize, bool)] = &[
        (&[8], 256, 128, 32, false),
        (&[9], 96, 40, 32, true),
        (&[32], 256, 128, 64, true),
        (&[256], 128, 128, 32, false),
        (&[5, 3], 1000, 300, 128, true),
        (&[40], 4096, 136, 32, false),
        (&[2, 4], 8200, 16, 64, true),
    ];
    for (i, &(lead, k, n, gs, bias)) in cases.iter().enumerate() {
        let names = check_forward_specs(&be, 900 + i as u64, lead, (k, n, gs), bias, Q4GSW, &on);
        // From M = 256 the f16 tensor-core kernel may take over from the int8 one.
        let mma = names
            .iter()
            .any(|p| p.contains("q4_linear_mma_f") || p.contains("q4_linear_fwd_mma_"));
        assert_eq!(mma, has_mma, "lead {lead:?} K {k} N {n}: {names:?}");
    }
    for (i, &(lead, k, n)) in [(&[8usize][..], 64usize, 32usize), (&[3, 7], 300, 77)]
        .iter()
        .enumerate()
    {
        let names = check_qcs4w(&be, 950 + i as u64, lead, k, n, &on);
        let mma = names.iter().any(|p| p.contains("q4_linear_mma_f"));
        assert_eq!(mma, has_mma, "qcs4w lead {lead:?}: {names:?}");
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Forward cases of an emulated int8 tensor-core form: (lead, K, N, gs, bias).
type MmaCase<'a> = (&'a [usize], usize, usize, usize, bool);

/// Runs `cases` (seeds from `seed`) and two qcs4w cases (from `qcs4w_seed`) under compile
/// spec `etvk_q4_mma` = `setting` against the f64 reference, x rows of very different sizes;
/// each must take the `q4_mma_limbs` node and `{kernel}{frags}` (1, 2 or 4 fragments by M),
/// and the case with K = 8200 (few strips, long rows) the split-K reduce node.
fn emulated_int8_forward_cases(
    setting: &str,
    kernel: &str,
    (seed, qcs4w_seed): (u64, u64),
    cases: &[MmaCase],
    qcs4w_lead: &[usize],
) {
    let be = backend();
    let force = [
        (MMA_SPEC.to_string(), setting.as_bytes().to_vec()),
        fma_off(),
    ];
    for (i, &(lead, k, n, gs, bias)) in cases.iter().enumerate() {
        let m: usize = lead.iter().product();
        let frags = match m {
            0..=8 => 1,
            9..=16 => 2,
            _ => 4,
        };
        let names = check_forward_scaled(
            &be,
            seed + i as u64,
            lead,
            (k, n, gs),
            bias,
            Q4GSW,
            &force,
            |m, j| [1.0f32, 1e-6, 3e3, 0.0, 0.02][(m + j / 64) % 5],
        );
        let kernel = format!("{kernel}{frags}");
        assert!(
            names.iter().any(|p| p.ends_with(&kernel))
                && names.iter().any(|p| p.ends_with("/q4_mma_limbs")),
            "lead {lead:?} K {k} N {n}: {names:?}"
        );
        // Few strips and long rows: the chunks split over slices, summed by the reduce node.
        if k == 8200 {
            assert!(
                names.iter().any(|p| p.ends_with("/q4_linear_reduce")),
                "split-K: {names:?}"
            );
        }
    }
    qcs4w_cases_take(
        &be,
        qcs4w_seed,
        &[(&[8], 64, 32), (qcs4w_lead, 300, 77)],
        &force,
        kernel,
    );
    assert_eq!(be.validation_error_count(), 0);
}

/// The int8 tensor-core forward with its MMAs in plain arithmetic (`etvk_q4_mma` =
/// `emulated`): its tiles, limbs, scales, split-K and store run on any device (lavapipe), so
/// CI covers what the H200 alone ran before. x rows of very different sizes (and sizes
/// changing along K), one, two and four 8-row fragments per workgroup, M not a multiple of 8,
/// N not a multiple of the 128-row strip, K not a multiple of 32, groups of 32, 64 and 128
/// and one per row (qcs4w), split-K, bias or none, leading dims, against the f64 reference.
#[test]
fn emulated_int8_tensor_core_forward_matches_f64_reference() {
    emulated_int8_forward_cases(
        "emulated",
        "q4_linear_mma_emu_f",
        (1800, 1850),
        &[
            (&[8], 256, 128, 32, false),
            (&[9], 96, 40, 32, true),
            (&[16], 200, 70, 64, false),
            (&[32], 256, 136, 64, true),
            (&[5, 3], 1000, 300, 128, true),
            (&[40], 4096, 136, 32, false),
            (&[2, 4], 8200, 16, 64, true),
        ],
        &[3, 7],
    );
}

/// The int8 tensor-core forward's register-operand form (`etvk_q4_mma` = `emulated_reg`:
/// its fragments filled in the m16n8k32 layout, the quad transposes and the MMAs by plain
/// arithmetic through shared memory): as above, also N not a multiple of 16 and K not a
/// multiple of the 4-chunk step; four fragments take slices of whole 2-chunk steps, not of
/// the form's 4. Its workgroups hold 512 weight rows at one fragment and 256 at two and
/// four (tiles per subgroup): N = 600 and 300 end in a partial strip.
#[test]
fn emulated_register_operand_int8_forward_matches_f64_reference() {
    emulated_int8_forward_cases(
        "emulated_reg",
        "q4_linear_mma_reg_emu_f",
        (1890, 1897),
        &[
            (&[8], 256, 128, 32, false),
            (&[8], 320, 600, 32, true),
            (&[9], 96, 40, 32, true),
            (&[16], 200, 70, 64, false),
            (&[5, 3], 1000, 300, 128, true),
            (&[2, 4], 8200, 16, 64, true),
            (&[12], 4128, 136, 32, false),
            (&[17], 256, 136, 64, true),
            (&[40], 4096, 136, 32, false),
        ],
        &[3, 5],
    );
}

/// A compile-spec value no kernel choice reads is refused at load, naming the spec and the
/// value (a typo would otherwise keep the default without a word); the documented values load.
#[test]
fn unknown_compile_spec_values_are_refused() {
    let be = backend();
    let mut rng = Rng::new(1880);
    let c = q4gsw_case(&mut rng, 256, 64, 32);
    let load = |key: &str, value: &str| {
        let mut g = G::new();
        let xi = g.input(&[8, 256]);
        let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
        let nul = g.b.add_null();
        let o = g.output(&[8, 64]);
        g.b.add_op(Q4GSW, &[xi, w, s, gsv, nul, o]);
        g.load(&be, &[(key.to_string(), value.as_bytes().to_vec())])
    };
    for (key, value) in [
        ("etvk_q4_mma", "emulate"),
        ("etvk_q4_mma", ""),
        ("etvk_q4_gemv", "halfs"),
        ("etvk_q4_bwd", "wide_c12"),
        ("etvk_q4_bwd", "mma"),
    ] {
        let e = match load(key, value) {
            Ok(_) => panic!("{key} = {value:?} loaded"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains(key) && e.contains(&format!("{value:?}")),
            "{key} = {value:?}: {e}"
        );
    }
    for (key, value) in [
        ("etvk_q4_mma", "emulated"),
        ("etvk_q4_mma", "emulated_reg"),
        ("etvk_q4_mma", "off"),
        ("etvk_q4_gemv", "half"),
        ("etvk_q4_bwd", "wide_c16_f16t"),
        ("etvk_q4_bwd", "staged"),
    ] {
        if let Err(e) = load(key, value) {
            panic!("{key} = {value:?}: {e}");
        }
    }
}

/// The emulated int8 tensor-core forward on one loaded program whose M moves between one,
/// two and four fragments per workgroup, split-K at each (N = 300: three row strips, K = 8200:
/// up to 32 slices of 257 chunks, summed by the reduce node with the launch's slice count).
#[test]
fn dynamic_m_on_the_emulated_int8_forward() {
    let be = backend();
    let (k, n, gs, max_m) = (8200, 300, 64, 40);
    let mut rng = Rng::new(1870);
    let c = q4gsw_case(&mut rng, k, n, gs);
    let bias_v = rng.floats(n, -1.0, 1.0);
    let mut g = G::new();
    let xi = g.input(&[max_m, k]);
    let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
    let b = g.constant(DataType::Float32, &[n], f32b(&bias_v));
    let o = g.output(&[max_m, n]);
    g.b.add_op(Q4GSW, &[xi, w, s, gsv, b, o]);
    let mut specs = dynamic_forced(MMA_SPEC, Some("emulated"));
    specs.push(fma_off());
    let mut d = g.load(&be, &specs).unwrap();
    for m in [8, 40, 8, 16, 9, 8] {
        let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, "emulated int8 MMA");
        assert!(
            names.iter().any(|p| p.contains("q4_linear_mma_emu_f")),
            "M {m}: {names:?}"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Backward cases at M > 8 for the tensor-core kernel: (lead, K, N, gs, d_x cols). Unsplit and
/// split-K (N >= 512), several row tiles (M = 40, 130), odd N, d_x narrower than Kp, groups
/// of 20 (not whole chunks), 128 x 128 tiles where they fit (M >= 65).
type BwdCase<'a> = (&'a [usize], usize, usize, usize, Option<usize>);
const BWD_MMA_CASES: &[BwdCase] = &[
    (&[9], 96, 40, 32, None),
    (&[32], 256, 128, 64, None),
    (&[16], 64, 512, 32, None),
    (&[24], 100, 1001, 20, Some(97)),
    (&[2, 10], 128, 600, 32, None),
    (&[40], 128, 1024, 32, None),
    (&[130], 136, 300, 32, None),
    (&[3, 7], 264, 77, 8, None),
];

/// Whether the runtime takes the tensor-core backward here with `etvk_q4_mma` on: NV f16
/// 16x8x16 cooperative matrices, 32-invocation subgroups and the 32 x 128 tile's 26896 bytes
/// of shared memory (an H200).
/// Whether the device has the int8 tensor-core forward's NV cooperative matrices.
fn has_int8_mma(be: &Backend) -> bool {
    be.device_caps().subgroup_size == 32
        && be
            .device_caps()
            .cooperative_matrix_nv_shapes
            .iter()
            .any(|s| s.to_string() == "16x8x32 s8*s8+s32->s32")
}

fn has_bwd_mma(be: &std::sync::Arc<Backend>) -> bool {
    let caps = be.device_caps();
    caps.subgroup_size == 32
        && caps.max_shared_memory_size >= 26896
        && caps
            .cooperative_matrix_nv_shapes
            .iter()
            .any(|s| s.to_string() == "16x8x16 f16*f16+f32->f32")
}

/// The tensor-core backward where the device has it (else the portable tiles), against the
/// f64 reference; d_out rows of very different magnitudes (1e-6 .. 1e4) check its per-row
/// power-of-two scaling.
#[test]
fn tensor_core_backward_matches_f64_reference() {
    let be = backend();
    let on = [(MMA_SPEC.to_string(), b"on".to_vec())];
    let want = has_bwd_mma(&be);
    for (i, &(lead, k, n, gs, kout)) in BWD_MMA_CASES.iter().enumerate() {
        let scale = |m: usize| [1.0f32, 1e-6, 3e3, 0.02][m % 4];
        let names = check_backward_specs(&be, 1300 + i as u64, lead, (k, n, gs), kout, &on, scale);
        let mma = names.iter().any(|p| p.contains("q4_linear_bwd_mma_t"));
        assert_eq!(mma, want, "lead {lead:?} K {k} N {n}: {names:?}");
        if mma {
            assert!(
                names.iter().any(|p| p.ends_with("/q4_bwd_rowscale")),
                "{names:?}"
            );
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// One execute of a loaded dynamic backward program (d_out [M, N] -> d_x [M, Kp]) at M rows
/// of fresh d_out, checked against the f64 reference; returns the profile's node names.
fn backward_step(
    d: &mut Delegate,
    rng: &mut Rng,
    c: &Q4gswCase,
    m: usize,
    n: usize,
) -> Vec<String> {
    let kp = c.w.kp();
    let dy = rng.floats(m * n, -1.0, 1.0);
    let (sizes, got) = run1(d, &[m, n], &dy);
    assert_eq!(sizes, vec![m, kp]);
    assert_rel(
        &got,
        &ref_backward(&dy, &c.wd, kp, m, n, kp),
        &format!("dynamic M = {m}"),
    );
    d.profile().into_iter().map(|p| p.0).collect()
}

/// The self-check the runtime runs before a graph first takes the int8 tensor-core forward
/// (limbs, MMAs, scales, split-K slices and their reduce against f64, at one, two and four
/// fragments): the emulated kernels pass on any device; the native ones where the device has
/// NV int8 cooperative matrices (an H200), and elsewhere they cannot run (an error).
#[test]
fn int8_tensor_core_forward_self_check() {
    let be = backend();
    assert_eq!(
        etvk_runtime::bench::q4_int8_mma_check(&be, true).unwrap(),
        None
    );
    let has_mma = has_int8_mma(&be);
    match etvk_runtime::bench::q4_int8_mma_check(&be, false) {
        Ok(result) => {
            assert!(has_mma, "ran without the device's support");
            assert_eq!(result, None);
        }
        Err(e) => assert!(!has_mma, "{e}"),
    }
}

/// The self-check the runtime runs before taking the tensor-core backward: its emulated
/// variants pass on any device with fp16 arithmetic; the native ones pass where the device
/// has the kernel (an H200) and are refused with an error elsewhere.
#[test]
fn tensor_core_backward_self_check() {
    let be = backend();
    if be.device_caps().shader_float16 {
        assert_eq!(
            etvk_runtime::bench::q4_bwd_mma_check(&be, true).unwrap(),
            None
        );
    }
    match etvk_runtime::bench::q4_bwd_mma_check(&be, false) {
        Ok(result) => {
            assert!(has_bwd_mma(&be), "ran without the device's support");
            assert_eq!(result, None);
        }
        Err(e) => {
            assert!(!has_bwd_mma(&be), "{e}");
            assert!(e.to_string().contains("q4_linear_bwd_mma"), "{e}");
        }
    }
}

/// The same kernel with its MMAs in plain arithmetic (`etvk_q4_bwd` = `mma_emulated`), which
/// runs on any device: the row scales, fp16 hi / lo tiles, tile offsets, split-K slices and
/// the store, against the f64 reference, including rows of 1e-6 .. 1e4 and zero rows.
#[test]
fn emulated_tensor_core_backward_matches_f64_reference() {
    let be = backend();
    let force = [("etvk_q4_bwd".to_string(), b"mma_emulated".to_vec())];
    for (i, &(lead, k, n, gs, kout)) in BWD_MMA_CASES.iter().enumerate() {
        let scale = |m: usize| [1.0f32, 1e-6, 3e3, 0.0, 0.02][m % 5];
        let names =
            check_backward_specs(&be, 1400 + i as u64, lead, (k, n, gs), kout, &force, scale);
        assert!(
            names
                .iter()
                .any(|p| p.contains("q4_linear_bwd_mma_emu_t32x128"))
                && names.iter().any(|p| p.ends_with("/q4_bwd_rowscale")),
            "lead {lead:?} K {k} N {n}: {names:?}"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The f16 tensor-core forward (the backward's kernel with the W tile transposed) with its
/// MMAs in plain arithmetic (`etvk_q4_gemv` = `f16_emulated`, from M = 9): x rows of very
/// different sizes (and sizes changing along K), odd N, K not a multiple of 32, groups of 8
/// and 20 (the form with the scales in the MMAs' operands) and of 16, 32 and 64 and one per
/// row (the codes form, `_c_`), bias or none, several row and column tiles, against the f64
/// reference.
#[test]
fn emulated_f16_tensor_core_forward_matches_f64_reference() {
    let be = backend();
    let force = [("etvk_q4_gemv".to_string(), b"f16_emulated".to_vec())];
    let cases: &[(&[usize], usize, usize, usize, bool)] = &[
        (&[9], 96, 40, 32, true),
        (&[32], 256, 128, 64, false),
        (&[40], 136, 300, 8, true),
        (&[2, 10], 100, 97, 20, true),
        (&[130], 264, 77, 8, false),
        (&[33], 200, 70, 16, true),
        // Split-K (3 slices of x's row, the last partial), with and without the bias.
        (&[40], 1000, 136, 32, true),
        (&[2, 20], 1000, 136, 64, false),
    ];
    for (i, &(lead, k, n, gs, bias)) in cases.iter().enumerate() {
        let kernel = match (gs % 16 == 0, k >= 1000) {
            (true, true) => "q4_linear_fwd_mma_c_emu_t32x128_split",
            (true, false) => "q4_linear_fwd_mma_c_emu_t32x128",
            _ => "q4_linear_fwd_mma_emu_t32x128",
        };
        let names = check_forward_scaled(
            &be,
            1700 + i as u64,
            lead,
            (k, n, gs),
            bias,
            Q4GSW,
            &force,
            |m, j| [1.0f32, 1e-6, 3e3, 0.0, 0.02][(m + j / 64) % 5],
        );
        assert!(
            names.iter().any(|p| p.contains(kernel))
                && names.iter().any(|p| p.ends_with("/q4_bwd_rowscale")),
            "lead {lead:?} K {k} N {n}: {names:?}"
        );
    }
    // qcs4w: one scale per row (its peaks from the per-channel scales).
    qcs4w_cases_take(
        &be,
        1740,
        &[(&[40], 256, 200), (&[3, 7], 300, 77)],
        &force,
        "q4_linear_fwd_mma_c_emu_t32x128",
    );
    assert_eq!(be.validation_error_count(), 0);
}

/// The f16 tensor-core forward itself (`etvk_q4_gemv` = `f16`, from M = 9) where the device
/// runs the tensor-core backward (an H200: 32 x 128 and 128 x 128 tiles), else the fallback
/// kernels, against the f64 reference; the same x sizes as the emulated test.
#[test]
fn f16_tensor_core_forward_matches_f64_reference() {
    let be = backend();
    let force = [
        ("etvk_q4_gemv".to_string(), b"f16".to_vec()),
        (MMA_SPEC.to_string(), b"on".to_vec()),
    ];
    let want = has_bwd_mma(&be);
    let cases: &[(&[usize], usize, usize, usize, bool)] = &[
        (&[9], 96, 40, 32, true),
        (&[40], 136, 300, 8, true),
        (&[2, 10], 100, 97, 20, false),
        (&[130], 264, 77, 8, true),
        (&[256], 1024, 520, 32, true),
        (&[33], 200, 70, 16, false),
        // Split-K of the 32 x 128 and (M = 130) 128 x 128 tiles.
        (&[40], 1000, 136, 32, true),
        (&[130], 2048, 300, 32, true),
    ];
    check_forward_kernel_cases(&be, (1760, 1790), cases, &force, want, |gs, names| {
        let kernel = if gs % 16 == 0 {
            "q4_linear_fwd_mma_c_t"
        } else {
            "q4_linear_fwd_mma_t"
        };
        names.iter().any(|p| p.contains(kernel))
    });
    assert_eq!(be.validation_error_count(), 0);
}

/// The forward at each of `cases` (x's leading dims, K, N, group size, bias) under `specs`,
/// x rows of very different sizes, against the f64 reference (seeds from `seeds.0`), then a
/// qcs4w one ([130] x 264 -> 300, one group per row: seed `seeds.1`); `ran(gs, kernels)`,
/// whether the kernel under test ran (gs 0: one group per row), must be `want` in each.
fn check_forward_kernel_cases(
    be: &std::sync::Arc<Backend>,
    seeds: (u64, u64),
    cases: &[(&[usize], usize, usize, usize, bool)],
    specs: &[(String, Vec<u8>)],
    want: bool,
    ran: impl Fn(usize, &[String]) -> bool,
) {
    for (i, &(lead, k, n, gs, bias)) in cases.iter().enumerate() {
        let names = check_forward_scaled(
            be,
            seeds.0 + i as u64,
            lead,
            (k, n, gs),
            bias,
            Q4GSW,
            specs,
            |m, j| [1.0f32, 1e-6, 3e3, 0.0, 0.02][(m + j / 64) % 5],
        );
        assert_eq!(
            ran(gs, &names),
            want,
            "lead {lead:?} K {k} N {n}: {names:?}"
        );
    }
    let names = check_qcs4w(be, seeds.1, &[130], 264, 300, specs);
    assert_eq!(ran(0, &names), want, "qcs4w: {names:?}");
}

/// The VK_NV_cooperative_matrix2 forward (compile spec `etvk_q4_mma` = `cm2`: the f16
/// forward's M >= 128 through `q4_linear_cm2`, exact codes) where the device has it (an H100 /
/// H200), else the kernels it would replace, against the f64 reference: M = 130 / 200 / 256
/// (partial row and column tiles), groups of 32 and 64 and one per row (qcs4w), K short of
/// the packed rows, bias or none, x rows of very different sizes.
#[test]
fn cm2_forward_matches_f64_reference() {
    // Without validation: the layers at hand predate the extension.
    let be = backend_unvalidated();
    let force = [(MMA_SPEC.to_string(), b"cm2".to_vec())];
    let want = be.device_caps().cooperative_matrix2_nv;
    let cases: &[(&[usize], usize, usize, usize, bool)] = &[
        (&[256], 1024, 520, 32, true),
        (&[2, 100], 1000, 300, 64, false),
        (&[130], 2048, 300, 32, true),
    ];
    check_forward_kernel_cases(&be, (1820, 1830), cases, &force, want, |_, names| {
        names.iter().any(|p| p.ends_with("/q4_linear_cm2"))
    });
}

/// fp16 activations (a force_fp16 program's x) on the f16 tensor-core forward: its two-MMA
/// form (`q4_linear_fwd_mma_x16_*`, the rows exact in one fp16), emulated (`f16_emulated`)
/// and native where the device has it (`f16`), against the f64 reference of the fp16 values;
/// x rows of very different sizes.
#[test]
fn f16_forward_of_fp16_activations() {
    let be = backend();
    // Groups of 8 take the form with the scales in the operands, of 32 the codes form.
    let forms: [(&[u8], [&str; 2], bool); 2] = [
        (
            b"f16_emulated",
            [
                "q4_linear_fwd_mma_x16_emu_t32x128",
                "q4_linear_fwd_mma_c_x16_emu_t32x128",
            ],
            true,
        ),
        (
            b"f16",
            ["q4_linear_fwd_mma_x16_t", "q4_linear_fwd_mma_c_x16_t"],
            has_bwd_mma(&be),
        ),
    ];
    for (form, kernels, want) in forms {
        let specs = [
            ("etvk_q4_gemv".to_string(), form.to_vec()),
            (MMA_SPEC.to_string(), b"on".to_vec()),
        ];
        for (i, &(m, k, n, gs, bias)) in [
            (40usize, 136usize, 300usize, 8usize, true),
            (130, 264, 77, 32, false),
            (40, 1000, 136, 32, true),
        ]
        .iter()
        .enumerate()
        {
            let mut rng = Rng::new(1850 + i as u64);
            let c = q4gsw_case(&mut rng, k, n, gs);
            let sizes = [1.0f32, 1e-3, 300.0, 0.02];
            let xh: Vec<u16> = rng
                .floats(m * k, -1.0, 1.0)
                .iter()
                .enumerate()
                .map(|(j, &v)| f32_to_f16_bits(v * sizes[(j / k + (j % k) / 64) % 4]))
                .collect();
            let x: Vec<f32> = xh.iter().map(|&h| f16_bits_to_f32(h)).collect();
            let bias_v = rng.floats(c.n_pad, -1.0, 1.0);
            let mut g = G::new();
            let xi = g.b.add_tensor(DataType::Float16, &[m, k]);
            g.b.mark_input(xi);
            let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
            let b = if bias {
                g.constant(DataType::Float32, &[c.n_pad], f32b(&bias_v))
            } else {
                g.b.add_null()
            };
            let o = g.output(&[m, n]);
            g.b.add_op(Q4GSW, &[xi, w, s, gsv, b, o]);
            let mut d = g.load(&be, &specs).unwrap();
            let mut args = vec![
                DelegateArg::Tensor(HostTensor {
                    dtype: HostDType::Half,
                    sizes: vec![m, k],
                    data: xh.iter().flat_map(|h| h.to_le_bytes()).collect(),
                }),
                empty_out(),
            ];
            d.execute(&mut args).unwrap();
            let want_out = ref_forward(&x, &c.wd, c.w.kp(), bias.then_some(&bias_v[..]), m, k, n);
            assert_rel(
                &out_f32(&args[1]).1,
                &want_out,
                &format!("fp16 x, M {m} K {k} N {n}"),
            );
            let names: Vec<String> = d.profile().into_iter().map(|p| p.0).collect();
            let kernel = kernels[usize::from(gs % 16 == 0)];
            let x16 = names.iter().any(|p| p.contains(kernel));
            assert_eq!(x16, want, "{names:?}");
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// One dynamic forward program on the split codes form (emulated, groups of 32, x rows of
/// 1000): M = 40, 3, 64, 1, 9, 64, whose slices and row scales per slice change with M, every
/// launch leaving its counters zero for the next.
#[test]
fn dynamic_m_on_the_split_f16_forward() {
    let be = backend();
    let (k, n) = (1000, 136);
    let (mut d, c, bias_v, mut rng) =
        dynamic_forward(&be, 1770, (k, n, 32), (64, n), Some("f16_emulated"));
    for m in [40usize, 3, 64, 1, 9, 64] {
        let names = forward_step(
            &mut d,
            &mut rng,
            &c,
            &bias_v,
            m,
            "dynamic split f16 forward",
        );
        let split = names
            .iter()
            .any(|p| p.contains("q4_linear_fwd_mma_c_emu_t32x128_split"));
        assert_eq!(split, m > 8, "M = {m}: {names:?}");
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// One dynamic forward program whose M moves in and out of the f16 tensor-core forward
/// (emulated): 40, 3, 64, 1, 9; the row-scale node launches nothing below M = 9.
#[test]
fn dynamic_m_moves_in_and_out_of_the_f16_forward() {
    let be = backend();
    let (k, n) = (136, 200);
    let (mut d, c, bias_v, mut rng) =
        dynamic_forward(&be, 1750, (k, n, 8), (64, n), Some("f16_emulated"));
    for m in [40usize, 3, 64, 1, 9] {
        let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, "dynamic f16 forward");
        let f16 = names
            .iter()
            .any(|p| p.contains("q4_linear_fwd_mma_emu_t32x128"));
        assert_eq!(f16, m > 8, "M = {m}: {names:?}");
        assert!(
            names.iter().any(|p| p.ends_with("/q4_bwd_rowscale")),
            "{names:?}"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Weight rows whose scales differ by up to 1e6 within one split-K slice and one 32-row
/// step: each workgroup's fp16 range comes from the prepacked per-32-row scale peaks, which
/// must cover its slice's rows (a peak too small overflows fp16 to Inf, a stale one loses the
/// small rows' precision).
#[test]
fn emulated_tensor_core_backward_with_weight_rows_of_many_sizes() {
    let be = backend();
    let force = [("etvk_q4_bwd".to_string(), b"mma_emulated".to_vec())];
    let weight_rows = |r: usize| [1.0f32, 1e3, 1e-3, 30.0][(r / 40) % 4] * [1.0, 0.25][r % 2];
    for (i, &(lead, k, n, gs, kout)) in BWD_MMA_CASES.iter().enumerate() {
        let names = check_backward_scaled(
            &be,
            1500 + i as u64,
            lead,
            (k, n, gs),
            kout,
            &force,
            // Sizes that change along N too, so that the split's slices of one row get
            // scales of their own.
            |m, j| [1.0f32, 3e3, 0.02][(m + j / 128) % 3],
            weight_rows,
        );
        assert!(
            names
                .iter()
                .any(|p| p.contains("q4_linear_bwd_mma_emu_t32x128")),
            "lead {lead:?} K {k} N {n}: {names:?}"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// One dynamic program whose M moves between the tensor-core backward (emulated, so that it
/// runs here) and the M <= 8 kernels: 40 (split-K: N = 600 > 512), 3, 64, 1, 9; the row-scale
/// node launches nothing at M <= 8.
#[test]
fn dynamic_m_moves_in_and_out_of_the_tensor_core_backward() {
    let be = backend();
    let n = 600;
    let (mut d, c, mut rng) = dynamic_backward(&be, 1500, (136, n, 32), 64, Some("mma_emulated"));
    for m in [40usize, 3, 64, 1, 9] {
        let names = backward_step(&mut d, &mut rng, &c, m, n);
        let mma = names
            .iter()
            .any(|p| p.contains("q4_linear_bwd_mma_emu_t32x128"));
        assert_eq!(mma, m > 8, "M = {m}: {names:?}");
        // The row-scale node stays in the graph (launching nothing at M <= 8).
        assert!(
            names.iter().any(|p| p.ends_with("/q4_bwd_rowscale")),
            "{names:?}"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// One loaded dynamic program holding the forward (with bias) and the backward of one
/// weight of K x N, up to `max_m` rows: runs each `(M, profile names)` step in order and
/// checks both outputs against the f64 reference and the kernels the profile names.
fn dynamic_forward_backward(
    seed: u64,
    (k, n, gs, max_m): (usize, usize, usize, usize),
    steps: &[(usize, Vec<String>)],
) {
    let be = backend();
    let mut rng = Rng::new(seed);
    let c = q4gsw_case(&mut rng, k, n, gs);
    let bias_v = rng.floats(n, -1.0, 1.0);
    let kp = c.w.kp();
    let mut g = G::new();
    let xi = g.input(&[max_m, k]);
    let yi = g.input(&[max_m, n]);
    let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
    let b = g.constant(DataType::Float32, &[n], f32b(&bias_v));
    let o = g.output(&[max_m, n]);
    let dx = g.output(&[max_m, kp]);
    g.b.add_op(Q4GSW, &[xi, w, s, gsv, b, o]);
    g.b.add_op(Q4GSW_BWD, &[yi, w, s, gsv, dx]);
    let mut d = g.load(&be, &dynamic()).unwrap();
    for (m, want_names) in steps {
        let m = *m;
        let x = rng.floats(m * k, -1.0, 1.0);
        let dy = rng.floats(m * n, -1.0, 1.0);
        let mut args = vec![
            host_f32(&[m, k], &x),
            host_f32(&[m, n], &dy),
            empty_out(),
            empty_out(),
        ];
        d.execute(&mut args).unwrap();
        let (os, got) = out_f32(&args[2]);
        assert_eq!(os, vec![m, n]);
        assert_rel(
            &got,
            &ref_forward(&x, &c.wd, kp, Some(&bias_v), m, k, n),
            &format!("dynamic forward M {m}"),
        );
        let (xs, got) = out_f32(&args[3]);
        assert_eq!(xs, vec![m, kp]);
        assert_rel(
            &got,
            &ref_backward(&dy, &c.wd, kp, m, n, kp),
            &format!("dynamic backward M {m}"),
        );
        let names: Vec<String> = d.profile().into_iter().map(|p| p.0).collect();
        assert_names(&names, want_names, &format!("M = {m}"));
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The forward kernel at M = 1 on short rows: the half-chunk GEMV where the device has packed
/// int8 dot products (every row length; on rows this short and few, its `_early` variant),
/// else the lane groups.
fn m1_gemv(be: &Backend) -> &'static str {
    if be.device_caps().integer_dot_product {
        "gemv_half_early"
    } else {
        "gemv_m1"
    }
}

/// M going 1 -> 64 -> 5 -> 2 at K = 96, N = 40 (GEMV / split-N backward, tiled, GEMV /
/// split again); kernels are re-selected and named in profiles. The backward's reduce node
/// stays in the graph on the tiled path (launching nothing).
#[test]
fn dynamic_m_reselects_kernels() {
    let m1 = format!("q4_linear_{}", m1_gemv(&backend()));
    let steps: Vec<(usize, Vec<String>)> = [
        (1, m1.as_str(), "q4_linear_bwd_split_m1"),
        (64, "q4_linear_tiled_fwd_t64", "q4_linear_tiled_bwd_t64"),
        (5, "q4_linear_gemv_m8", "q4_linear_bwd_split_m8"),
        (2, "q4_linear_gemv_m2", "q4_linear_bwd_split_m2"),
    ]
    .into_iter()
    .map(|(m, fwd, bwd)| {
        let names = vec![
            format!("{Q4GSW}/{fwd}"),
            format!("{Q4GSW_BWD}/{bwd}"),
            format!("{Q4GSW_BWD}/q4_linear_reduce"),
        ];
        (m, names)
    })
    .collect();
    dynamic_forward_backward(500, (96, 40, 32, 64), &steps);
}

/// Dynamic M across split and unsplit choices in one program, K = 512, N = 4096. Forward:
/// GEMV at M <= 8; 32 x 128 tiles split in 2 slices at M = 16, 20; 64 x 64 tiles whole at
/// M = 321 (384 tiles), where the forward's reduce node stays in the graph and launches
/// nothing. Backward: the wide kernel at M = 1 and the staged one at M = 5 (rows of 16
/// chunks; their reduce node launches nothing); split K at every tiled M (16 slices of 256
/// rows at M = 16, 11 at M = 321). The scratch tensors are sized for the largest partial arrays
/// among all M <= 321.
/// With the 128 x 128 tile's shared memory (an H200) M = 321 takes that tile, split in 2
/// slices forward and 16 backward.
#[test]
fn dynamic_m_moves_between_split_and_unsplit() {
    let big = big_tiles(&backend());
    let m1 = m1_gemv(&backend());
    let at_321 = if big {
        ("tiled_fwd_t128_split", "tiled_bwd_t128_split")
    } else {
        ("tiled_fwd_t64", "tiled_bwd_t64_split")
    };
    let steps: Vec<(usize, Vec<String>)> = [
        (16, "tiled_fwd_t32x128_split", "tiled_bwd_t32x128_split"),
        (321, at_321.0, at_321.1),
        (1, m1, "bwd_wide_*m1_c*"),
        (20, "tiled_fwd_t32x128_split", "tiled_bwd_t32x128_split"),
        (5, "gemv_m8", "bwd_staged_m8"),
        (16, "tiled_fwd_t32x128_split", "tiled_bwd_t32x128_split"),
    ]
    .into_iter()
    .map(|(m, fwd, bwd)| {
        let names = vec![
            format!("{Q4GSW}/q4_linear_{fwd}"),
            format!("{Q4GSW}/q4_linear_reduce"),
            format!("{Q4GSW_BWD}/q4_linear_{bwd}"),
            format!("{Q4GSW_BWD}/q4_linear_reduce"),
        ];
        (m, names)
    })
    .collect();
    dynamic_forward_backward(1200, (512, 4096, 32, 321), &steps);
}

/// Rows of >= 128 uvec4 chunks take the wide GEMV at M = 1 (the workgroup splits K; its int8
/// dot-product form where the device has it, which serves M <= 8 too) and the lane-group GEMV
/// above (float form); M moves between them on one program. K = 4100 is ragged (scalar x loads for the last chunk), N = 37
/// leaves a partial workgroup of rows; group sizes 20 (groups split inside a chunk: the
/// float form only), 32 and 64 (chunk-aligned), each with every GEMV forced in turn.
#[test]
fn long_rows_use_the_wide_gemv_at_small_m() {
    let be = backend();
    for gs in [20, 32, 64] {
        // The int8 form needs groups of a power-of-two number of 32-code chunks.
        let dp4 = be.device_caps().integer_dot_product && gs != 20;
        let pick = |yes: &'static str, no: &'static str| if dp4 { yes } else { no };
        // The half-chunk form at M = 1 where 512 invocations fit (lavapipe: 1024).
        let half = be.device_caps().max_workgroup_invocations >= 512;
        let persist_m1 = if half {
            "gemv_half"
        } else {
            "gemv_wide_dp4_persist"
        };
        let early_m1 = if half {
            "gemv_half_early"
        } else {
            "gemv_wide_dp4_persist"
        };
        for (force, m1_kernel) in [
            (None, pick(persist_m1, "gemv_wide_m1")),
            (Some("half"), pick(persist_m1, "gemv_wide_m1")),
            (Some("half_late"), pick(persist_m1, "gemv_wide_m1")),
            (Some("half_early"), pick(early_m1, "gemv_wide_m1")),
            (Some("lanes"), "gemv_m1"),
            (Some("wide"), "gemv_wide_m1"),
            (Some("wide_dp4"), pick("gemv_wide_m1_dp4", "gemv_wide_m1")),
            (
                Some("wide_dp4_pre"),
                pick("gemv_wide_m1_dp4_pre", "gemv_wide_m1"),
            ),
            (
                Some("wide_dp4_persist"),
                pick("gemv_wide_dp4_persist", "gemv_wide_m1"),
            ),
        ] {
            wide_gemv_case(&be, gs, force, m1_kernel);
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The persistent int8 GEMVs (one wave of workgroups walking the row blocks): more blocks
/// than workgroups, so that workgroups walk several blocks and load the next block's first
/// rows across the block boundary; at M = 1 the half-chunk form (K = 8000: a last chunk of
/// 32 codes inside K, gs = 64: a scale per two chunks), at M > 1 the chunk-per-invocation
/// form (160 invocations for rows of 129 or 130 chunks); a last block cut short by N; bias;
/// M = 3 and 8 (the workgroups split over the activation rows) and leading dims.
#[test]
fn persistent_gemv_walks_row_blocks() {
    let be = backend();
    let dp4 = be.device_caps().integer_dot_product;
    let half = be.device_caps().max_workgroup_invocations >= 512;
    // At M = 1 the half form's wave (396 workgroups of 288 invocations at K = 4160, 264 of
    // 512 at K = 8000, 528 of 256 at K = 4096) walks 563 / 288 / 1063 blocks of 8 rows; at
    // M > 1 the persistent form's 396 workgroups of 160 (3 per 2 SMs' worth of 256).
    for (seed, lead, k, n, gs, kernel) in [
        (
            1400,
            &[1][..],
            4160,
            4500,
            32,
            if half {
                "gemv_half"
            } else {
                "gemv_wide_dp4_persist"
            },
        ),
        (
            1404,
            &[1][..],
            8000,
            2300,
            64,
            if half {
                "gemv_half"
            } else {
                "gemv_wide_dp4_persist"
            },
        ),
        (
            1401,
            &[1][..],
            4096,
            8500,
            64,
            if half {
                "gemv_half"
            } else {
                "gemv_wide_dp4_persist"
            },
        ),
        (1402, &[3][..], 4160, 1500, 32, "gemv_wide_dp4_persist"),
        (1403, &[2, 4][..], 4100, 700, 64, "gemv_wide_dp4_persist"),
    ] {
        let names = check_forward_specs(&be, seed, lead, (k, n, gs), true, Q4GSW, &[fma_off()]);
        let want = if dp4 { kernel } else { "gemv_wide_m1" };
        assert_eq!(names, vec![format!("{Q4GSW}/q4_linear_{want}")]);
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Most chunks one workgroup of the half-chunk GEMV holds on `caps`'s device: 256, up to 512
/// where workgroups of up to 1024 fit (lavapipe: 432).
fn half_max_chunks(caps: &etvk_vulkan::DeviceCaps) -> usize {
    etvk_runtime::ops::q4_linear::half_gemv_row_chunks(caps)
}

/// Rows of more chunks than one workgroup holds ([`half_max_chunks`]) at M = 1 take the
/// half-chunk GEMV in slices of at most 256 chunks (as even as the chunks allow; the last
/// workgroup of each block set adds the slices in order): K = 8448 / 12288 (264 / 384
/// chunks: sliced only where workgroups hold 256), three slices of K = 19212 (201 chunks, not
/// a multiple of 32, one scale group per row), five of K = 40960 (the final sum's batch of
/// four slices and one more) with N cut short of a block; bias, fresh x on every launch of
/// one loaded dynamic program (M = 1, 2, 1, 1: the counters must be back at zero and no slice
/// sum of one launch may leak into the next; M = 2 takes the 256-invocation wide form, or
/// the persistent one where M = 1 is unsliced), and qcs4w.
#[test]
fn sliced_half_gemv_sums_slices_in_order() {
    let be = backend();
    let caps = be.device_caps();
    let half = caps.integer_dot_product && caps.max_workgroup_invocations >= 512;
    let max_chunks = half_max_chunks(caps);
    let m1_kernel = |k: usize| {
        if k.div_ceil(32) > max_chunks {
            "q4_linear_gemv_half_sliced"
        } else {
            "q4_linear_gemv_half"
        }
    };
    // At M = 2 rows the half GEMV takes whole (and below the limbs pre-pass) take the
    // persistent form, one workgroup of up to 512 per SM; sliced ones the wide form.
    let m2_kernel = |k: usize| {
        if k.div_ceil(32) > max_chunks {
            "q4_linear_gemv_wide_m1_dp4"
        } else {
            "q4_linear_gemv_wide_dp4_persist"
        }
    };
    for (seed, k, n, gs) in [
        (1600, 8448, 700, 32),
        (1604, 12288, 2200, 64),
        (1601, 19212, 300, 19212),
        (1602, 40960, 93, 128),
    ] {
        let mut specs = dynamic();
        specs.push(fma_off());
        let (mut d, c, bias_v, mut rng) =
            dynamic_forward_specs(&be, seed, (k, n, gs), (2, n), &specs);
        for m in [1, 2, 1, 1] {
            let what = format!("sliced GEMV K {k} N {n} gs {gs}");
            let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, &what);
            if half {
                let want = if m == 1 {
                    vec![format!("{Q4GSW}/{}", m1_kernel(k))]
                } else {
                    vec![format!("{Q4GSW}/{}", m2_kernel(k))]
                };
                assert_eq!(names, want, "M {m} K {k}");
            }
        }
    }
    let names = check_qcs4w(&be, 1603, &[1, 1], 12300, 45, &[]);
    if half {
        assert_eq!(names, vec![format!("{QCS4W}/{}", m1_kernel(12300))]);
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Rows of 257..512 chunks in one workgroup of up to 1024 invocations (one per half chunk)
/// where the device takes it ([`half_max_chunks`]), unsliced: K = 8448 with N not a multiple
/// of 8 (544 invocations, one workgroup per SM: the wave is half the 512-invocation one),
/// K = 13824 (432 chunks, 864 invocations: lavapipe's widest), K = 9000 (ragged, one scale
/// group per row); bias, fresh x per launch, M = 1, 2, 1 (M = 2: the persistent int8 GEMV in
/// one workgroup of up to 512, a chunk per invocation); qcs4w at K = 10240. Devices that hold
/// fewer chunks per workgroup take the sliced form (M = 2: the wide form) on the same rows.
#[test]
fn half_gemv_takes_long_rows_in_one_wide_workgroup() {
    let be = backend();
    let caps = be.device_caps();
    let half = caps.integer_dot_product && caps.max_workgroup_invocations >= 512;
    let wide = half_max_chunks(caps) > 256;
    for (seed, k, n, gs) in [
        (1620, 8448, 1501, 32),
        (1621, 13824, 260, 128),
        (1622, 9000, 77, 9000),
    ] {
        let mut specs = dynamic();
        specs.push(fma_off());
        let (mut d, c, bias_v, mut rng) =
            dynamic_forward_specs(&be, seed, (k, n, gs), (2, n), &specs);
        for m in [1, 2, 1] {
            let what = format!("wide half GEMV K {k} N {n} gs {gs}");
            let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, &what);
            if half {
                let whole = wide && k.div_ceil(32) <= half_max_chunks(caps);
                let want = match (m, whole) {
                    (1, true) => "q4_linear_gemv_half",
                    (1, false) => "q4_linear_gemv_half_sliced",
                    (_, true) => "q4_linear_gemv_wide_dp4_persist",
                    (_, false) => "q4_linear_gemv_wide_m1_dp4",
                };
                assert_eq!(names, vec![format!("{Q4GSW}/{want}")], "M {m} K {k}");
            }
        }
    }
    let names = check_qcs4w(&be, 1623, &[1], 10240, 33, &[]);
    if half && wide {
        assert_eq!(names, vec![format!("{QCS4W}/q4_linear_gemv_half")]);
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The half-chunk GEMV launches one invocation per half chunk of its row (or slice), in whole
/// subgroups, on rows of any length at M = 1: 161 chunks (352 invocations, 30 of them idle),
/// 128 (K = 4096: 256), 32 (K = 1000, one group per row: 64 with 1 idle past the ragged
/// end), 15 (K = 480: 32 with 2 idle); relaunched at M = 1, 2, 1 (M = 2 takes the
/// persistent form, fitted alike: 192 / 128 / 32 invocations; rows of fewer than 32 chunks
/// the lane groups), bias, fresh x each time; the `_early` and plain variants forced on rows
/// the other takes.
#[test]
fn half_gemv_fits_its_workgroup_to_the_row() {
    let be = backend();
    let caps = be.device_caps();
    let half = caps.integer_dot_product && caps.max_workgroup_invocations >= 512;
    // M = 1: rows of at most 128 chunks whose wave does every block at once take the
    // `_early` variant (its first block's second batch loaded with the first); forced, each
    // variant on rows the other would take, the early one where workgroups walk several
    // blocks (K = 4096, N = 4500: 563 blocks for 528 workgroups).
    for (seed, k, n, gs, force, m1, m2) in [
        (
            1700,
            5152,
            333,
            32,
            None,
            "gemv_half",
            "gemv_wide_dp4_persist",
        ),
        (
            1701,
            4096,
            1100,
            64,
            None,
            "gemv_half_early",
            "gemv_wide_dp4_persist",
        ),
        (
            1702,
            1000,
            41,
            1000,
            None,
            "gemv_half_early",
            "gemv_wide_dp4_persist",
        ),
        (1703, 480, 300, 32, None, "gemv_half_early", "gemv_m2"),
        (
            1704,
            5152,
            333,
            32,
            Some("half_early"),
            "gemv_half_early",
            "gemv_wide_dp4_persist",
        ),
        (
            1705,
            4096,
            4500,
            32,
            Some("half_early"),
            "gemv_half_early",
            "gemv_wide_dp4_persist",
        ),
        (
            1706,
            1000,
            41,
            1000,
            Some("half_late"),
            "gemv_half",
            "gemv_wide_dp4_persist",
        ),
    ] {
        let mut specs = dynamic_forced("etvk_q4_gemv", force);
        specs.push(fma_off());
        let (mut d, c, bias_v, mut rng) =
            dynamic_forward_specs(&be, seed, (k, n, gs), (2, n), &specs);
        for m in [1, 2, 1] {
            let what = format!("half GEMV K {k} N {n} gs {gs} forced {force:?}");
            let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, &what);
            if half {
                let want = if m == 1 { m1 } else { m2 };
                assert_eq!(
                    names,
                    vec![format!("{Q4GSW}/q4_linear_{want}")],
                    "M {m} K {k}"
                );
            }
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The half GEMV's `_tickets` form (forced): its workgroups take the blocks past the first
/// two rounds from a counter that each launch must leave at zero. Rows of 250 chunks
/// (workgroups of 512, a wave of 264): N = 5000 (625 blocks: 97 tickets give blocks, 264
/// do not), 4300 (538 blocks: 10 give blocks), 4000 (500 blocks: every ticket past the
/// end), 1000 (125 blocks: none drawn), with bias; each program relaunched at M = 1, 1, 2,
/// 1 on fresh x, so a counter left off zero would skip blocks of the next launch and leave
/// the last launch's rows in the output.
#[test]
fn half_gemv_tickets_hand_out_every_block() {
    let be = backend();
    let caps = be.device_caps();
    let half = caps.integer_dot_product && caps.max_workgroup_invocations >= 512;
    for (seed, n) in [(1720, 5000), (1721, 4300), (1722, 4000), (1723, 1000)] {
        let (k, gs) = (8000, 64);
        let mut specs = dynamic_forced("etvk_q4_gemv", Some("half_tickets"));
        specs.push(fma_off());
        let (mut d, c, bias_v, mut rng) =
            dynamic_forward_specs(&be, seed, (k, n, gs), (2, n), &specs);
        for m in [1, 1, 2, 1] {
            let what = format!("ticketed half GEMV K {k} N {n}");
            let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, &what);
            if half && m == 1 {
                assert_eq!(
                    names,
                    vec![format!("{Q4GSW}/q4_linear_gemv_half_tickets")],
                    "N {n}"
                );
            }
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The half GEMV's default launch where its workgroups walk >= 8 blocks: the `_tickets`
/// form in a balanced launch (`select::half_gemv_tickets`, `half_gemv_launch_sets`). Rows of
/// 2 chunks (workgroups of 32, a wave of 4224), N = 271000: 33875 blocks, so 9 rounds of the
/// wave, balanced to 3764 workgroups (9 blocks each but one, which walks 8); relaunched
/// at M = 1, 1, 2, 1 on fresh x, with bias (a counter left off zero would skip blocks of the
/// next launch). Rows this short keep the default rule's path within lavapipe's reach: at
/// K = 8192 it needs N >= 16896.
#[test]
fn half_gemv_takes_tickets_by_default_on_long_walks() {
    let be = backend();
    let caps = be.device_caps();
    let half = caps.integer_dot_product && caps.max_workgroup_invocations >= 512;
    let (k, n, gs) = (64, 271_000, 32);
    let mut specs = dynamic();
    specs.push(fma_off());
    let (mut d, c, bias_v, mut rng) = dynamic_forward_specs(&be, 1730, (k, n, gs), (2, n), &specs);
    for m in [1, 1, 2, 1] {
        let what = format!("half GEMV by default K {k} N {n}");
        let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, &what);
        if half && m == 1 {
            assert_eq!(names, vec![format!("{Q4GSW}/q4_linear_gemv_half_tickets")]);
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The FMA GEMV at M = 2..8 (`q4_linear_gemv_fma_m{2,4,8}`), forced (and by default at
/// M = 8, where the device has no int8 tensor cores or the rows are short), and its
/// two-words-per-lane form at M <= 4 (`_w2_`, forced), on
/// rows of one slice (K = 64: 8 words, most of a 32-invocation workgroup idle; K = 100: a
/// ragged last word; one group per row on K = 2052) and of several (K = 4096: two slices
/// of 256 words; K = 8448: five of 212 in workgroups of 224), N cut short of a block and
/// N = 2000 (more blocks than block sets, so workgroups walk several), group sizes 8 to
/// 128, bias or not, leading dims, and x rows of very different sizes (each row is checked
/// on its own); then one dynamic program relaunched at M = 8, 2, 5, 8, 3 on sliced rows
/// (the finished-slice counters must be back at zero, no slice sum may leak into the next
/// launch), and qcs4w.
#[test]
fn fma_gemv_matches_f64_reference() {
    let be = backend();
    let fma = [("etvk_q4_gemv".to_string(), b"fma".to_vec())];
    let fma_w2 = [("etvk_q4_gemv".to_string(), b"fma_w2".to_vec())];
    let cases: &[(&[usize], usize, usize, usize)] = &[
        (&[2], 64, 32, 16),
        (&[3], 100, 37, 8),
        (&[4], 2052, 24, 2052),
        (&[5], 4096, 40, 128),
        (&[2, 3], 8448, 45, 32),
        (&[7], 8448, 2000, 64),
        (&[8], 4096, 300, 32),
        (&[8], 512, 2000, 16),
    ];
    for (i, &(lead, k, n, gs)) in cases.iter().enumerate() {
        let m: usize = lead.iter().product();
        // Two words per lane: M <= 4, groups of >= 16 codes (packed rows are whole 32-code
        // chunks, so their word counts are even).
        let pairs = m <= 4 && (gs >= k || (gs >= 16 && (gs / 8).is_power_of_two()));
        for (specs, seed) in [(&fma[..], 3000), (&[][..], 3100), (&fma_w2[..], 3400)] {
            let names = check_forward_scaled(
                &be,
                seed + i as u64,
                lead,
                (k, n, gs),
                i % 2 == 0,
                Q4GSW,
                specs,
                |r, j| [1.0f32, 3e3, 1e-5, 0.25][(r + j / 512) % 4],
            );
            let by_default = m == 8 && (!has_int8_mma(&be) || k <= 4096);
            if fma_runs(&be) && (!specs.is_empty() || by_default) {
                let mt = match m {
                    2 => 2,
                    3..=4 => 4,
                    _ => 8,
                };
                let w2 = if pairs && specs == fma_w2 { "w2_" } else { "" };
                assert_eq!(
                    names,
                    vec![format!("{Q4GSW}/q4_linear_gemv_fma_{w2}m{mt}")],
                    "lead {lead:?} K {k} N {n} gs {gs}"
                );
            }
        }
    }
    let (k, n, gs) = (8448, 530, 64);
    for force in ["fma", "fma_w2"] {
        let (mut d, c, bias_v, mut rng) =
            dynamic_forward(&be, 3200, (k, n, gs), (8, n), Some(force));
        for m in [8, 2, 5, 8, 3] {
            let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, "FMA GEMV relaunched");
            if fma_runs(&be) {
                let w2 = if force == "fma_w2" && m <= 4 {
                    "w2_"
                } else {
                    ""
                };
                assert!(
                    names[0].contains(&format!("q4_linear_gemv_fma_{w2}m")),
                    "M {m}: {names:?}"
                );
            }
        }
    }
    let names = check_qcs4w(&be, 3300, &[4], 4100, 50, &fma);
    if fma_runs(&be) {
        assert_eq!(names, vec![format!("{QCS4W}/q4_linear_gemv_fma_m4")]);
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Rows longer than the persistent GEMV's (> 512 chunks, or > 256 on devices without
/// workgroups of 1024) at M = 2..8: the int8 wide GEMV's workgroups split over the
/// activation rows (workgroup per row block and row), with the limbs made per workgroup or,
/// forced, by the pre-pass for every row; leading dims, ragged K, odd N, bias (qcs4w at
/// M = 4, K = 8230: in qcs4w_matches_f64_reference).
#[test]
fn long_rows_split_over_activation_rows() {
    let be = backend();
    if !be.device_caps().integer_dot_product {
        return;
    }
    let pre = vec![("etvk_q4_gemv".to_string(), b"wide_dp4_pre".to_vec())];
    let off = vec![fma_off()];
    for (seed, lead, k, n, gs, force, want) in [
        (
            1500,
            &[8][..],
            16416,
            37,
            32,
            false,
            vec!["gemv_wide_m1_dp4"],
        ),
        (
            1501,
            &[2, 3][..],
            16500,
            21,
            64,
            false,
            vec!["gemv_wide_m1_dp4"],
        ),
        (
            1502,
            &[5][..],
            8224,
            40,
            32,
            true,
            vec!["act_limbs", "gemv_wide_m1_dp4_pre"],
        ),
        (
            1503,
            &[2][..],
            9000,
            9,
            32,
            true,
            vec!["act_limbs", "gemv_wide_m1_dp4_pre"],
        ),
    ] {
        let specs: &[(String, Vec<u8>)] = if force { &pre } else { &off };
        let names = check_forward_specs(&be, seed, lead, (k, n, gs), seed % 2 == 0, Q4GSW, specs);
        let want: Vec<String> = want
            .iter()
            .map(|w| match *w {
                "act_limbs" => format!("{Q4GSW}/q4_act_limbs"),
                kernel => format!("{Q4GSW}/q4_linear_{kernel}"),
            })
            .collect();
        assert_eq!(names, want, "lead {lead:?} K {k} N {n} forced pre {force}");
    }
    assert_eq!(be.validation_error_count(), 0);
}

fn wide_gemv_case(be: &std::sync::Arc<Backend>, gs: usize, force: Option<&str>, m1_kernel: &str) {
    let (k, n) = (if gs == 20 { 4100 } else { 4160 }, 37);
    let mut specs = dynamic_forced("etvk_q4_gemv", force);
    specs.push(fma_off());
    let (mut d, c, bias_v, mut rng) = dynamic_forward_specs(be, 1300, (k, n, gs), (3, n), &specs);
    // The int8 forms serve M <= 8 too (their workgroups split over the activation rows; the
    // pre-pass makes the limbs of every row), the half-chunk form's rows taking the
    // 256-invocation persistent form there; the float forms leave M > 1 to the lane groups.
    let half = m1_kernel.starts_with("gemv_half");
    let int8 = m1_kernel.contains("dp4") || half;
    let small_m = if half {
        "gemv_wide_dp4_persist"
    } else {
        m1_kernel
    };
    for (m, kernel) in [
        (1, m1_kernel),
        (2, if int8 { small_m } else { "gemv_m2" }),
        (3, if int8 { small_m } else { "gemv_m4" }),
        (1, m1_kernel),
    ] {
        let what = format!("GEMV gs {gs} forced {force:?}");
        let names = forward_step(&mut d, &mut rng, &c, &bias_v, m, &what);
        // The limbs pre-pass is a node of its own.
        let mut want = Vec::new();
        if m1_kernel.ends_with("_pre") {
            want.push(format!("{Q4GSW}/q4_act_limbs"));
        }
        want.push(format!("{Q4GSW}/q4_linear_{kernel}"));
        assert_eq!(names, want, "M = {m}, gs {gs}, forced {force:?}");
    }
}

/// Forward and backward of the same constants share one packed weight and one packed
/// scale buffer; the alias shares them too.
#[test]
fn forward_and_backward_share_one_packed_weight() {
    let be = backend();
    let mut rng = Rng::new(600);
    let c = q4gsw_case(&mut rng, 64, 32, 16);
    let mut g = G::new();
    let xi = g.input(&[4, 64]);
    let yi = g.input(&[4, 32]);
    let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
    let nul = g.b.add_null();
    let o = g.output(&[4, 32]);
    let o2 = g.output(&[4, 32]);
    let dx = g.output(&[4, 64]);
    g.b.add_op(Q4GSW, &[xi, w, s, gsv, nul, o]);
    g.b.add_op(Q4GSW_BWD, &[yi, w, s, gsv, dx]);
    g.b.add_op(Q4GSW_ALIAS, &[xi, w, s, gsv, nul, o2]);
    let d = g.load(&be, &[]).unwrap();
    let packed = d.prepacked();
    assert_eq!(packed.len(), 2, "{packed:#?}");
    let weights: Vec<_> = packed
        .iter()
        .filter(|p| p.layout.starts_with("q4w_"))
        .collect();
    assert_eq!(weights.len(), 1, "{packed:#?}");
    assert_eq!(weights[0].dims, vec![32, 8]);
    assert!(weights[0].on_gpu);
    // The shared buffer holds the reference packing.
    let idx = packed
        .iter()
        .position(|p| p.layout.starts_with("q4w_"))
        .unwrap();
    let words = pack_q4_weights(&c.w.bytes, 32, 32, NibbleOrder::EvenLow);
    let want: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(d.read_prepacked(idx).unwrap(), want);
}

/// The GPU pack shader and the CPU reference packer agree bit for bit on odd sizes (odd N,
/// row_bytes not a multiple of 4 or 16) in both nibble orders.
#[test]
fn gpu_and_cpu_packers_agree_bit_for_bit() {
    let be = backend();
    let cpu_spec = vec![(
        etvk_runtime::builder::CPU_PREPACK_SPEC.to_string(),
        vec![1u8],
    )];
    for (i, &(n, row_bytes)) in [
        (1usize, 1usize),
        (37, 13),
        (29, 11),
        (3, 17),
        (64, 33),
        (5, 50),
        (131, 6),
    ]
    .iter()
    .enumerate()
    {
        let mut rng = Rng::new(700 + i as u64);
        // Fully random bytes: every nibble, padding included, is arbitrary here.
        let lo: Vec<u8> = (0..n * row_bytes).map(|_| rng.next_u64() as u8).collect();
        let hi: Vec<u8> = (0..n * row_bytes).map(|_| rng.next_u64() as u8).collect();
        let k = 2 * row_bytes;
        let build = || {
            let mut g = G::new();
            let x = g.input(&[1, k]);
            let wl = g.constant(DataType::Uint8, &[n, row_bytes], lo.clone());
            let s = g.constant(DataType::Float32, &[1, n], f32b(&vec![0.01; n]));
            let gs = g.b.add_int((k.div_ceil(4) * 4) as i64);
            let nul = g.b.add_null();
            let o = g.output(&[1, n]);
            g.b.add_op(Q4GSW, &[x, wl, s, gs, nul, o]);
            let wh = g.constant(DataType::Uint8, &[n, row_bytes], hi.clone());
            let sc = g.constant(DataType::Float32, &[n], f32b(&vec![0.01; n]));
            let o2 = g.output(&[1, n]);
            g.b.add_op(QCS4W, &[x, wh, sc, o2]);
            g
        };
        let gpu = build().load(&be, &[]).unwrap();
        let cpu = build().load(&be, &cpu_spec).unwrap();
        for (src, order) in [(&lo, NibbleOrder::EvenLow), (&hi, NibbleOrder::EvenHigh)] {
            let layout = format!(
                "q4w_k32_{}",
                if order == NibbleOrder::EvenLow {
                    "even_low"
                } else {
                    "even_high"
                }
            );
            let find = |d: &Delegate| {
                let p = d.prepacked();
                let i = p.iter().position(|p| p.layout == layout).unwrap();
                (p[i].on_gpu, d.read_prepacked(i).unwrap())
            };
            let (g_on, g_bytes) = find(&gpu);
            let (c_on, c_bytes) = find(&cpu);
            assert!(g_on && !c_on);
            let words = pack_q4_weights(src, n, row_bytes, order);
            let want: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            assert_eq!(
                c_bytes, want,
                "CPU path, N {n} row_bytes {row_bytes} {order:?}"
            );
            assert_eq!(
                g_bytes, want,
                "GPU path, N {n} row_bytes {row_bytes} {order:?}"
            );
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// Load-time limits: errors name the op, the shape and the rule.
#[test]
fn limits_are_checked_at_load() {
    let be = backend();
    let attempt = |x_dims: &[usize],
                   x_dt: DataType,
                   w_dt: DataType,
                   w_dims: &[usize],
                   s_dims: &[usize],
                   gs: i64,
                   out_dims: &[usize]| {
        let mut g = G::new();
        let xi = g.b.add_tensor(x_dt, x_dims);
        g.b.mark_input(xi);
        let wn: usize = w_dims.iter().product();
        let w = g.constant(w_dt, w_dims, vec![0x88u8; wn * w_dt.size_bytes()]);
        let sn: usize = s_dims.iter().product();
        let s = g.constant(DataType::Float32, s_dims, f32b(&vec![0.01; sn]));
        let gsv = g.b.add_int(gs);
        let nul = g.b.add_null();
        let o = g.output(out_dims);
        g.b.add_op(Q4GSW, &[xi, w, s, gsv, nul, o]);
        g.load(&be, &[]).err().expect("must fail")
    };
    let f32t = DataType::Float32;
    let u8t = DataType::Uint8;
    let cases: Vec<(Error, &[&str])> = vec![
        (
            attempt(&[4, 64], f32t, u8t, &[32, 32], &[4, 32], 6, &[4, 32]),
            &["group_size = 6", "multiple of 4"],
        ),
        (
            attempt(
                &[4, 64],
                f32t,
                DataType::Int32,
                &[32, 32],
                &[4, 32],
                16,
                &[4, 32],
            ),
            &["weights must be uint8"],
        ),
        (
            attempt(&[4, 64], f32t, u8t, &[32, 32], &[4, 16], 16, &[4, 32]),
            &["N' = 16", "N = 32"],
        ),
        (
            attempt(&[4, 64], f32t, u8t, &[32, 32], &[5, 32], 16, &[4, 32]),
            &["G = 5", "Kp = 64"],
        ),
        (
            attempt(&[4, 72], f32t, u8t, &[32, 32], &[4, 32], 16, &[4, 32]),
            &["[4, 72]", "Kp = 64"],
        ),
        (
            attempt(&[4, 64], f32t, u8t, &[32, 32], &[4, 32], 16, &[4, 31]),
            &["[4, 31]", "N = 32"],
        ),
        (
            attempt(
                &[4, 64],
                DataType::Int32,
                u8t,
                &[32, 32],
                &[4, 32],
                16,
                &[4, 32],
            ),
            &["int32", "float32 or float16"],
        ),
        (
            attempt(&[4, 64], f32t, u8t, &[2, 16, 32], &[4, 32], 16, &[4, 32]),
            &["2-D"],
        ),
    ];
    for (e, needles) in cases {
        assert!(e.message.contains(Q4GSW), "{}", e.message);
        for n in needles {
            assert!(e.message.contains(n), "missing {n:?} in: {}", e.message);
        }
    }
}

// ---- exporter fixtures through Delegate::init ----

fn run_fixture(name: &str, op: &str) {
    let dir = fixture_dir(name);
    let blob = std::fs::read(dir.join("delegate.bin")).unwrap();
    let be = backend();
    let named = load_named_data(name);
    let mut d = Delegate::init(&be, &blob, &[], &named).unwrap();
    let io: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("io.json")).unwrap()).unwrap();
    let (atol, rtol) = (io["atol"].as_f64().unwrap(), io["rtol"].as_f64().unwrap());
    let shape = |v: &serde_json::Value| -> Vec<usize> {
        v["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect()
    };
    let cases = io["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for (i, case) in cases.iter().enumerate() {
        let inp = &case["inputs"][0];
        let out = &case["outputs"][0];
        let x = f32s(&std::fs::read(dir.join(inp["file"].as_str().unwrap())).unwrap());
        let y = f32s(&std::fs::read(dir.join(out["file"].as_str().unwrap())).unwrap());
        let mut args = vec![host_f32(&shape(inp), &x), empty_out()];
        d.execute(&mut args).unwrap();
        let (sizes, got) = out_f32(&args[1]);
        assert_eq!(sizes, shape(out), "{name} case {i}");
        let want: Vec<f64> = y.iter().map(|v| *v as f64).collect();
        assert_close(&got, &want, atol, rtol, &format!("{name} case {i}"));
    }
    assert!(d.profile()[0].0.starts_with(op));
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn fixture_c1_linear_q4gsw_gs32() {
    run_fixture("c1_linear_q4gsw_gs32", Q4GSW);
}

#[test]
fn fixture_d1_linear_qcs4w() {
    run_fixture("d1_linear_qcs4w", QCS4W);
}

#[test]
fn fixture_f1_linear_q4gsw_backward() {
    run_fixture("f1_linear_q4gsw_backward", Q4GSW_BWD);
}

/// fp16 scales (widened to fp32 at load) and a bias that is a graph input rather than a
/// constant (its first N values are read), on the GEMV and on the split-K tiled kernel (whose
/// reduce adds the bias).
#[test]
fn fp16_scales_and_runtime_bias() {
    let be = backend();
    fp16_scales_and_runtime_bias_at(&be, (3, 64, 24, 16), 900, "q4_linear_gemv_m4");
    fp16_scales_and_runtime_bias_at(
        &be,
        (16, 512, 24, 16),
        901,
        "q4_linear_tiled_fwd_t32x128_split",
    );
}

fn fp16_scales_and_runtime_bias_at(
    be: &std::sync::Arc<Backend>,
    (m, k, n, gs): (usize, usize, usize, usize),
    seed: u64,
    kernel: &str,
) {
    let mut rng = Rng::new(seed);
    let mut c = q4gsw_case(&mut rng, k, n, gs);
    // Round the scales to fp16 so the reference sees what the GPU sees.
    let h: Vec<u16> = c.scales.iter().map(|&v| f32_to_f16_bits(v)).collect();
    c.scales = h.iter().map(|&b| f16_bits_to_f32(b)).collect();
    c.wd = dequant_gsw(&c.w, &c.scales, c.n_pad, gs);
    let x = rng.floats(m * k, -1.0, 1.0);
    let bias_v = rng.floats(c.n_pad, -1.0, 1.0);
    let mut g = G::new();
    let xi = g.input(&[m, k]);
    let bi = g.input(&[c.n_pad]);
    let w = g.constant(DataType::Uint8, &[n, c.w.row_bytes], c.w.bytes.clone());
    let s = g.constant(
        DataType::Float16,
        &[c.groups, c.n_pad],
        h.iter().flat_map(|b| b.to_le_bytes()).collect(),
    );
    let gsv = g.b.add_int(gs as i64);
    let o = g.output(&[m, n]);
    g.b.add_op(Q4GSW, &[xi, w, s, gsv, bi, o]);
    // qcs4w with fp16 per-channel scales on the same input.
    let wq = random_weights(&mut rng, n, k, k / 2, NibbleOrder::EvenHigh);
    let sq: Vec<u16> = rng
        .floats(n, 0.005, 0.015)
        .iter()
        .map(|&v| f32_to_f16_bits(v))
        .collect();
    let wqi = g.constant(DataType::Uint8, &[n, k / 2], wq.bytes.clone());
    let sqi = g.constant(
        DataType::Float16,
        &[n],
        sq.iter().flat_map(|b| b.to_le_bytes()).collect(),
    );
    let o2 = g.output(&[m, n]);
    g.b.add_op(QCS4W, &[xi, wqi, sqi, o2]);
    let mut d = g.load(be, &[]).unwrap();
    let mut args = vec![
        host_f32(&[m, k], &x),
        host_f32(&[c.n_pad], &bias_v),
        empty_out(),
        empty_out(),
    ];
    d.execute(&mut args).unwrap();
    let want = ref_forward(&x, &c.wd, c.w.kp(), Some(&bias_v), m, k, n);
    assert_rel(&out_f32(&args[2]).1, &want, "fp16 scales, runtime bias");
    let mut wd = vec![0f64; n * k];
    for r in 0..n {
        for col in 0..k {
            wd[r * k + col] = wq.q(r, col) * f16_bits_to_f32(sq[r]) as f64;
        }
    }
    assert_rel(
        &out_f32(&args[3]).1,
        &ref_forward(&x, &wd, k, None, m, k, n),
        "qcs4w fp16 scales",
    );
    let names: Vec<String> = d.profile().into_iter().map(|p| p.0).collect();
    assert_eq!(names[0], format!("{Q4GSW}/{kernel}"), "{names:?}");
    assert_eq!(be.validation_error_count(), 0);
}

fn f32_to_f16_bits(v: f32) -> u16 {
    etvk_runtime::dtype::f32_to_f16(v)
}

fn f16_bits_to_f32(h: u16) -> f32 {
    etvk_runtime::dtype::f16_to_f32(h)
}

/// A non-finite activation never yields a finite output, whatever the kernel: in float
/// arithmetic Inf * w is +-Inf (NaN where w = 0) for every output; the int8 forms turn the
/// whole chunk's unit into NaN. Forward at M = 1 under every GEMV form (an Inf and a NaN),
/// M = 3 and 40 (only the bad row), backward at M = 1 under both M = 1 kernels (a NaN in
/// d_out reaches every d_x column).
#[test]
fn non_finite_activations_never_come_out_finite() {
    let be = backend();
    let (k, n, gs) = (4160, 40, 32);
    let mut rng = Rng::new(1500);
    let c = q4gsw_case(&mut rng, k, n, gs);
    // The M = 1 forms (the f16 ones start at M = 9).
    let forms = etvk_runtime::builder::Q4_GEMV_FORMS
        .iter()
        .filter(|f| !f.starts_with("f16"));
    for form in forms {
        for bad in [f32::INFINITY, f32::NAN] {
            let mut g = G::new();
            let xi = g.input(&[1, k]);
            let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
            let nul = g.b.add_null();
            let o = g.output(&[1, n]);
            g.b.add_op(Q4GSW, &[xi, w, s, gsv, nul, o]);
            let specs = vec![("etvk_q4_gemv".to_string(), form.as_bytes().to_vec())];
            let mut d = g.load(&be, &specs).unwrap();
            let mut x = rng.floats(k, -1.0, 1.0);
            x[1000] = bad;
            let (_, got) = run1(&mut d, &[1, k], &x);
            assert!(
                got.iter().all(|v| !v.is_finite()),
                "forward {form}, x[1000] = {bad}: {got:?}"
            );
        }
    }
    // M = 3 (lane-group GEMV) and M = 40 (tiled, split K): only row 1 holds the bad value;
    // the other rows stay finite.
    for m in [3, 40] {
        let mut g = G::new();
        let xi = g.input(&[m, k]);
        let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
        let nul = g.b.add_null();
        let o = g.output(&[m, n]);
        g.b.add_op(Q4GSW, &[xi, w, s, gsv, nul, o]);
        let mut d = g.load(&be, &[]).unwrap();
        let mut x = rng.floats(m * k, -1.0, 1.0);
        x[k + 17] = f32::NAN;
        let (_, got) = run1(&mut d, &[m, k], &x);
        for (i, row) in got.chunks(n).enumerate() {
            assert!(
                row.iter().all(|v| v.is_finite() == (i != 1)),
                "forward M = {m}, row {i}: {row:?}"
            );
        }
    }
    // M = 1 and 2 (the wide kernel's two forms) and 5 (staged, or split-N); only row 0
    // holds the NaN.
    for (form, m) in [
        ("split", 1),
        ("wide", 1),
        ("split", 2),
        ("wide", 2),
        ("split", 5),
        ("staged", 5),
    ] {
        let mut g = G::new();
        let yi = g.input(&[m, n]);
        let (w, s, gsv) = add_q4gsw_consts(&mut g, &c);
        let kp = c.w.kp();
        let o = g.output(&[m, kp]);
        g.b.add_op(Q4GSW_BWD, &[yi, w, s, gsv, o]);
        let specs = vec![("etvk_q4_bwd".to_string(), form.as_bytes().to_vec())];
        let mut d = g.load(&be, &specs).unwrap();
        let mut dy = rng.floats(m * n, -1.0, 1.0);
        dy[7] = f32::NAN;
        let (_, got) = run1(&mut d, &[m, n], &dy);
        for (i, row) in got.chunks(kp).enumerate() {
            assert!(
                row.iter().all(|v| v.is_nan() == (i == 0)),
                "backward {form} M = {m}, row {i}: a NaN in d_out row 0 must make exactly row 0 NaN"
            );
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The random sweeps' seed: `base`, or with `ETVK_Q4_SWEEP_SEED=S` set (a longer hunt on
/// problems CI does not draw) `base` + S.
fn sweep_seed(base: u64) -> u64 {
    std::env::var("ETVK_Q4_SWEEP_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(base, |s| base.wrapping_add(s))
}

/// Every kernel choice a compile spec can force, on seeded random problems: M 1..=40 (as
/// one or two leading dims; M = 1, 2, 3..8 and 9..40 in turn; 16 problems, or
/// `ETVK_Q4_SWEEP_CASES`), K and N >= 13 of any size (rarely whole chunks or row quads),
/// group sizes that need not divide K or be whole chunks, bias or not; linear_qcs4w under
/// the same forward choices. A forced kernel that does not apply to a problem gives way to
/// the default choice, so each case checks whatever ran against the f64 reference; the
/// kernels the other tests name run here on shapes they do not pick.
#[test]
fn random_problems_under_every_forced_kernel() {
    let be = backend();
    let mut rng = Rng::new(sweep_seed(2512));
    let spec = |k: &str, v: &str| vec![(k.to_string(), v.as_bytes().to_vec())];
    let mut forward_specs = vec![
        Vec::new(),
        spec(MMA_SPEC, "emulated"),
        spec(MMA_SPEC, "emulated_reg"),
    ];
    // Every GEMV form the spec accepts (`f16` falls back where the device lacks it).
    for f in etvk_runtime::builder::Q4_GEMV_FORMS {
        forward_specs.push(spec("etvk_q4_gemv", f));
    }
    let backward_forms = [
        None,
        Some("split"),
        Some("staged"),
        Some("mma_emulated"),
        Some("wide_c8_magic"),
        Some("wide_c16_f16"),
        Some("wide_c32_f16t"),
    ];
    let mut ran = std::collections::BTreeSet::new();
    // More cases for a longer hunt: ETVK_Q4_SWEEP_CASES=N.
    let cases: u64 = std::env::var("ETVK_Q4_SWEEP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    for case in 0..cases {
        let pick = |rng: &mut Rng, lo: u64, hi: u64| (lo + rng.next_u64() % (hi - lo + 1)) as usize;
        // Each M class twice: the M = 1 and 2 kernels, the small-M ones, the tiles.
        let m = match case % 4 {
            0 => 1,
            1 => 2,
            2 => pick(&mut rng, 3, 8),
            _ => pick(&mut rng, 9, 40),
        };
        let k = pick(&mut rng, 8, 1100);
        // N >= 13: a row of a few outputs can cancel to a small norm (N = 1, K = 905 with a
        // bias: the output 0.012 of terms summing to 19 in size, so fp32's rounding alone
        // passes 1e-5 of it), and the checks here are relative to each row's norm.
        let n = pick(&mut rng, 13, 300);
        let gs = [12, 20, 32, 64, 128, 256][pick(&mut rng, 0, 5)];
        let lead = if m % 2 == 0 && case % 2 == 0 {
            vec![2, m / 2]
        } else {
            vec![m]
        };
        let bias = case % 3 != 0;
        for (i, specs) in forward_specs.iter().enumerate() {
            let seed = 9000 + 100 * case + i as u64;
            let names = check_forward_specs(&be, seed, &lead, (k, n, gs), bias, Q4GSW, specs);
            ran.extend(
                names
                    .into_iter()
                    .map(|p| p.rsplit('/').next().unwrap_or("").to_string()),
            );
            // The same choice for linear_qcs4w (one scale per row, the high nibble first).
            let names = check_qcs4w(&be, seed + 50, &lead, k, n, specs);
            ran.extend(
                names
                    .into_iter()
                    .map(|p| p.rsplit('/').next().unwrap_or("").to_string()),
            );
        }
        for (i, force) in backward_forms.iter().enumerate() {
            let seed = 9500 + 100 * case + i as u64;
            let names = check_backward_forced(&be, seed, &lead, (k, n, gs), None, *force);
            ran.extend(
                names
                    .into_iter()
                    .map(|p| p.rsplit('/').next().unwrap_or("").to_string()),
            );
        }
    }
    // The sweep reaches the families it is for (a change to the shape draws that lost them
    // would otherwise pass silently).
    for family in [
        "q4_linear_gemv_m",
        "q4_linear_tiled_fwd",
        "q4_linear_mma_emu_f",
        "q4_linear_mma_reg_emu_f",
        "q4_linear_bwd_split_m",
        "q4_linear_bwd_wide",
        "q4_linear_tiled_bwd",
    ] {
        assert!(
            ran.iter().any(|k| k.starts_with(family)),
            "no {family}* kernel ran: {ran:?}"
        );
    }
    eprintln!("kernels: {ran:?}");
    assert_eq!(be.validation_error_count(), 0);
}

/// Random walks of M on loaded dynamic programs: per seeded problem (K, N >= 13 of any size,
/// groups that need not divide K) one forward program under each of the default, emulated
/// int8, emulated f16 and lane-group choices and one backward program under the default,
/// emulated tensor-core and split-N choices, each run at 8 random M in 1..=max_m (fresh data
/// each time) against f64: every M change re-selects kernels, launch sizes, split counts and
/// scratch use on the same buffers. 4 problems, or `ETVK_Q4_SWEEP_CASES`.
#[test]
fn random_m_walks_on_dynamic_programs() {
    let be = backend();
    let mut rng = Rng::new(sweep_seed(2531));
    let spec = |k: &str, v: &str| (k.to_string(), v.as_bytes().to_vec());
    let forward_specs = [
        vec![],
        vec![spec(MMA_SPEC, "emulated")],
        vec![spec("etvk_q4_gemv", "f16_emulated")],
        vec![spec("etvk_q4_gemv", "lanes")],
    ];
    let backward_specs = [
        vec![],
        vec![spec("etvk_q4_bwd", "mma_emulated")],
        vec![spec("etvk_q4_bwd", "split")],
    ];
    let pick = |rng: &mut Rng, lo: u64, hi: u64| (lo + rng.next_u64() % (hi - lo + 1)) as usize;
    let cases: u64 = std::env::var("ETVK_Q4_SWEEP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    for case in 0..cases {
        let k = pick(&mut rng, 8, 1100);
        let n = pick(&mut rng, 13, 300);
        let gs = [12, 20, 32, 64, 128][pick(&mut rng, 0, 4)];
        let max_m = pick(&mut rng, 9, 48);
        let walk: Vec<usize> = (0..8).map(|_| pick(&mut rng, 1, max_m as u64)).collect();
        let what = format!("case {case}: K {k} N {n} gs {gs} max M {max_m}, walk {walk:?}");
        for specs in &forward_specs {
            let mut all = dynamic();
            all.extend(specs.iter().cloned());
            let (mut d, c, bias_v, mut prng) =
                dynamic_forward_specs(&be, rng.next_u64(), (k, n, gs), (max_m, n), &all);
            for &m in &walk {
                forward_step(
                    &mut d,
                    &mut prng,
                    &c,
                    &bias_v,
                    m,
                    &format!("{what} {specs:?}"),
                );
            }
        }
        for specs in &backward_specs {
            let mut all = dynamic();
            all.extend(specs.iter().cloned());
            let (mut d, c, mut prng) =
                dynamic_backward_specs(&be, rng.next_u64(), (k, n, gs), max_m, &all);
            for &m in &walk {
                let names = backward_step(&mut d, &mut prng, &c, m, n);
                assert!(!names.is_empty(), "{what} {specs:?} M {m}: nothing ran");
            }
        }
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// The f16 forward's hi / lo form (groups that are not multiples of 16) on rows of more than
/// 117 steps of 32 k: its emulated build lost every product past k = 3744 on lavapipe until
/// its inner product loops were unrolled (session 25: llvmpipe's loop limiter; the native
/// kernel has no such loops).
#[test]
fn hi_lo_f16_forward_on_long_rows() {
    let be = backend();
    let force = [("etvk_q4_gemv".to_string(), b"f16_emulated".to_vec())];
    for (i, (k, gs)) in [(3744usize, 20usize), (3745, 20), (8580, 20), (5000, 4)]
        .into_iter()
        .enumerate()
    {
        let names = check_forward_specs(
            &be,
            2560 + i as u64,
            &[17],
            (k, 64, gs),
            true,
            Q4GSW,
            &force,
        );
        assert!(
            names
                .iter()
                .any(|p| p.ends_with("/q4_linear_fwd_mma_emu_t32x128")),
            "K {k}: {names:?}"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

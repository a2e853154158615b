//! Attention ops: `et_vk.sdpa.default(q, k, v, attn_mask?, scale?, out)` on `[B, H, S, D]`
//! and `sdpa_with_kv_cache.default(q, k, v, k_cache, v_cache, start_pos SymInt, seq_len,
//! attn_mask?, dropout_p, is_causal, scale?, out)` on `[B, S, H, D]` with caches
//! `[B, max_seq, H_kv, D]`, and the unfused pair `update_cache.default(value, cache,
//! start_pos, out)` + `llama.custom_sdpa.default(q, k_cache, v_cache, start_pos,
//! attn_mask?, dropout_p, is_causal, scale?, out)`.
//! KV-cache cases run several executes on one loaded delegate with
//! `start_pos` (a SymInt graph input) advancing, against an f64 reference that keeps its own
//! cache, so they check that the in-place cache writes persist. References are in f64.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32, Int32 as I32};

use crate::case::{CaseGraph, OpCase, Val};
use crate::compare::Tol;
use crate::tensor::Tensor;

const SDPA: &str = "et_vk.sdpa.default";
const KV: &str = "sdpa_with_kv_cache.default";
const UPDATE: &str = "update_cache.default";
const CUSTOM: &str = "llama.custom_sdpa.default";
const CLONE: &str = "aten.clone.default";
const ROTARY: &str = "et_vk.apply_rotary_emb.default";
const ROTARY_HF: &str = "et_vk.apply_rotary_emb_hf.default";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = sdpa_cases();
    v.extend(kv_cases());
    v.extend(rope_kv_cases());
    v.extend(update_cache_cases());
    v.extend(custom_sdpa_cases());
    v
}

/// One attention row: softmax over `keys` of `q . k_j * scale + bias_j`, times `v_j`.
/// `k(j, d)` / `v(j, d)` read key / value `j`; `bias(j)` the additive mask.
fn attend(
    q: &[f64],
    keys: usize,
    scale: f64,
    k: impl Fn(usize, usize) -> f64,
    v: impl Fn(usize, usize) -> f64,
    bias: impl Fn(usize) -> f64,
) -> Vec<f64> {
    let d = q.len();
    let s: Vec<f64> = (0..keys)
        .map(|j| (0..d).map(|e| q[e] * k(j, e)).sum::<f64>() * scale + bias(j))
        .collect();
    let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
    let sum: f64 = w.iter().sum();
    (0..d)
        .map(|e| (0..keys).map(|j| w[j] * v(j, e)).sum::<f64>() / sum)
        .collect()
}

// ---------------------------------------------------------------- et_vk.sdpa

/// q `[B, H, S, D]`, k / v `[B, H_kv, L, D]`, mask `[S or 1, L]`.
fn sdpa_ref(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, scale: f64) -> Tensor {
    let [b, h, s, d] = <[usize; 4]>::try_from(q.sizes.as_slice()).unwrap();
    let (hk, l) = (k.sizes[1], k.sizes[2]);
    let group = h / hk;
    let mut out = Vec::with_capacity(q.numel());
    for bi in 0..b {
        for hi in 0..h {
            let kb = (bi * hk + hi / group) * l * d;
            for i in 0..s {
                let qo = ((bi * h + hi) * s + i) * d;
                let row = attend(
                    &q.data[qo..qo + d],
                    l,
                    scale,
                    |j, e| k.data[kb + j * d + e],
                    |j, e| v.data[kb + j * d + e],
                    |j| match mask {
                        Some(m) if m.sizes[0] == 1 => m.data[j],
                        Some(m) => m.data[i * l + j],
                        None => 0.0,
                    },
                );
                out.extend(row);
            }
        }
    }
    Tensor::new(F32, &q.sizes, out)
}

/// Causal mask `[s, l]`: 0 on and below the diagonal (offset `l - s`), -inf above.
fn causal_mask(s: usize, l: usize) -> Tensor {
    let data = (0..s * l)
        .map(|x| {
            if x % l <= x / l + (l - s) {
                0.0
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect();
    Tensor::f32(&[s, l], data)
}

/// Graph: q, k, v inputs of `dt` (and the mask as an input of `mask` sizes), scale Double or
/// Null.
fn sdpa_graph(
    dt: DataType,
    q: &[usize],
    kv: &[usize],
    mask: Option<&[usize]>,
    scale: Option<f64>,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let qi = g.input(dt, q);
    let ki = g.input(dt, kv);
    let vi = g.input(dt, kv);
    let mi = match mask {
        Some(m) => g.input(dt, m),
        None => g.null(),
    };
    let si = match scale {
        Some(x) => g.double(x),
        None => g.null(),
    };
    let out = g.output(dt, q);
    g.op(SDPA, &[qi, ki, vi, mi, si, out]);
    g
}

fn sdpa_case(
    q: &[usize],
    kv: &[usize],
    mask: Option<Tensor>,
    scale: Option<f64>,
    seed: u64,
) -> OpCase {
    sdpa_case_of(F32, q, kv, mask, scale, seed)
}

/// fp16 storage: inputs rounded to fp16 (the reference sees the rounded values), float
/// math in the kernel, one fp16 rounding of the output.
fn sdpa_case_of(
    dt: DataType,
    q: &[usize],
    kv: &[usize],
    mask: Option<Tensor>,
    scale: Option<f64>,
    seed: u64,
) -> OpCase {
    let qt = Tensor::rand_range(dt, q, -1.0, 1.0, seed);
    let kt = Tensor::rand_range(dt, kv, -1.0, 1.0, seed + 1);
    let vt = Tensor::rand_range(dt, kv, -1.0, 1.0, seed + 2);
    let mask = mask.map(|m| Tensor::new(dt, &m.sizes, m.data));
    let sc = scale.unwrap_or(1.0 / (q[3] as f64).sqrt());
    let want = sdpa_ref(&qt, &kt, &vt, mask.as_ref(), sc);
    let want = Tensor::new(dt, &want.sizes, want.data);
    let g = sdpa_graph(dt, q, kv, mask.as_ref().map(|m| m.sizes.as_slice()), scale);
    let name = format!(
        "{} q {q:?} kv {kv:?} mask {:?} scale {scale:?}",
        dt.name(),
        mask.as_ref().map(|m| m.sizes.clone())
    );
    let mut inputs = vec![qt, kt, vt];
    inputs.extend(mask);
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32_SUM };
    OpCase::new(SDPA, name, g).tol(tol).run(inputs, vec![want])
}

fn sdpa_cases() -> Vec<OpCase> {
    let mut v = vec![
        // The e4 fixture's shapes: causal mask [S, S], default scale.
        sdpa_case(
            &[1, 2, 8, 32],
            &[1, 2, 8, 32],
            Some(causal_mask(8, 8)),
            None,
            9500,
        ),
        // Grouped-query heads, more keys than queries, explicit scale.
        sdpa_case(&[2, 4, 5, 16], &[2, 2, 7, 16], None, Some(0.3), 9510),
        // Keys past one 64-key chunk, D past one dim per lane, a broadcast [1, L] mask.
        sdpa_case(
            &[1, 3, 3, 100],
            &[1, 1, 130, 100],
            Some(Tensor::rand_range(F32, &[1, 130], -2.0, 0.0, 9520)),
            None,
            9521,
        ),
        // Causal with an offset (3 queries over 70 keys), single row, D = 1.
        sdpa_case(
            &[1, 1, 3, 1],
            &[1, 1, 70, 1],
            Some(causal_mask(3, 70)),
            None,
            9530,
        ),
        // fp16 storage: causal mask; grouped heads past one key chunk.
        sdpa_case_of(
            F16,
            &[1, 2, 8, 32],
            &[1, 2, 8, 32],
            Some(causal_mask(8, 8)),
            None,
            9560,
        ),
        sdpa_case_of(F16, &[1, 4, 3, 40], &[1, 2, 70, 40], None, Some(0.2), 9570),
    ];
    // Dynamic sequence length for q, k, v and the mask together.
    let g = sdpa_graph(F32, &[1, 2, 9, 16], &[1, 2, 9, 16], Some(&[9, 9]), None);
    let mut case = OpCase::new(SDPA, "dynamic S <= 9, causal mask", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, s) in [9usize, 3, 1, 9].into_iter().enumerate() {
        let seed = 9540 + 4 * i as u64;
        let q = Tensor::rand_range(F32, &[1, 2, s, 16], -1.0, 1.0, seed);
        let k = Tensor::rand_range(F32, &[1, 2, s, 16], -1.0, 1.0, seed + 1);
        let vv = Tensor::rand_range(F32, &[1, 2, s, 16], -1.0, 1.0, seed + 2);
        let m = causal_mask(s, s);
        let want = sdpa_ref(&q, &k, &vv, Some(&m), 0.25);
        case = case.run(vec![q, k, vv, m], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- sdpa_with_kv_cache

/// The f64 model of the op: its caches `[B, max_seq, H_kv, D]` persist across steps.
struct KvRef {
    dims: [usize; 4],
    k: Vec<f64>,
    v: Vec<f64>,
    causal: bool,
}

impl KvRef {
    fn new(dims: [usize; 4], causal: bool) -> KvRef {
        let n = dims.iter().product();
        KvRef {
            dims,
            k: vec![0.0; n],
            v: vec![0.0; n],
            causal,
        }
    }

    /// Write k / v `[B, S, H_kv, D]` at `start`, then attend q `[B, S, H, D]`.
    fn step(&mut self, q: &Tensor, k: &Tensor, v: &Tensor, start: usize) -> Tensor {
        let [b, max, hk, d] = self.dims;
        let [_, s, h, _] = <[usize; 4]>::try_from(q.sizes.as_slice()).unwrap();
        let row = hk * d;
        for bi in 0..b {
            for si in 0..s {
                let src = (bi * s + si) * row;
                let dst = (bi * max + start + si) * row;
                self.k[dst..dst + row].copy_from_slice(&k.data[src..src + row]);
                self.v[dst..dst + row].copy_from_slice(&v.data[src..src + row]);
            }
        }
        let group = h / hk;
        let scale = 1.0 / (d as f64).sqrt();
        let mut out = vec![0.0; q.numel()];
        for bi in 0..b {
            for si in 0..s {
                for hi in 0..h {
                    let qo = ((bi * s + si) * h + hi) * d;
                    let keys = if self.causal {
                        start + si + 1
                    } else {
                        start + s
                    };
                    let at = |j: usize, e: usize| (bi * max + j) * row + (hi / group) * d + e;
                    let r = attend(
                        &q.data[qo..qo + d],
                        keys,
                        scale,
                        |j, e| self.k[at(j, e)],
                        |j, e| self.v[at(j, e)],
                        |_| 0.0,
                    );
                    out[qo..qo + d].copy_from_slice(&r);
                }
            }
        }
        Tensor::new(F32, &q.sizes, out)
    }
}

/// Inputs q, k, v, start_pos (SymInt), and seq_len (SymInt when `sym_len`, else an Int
/// of the exported length); zero caches as constants, scale Null.
fn kv_graph(
    dt: DataType,
    q: &[usize],
    kv: &[usize],
    cache: &[usize],
    causal: bool,
    sym_len: bool,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let qi = g.input(dt, q);
    let ki = g.input(dt, kv);
    let vi = g.input(dt, kv);
    let sp = g.symint();
    g.builder().mark_input(sp);
    let sl = if sym_len {
        let x = g.symint();
        g.builder().mark_input(x);
        x
    } else {
        g.int(q[1] as i64)
    };
    let zeros = Tensor::new(dt, cache, vec![0.0; cache.iter().product()]);
    let kc = g.constant(&zeros);
    let vc = g.constant(&zeros);
    let mask = g.null();
    let dropout = g.int(0);
    let c = g.bool(causal);
    let scale = g.null();
    let out = g.output(dt, q);
    g.op(
        KV,
        &[qi, ki, vi, kc, vc, sp, sl, mask, dropout, c, scale, out],
    );
    g
}

/// A case stepping through `(start_pos, S)` pairs on one delegate.
fn kv_case(
    name: &str,
    dims: ([usize; 4], [usize; 4], [usize; 4]),
    causal: bool,
    steps: &[(usize, usize)],
    seed: u64,
) -> OpCase {
    kv_case_of(F32, name, dims, causal, steps, seed)
}

/// [`kv_case`] with q, k, v and the caches stored as `dt` (fp16: inputs rounded, the cache
/// holds fp16 values, math in float).
fn kv_case_of(
    dt: DataType,
    name: &str,
    dims: ([usize; 4], [usize; 4], [usize; 4]),
    causal: bool,
    steps: &[(usize, usize)],
    seed: u64,
) -> OpCase {
    let (q, kv, cache) = dims;
    let sym_len = steps.iter().any(|&(_, s)| s != q[1]);
    let g = kv_graph(dt, &q, &kv, &cache, causal, sym_len);
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32_SUM };
    let mut case = OpCase::new(KV, name.to_string(), g).tol(tol).dynamic();
    let mut r = KvRef::new(cache, causal);
    for (i, &(start, s)) in steps.iter().enumerate() {
        let sd = 3 * i as u64 + seed;
        let qt = Tensor::rand_range(dt, &[q[0], s, q[2], q[3]], -1.0, 1.0, sd);
        let kt = Tensor::rand_range(dt, &[kv[0], s, kv[2], kv[3]], -1.0, 1.0, sd + 1);
        let vt = Tensor::rand_range(dt, &[kv[0], s, kv[2], kv[3]], -1.0, 1.0, sd + 2);
        let want = r.step(&qt, &kt, &vt, start);
        let want = Tensor::new(dt, &want.sizes, want.data);
        let mut inputs: Vec<Val> = vec![qt.into(), kt.into(), vt.into(), Val::Int(start as i64)];
        if sym_len {
            inputs.push(Val::Int(s as i64));
        }
        case = case.run_vals(inputs, vec![want.into()]);
    }
    case
}

fn kv_cases() -> Vec<OpCase> {
    vec![
        // The e5 fixture's decode shapes: one token per step, start_pos 0..5.
        kv_case(
            "decode q [1, 1, 2, 32] cache [1, 32, 2, 32], start_pos 0..5",
            ([1, 1, 2, 32], [1, 1, 2, 32], [1, 32, 2, 32]),
            true,
            &[(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1)],
            9600,
        ),
        // Grouped-query prefill of 5, then decode and a 3-token chunk (dynamic S).
        kv_case(
            "GQA prefill + decode q [1, <=5, 4, 16] kv heads 2 cache [1, 20, 2, 16]",
            ([1, 5, 4, 16], [1, 5, 2, 16], [1, 20, 2, 16]),
            true,
            &[(0, 5), (5, 1), (6, 3), (9, 1), (10, 5)],
            9650,
        ),
        // fp16 q / k / v and caches: GQA prefill then decode.
        kv_case_of(
            F16,
            "fp16 GQA prefill + decode q [1, <=4, 4, 16] kv heads 2 cache [1, 12, 2, 16]",
            ([1, 4, 4, 16], [1, 4, 2, 16], [1, 12, 2, 16]),
            true,
            &[(0, 4), (4, 1), (5, 2)],
            9680,
        ),
        // D not a multiple of 4: the key loop's scalar path.
        kv_case(
            "D 18 q [1, <=3, 2, 18] cache [1, 16, 2, 18]",
            ([1, 3, 2, 18], [1, 3, 2, 18], [1, 16, 2, 18]),
            true,
            &[(0, 3), (3, 1), (4, 2), (6, 1)],
            9710,
        ),
        // D not a multiple of the key loop's 8 products in flight (its remainder).
        kv_case(
            "D 20 q [1, <=3, 2, 20] cache [1, 16, 2, 20]",
            ([1, 3, 2, 20], [1, 3, 2, 20], [1, 16, 2, 20]),
            true,
            &[(0, 3), (3, 1), (4, 2), (6, 1)],
            9720,
        ),
        // Keys split over workgroups (compile spec `etvk_sdpa_split` = on, the default),
        // joined by each row's last to finish: decode rows over up to four 64-key splits
        // (fewer early on), a 60-row chunk in two, a prefill of 70 rows unsplit, 33 rows
        // (132 query rows) in two splits of two chunks each; GQA.
        kv_case(
            "split GQA q [1, <=70, 4, 16] kv heads 2 cache [1, 200, 2, 16]",
            ([1, 70, 4, 16], [1, 70, 2, 16], [1, 200, 2, 16]),
            true,
            &[
                (0, 70),
                (70, 1),
                (71, 1),
                (72, 60),
                (132, 1),
                (133, 1),
                (134, 33),
            ],
            9730,
        )
        .spec("etvk_sdpa_split", "on"),
        kv_case_of(
            F16,
            "split fp16 q [1, <=66, 2, 32] cache [1, 160, 2, 32]",
            ([1, 66, 2, 32], [1, 66, 2, 32], [1, 160, 2, 32]),
            true,
            &[(0, 66), (66, 1), (67, 1)],
            9740,
        )
        .spec("etvk_sdpa_split", "on"),
        kv_case(
            "split non-causal B 2 D 80 q [2, <=40, 3, 80] cache [2, 72, 3, 80]",
            ([2, 40, 3, 80], [2, 40, 3, 80], [2, 72, 3, 80]),
            false,
            &[(0, 40), (40, 30), (70, 2)],
            9705,
        )
        .spec("etvk_sdpa_split", "on"),
        // Non-causal, batch 2, D past one dim per lane, keys past one 64-key chunk; the
        // split off (it is on by default), so each row's one workgroup walks every key.
        kv_case(
            "unsplit non-causal B 2 D 80 q [2, <=40, 3, 80] cache [2, 72, 3, 80]",
            ([2, 40, 3, 80], [2, 40, 3, 80], [2, 72, 3, 80]),
            false,
            &[(0, 40), (40, 30), (70, 2)],
            9700,
        )
        .spec("etvk_sdpa_split", "off"),
    ]
}

/// The RoPE before the attention in [`rope_kv_case`].
#[derive(Clone, Copy)]
enum RopeForm {
    /// `et_vk.apply_rotary_emb`: pair-interleaved, tables cos / sin `[S, D/2]` as inputs
    /// (the rows of the call's positions, as export_llm slices them).
    Pairs,
    /// `et_vk.apply_rotary_emb_hf` with rotary dim R <= D: rotate-half, the full tables
    /// `[max_seq, R]` as constants read from row start_pos (the attention's own).
    Hf(usize),
}

/// A RoPE of q and k (`form`) whose outputs only an `sdpa_with_kv_cache` reads: the runtime
/// leaves the rotation to the attention (`sdpa_kv_rope_*`, `sdpa_kv_rope_hf_*`: q as loaded,
/// the call's keys as read and written into the cache). Steps `(start_pos, S)` on one
/// delegate against the f64 RoPE and attention.
fn rope_kv_case(
    (dt, form): (DataType, RopeForm),
    name: &str,
    (q, kv, cache): ([usize; 4], [usize; 4], [usize; 4]),
    steps: &[(usize, usize)],
    seed: u64,
) -> OpCase {
    let half = q[3] / 2;
    let mut g = CaseGraph::new();
    let qi = g.input(dt, &q);
    let ki = g.input(dt, &kv);
    let vi = g.input(dt, &kv);
    let hf_tables = match form {
        RopeForm::Pairs => None,
        RopeForm::Hf(r) => Some(super::llama::hf_freqs(dt, cache[1], r)),
    };
    let (ci, si) = match &hf_tables {
        None => (g.input(dt, &[q[1], half]), g.input(dt, &[q[1], half])),
        Some((c, sn)) => (g.constant(c), g.constant(sn)),
    };
    let sp = g.symint();
    g.builder().mark_input(sp);
    let sl = g.symint();
    g.builder().mark_input(sl);
    let qo = g.tensor(dt, &q);
    let ko = g.tensor(dt, &kv);
    let outs = g.value_list(&[qo, ko]);
    match form {
        RopeForm::Pairs => g.op(ROTARY, &[qi, ki, ci, si, outs]),
        RopeForm::Hf(_) => g.op(ROTARY_HF, &[qi, ki, ci, si, sp, outs]),
    }
    let zeros = Tensor::new(dt, &cache, vec![0.0; cache.iter().product()]);
    let kc = g.constant(&zeros);
    let vc = g.constant(&zeros);
    let (mask, dropout, causal, scale) = (g.null(), g.int(0), g.bool(true), g.null());
    let out = g.output(dt, &q);
    g.op(
        KV,
        &[
            qo, ko, vi, kc, vc, sp, sl, mask, dropout, causal, scale, out,
        ],
    );
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32_SUM };
    let label = match form {
        RopeForm::Pairs => "RoPE",
        RopeForm::Hf(_) => "HF RoPE",
    };
    let mut case = OpCase::new(KV, format!("{label} into {name}"), g)
        .tol(tol)
        .dynamic();
    let mut r = KvRef::new(cache, true);
    for (i, &(start, s)) in steps.iter().enumerate() {
        let sd = 3 * i as u64 + seed;
        let qt = Tensor::rand_range(dt, &[q[0], s, q[2], q[3]], -1.0, 1.0, sd);
        let kt = Tensor::rand_range(dt, &[kv[0], s, kv[2], kv[3]], -1.0, 1.0, sd + 1);
        let vt = Tensor::rand_range(dt, &[kv[0], s, kv[2], kv[3]], -1.0, 1.0, sd + 2);
        let mut inputs: Vec<Val> = vec![qt.clone().into(), kt.clone().into(), vt.clone().into()];
        let (qr, kr) = match &hf_tables {
            None => {
                // The tables' rows of positions start.. start + s.
                let (c_all, s_all) = super::llama::freqs(dt, start + s, half);
                let rows =
                    |t: &Tensor| Tensor::new(dt, &[s, half], t.data[start * half..].to_vec());
                let (c, sn) = (rows(&c_all), rows(&s_all));
                let rotated = (
                    super::llama::rotary_ref(&qt, &c, &sn, dt),
                    super::llama::rotary_ref(&kt, &c, &sn, dt),
                );
                inputs.extend([c.into(), sn.into()]);
                rotated
            }
            Some((c, sn)) => (
                super::llama::rotary_hf_ref(&qt, c, sn, start),
                super::llama::rotary_hf_ref(&kt, c, sn, start),
            ),
        };
        inputs.extend([Val::Int(start as i64), Val::Int(s as i64)]);
        let want = r.step(&qr, &kr, &vt, start);
        let want = Tensor::new(dt, &want.sizes, want.data);
        case = case.run_vals(inputs, vec![want.into()]);
    }
    case
}

fn rope_kv_cases() -> Vec<OpCase> {
    vec![
        // The HF form: GQA, full and partial rotary dims.
        rope_kv_case(
            (F32, RopeForm::Hf(16)),
            "GQA q [1, <=4, 4, 16] kv heads 2 cache [1, 12, 2, 16] R 16",
            ([1, 4, 4, 16], [1, 4, 2, 16], [1, 12, 2, 16]),
            &[(0, 4), (4, 1), (5, 2), (7, 1)],
            9780,
        ),
        rope_kv_case(
            (F32, RopeForm::Hf(8)),
            "q [1, <=3, 2, 24] cache [1, 8, 2, 24] R 8",
            ([1, 3, 2, 24], [1, 3, 2, 24], [1, 8, 2, 24]),
            &[(0, 3), (3, 1), (4, 2)],
            9790,
        ),
        // Grouped-query prefill, decode steps and a chunk (dynamic S), D = 16.
        rope_kv_case(
            (F32, RopeForm::Pairs),
            "GQA prefill + decode q [1, <=5, 4, 16] kv heads 2 cache [1, 20, 2, 16]",
            ([1, 5, 4, 16], [1, 5, 2, 16], [1, 20, 2, 16]),
            &[(0, 5), (5, 1), (6, 1), (7, 3), (10, 1)],
            9750,
        ),
        // Head dim 160: pairs past one per lane, two per lane in the key loop.
        rope_kv_case(
            (F32, RopeForm::Pairs),
            "D 160 q [1, <=3, 2, 160] cache [1, 8, 2, 160]",
            ([1, 3, 2, 160], [1, 3, 2, 160], [1, 8, 2, 160]),
            &[(0, 3), (3, 1), (4, 2)],
            9760,
        ),
        // Split keys (compile spec `etvk_sdpa_split` = on) with either RoPE inside.
        rope_kv_case(
            (F32, RopeForm::Pairs),
            "split GQA q [1, <=70, 4, 16] kv heads 2 cache [1, 150, 2, 16]",
            ([1, 70, 4, 16], [1, 70, 2, 16], [1, 150, 2, 16]),
            &[(0, 70), (70, 1), (71, 5), (76, 1)],
            9830,
        )
        .spec("etvk_sdpa_split", "on"),
        rope_kv_case(
            (F32, RopeForm::Hf(16)),
            "split GQA q [1, <=70, 4, 16] kv heads 2 cache [1, 150, 2, 16] R 16",
            ([1, 70, 4, 16], [1, 70, 2, 16], [1, 150, 2, 16]),
            &[(0, 70), (70, 1), (71, 5), (76, 1)],
            9840,
        )
        .spec("etvk_sdpa_split", "on"),
        // D = 18: the key loop's scalar pairs and their remainder.
        rope_kv_case(
            (F32, RopeForm::Pairs),
            "D 18 q [1, <=3, 2, 18] cache [1, 8, 2, 18]",
            ([1, 3, 2, 18], [1, 3, 2, 18], [1, 8, 2, 18]),
            &[(0, 3), (3, 1), (4, 2)],
            9820,
        ),
        // D = 20: the key loop's remainder (two pairs; HF: past the rotary dim).
        rope_kv_case(
            (F32, RopeForm::Pairs),
            "D 20 q [1, <=3, 2, 20] cache [1, 8, 2, 20]",
            ([1, 3, 2, 20], [1, 3, 2, 20], [1, 8, 2, 20]),
            &[(0, 3), (3, 1), (4, 2)],
            9800,
        ),
        rope_kv_case(
            (F32, RopeForm::Hf(12)),
            "D 20 q [1, <=3, 2, 20] cache [1, 8, 2, 20] R 12",
            ([1, 3, 2, 20], [1, 3, 2, 20], [1, 8, 2, 20]),
            &[(0, 3), (3, 1), (4, 2)],
            9810,
        ),
        rope_kv_case(
            (F16, RopeForm::Pairs),
            "fp16 GQA q [1, <=4, 4, 16] kv heads 2 cache [1, 12, 2, 16]",
            ([1, 4, 4, 16], [1, 4, 2, 16], [1, 12, 2, 16]),
            &[(0, 4), (4, 1), (5, 2)],
            9770,
        ),
    ]
}

// ---------------------------------------------------------------- update_cache

/// `cache[b, start + s] = value[b, s]` for value `[B, S, H, D]`, cache `[B, max, H, D]`.
fn write_rows(cache: &mut [f64], dims: [usize; 4], value: &Tensor, start: usize) {
    let [b, max, h, d] = dims;
    let s = value.sizes[1];
    let row = h * d;
    for bi in 0..b {
        for si in 0..s {
            let src = (bi * s + si) * row;
            let dst = (bi * max + start + si) * row;
            cache[dst..dst + row].copy_from_slice(&value.data[src..src + row]);
        }
    }
}

/// Graph: value input, a constant cache (initial contents `init`), start_pos a SymInt
/// input, `update_cache` into a placeholder `[1]` output nobody reads, then a clone of the
/// cache as the graph output (it reads the one shared copy the update mutated).
fn update_cache_graph(value: &[usize], init: &Tensor) -> CaseGraph {
    let mut g = CaseGraph::new();
    let vi = g.input(init.dtype, value);
    let ci = g.constant(init);
    let sp = g.symint();
    g.builder().mark_input(sp);
    let dummy = g.tensor(init.dtype, &[1]);
    g.op(UPDATE, &[vi, ci, sp, dummy]);
    let fmt = g.null();
    let out = g.output(init.dtype, &init.sizes);
    g.op(CLONE, &[ci, fmt, out]);
    g
}

fn rand_of(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    if dt == I32 {
        Tensor::rand_int(I32, sizes, -1000, 1000, seed)
    } else {
        Tensor::rand_range(dt, sizes, -1.0, 1.0, seed)
    }
}

/// A case stepping through `(start_pos, S)` pairs; each run checks the whole cache.
fn update_cache_case(
    dt: DataType,
    value: [usize; 4],
    cache: [usize; 4],
    steps: &[(usize, usize)],
    seed: u64,
) -> OpCase {
    let init = rand_of(dt, &cache, seed);
    let g = update_cache_graph(&value, &init);
    let name = format!(
        "{} value [{}, <={}, {}, {}] cache {cache:?} steps {steps:?}",
        dt.name(),
        value[0],
        value[1],
        value[2],
        value[3]
    );
    let mut case = OpCase::new(UPDATE, name, g).tol(Tol::EXACT).dynamic();
    let mut state = init.data.clone();
    for (i, &(start, s)) in steps.iter().enumerate() {
        let vt = rand_of(dt, &[value[0], s, value[2], value[3]], seed + 1 + i as u64);
        write_rows(&mut state, cache, &vt, start);
        let want = Tensor::new(dt, &cache, state.clone());
        case = case.run_vals(vec![vt.into(), Val::Int(start as i64)], vec![want.into()]);
    }
    case
}

fn update_cache_cases() -> Vec<OpCase> {
    vec![
        // Prefill, decode, and a chunk that ends exactly at the cache end; odd D.
        update_cache_case(
            F32,
            [1, 4, 3, 5],
            [1, 11, 3, 5],
            &[(0, 4), (4, 1), (5, 1), (7, 4)],
            9900,
        ),
        // Batch 2: rows of both batches land in their own cache slices.
        update_cache_case(
            F32,
            [2, 3, 2, 8],
            [2, 7, 2, 8],
            &[(0, 3), (3, 3), (6, 1)],
            9910,
        ),
        update_cache_case(
            F16,
            [1, 2, 2, 6],
            [1, 9, 2, 6],
            &[(0, 2), (5, 2), (2, 1)],
            9920,
        ),
        update_cache_case(
            I32,
            [1, 1, 1, 3],
            [1, 5, 1, 3],
            &[(0, 1), (4, 1), (1, 1)],
            9930,
        ),
    ]
}

// ---------------------------------------------------------------- custom_sdpa

/// Graph of the unfused Llama attention: `update_cache(k, k_cache)`,
/// `update_cache(v, v_cache)`, then `custom_sdpa(q, k_cache, v_cache, start_pos, mask,
/// 0.0, is_causal, scale)`. Inputs q, k, v, start_pos (SymInt) and the mask when `mask`
/// gives its max sizes; zero caches as constants.
fn custom_graph(
    dt: DataType,
    dims: ([usize; 4], [usize; 4], [usize; 4]),
    causal: Option<bool>,
    mask: Option<[usize; 2]>,
    scale: Option<f64>,
) -> CaseGraph {
    let (q, kv, cache) = dims;
    let mut g = CaseGraph::new();
    let qi = g.input(dt, &q);
    let ki = g.input(dt, &kv);
    let vi = g.input(dt, &kv);
    let sp = g.symint();
    g.builder().mark_input(sp);
    let mi = match mask {
        Some(m) => g.input(dt, &m),
        None => g.null(),
    };
    let zeros = Tensor::new(dt, &cache, vec![0.0; cache.iter().product()]);
    let kc = g.constant(&zeros);
    let vc = g.constant(&Tensor::new(dt, &cache, vec![0.0; cache.iter().product()]));
    for (src, c) in [(ki, kc), (vi, vc)] {
        let dummy = g.tensor(dt, &[1]);
        g.op(UPDATE, &[src, c, sp, dummy]);
    }
    let dropout = g.double(0.0);
    let ci = match causal {
        Some(c) => g.bool(c),
        None => g.null(),
    };
    let si = match scale {
        Some(x) => g.double(x),
        None => g.null(),
    };
    let out = g.output(dt, &q);
    g.op(CUSTOM, &[qi, kc, vc, sp, mi, dropout, ci, si, out]);
    g
}

/// The f64 model: caches persist; attention over `[0, start + S)`, causal relative to
/// start, plus an additive mask `[S, W]` (its first `start + S` columns).
struct CustomRef {
    dims: [usize; 4],
    k: Vec<f64>,
    v: Vec<f64>,
}

impl CustomRef {
    fn step(
        &mut self,
        t: (&Tensor, &Tensor, &Tensor),
        start: usize,
        causal: bool,
        mask: Option<&Tensor>,
        scale: f64,
    ) -> Tensor {
        let (q, k, v) = t;
        write_rows(&mut self.k, self.dims, k, start);
        write_rows(&mut self.v, self.dims, v, start);
        let [_, max, hk, d] = self.dims;
        let [b, s, h, _] = <[usize; 4]>::try_from(q.sizes.as_slice()).unwrap();
        let group = h / hk;
        let mut out = vec![0.0; q.numel()];
        for bi in 0..b {
            for si in 0..s {
                for hi in 0..h {
                    let qo = ((bi * s + si) * h + hi) * d;
                    let keys = if causal { start + si + 1 } else { start + s };
                    let at = |j: usize, e: usize| ((bi * max + j) * hk + hi / group) * d + e;
                    let r = attend(
                        &q.data[qo..qo + d],
                        keys,
                        scale,
                        |j, e| self.k[at(j, e)],
                        |j, e| self.v[at(j, e)],
                        |j| mask.map_or(0.0, |m| m.data[si * m.sizes[1] + j]),
                    );
                    out[qo..qo + d].copy_from_slice(&r);
                }
            }
        }
        Tensor::new(F32, &q.sizes, out)
    }
}

/// Options of one custom_sdpa case.
struct CustomOpts {
    /// Storage of q, k, v, the mask and the caches (fp16: inputs rounded, float math).
    dt: DataType,
    causal: Option<bool>,
    /// Mask width beyond `start + S` (a mask input `[S, start + S + extra]`), or no mask.
    mask_extra: Option<usize>,
    scale: Option<f64>,
}

fn custom_case(
    name: &str,
    dims: ([usize; 4], [usize; 4], [usize; 4]),
    opts: CustomOpts,
    steps: &[(usize, usize)],
    seed: u64,
) -> OpCase {
    let (q, kv, cache) = dims;
    let mask_max = opts.mask_extra.map(|e| [q[1], cache[1] + e]);
    let dt = opts.dt;
    let g = custom_graph(dt, dims, opts.causal, mask_max, opts.scale);
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32_SUM };
    let mut case = OpCase::new(CUSTOM, name.to_string(), g).tol(tol).dynamic();
    let n = cache.iter().product();
    let mut r = CustomRef {
        dims: cache,
        k: vec![0.0; n],
        v: vec![0.0; n],
    };
    let scale = opts.scale.unwrap_or(1.0 / (q[3] as f64).sqrt());
    for (i, &(start, s)) in steps.iter().enumerate() {
        let sd = 4 * i as u64 + seed;
        let qt = Tensor::rand_range(dt, &[q[0], s, q[2], q[3]], -1.0, 1.0, sd);
        let kt = Tensor::rand_range(dt, &[kv[0], s, kv[2], kv[3]], -1.0, 1.0, sd + 1);
        let vt = Tensor::rand_range(dt, &[kv[0], s, kv[2], kv[3]], -1.0, 1.0, sd + 2);
        let mt = opts
            .mask_extra
            .map(|e| Tensor::rand_range(dt, &[s, start + s + e], -2.0, 0.0, sd + 3));
        let causal = opts.causal.unwrap_or(false);
        let want = r.step((&qt, &kt, &vt), start, causal, mt.as_ref(), scale);
        let want = Tensor::new(dt, &want.sizes, want.data);
        let mut inputs: Vec<Val> = vec![qt.into(), kt.into(), vt.into(), Val::Int(start as i64)];
        inputs.extend(mt.map(Val::from));
        case = case.run_vals(inputs, vec![want.into()]);
    }
    case
}

fn custom_sdpa_cases() -> Vec<OpCase> {
    let causal = |c: bool| CustomOpts {
        dt: F32,
        causal: Some(c),
        mask_extra: None,
        scale: None,
    };
    vec![
        // fp16 storage (q, k, v and the caches), causal prefill then decode.
        custom_case(
            "fp16 causal q [1, <=3, 2, 24] cache [1, 8, 2, 24]",
            ([1, 3, 2, 24], [1, 3, 2, 24], [1, 8, 2, 24]),
            CustomOpts {
                dt: F16,
                ..causal(true)
            },
            &[(0, 3), (3, 1), (4, 2)],
            9940,
        ),
        // Llama decode shapes: one token per step after a prefill.
        custom_case(
            "causal decode q [1, <=4, 2, 32] cache [1, 16, 2, 32]",
            ([1, 4, 2, 32], [1, 4, 2, 32], [1, 16, 2, 32]),
            causal(true),
            &[(0, 4), (4, 1), (5, 1), (6, 1)],
            9950,
        ),
        // GQA, odd head dim, chunked prefill ending exactly at the cache end.
        custom_case(
            "causal GQA q [1, <=5, 6, 7] kv heads 2 cache [1, 13, 2, 7]",
            ([1, 5, 6, 7], [1, 5, 2, 7], [1, 13, 2, 7]),
            causal(true),
            &[(0, 5), (5, 3), (8, 5)],
            9970,
        ),
        // Non-causal (None), batch 2, keys past one 64-key chunk, D past one dim per lane.
        custom_case(
            "is_causal None B 2 q [2, <=40, 3, 80] cache [2, 72, 3, 80]",
            ([2, 40, 3, 80], [2, 40, 3, 80], [2, 72, 3, 80]),
            CustomOpts {
                dt: F32,
                causal: None,
                mask_extra: None,
                scale: None,
            },
            &[(0, 40), (40, 30), (70, 2)],
            9990,
        ),
        // Additive mask wider than the attended keys, explicit scale.
        custom_case(
            "mask [S, >= start_pos + S] scale 0.2 q [1, <=3, 2, 5] cache [1, 9, 1, 5]",
            ([1, 3, 2, 5], [1, 3, 1, 5], [1, 9, 1, 5]),
            CustomOpts {
                dt: F32,
                causal: Some(false),
                mask_extra: Some(2),
                scale: Some(0.2),
            },
            &[(0, 3), (3, 1), (4, 2), (6, 3)],
            10010,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::run_case;

    /// A window past the cache end is an error naming the op, not a silent drop.
    #[test]
    fn update_cache_rejects_start_pos_past_the_end() {
        let value = Tensor::rand(&[1, 2, 1, 4], 9941);
        let cache = Tensor::rand(&[1, 6, 1, 4], 9942);
        let case = update_cache_case(F32, [1, 2, 1, 4], [1, 6, 1, 4], &[(0, 2)], 9940)
            .run_vals(vec![value.into(), Val::Int(5)], vec![cache.into()]);
        let err = run_case(&case).expect_err("start_pos 5 + S 2 > 6 must fail");
        assert!(
            err.contains("update_cache.default") && err.contains("exceeds the cache length 6"),
            "{err}"
        );
    }

    #[test]
    fn custom_sdpa_rejects_start_pos_past_the_end() {
        let dims = ([1, 2, 1, 4], [1, 2, 1, 4], [1, 6, 1, 4]);
        let g = custom_graph(F32, dims, Some(true), None, None);
        let q = Tensor::rand(&[1, 2, 1, 4], 1);
        let case = OpCase::new(CUSTOM, "past the end", g).dynamic().run_vals(
            vec![
                q.clone().into(),
                q.clone().into(),
                q.clone().into(),
                Val::Int(5),
            ],
            vec![q.into()],
        );
        let err = run_case(&case).expect_err("start_pos 5 + S 2 > 6 must fail");
        assert!(err.contains("exceeds the cache length 6"), "{err}");
    }
}

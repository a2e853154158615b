//! Indexing ops (the `e5` KV-cache Llama fixture):
//! `aten.embedding.default(weight, indices, padding_idx, scale_grad, sparse, out)`,
//! `aten.index.Tensor(x, ValueList[None.., idx], out)`,
//! `aten.select_copy.int(x, dim, index, out)`,
//! `et_vk.select_as_symint.default(x, dim, index, out SymInt)` and
//! `et_vk.embedding_q4gsw.default(weight, scales, group_size, indices, is_linear_weight,
//! out)` (uint8 `[V, D/2]` nibbles, scales `[V, D / group_size]`); and from executorch
//! 1.5.1's Vulkan partitioner `aten.index_select.default(x, dim, index, out)` and
//! `aten.gather.default(x, dim, index, sparse_grad, out)` (int32 index in the VkGraph, as
//! the exporter writes it). Neither wraps negative indices (PyTorch raises on them).
//! Indices are int32 on the GPU; some cases stage them from int64 host data as the exporter
//! does. An out-of-range index fails the execute (as PyTorch raises), naming the index and
//! the dim size; the delegate runs on afterwards. References are computed in f64; results
//! are exact copies.

use etvk_format::ir::DataType::{
    self, Float16 as F16, Float32 as F32, Int32 as I32, Int64 as I64, Uint8 as U8,
};

use crate::case::{CaseGraph, OpCase, Val};
use crate::compare::Tol;
use crate::tensor::Tensor;

const EMBEDDING: &str = "aten.embedding.default";
const INDEX: &str = "aten.index.Tensor";
const SELECT: &str = "aten.select_copy.int";
const SELECT_SYM: &str = "et_vk.select_as_symint.default";
const EMB_Q4: &str = "et_vk.embedding_q4gsw.default";
const EMB_4BIT: &str = "quantized_decomposed.embedding_4bit.dtype";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = embedding_cases();
    v.extend(index_cases());
    v.extend(select_cases());
    v.extend(select_sym_cases());
    v.extend(embedding_q4_cases());
    v.extend(embedding_4bit_cases());
    v.extend(index_select_cases());
    v.extend(gather_cases());
    v
}

/// `x` gathered along `dim` by `idx` (negatives wrap when `wrap`; out of range -> 0).
fn gather_ref(x: &Tensor, idx: &Tensor, dim: usize, wrap: bool) -> Tensor {
    let n = x.sizes[dim] as i64;
    let inner: usize = x.sizes[dim + 1..].iter().product();
    let outer: usize = x.sizes[..dim].iter().product();
    let mut sizes = x.sizes[..dim].to_vec();
    sizes.extend_from_slice(&idx.sizes);
    sizes.extend_from_slice(&x.sizes[dim + 1..]);
    let mut out = Vec::new();
    for o in 0..outer {
        for &r in &idx.data {
            let mut r = r as i64;
            if wrap && r < 0 {
                r += n;
            }
            for i in 0..inner {
                out.push(if (0..n).contains(&r) {
                    x.data[(o * n as usize + r as usize) * inner + i]
                } else {
                    0.0
                });
            }
        }
    }
    Tensor::new(x.dtype, &sizes, out)
}

/// An int32 graph input for `t`, staged from int64 host data when `t` is int64.
fn index_input(g: &mut CaseGraph, t: &Tensor) -> usize {
    let id = g.input(I32, &t.sizes);
    if t.dtype == I64 {
        g.builder().set_staging_dtype(id, I64);
    }
    id
}

// ---------------------------------------------------------------- embedding

fn embedding_graph(w: &Tensor, idx_sizes: &[usize], idx_dt: DataType, w_const: bool) -> CaseGraph {
    let mut g = CaseGraph::new();
    let wi = if w_const {
        g.constant(w)
    } else {
        g.input_like(w)
    };
    let zeros = Tensor::new(idx_dt, idx_sizes, vec![0.0; idx_sizes.iter().product()]);
    let ii = index_input(&mut g, &zeros);
    let pad = g.int(-1);
    let f = g.bool(false);
    let mut out_sizes = idx_sizes.to_vec();
    out_sizes.push(w.sizes[1]);
    let out = g.output(w.dtype, &out_sizes);
    g.op(EMBEDDING, &[wi, ii, pad, f, f, out]);
    g
}

fn embedding_case(
    dt: DataType,
    v: usize,
    d: usize,
    idx: Tensor,
    w_const: bool,
    seed: u64,
) -> OpCase {
    let w = Tensor::rand_range(dt, &[v, d], -2.0, 2.0, seed);
    let want = gather_ref(&w, &idx, 0, false);
    let g = embedding_graph(&w, &idx.sizes, idx.dtype, w_const);
    let how = if w_const { "const" } else { "input" };
    let name = format!(
        "{} weight [{v}, {d}] {how}, {} indices {:?}",
        dt.name(),
        idx.dtype.name(),
        idx.sizes
    );
    let inputs = if w_const { vec![idx] } else { vec![w, idx] };
    OpCase::new(EMBEDDING, name, g)
        .tol(Tol::EXACT)
        .run(inputs, vec![want])
}

fn embedding_cases() -> Vec<OpCase> {
    let mut v = vec![
        // e5: one token, int64 on the host.
        embedding_case(
            F32,
            128,
            64,
            Tensor::new(I64, &[1, 1], vec![77.0]),
            true,
            11000,
        ),
        embedding_case(
            F32,
            13,
            7,
            Tensor::rand_int(I32, &[3, 5], 0, 12, 11001),
            true,
            11002,
        ),
        embedding_case(
            F32,
            11,
            33,
            Tensor::rand_int(I64, &[6], 0, 10, 11003),
            false,
            11004,
        ),
        embedding_case(
            F16,
            17,
            9,
            Tensor::rand_int(I32, &[2, 3], 0, 16, 11005),
            true,
            11006,
        ),
        // Out of range: -1 and V fail the execute.
        embedding_case(
            F32,
            5,
            3,
            Tensor::new(I32, &[4], vec![-1.0, 5.0, 4.0, 0.0]),
            true,
            11007,
        )
        .fails("is out of range for a dim of size 5"),
    ];
    // Dynamic: the index count down then up.
    let w = Tensor::rand_range(F32, &[19, 5], -2.0, 2.0, 11010);
    let g = embedding_graph(&w, &[6], I32, true);
    let mut case = OpCase::new(EMBEDDING, "dynamic indices [<=6], weight [19, 5]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, n) in [6usize, 1, 4, 6].into_iter().enumerate() {
        let idx = Tensor::rand_int(I32, &[n], 0, 18, 11020 + i as u64);
        let want = gather_ref(&w, &idx, 0, false);
        case = case.run(vec![idx], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- index.Tensor

/// `index(x, [None] * dim + [idx])`.
fn index_graph(dt: DataType, x_sizes: &[usize], dim: usize, idx_sizes: &[usize]) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_sizes);
    let ii = g.input(I32, idx_sizes);
    let mut items: Vec<usize> = (0..dim).map(|_| g.null()).collect();
    items.push(ii);
    let list = g.value_list(&items);
    let mut out_sizes = x_sizes[..dim].to_vec();
    out_sizes.extend_from_slice(idx_sizes);
    out_sizes.extend_from_slice(&x_sizes[dim + 1..]);
    let out = g.output(dt, &out_sizes);
    g.op(INDEX, &[xi, list, out]);
    g
}

fn index_case(dt: DataType, x_sizes: &[usize], dim: usize, idx: Tensor, seed: u64) -> OpCase {
    let x = if dt == I32 {
        Tensor::rand_int(I32, x_sizes, -1000, 1000, seed)
    } else {
        Tensor::rand_range(dt, x_sizes, -2.0, 2.0, seed)
    };
    let want = gather_ref(&x, &idx, dim, true);
    let g = index_graph(dt, x_sizes, dim, &idx.sizes);
    let name = format!(
        "{} x {x_sizes:?} index {:?} on dim {dim}",
        dt.name(),
        idx.sizes
    );
    OpCase::new(INDEX, name, g)
        .tol(Tol::EXACT)
        .run(vec![x, idx], vec![want])
}

fn index_cases() -> Vec<OpCase> {
    let mut v = vec![
        // e5: a freqs table [32, 16] indexed by input_pos.
        index_case(F32, &[32, 16], 0, Tensor::new(I32, &[1], vec![5.0]), 11100),
        index_case(
            F32,
            &[5, 7, 3],
            1,
            Tensor::new(I32, &[4], vec![6.0, -1.0, 0.0, -7.0]),
            11101,
        ),
        index_case(
            F32,
            &[9, 4],
            0,
            Tensor::rand_int(I32, &[2, 3], -9, 8, 11102),
            11103,
        ),
        // Index 9 on a dim of 5 fails the execute.
        index_case(
            F32,
            &[2, 3, 5],
            2,
            Tensor::new(I32, &[3], vec![4.0, 2.0, 9.0]),
            11104,
        )
        .fails("index 9 is out of range for a dim of size 5"),
        index_case(
            F32,
            &[2, 3, 6],
            2,
            Tensor::new(I32, &[3], vec![4.0, 2.0, 5.0]),
            11104,
        ),
        index_case(
            F16,
            &[7, 13],
            0,
            Tensor::rand_int(I32, &[5], 0, 6, 11105),
            11106,
        ),
        index_case(
            I32,
            &[3, 11],
            1,
            Tensor::rand_int(I32, &[2], -11, 10, 11107),
            11108,
        ),
    ];
    // Dynamic: both x's leading dim and the index count change.
    let g = index_graph(F32, &[7, 6], 0, &[5]);
    let mut case = OpCase::new(INDEX, "dynamic x [<=7, 6] index [<=5] on dim 0", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, (m, n)) in [(7usize, 5usize), (2, 1), (5, 3), (7, 5)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand(&[m, 6], 11120 + i as u64);
        let idx = Tensor::rand_int(I32, &[n], -(m as i64), m as i64 - 1, 11130 + i as u64);
        let want = gather_ref(&x, &idx, 0, true);
        case = case.run(vec![x, idx], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- select_copy.int

fn select_ref(x: &Tensor, dim: i64, index: i64) -> Tensor {
    let d = if dim < 0 {
        dim + x.sizes.len() as i64
    } else {
        dim
    } as usize;
    let n = x.sizes[d] as i64;
    let k = if index < 0 { index + n } else { index };
    let idx = Tensor::new(I32, &[], vec![k as f64]);
    gather_ref(x, &idx, d, false)
}

fn select_graph(x_sizes: &[usize], dim: i64, index: i64) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(F32, x_sizes);
    let d = if dim < 0 {
        dim + x_sizes.len() as i64
    } else {
        dim
    } as usize;
    let mut out_sizes = x_sizes.to_vec();
    out_sizes.remove(d);
    let di = g.int(dim);
    let ki = g.int(index);
    let out = g.output(F32, &out_sizes);
    g.op(SELECT, &[xi, di, ki, out]);
    g
}

fn select_case(x_sizes: &[usize], dim: i64, index: i64, seed: u64) -> OpCase {
    let x = Tensor::rand(x_sizes, seed);
    let want = select_ref(&x, dim, index);
    let g = select_graph(x_sizes, dim, index);
    OpCase::new(SELECT, format!("{x_sizes:?} dim {dim} index {index}"), g)
        .tol(Tol::EXACT)
        .run(vec![x], vec![want])
}

fn select_cases() -> Vec<OpCase> {
    let mut v = vec![
        // e5: the last position of [1, 1, 64].
        select_case(&[1, 1, 64], 1, -1, 11200),
        select_case(&[3, 5, 7], -1, 2, 11201),
        select_case(&[3, 5, 7], 0, -3, 11202),
        select_case(&[3, 5, 7], 1, 4, 11203),
        select_case(&[13], 0, 6, 11204),
    ];
    // Dynamic: the selected dim resizes, so index -1 follows its current size.
    let g = select_graph(&[6, 5], 0, -1);
    let mut case = OpCase::new(SELECT, "dynamic [<=6, 5] dim 0 index -1", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [6usize, 1, 4, 6].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 5], 11210 + i as u64);
        let want = select_ref(&x, 0, -1);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- select_as_symint

fn select_sym_cases() -> Vec<OpCase> {
    let mut v = Vec::new();

    // The SymInt as an output: x int64 on the host [<=4], element `index` along dim 0;
    // values and sizes change between runs.
    for (index, dt) in [(0i64, I64), (-1, I32)] {
        let mut g = CaseGraph::new();
        let proto = Tensor::new(dt, &[4], vec![0.0; 4]);
        let xi = index_input(&mut g, &proto);
        let d = g.int(0);
        let k = g.int(index);
        let s = g.symint();
        g.op(SELECT_SYM, &[xi, d, k, s]);
        g.mark_output(s);
        let name = format!("{} x [<=4] index {index} as output", dt.name());
        let mut case = OpCase::new(SELECT_SYM, name, g).dynamic();
        for (i, n) in [4usize, 1, 3, 1, 4].into_iter().enumerate() {
            let x = Tensor::rand_int(dt, &[n], 0, 30, 11300 + i as u64);
            let want = if index < 0 { x.data[n - 1] } else { x.data[0] };
            case = case.run_vals(vec![x.into()], vec![Val::Int(want as i64)]);
        }
        v.push(case);
    }

    // e5's pattern: input_pos [1] (int64 host) -> start_pos, which a later op's resize
    // reads: slice_copy(table, 0, start_pos, None) of a [9, 3] table.
    let mut g = CaseGraph::new();
    let table = Tensor::rand(&[9, 3], 11310);
    let ti = g.input_like(&table);
    let pos = index_input(&mut g, &Tensor::new(I64, &[1], vec![0.0]));
    let zero = g.int(0);
    let s = g.symint();
    g.op(SELECT_SYM, &[pos, zero, zero, s]);
    let end = g.null();
    let one = g.int(1);
    let out = g.output(F32, &[9, 3]);
    g.op("aten.slice_copy.Tensor", &[ti, zero, s, end, one, out]);
    g.mark_output(s);
    let mut case =
        OpCase::new(SELECT_SYM, "int64 input_pos -> slice_copy start", g).tol(Tol::EXACT);
    for p in [0usize, 3, 8, 3, 0] {
        let want = Tensor::new(F32, &[9 - p, 3], table.data[p * 3..].to_vec());
        let pos = Tensor::new(I64, &[1], vec![p as f64]);
        case = case.run_vals(
            vec![table.clone().into(), pos.into()],
            vec![want.into(), Val::Int(p as i64)],
        );
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- embedding_q4gsw

/// A random 4-bit table: signed values `q` in [-8, 7] `[V, D]`, packed to uint8 `[V, D/2]`
/// with `q + 8` per nibble (even d low when `linear`, else high), and scales `[V, G]`.
struct Q4Table {
    q: Vec<i64>,
    packed: Tensor,
    scales: Tensor,
    d: usize,
    gs: usize,
}

impl Q4Table {
    fn new(v: usize, d: usize, gs: usize, scale_dt: DataType, linear: bool, seed: u64) -> Q4Table {
        let q = Tensor::rand_int(I32, &[v, d], -8, 7, seed);
        let q: Vec<i64> = q.data.iter().map(|&x| x as i64).collect();
        let bytes = (0..v * d / 2)
            .map(|i| {
                let (even, odd) = ((q[2 * i] + 8) as u8, (q[2 * i + 1] + 8) as u8);
                let b = if linear {
                    even | (odd << 4)
                } else {
                    (even << 4) | odd
                };
                b as f64
            })
            .collect();
        Q4Table {
            q,
            packed: Tensor::new(U8, &[v, d / 2], bytes),
            scales: Tensor::rand_range(scale_dt, &[v, d / gs], 0.01, 0.3, seed + 1),
            d,
            gs,
        }
    }

    /// Rows gathered by `idx` (out of range -> zeros), dequantized: `q * scale`.
    fn lookup(&self, idx: &Tensor, out_dt: DataType) -> Tensor {
        let (v, d) = (self.packed.sizes[0] as i64, self.d);
        let g = d / self.gs;
        let mut out = Vec::with_capacity(idx.numel() * d);
        for &r in &idx.data {
            let r = r as i64;
            for j in 0..d {
                out.push(if (0..v).contains(&r) {
                    let r = r as usize;
                    self.q[r * d + j] as f64 * self.scales.data[r * g + j / self.gs]
                } else {
                    0.0
                });
            }
        }
        let mut sizes = idx.sizes.clone();
        sizes.push(d);
        Tensor::new(out_dt, &sizes, out)
    }
}

fn embedding_q4_graph(
    t: &Q4Table,
    idx_sizes: &[usize],
    linear: bool,
    out_dt: DataType,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let wi = g.constant(&t.packed);
    let si = g.constant(&t.scales);
    let gi = g.int(t.gs as i64);
    let ii = g.input(I32, idx_sizes);
    let li = g.bool(linear);
    let mut out_sizes = idx_sizes.to_vec();
    out_sizes.push(t.d);
    let out = g.output(out_dt, &out_sizes);
    g.op(EMB_Q4, &[wi, si, gi, ii, li, out]);
    g
}

fn embedding_q4_case(
    v: usize,
    d: usize,
    gs: usize,
    dts: (DataType, DataType),
    linear: bool,
    idx: Tensor,
    seed: u64,
) -> OpCase {
    let (scale_dt, out_dt) = dts;
    let t = Q4Table::new(v, d, gs, scale_dt, linear, seed);
    let want = t.lookup(&idx, out_dt);
    let g = embedding_q4_graph(&t, &idx.sizes, linear, out_dt);
    let name = format!(
        "V {v} D {d} group {gs} {} scales -> {}, linear {linear}, indices {:?}",
        scale_dt.name(),
        out_dt.name(),
        idx.sizes
    );
    // fp32 products of exact 4-bit values and scales; fp16 output rounds once.
    let tol = if out_dt == F16 { Tol::F16 } else { Tol::F32 };
    OpCase::new(EMB_Q4, name, g)
        .tol(tol)
        .run(vec![idx], vec![want])
}

fn embedding_q4_cases() -> Vec<OpCase> {
    let mut v = vec![
        // The exporter's form: linear nibble order, D a multiple of 32.
        embedding_q4_case(
            37,
            64,
            32,
            (F32, F32),
            true,
            Tensor::rand_int(I32, &[1, 5], 0, 36, 12000),
            12001,
        ),
        // Reference (non-linear) nibble order, odd row count, prime group count.
        embedding_q4_case(
            13,
            14,
            2,
            (F32, F32),
            false,
            Tensor::rand_int(I32, &[3, 4], 0, 12, 12002),
            12003,
        ),
        // fp16 scales and output; rank-3 indices; odd V * D / 2 bytes (a partial last word).
        embedding_q4_case(
            7,
            6,
            3,
            (F16, F16),
            true,
            Tensor::rand_int(I32, &[2, 2, 3], 0, 6, 12004),
            12005,
        ),
        embedding_q4_case(
            5,
            10,
            5,
            (F16, F32),
            false,
            Tensor::rand_int(I32, &[4], 0, 4, 12006),
            12007,
        ),
        // Out of range: -1 and V fail the execute.
        embedding_q4_case(
            5,
            8,
            4,
            (F32, F32),
            true,
            Tensor::new(I32, &[4], vec![-1.0, 5.0, 4.0, 0.0]),
            12008,
        )
        .fails("is out of range for a dim of size 5"),
        // Rank-0 indices: out [D].
        embedding_q4_case(
            9,
            4,
            4,
            (F32, F32),
            false,
            Tensor::new(I32, &[], vec![8.0]),
            12009,
        ),
    ];
    // Dynamic: the token count down then up.
    let t = Q4Table::new(29, 32, 8, F32, true, 12010);
    let g = embedding_q4_graph(&t, &[1, 7], true, F32);
    let mut case = OpCase::new(EMB_Q4, "dynamic indices [1, <=7], V 29 D 32 group 8", g).dynamic();
    for (i, n) in [7usize, 1, 4, 7].into_iter().enumerate() {
        let idx = Tensor::rand_int(I32, &[1, n], 0, 28, 12020 + i as u64);
        let want = t.lookup(&idx, F32);
        case = case.run(vec![idx], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- embedding_4bit

/// PyTorch's embedding_4bit value: `(q - zp) * scale`, each step rounded to the scales'
/// dtype (dequantize_per_channel_group computes in it), then to the output dtype.
pub fn embedding_4bit_value(q: i64, zp: f64, scale: f64, scale_dt: DataType) -> f64 {
    let diff = crate::tensor::round_to(scale_dt, q as f64 - zp);
    crate::tensor::round_to(scale_dt, diff * scale)
}

/// embedding_4bit: table `v x d` (high-nibble order), scales `[V]` (`per_row`) or `[V, G]`,
/// zero points of the scales' dtype or None; indices sizes from `idx_runs` (the first the
/// serialized bound; several runs make the case dynamic).
fn embedding_4bit_case(
    (v, d, gs): (usize, usize, usize),
    per_row: bool,
    with_zp: bool,
    (scale_dt, out_dt): (DataType, DataType),
    idx_runs: &[Vec<usize>],
    seed: u64,
    scales_override: Option<&[f64]>,
) -> OpCase {
    let gs = if per_row { d } else { gs };
    let mut t = Q4Table::new(v, d, gs, scale_dt, false, seed);
    if let Some(sv) = scales_override {
        t.scales = Tensor::new(scale_dt, &t.scales.sizes.clone(), sv.to_vec());
    }
    let groups = d / gs;
    let ss = if per_row { vec![v] } else { vec![v, groups] };
    let scales = t.scales.reshaped(&ss);
    let zp = Tensor::rand_int(I32, &ss, -3, 3, seed + 2);
    let zp = Tensor::new(scale_dt, &ss, zp.data);
    let mut g = CaseGraph::new();
    let wi = g.constant(&t.packed);
    let si = g.constant(&scales);
    let zi = if with_zp { g.constant(&zp) } else { g.null() };
    let (lo, hi) = (g.int(-8), g.int(7));
    let ii = g.input(I32, &idx_runs[0]);
    let dt = g.null();
    let mut out_sizes = idx_runs[0].clone();
    out_sizes.push(d);
    let out = g.output(out_dt, &out_sizes);
    g.op(EMB_4BIT, &[wi, si, zi, lo, hi, ii, dt, out]);
    let name = format!(
        "V {v} D {d} scales {ss:?} {} zp {with_zp} -> {}, indices {idx_runs:?}",
        scale_dt.name(),
        out_dt.name()
    );
    let name = if scales_override.is_some() {
        format!("{name}, fp16 edge scales (ties, subnormals, overflow)")
    } else {
        name
    };
    let tol = if out_dt == F16 { Tol::F16 } else { Tol::F32 };
    let mut case = OpCase::new(EMB_4BIT, name, g).tol(tol);
    if idx_runs.len() > 1 {
        case = case.dynamic();
    }
    // The runs, then the first run's indices with the first one out of range, which fails.
    for (r, sizes) in idx_runs.iter().chain(&idx_runs[..1]).enumerate() {
        let mut idx = Tensor::rand_int(I32, sizes, 0, v as i64 - 1, seed * 10 + r as u64);
        let out_of_range = r == idx_runs.len();
        if out_of_range {
            if let Some(first) = idx.data.first_mut() {
                *first = v as f64;
            }
        }
        let mut out = Vec::with_capacity(idx.numel() * d);
        for &row in &idx.data {
            let row = row as usize;
            for j in 0..d {
                out.push(if row < v {
                    let gi = row * groups + j / gs;
                    let z = if with_zp { zp.data[gi] } else { 0.0 };
                    embedding_4bit_value(t.q[row * d + j], z, scales.data[gi], scale_dt)
                } else {
                    0.0
                });
            }
        }
        let mut os = sizes.clone();
        os.push(d);
        case = case.run(vec![idx], vec![Tensor::new(out_dt, &os, out)]);
        if out_of_range {
            case = case.fails(&format!("index {v} is out of range for a dim of size {v}"));
        }
    }
    case
}

fn embedding_4bit_cases() -> Vec<OpCase> {
    vec![
        // The shapes ExecuTorch's pattern leaves alone (D not a multiple of 32), with zero
        // points; per-row scales; fp16 scales (math in fp16) into fp32 and fp16 outputs.
        embedding_4bit_case(
            (11, 20, 4),
            false,
            true,
            (F32, F32),
            &[vec![2, 3]],
            13001,
            None,
        ),
        embedding_4bit_case(
            (9, 12, 12),
            true,
            false,
            (F32, F32),
            &[vec![5]],
            13002,
            None,
        ),
        embedding_4bit_case((6, 16, 8), false, true, (F16, F32), &[vec![4]], 13003, None),
        embedding_4bit_case(
            (7, 8, 2),
            false,
            true,
            (F16, F16),
            &[vec![1, 6], vec![1, 2], vec![1, 5]],
            13004,
            None,
        ),
        // fp16 scales whose products need every branch of the shaders' fp16 rounding: a
        // subnormal scale (products on both sides of 2^-14), overflow to infinity (30000 and
        // 65504 times up to 11), and 11-significant-bit scales (1025 / 1024, 0.1's fp16)
        // whose products by odd integers are exact ties. A GPU that skipped the rounding
        // (NVIDIA folds a half round trip) gives other values.
        embedding_4bit_case(
            (4, 8, 4),
            false,
            true,
            (F16, F32),
            &[vec![8]],
            13005,
            Some(&[
                1023.0 * 2f64.powi(-24),
                30000.0,
                1025.0 / 1024.0,
                0.0999755859375,
                65504.0,
                1537.0 / 1024.0,
                7.0 * 2f64.powi(-24),
                2047.0 / 4096.0,
            ]),
        ),
    ]
}

// ---------------------------------------------------------------- index_select

const INDEX_SELECT: &str = "aten.index_select.default";
const GATHER: &str = "aten.gather.default";

/// A data tensor of `dt` (ints in a wide range, bools 0 / 1, floats in [-2, 2)).
fn data(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    match dt {
        I32 => Tensor::rand_int(I32, sizes, -1000, 1000, seed),
        DataType::Bool => Tensor::rand_int(dt, sizes, 0, 1, seed),
        _ => Tensor::rand_range(dt, sizes, -2.0, 2.0, seed),
    }
}

/// `torch.index_select(x, d, idx)` (idx 1-D or 0-d; a 0-d x takes one index); an index
/// outside `[0, n)`, negative ones too, gives zeros (PyTorch raises there).
pub(crate) fn index_select_ref(x: &Tensor, d: usize, idx: &[f64]) -> Tensor {
    if x.sizes.is_empty() {
        let v = if idx.first() == Some(&0.0) {
            x.data[0]
        } else {
            0.0
        };
        return Tensor::new(x.dtype, &[], vec![v]);
    }
    let n = x.sizes[d];
    let mut sizes = x.sizes.clone();
    sizes[d] = idx.len();
    let st = crate::tensor::strides(&x.sizes);
    let data = (0..crate::tensor::numel(&sizes))
        .map(|i| {
            let mut c = crate::tensor::unravel(i, &sizes);
            let r = idx[c[d]];
            if r < 0.0 || r >= n as f64 {
                return 0.0;
            }
            c[d] = r as usize;
            x.data[c.iter().zip(&st).map(|(a, b)| a * b).sum::<usize>()]
        })
        .collect();
    Tensor::new(x.dtype, &sizes, data)
}

/// `torch.gather(x, d, idx)`: out sized like idx, `out[c] = x[c with c[d] = idx[c]]`; 0-d
/// tensors act as `[1]`; an index outside `[0, n)` gives zero (PyTorch raises there).
/// `None` if idx is larger than x on another dim.
pub(crate) fn gather_dim_ref(x: &Tensor, d: usize, idx: &Tensor) -> Option<Tensor> {
    let one = |v: &[usize]| if v.is_empty() { vec![1] } else { v.to_vec() };
    let (xs, is) = (one(&x.sizes), one(&idx.sizes));
    if xs.len() != is.len() || (0..is.len()).any(|k| k != d && is[k] > xs[k]) {
        return None;
    }
    let st = crate::tensor::strides(&xs);
    let data = (0..idx.numel())
        .map(|i| {
            let mut c = crate::tensor::unravel(i, &is);
            let r = idx.data[i];
            if r < 0.0 || r >= xs[d] as f64 {
                return 0.0;
            }
            c[d] = r as usize;
            x.data[c.iter().zip(&st).map(|(a, b)| a * b).sum::<usize>()]
        })
        .collect();
    Some(Tensor::new(x.dtype, &idx.sizes, data))
}

fn norm(d: i64, rank: usize) -> usize {
    let r = rank.max(1) as i64;
    (if d < 0 { d + r } else { d }) as usize
}

fn index_select_graph(
    dt: DataType,
    x_max: &[usize],
    dim: i64,
    idx: &Tensor,
    out: &[usize],
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let di = g.int(dim);
    let ii = index_input(&mut g, idx);
    let o = g.output(dt, out);
    g.op(INDEX_SELECT, &[xi, di, ii, o]);
    g
}

fn index_select_case(dt: DataType, x_sizes: &[usize], dim: i64, idx: Tensor, seed: u64) -> OpCase {
    let x = data(dt, x_sizes, seed);
    let want = index_select_ref(&x, norm(dim, x_sizes.len()), &idx.data);
    let g = index_select_graph(dt, x_sizes, dim, &idx, &want.sizes);
    let name = format!(
        "{} x {x_sizes:?} dim {dim} {} index {:?} {:?}",
        dt.name(),
        idx.dtype.name(),
        idx.sizes,
        idx.data
    );
    OpCase::new(INDEX_SELECT, name, g)
        .tol(Tol::EXACT)
        .run(vec![x, idx], vec![want])
}

fn index_select_cases() -> Vec<OpCase> {
    let i = |v: &[f64]| Tensor::new(I32, &[v.len()], v.to_vec());
    let mut v = vec![
        // The exporter's test model: int64 index on the host, int32 in the graph.
        index_select_case(
            F32,
            &[5, 3],
            0,
            Tensor::new(I64, &[4], vec![4.0, 0.0, 2.0, 2.0]),
            13000,
        ),
        index_select_case(F32, &[1, 4, 5], -1, i(&[4.0, 0.0, 2.0]), 13001),
        index_select_case(F32, &[2, 6, 3], 1, i(&[5.0, 3.0, 5.0, 0.0, 1.0]), 13002),
        // Out of range and negative: the execute fails.
        index_select_case(F32, &[4, 3], 0, i(&[4.0, -1.0, 1.0, 7.0]), 13003)
            .fails("is out of range for a dim of size 4"),
        // A 0-d index keeps the dim (size 1); a 0-d x takes index 0.
        index_select_case(F32, &[3, 4], 0, Tensor::new(I32, &[], vec![2.0]), 13004),
        index_select_case(F32, &[], 0, i(&[0.0]), 13005),
        index_select_case(F16, &[7, 2], 0, i(&[6.0, 6.0, 1.0]), 13006),
        index_select_case(I32, &[3, 5], 1, i(&[0.0, 4.0]), 13007),
        index_select_case(
            DataType::Bool,
            &[3, 7],
            1,
            i(&[6.0, 0.0, 3.0, 3.0, 1.0]),
            13008,
        ),
        index_select_case(F32, &[3, 2], 1, i(&[]), 13009),
    ];
    // Dynamic: x's dims and the index count change.
    let proto = Tensor::new(I32, &[5], vec![0.0; 5]);
    let g = index_select_graph(F32, &[6, 4], -1, &proto, &[6, 5]);
    let mut case = OpCase::new(INDEX_SELECT, "dynamic x [<=6, <=4] dim -1 index [<=5]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (k, (m, n, c)) in [(6usize, 4usize, 5usize), (1, 2, 1), (4, 3, 3), (6, 4, 5)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand(&[m, n], 13010 + k as u64);
        let idx = Tensor::rand_int(I32, &[c], 0, n as i64 - 1, 13020 + k as u64);
        let want = index_select_ref(&x, 1, &idx.data);
        case = case.run(vec![x, idx], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- gather

fn gather_graph(dt: DataType, x_max: &[usize], dim: i64, idx: &Tensor) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let di = g.int(dim);
    let ii = index_input(&mut g, idx);
    let sg = g.bool(false);
    let o = g.output(dt, &idx.sizes);
    g.op(GATHER, &[xi, di, ii, sg, o]);
    g
}

fn gather_case(dt: DataType, x_sizes: &[usize], dim: i64, idx: Tensor, seed: u64) -> OpCase {
    let x = data(dt, x_sizes, seed);
    let want = gather_dim_ref(&x, norm(dim, x_sizes.len()), &idx).expect("valid gather case");
    let g = gather_graph(dt, x_sizes, dim, &idx);
    let name = format!(
        "{} x {x_sizes:?} dim {dim} {} index {:?}",
        dt.name(),
        idx.dtype.name(),
        idx.sizes
    );
    OpCase::new(GATHER, name, g)
        .tol(Tol::EXACT)
        .run(vec![x, idx], vec![want])
}

fn gather_cases() -> Vec<OpCase> {
    let mut v = vec![
        // The exporter's test models (int64 index on the host).
        gather_case(
            F32,
            &[3, 5],
            1,
            Tensor::rand_int(I64, &[3, 4], 0, 4, 13100),
            13101,
        ),
        gather_case(
            F32,
            &[2, 3, 5],
            -1,
            Tensor::rand_int(I64, &[2, 2, 4], 0, 4, 13102),
            13103,
        ),
        // Dim 0, an index smaller than x on the other dim; out-of-range and negative
        // indices fail the execute.
        gather_case(
            F32,
            &[4, 3],
            0,
            Tensor::rand_int(I32, &[5, 2], -2, 5, 13104),
            13105,
        )
        .fails("is out of range for a dim of size 4"),
        gather_case(
            F32,
            &[4, 2],
            0,
            Tensor::rand_int(I32, &[5, 2], 0, 3, 13104),
            13105,
        ),
        gather_case(
            F32,
            &[2, 3, 4, 2],
            2,
            Tensor::rand_int(I32, &[2, 2, 6, 1], 0, 3, 13106),
            13107,
        ),
        gather_case(
            F16,
            &[6],
            0,
            Tensor::rand_int(I32, &[9], 0, 5, 13108),
            13109,
        ),
        gather_case(
            I32,
            &[3, 4],
            1,
            Tensor::rand_int(I32, &[3, 4], 0, 3, 13110),
            13111,
        ),
        gather_case(
            DataType::Bool,
            &[3, 7],
            -1,
            Tensor::rand_int(I32, &[3, 5], 0, 6, 13112),
            13113,
        ),
        // 0-d tensors act as [1].
        gather_case(F32, &[], 0, Tensor::new(I32, &[], vec![0.0]), 13114),
        gather_case(F32, &[5], 0, Tensor::new(I32, &[], vec![3.0]), 13115),
        gather_case(F32, &[], -1, Tensor::new(I32, &[1], vec![0.0]), 13116),
    ];
    // Dynamic: x and the index change together.
    let proto = Tensor::new(I32, &[5, 3], vec![0.0; 15]);
    let g = gather_graph(F32, &[5, 4], 1, &proto);
    let mut case = OpCase::new(GATHER, "dynamic x [<=5, <=4] dim 1 index [<=5, <=3]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (k, (m, n, c)) in [(5usize, 4usize, 3usize), (1, 1, 1), (3, 2, 3), (5, 4, 2)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand(&[m, n], 13120 + k as u64);
        let idx = Tensor::rand_int(I32, &[m, c], 0, n as i64 - 1, 13130 + k as u64);
        let want = gather_dim_ref(&x, 1, &idx).unwrap();
        case = case.run(vec![x, idx], vec![want]);
    }
    v.push(case);
    v
}

#[cfg(test)]
mod gather_tests {
    use super::*;
    use crate::case::run_case;
    use etvk_runtime::ErrorKind;

    use crate::case::init_error as init_err;

    #[test]
    fn references_follow_pytorch() {
        // torch.gather(torch.tensor([[1., 2], [3, 4]]), 1, torch.tensor([[0, 0], [1, 0]]))
        let x = Tensor::f32(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]);
        let idx = Tensor::new(I32, &[2, 2], vec![0.0, 0.0, 1.0, 0.0]);
        let g = gather_dim_ref(&x, 1, &idx).unwrap();
        assert_eq!(g.data, vec![1.0, 1.0, 4.0, 3.0]);
        let big = Tensor::new(I32, &[3, 1], vec![0.0; 3]);
        assert!(gather_dim_ref(&x, 1, &big).is_none());
        let s = index_select_ref(&x, 0, &[1.0, 1.0, 0.0]);
        assert_eq!(s.data, vec![3.0, 4.0, 3.0, 4.0, 1.0, 2.0]);
    }

    #[test]
    fn bad_index_shapes_are_refused() {
        // gather: index rank differs from x's.
        let idx = Tensor::new(I32, &[4], vec![0.0; 4]);
        let e = init_err(gather_graph(F32, &[3, 5], 1, &idx));
        assert_eq!(e.kind, ErrorKind::InvalidProgram, "{e}");
        assert!(
            e.message.contains(GATHER) && e.message.contains("as many dims"),
            "{e}"
        );

        // gather: an int32 index larger than x on a dim other than `dim` (static: at load).
        let idx = Tensor::new(I32, &[4, 2], vec![0.0; 8]);
        let e = init_err(gather_graph(F32, &[3, 5], 1, &idx));
        assert!(
            e.message.contains(GATHER) && e.message.contains("no larger"),
            "{e}"
        );

        // ... and when a resize makes it so (dynamic): that execute fails.
        let proto = Tensor::new(I32, &[3, 2], vec![0.0; 6]);
        let g = gather_graph(F32, &[3, 5], 1, &proto);
        let x = Tensor::rand(&[3, 5], 1);
        let ok = Tensor::new(I32, &[3, 2], vec![0.0, 4.0, 1.0, 1.0, 2.0, 3.0]);
        let want = gather_dim_ref(&x, 1, &ok).unwrap();
        let case = OpCase::new(GATHER, "index rows past x's", g)
            .dynamic()
            .run(vec![x, ok], vec![want])
            .run(
                vec![
                    Tensor::rand(&[2, 5], 2),
                    Tensor::new(I32, &[3, 2], vec![0.0; 6]),
                ],
                vec![Tensor::rand(&[3, 2], 3)],
            );
        let e = run_case(&case).unwrap_err();
        assert!(
            e.contains("run 1") && e.contains(GATHER) && e.contains("no larger"),
            "{e}"
        );

        // index_select: a 2-D index; a float index.
        let idx = Tensor::new(I32, &[2, 2], vec![0.0; 4]);
        let e = init_err(index_select_graph(F32, &[3, 5], 0, &idx, &[4, 5]));
        assert!(
            e.message.contains(INDEX_SELECT) && e.message.contains("vector"),
            "{e}"
        );
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[3, 5]);
        let di = g.int(0);
        let ii = g.input(F32, &[2]);
        let o = g.output(F32, &[2, 5]);
        g.op(INDEX_SELECT, &[xi, di, ii, o]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(
            e.message.contains(INDEX_SELECT) && e.message.contains("int32"),
            "{e}"
        );
    }
}

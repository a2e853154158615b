//! Checks of the interpreter's trickier semantics against values worked out by hand (the
//! fixtures cover the common paths end to end).

use etvk_format::ir::DataType;

use crate::case::CaseGraph;
use crate::tensor::Tensor;

use super::graph::{RefGraph, RefValue};

const F32: DataType = DataType::Float32;

fn load(g: CaseGraph) -> Result<RefGraph, String> {
    let (blob, named) = g.finish();
    RefGraph::from_blob(&blob, &named, "test delegate")
}

fn tensor(v: &RefValue) -> &Tensor {
    match v {
        RefValue::Tensor(t) => t,
        other => panic!("expected a tensor, got {other:?}"),
    }
}

fn iota(sizes: &[usize]) -> Tensor {
    let n = sizes.iter().product::<usize>();
    Tensor::f32(sizes, (0..n).map(|i| i as f64).collect())
}

#[test]
fn unknown_op_is_refused_by_name() {
    let mut g = CaseGraph::new();
    let x = g.input(F32, &[2]);
    let out = g.output(F32, &[2]);
    g.op("aten.frobnicate.default", &[x, out]);
    let e = load(g).unwrap_err();
    assert!(e.contains("aten.frobnicate.default"), "{e}");
}

#[test]
fn index_tensor_non_adjacent_indices_go_first() {
    // x[i0, :, i2] with i0 = [2, -3], i2 = [1, 4]: out [2, 4], out[p][j] = x[i0[p]][j][i2[p]].
    let mut g = CaseGraph::new();
    let x = g.input(F32, &[3, 4, 5]);
    let i0 = g.input(DataType::Int32, &[2]);
    let i2 = g.input(DataType::Int32, &[2]);
    let none = g.null();
    let list = g.value_list(&[i0, none, i2]);
    let out = g.output(F32, &[2, 4]);
    g.op("aten.index.Tensor", &[x, list, out]);
    let mut r = load(g).unwrap();
    let xs = iota(&[3, 4, 5]);
    let idx = |v: Vec<f64>| RefValue::Tensor(Tensor::new(DataType::Int32, &[2], v));
    let outs = r
        .execute(&[
            RefValue::Tensor(xs),
            idx(vec![2.0, -3.0]),
            idx(vec![1.0, 4.0]),
        ])
        .unwrap();
    let got = tensor(&outs[0]);
    assert_eq!(got.sizes, vec![2, 4]);
    let want: Vec<f64> = [(2, 1), (0, 4)]
        .iter()
        .flat_map(|&(a, c)| (0..4).map(move |j| (a * 20 + j * 5 + c) as f64))
        .collect();
    assert_eq!(got.data, want);
}

#[test]
fn slice_view_and_sym_size_follow_the_inputs() {
    // y = x[:, -4::2] of x [2, S] (S dynamic), then view as [-1] via sym_size.
    let mut g = CaseGraph::new();
    let x = g.input(F32, &[2, 9]);
    let (d1, start, step, none) = (g.int(1), g.int(-4), g.int(2), g.null());
    let y = g.tensor(F32, &[2, 9]);
    g.op("aten.slice_copy.Tensor", &[x, d1, start, none, step, y]);
    let s = g.symint();
    g.op("sym_size.int", &[y, d1, s]);
    let two = g.int(2);
    let sizes = g.value_list(&[s, two]);
    let out = g.output(F32, &[9, 2]);
    g.op("aten.view_copy.default", &[y, sizes, out]);
    g.mark_output(s);
    let mut r = load(g).unwrap();
    for (len, cols) in [(9usize, vec![5usize, 7]), (5, vec![1, 3]), (3, vec![0, 2])] {
        let outs = r.execute(&[RefValue::Tensor(iota(&[2, len]))]).unwrap();
        let got = tensor(&outs[0]);
        assert_eq!(got.sizes, vec![cols.len(), 2], "len {len}");
        let want: Vec<f64> = (0..2)
            .flat_map(|row| cols.iter().map(move |&c| (row * len + c) as f64))
            .collect();
        assert_eq!(got.data, want, "len {len}");
        assert_eq!(outs[1], RefValue::Int(cols.len() as i64));
    }
}

/// Plain causal attention of one head, by the definition.
fn attention(q: &[f64], k: &[f64], v: &[f64], d: usize, q_pos: &[usize]) -> Vec<f64> {
    let mut out = Vec::new();
    for (i, &pos) in q_pos.iter().enumerate() {
        let qi = &q[i * d..(i + 1) * d];
        let s: Vec<f64> = (0..=pos)
            .map(|j| {
                qi.iter().zip(&k[j * d..]).map(|(a, b)| a * b).sum::<f64>() / (d as f64).sqrt()
            })
            .collect();
        let e: Vec<f64> = s.iter().map(|x| x.exp()).collect();
        let z: f64 = e.iter().sum();
        for c in 0..d {
            out.push((0..=pos).map(|j| e[j] * v[j * d + c]).sum::<f64>() / z);
        }
    }
    out
}

#[test]
fn kv_cache_persists_across_calls() {
    // One head, D = 3, cache of 6 rows; calls of 3 then 2 tokens attend causally over
    // everything cached so far.
    let (d, max) = (3usize, 6usize);
    let mut g = CaseGraph::new();
    let q = g.input(F32, &[1, 3, 1, d]);
    let k = g.input(F32, &[1, 3, 1, d]);
    let v = g.input(F32, &[1, 3, 1, d]);
    let pos = g.symint();
    g.builder().mark_input(pos);
    let zeros = Tensor::f32(&[1, max, 1, d], vec![0.0; max * d]);
    let kc = g.constant(&zeros);
    let vc = g.constant(&zeros);
    let (one, zero, causal, none) = (g.int(1), g.int(0), g.bool(true), g.null());
    let none2 = g.null();
    let out = g.output(F32, &[1, 3, 1, d]);
    g.op(
        "sdpa_with_kv_cache.default",
        &[q, k, v, kc, vc, pos, one, none, zero, causal, none2, out],
    );
    let mut r = load(g).unwrap();
    let all_q = Tensor::rand(&[5 * d], 1).data;
    let all_k = Tensor::rand(&[5 * d], 2).data;
    let all_v = Tensor::rand(&[5 * d], 3).data;
    let part = |x: &[f64], a: usize, b: usize| {
        RefValue::Tensor(Tensor::f32(&[1, b - a, 1, d], x[a * d..b * d].to_vec()))
    };
    for (a, b) in [(0usize, 3usize), (3, 5)] {
        let outs = r
            .execute(&[
                part(&all_q, a, b),
                part(&all_k, a, b),
                part(&all_v, a, b),
                RefValue::Int(a as i64),
            ])
            .unwrap();
        let positions: Vec<usize> = (a..b).collect();
        let want = attention(&all_q[a * d..b * d], &all_k, &all_v, d, &positions);
        let got = tensor(&outs[0]);
        assert_eq!(got.sizes, vec![1, b - a, 1, d]);
        for (x, y) in got.data.iter().zip(&want) {
            assert!((x - y).abs() < 1e-12, "{:?} vs {want:?}", got.data);
        }
    }
    // Past the cache end: refused, naming the op.
    let e = r
        .execute(&[
            part(&all_q, 0, 2),
            part(&all_k, 0, 2),
            part(&all_v, 0, 2),
            RefValue::Int(5),
        ])
        .unwrap_err();
    assert!(e.contains("sdpa_with_kv_cache.default"), "{e}");
}

#[test]
fn every_supported_op_is_dispatched() {
    // An op listed in SUPPORTED but missing from `run`'s match would fail at execute with
    // "has no CPU reference"; a graph with no args reaches the arg check instead.
    let g = CaseGraph::new();
    let mut r = load(g).unwrap();
    for name in super::ops::SUPPORTED {
        let call = etvk_format::ir::OperatorCall {
            node_id: 0,
            name: name.to_string(),
            args: Vec::new(),
        };
        let e = super::ops::run(&mut r, &call).unwrap_err();
        assert!(!e.contains("no CPU reference"), "{name}: {e}");
    }
}

#[test]
fn quantize_cases_agree_with_the_interpreter() {
    // The quantize family's expected values come from its own fp32 emulation of torchao;
    // the interpreter's choose_qparams_affine / linear_dq8ca_q4gsw must give the same. Not
    // the fp16 graphs: the interpreter keeps intermediate values unrounded (an fp16 scale
    // stays fp32 there), the GPU and the case's expectation round them to the graph's dtype.
    for case in crate::cases::quantize::cases() {
        if case.name.starts_with("float16") {
            continue;
        }
        let mut r = RefGraph::from_blob(&case.blob, &case.named, &case.name).unwrap();
        for run in &case.runs {
            let inputs: Vec<RefValue> = run
                .inputs
                .iter()
                .map(|v| match v {
                    crate::case::Val::Tensor(t) => RefValue::Tensor(t.clone()),
                    crate::case::Val::Int(i) => RefValue::Int(*i),
                })
                .collect();
            let outs = r.execute(&inputs).unwrap();
            for (got, want) in outs.iter().zip(&run.expected) {
                let crate::case::Val::Tensor(want) = want else {
                    panic!("{}: tensor outputs only", case.name)
                };
                let got = Tensor::new(want.dtype, &tensor(got).sizes, tensor(got).data.clone());
                crate::compare::compare(&got, want, case.tol)
                    .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            }
        }
    }
}

#[test]
fn symint_host_ops_follow_python() {
    // `floordiv` rounds toward -inf, as Python's `//` does.
    for (x, y, want) in [
        (7i64, 2i64, 3i64),
        (-7, 2, -4),
        (7, -2, -4),
        (-7, -2, 3),
        (6, -3, -2),
    ] {
        let mut g = CaseGraph::new();
        let (a, b) = (g.int(x), g.int(y));
        let out = g.symint();
        g.mark_output(out);
        g.op("floordiv", &[a, b, out]);
        let mut r = load(g).unwrap();
        let outs = r.execute(&[]).unwrap();
        match &outs[0] {
            RefValue::Int(v) => assert_eq!(*v, want, "{x} // {y}"),
            other => panic!("expected an int, got {other:?}"),
        }
    }
}

#[test]
fn vision_op_cases_agree_with_the_interpreter() {
    // The op cases of the ops real vision exports use (their f64 expectations) run through
    // the interpreter too: both sides must agree on every case, dynamic runs included.
    const OPS: &[&str] = &[
        "aten.hardswish.default",
        "aten.clamp.default",
        "aten.mean.dim",
        "dim_order_ops._to_dim_order_copy.default",
        "aten.split_with_sizes_copy.default",
        "aten.max_pool2d_with_indices.default",
        "aten.avg_pool2d.default",
    ];
    let mut seen = std::collections::BTreeSet::new();
    let cases = crate::cases::all();
    for case in cases.iter().filter(|c| OPS.contains(&c.op)) {
        seen.insert(case.op);
        let mut r = RefGraph::from_blob(&case.blob, &case.named, &case.name)
            .unwrap_or_else(|e| panic!("{}: {e}", case.label()));
        for run in &case.runs {
            let inputs: Vec<RefValue> = run
                .inputs
                .iter()
                .map(|v| match v {
                    crate::case::Val::Tensor(t) => RefValue::Tensor(t.clone()),
                    crate::case::Val::Int(i) => RefValue::Int(*i),
                })
                .collect();
            let outs = r
                .execute(&inputs)
                .unwrap_or_else(|e| panic!("{}: {e}", case.label()));
            assert_eq!(outs.len(), run.expected.len(), "{}", case.label());
            for (got, want) in outs.iter().zip(&run.expected) {
                let crate::case::Val::Tensor(want) = want else {
                    panic!("{}: tensor outputs only", case.label())
                };
                let got = Tensor::new(want.dtype, &tensor(got).sizes, tensor(got).data.clone());
                crate::compare::compare(&got, want, case.tol)
                    .unwrap_or_else(|e| panic!("{}: {e}", case.label()));
            }
        }
    }
    assert_eq!(seen.len(), OPS.len(), "ops without cases: {seen:?}");
}

#[test]
fn to_dim_order_copy_of_a_0_dim_constant() {
    // As mobilenet_v3's export writes it: an int32 0-dim constant (prepacked) copied to a
    // float32 0-dim tensor, with every kwarg serialized and dim_order `[]`.
    let mut g = CaseGraph::new();
    let c = g.constant(&Tensor::new(DataType::Int32, &[], vec![3.0]));
    let p = g.tensor(DataType::Int32, &[]);
    g.op("et_vk.prepack.default", &[c, p]);
    let (d, l, dev, pin) = (g.null(), g.null(), g.null(), g.null());
    let nb = g.bool(false);
    let order = g.int_list(&[]);
    let out = g.output(F32, &[]);
    g.op(
        "dim_order_ops._to_dim_order_copy.default",
        &[p, d, l, dev, pin, nb, order, out],
    );
    let mut r = load(g).unwrap();
    let outs = r.execute(&[]).unwrap();
    let got = tensor(&outs[0]);
    assert_eq!(
        (got.sizes.as_slice(), got.data.as_slice()),
        (&[][..], &[3.0][..])
    );
}

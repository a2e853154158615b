//! Registry-driven op tests: one test per op family of `etvk_tests::cases::FAMILIES`, and
//! the coverage rule against `etvk_runtime::registered_ops()`.

use etvk_tests::cases::{self, FAMILIES};
use etvk_tests::{coverage, run_cases};

/// One `#[test]` per family, plus the list of families that have one.
macro_rules! families {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run_cases(&(cases::family(stringify!($name)).cases)());
            }
        )*
        const TESTED: &[&str] = &[$(stringify!($name)),*];
    };
}

families!(
    reduce, matmul, binary, unary, shape, prepack, sym, q4_linear, training, llama, indexing,
    logic, creation, norm, attention, quantize, pool, conv, resize
);

#[test]
fn every_family_has_a_test() {
    let mut listed: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    let mut tested = TESTED.to_vec();
    listed.sort_unstable();
    tested.sort_unstable();
    assert_eq!(
        listed, tested,
        "cases::FAMILIES and the families! list in tests/tests/ops.rs must name the same families"
    );
}

#[test]
fn every_registered_op_has_cases() {
    let ops = etvk_runtime::registered_ops();
    assert!(
        !ops.is_empty(),
        "registered_ops() is empty: the registry failed to build (duplicate name?)"
    );
    let cov = coverage::check(&ops, &cases::all());
    if !cov.unregistered.is_empty() {
        println!(
            "note: cases exist for ops not registered yet: {}",
            cov.unregistered.join(", ")
        );
    }
    let mut msg = Vec::new();
    if !cov.missing.is_empty() {
        msg.push(format!(
            "registered ops without cases (add them under tests/src/cases/): {}",
            cov.missing.join(", ")
        ));
    }
    if !cov.missing_dynamic.is_empty() {
        msg.push(format!(
            "ops declaring dynamic shapes without a dynamic case (build at max sizes with \
             .dynamic() and run smaller then larger inputs): {}",
            cov.missing_dynamic.join(", ")
        ));
    }
    assert!(cov.is_complete(), "{}", msg.join("\n"));
}

#[test]
fn case_names_are_unique_per_op() {
    let mut seen = std::collections::BTreeSet::new();
    for c in cases::all() {
        assert!(seen.insert(c.label()), "duplicate case {}", c.label());
        assert!(!c.runs.is_empty(), "case {} has no runs", c.label());
    }
}

/// Negative control: the harness must reject a wrong value and wrong sizes, naming the
/// worst element.
#[test]
fn harness_detects_wrong_results() {
    use etvk_format::ir::DataType::Float32 as F32;
    use etvk_tests::{reference, run_case, CaseGraph, OpCase, Tensor};

    let a = Tensor::rand(&[3, 5], 1);
    let b = Tensor::rand(&[3, 5], 2);
    let want = reference::broadcast_binary(&a, &b, |x, y| x + y);
    let case = |expected: Tensor| {
        let mut g = CaseGraph::new();
        let ai = g.input_like(&a);
        let bi = g.input_like(&b);
        let alpha = g.int(1);
        let out = g.output(F32, &[3, 5]);
        g.op("aten.add.Tensor", &[ai, bi, alpha, out]);
        OpCase::new("aten.add.Tensor", "negative control", g)
            .run(vec![a.clone(), b.clone()], vec![expected])
    };
    run_case(&case(want.clone())).expect("the unperturbed case passes");

    let mut off = want.clone();
    off.data[7] += 1e-3;
    let e = run_case(&case(off)).unwrap_err();
    assert!(
        e.contains("1 of 15 elements out of tolerance") && e.contains("[1, 2]"),
        "{e}"
    );
    let e = run_case(&case(want.reshaped(&[5, 3]))).unwrap_err();
    assert!(
        e.contains("sizes [3, 5] differ from the expected [5, 3]"),
        "{e}"
    );
}

/// The 8da4w ops refuse what they cannot compute at load, naming the op and the rule.
#[test]
fn quantize_limits_name_the_op_and_rule() {
    use etvk_format::ir::DataType::{self, Float32 as F32, Int32 as I32, Int8 as I8, Uint8 as U8};
    use etvk_tests::{run_case, CaseGraph, OpCase, Tensor};

    const CHOOSE: &str = "torchao.choose_qparams_affine.default";
    const DQ8CA: &str = "et_vk.linear_dq8ca_q4gsw.default";
    let choose = |mapping: &str, block: &[i64], zdt: DataType| {
        let mut g = CaseGraph::new();
        let x = g.input(F32, &[4, 64]);
        let mt = g.builder().add_string(mapping);
        let bs = g.int_list(block);
        let nul = g.null();
        let (s, z) = (g.output(F32, &[4]), g.output(zdt, &[4]));
        let vl = g.value_list(&[s, z]);
        g.op(CHOOSE, &[x, mt, bs, nul, nul, nul, nul, nul, nul, vl]);
        let x = Tensor::rand(&[4, 64], 1);
        OpCase::new(CHOOSE, "limit", g).run(vec![x], vec![])
    };
    let dq8ca = |sums: &[usize], zdt: DataType| {
        let mut g = CaseGraph::new();
        let x = g.input(F32, &[2, 64]);
        let s = g.input(F32, &[2]);
        let z = g.input(zdt, &[2]);
        let w = g.constant(&Tensor::new(U8, &[8, 32], vec![0x88 as f64; 256]));
        let ws = g.constant(&Tensor::new(I32, sums, vec![0.0; sums.iter().product()]));
        let sc = g.constant(&Tensor::new(F32, &[2, 8], vec![0.01; 16]));
        let gs = g.int(32);
        let nul = g.null();
        let out = g.output(F32, &[2, 8]);
        g.op(DQ8CA, &[x, s, z, w, ws, sc, gs, nul, out]);
        let inputs = vec![
            Tensor::rand(&[2, 64], 1),
            Tensor::rand(&[2], 2),
            Tensor::new(zdt, &[2], vec![0.0; 2]),
        ];
        OpCase::new(DQ8CA, "limit", g).run(inputs, vec![])
    };
    let cases: Vec<(OpCase, &[&str])> = vec![
        (
            choose("ASYMMETRIC", &[1, 32], I8),
            &[CHOOSE, "block_size [1, 32]", "gives [4, 2]"],
        ),
        (
            choose("ASYMMETRIC", &[1, 48], I8),
            &[CHOOSE, "block_size [1, 48]", "gives [4, 1]"],
        ),
        (
            choose("AFFINE", &[1, 64], I8),
            &[CHOOSE, "\"AFFINE\"", "ASYMMETRIC"],
        ),
        (
            choose("SYMMETRIC", &[1, 64], U8),
            &[CHOOSE, "zero point dtype uint8"],
        ),
        (
            dq8ca(&[3, 8], I8),
            &[DQ8CA, "weight_sums", "[G = 2, >= N = 8]"],
        ),
        (dq8ca(&[2, 8], U8), &[DQ8CA, "zero point dtype uint8"]),
    ];
    for (case, needles) in cases {
        let e = run_case(&case).unwrap_err();
        for n in needles {
            assert!(e.contains(n), "missing {n:?} in: {e}");
        }
    }
}

/// The 8da4w fusion (ops/quantize.rs) on the three-linears case: the first choose_qparams
/// node writes x quantized and dequantized, the second is left out (nothing else reads its
/// outputs), the third writes its scale (a graph output) only, and no linear dispatches a
/// fake-quant node of its own: the linear with its own (the x-written-between case) has one
/// dispatch more than these. At M = 1, where the linears run the half GEMV, they take its DQ
/// form and the first choose_qparams node launches nothing. The numbers themselves are
/// checked by the quantize family. Rows longer than 8192 take the sliced DQ form at M = 1.
#[test]
fn act_quant_fusion_leaves_out_nodes() {
    let all = (cases::family("quantize").cases)();
    let find = |part: &str| {
        all.iter()
            .find(|c| c.label().contains(part))
            .unwrap_or_else(|| panic!("no quantize case named like {part:?}"))
    };
    // (node id, dispatches) in node order.
    let dispatches = |nodes: &[etvk_runtime::NodeTime]| -> Vec<(u32, usize)> {
        let ids: std::collections::BTreeSet<u32> = nodes.iter().map(|n| n.node_id).collect();
        ids.into_iter()
            .map(|id| (id, nodes.iter().filter(|n| n.node_id == id).count()))
            .collect()
    };
    let shared = find("float32 three linears on one x");
    // Node ids are chain positions: choose 0, linear 1, choose 2, linear 3, choose 4, linear 5.
    assert_eq!(
        dispatches(&profile_run(shared, 0)),
        vec![(0, 1), (1, 1), (3, 1), (4, 1), (5, 1)],
        "three linears on one x at M = 3: (node, dispatches)"
    );
    // choose 0, update_cache 1, linear 2 with its own fake-quant node.
    assert_eq!(
        dispatches(&profile_run(find("x written between"), 0)),
        vec![(0, 1), (1, 1), (2, 2)],
        "x written between: (node, dispatches)"
    );
    // Run 1 is at M = 1.
    let m1 = profile_run(shared, 1);
    let kernel = |id: u32| m1.iter().find(|n| n.node_id == id).expect("node");
    let choose_ran = |id: u32| kernel(id).launched;
    if kernel(1).op.contains("gemv_half") {
        for id in [1, 3, 5] {
            assert!(
                kernel(id).op.ends_with("_dq"),
                "linear {id} at M = 1: {}",
                kernel(id).op
            );
        }
        assert!(!choose_ran(0), "choose 0 launched at M = 1");
        assert!(
            choose_ran(4),
            "choose 4 (its scale is an output) idle at M = 1"
        );
    } else {
        assert!(choose_ran(0), "choose 0 idle at M = 1 without the DQ GEMV");
    }
    // Rows of more than 8192: the DQ form at M = 1 (sliced where one workgroup holds 256
    // chunks; choose 0, linear 1); at M = 3 the persistent GEMV's DQ form where the row is
    // one workgroup's (the choose node idle), else the choose node's fake-quantized x.
    let long = find("x[3, 8442]");
    let want = half_dq(8442, "_dq");
    for (run, m1) in [(0, true), (1, false), (2, true)] {
        let nodes = profile_run(long, run);
        let node = |id: u32| nodes.iter().find(|n| n.node_id == id).expect("node");
        if m1 && node(1).op.contains("gemv_half") {
            assert!(
                node(1).op.ends_with(&format!("gemv_half{want}")),
                "run {run}: {}",
                node(1).op
            );
            assert!(!node(0).launched, "run {run}: choose launched at M = 1");
        } else if !m1 {
            let self_quantized = node(1).op.ends_with("_dp4_persist_dq");
            assert_eq!(
                node(0).launched,
                !self_quantized,
                "run {run}: choose node at M = 3, linear {}",
                node(1).op
            );
        }
    }
}

/// After an RMSNorm (alone or fused with the add before it) with compile spec
/// `etvk_row_range` = `norm`, or a fused gated SiLU with `all`, that writes its rows' range,
/// the 8da4w linears' M = 1 DQ GEMVs read that range (`_dq_mm`, sliced too) and their choose
/// node idles; at M > 1 the choose node runs. The numbers are checked by the quantize family. A spec value
/// outside `auto`, `norm`, `all`, `off` fails the load, naming the spec.
#[test]
fn norm_writes_row_range_for_dq_gemv() {
    let all = (cases::family("quantize").cases)();
    spec_value_refused(&all[0], "etvk_row_range", "silu", "auto, norm, all, off");
    let find = |part: &str| {
        all.iter()
            .find(|c| c.label().ends_with(part))
            .or_else(|| all.iter().find(|c| c.label().contains(part)))
            .unwrap_or_else(|| panic!("no quantize case named like {part:?}"))
    };
    // (case, node id of the norm's first choose, linear ids, runs at M = 1 / M > 1, the
    // kernel ending at M = 1).
    type Plan<'a> = (&'a str, u32, &'a [u32], &'a [bool], &'a str);
    let plans: [Plan; 6] = [
        // rms_norm 0, choose 1, linear 2, choose 3, linear 4.
        (
            "rms_norm then two linears on y[[3, 96]] M [1, 3, 1] [etvk_row_range = norm]",
            1,
            &[2, 4],
            &[true, false, true],
            "_dq_mm",
        ),
        // add 0 (the norm 1 fused into it), choose 2, linear 3, choose 4, linear 5.
        (
            "add + rms_norm then two linears on y[[2, 64]] M [1, 2, 1] [etvk_row_range = norm]",
            2,
            &[3, 5],
            &[true, false, true],
            "_dq_mm",
        ),
        // Rows of 8448: the sliced form where one workgroup holds 256 chunks.
        (
            "rms_norm then two linears on y[[1, 8448]] M [1] [etvk_row_range = norm]",
            1,
            &[2, 4],
            &[true],
            "_sliced_dq_mm",
        ),
        // force_fp16: `_dq_mm_x16`.
        (
            "float16 add + rms_norm then two linears on y[[2, 96]] M [1, 2, 1] [etvk_row_range = norm]",
            2,
            &[3, 5],
            &[true, false, true],
            "_dq_mm_x16",
        ),
        // silu 0 (fused into the mul), mul 1, choose 2, linear 3.
        (
            "gated silu then a linear on y[[2, 20000]] M [1, 2, 1] [etvk_row_range = all]",
            2,
            &[3],
            &[true, false, true],
            "_sliced_dq_mm",
        ),
        // The SiLU's range is off by default: w2 reduces the row itself.
        (
            "gated silu then a linear on y[[2, 20000]] M [1, 2, 1]",
            2,
            &[3],
            &[true, false, true],
            "_sliced_dq",
        ),
    ];
    for (label, choose, linears, runs, want) in plans {
        let case = find(label);
        let want = fit_sliced(want, label);
        let want = want.as_str();
        for (run, &m1) in runs.iter().enumerate() {
            let nodes = profile_run(case, run);
            let node = |id: u32| {
                nodes
                    .iter()
                    .find(|n| n.node_id == id)
                    .unwrap_or_else(|| panic!("{label} run {run}: no node {id}"))
            };
            if m1 {
                if !node(linears[0]).op.contains("gemv_half") {
                    continue; // a device without the half GEMV's int8 dot products
                }
                for &id in linears {
                    assert!(
                        node(id).op.ends_with(want),
                        "{label} run {run}: linear {id} ran {}",
                        node(id).op
                    );
                }
                assert!(
                    !node(choose).launched,
                    "{label} run {run}: choose launched at M = 1"
                );
            } else {
                assert!(
                    node(choose).launched,
                    "{label} run {run}: choose idle at M > 1"
                );
            }
        }
    }
}

/// The M = 1 DQ GEMVs' ticketed forms (`_tickets_dq*`): by default where workgroups walk at
/// least 8 blocks (rows of 2 chunks, N = 271000: 33875 blocks for a wave of 4224), and
/// forced by compile spec `etvk_q4_gemv` = `half_tickets` for each kind of x: raw fp32,
/// fp16 (a force_fp16 program), the norm computed inside (alone or after the fused add), the
/// row range the norm wrote (fp32, fp16), the gated SiLU computed inside. Each forced case's
/// first linear walks more blocks than two rounds of its wave (N = 5000 on rows of 8000: 625
/// blocks in 264 workgroups); the norm cases' second linear (N = 24) draws no ticket. The
/// numbers are checked by the quantize family (relaunches at M = 1 after M = 1 and 2: a
/// counter left off zero would skip blocks).
#[test]
fn dq_gemv_takes_its_ticketed_forms() {
    let all = (cases::family("quantize").cases)();
    // (case, linear node ids, runs at M = 1, kernel ending).
    type Plan<'a> = (&'a str, &'a [u32], &'a [usize], &'a str);
    let plans: [Plan; 8] = [
        // By default from 8 blocks per workgroup: rows of 2 chunks (workgroups of 32, a wave
        // of 4224), N = 271000 (33875 blocks).
        (
            "x[2, 64] N 271000 gs 32 bias true scale float32 zp int8 M [1, 1, 2, 1]",
            &[1],
            &[0, 1, 3],
            "_tickets_dq",
        ),
        (
            "x[2, 8000] N 5000 gs 64 bias true scale float32 zp int8 M [1, 1, 2, 1] [etvk_q4_gemv = half_tickets]",
            &[1],
            &[0, 1, 3],
            "_tickets_dq",
        ),
        (
            "float16 x and output x[2, 8000] N 5000 M [1, 2, 1] [etvk_q4_gemv = half_tickets]",
            &[1],
            &[0, 2],
            "_tickets_dq_x16",
        ),
        // rms_norm 0, choose 1, linear 2, choose 3, linear 4.
        (
            "rms_norm then two linears of N [5000, 24] on y[[2, 8000]] M [1, 2, 1] [etvk_q4_gemv = half_tickets]",
            &[2, 4],
            &[0, 2],
            "_tickets_dq_norm",
        ),
        // add 0, rms_norm 1 (fused into the add), choose 2, linear 3, choose 4, linear 5.
        (
            "add + rms_norm then two linears of N [5000, 24] on y[[2, 8000]] M [1, 1, 2, 1] [etvk_q4_gemv = half_tickets]",
            &[3, 5],
            &[0, 1, 3],
            "_tickets_dq_addnorm",
        ),
        (
            "rms_norm then two linears of N [5000, 24] on y[[2, 8000]] M [1, 2, 1] [etvk_q4_gemv = half_tickets] [etvk_row_range = norm]",
            &[2, 4],
            &[0, 2],
            "_tickets_dq_mm",
        ),
        (
            "float16 add + rms_norm then two linears of N [5000, 24] on y[[2, 8000]] M [1, 2, 1] [etvk_q4_gemv = half_tickets] [etvk_row_range = norm]",
            &[3, 5],
            &[0, 2],
            "_tickets_dq_mm_x16",
        ),
        // silu 0 (fused into the mul), mul 1, choose 2, linear 3.
        (
            "silu into the linear of N 5000 on y[[2, 8000]] M [1, 2, 1] scale out false [etvk_q4_gemv = half_tickets]",
            &[3],
            &[0, 2],
            "_tickets_dq_silu",
        ),
    ];
    for (label, linears, runs, want) in plans {
        let case = case_ending(&all, label);
        for &run in runs {
            let nodes = profile_run(case, run);
            for &id in linears {
                let node = nodes
                    .iter()
                    .find(|n| n.node_id == id && n.launched)
                    .unwrap_or_else(|| panic!("{label} run {run}: linear {id} idle"));
                if !node.op.contains("gemv_half") {
                    return; // a device without the half GEMV's int8 dot products
                }
                assert!(
                    node.op.ends_with(want),
                    "{label} run {run}: linear {id} ran {}",
                    node.op
                );
            }
        }
    }
}

/// At M = 2..8 an fp32 8da4w linear's persistent int8 GEMV quantizes the raw x itself
/// (`_dp4_persist_dq`: the row's range, the choose node's parameters, two limbs of q - zp),
/// also at M = 4 and 8, where the FMA GEMV takes the rows of a weight-only linear (K <=
/// 4096), and at M = 8 over the int8 tensor cores (emulated here) on rows of <= 256 chunks of
/// a small weight; its choose node, whose outputs nothing else reads, launches nothing there
/// (it runs at M = 9, on the tensor cores), and at M = 1 the half GEMV's DQ form quantizes x.
/// The numbers are checked by the quantize family.
#[test]
fn dq_linear_at_small_m_reads_the_raw_x() {
    let all = (cases::family("quantize").cases)();
    let caps = etvk_tests::backend().device_caps().clone();
    if !(caps.integer_dot_product && caps.subgroup_arithmetic && caps.subgroup_size >= 4) {
        // A device without the int8 GEMVs (or the subgroup operations their DQ forms need)
        // runs other kernels after the node.
        return;
    }
    // (case, runs: (index, the choose node launched there)); choose 0, linear 1.
    let plans: [(&str, &[(usize, bool)]); 4] = [
        (
            "x[7, 2048] N 44 gs 32 bias true scale float32 zp int8 M [7, 2, 1, 5]",
            &[(0, false), (1, false), (2, false), (3, false)],
        ),
        (
            "x[4, 1100] N 21 gs 64 bias false scale float32 zp int32 M [4, 3]",
            &[(0, false), (1, false)],
        ),
        (
            "x[8, 1056] N 36 gs 32 bias true scale float32 zp int8 M [8, 6, 4]",
            &[(0, false), (1, false), (2, false)],
        ),
        (
            "x[9, 1024] N 24 gs 32 bias false scale float32 zp int8 M [8, 9] [etvk_q4_mma = emulated]",
            &[(0, false), (1, true)],
        ),
    ];
    for (label, runs) in plans {
        let case = case_ending(&all, label);
        for &(run, choose_runs) in runs {
            let nodes = profile_run(case, run);
            let launched = |id: u32| nodes.iter().any(|n| n.node_id == id && n.launched);
            let linear = nodes
                .iter()
                .find(|n| n.node_id == 1 && n.launched)
                .unwrap_or_else(|| panic!("{label} run {run}: linear idle in {nodes:?}"));
            assert_eq!(
                launched(0),
                choose_runs,
                "{label} run {run}: choose node launched (linear ran {})",
                linear.op
            );
            if !choose_runs && !linear.op.contains("gemv_half") {
                assert!(
                    linear.op.ends_with("gemv_wide_dp4_persist_dq"),
                    "{label} run {run}: {}",
                    linear.op
                );
            }
        }
    }
}

/// A choose_qparams node over rows longer than 4096 values runs 1024 invocations per row
/// where the device takes them (`_wide` forms: a quarter of the rounds of loads), fp32 and
/// fp16 x, shorter rows 256; the numbers are checked by the quantize family.
#[test]
fn choose_node_takes_wide_workgroups_on_long_rows() {
    let all = (cases::family("quantize").cases)();
    let caps = etvk_tests::backend().device_caps().clone();
    let wide = caps.max_workgroup_invocations >= 1024 && caps.max_workgroup_size[0] >= 1024;
    // (case, run, x's dtype tag, rows longer than 4096).
    for (label, run, dtype, long) in [
        ("x[9, 5000] N 12 gs 40 bias true scale float32 zp int8 M [9, 2]", 0, "f32", true),
        ("x[9, 5000] N 12 gs 40 bias true scale float32 zp int8 M [9, 2]", 1, "f32", true),
        ("x[3, 6000] N 8 gs 48 bias false scale float16 zp int32 M [3, 1]", 0, "f16", true),
        (
            "x[9, 1024] N 24 gs 32 bias false scale float32 zp int8 M [8, 9] [etvk_q4_mma = emulated]",
            1,
            "f32",
            false,
        ),
        ("x[3, 12000] N 10 gs 40 bias true scale float32 zp int8 M [3, 1, 2]", 1, "f32", true),
        ("x[17, 8448] N 8 gs 48 bias false scale float32 zp int32 M [17, 2]", 0, "f32", true),
        ("x[17, 8448] N 8 gs 48 bias false scale float32 zp int32 M [17, 2]", 1, "f32", true),
        ("x[2, 9000] N 6 gs 40 bias true scale float16 zp int8 M [2, 1]", 1, "f16", true),
    ] {
        let case = case_ending(&all, label);
        let nodes = profile_run(case, run);
        let choose = nodes
            .iter()
            .find(|n| n.node_id == 0 && n.launched)
            .unwrap_or_else(|| panic!("{label} run {run}: choose node idle in {nodes:?}"));
        let want = if wide && long {
            format!("choose_qparams_fq_rows_wide_{dtype}")
        } else {
            format!("choose_qparams_fq_rows_{dtype}")
        };
        assert!(choose.op.ends_with(&want), "{label}: {}", choose.op);
    }
}

/// An fp32 RMSNorm of rows up to 2048 that only 8da4w linears read (through their choose
/// nodes) launches nothing at M = 1 by default: their DQ GEMVs compute it (`_dq_norm`);
/// fused with the add before it, the add's node writes the sum alone and the GEMVs compute
/// the norm of a + b (`_dq_addnorm`). Longer rows with compile spec `etvk_norm_gemv` =
/// `all` (sliced past 8192 or 16384 values by the device); by default rows of 4096 keep the node, which writes the
/// row range (`_dq_mm`). At M > 1 the norm runs. The numbers (the sum a graph output too)
/// are checked by the quantize family.
#[test]
fn rms_norm_runs_inside_the_dq_gemvs_at_m1() {
    let all = (cases::family("quantize").cases)();
    // (case ending, norm node id, linear ids, the M = 1 kernel ending).
    let plans: [(&str, u32, [u32; 2], &str); 7] = [
        // rms_norm 0, choose 1, linear 2, choose 3, linear 4.
        (
            "rms_norm then two linears on y[[3, 128]] M [1, 3, 1]",
            0,
            [2, 4],
            "_dq_norm",
        ),
        (
            "rms_norm then two linears on y[[2, 16384]] M [1, 2] [etvk_norm_gemv = all]",
            0,
            [2, 4],
            "_sliced_dq_norm",
        ),
        // add 0 (the norm 1 fused into it), choose 2, linear 3, choose 4, linear 5.
        (
            "add + rms_norm then two linears on y[[2, 202]] M [1, 2, 1]",
            0,
            [3, 5],
            "_dq_addnorm",
        ),
        (
            "add + rms_norm then two linears on y[[3, 8450]] M [1, 3, 1] [etvk_norm_gemv = all]",
            0,
            [3, 5],
            "_sliced_dq_addnorm",
        ),
        (
            "add + rms_norm then two linears on y[[3, 64]] M [1, 3, 1]",
            0,
            [3, 5],
            "_dq_addnorm",
        ),
        (
            "add + rms_norm then two linears on y[[2, 4096]] M [1, 2]",
            0,
            [3, 5],
            "_dq_addnorm",
        ),
        // Rows past 8192 keep the node by default, which writes the row range.
        (
            "rms_norm then two linears on y[[2, 8450]] M [1, 2]",
            0,
            [2, 4],
            "_sliced_dq_mm",
        ),
    ];
    spec_value_refused(&all[0], "etvk_norm_gemv", "some", "auto, all, off");
    for (name, norm, linears, kernel) in plans {
        let case = case_ending(&all, name);
        let kernel = fit_sliced(kernel, name);
        let kernel = kernel.as_str();
        let add = name.starts_with("add");
        for run in 0..2 {
            let nodes = profile_run(case, run);
            let node = |id: u32| {
                nodes
                    .iter()
                    .find(|n| n.node_id == id && (!linears.contains(&id) || n.launched))
                    .unwrap_or_else(|| panic!("{name} run {run}: no node {id} in {nodes:?}"))
            };
            if !node(linears[0]).op.contains("gemv_half") && run == 0 {
                continue; // a device without the half GEMV's int8 dot products
            }
            if run == 0 {
                for id in linears {
                    assert!(
                        node(id).op.ends_with(kernel),
                        "{name}: linear {id} ran {}",
                        node(id).op
                    );
                }
                // The fused add still writes the sum (a graph output here); a norm left to
                // its node runs.
                let node_runs = add || kernel.ends_with("_dq_mm");
                assert_eq!(node(norm).launched, node_runs, "{name}: norm node at M = 1");
            } else {
                assert!(node(norm).launched, "{name}: norm idle at M > 1");
            }
        }
    }
}

/// A fused gated SiLU that only an 8da4w linear reads launches nothing at M = 1: the linear's
/// DQ GEMV computes it (`_dq_silu`, sliced past 8192 or 16384 by the device), and the choose node idles; at M > 1
/// the SiLU runs. When the choose's scale is a graph output the SiLU runs at M = 1 too. The
/// numbers are checked by the quantize family.
#[test]
fn gated_silu_runs_inside_the_dq_gemv_at_m1() {
    let all = (cases::family("quantize").cases)();
    // (case ending, the M = 1 kernel ending, SiLU launched at M = 1).
    let plans = [
        (
            "silu into the linear on y[[3, 202]] M [1, 3, 1] scale out false",
            "_dq_silu",
            false,
        ),
        (
            "silu into the linear on y[[2, 8448]] M [1, 2, 1] scale out false",
            "_sliced_dq_silu",
            false,
        ),
        (
            "silu into the linear on y[[2, 96]] M [1, 2, 1] scale out true",
            "_dq_silu",
            true,
        ),
    ];
    // silu 0 (fused into the mul), mul 1, choose 2, linear 3.
    for (name, kernel, silu_at_m1) in plans {
        let case = case_ending(&all, name);
        let kernel = fit_sliced(kernel, name);
        let kernel = kernel.as_str();
        for run in 0..2 {
            let nodes = profile_run(case, run);
            let node = |id: u32| {
                nodes
                    .iter()
                    .find(|n| n.node_id == id && (id != 3 || n.launched))
                    .unwrap_or_else(|| panic!("{name} run {run}: no node {id} in {nodes:?}"))
            };
            if !node(3).op.contains("gemv_half") && run == 0 {
                continue; // a device without the half GEMV's int8 dot products
            }
            if run == 0 {
                assert!(
                    node(3).op.ends_with(kernel),
                    "{name}: linear ran {}",
                    node(3).op
                );
                assert_eq!(node(1).launched, silu_at_m1, "{name}: SiLU at M = 1");
            } else {
                assert!(node(1).launched, "{name}: SiLU idle at M > 1");
            }
        }
    }
}

/// An 8da4w linear on the f16 tensor-core forward (emulated, forced from M = 9) runs its
/// `_x16` form on the rows' integers q - zp that `q4_dq_rowscale` makes from the raw x, not
/// the fake-quantized x's hi / lo pairs; on the int8 one (emulated, from M = 8) its two-limb
/// form on the limbs `q4_mma_limbs_dq_*` makes of them. The numbers are checked by the
/// quantize family.
#[test]
fn dq_linear_takes_the_integer_rows_on_the_f16_forward() {
    let all = (cases::family("quantize").cases)();
    // (case name ending, x dtype, f16 kernel, run at M >= 9).
    let plans = [
        (
            "float32 x[130, 64] N 40 gs 32 bias true scale float32 zp int8 M [130, 1, 12] [etvk_q4_gemv = f16_emulated]",
            "q4_dq_rowscale_f32",
            "q4_linear_fwd_mma_c_x16_emu",
            0,
        ),
        (
            "float32 x[20, 100] N 24 gs 20 bias false scale float32 zp int32 M [20] [etvk_q4_gemv = f16_emulated]",
            "q4_dq_rowscale_f32",
            "q4_linear_fwd_mma_x16_emu",
            0,
        ),
        (
            "float16 x[12, 44] N 16 gs 4 bias true scale float16 zp int8 M [12, 1] [etvk_q4_gemv = f16_emulated]",
            "q4_dq_rowscale_f16",
            "q4_linear_fwd_mma_x16_emu",
            0,
        ),
    ];
    let mma = [
        (
            "float32 x[40, 96] N 40 gs 32 bias true scale float32 zp int8 M [40, 1, 8, 17] [etvk_q4_mma = emulated]",
            "q4_mma_limbs_dq_f32",
            "q4_linear_mma_dq_emu",
            0,
        ),
        (
            "float32 x[40, 96] N 40 gs 32 bias true scale float32 zp int8 M [40, 1, 8, 17] [etvk_q4_mma = emulated]",
            "q4_mma_limbs_dq_f32",
            "q4_linear_mma_dq_emu",
            3,
        ),
        (
            "float16 x[20, 64] N 16 gs 32 bias true scale float16 zp int8 M [20, 2] [etvk_q4_mma = emulated]",
            "q4_mma_limbs_dq_f16",
            "q4_linear_mma_dq_emu",
            0,
        ),
    ];
    for (name, rowscale, kernel, run) in plans.into_iter().chain(mma) {
        let case = case_ending(&all, name);
        let nodes = profile_run(case, run);
        let ran = |part: &str| nodes.iter().any(|n| n.launched && n.op.contains(part));
        assert!(ran(rowscale), "{name}: no {rowscale} launch in {nodes:?}");
        assert!(ran(kernel), "{name}: no {kernel} launch in {nodes:?}");
        assert!(
            !ran("q4_bwd_rowscale")
                && !nodes
                    .iter()
                    .any(|n| n.launched && n.op.ends_with("/q4_mma_limbs")),
            "{name}: the fake-quantized x's pairs or limbs were made too"
        );
    }
}

/// torchao's int8 weight-only linear (ops/q8_linear.rs): a dequantize_affine node whose
/// output only aten.linear reads is left out and the linear runs its int8 kernel; with
/// group-wise scales the node is folded into a constant at load; with the dequantized weight
/// also a graph output the node runs and the linear takes the fp32 one.
#[test]
fn dequant_into_linear_runs_the_int8_kernel() {
    let all = (cases::family("quantize").cases)();
    let ops_of = |part: &str| -> Vec<String> {
        let case = all
            .iter()
            .find(|c| c.label().contains(part))
            .unwrap_or_else(|| panic!("no quantize case named like {part:?}"));
        profile_run(case, 0).into_iter().map(|n| n.op).collect()
    };
    let fused = ops_of("int8 weight [24, 40] groups of 40 zp int8 into aten.linear");
    assert_eq!(fused.len(), 1, "{fused:?}");
    assert!(fused[0].contains("/linear_q8_"), "{fused:?}");
    // Group-wise scales: the dequantize is folded into a constant at load.
    let folded = ops_of("int8 weight [12, 40] groups of 8");
    assert_eq!(folded.len(), 1, "{folded:?}");
    assert!(folded[0].starts_with("aten.linear"), "{folded:?}");
    let kept = ops_of("weight output true");
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept[0].starts_with("torchao.dequantize_affine"), "{kept:?}");
    assert!(kept[1].contains("/linear_gemv_"), "{kept:?}");
}

/// A gated SiLU (`mul(mul(x, sigmoid(x)), u)` or `mul(silu(x), u)`) runs as one dispatch
/// (ops/fusion.rs) unless an intermediate has another reader; the numbers are checked
/// by the unary family's cases.
#[test]
fn gated_silu_runs_as_one_dispatch() {
    let all = (cases::family("unary").cases)();
    let nodes = |name: &str| -> Vec<String> {
        let case = case_ending(&all, name);
        profile_run(case, 0).into_iter().map(|n| n.op).collect()
    };
    for dt in ["float32", "float16"] {
        let fused = nodes(&format!("{dt} gated silu (sigmoid, mul)"));
        assert_eq!(fused, vec!["aten.mul.Tensor"], "{dt}: {fused:?}");
        assert_eq!(nodes(&format!("{dt} gated silu")).len(), 1, "{dt} silu");
        let kept = nodes(&format!(
            "{dt} gated silu (sigmoid, mul), inner returned: not fused"
        ));
        assert_eq!(kept.len(), 3, "{dt}: {kept:?}");
        let kept = nodes(&format!("{dt} gated silu, inner returned: not fused"));
        assert_eq!(kept.len(), 2, "{dt}: {kept:?}");
    }
}

/// A residual add right before the RMSNorm of its sum runs as one dispatch
/// (ops/fusion.rs); alpha 2 or a broadcast operand keeps both ops. The numbers are checked by
/// the llama family's cases.
#[test]
fn add_then_rms_norm_runs_as_one_dispatch() {
    let all = (cases::family("llama").cases)();
    let nodes = |name: &str| -> usize { profile_run(case_ending(&all, name), 0).len() };
    assert_eq!(nodes("float32 add then rms_norm, sum returned"), 1);
    assert_eq!(nodes("float32 add then rms_norm"), 1);
    assert_eq!(nodes("float16 add then rms_norm, sum returned"), 1);
    assert_eq!(
        nodes("add then rms_norm, sum returned, alpha 2: not fused"),
        2
    );
    assert_eq!(
        nodes("add then rms_norm, sum returned, b broadcast: not fused"),
        2
    );
}

/// Views of an intermediate share its storage (storage.rs): their copy nodes launch
/// nothing; the numbers are checked by the shape family's cases.
/// `sdpa_with_kv_cache` is one dispatch that also writes the caches (ops/attention.rs,
/// `sdpa_kv_*`), at every run of each of its cases (prefill, then later positions); the
/// numbers, and that the caches hold the keys for later calls, are checked by the attention
/// family's multi-run cases. After an `et_vk.apply_rotary_emb` that only it reads, it
/// rotates q and k itself (`sdpa_kv_rope_*`) and the RoPE has no node at any M (the rotated
/// numbers are checked by the attention family's `RoPE into` cases). With its keys split
/// over workgroups (compile spec `etvk_sdpa_split` = on; the `split` cases) it is still one
/// dispatch; a value outside on / off is refused at load.
#[test]
fn kv_cache_attention_is_one_dispatch() {
    let all = (cases::family("attention").cases)();
    let kv: Vec<_> = all
        .iter()
        .filter(|c| c.op == "sdpa_with_kv_cache.default")
        .collect();
    assert!(!kv.is_empty(), "no sdpa_with_kv_cache cases");
    assert!(
        kv.iter().any(|c| c.label().contains("split")),
        "no split-key cases"
    );
    spec_value_refused(kv[0], "etvk_sdpa_split", "maybe", "on, off");
    for case in kv {
        for run in 0..case.runs.len() {
            let nodes = profile_run(case, run);
            let sdpa: Vec<_> = nodes
                .iter()
                .filter(|n| n.op.starts_with("sdpa_with_kv_cache"))
                .collect();
            assert_eq!(
                sdpa.len(),
                1,
                "{} run {run}: {} dispatches",
                case.label(),
                sdpa.len()
            );
            if case.label().contains("RoPE into") {
                assert!(
                    !nodes.iter().any(|n| n.op.contains("rotary")),
                    "{} run {run}: a RoPE node in {nodes:?}",
                    case.label()
                );
            }
        }
    }
}

#[test]
fn views_of_an_intermediate_launch_nothing() {
    let all = (cases::family("shape").cases)();
    let nodes = profile_run(case_ending(&all, "views of an intermediate, chained"), 0);
    let launched: Vec<&str> = nodes
        .iter()
        .filter(|n| n.launched)
        .map(|n| n.op.as_str())
        .collect();
    assert_eq!(
        launched,
        ["aten.neg.default", "aten.add.Tensor"],
        "{nodes:?}"
    );
}

/// The case of `all` whose label ends with `name`.
/// `case` loaded with compile spec `spec` = `value` fails, naming the spec and its values
/// (`listed`).
fn spec_value_refused(case: &etvk_tests::OpCase, spec: &str, value: &str, listed: &str) {
    let mut specs = case.compile_specs.clone();
    specs.push((spec.to_string(), value.as_bytes().to_vec()));
    let be = etvk_tests::backend();
    let err = etvk_runtime::Delegate::init(&be, &case.blob, &specs, &case.named)
        .err()
        .unwrap_or_else(|| panic!("{spec} = {value:?} loads"));
    assert!(
        err.to_string().contains(spec) && err.to_string().contains(listed),
        "{err}"
    );
}

fn case_ending<'a>(all: &'a [etvk_tests::OpCase], name: &str) -> &'a etvk_tests::OpCase {
    all.iter()
        .find(|c| c.label().ends_with(name))
        .unwrap_or_else(|| panic!("no case named like {name:?}"))
}

/// The M = 1 half GEMV's kernel name ending for rows of `k` values: `_sliced` + `dq` where
/// the row has more chunks than one workgroup holds on this device (256, up to 512 where
/// workgroups of 1024 fit: `half_gemv_row_chunks`), `dq` alone otherwise.
fn half_dq(k: usize, dq: &str) -> String {
    let caps = etvk_tests::backend().device_caps().clone();
    if k.div_ceil(32) > etvk_runtime::ops::q4_linear::half_gemv_row_chunks(&caps) {
        format!("_sliced{dq}")
    } else {
        dq.to_string()
    }
}

/// A `_sliced...` kernel ending of the cases below for this device: the row length is the
/// last number of the case's `y[[.., K]]`; rows one workgroup holds here run unsliced.
fn fit_sliced(want: &str, label: &str) -> String {
    let Some(rest) = want.strip_prefix("_sliced") else {
        return want.to_string();
    };
    let dims = label.split("[[").nth(1).and_then(|t| t.split("]]").next());
    let k = dims
        .and_then(|d| d.rsplit(", ").next())
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no row length in {label:?}"));
    half_dq(k, rest)
}

/// The per-dispatch profile of run `run_index` of `case`, on a delegate of its own.
fn profile_run(case: &etvk_tests::OpCase, run_index: usize) -> Vec<etvk_runtime::NodeTime> {
    let be = etvk_tests::backend();
    let mut d = etvk_runtime::Delegate::init(&be, &case.blob, &case.compile_specs, &case.named)
        .expect("init");
    d.set_profiling(true).expect("profiling");
    let run = &case.runs[run_index];
    let mut args: Vec<_> = run.inputs.iter().map(etvk_tests::case::to_arg).collect();
    args.extend(
        run.expected
            .iter()
            .map(etvk_tests::case::output_placeholder),
    );
    d.execute(&mut args).expect("execute");
    let nodes = d.profile_nodes().to_vec();
    assert!(!nodes.is_empty(), "no profile (timestamps unsupported?)");
    nodes
}

/// A graph output that is a constant (the exporter returns e.g. a counter a partition only
/// reads) comes back with the constant's values, not empty.
#[test]
fn constant_graph_outputs_are_returned() {
    use etvk_format::ir::DataType::Float32 as F32;
    use etvk_tests::{run_case, CaseGraph, OpCase, Tensor};
    let c = Tensor::new(F32, &[3], vec![1.5, -2.0, 4.0]);
    let mut g = CaseGraph::new();
    let x = g.input(F32, &[3]);
    let ci = g.constant(&c);
    let one = g.int(1);
    let out = g.output(F32, &[3]);
    g.op("aten.add.Tensor", &[x, ci, one, out]);
    g.mark_output(ci);
    let x = Tensor::new(F32, &[3], vec![1.0, 2.0, 3.0]);
    let case = OpCase::new("aten.add.Tensor", "constant output", g).run(
        vec![x],
        vec![Tensor::new(F32, &[3], vec![2.5, 0.0, 7.0]), c],
    );
    run_case(&case).unwrap();
}

/// The exporter serializes equal scalars once, so an Int argument can arrive as a Double
/// (static int8 mobilenet_v2: an output zero point 6 shares ReLU6's 6.0). Integral Doubles
/// are taken as Ints.
#[test]
fn integral_double_scalars_stand_for_ints() {
    use etvk_format::ir::DataType::{Float32 as F32, Int8 as I8};
    use etvk_tests::{run_case, CaseGraph, OpCase, Tensor};
    let mut g = CaseGraph::new();
    let x = g.input(F32, &[4]);
    let (s, z) = (g.double(0.5), g.double(6.0));
    let (lo, hi, dt) = (g.int(-128), g.int(127), g.null());
    let out = g.output(I8, &[4]);
    g.op(
        "quantized_decomposed.quantize_per_tensor.default",
        &[x, s, z, lo, hi, dt, out],
    );
    let xt = Tensor::new(F32, &[4], vec![1.0, -2.25, 0.75, 100.0]);
    // clamp(round_half_even(x / 0.5) + 6): 2 + 6, -4 (ties to even) + 6, 2 + 6, 127.
    let want = Tensor::new(I8, &[4], vec![8.0, 2.0, 8.0, 127.0]);
    let case = OpCase::new(
        "quantized_decomposed.quantize_per_tensor.default",
        "double zp",
        g,
    )
    .run(vec![xt], vec![want]);
    run_case(&case).unwrap();
}

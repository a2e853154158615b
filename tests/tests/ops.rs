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
    logic, creation, norm, attention
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

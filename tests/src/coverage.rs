//! The coverage rule: every registered op has cases; every op that declares dynamic
//! shapes has a case whose runs resize it.

use std::collections::{BTreeMap, BTreeSet};

use etvk_runtime::OpInfo;

use crate::case::OpCase;

/// What the case table lacks against the registry.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// Registered ops with no case.
    pub missing: Vec<String>,
    /// Registered ops declaring dynamic shapes with no dynamic case.
    pub missing_dynamic: Vec<String>,
    /// Ops with cases that the registry does not (yet) have: not an error here (their
    /// cases fail on their own), listed for the report.
    pub unregistered: Vec<String>,
}

impl Coverage {
    /// Whether nothing required is missing.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty() && self.missing_dynamic.is_empty()
    }
}

/// Compare `cases` with the registry entries `ops`.
pub fn check(ops: &[OpInfo], cases: &[OpCase]) -> Coverage {
    let mut by_op: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for c in cases {
        let e = by_op.entry(c.op).or_default();
        e.0 += 1;
        e.1 += usize::from(c.is_dynamic());
    }
    let registered: BTreeSet<&str> = ops.iter().map(|o| o.name.as_str()).collect();
    let mut cov = Coverage::default();
    for o in ops {
        match by_op.get(o.name.as_str()) {
            None => cov.missing.push(o.name.clone()),
            Some((_, 0)) if o.dynamic_shapes => cov.missing_dynamic.push(o.name.clone()),
            Some(_) => {}
        }
    }
    cov.unregistered = by_op
        .keys()
        .filter(|k| !registered.contains(*k))
        .map(|k| k.to_string())
        .collect();
    cov
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::CaseGraph;
    use crate::tensor::Tensor;
    use etvk_format::ir::DataType::Float32 as F32;

    fn info(name: &str, dynamic_shapes: bool) -> OpInfo {
        OpInfo {
            name: name.to_string(),
            dtypes: vec!["float32".to_string()],
            dynamic_shapes,
            note: String::new(),
        }
    }

    fn relu_case(sizes: &[&[usize]], dynamic: bool) -> OpCase {
        let mut g = CaseGraph::new();
        let x = g.input(F32, sizes[0]);
        let out = g.output(F32, sizes[0]);
        g.op("aten.relu.default", &[x, out]);
        let mut c = OpCase::new("aten.relu.default", "t", g);
        if dynamic {
            c = c.dynamic();
        }
        for s in sizes {
            let t = Tensor::rand(s, 0);
            c = c.run(vec![t.clone()], vec![t]);
        }
        c
    }

    #[test]
    fn finds_missing_and_static_only_ops() {
        let ops = [
            info("aten.relu.default", true),
            info("aten.new.default", false),
        ];
        // Several runs of one size, or resizing without the compile spec, are not dynamic.
        for case in [
            relu_case(&[&[3, 5], &[3, 5]], true),
            relu_case(&[&[3, 5], &[1, 5]], false),
        ] {
            let cov = check(&ops, &[case]);
            assert_eq!(cov.missing, vec!["aten.new.default"]);
            assert_eq!(cov.missing_dynamic, vec!["aten.relu.default"]);
            assert!(!cov.is_complete());
        }
        let cov = check(&ops[..1], &[relu_case(&[&[3, 5], &[1, 5]], true)]);
        assert!(cov.is_complete(), "{cov:?}");
        let cov = check(&[], &[relu_case(&[&[3, 5]], false)]);
        assert_eq!(cov.unregistered, vec!["aten.relu.default"]);
    }
}

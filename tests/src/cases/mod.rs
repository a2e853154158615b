//! The case table: one module per op family, each exposing `fn cases() -> Vec<OpCase>`,
//! listed once in [`FAMILIES`].
//!
//! To add an op: write its cases in the family's module (or a new module registered in
//! [`FAMILIES`] and given a test line in `tests/tests/ops.rs`). Every registered op must
//! have cases, and an op that declares dynamic shapes must have a dynamic case
//! ([`crate::coverage`] enforces both).

use crate::case::OpCase;

pub mod attention;
pub mod binary;
pub mod conv;
pub mod creation;
pub mod grid;
pub mod indexing;
pub mod llama;
pub mod logic;
pub mod matmul;
pub mod norm;
pub mod pool;
pub mod prepack;
pub mod q4_linear;
pub mod q8ta;
pub mod quant_blocks;
pub mod quantize;
pub mod reduce;
pub mod resize;
pub mod shape;
pub mod sym;
pub mod training;
pub mod unary;

/// An op family: its name (also the name of its test in `tests/tests/ops.rs`) and cases.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// Family name.
    pub name: &'static str,
    /// Builds the family's cases.
    pub cases: fn() -> Vec<OpCase>,
}

/// Every family. Add new families here (and a line in `tests/tests/ops.rs`).
pub const FAMILIES: &[Family] = &[
    Family {
        name: "matmul",
        cases: matmul::cases,
    },
    Family {
        name: "binary",
        cases: binary::cases,
    },
    Family {
        name: "conv",
        cases: conv::cases,
    },
    Family {
        name: "unary",
        cases: unary::cases,
    },
    Family {
        name: "shape",
        cases: shape::cases,
    },
    Family {
        name: "prepack",
        cases: prepack::cases,
    },
    Family {
        name: "q4_linear",
        cases: q4_linear::cases,
    },
    Family {
        name: "quantize",
        cases: quantize::cases,
    },
    Family {
        name: "sym",
        cases: sym::cases,
    },
    Family {
        name: "training",
        cases: training::cases,
    },
    Family {
        name: "llama",
        cases: llama::cases,
    },
    Family {
        name: "indexing",
        cases: indexing::cases,
    },
    Family {
        name: "attention",
        cases: attention::cases,
    },
    Family {
        name: "reduce",
        cases: reduce::cases,
    },
    Family {
        name: "logic",
        cases: logic::cases,
    },
    Family {
        name: "creation",
        cases: creation::cases,
    },
    Family {
        name: "norm",
        cases: norm::cases,
    },
    Family {
        name: "pool",
        cases: pool::cases,
    },
    Family {
        name: "resize",
        cases: resize::cases,
    },
];

/// The family called `name`.
///
/// # Panics
/// If there is none (a typo in `tests/tests/ops.rs`).
pub fn family(name: &str) -> Family {
    *FAMILIES
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no op family {name:?} in cases::FAMILIES"))
}

/// Every case of every family.
pub fn all() -> Vec<OpCase> {
    FAMILIES.iter().flat_map(|f| (f.cases)()).collect()
}

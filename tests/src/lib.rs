//! Cross-crate tests of etvk: registry-driven op tests, `.pte` fixture tests and the
//! generated op table.
//!
//! - [`case`]: an op test case ([`case::OpCase`]) built with [`case::CaseGraph`] (a small
//!   VkGraph in the exporter's argument conventions, constants in named data), loaded
//!   through `Delegate::init` on one shared validation-enabled backend, executed once per
//!   run (several runs on one delegate for dynamic shapes) and compared against a CPU f64
//!   reference ([`reference`]) with `|got - ref| <= atol + rtol * |ref|` ([`compare`]).
//! - [`cases`]: the case table, one module per op family; [`coverage`] checks it against
//!   `etvk_runtime::registered_ops()`.
//! - [`fixtures`]: the fixture programs through the backend API and through the CLI.
//! - [`ops_doc`]: `docs/ops.md` rendered from the registry.
//!
//! # Adding cases for a new op
//!
//! 1. In the family's module under `src/cases/` (or a new `src/cases/<family>.rs` listed
//!    in [`cases::FAMILIES`] plus one line in `tests/ops.rs`'s `families!`), write cases:
//!    ```no_run
//!    use etvk_format::ir::DataType;
//!    use etvk_tests::{reference, CaseGraph, OpCase, Tensor};
//!
//!    fn relu_case(seed: u64) -> OpCase {
//!        let x = Tensor::rand(&[4, 7], seed); // inputs, rounded to fp32
//!        let want = reference::unary(&x, |v| v.max(0.0)); // f64 reference
//!        let mut g = CaseGraph::new();
//!        let xi = g.input_like(&x); // graph input
//!        let out = g.output(DataType::Float32, &want.sizes); // graph output
//!        g.op("aten.relu.default", &[xi, out]); // args as the exporter writes them
//!        OpCase::new("aten.relu.default", "[4, 7]", g).run(vec![x], vec![want])
//!    }
//!    ```
//!    Constants (weights) go through `g.constant(&t)` (named data keyed by sha256); scalars
//!    through `g.int`/`g.double`/`g.null`/`g.int_list`/...; multi-op graphs simply call
//!    `g.op` several times.
//! 2. Cover odd and prime sizes (1, 3, 7, 13, 65), M = 1 and leading batch dims; if the
//!    op declares dynamic shapes, add a case built at the upper-bound sizes with
//!    `.dynamic()` and several `.run(..)`s that shrink and grow the inputs again.
//! 3. Pick the tolerance (`Tol::F32` elementwise, `Tol::F32_SUM` for reductions,
//!    `Tol::EXACT` for copies, or a documented custom one for quantized math).
//!
//! The `every_registered_op_has_cases` test fails listing each registered op without
//! cases (and each dynamic op without a dynamic case).

pub mod case;
pub mod cases;
pub mod compare;
pub mod coverage;
pub mod fixtures;
#[path = "reference/root.rs"]
pub mod graph_reference;
pub mod npy;
pub mod ops_doc;
pub mod reference;
pub mod tensor;

pub use case::{backend, run_case, run_cases, CaseGraph, NamedMap, OpCase, Run, Val};
pub use compare::Tol;
pub use tensor::Tensor;

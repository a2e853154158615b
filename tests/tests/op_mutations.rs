//! Damaged op graphs never panic: every registry op case's graph, mutated at the IR level
//! (extreme ints and doubles, empty or huge lists, an argument pointed at a value of the
//! wrong kind, a missing argument, zero or huge tensor sizes), is built and, when that
//! succeeds, executed once with the case's first inputs. Every outcome must be an `Ok` or a
//! typed `Err`; a panic or a Vulkan validation error fails. Complements
//! `crates/runtime/tests/mutated_delegates.rs`, which flips the bytes of exported blobs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use etvk_format::ir::{Value, VkGraph, VulkanDelegate};
use etvk_runtime::{Backend, Delegate, DelegateArg, HostTensor};
use etvk_tests::case::{backend, output_placeholder, to_arg, OpCase};
use etvk_tests::cases;

/// Mutations tried per case: all candidates up to this many, else this many chosen by a
/// seeded generator.
const PER_CASE: usize = 40;

/// One IR edit.
#[derive(Debug, Clone)]
enum Mutation {
    SetValue(usize, Value),
    /// Point argument `arg` of op `op` at a new value.
    Repoint {
        op: usize,
        arg: usize,
        to: Value,
    },
    /// Drop the last argument of op `op`.
    DropArg(usize),
    /// Set the sizes of tensor value `v`.
    Dims(usize, Vec<usize>),
}

fn candidates(g: &VkGraph) -> Vec<Mutation> {
    let mut out = Vec::new();
    for (oi, op) in g.chain.iter().enumerate() {
        out.push(Mutation::DropArg(oi));
        for (ai, &v) in op.args.iter().enumerate() {
            out.push(Mutation::Repoint {
                op: oi,
                arg: ai,
                to: Value::Null,
            });
            out.push(Mutation::Repoint {
                op: oi,
                arg: ai,
                to: Value::Int(3),
            });
            match &g.values[v] {
                Value::Int(_) => {
                    for x in [-1, 0, i64::from(i32::MAX), -(1 << 40), 1 << 40] {
                        out.push(Mutation::SetValue(v, Value::Int(x)));
                    }
                }
                Value::Double(_) => {
                    for x in [f64::NAN, f64::INFINITY, -1e300, 0.0] {
                        out.push(Mutation::SetValue(v, Value::Double(x)));
                    }
                }
                Value::IntList(l) => {
                    out.push(Mutation::SetValue(v, Value::IntList(Vec::new())));
                    out.push(Mutation::SetValue(
                        v,
                        Value::IntList(vec![1 << 30; l.len()]),
                    ));
                    out.push(Mutation::SetValue(v, Value::IntList(vec![-100; l.len()])));
                }
                Value::Tensor(t) => {
                    let mut zero = t.dims.clone();
                    if let Some(d) = zero.first_mut() {
                        *d = 0;
                    }
                    out.push(Mutation::Dims(v, zero));
                    out.push(Mutation::Dims(v, vec![1 << 20; t.dims.len().max(1)]));
                    out.push(Mutation::Repoint {
                        op: oi,
                        arg: ai,
                        to: Value::IntList(vec![2, 2]),
                    });
                }
                _ => {}
            }
        }
    }
    out
}

fn apply(d: &VulkanDelegate, m: &Mutation) -> VulkanDelegate {
    let mut d = d.clone();
    let g = &mut d.graph;
    match m {
        Mutation::SetValue(v, x) => g.values[*v] = x.clone(),
        Mutation::Repoint { op, arg, to } => {
            g.values.push(to.clone());
            let id = g.values.len() - 1;
            g.chain[*op].args[*arg] = id;
        }
        Mutation::DropArg(op) => {
            g.chain[*op].args.pop();
        }
        Mutation::Dims(v, dims) => {
            if let Value::Tensor(t) = &mut g.values[*v] {
                t.dims = dims.clone();
                t.numel = dims.iter().fold(1usize, |a, &d| a.saturating_mul(d));
            }
        }
    }
    d
}

fn no_panics(panics: &[String]) {
    assert!(
        panics.is_empty(),
        "{} mutant(s) panicked:\n{}",
        panics.len(),
        panics.join("\n")
    );
}

/// splitmix64, for a reproducible choice of mutations.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Build the mutant and run it once; whether it reached an execute.
fn try_mutant(be: &Arc<Backend>, case: &OpCase, d: &VulkanDelegate) -> bool {
    let Ok(mut del) = Delegate::from_ir(be, d, &case.compile_specs, &case.named) else {
        return false;
    };
    if let Some(run) = case.runs.first() {
        let mut args: Vec<DelegateArg> = run.inputs.iter().map(to_arg).collect();
        args.extend(run.expected.iter().map(output_placeholder));
        let _ = del.execute(&mut args);
    }
    true
}

#[test]
fn mutated_op_graphs_never_panic() {
    let be = backend();
    let mut rng = 0x0b5e_55ed_u64;
    let (mut tried, mut built) = (0usize, 0usize);
    let mut panics = Vec::new();
    for case in cases::all() {
        let Ok(parsed) = etvk_format::vkgraph::parse_delegate(&case.blob) else {
            panic!("{}: the case's own blob does not parse", case.label());
        };
        let all = candidates(&parsed.graph);
        if all.is_empty() {
            continue;
        }
        let picks: Vec<usize> = if all.len() <= PER_CASE {
            (0..all.len()).collect()
        } else {
            (0..PER_CASE)
                .map(|_| (next(&mut rng) % all.len() as u64) as usize)
                .collect()
        };
        for i in picks {
            let m = &all[i];
            let mutant = apply(&parsed, m);
            tried += 1;
            match catch_unwind(AssertUnwindSafe(|| try_mutant(&be, &case, &mutant))) {
                Ok(true) => built += 1,
                Ok(false) => {}
                Err(_) => panics.push(format!("{}: {m:?}", case.label())),
            }
        }
    }
    println!("{tried} mutants, {built} built and executed");
    no_panics(&panics);
    assert!(
        built > tried / 10,
        "only {built} of {tried} mutants got past the build"
    );
    assert_eq!(
        be.validation_error_count(),
        0,
        "validation errors during the sweep"
    );
}

/// The exported fixtures' delegate graphs, mutated the same way (capped per delegate), built
/// and run once with zero-filled inputs of their serialized sizes: real op combinations,
/// SymInt chains and KV caches under damage.
#[test]
fn mutated_fixture_graphs_never_panic() {
    use etvk_format::ir::DataType;
    use etvk_runtime::{HostDType, NamedData};

    struct ProgramData<'a>(&'a etvk_format::program_ir::Program);
    impl NamedData for ProgramData<'_> {
        fn get(&self, key: &str) -> Option<&[u8]> {
            self.0.named_data(key)
        }
    }

    const PER_DELEGATE: usize = 400;
    let be = backend();
    let mut rng = 0xf1c7_u64;
    let (mut tried, mut built) = (0usize, 0usize);
    let mut panics = Vec::new();
    let dir = etvk_tests::fixtures::fixtures_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("model.pte").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in &names {
        let program = etvk_tests::fixtures::parse_fixture_program(name).expect("fixture parses");
        let data = ProgramData(&program);
        for plan in &program.plans {
            for (di, del) in plan.delegates.iter().enumerate() {
                let Ok(parsed) = etvk_format::vkgraph::parse_delegate(program.delegate_blob(del))
                else {
                    panic!("{name} delegate {di}: does not parse");
                };
                let all = candidates(&parsed.graph);
                for _ in 0..PER_DELEGATE.min(all.len()) {
                    let m = &all[(next(&mut rng) % all.len() as u64) as usize];
                    let mutant = apply(&parsed, m);
                    tried += 1;
                    let run = || -> bool {
                        let Ok(mut d) = Delegate::from_ir(&be, &mutant, &del.compile_specs, &data)
                        else {
                            return false;
                        };
                        let g = &mutant.graph;
                        let mut args = Vec::new();
                        for &id in &g.input_ids {
                            match &g.values[id] {
                                Value::Tensor(t) => {
                                    let dtype = match t.staging_dtype {
                                        DataType::Float16 => HostDType::Half,
                                        DataType::Int32 => HostDType::Int,
                                        DataType::Int64 => HostDType::Long,
                                        _ => HostDType::Float,
                                    };
                                    let n = t.dims.iter().fold(1usize, |a, &x| a.saturating_mul(x));
                                    if n > 1 << 24 {
                                        return true;
                                    }
                                    args.push(DelegateArg::Tensor(HostTensor {
                                        dtype,
                                        sizes: t.dims.clone(),
                                        data: vec![0; n * dtype.size_bytes()],
                                    }));
                                }
                                _ => args.push(DelegateArg::Int(1)),
                            }
                        }
                        for _ in &g.output_ids {
                            args.push(DelegateArg::Tensor(HostTensor {
                                dtype: HostDType::Float,
                                sizes: Vec::new(),
                                data: Vec::new(),
                            }));
                        }
                        let _ = d.execute(&mut args);
                        true
                    };
                    match catch_unwind(AssertUnwindSafe(run)) {
                        Ok(true) => built += 1,
                        Ok(false) => {}
                        Err(_) => panics.push(format!("{name} delegate {di}: {m:?}")),
                    }
                }
            }
        }
    }
    println!("{tried} fixture mutants, {built} built and executed");
    no_panics(&panics);
    // Most damage to a whole graph stops its build (a typed error); the rest must run.
    assert!(
        built >= 200,
        "only {built} of {tried} mutants got past the build"
    );
    assert_eq!(
        be.validation_error_count(),
        0,
        "validation errors during the sweep"
    );
}

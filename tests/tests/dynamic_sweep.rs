//! Dynamic shapes against an independent reference.
//!
//! - `reference_reproduces_every_fixture`: the f64 reference interpreter (every Vulkan
//!   delegate of the program on the CPU, CPU ops between delegates on the host kernels)
//!   reproduces the eager-PyTorch outputs of every fixture with an `io.json`, cases in
//!   order on one loaded method (stateful KV-cache and multi-delegate programs included).
//! - `every_dynamic_length_matches_the_reference`: every fixture whose delegates were
//!   compiled with `require_dynamic_shapes` is loaded once on the GPU and run at every
//!   length of its dynamic dim from 1 to the exported maximum, then at random lengths
//!   (shrinking and growing), on fresh random inputs, against the reference. A length the
//!   model cannot take (shorter than a convolution's kernel) must fail on both.

use etvk_tests::fixtures::load_io;
use etvk_tests::graph_reference::sweep::{
    check_fixture, fixtures_with_io, has_dynamic_delegate, load_fixture_program, sweep,
};

/// Random lengths run after the 1..=max ramp.
const EXTRA_LENGTHS: usize = 8;

#[test]
fn reference_reproduces_every_fixture() {
    let names = fixtures_with_io().unwrap();
    // The stateful and multi-delegate programs are the point of a whole-program reference.
    for must in ["e5_llama3_tiny_kvcache_fp32", "g3_llama_block_dynamic_seq"] {
        assert!(names.iter().any(|n| n == must), "fixture {must} is missing");
    }
    let mut failures = Vec::new();
    for name in &names {
        match check_fixture(name) {
            Ok(n) => println!("{name}: reference matches {n} case(s)"),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_dynamic_length_matches_the_reference() {
    let be = etvk_tests::backend();
    let mut swept = Vec::new();
    let mut failures = Vec::new();
    for name in fixtures_with_io().unwrap() {
        let io = load_io(&name).unwrap();
        let program = load_fixture_program(&name).unwrap();
        if !has_dynamic_delegate(&program, &io.method) {
            continue;
        }
        match sweep(&name, &be, EXTRA_LENGTHS) {
            Ok(r) => {
                println!(
                    "{name}: swept {} lengths (every length 1..={} of input dims {:?}, then {:?}); {} refused by GPU and reference alike (longest {:?})",
                    r.lengths.len(),
                    r.max,
                    r.dims,
                    &r.lengths[r.max..],
                    r.refused.len(),
                    r.refused.iter().max()
                );
                swept.push(name);
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Today: g1_mlp_dynamic_batch and g3_llama_block_dynamic_seq.
    assert!(
        swept.len() >= 2,
        "only {swept:?} have require_dynamic_shapes delegates; expected at least two"
    );
}

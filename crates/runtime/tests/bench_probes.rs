//! The instruction-rate probe behind `etvk bench alu` (`bench_alu.comp` through
//! `etvk_runtime::bench`): each operation's chains, replayed on the CPU from the shader's
//! definition, must match what the GPU computed (so the timed instructions really ran, none
//! folded away), every rate must be positive and finite, and bad input is refused. The
//! pseudo-random data the memory ceilings read (`bench_fill_random.comp`) must be the integer
//! hash it is defined as, and the ceilings of every access width must come out positive.

mod common;

use common::*;
use etvk_runtime::bench::{
    alu_outputs, alu_rate, random_words, read_ceiling, read_ceiling_of, read_pairs,
    read_rotating_in, read_words, AluOp, SourceData, ALU_CHAINS, ALU_WORKGROUPS,
};
use etvk_runtime::ErrorKind;

const CHAINS: usize = ALU_CHAINS as usize;

/// Packed 4 x int8 dot product (OpSDotKHR, packed 4x8-bit format).
fn sdot4x8(a: u32, b: u32) -> i32 {
    (0..4)
        .map(|j| i32::from((a >> (8 * j)) as u8 as i8) * i32::from((b >> (8 * j)) as u8 as i8))
        .sum()
}

/// The fold invocation `t` writes after `rounds` rounds, as `bench_alu.comp` defines it:
/// integer chains xored, fp32 chains summed in order (returned as bits).
fn replay(op: AluOp, t: u32, rounds: u32) -> u32 {
    let [a, b, c] = op.operands();
    let sum = |v: &[f32]| v.iter().fold(0.0f32, |s, x| s + x);
    match op {
        AluOp::Ffma => {
            let (fa, fb) = (f32::from_bits(a), f32::from_bits(b));
            let mut v: Vec<f32> = (0..CHAINS as u32).map(|i| (t + i) as f32).collect();
            for _ in 0..rounds {
                for x in v.iter_mut() {
                    *x = x.mul_add(fa, fb);
                }
            }
            sum(&v).to_bits()
        }
        AluOp::Logic3 => {
            let mut v: Vec<u32> = (0..CHAINS as u32).map(|i| t.wrapping_mul(i + 1)).collect();
            for _ in 0..rounds {
                for i in 0..CHAINS {
                    v[i] = (v[i] ^ v[(i + 1) % CHAINS]) & a;
                }
            }
            v.iter().fold(0, |f, x| f ^ x)
        }
        AluOp::Dot4I8 => {
            let mut v: Vec<i32> = (0..CHAINS as u32).map(|i| (t + i) as i32).collect();
            for _ in 0..rounds {
                for x in v.iter_mut() {
                    *x = x.wrapping_add(sdot4x8(*x as u32 ^ a, b));
                }
            }
            v.iter().fold(0, |f, &x| f ^ x as u32)
        }
        AluOp::Decode => {
            let (magic, coef) = (f32::from_bits(b), f32::from_bits(c));
            let mut v: Vec<f32> = (0..CHAINS as u32).map(|i| (t + i) as f32).collect();
            let mut h = t.wrapping_mul(0x9E37_79B9) | 0x4B00_0000;
            for r in 0..rounds {
                for (i, x) in v.iter_mut().enumerate() {
                    let i = i as u32;
                    let mask = a | (0xF << (4 * (i & 3))) | ((i >> 2) << 20);
                    let code = f32::from_bits(h & mask) - magic;
                    *x = coef.mul_add(code, *x);
                }
                h = h.wrapping_add(r) | 0x4B00_0000;
            }
            sum(&v).to_bits()
        }
        // AluOp::ALL only: the tensor-core probes have no replay.
        _ => unreachable!("{} has no replay", op.name()),
    }
}

#[test]
fn alu_probe_chains_match_a_cpu_replay() {
    let be = backend();
    let rounds = 3;
    let last = ALU_WORKGROUPS * 256 - 1;
    for op in AluOp::ALL {
        let got = alu_outputs(&be, op, rounds).unwrap_or_else(|e| panic!("{}: {e}", op.name()));
        assert_eq!(got.len(), (last + 1) as usize, "{}", op.name());
        for t in [0, 1, 31, 255, 256, 4097, last / 2, last] {
            let (g, w) = (got[t as usize], replay(op, t, rounds));
            match op {
                AluOp::Logic3 | AluOp::Dot4I8 => {
                    assert_eq!(g, w, "{} invocation {t}: {g:#x} against {w:#x}", op.name())
                }
                // A driver may or may not fuse; one rounding per step at most apart.
                _ => {
                    let (g, w) = (f32::from_bits(g), f32::from_bits(w));
                    assert!(
                        (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                        "{} invocation {t}: {g} against {w}",
                        op.name()
                    );
                }
            }
        }
    }
}

#[test]
fn alu_probe_reports_positive_rates() {
    let be = backend();
    for op in AluOp::ALL {
        let r = alu_rate(&be, op, 2, 1).unwrap_or_else(|e| panic!("{}: {e}", op.name()));
        assert!(
            r.median_us.is_finite() && r.median_us > 0.0,
            "{}: {r:?}",
            op.name()
        );
        assert!(
            r.tera_ops.is_finite() && r.tera_ops > 0.0,
            "{}: {r:?}",
            op.name()
        );
    }
}

#[test]
fn alu_probe_refuses_zero_rounds() {
    let be = backend();
    let e = alu_rate(&be, AluOp::Ffma, 0, 1).expect_err("zero rounds");
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("rounds"), "{e}");
}

/// `bench_fill_random.comp`'s mixer, from its definition.
fn mix32(mut v: u32) -> u32 {
    v ^= v >> 16;
    v = v.wrapping_mul(0x7FEB_352D);
    v ^= v >> 15;
    v = v.wrapping_mul(0x846C_A68B);
    v ^= v >> 16;
    v
}

#[test]
fn ceiling_sources_hold_the_defined_random_words() {
    let be = backend();
    // 70000 words: a partial last workgroup; two seeds: different data.
    for (n, seed) in [(70_000u32, 0u32), (1000, 7)] {
        let got = random_words(&be, n, seed).unwrap();
        assert_eq!(got.len(), n as usize);
        let want: Vec<u32> = (0..n).map(|i| mix32(i ^ mix32(seed))).collect();
        assert_eq!(got, want, "seed {seed}");
        // Not a constant pattern a driver could store compressed.
        let distinct: std::collections::HashSet<u32> = got.iter().copied().collect();
        assert!(
            distinct.len() > n as usize * 99 / 100,
            "seed {seed}: {} distinct",
            distinct.len()
        );
    }
}

#[test]
fn read_ceilings_of_every_width_are_positive() {
    let be = backend();
    let bytes = 1 << 20;
    for (name, r) in [
        ("uvec4", read_ceiling(&be, bytes, 1)),
        ("u32", read_words(&be, bytes, 1)),
        ("uvec2", read_pairs(&be, bytes, 1)),
        ("zeros", read_ceiling_of(&be, bytes, 1, SourceData::Zero)),
        (
            "rotating, 2 workgroups",
            read_rotating_in(&be, bytes, 1, Some(2)),
        ),
    ] {
        let r = r.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.bytes, bytes, "{name}");
        assert!(
            r.median_us.is_finite() && r.median_us > 0.0,
            "{name}: {r:?}"
        );
        assert!(r.gbps.is_finite() && r.gbps > 0.0, "{name}: {r:?}");
    }
}

/// The tensor-core probes run where the device has NV int8 cooperative matrices (an H200)
/// and report positive rates; elsewhere (lavapipe) they refuse with an error naming the
/// operation instead of failing at pipeline creation.
#[test]
fn tensor_core_probes_run_or_refuse() {
    let be = backend();
    let caps = be.device_caps();
    for op in AluOp::TENSOR {
        let shape = op.mma_shape().expect("tensor probes name their shape");
        let has = caps.subgroup_size == 32
            && caps
                .cooperative_matrix_nv_shapes
                .iter()
                .any(|s| s.to_string() == shape);
        match alu_rate(&be, op, 2, 1) {
            Ok(r) => {
                assert!(has, "{} ran without the MMA shape", op.name());
                assert!(
                    r.tera_ops.is_finite() && r.tera_ops > 0.0,
                    "{}: {r:?}",
                    op.name()
                );
            }
            Err(e) => {
                assert!(!has, "{}: {e}", op.name());
                assert!(e.to_string().contains(op.name()), "{e}");
            }
        }
    }
}

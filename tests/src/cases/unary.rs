//! Elementwise unary ops: `aten.relu.default(x, out)`, `aten.sigmoid.default(x, out)`, the
//! ReLU gradient `aten.threshold_backward.default(grad, self, threshold, out)`, and the
//! `abs`, `neg`, `exp`, `sqrt`, `rsqrt`, `sin`, `cos`, `tanh`, `gelu(x, approximate)`,
//! `hardtanh(x, min_val, max_val)`, `clamp(x, min, max)`, `leaky_relu(x, negative_slope)`,
//! `hardswish(x)` family, `silu(x)`, `log10(x)`, `round(x)` (half to even) and
//! `hardshrink(x, lambd)`, checked against f64 references.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::reference::{sigmoid, unary};
use crate::tensor::Tensor;

const RELU: &str = "aten.relu.default";
const SIGMOID: &str = "aten.sigmoid.default";

fn reference(op: &str, x: &Tensor) -> Tensor {
    match op {
        RELU => unary(x, |v| v.max(0.0)),
        SIGMOID => unary(x, sigmoid),
        _ => unreachable!("not a unary op: {op}"),
    }
}

/// Inputs span both signs; sigmoid also sees saturating magnitudes.
fn input(op: &str, sizes: &[usize], seed: u64) -> Tensor {
    let r = if op == SIGMOID { 12.0 } else { 3.0 };
    Tensor::rand_range(F32, sizes, -r, r, seed)
}

fn static_case(op: &'static str, sizes: &[usize], seed: u64) -> OpCase {
    let x = input(op, sizes, seed);
    let want = reference(op, &x);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let out = g.output(F32, sizes);
    g.op(op, &[xi, out]);
    OpCase::new(op, format!("{sizes:?}"), g).run(vec![x], vec![want])
}

fn op_cases(op: &'static str, seed: u64) -> Vec<OpCase> {
    let shapes: &[&[usize]] = &[&[7, 13], &[65], &[1], &[], &[2, 3, 5, 7], &[1, 1, 13]];
    let mut v: Vec<OpCase> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| static_case(op, s, seed + i as u64))
        .collect();

    // Exact zeros and extreme values: relu(0) = 0 and sigmoid must not overflow to NaN.
    let x = Tensor::f32(&[6], vec![0.0, -0.0, 80.0, -80.0, 1e-30, -1e-30]);
    let want = reference(op, &x);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let out = g.output(F32, &[6]);
    g.op(op, &[xi, out]);
    v.push(OpCase::new(op, "zeros and extremes", g).run(vec![x], vec![want]));

    // Dynamic: leading dim down then up.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[9, 13]);
    let out = g.output(F32, &[9, 13]);
    g.op(op, &[xi, out]);
    let mut case = OpCase::new(op, "dynamic [<=9, 13]", g).dynamic();
    for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
        let x = input(op, &[m, 13], seed + 100 + i as u64);
        let want = reference(op, &x);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

const THRESHOLD_BACKWARD: &str = "aten.threshold_backward.default";

/// `threshold_backward(grad, self, threshold)`: grad where self > threshold, else 0.
fn threshold_backward_ref(grad: &Tensor, x: &Tensor, threshold: f64) -> Tensor {
    let data = grad
        .data
        .iter()
        .zip(&x.data)
        .map(|(g, v)| if *v <= threshold { 0.0 } else { *g })
        .collect();
    Tensor::f32(&grad.sizes, data)
}

fn threshold_backward_cases() -> Vec<OpCase> {
    let op = THRESHOLD_BACKWARD;
    let mut v = Vec::new();
    for (i, (sizes, threshold)) in [
        (&[7usize, 13][..], 0.0),
        (&[1][..], 0.5),
        (&[2, 3, 5][..], -0.25),
    ]
    .into_iter()
    .enumerate()
    {
        let grad = Tensor::rand_range(F32, sizes, -2.0, 2.0, 5200 + i as u64);
        // Exact threshold values included: `self <= threshold` gives 0 there.
        let mut x = Tensor::rand_range(F32, sizes, -1.0, 1.0, 5300 + i as u64);
        x.data[0] = threshold;
        let want = threshold_backward_ref(&grad, &x, threshold);
        let mut g = CaseGraph::new();
        let gi = g.input_like(&grad);
        let xi = g.input_like(&x);
        let t = g.double(threshold);
        let out = g.output(F32, sizes);
        g.op(op, &[gi, xi, t, out]);
        v.push(
            OpCase::new(op, format!("{sizes:?} threshold {threshold}"), g)
                .run(vec![grad, x], vec![want]),
        );
    }
    let mut g = CaseGraph::new();
    let gi = g.input(F32, &[9, 5]);
    let xi = g.input(F32, &[9, 5]);
    let t = g.double(0.0);
    let out = g.output(F32, &[9, 5]);
    g.op(op, &[gi, xi, t, out]);
    let mut case = OpCase::new(op, "dynamic [<=9, 5]", g).dynamic();
    for (i, m) in [9usize, 2, 9].into_iter().enumerate() {
        let grad = Tensor::rand_range(F32, &[m, 5], -2.0, 2.0, 5400 + i as u64);
        let x = Tensor::rand_range(F32, &[m, 5], -1.0, 1.0, 5500 + i as u64);
        let want = threshold_backward_ref(&grad, &x, 0.0);
        case = case.run(vec![grad, x], vec![want]);
    }
    v.push(case);
    v
}

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = op_cases(RELU, 5000);
    v.extend(op_cases(SIGMOID, 5100));
    v.extend(threshold_backward_cases());
    v.extend(more_cases());
    v.extend(silu_cases());
    v.extend(gated_silu_cases());
    v.extend(log10_round_hardshrink_cases());
    v.extend(int_clamp_cases());
    v
}

/// clamp on int32 tensors with Int bounds (or one None): integer comparisons, values past
/// 2^24 kept exactly.
fn int_clamp_cases() -> Vec<OpCase> {
    use etvk_format::ir::DataType::Int32 as I32;
    let run = |lo: Option<i64>, hi: Option<i64>, seed: u64| {
        let mut x = Tensor::rand_int(I32, &[3, 7], -300, 300, seed);
        x.data[0] = 16_777_217.0;
        x.data[1] = -2_000_000_001.0;
        let mut g = CaseGraph::new();
        let xi = g.input(I32, &[3, 7]);
        let li = match lo {
            Some(v) => g.int(v),
            None => g.null(),
        };
        let hi_i = match hi {
            Some(v) => g.int(v),
            None => g.null(),
        };
        let out = g.output(I32, &[3, 7]);
        g.op("aten.clamp.default", &[xi, li, hi_i, out]);
        let want = x
            .data
            .iter()
            .map(|&v| {
                let v = lo.map_or(v, |l| v.max(l as f64));
                hi.map_or(v, |h| v.min(h as f64))
            })
            .collect();
        let want = Tensor::new(I32, &[3, 7], want);
        OpCase::new(
            "aten.clamp.default",
            format!("int32 [3, 7] min {lo:?} max {hi:?}"),
            g,
        )
        .tol(Tol::EXACT)
        .run(vec![x], vec![want])
    };
    let mut v = vec![
        run(Some(0), Some(99), 31),
        run(None, Some(-5), 32),
        run(Some(-100), None, 33),
    ];
    v.extend(symint_clamp_cases());
    v
}

/// clamp with a SymInt bound (`sym_size(x, 0)`, read at every resize), as the exporter
/// writes `clamp(x, max=x.shape[0])` and replicate padding's `clamp(idx, 0, size - 1)`:
/// float32 x with the upper bound, int32 x with the lower one (an Int upper bound 40).
fn symint_clamp_cases() -> Vec<OpCase> {
    use etvk_format::ir::DataType::{Float32 as F32, Int32 as I32};
    let mut v = Vec::new();
    for dt in [F32, I32] {
        let mut g = CaseGraph::new();
        let xi = g.input(dt, &[9, 4]);
        let d0 = g.int(0);
        let n = g.symint();
        g.op("sym_size.int", &[xi, d0, n]);
        let (lo, hi) = if dt == F32 {
            (g.null(), n)
        } else {
            (n, g.int(40))
        };
        let out = g.output(dt, &[9, 4]);
        g.op("aten.clamp.default", &[xi, lo, hi, out]);
        let name = format!(
            "dynamic {} x [<=9, 4] with a sym_size(x, 0) bound",
            dt.name()
        );
        let mut case = OpCase::new("aten.clamp.default", name, g)
            .tol(Tol::EXACT)
            .dynamic();
        for (i, m) in [9usize, 3, 1, 6].into_iter().enumerate() {
            let x = if dt == F32 {
                Tensor::rand_range(F32, &[m, 4], -12.0, 12.0, 3400 + i as u64)
            } else {
                Tensor::rand_int(I32, &[m, 4], -60, 60, 3400 + i as u64)
            };
            let bound = m as f64;
            let want = x
                .data
                .iter()
                .map(|&e| {
                    if dt == F32 {
                        e.min(bound)
                    } else {
                        e.max(bound).min(40.0)
                    }
                })
                .collect();
            let want = Tensor::new(dt, &[m, 4], want);
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    v
}

/// torch.round: ties to even (2.5 -> 2, -0.5 -> -0).
pub(crate) fn round_half_even(x: f64) -> f64 {
    x.round_ties_even()
}

/// torch.nn.functional.hardshrink: `-lambd <= x <= lambd ? 0 : x` (a NaN x stays).
pub(crate) fn hardshrink_ref(x: f64, lambd: f64) -> f64 {
    if x >= -lambd && x <= lambd {
        0.0
    } else {
        x
    }
}

/// `log10`, `round`, `hardshrink`: the generic shapes, fp16, special values (zeros,
/// negatives, infinities, NaN; halves and values past 2^23 for round; the band edges for
/// hardshrink) and a dynamic case each, plus fp16 halves for round.
fn log10_round_hardshrink_cases() -> Vec<OpCase> {
    const ROUND: &str = "aten.round.default";
    let specs: Vec<(Spec, bool)> = vec![
        (
            Spec::new("aten.log10.default", vec![], f64::log10)
                .range(0.01, 1000.0)
                .specials(&[
                    1.0, 10.0, 0.1, 1000.0, 2.0, 0.5, 1e-30, 1e30, 0.0, -0.0, -1.0, INF, -INF, NAN,
                ]),
            true,
        ),
        (
            Spec::new(ROUND, vec![], round_half_even)
                .range(-10.0, 10.0)
                .specials(&[
                    0.5,
                    1.5,
                    2.5,
                    -0.5,
                    -1.5,
                    -2.5,
                    0.499_999_970_197_677_6,
                    3.7,
                    -3.7,
                    0.0,
                    -0.0,
                    4_194_304.5,
                    4_194_305.5,
                    8_388_609.0,
                    -8_388_609.0,
                    1e30,
                    INF,
                    -INF,
                    NAN,
                ]),
            true,
        ),
        (
            Spec::new("aten.hardshrink.default", vec![Arg::Double(0.5)], |v| {
                hardshrink_ref(v, 0.5)
            })
            .specials(&[
                0.5, -0.5, 0.500_001, -0.500_001, 0.0, -0.0, 0.25, -3.0, INF, -INF, NAN,
            ]),
            true,
        ),
        (
            Spec::new("aten.hardshrink.default", vec![Arg::Double(1.25)], |v| {
                hardshrink_ref(v, 1.25)
            })
            .specials(&[1.25, -1.25, 1.3, -1.3, 0.0, INF, NAN]),
            false,
        ),
        (
            Spec::new("aten.hardshrink.default", vec![Arg::Int(1)], |v| {
                hardshrink_ref(v, 1.0)
            })
            .specials(&[1.0, -1.0, 1.5, -0.5]),
            false,
        ),
    ];
    let mut v: Vec<OpCase> = specs
        .iter()
        .enumerate()
        .flat_map(|(i, (s, dynamic))| s.cases(40_000 + 1000 * i as u64, *dynamic))
        .collect();
    // fp16 ties: every value is a half-integer exactly representable in fp16.
    let halves: Vec<f64> = (-12..12).map(|k| k as f64 + 0.5).collect();
    let x = Tensor::new(F16, &[4, 6], halves);
    let spec = Spec::new(ROUND, vec![], round_half_even);
    let case =
        OpCase::new(ROUND, "float16 halves [4, 6]", spec.graph(F16, &[4, 6])).tol(Tol::EXACT);
    v.push(spec.run_one(case, x));
    v
}

/// `aten.silu.default(x, out)`: x * sigmoid(x), written x / (1 + e^-x) in f64.
fn silu_cases() -> Vec<OpCase> {
    let silu = |v: f64| v / (1.0 + (-v).exp());
    Spec::new("aten.silu.default", vec![], silu)
        .range(-8.0, 8.0)
        .specials(&[
            0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 20.0, -20.0, 100.0, -100.0, INF, -INF, NAN,
        ])
        .cases(30_000, true)
}

/// `silu(x) * u` as the exporter writes a gated MLP, `mul(mul(x, sigmoid(x)), u)` or
/// `mul(silu(x), u)`, which the runtime runs as one fused dispatch (ops/fusion.rs), and
/// the same with an intermediate also returned (not fused: another reader), fp32 and fp16,
/// static and with M resizing; against f64 `x / (1 + e^-x) * u`.
fn gated_silu_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    let mut seed = 9100;
    for dt in [F32, F16] {
        for decomposed in [true, false] {
            for keep_inner in [false, true] {
                for dynamic in [false, true] {
                    seed += 10;
                    let dims = [3, 2, 40];
                    let mut g = CaseGraph::new();
                    let x = g.input(dt, &dims);
                    let u = g.input(dt, &dims);
                    let inner = if keep_inner {
                        g.output(dt, &dims)
                    } else {
                        g.tensor(dt, &dims)
                    };
                    let op = if decomposed {
                        let s = g.tensor(dt, &dims);
                        g.op("aten.sigmoid.default", &[x, s]);
                        g.op("aten.mul.Tensor", &[x, s, inner]);
                        "aten.sigmoid.default"
                    } else {
                        g.op("aten.silu.default", &[x, inner]);
                        "aten.silu.default"
                    };
                    let out = g.output(dt, &dims);
                    g.op("aten.mul.Tensor", &[inner, u, out]);
                    let name = format!(
                        "{} gated silu{}{}{}",
                        dt.name(),
                        if decomposed { " (sigmoid, mul)" } else { "" },
                        if keep_inner {
                            ", inner returned: not fused"
                        } else {
                            ""
                        },
                        if dynamic { ", M resizes" } else { "" },
                    );
                    let tol = if dt == F16 {
                        Tol::new(2e-3, 2e-3)
                    } else {
                        Tol::new(1e-6, 1e-5)
                    };
                    let mut case = OpCase::new(op, name, g).tol(tol);
                    if dynamic {
                        case = case.dynamic();
                    }
                    for (i, m) in [3usize, 1, 2].iter().enumerate() {
                        if !dynamic && i > 0 {
                            break;
                        }
                        let sizes = [*m, 2, 40];
                        let s = seed + i as u64;
                        let xt = Tensor::rand_range(dt, &sizes, -6.0, 6.0, s);
                        let ut = Tensor::rand_range(dt, &sizes, -2.0, 2.0, s + 5);
                        let silu: Vec<f64> =
                            xt.data.iter().map(|&a| a / (1.0 + (-a).exp())).collect();
                        let want: Vec<f64> =
                            silu.iter().zip(&ut.data).map(|(a, b)| a * b).collect();
                        let mut outs = Vec::new();
                        if keep_inner {
                            outs.push(Tensor::new(dt, &sizes, silu));
                        }
                        outs.push(Tensor::new(dt, &sizes, want));
                        case = case.run(vec![xt, ut], outs);
                    }
                    v.push(case);
                }
            }
        }
    }
    // The exporter's plan ends the gate's life at the inner mul and reuses its memory object
    // for up (written after it): the fused node, which reads the gate at the outer mul, must
    // get it a memory object of its own (storage.rs `kept_past_plan`).
    {
        let dims = [2, 40];
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &dims);
        let ui = g.input(F32, &dims);
        let gate = g.tensor(F32, &dims);
        let fmt = g.null();
        g.op("aten.clone.default", &[xi, fmt, gate]);
        let s = g.tensor(F32, &dims);
        g.op("aten.sigmoid.default", &[gate, s]);
        let inner = g.tensor(F32, &dims);
        g.op("aten.mul.Tensor", &[gate, s, inner]);
        let up = g.tensor(F32, &dims);
        g.op("aten.clone.default", &[ui, fmt, up]);
        let out = g.output(F32, &dims);
        g.op("aten.mul.Tensor", &[inner, up, out]);
        g.builder().set_mem_obj(gate, Some(7));
        g.builder().set_mem_obj(up, Some(7));
        let xt = Tensor::rand_range(F32, &dims, -6.0, 6.0, 9190);
        let ut = Tensor::rand_range(F32, &dims, -2.0, 2.0, 9195);
        let want: Vec<f64> = xt
            .data
            .iter()
            .zip(&ut.data)
            .map(|(a, b)| a / (1.0 + (-a).exp()) * b)
            .collect();
        v.push(
            OpCase::new(
                "aten.sigmoid.default",
                "float32 gated silu (sigmoid, mul), the gate's memory planned for up",
                g,
            )
            .tol(Tol::new(1e-6, 1e-5))
            .run(vec![xt, ut], vec![Tensor::new(F32, &dims, want)]),
        );
    }
    v
}

/// A scalar argument as the exporter serializes it.
#[derive(Clone, Copy, Debug)]
enum Arg {
    Int(i64),
    Double(f64),
    Null,
    Str(&'static str),
}

impl Arg {
    fn add(self, g: &mut CaseGraph) -> usize {
        match self {
            Arg::Int(x) => g.int(x),
            Arg::Double(x) => g.double(x),
            Arg::Null => g.null(),
            Arg::Str(s) => g.builder().add_string(s),
        }
    }
}

/// One parameterized unary op variant: scalar args between `x` and `out`, the f64
/// reference, the random input range, and hand-picked values (zeros, signed zeros,
/// infinities, NaN, saturation) that random inputs would miss.
struct Spec {
    op: &'static str,
    args: Vec<Arg>,
    f: Box<dyn Fn(f64) -> f64>,
    range: (f64, f64),
    specials: Vec<f64>,
}

impl Spec {
    fn new(op: &'static str, args: Vec<Arg>, f: impl Fn(f64) -> f64 + 'static) -> Spec {
        Spec {
            op,
            args,
            f: Box::new(f),
            range: (-3.0, 3.0),
            specials: vec![0.0, -0.0, 1e-30, -1e-30],
        }
    }
    fn range(mut self, lo: f64, hi: f64) -> Spec {
        self.range = (lo, hi);
        self
    }
    fn specials(mut self, v: &[f64]) -> Spec {
        self.specials = v.to_vec();
        self
    }

    fn graph(&self, dt: DataType, sizes: &[usize]) -> CaseGraph {
        let mut g = CaseGraph::new();
        let xi = g.input(dt, sizes);
        let mut args = vec![xi];
        for a in &self.args {
            args.push(a.add(&mut g));
        }
        args.push(g.output(dt, sizes));
        g.op(self.op, &args);
        g
    }

    fn label(&self) -> String {
        if self.args.is_empty() {
            String::new()
        } else {
            format!(" args {:?}", self.args)
        }
    }

    fn run_one(&self, case: OpCase, x: Tensor) -> OpCase {
        let want = unary(&x, &self.f);
        case.run(vec![x], vec![want])
    }

    /// Odd/prime/rank-0 shapes in fp32, one fp16 case, the special values, and (with
    /// `dynamic`) a `[<=9, 13]` case resized down then up.
    fn cases(&self, seed: u64, dynamic: bool) -> Vec<OpCase> {
        let (lo, hi) = self.range;
        let shapes: &[&[usize]] = &[&[7, 13], &[65], &[1], &[], &[2, 3, 5, 7]];
        let mut v = Vec::new();
        for (i, s) in shapes.iter().enumerate() {
            let x = Tensor::rand_range(F32, s, lo, hi, seed + i as u64);
            let case = OpCase::new(
                self.op,
                format!("{s:?}{}", self.label()),
                self.graph(F32, s),
            );
            v.push(self.run_one(case, x));
        }
        let x = Tensor::rand_range(F16, &[3, 5, 7], lo, hi, seed + 50);
        let case = OpCase::new(
            self.op,
            format!("float16 [3, 5, 7]{}", self.label()),
            self.graph(F16, &[3, 5, 7]),
        )
        .tol(Tol::F16);
        v.push(self.run_one(case, x));

        let n = self.specials.len();
        let x = Tensor::f32(&[n], self.specials.clone());
        let case = OpCase::new(
            self.op,
            format!("special values{}", self.label()),
            self.graph(F32, &[n]),
        );
        v.push(self.run_one(case, x));

        if dynamic {
            let mut case = OpCase::new(
                self.op,
                format!("dynamic [<=9, 13]{}", self.label()),
                self.graph(F32, &[9, 13]),
            )
            .dynamic();
            for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
                let x = Tensor::rand_range(F32, &[m, 13], lo, hi, seed + 100 + i as u64);
                case = self.run_one(case, x);
            }
            v.push(case);
        }
        v
    }
}

/// `erf` in f64 (std has none): Taylor series for |z| < 3 (terms peak near e^9, leaving
/// ~1e-12 accuracy), else the erfc continued fraction, accurate to far below fp32.
fn erf(z: f64) -> f64 {
    if z.is_nan() {
        return z;
    }
    let a = z.abs();
    let r = if a < 3.0 {
        let (mut term, mut sum) = (a, a);
        for n in 1..200 {
            term *= -a * a / n as f64;
            let t = term / (2 * n + 1) as f64;
            sum += t;
            if t.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // erfc(a) = exp(-a^2) / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) / (a + ...)))).
        let mut f = a;
        for k in (1..=120).rev() {
            f = a + (k as f64 / 2.0) / f;
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / f
    };
    r.copysign(z)
}

pub(crate) fn gelu_erf(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

pub(crate) fn gelu_tanh(x: f64) -> f64 {
    let k = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
}

/// `hardswish(x) = x * min(max(x + 3, 0), 6) / 6` in PyTorch's order: NaN stays NaN and
/// -inf gives -inf * 0 = NaN.
pub(crate) fn hardswish(x: f64) -> f64 {
    x * (x + 3.0).clamp(0.0, 6.0) / 6.0
}

/// `clamp(x, lo, hi)` as PyTorch: NaN stays NaN, `min(max(x, lo), hi)` otherwise.
fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    if x.is_nan() {
        x
    } else {
        x.max(lo).min(hi)
    }
}

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

/// The elementwise ops beyond relu / sigmoid, with every scalar-argument form the exporter
/// writes (Double, Int, Null bounds; both gelu `approximate` strings).
fn more_cases() -> Vec<OpCase> {
    let signed = [0.0, -0.0, 1e-30, -1e-30, INF, -INF, NAN, 2.5, -2.5];
    let specs: Vec<(Spec, bool)> = vec![
        (
            Spec::new("aten.abs.default", vec![], f64::abs).specials(&signed),
            true,
        ),
        (
            Spec::new("aten.neg.default", vec![], |v| -v).specials(&signed),
            true,
        ),
        (
            Spec::new("aten.exp.default", vec![], f64::exp)
                .range(-5.0, 5.0)
                .specials(&[0.0, -0.0, 1e-30, 20.0, -20.0, 100.0, -100.0, INF, -INF, NAN]),
            true,
        ),
        (
            Spec::new("aten.sqrt.default", vec![], f64::sqrt)
                .range(0.0, 9.0)
                .specials(&[0.0, 1e-30, 4.0, 1e6, 2.0, -1.0, INF, NAN]),
            true,
        ),
        (
            Spec::new("aten.rsqrt.default", vec![], |v| 1.0 / v.sqrt())
                .range(0.01, 9.0)
                .specials(&[1e-30, 4.0, 1e6, 2.0, 0.25, -1.0, INF, NAN]),
            true,
        ),
        (
            Spec::new("aten.sin.default", vec![], f64::sin)
                .range(-7.0, 7.0)
                .specials(&[0.0, -0.0, 1e-30, std::f64::consts::PI, -10.0, 10.0, NAN]),
            true,
        ),
        (
            Spec::new("aten.cos.default", vec![], f64::cos)
                .range(-7.0, 7.0)
                .specials(&[0.0, -0.0, 1e-30, std::f64::consts::PI, -10.0, 10.0, NAN]),
            true,
        ),
        (
            Spec::new("aten.tanh.default", vec![], f64::tanh)
                .range(-5.0, 5.0)
                .specials(&[
                    0.0, -0.0, 1e-30, 1e-3, 20.0, -20.0, 100.0, -100.0, INF, -INF, NAN,
                ]),
            true,
        ),
        (
            Spec::new("aten.gelu.default", vec![Arg::Str("none")], gelu_erf)
                .range(-6.0, 6.0)
                .specials(&[
                    0.0, -0.0, 1e-30, 0.5, -0.5, 3.0, -3.0, 10.0, -10.0, 100.0, -100.0,
                ]),
            true,
        ),
        (
            Spec::new("aten.gelu.default", vec![Arg::Str("tanh")], gelu_tanh)
                .range(-6.0, 6.0)
                .specials(&[
                    0.0, -0.0, 1e-30, 0.5, -0.5, 3.0, -3.0, 10.0, -10.0, 100.0, -100.0,
                ]),
            true,
        ),
        (
            Spec::new(
                "aten.hardtanh.default",
                vec![Arg::Double(-1.0), Arg::Double(1.0)],
                |v| clamp(v, -1.0, 1.0),
            )
            .specials(&[0.0, -1.0, 1.0, -1.5, 1.5, INF, -INF, NAN]),
            true,
        ),
        (
            Spec::new(
                "aten.hardtanh.default",
                vec![Arg::Double(0.0), Arg::Double(6.0)],
                |v| clamp(v, 0.0, 6.0),
            )
            .range(-2.0, 8.0)
            .specials(&[0.0, 6.0, -1.0, 7.0, INF, -INF]),
            false,
        ),
        (
            Spec::new(
                "aten.clamp.default",
                vec![Arg::Double(-0.5), Arg::Double(1.25)],
                |v| clamp(v, -0.5, 1.25),
            )
            .specials(&[0.0, -0.5, 1.25, -0.75, 1.5, INF, -INF, NAN]),
            true,
        ),
        (
            Spec::new("aten.clamp.default", vec![Arg::Int(-1), Arg::Int(2)], |v| {
                clamp(v, -1.0, 2.0)
            })
            .specials(&[0.0, -1.0, 2.0, -1.5, 2.5, INF, -INF]),
            false,
        ),
        (
            Spec::new(
                "aten.clamp.default",
                vec![Arg::Double(0.5), Arg::Null],
                |v| clamp(v, 0.5, INF),
            )
            .specials(&[0.0, 0.5, 1e30, INF, -INF, NAN]),
            false,
        ),
        (
            Spec::new("aten.clamp.default", vec![Arg::Null, Arg::Int(1)], |v| {
                clamp(v, -INF, 1.0)
            })
            .specials(&[0.0, 1.0, -1e30, INF, -INF, NAN]),
            false,
        ),
        (
            Spec::new("aten.leaky_relu.default", vec![Arg::Double(0.01)], |v| {
                if v >= 0.0 {
                    v
                } else {
                    0.01 * v
                }
            })
            .specials(&[0.0, -0.0, 1e-30, -1e-30, INF, -INF, NAN]),
            true,
        ),
        (
            Spec::new("aten.leaky_relu.default", vec![Arg::Double(-0.2)], |v| {
                if v >= 0.0 {
                    v
                } else {
                    -0.2 * v
                }
            })
            .specials(&[0.0, -3.0, 3.0]),
            false,
        ),
        (
            Spec::new("aten.hardswish.default", vec![], hardswish)
                .range(-5.0, 5.0)
                .specials(&[
                    0.0, -0.0, 1e-30, -1e-30, -3.0, 3.0, -1.5, 1.5, -10.0, 10.0, INF, -INF, NAN,
                ]),
            true,
        ),
    ];
    specs
        .iter()
        .enumerate()
        .flat_map(|(i, (s, dynamic))| s.cases(8000 + 1000 * i as u64, *dynamic))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (z, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (2.9, 0.999_958_902_121_900_3),
            (3.5, 0.999_999_256_901_627_7),
            (-1.0, -0.842_700_792_949_714_9),
        ] {
            assert!((erf(z) - want).abs() < 1e-13, "erf({z}) = {}", erf(z));
        }
    }
}

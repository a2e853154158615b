//! Convolution: `aten.convolution.default(x, weight, bias|None, stride, padding, dilation,
//! transposed, output_padding, groups, out)` and `et_vk.conv_with_clamp.default` (the same
//! with `output_min`, `output_max` before `out`), against the f64 definition
//! ([`crate::reference::conv`]; transposed ones as a scatter).

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::reference::{conv, ConvParams};
use crate::tensor::Tensor;

const CONV: &str = "aten.convolution.default";
const CONV_CLAMP: &str = "et_vk.conv_with_clamp.default";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v: Vec<OpCase> = specs()
        .into_iter()
        .enumerate()
        .map(|(i, s)| static_case(s, 28_000 + 10 * i as u64))
        .collect();
    v.push(dynamic_case());
    v.push(dynamic_transposed_case());
    v.push(dynamic_2d_case(false));
    v.push(dynamic_2d_case(true));
    v
}

/// The split kernel (288 taps per output) while batch and spatial sizes change.
/// A 2-D convolution over 32 channels whose batch and spatial sizes change between runs:
/// 3 x 3 with padding 1 (`conv_split`) or pointwise (the tiled matmul).
fn dynamic_2d_case(pointwise: bool) -> OpCase {
    let (kernel, pad, seed) = if pointwise {
        (vec![1, 1], 0, 29_100)
    } else {
        (vec![3, 3], 1, 28_970)
    };
    let spec = Spec {
        dt: F32,
        x: vec![2, 32, 9, 8],
        c_out: 5,
        kernel,
        params: p(&[1, 1], &[pad, pad], &[1, 1], false, &[0, 0], 1),
        bias: Bias::Constant,
        clamp: None,
        weight_input: false,
    };
    let w = Tensor::rand_range(F32, &spec.weight_sizes(), -0.5, 0.5, seed + 1);
    let b = Tensor::rand_range(F32, &[5], -0.5, 0.5, seed + 2);
    let g = build_graph(&spec, &spec.x, &[2, 5, 9, 8], &w, &b);
    let name = if pointwise {
        "dynamic pointwise x [<=2, 32, <=9, <=8]"
    } else {
        "dynamic split x [<=2, 32, <=9, <=8] 3x3 p1"
    };
    let mut case = OpCase::new(CONV, name, g).tol(Tol::F32_SUM).dynamic();
    for (i, sizes) in [[2, 32, 9, 8], [1, 32, 1, 1], [2, 32, 4, 7]]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand_range(F32, &sizes, -1.0, 1.0, seed + 10 + i as u64);
        let want = conv(
            &x,
            &w,
            Some(&b),
            &spec.params,
            (f64::NEG_INFINITY, f64::INFINITY),
            F32,
        );
        case = case.run(vec![x], vec![want]);
    }
    case
}

/// A 1-D transposed convolution whose length and batch change between runs.
fn dynamic_transposed_case() -> OpCase {
    let spec = Spec {
        dt: F32,
        x: vec![2, 4, 20],
        c_out: 6,
        kernel: vec![4],
        params: p(&[3], &[1], &[2], true, &[1], 2),
        bias: Bias::Constant,
        clamp: None,
        weight_input: false,
    };
    let w = Tensor::rand_range(F32, &spec.weight_sizes(), -0.5, 0.5, 28_951);
    let b = Tensor::rand_range(F32, &[6], -0.5, 0.5, 28_952);
    // (20 - 1) * 3 - 2 + 2 * 3 + 1 + 1 = 63.
    let g = build_graph(&spec, &spec.x, &[2, 6, 63], &w, &b);
    let mut case = OpCase::new(
        CONV,
        "dynamic transposed 1-D x [<=2, 4, <=20] k4 s3 p1 d2 op1 g2",
        g,
    )
    .tol(Tol::F32_SUM)
    .dynamic();
    for (i, sizes) in [[2, 4, 20], [1, 4, 1], [2, 4, 7], [1, 4, 20]]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand_range(F32, &sizes, -1.0, 1.0, 28_960 + i as u64);
        let want = conv(
            &x,
            &w,
            Some(&b),
            &spec.params,
            (f64::NEG_INFINITY, f64::INFINITY),
            F32,
        );
        case = case.run(vec![x], vec![want]);
    }
    case
}

/// How the bias is passed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bias {
    None,
    Constant,
    Input,
}

#[derive(Debug, Clone)]
struct Spec {
    dt: DataType,
    x: Vec<usize>,
    /// C_out (forward) or C_out / groups... as the weight's dim 1 says for transposed.
    c_out: usize,
    kernel: Vec<usize>,
    params: ConvParams,
    bias: Bias,
    /// `Some((min, max))` for conv_with_clamp (None bounds as infinities).
    clamp: Option<(Option<f64>, Option<f64>)>,
    /// The weight as a graph input instead of a constant.
    weight_input: bool,
}

impl Spec {
    fn weight_sizes(&self) -> Vec<usize> {
        let g = self.params.groups;
        let c_in = self.x[1];
        let mut s = if self.params.transposed {
            vec![c_in, self.c_out / g]
        } else {
            vec![self.c_out, c_in / g]
        };
        s.extend(&self.kernel);
        s
    }

    fn bounds(&self) -> (f64, f64) {
        match self.clamp {
            Some((lo, hi)) => (lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY)),
            None => (f64::NEG_INFINITY, f64::INFINITY),
        }
    }
}

fn p(
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    transposed: bool,
    output_padding: &[usize],
    groups: usize,
) -> ConvParams {
    ConvParams {
        stride: stride.to_vec(),
        padding: padding.to_vec(),
        dilation: dilation.to_vec(),
        transposed,
        output_padding: output_padding.to_vec(),
        groups,
    }
}

fn specs() -> Vec<Spec> {
    let s = |dt, x: &[usize], c_out, kernel: &[usize], params, bias, clamp| Spec {
        dt,
        x: x.to_vec(),
        c_out,
        kernel: kernel.to_vec(),
        params,
        bias,
        clamp,
        weight_input: false,
    };
    let mut v = vec![
        // Plain 3x3, odd sizes.
        s(
            F32,
            &[1, 3, 7, 9],
            5,
            &[3, 3],
            p(&[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
            Bias::Constant,
            None,
        ),
        // Strided, padded, dilated, non-square kernel, batch 2.
        s(
            F32,
            &[2, 4, 11, 10],
            6,
            &[3, 2],
            p(&[2, 3], &[2, 1], &[2, 1], false, &[0, 0], 1),
            Bias::None,
            None,
        ),
        // Grouped and depthwise.
        s(
            F32,
            &[1, 6, 8, 8],
            9,
            &[3, 3],
            p(&[1, 1], &[1, 1], &[1, 1], false, &[0, 0], 3),
            Bias::Constant,
            None,
        ),
        s(
            F32,
            &[1, 8, 9, 7],
            8,
            &[5, 5],
            p(&[2, 2], &[2, 2], &[1, 1], false, &[0, 0], 8),
            Bias::Input,
            None,
        ),
        // Pointwise, the bulk of a mobile network.
        s(
            F32,
            &[1, 40, 5, 6],
            24,
            &[1, 1],
            p(&[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
            Bias::None,
            None,
        ),
        // Pointwise on the tiled matmul: batch 2, partial 64 x 64 tiles, C_in no multiple of
        // 16, bias and clamp; fp16; 1-D.
        s(
            F32,
            &[2, 70, 9, 8],
            90,
            &[1, 1],
            p(&[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
            Bias::Constant,
            Some((Some(-0.3), Some(0.4))),
        ),
        s(
            F16,
            &[1, 20, 7, 10],
            33,
            &[1, 1],
            p(&[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
            Bias::Constant,
            None,
        ),
        // A long pointwise sum over few outputs stays on conv_split.
        s(
            F32,
            &[1, 300, 3, 3],
            10,
            &[1, 1],
            p(&[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
            Bias::Constant,
            Some((Some(0.0), Some(6.0))),
        ),
        s(
            F32,
            &[2, 9, 70],
            5,
            &[1],
            p(&[1], &[0], &[1], false, &[0], 1),
            Bias::Input,
            None,
        ),
        // Single-entry lists apply to both dims.
        s(
            F32,
            &[1, 2, 6, 7],
            3,
            &[3, 3],
            p(&[2], &[1], &[1], false, &[0], 1),
            Bias::Constant,
            None,
        ),
        // 1-D: strided, grouped, dilated.
        s(
            F32,
            &[2, 4, 50],
            6,
            &[5],
            p(&[3], &[2], &[2], false, &[0], 2),
            Bias::Constant,
            None,
        ),
        // Transposed: stride 2 with output_padding, grouped, dilated, padded.
        s(
            F32,
            &[1, 4, 5, 6],
            6,
            &[3, 3],
            p(&[2, 2], &[1, 1], &[1, 1], true, &[1, 1], 1),
            Bias::Constant,
            None,
        ),
        s(
            F32,
            &[2, 6, 4, 3],
            4,
            &[3, 2],
            p(&[3, 2], &[2, 0], &[2, 1], true, &[2, 1], 2),
            Bias::None,
            None,
        ),
        s(
            F32,
            &[1, 3, 17],
            2,
            &[4],
            p(&[2], &[1], &[1], true, &[0], 1),
            Bias::Constant,
            None,
        ),
        // fp16 storage.
        s(
            F16,
            &[1, 4, 6, 6],
            4,
            &[3, 3],
            p(&[1, 1], &[1, 1], &[1, 1], false, &[0, 0], 2),
            Bias::Constant,
            None,
        ),
        s(
            F16,
            &[1, 4, 4, 4],
            2,
            &[2, 2],
            p(&[2, 2], &[0, 0], &[1, 1], true, &[0, 0], 1),
            Bias::None,
            None,
        ),
        // conv_with_clamp: ReLU6, one-sided, and both bounds.
        s(
            F32,
            &[1, 3, 8, 8],
            4,
            &[3, 3],
            p(&[2, 2], &[1, 1], &[1, 1], false, &[0, 0], 1),
            Bias::Constant,
            Some((Some(0.0), Some(6.0))),
        ),
        s(
            F32,
            &[1, 4, 6, 5],
            4,
            &[3, 3],
            p(&[1, 1], &[1, 1], &[1, 1], false, &[0, 0], 4),
            Bias::Constant,
            Some((Some(-0.1), None)),
        ),
        s(
            F16,
            &[1, 2, 5, 5],
            3,
            &[3, 3],
            p(&[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
            Bias::None,
            Some((Some(-0.5), Some(0.25))),
        ),
    ];
    // At least 256 taps per output: the split kernel (a workgroup per output).
    v.extend([
        s(
            F32,
            &[1, 300, 3, 4],
            7,
            &[1, 1],
            p(&[1, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
            Bias::Constant,
            None,
        ),
        s(
            F32,
            &[2, 64, 7, 6],
            6,
            &[3, 3],
            p(&[2, 1], &[1, 2], &[1, 2], false, &[0, 0], 2),
            Bias::None,
            Some((Some(0.0), Some(6.0))),
        ),
        s(
            F16,
            &[1, 32, 5, 5],
            4,
            &[3, 3],
            p(&[1, 1], &[1, 1], &[1, 1], false, &[0, 0], 1),
            Bias::Constant,
            None,
        ),
        s(
            F32,
            &[1, 260, 9],
            3,
            &[1],
            p(&[2], &[0], &[1], false, &[0], 1),
            Bias::Input,
            None,
        ),
    ]);
    // A weight that is a graph input rather than a constant.
    let mut w_in = s(
        F32,
        &[1, 3, 6, 6],
        4,
        &[3, 3],
        p(&[1, 1], &[1, 1], &[1, 1], false, &[0, 0], 1),
        Bias::Input,
        None,
    );
    w_in.weight_input = true;
    v.push(w_in);
    v
}

fn build_graph(
    spec: &Spec,
    max_x: &[usize],
    max_out: &[usize],
    w: &Tensor,
    b: &Tensor,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(spec.dt, max_x);
    let wi = if spec.weight_input {
        g.input_like(w)
    } else {
        g.constant(w)
    };
    let bi = match spec.bias {
        Bias::None => g.null(),
        Bias::Constant => g.constant(b),
        Bias::Input => g.input_like(b),
    };
    let list = |g: &mut CaseGraph, v: &[usize]| {
        g.int_list(&v.iter().map(|&x| x as i64).collect::<Vec<_>>())
    };
    let stride = list(&mut g, &spec.params.stride);
    let padding = list(&mut g, &spec.params.padding);
    let dilation = list(&mut g, &spec.params.dilation);
    let transposed = g.bool(spec.params.transposed);
    let output_padding = list(&mut g, &spec.params.output_padding);
    let groups = g.int(spec.params.groups as i64);
    let out = g.output(spec.dt, max_out);
    let mut args = vec![
        xi,
        wi,
        bi,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    ];
    let name = match spec.clamp {
        Some((lo, hi)) => {
            let mut bound = |v: Option<f64>| match v {
                Some(x) => g.double(x),
                None => g.null(),
            };
            let (l, h) = (bound(lo), bound(hi));
            args.extend([l, h]);
            CONV_CLAMP
        }
        None => CONV,
    };
    args.push(out);
    g.op(name, &args);
    g
}

fn tol(dt: DataType) -> Tol {
    if dt == F16 {
        Tol::new(1e-2, 1e-2)
    } else {
        Tol::F32_SUM
    }
}

fn static_case(spec: Spec, seed: u64) -> OpCase {
    let w = Tensor::rand_range(spec.dt, &spec.weight_sizes(), -0.5, 0.5, seed + 1);
    let b = Tensor::rand_range(spec.dt, &[spec.c_out], -0.5, 0.5, seed + 2);
    let x = Tensor::rand_range(spec.dt, &spec.x, -1.0, 1.0, seed);
    let bias = (spec.bias != Bias::None).then_some(&b);
    let want = conv(&x, &w, bias, &spec.params, spec.bounds(), spec.dt);
    let g = build_graph(&spec, &spec.x, &want.sizes, &w, &b);
    let name = if spec.clamp.is_some() {
        CONV_CLAMP
    } else {
        CONV
    };
    let label = format!(
        "{} x {:?} w {:?} {:?} bias {:?} clamp {:?}{}",
        spec.dt.name(),
        spec.x,
        spec.weight_sizes(),
        spec.params,
        spec.bias,
        spec.clamp,
        if spec.weight_input {
            " weight input"
        } else {
            ""
        }
    );
    let mut inputs = vec![x];
    if spec.weight_input {
        inputs.push(w);
    }
    if spec.bias == Bias::Input {
        inputs.push(b);
    }
    OpCase::new(name, label, g)
        .tol(tol(spec.dt))
        .run(inputs, vec![want])
}

/// Spatial sizes and batch change between runs on one graph (strided, padded, clamped).
fn dynamic_case() -> OpCase {
    let spec = Spec {
        dt: F32,
        x: vec![2, 3, 12, 11],
        c_out: 4,
        kernel: vec![3, 3],
        params: p(&[2, 2], &[1, 1], &[1, 1], false, &[0, 0], 1),
        bias: Bias::Constant,
        clamp: Some((Some(0.0), Some(6.0))),
        weight_input: false,
    };
    let w = Tensor::rand_range(F32, &spec.weight_sizes(), -0.5, 0.5, 28_901);
    let b = Tensor::rand_range(F32, &[4], -0.5, 0.5, 28_902);
    let g = build_graph(&spec, &spec.x, &[2, 4, 6, 6], &w, &b);
    let mut case = OpCase::new(
        CONV_CLAMP,
        "dynamic x [<=2, 3, <=12, <=11] 3x3 s2 p1 relu6",
        g,
    )
    .tol(Tol::F32_SUM)
    .dynamic();
    for (i, sizes) in [
        [2, 3, 12, 11],
        [1, 3, 3, 5],
        [2, 3, 7, 12 - 1],
        [1, 3, 12, 1],
    ]
    .into_iter()
    .enumerate()
    {
        let x = Tensor::rand_range(F32, &sizes, -3.0, 3.0, 28_910 + i as u64);
        let want = conv(&x, &w, Some(&b), &spec.params, (0.0, 6.0), F32);
        case = case.run(vec![x], vec![want]);
    }
    case
}

#[cfg(test)]
mod tests {
    use super::*;

    use etvk_runtime::ErrorKind;

    /// The load error of a convolution of x `x` with a weight `w` and `params`.
    fn load_error(x: &[usize], w: &[usize], params: ConvParams) -> etvk_runtime::Error {
        let spec = Spec {
            dt: F32,
            x: x.to_vec(),
            c_out: 1,
            kernel: vec![],
            params,
            bias: Bias::None,
            clamp: None,
            weight_input: false,
        };
        let wt = Tensor::rand(w, 1);
        crate::case::init_error(build_graph(&spec, x, &[1, 1, 1, 1], &wt, &wt))
    }

    fn plain(groups: usize) -> ConvParams {
        p(&[1, 1], &[0, 0], &[1, 1], false, &[0, 0], groups)
    }

    #[test]
    fn bad_convolutions_are_refused_naming_the_rule() {
        let cases: Vec<(ConvParams, &[usize], &[usize], &str)> = vec![
            (
                plain(2),
                &[1, 4, 8, 8],
                &[3, 2, 3, 3],
                "not a multiple of groups",
            ),
            (plain(1), &[1, 4, 8, 8], &[3, 3, 3, 3], "channels"),
            (
                plain(1),
                &[1, 4, 2, 8],
                &[3, 4, 3, 3],
                "too small for kernel",
            ),
            (
                p(&[1, 1], &[0, 0], &[1, 1], true, &[1, 0], 1),
                &[1, 4, 8, 8],
                &[4, 3, 3, 3],
                "output_padding",
            ),
            (plain(1), &[1, 4, 8, 8], &[3, 4, 3], "rank"),
            (
                p(&[1, 1, 1], &[0, 0, 0], &[1, 1, 1], false, &[0, 0, 0], 1),
                &[1, 4, 4, 4, 4],
                &[2, 4, 1, 1, 1],
                "rank 5",
            ),
            (
                p(&[0, 1], &[0, 0], &[1, 1], false, &[0, 0], 1),
                &[1, 4, 8, 8],
                &[3, 4, 3, 3],
                "stride",
            ),
        ];
        for (params, x, w, rule) in cases {
            let e = load_error(x, w, params.clone());
            assert!(
                matches!(
                    e.kind,
                    ErrorKind::InvalidProgram | ErrorKind::InvalidArgument | ErrorKind::Unsupported
                ),
                "{e}"
            );
            assert!(
                e.message.contains(CONV) && e.message.contains(rule),
                "{params:?}: {e}"
            );
        }
    }
}

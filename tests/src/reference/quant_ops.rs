//! The reference of the block-wise and per-token quantization ops (`ops/quant_blocks.rs` in
//! the runtime), with the per-value arithmetic of `cases/quant_blocks.rs`.

use crate::cases::quant_blocks::{
    block_elements, block_index, choose_out_sizes, quantize_affine_value, quantize_token_value,
    token_qparams,
};

use super::graph::RefGraph;

type R<T> = Result<T, String>;

fn nargs(a: &[usize], n: usize, w: &str) -> R<()> {
    if a.len() == n {
        Ok(())
    } else {
        Err(format!("{w}: {} args, expected {n}", a.len()))
    }
}

/// The quant range of an integer output dtype.
fn dtype_range(g: &RefGraph, out: usize, w: &str) -> R<(i64, i64)> {
    use etvk_format::ir::DataType;
    match g.tensor_info(out, w)?.0 {
        DataType::Int8 => Ok((-128, 127)),
        DataType::Uint8 => Ok((0, 255)),
        DataType::Int32 => Ok((i32::MIN as i64, i32::MAX as i64)),
        d => Err(format!(
            "{w}: output dtype {} is not an integer type",
            d.name()
        )),
    }
}

/// Rows of x: its last dim.
fn row_len(sizes: &[usize], w: &str) -> R<usize> {
    sizes
        .last()
        .copied()
        .filter(|&k| k > 0)
        .ok_or_else(|| format!("{w}: input {sizes:?} has no rows"))
}

/// `[x, block_size, scale, zero_point?, output_dtype, quant_min?, quant_max?, out]`.
pub fn quantize_affine(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 8, w)?;
    let x = g.tensor(a[0], w)?.clone();
    let block: Vec<usize> = g.int_list(a[1], w)?.iter().map(|&b| b as usize).collect();
    if block.len() != x.sizes.len() || block.contains(&0) {
        return Err(format!("{w}: block_size {block:?} for input {:?}", x.sizes));
    }
    let (sc, zp) = (g.tensor(a[2], w)?, g.opt_tensor(a[3], w)?);
    let dr = dtype_range(g, a[7], w)?;
    let range = (
        g.opt_int(a[5], w)?.unwrap_or(dr.0),
        g.opt_int(a[6], w)?.unwrap_or(dr.1),
    );
    let groups: usize = x
        .sizes
        .iter()
        .zip(&block)
        .map(|(&n, &b)| n.div_ceil(b))
        .product();
    if sc.numel() != groups || zp.is_some_and(|z| z.numel() != groups) {
        return Err(format!("{w}: parameters for {groups} blocks expected"));
    }
    let data = (0..x.numel())
        .map(|i| {
            let b = block_index(&x.sizes, &block, i);
            let z = zp.map_or(0.0, |z| z.data[b]);
            quantize_affine_value(x.data[i], sc.data[b] as f32, z, range)
        })
        .collect();
    g.put(a[7], x.sizes.clone(), data, w)
}

/// `[x, scales, zero_points, quant_min, quant_max, dtype, out]`.
pub fn quantize_per_token(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 7, w)?;
    let x = g.tensor(a[0], w)?.clone();
    let k = row_len(&x.sizes, w)?;
    let (sc, zp) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
    let rows = x.numel() / k;
    if sc.numel() != rows || zp.numel() != rows {
        return Err(format!("{w}: parameters for {rows} rows expected"));
    }
    let range = (g.int(a[3], w)?, g.int(a[4], w)?);
    let data = (0..x.numel())
        .map(|i| quantize_token_value(x.data[i], sc.data[i / k] as f32, zp.data[i / k], range))
        .collect();
    g.put(a[6], x.sizes.clone(), data, w)
}

/// `[q, scales, zero_points, quant_min, quant_max, dtype, output_dtype, out]`:
/// `float(q - zp) * scale` per row.
pub fn dequantize_per_token(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 8, w)?;
    let q = g.tensor(a[0], w)?.clone();
    let k = row_len(&q.sizes, w)?;
    let (sc, zp) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
    let rows = q.numel() / k;
    if sc.numel() != rows || zp.numel() != rows {
        return Err(format!("{w}: parameters for {rows} rows expected"));
    }
    let data = (0..q.numel())
        .map(|i| {
            let r = i / k;
            f64::from(((q.data[i] - zp.data[r].trunc()) as f32) * sc.data[r] as f32)
        })
        .collect();
    g.put(a[7], q.sizes.clone(), data, w)
}

/// Write the (scale, zero point) pair into ValueList `list` with `sizes`.
fn put_pair(g: &mut RefGraph, list: usize, sizes: &[usize], pair: [Vec<f64>; 2], w: &str) -> R<()> {
    let outs = g.value_list(list, w)?;
    if outs.len() != 2 {
        return Err(format!(
            "{w}: {} outputs, expected (scale, zero_point)",
            outs.len()
        ));
    }
    for (&o, data) in outs.iter().zip(pair) {
        g.put(o, sizes.to_vec(), data, w)?;
    }
    Ok(())
}

/// `[x, dtype, (scales, zero_points)]`: per row, sizes `lead ++ [1]`.
pub fn choose_per_token(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let x = g.tensor(a[0], w)?;
    let k = row_len(&x.sizes, w)?;
    let (mut sv, mut zv) = (Vec::new(), Vec::new());
    for row in x.data.chunks(k) {
        let row: Vec<f32> = row.iter().map(|&v| v as f32).collect();
        let (s, z) = token_qparams(&row);
        sv.push(f64::from(s));
        zv.push(f64::from(z));
    }
    let mut sizes = x.sizes[..x.sizes.len() - 1].to_vec();
    sizes.push(1);
    put_pair(g, a[2], &sizes, [sv, zv], w)
}

/// `[x, quant_min, quant_max, eps, dtype, (scale, zero_point)]`: one asymmetric pair.
pub fn choose_tensor(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let x = g.tensor(a[0], w)?;
    if x.numel() == 0 {
        return Err(format!("{w}: empty input"));
    }
    let all: Vec<f32> = x.data.iter().map(|&v| v as f32).collect();
    let range = (g.int(a[1], w)?, g.int(a[2], w)?);
    let eps = g.opt_double(a[3], w)?.unwrap_or(f64::from(f32::EPSILON)) as f32;
    let (s, z) = crate::reference::torchao_qparams(&all, "ASYMMETRIC", range, eps);
    put_pair(g, a[5], &[1], [vec![f64::from(s)], vec![f64::from(z)]], w)
}

/// torchao.choose_qparams_affine with any block_size (`mapping` parsed by the caller).
pub fn choose_blocks(
    g: &mut RefGraph,
    a: &[usize],
    (mapping, range, eps): (&str, (i64, i64), f32),
    block: &[usize],
    w: &str,
) -> R<()> {
    let x = g.tensor(a[0], w)?.clone();
    if block.len() != x.sizes.len()
        || block.contains(&0)
        || x.sizes.iter().zip(block).any(|(&n, &b)| n % b != 0)
    {
        return Err(format!(
            "{w}: block_size {block:?} does not tile input {:?}",
            x.sizes
        ));
    }
    let keepdim = a.len() == 11 && matches!(g.value(a[9]), etvk_format::ir::Value::Bool(true));
    let (mut sv, mut zv) = (Vec::new(), Vec::new());
    for elems in block_elements(&x, block) {
        let (s, z) = crate::reference::torchao_qparams(&elems, mapping, range, eps);
        sv.push(f64::from(s));
        zv.push(f64::from(z));
    }
    let sizes = choose_out_sizes(&x.sizes, block, keepdim);
    put_pair(g, a[a.len() - 1], &sizes, [sv, zv], w)
}

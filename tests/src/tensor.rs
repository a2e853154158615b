//! Reference tensors: a dtype, sizes and the values as `f64`, convertible to and from the
//! backend's [`HostTensor`] bytes.
//!
//! Values are always kept exactly representable in the tensor's dtype (random data is
//! rounded on creation), so the CPU reference computes on the very numbers the GPU sees.

use etvk_format::ir::DataType;
use etvk_runtime::{HostDType, HostTensor};

/// A dense, row-major tensor whose values are held as `f64`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Element type on the wire (what the host sends or receives).
    pub dtype: DataType,
    /// Sizes, outermost first (empty = rank 0).
    pub sizes: Vec<usize>,
    /// `numel` values, each exactly representable in `dtype`.
    pub data: Vec<f64>,
}

/// Number of elements of `sizes` (1 for rank 0).
pub fn numel(sizes: &[usize]) -> usize {
    sizes.iter().product()
}

/// Row-major strides of `sizes`.
pub fn strides(sizes: &[usize]) -> Vec<usize> {
    let mut s = vec![1; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * sizes[i + 1];
    }
    s
}

/// Multi-index of flat position `flat` in a row-major tensor of `sizes`.
pub fn unravel(mut flat: usize, sizes: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; sizes.len()];
    for d in (0..sizes.len()).rev() {
        if sizes[d] > 0 {
            idx[d] = flat % sizes[d];
            flat /= sizes[d];
        }
    }
    idx
}

/// The host dtype the backend API uses for a VkGraph dtype.
pub fn host_dtype(dt: DataType) -> HostDType {
    match dt {
        DataType::Bool => HostDType::Bool,
        DataType::Uint8 => HostDType::Byte,
        DataType::Int8 => HostDType::Char,
        DataType::Int32 => HostDType::Int,
        DataType::Float16 => HostDType::Half,
        DataType::Float32 => HostDType::Float,
        DataType::Float64 => HostDType::Double,
        DataType::Int64 => HostDType::Long,
    }
}

/// The VkGraph dtype of a host dtype (`None` for int16, which VkGraph has no code for).
pub fn graph_dtype(dt: HostDType) -> Option<DataType> {
    Some(match dt {
        HostDType::Bool => DataType::Bool,
        HostDType::Byte => DataType::Uint8,
        HostDType::Char => DataType::Int8,
        HostDType::Int => DataType::Int32,
        HostDType::Half => DataType::Float16,
        HostDType::Float => DataType::Float32,
        HostDType::Double => DataType::Float64,
        HostDType::Long => DataType::Int64,
        HostDType::Short => return None,
    })
}

/// Round `x` to the nearest value of `dt` (integers saturate, bools are `x != 0`).
pub fn round_to(dt: DataType, x: f64) -> f64 {
    match dt {
        DataType::Float64 => x,
        DataType::Float32 => x as f32 as f64,
        DataType::Float16 => f16_to_f64(f32_to_f16(x as f32)),
        DataType::Bool => (x != 0.0) as u8 as f64,
        DataType::Uint8 => x.round().clamp(0.0, 255.0),
        DataType::Int8 => x.round().clamp(-128.0, 127.0),
        DataType::Int32 => x.round().clamp(i32::MIN as f64, i32::MAX as f64),
        DataType::Int64 => x.round(),
    }
}

/// IEEE binary16 bits of `x`, round to nearest even (overflow gives infinity). Kept apart
/// from `etvk_format::f16` on purpose: the references round independently of the runtime.
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // Subnormal half: value = r * 2^-24 with r = mantissa (with implicit bit) >> (14 - e).
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1u32 << shift) - 1);
        let mut r = m >> shift;
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    // A carry out of the mantissa correctly bumps the exponent (up to infinity).
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// Value of IEEE binary16 bits.
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f64::from(h & 0x3ff);
    match exp {
        0 => sign * man * 2f64.powi(-24),
        0x1f if man == 0.0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        e => sign * (1.0 + man / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Decode little-endian `bytes` of `dtype` into values.
pub fn decode(dtype: HostDType, bytes: &[u8]) -> Result<Vec<f64>, String> {
    let n = dtype.size_bytes();
    if !bytes.len().is_multiple_of(n) {
        return Err(format!(
            "{} bytes is not a whole number of {dtype:?} elements",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(n)
        .map(|c| match dtype {
            HostDType::Bool => f64::from(c[0] != 0),
            HostDType::Byte => f64::from(c[0]),
            HostDType::Char => f64::from(c[0] as i8),
            HostDType::Short => f64::from(i16::from_le_bytes([c[0], c[1]])),
            HostDType::Half => f16_to_f64(u16::from_le_bytes([c[0], c[1]])),
            HostDType::Int => f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            HostDType::Float => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            HostDType::Long => {
                i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f64
            }
            HostDType::Double => {
                f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
            }
        })
        .collect())
}

/// Encode values as little-endian bytes of `dtype` (values are rounded first).
pub fn encode(dtype: DataType, data: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * dtype.size_bytes());
    for &x in data {
        let x = round_to(dtype, x);
        match dtype {
            DataType::Bool | DataType::Uint8 => out.push(x as u8),
            DataType::Int8 => out.push(x as i8 as u8),
            DataType::Int32 => out.extend_from_slice(&(x as i32).to_le_bytes()),
            DataType::Int64 => out.extend_from_slice(&(x as i64).to_le_bytes()),
            DataType::Float16 => out.extend_from_slice(&f32_to_f16(x as f32).to_le_bytes()),
            DataType::Float32 => out.extend_from_slice(&(x as f32).to_le_bytes()),
            DataType::Float64 => out.extend_from_slice(&x.to_le_bytes()),
        }
    }
    out
}

/// A small deterministic generator (SplitMix64), so every run sees the same data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }
}

impl Tensor {
    /// A tensor from parts.
    ///
    /// # Panics
    /// If `data.len()` differs from the element count of `sizes` (a bug in a case).
    pub fn new(dtype: DataType, sizes: &[usize], data: Vec<f64>) -> Tensor {
        assert_eq!(data.len(), numel(sizes), "data for sizes {sizes:?}");
        let data = data.into_iter().map(|x| round_to(dtype, x)).collect();
        Tensor {
            dtype,
            sizes: sizes.to_vec(),
            data,
        }
    }

    /// An fp32 tensor from parts.
    pub fn f32(sizes: &[usize], data: Vec<f64>) -> Tensor {
        Tensor::new(DataType::Float32, sizes, data)
    }

    /// Uniform random values in `[lo, hi)`, rounded to `dtype`.
    pub fn rand_range(dtype: DataType, sizes: &[usize], lo: f64, hi: f64, seed: u64) -> Tensor {
        let mut rng = Rng::new(seed);
        let data = (0..numel(sizes)).map(|_| rng.uniform(lo, hi)).collect();
        Tensor::new(dtype, sizes, data)
    }

    /// Uniform random fp32 values in `[-1, 1)`.
    pub fn rand(sizes: &[usize], seed: u64) -> Tensor {
        Tensor::rand_range(DataType::Float32, sizes, -1.0, 1.0, seed)
    }

    /// Uniform random integers in `[lo, hi]` as `dtype`.
    pub fn rand_int(dtype: DataType, sizes: &[usize], lo: i64, hi: i64, seed: u64) -> Tensor {
        let mut rng = Rng::new(seed);
        let span = (hi - lo + 1) as u64;
        let data = (0..numel(sizes))
            .map(|_| (lo + (rng.next_u64() % span) as i64) as f64)
            .collect();
        Tensor::new(dtype, sizes, data)
    }

    /// Random fp32 values whose magnitude is in `[lo, hi)` with a random sign (divisors
    /// kept away from zero).
    pub fn rand_away_from_zero(sizes: &[usize], lo: f64, hi: f64, seed: u64) -> Tensor {
        let mut rng = Rng::new(seed);
        let data = (0..numel(sizes))
            .map(|_| {
                let m = rng.uniform(lo, hi);
                if rng.next_u64() & 1 == 0 {
                    m
                } else {
                    -m
                }
            })
            .collect();
        Tensor::f32(sizes, data)
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// The same values with other sizes (same element count).
    ///
    /// # Panics
    /// If the element counts differ.
    pub fn reshaped(&self, sizes: &[usize]) -> Tensor {
        assert_eq!(
            numel(sizes),
            self.numel(),
            "reshape {:?} -> {sizes:?}",
            self.sizes
        );
        Tensor {
            dtype: self.dtype,
            sizes: sizes.to_vec(),
            data: self.data.clone(),
        }
    }

    /// Little-endian bytes in `self.dtype`.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(self.dtype, &self.data)
    }

    /// The backend's host tensor.
    pub fn to_host(&self) -> HostTensor {
        HostTensor {
            dtype: host_dtype(self.dtype),
            sizes: self.sizes.clone(),
            data: self.to_bytes(),
        }
    }

    /// Read a host tensor back (int16 maps to no VkGraph dtype and is refused).
    pub fn from_host(t: &HostTensor) -> Result<Tensor, String> {
        let dtype = graph_dtype(t.dtype)
            .ok_or_else(|| format!("host dtype {:?} has no VkGraph dtype", t.dtype))?;
        let data = decode(t.dtype, &t.data)?;
        if data.len() != numel(&t.sizes) {
            return Err(format!(
                "{:?} tensor of sizes {:?} holds {} bytes ({} elements)",
                t.dtype,
                t.sizes,
                t.data.len(),
                data.len()
            ));
        }
        Ok(Tensor {
            dtype,
            sizes: t.sizes.clone(),
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips_and_rounds_to_even() {
        for x in [0.0f32, 1.0, -2.5, 65504.0, 6.1035156e-5, 5.9604645e-8, 0.1] {
            let h = f32_to_f16(x);
            let back = f16_to_f64(h);
            assert!((back - f64::from(x)).abs() <= f64::from(x).abs() * 1e-3 + 6e-8);
        }
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1e6), 0x7c00);
    }

    #[test]
    fn strides_and_unravel_agree() {
        let sizes = [2, 3, 5];
        assert_eq!(strides(&sizes), vec![15, 5, 1]);
        assert_eq!(unravel(22, &sizes), vec![1, 1, 2]);
        assert_eq!(strides(&[]), Vec::<usize>::new());
    }

    #[test]
    fn host_round_trip() {
        let t = Tensor::rand_int(DataType::Int32, &[3, 2], -5, 5, 1);
        assert_eq!(Tensor::from_host(&t.to_host()).unwrap(), t);
        let t = Tensor::rand(&[4], 2);
        assert_eq!(Tensor::from_host(&t.to_host()).unwrap(), t);
    }
}

//! The backward op's graph nodes: `et_vk.linear_q4gsw_backward` (split-N, wide, staged,
//! tensor-core and tiled kernels) and the launches only it uses.

use super::*;

/// Launch of `q4_linear_bwd_split_m*` for M rows: one invocation per (word column, slice).
/// Push constants as [`push`]'s, with the rows per slice in place of `has_bias`.
pub(super) fn split_launch(m: usize, q: &Q4, kout: usize, geo: SplitGeometry) -> Result<Launch> {
    let push = Push::new()
        .u32(to_u32(m, "M")?)
        .u32(to_u32(q.n, "N")?)
        .u32(to_u32(kout, "K")?)
        .u32(to_u32(q.kpad / 8, "packed row length")?)
        .u32(to_u32(q.groups, "scale groups")?)
        .u32(to_u32(q.gs, "group_size")?)
        .u32(to_u32(geo.rows, "rows per slice")?)
        .u32(group_word_shift(q.gs))
        .finish();
    let invocations = if m == 0 || kout == 0 {
        0
    } else {
        geo.kwo as u64 * geo.slices as u64
    };
    Ok(Launch {
        push,
        global: Global::Linear(invocations),
    })
}

/// Launch of `q4_linear_bwd_wide_m{1,2}_*` and (`staged`) `q4_linear_bwd_staged_m{4,8}`: a
/// workgroup per (column block, slice); the last of a block to finish sums the block's
/// slices into d_x.
fn wide_bwd_launch(
    m: usize,
    q: &Q4,
    kout: usize,
    geo: WideBwdGeometry,
    staged: bool,
    local: u32,
) -> Result<Launch> {
    // The staged kernel takes M where the wide ones take the group size (it needs only the
    // group shift): every variant of the node pushes 8 words.
    let fourth = if staged { m } else { q.gs };
    let push = Push::new()
        .u32(to_u32(q.n, "N")?)
        .u32(to_u32(q.kpad / 32, "packed row chunks")?)
        .u32(to_u32(q.groups, "scale groups")?)
        .u32(to_u32(fourth, "group_size or M")?)
        .u32(to_u32(geo.rows, "rows per slice")?)
        .u32(group_word_shift(q.gs))
        .u32(to_u32(kout, "K")?)
        .u32(to_u32(geo.slices, "slices")?)
        .finish();
    let groups = if m == 0 {
        0
    } else {
        geo.blocks as u64 * geo.slices as u64
    };
    Ok(Launch {
        push,
        global: Global::Linear(groups * u64::from(local)),
    })
}

/// Words per half row of the `q4_bwd_rowscale` node's hi / lo pairs: one fp16 pair per word,
/// N rounded up to 8 (whole uvec4 of the main kernel's loads).
pub(crate) fn bwd_pair_words(n: usize) -> usize {
    n.div_ceil(8) * 4
}

/// The `q4_bwd_rowscale` node of an op on the f16 tensor cores and its tensors, for the
/// activation `dy` (d_out backward, x forward) of rows of `n`: a power-of-two scale per row
/// and slice of the main kernel's split of the reduction (`[M][slices]`) and the scaled rows
/// as fp16 hi / lo pairs (`[M, 2 * bwd_pair_words(n)]` words), which the kernel reads as its
/// A tiles. A 256-invocation workgroup per row and slice at the M where `choose` picks a
/// tensor-core kernel, idle otherwise. `source` (the forward of an 8da4w linear): the shader
/// that writes the same tensors from that raw x (of `dy`'s sizes) and its quantization
/// parameters (`q4_dq_rowscale`: the rows' integers q - zp, exact in one fp16, and 1 / scale).
#[allow(clippy::too_many_arguments)]
pub(super) fn bwd_rowscale_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    dy: TensorId,
    (n, kout): (usize, usize),
    max_m: usize,
    kernels: &[Kernel],
    choose: impl Fn(usize) -> Kernel + Send + Sync + 'static,
    source: Option<(ShaderId, TensorId, [u32; 5])>,
) -> Result<(TensorId, TensorId)> {
    // A scale per row and slice of the main kernel's split of N. Its slices only grow fewer
    // as M grows (more output tiles ask for less split), so M = 1's bound them.
    let most_slices = kernels
        .iter()
        .filter(|k| matches!(k, Kernel::BwdMma { .. } | Kernel::FwdMma { .. }))
        .map(|&k| split_of(k, 1, kout, n).slices)
        .max()
        .unwrap_or(1);
    let scales = max_m.max(1).saturating_mul(most_slices);
    let rowscale = g.new_tensor(
        DataType::Float32,
        vec![scales],
        None,
        format!("{}: d_out row scales per slice", call.what()),
    )?;
    let pairs = g.new_tensor(
        DataType::Int32,
        vec![max_m.max(1), 2 * bwd_pair_words(n)],
        None,
        format!("{}: d_out as scaled fp16 hi / lo pairs", call.what()),
    )?;
    let mut d = match source {
        Some((shader, raw, spec)) => {
            let mut d = Dispatch::new(shader, [rowscale, raw, pairs]);
            d.spec = spec.to_vec();
            d
        }
        None => Dispatch::new(ShaderId::Q4BwdRowscale, [rowscale, dy, pairs]),
    };
    d.local = Some([256, 1, 1]);
    let what = call.what();
    g.dispatch_select(call, vec![d], move |s| {
        let (_, m) = current_rows(s, dy, n, "d_out")?;
        let kn = choose(m);
        let (slices, slice) = match kn {
            Kernel::BwdMma { split: true, .. } | Kernel::FwdMma { split: true, .. } => {
                let sk = split_of(kn, m, kout, n);
                (sk.slices, sk.len)
            }
            Kernel::BwdMma { .. } | Kernel::FwdMma { .. } => (1, n.max(1)),
            _ => (0, n.max(1)),
        };
        if m.saturating_mul(slices) > scales {
            return Err(internal(format!(
                "{what}: {m} rows x {slices} slices of row scales, {scales} allocated"
            )));
        }
        Ok((
            0,
            Launch {
                push: Push::new()
                    .u32(to_u32(m, "M")?)
                    .u32(to_u32(n, "N")?)
                    .u32(to_u32(slice, "slice")?)
                    .finish(),
                global: Global::Linear((m * slices) as u64 * 256),
            },
        ))
    })?;
    Ok((rowscale, pairs))
}

pub(super) fn build_linear_q4gsw_backward(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
) -> Result<()> {
    call.expect_args(5)?;
    let q = prepack_q4gsw(g, call)?;
    let (dy, _) = activation(g, call, 0, "d_out", q.n, "it must equal the weights' N")?;
    let lead = {
        let d = g.shapes().max_dims(dy);
        if d.last() != Some(&q.n) {
            return Err(invalid_program(format!(
                "{}: d_out has sizes {d:?}; its last dim must be the weights' N = {}",
                call.what(),
                q.n
            )));
        }
        d[..d.len() - 1].to_vec()
    };
    let (dx_user, kout) = output(g, call, 4, &lead, None)?;
    let dx = f32_output(g, call, dx_user)?;
    if kout > q.kp {
        return Err(invalid_program(format!(
            "{}: d_x's last dim {kout} exceeds the weights' Kp = {}",
            call.what(),
            q.kp
        )));
    }
    let big = big_tiles_ok(g);
    let max_m: usize = lead.iter().product();
    let n = q.n;
    // M = 1 is reachable in a dynamic graph (M moves within 1..=max_m) or at max_m <= 1.
    let wide = wide_backward(g, &q, g.dynamic || max_m <= 1);
    // The staged kernel (M = 3..8, long rows) reads one scale per chunk: groups of whole
    // chunks. H200 (docs/performance.md, session 5): 35.2 / 57.9 us at M = 4 / 8 on 8192^2
    // against split-N's 62.7 / 89.3; 1.3-1.8x faster on every long-row shape measured (run 1).
    let staged = groups_are_whole_chunks(&q);
    // Output columns k (kout of them), reduction over the N weight rows.
    // Only graphs that can reach M > 8 consult (and so maybe self-check) the tensor cores.
    let mma = if max_m > MMA_MIN_M {
        mma_backward(g)
    } else {
        F16Mma::Off
    };
    let choose = move |m: usize| backward_kernel(m, kout, n, big, wide, staged, mma);
    let cw = match wide {
        Some(Kernel::BwdWide { cw, .. }) => cw,
        _ => 8,
    };
    let kc = q.kpad / 32;
    // Geometry of the M = 1 and M = 2 wide kernels (same column blocks: one counter set).
    let wgeo1 = wide_bwd_geometry(n, kc, cw, wide_bwd_target(n, kc));
    let wgeo2 = wide_bwd_geometry(n, kc, cw, bwd_target_two_per_sm());
    let wgeo = move |mt: u32| if mt == 2 { wgeo2 } else { wgeo1 };
    // The staged kernel's column blocks are 8 chunks, its stages 128 rows: the wide
    // geometry's at CW = 8 (the same column blocks at either MT: one counter set).
    let sgeo4 = wide_bwd_geometry(n, kc, 8, staged_bwd_target(4));
    let sgeo8 = wide_bwd_geometry(n, kc, 8, staged_bwd_target(8));
    let sgeo = move |mt: u32| if mt >= 8 { sgeo8 } else { sgeo4 };
    let wide_stride = q.kpad;
    let plan = plan(max_m, g.dynamic, choose, |m, kn| match kn {
        Kernel::BwdWide { mt, .. } => wgeo(mt)
            .slices
            .saturating_mul(mt as usize)
            .saturating_mul(wide_stride),
        Kernel::BwdStaged(mt) => sgeo(mt)
            .slices
            .saturating_mul(mt as usize)
            .saturating_mul(wide_stride),
        _ => partial_floats(kn, m, kout, n),
    });
    let geo = split_geometry(n, kout);
    // Partial sums of the split-N (M <= 8), wide (M = 1) and split-K kernels; the partials
    // of M rows are packed densely, so every M uses a prefix.
    let partial = scratch(g, call, &plan)?;
    // The wide and staged kernels' counters of finished slices, one per column block (each
    // kernel uses a prefix and leaves it zeroed).
    let counter_len = plan
        .kernels
        .iter()
        .filter_map(|k| match k {
            Kernel::BwdWide { .. } => Some(wgeo1.blocks),
            Kernel::BwdStaged(mt) => Some(sgeo(*mt).blocks),
            // The split tensor-core kernel's output tiles, at the largest M.
            Kernel::BwdMma {
                tile, split: true, ..
            } => {
                let (bm, bc) = tile.shape();
                Some(max_m.div_ceil(bm) * kout.div_ceil(bc))
            }
            _ => None,
        })
        .max();
    let counters = finished_slice_counters(g, call, counter_len)?;
    // The tensor-core kernel's d_out row scales, made by a node of their own at the M where
    // it runs (idle otherwise).
    // With them, the weight scales' peaks per 32 rows and group (prepacked once, shared by
    // every op of the same scales), from which each workgroup takes its fp16 range.
    let mma_inputs = if plan
        .kernels
        .iter()
        .any(|k| matches!(k, Kernel::BwdMma { .. }))
    {
        let sc = constant_arg(g, call, q.scales_arg, "weight_scales")?;
        let peaks = g.prepack(sc.value, &q4::group_scale_peaks_layout(n, q.groups))?;
        let (rowscale, pairs) =
            bwd_rowscale_node(g, call, dy, (n, kout), max_m, &plan.kernels, choose, None)?;
        Some((rowscale, pairs, peaks))
    } else {
        None
    };
    let variants = plan
        .kernels
        .iter()
        .map(|&kn| {
            let mut d = match (kn, writes_partials(kn), partial, counters) {
                (Kernel::BwdWide { .. } | Kernel::BwdStaged(_), _, Some(p), Some(c)) => {
                    Dispatch::new(shader_of(kn, true), [p, dy, q.w, q.s, c, dx])
                }
                (Kernel::BwdMma { .. }, split, p, c) => {
                    let (rs, pairs, sp) =
                        mma_inputs.ok_or_else(|| internal("MMA backward without row scales"))?;
                    match (split, p, c) {
                        // Partial sums, which the last workgroup of each tile adds into d_x.
                        (true, Some(p), Some(c)) => {
                            Dispatch::new(shader_of(kn, true), [p, pairs, q.w, q.s, rs, sp, c, dx])
                        }
                        (true, _, _) => {
                            return Err(internal(
                                "split MMA backward without its scratch and counters",
                            ))
                        }
                        (false, _, _) => {
                            Dispatch::new(shader_of(kn, true), [dx, pairs, q.w, q.s, rs, sp])
                        }
                    }
                }
                (_, true, Some(p), _) => Dispatch::new(shader_of(kn, true), [p, dy, q.w, q.s]),
                _ => Dispatch::new(shader_of(kn, true), [dx, dy, q.w, q.s]),
            };
            d.local = Some(match kn {
                // The wide backward's touch variants launch 64 invocations past the 256.
                Kernel::BwdMma { .. } | Kernel::BwdWide { .. } => {
                    shader_of(kn, true).info().local_size
                }
                _ => [LOCAL, 1, 1],
            });
            Ok(d)
        })
        .collect::<Result<Vec<_>>>()?;
    let needs_reduce = plan.kernels.iter().any(|&k| {
        writes_partials(k)
            && !matches!(
                k,
                Kernel::BwdWide { .. } | Kernel::BwdStaged(_) | Kernel::BwdMma { .. }
            )
    });
    let kernels = plan.kernels;
    g.dispatch_select(call, variants, move |s| {
        let (mut od, m) = current_rows(s, dy, n, "d_out")?;
        od.push(kout);
        s.set_dims(dx, od)?;
        let kn = choose(m);
        let idx = variant_index(&kernels, kn, m)?;
        let launch = match kn {
            Kernel::SplitN(_) => split_launch(m, &q, kout, geo)?,
            // Invocations per workgroup: the touch variants launch 64 past the 256.
            Kernel::BwdWide { mt, .. } => {
                let local = shader_of(kn, true).info().local_size[0];
                wide_bwd_launch(m, &q, kout, wgeo(mt), false, local)?
            }
            Kernel::BwdStaged(mt) => wide_bwd_launch(m, &q, kout, sgeo(mt), true, LOCAL)?,
            _ => tiled_launch(kn, m, &q, kout, false, kout, n)?,
        };
        Ok((idx, launch))
    })?;
    let (Some(partial), true) = (partial, needs_reduce) else {
        // No reachable M takes a kernel that leaves its slices to the reduce: the first node
        // writes d_x at every M.
        return finish_output(g, call, dx, dx_user, 4);
    };
    // As in the forward: a one-variant dispatch_select, idle when d_x was written directly.
    let bias_t = g.dummy()?;
    let mut reduce = Dispatch::new(ShaderId::Q4LinearReduce, [dx, partial, bias_t]);
    reduce.local = Some([REDUCE_LOCAL, 1, 1]);
    g.dispatch_select(call, vec![reduce], move |s| {
        let (_, m) = current_rows(s, dy, n, "d_out")?;
        let launch = match choose(m) {
            Kernel::SplitN(_) => reduce_launch(m, kout, 8 * geo.kwo, geo.slices, false)?,
            kn @ Kernel::Tiled { split: true, .. } => {
                reduce_launch(m, kout, kout, split_of(kn, m, kout, n).slices, false)?
            }
            // The wide, staged and tensor-core kernels sum their slices themselves.
            _ => idle_reduce(kout)?,
        };
        Ok((0, launch))
    })?;
    finish_output(g, call, dx, dx_user, 4)
}

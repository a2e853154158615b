//! The forward ops' graph nodes: `et_vk.linear_q4gsw` (GEMV, int8 and f16 tensor cores,
//! tiled) and `et_vk.linear_qcs4w`, with the activation-limb and row-scale nodes they need.

use super::*;
use crate::ops::fusion::GemvX;
use crate::ops::quantize::{DQ_SELF_MAX_M, SMALL_M_BITS};

/// Shared part of the forward ops: dispatch x [.., k] -> out [.., N].
/// The forward of both ops on x [M, K] (fp32) into `out`; `f16`: the layout that makes the
/// per-32-row scale peaks from the op's scales constant (`q.scales_arg`), from which the f16
/// tensor-core kernel takes its W range, the M from which that kernel runs, and whether x
/// came in as fp16 (arg 0; `x` is then its fp32 copy). `dq`: an 8da4w linear's raw x and
/// quantization parameters, which the half GEMV (unsliced or sliced) can take instead of `x`
/// (its DQ forms), as can the persistent int8 GEMV at M = 2..8 (`_dp4_persist_dq`), and
/// from which the tensor-core kernels take the integers q - zp (f16: `q4_dq_rowscale`; int8:
/// `q4_mma_limbs_dq`); the result has bit M set for each M <= 8 whose kernel quantizes x
/// itself (then `x` is not read at that M).
#[allow(clippy::too_many_arguments)]
fn forward(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    x: TensorId,
    k: usize,
    (out, out_user, out_arg): (TensorId, TensorId, usize),
    bias: Option<TensorId>,
    q: Q4,
    (peaks, f16_from, x16): (crate::builder::Layout, usize, bool),
    dq: Option<DqGemv>,
) -> Result<u32> {
    // A force_fp16 program's fp16 output, which the M = 1 half GEMV can write itself
    // (`_f16out`, `_dq_x16`): the other kernels write fp32 `out` and a node converts it into
    // `out_user`, idle at M = 1 then (one dispatch and barrier fewer). `ETVK_Q4_F16_OUT=0`:
    // the conversion at every M (comparisons).
    let f16_target = (std::env::var("ETVK_Q4_F16_OUT").map_or(true, |v| v != "0")
        && out_user != out
        && g.shapes().dtype(out_user) == DataType::Float16)
        .then_some(out_user);
    // The f16 tensor-core kernel on an 8da4w linear's integers q - zp (exact in one fp16:
    // its `_x16` forms) from the raw x, by `q4_dq_rowscale`, instead of the fake-quantized
    // x's hi / lo pairs. `ETVK_DQ_ROWS=0` keeps the pairs (comparisons).
    let dq_rows = dq
        .filter(|_| std::env::var("ETVK_DQ_ROWS").map_or(true, |v| v != "0"))
        .map(|d| (dq_rowscale_shader(g, d.x), d))
        .filter(|(sh, _)| g.shader_supported(*sh));
    let x16 = x16 || dq_rows.is_some();
    // The int8 tensor-core forward on the same integers in two limbs (`q4_mma_limbs_dq_*`,
    // `q4_linear_mma_dq_*`) instead of three limbs of the fake-quantized x.
    // `ETVK_DQ_MMA=0` keeps the three limbs (comparisons).
    let dq_mma = dq
        .filter(|_| std::env::var("ETVK_DQ_MMA").map_or(true, |v| v != "0"))
        .map(|d| (dq_mma_limbs_shader(g, d.x), d))
        .filter(|(sh, _)| {
            g.shader_supported(*sh)
                && DQ_MMA
                    .iter()
                    .all(|&(three, two)| !g.shader_supported(three) || g.shader_supported(two))
        });
    // M = 2..8 of an 8da4w linear with fp32 x: the persistent int8 GEMV quantizes the raw x
    // itself (`_dp4_persist_dq`: the row's range by subgroup reductions, at most 128
    // subgroups of its <= 512 invocations, then two limbs of the integers q - zp instead of
    // three of the fake-quantized x), and its choose node need not run there.
    // `ETVK_DQ_PERSIST=0` keeps the three limbs (comparisons).
    let dq_persist = dq
        .filter(|d| !d.x16 && std::env::var("ETVK_DQ_PERSIST").map_or(true, |v| v != "0"))
        .filter(|_| {
            let caps = g.caps();
            caps.subgroup_arithmetic
                && caps.subgroup_size >= 4
                && g.shader_supported(ShaderId::Q4LinearGemvWideDp4PersistDq)
        })
        .map(|d| (d.x, d.spec.to_vec()));
    // The DQ forms reduce x's min and max over subgroups (one partial per subgroup, room for
    // 128: subgroups of >= 4 at 512 invocations, wider workgroups only where the subgroups
    // allow, `select::half_gemv_max_chunks`): on a device without subgroup reductions,
    // or with smaller subgroups, the choose_qparams node quantizes x for every M. The forms
    // that read the row's range from the op before (DQ_MM) reduce nothing; those for fp16 x
    // write the fp16 output.
    let dq = dq.filter(|d| {
        (d.minmax.is_some() || g.caps().subgroup_size >= 4)
            && (!d.x16 || f16_target.is_some())
            && dq_shaders(d)
                .all()
                .into_iter()
                .all(|sh| g.shader_supported(sh))
    });
    // Where the M = 1 DQ kernel writes.
    let dq_out = match dq {
        Some(d) if d.x16 => out_user,
        _ => out,
    };
    let half_f16_out = f16_target
        .filter(|_| dq.is_none() && HALF_F16_OUT.iter().all(|&(_, sh)| g.shader_supported(sh)));
    let big = big_tiles_ok(g);
    let max_m: usize = {
        let d = g.shapes().max_dims(x);
        d[..d.len() - 1].iter().product()
    };
    let n = q.n;
    let wide = wide_gemv(g, &q);
    let mma = (mma_forward(g, &q, max_m), f16_forward(g, f16_from, max_m));
    // Activations that came in as fp16 take the two-MMA form of the f16 kernel (one MMA in
    // the codes form).
    let codes = codes_form_runs(codes_form(&q), mma.1 .0, || g.be.f16_codes_ok());
    let fma = fma_gemv(g, &q, mma.0 != Int8Mma::Off);
    let cm2 = cm2_forward(g, &q, x16);
    // An 8da4w linear at the M the FMA GEMV takes (M = 4 and 8 on rows of <= 4096: on the
    // fake-quantized x, after its choose node): the persistent int8 GEMV's DQ form instead
    // where it serves the rows, which quantizes the raw x itself so that the choose node need
    // not run. H100 (docs/performance.md, session 42): M = 4 21-32% faster (4096^2 20.8 ->
    // 15.2 us, N = 14336, K = 4096 36.2 -> 28.7), M = 8 18-34% (26.9 -> 21.1, 55.6 -> 45.4).
    // `ETVK_DQ_FMA=1` keeps the FMA GEMV (comparisons).
    let dq_over_fma = std::env::var("ETVK_DQ_FMA").map_or(true, |v| v != "1");
    let persist_dq = dq_persist
        .is_some()
        .then(|| persistent_gemv(n, k, wide))
        .flatten()
        .filter(|_| dq_over_fma);
    // At M = 8 on the rows it wins there, it also takes M = 8 from the int8 tensor cores
    // (`select::dq_persist_at_m8`; `ETVK_DQ_FMA=1` keeps the tensor cores too).
    let persist_over_mma =
        persist_dq.filter(|_| dq_persist_at_m8(n, q.kpad) && mma.0 != Int8Mma::Off);
    let choose = move |m: usize| match (fma.and_then(|f| f.at(m)), persist_dq, persist_over_mma) {
        (Some(_), Some(dq_kn), _) if (2..=DQ_SELF_MAX_M).contains(&m) => dq_kn,
        (None, _, Some(dq_kn)) if m == 8 => dq_kn,
        (Some(kn), _, _) => kn,
        // Where the f16 forward runs natively, the cooperative_matrix2 kernel replaces it when
        // asked for (exact codes, whole tiles: no split-K).
        (None, _, _) => match (forward_kernel(m, n, k, big, wide, mma), cm2) {
            (
                Kernel::FwdMma {
                    emulated: false, ..
                },
                Some(tile),
            ) => Kernel::FwdMma {
                tile,
                emulated: false,
                x16: false,
                codes: true,
                split: false,
            },
            (Kernel::FwdMma { tile, emulated, .. }, _) => Kernel::FwdMma {
                tile,
                emulated,
                x16,
                codes,
                split: codes && fwd_mma_split(tile, m, n, k).slices > 1,
            },
            (kn, _) => kn,
        },
    };
    let kc = q.kpad / 32;
    // The split-K of `kn` at M rows (the tensor-core kernel's counts chunks).
    let fwd_split = move |kn: Kernel, m: usize| match kn {
        Kernel::Mma { frags, .. } => mma_split(m, n, kc, frags, mma_rows_per_workgroup(kn)),
        _ => split_of(kn, m, n, k),
    };
    let plan = plan(max_m, g.dynamic, choose, |m, kn| match kn {
        Kernel::Mma { .. } => match fwd_split(kn, m).slices {
            1 => 0,
            s => s.saturating_mul(m).saturating_mul(n),
        },
        _ => partial_floats(kn, m, n, k),
    });
    let partial = scratch(g, call, &plan)?;
    let bias_t = g.or_dummy(bias)?;
    // The int8 GEMV's activation limbs, made once per launch by a node of their own
    // (launching nothing at the M where another kernel runs).
    let is_dp4 = |kn: Kernel| {
        matches!(
            kn,
            Kernel::GemvWide {
                dp4: true,
                persist: 0,
                ..
            }
        )
    };
    let limbs = if plan.kernels.iter().any(|&kn| is_dp4(kn)) && limbs_prepass(g, &q) {
        let chunks = q.kpad / 32;
        // [M][7][chunks] uvec4 for the largest M that takes the int8 GEMV.
        let rows = (1..=max_m.min(8))
            .filter(|&m| is_dp4(choose(m)))
            .max()
            .unwrap_or(1);
        let t = g.new_tensor(
            DataType::Int32,
            vec![rows * 7 * 4 * chunks],
            None,
            format!("{}: int8 activation limbs", call.what()),
        )?;
        let mut d = Dispatch::new(ShaderId::Q4ActLimbs, [t, x]);
        d.local = Some([64, 1, 1]);
        g.dispatch_select(call, vec![d], move |s| {
            let (_, m) = current_rows(s, x, k, "x")?;
            Ok((0, limbs_launch(k, chunks, m, None, is_dp4(choose(m)))?))
        })?;
        Some(t)
    } else {
        None
    };
    let mma_limbs = if plan
        .kernels
        .iter()
        .any(|kn| matches!(kn, Kernel::Mma { .. }))
    {
        let source = dq_mma.map(|(sh, d)| (sh, d.x, d.row_params));
        Some(mma_limbs_node(g, call, x, k, &q, max_m, choose, source)?)
    } else {
        None
    };
    // The f16 tensor-core kernel's inputs: x's rows scaled and split into fp16 hi / lo pairs
    // by a node of their own, and the weight scales' peaks per 32 rows and group.
    let f16_inputs = if plan
        .kernels
        .iter()
        .any(|k| matches!(k, Kernel::FwdMma { .. }))
    {
        let sc = constant_arg(g, call, q.scales_arg, "scales")?;
        let peaks = g.prepack(sc.value, &peaks)?;
        let source = dq_rows.map(|(sh, d)| (sh, d.x, d.spec));
        let (rowscale, pairs) =
            bwd_rowscale_node(g, call, x, (k, n), max_m, &plan.kernels, choose, source)?;
        // The split forms' counters of finished slices, one per output tile at the largest M
        // (each launch leaves them zero).
        let tiles = plan
            .kernels
            .iter()
            .filter_map(|kn| match kn {
                Kernel::FwdMma {
                    tile, split: true, ..
                } => Some(tile.count(max_m, n)),
                _ => None,
            })
            .max();
        let counters = finished_slice_counters(g, call, tiles)?;
        Some((rowscale, pairs, peaks, counters))
    } else {
        None
    };
    // The sliced half-chunk GEMV's per-slice row sums and its counters of finished slices,
    // one per block set (each launch leaves them zero).
    let half_slices = plan.kernels.iter().find_map(|&kn| match kn {
        Kernel::GemvHalf { slices, local, .. } if slices > 1 => Some((slices as usize, local)),
        _ => None,
    });
    let half_sums = match half_slices {
        Some((s, local)) => {
            let part = g.new_tensor(
                DataType::Float32,
                vec![s.saturating_mul(n)],
                None,
                format!("{}: per-slice row sums", call.what()),
            )?;
            let counters = finished_slice_counters(g, call, Some(half_gemv_sets(s, local)))?
                .ok_or_else(|| internal("no counters for the sliced GEMV"))?;
            Some((part, counters))
        }
        None => None,
    };
    // The ticket counter of the half GEMV's `_tickets` forms (each launch leaves it zero).
    let half_tickets = if plan.kernels.iter().any(|kn| {
        matches!(
            kn,
            Kernel::GemvHalf {
                slices: 1,
                tickets: true,
                ..
            }
        )
    }) {
        Some(g.new_zeroed_tensor(
            DataType::Int32,
            vec![1],
            format!("{}: block ticket counter", call.what()),
        )?)
    } else {
        None
    };
    // The FMA GEMV's per-slice sums [S][M][N] and its counters of finished slices, one per
    // block set (each launch leaves them zero), sized for the largest of its kernels in the
    // plan; one of each when it runs unsliced (bound, never touched).
    let fma_kernels: Vec<(usize, usize)> = (2..=max_m.min(8))
        .filter_map(|m| match choose(m) {
            Kernel::GemvFma { slices, local, .. } => Some((
                (slices as usize).saturating_mul(m).saturating_mul(n),
                fma_gemv_sets(n, slices, local),
            )),
            _ => None,
        })
        .collect();
    let fma_sums = if fma_kernels.is_empty() {
        None
    } else {
        let floats = fma_kernels.iter().map(|k| k.0).max().unwrap_or(1);
        let sets = fma_kernels.iter().map(|k| k.1).max().unwrap_or(1);
        let part = g.new_tensor(
            DataType::Float32,
            vec![floats.max(1)],
            None,
            format!("{}: per-slice row sums", call.what()),
        )?;
        let counters = finished_slice_counters(g, call, Some(sets))?
            .ok_or_else(|| internal("no counters for the FMA GEMV"))?;
        Some((part, counters))
    };
    let variants = plan
        .kernels
        .iter()
        .map(|&kn| {
            let mut d = match (writes_partials(kn), partial, limbs) {
                (_, p, _) if matches!(kn, Kernel::Mma { .. }) => {
                    let (l, sd) = mma_limbs.ok_or_else(|| internal("MMA kernel without limbs"))?;
                    let p = p.ok_or_else(|| internal("MMA kernel without a scratch tensor"))?;
                    let sh = shader_of(kn, false);
                    let sh = match dq_mma {
                        Some(_) => DQ_MMA
                            .iter()
                            .find(|(three, _)| *three == sh)
                            .map(|&(_, two)| two)
                            .ok_or_else(|| internal("MMA kernel without a DQ form"))?,
                        None => sh,
                    };
                    let mut d = Dispatch::new(sh, [out, p, l, sd, q.w, q.s, bias_t]);
                    // The register form's element maps, learned on this device.
                    if let Kernel::Mma {
                        reg: true,
                        emulated: false,
                        ..
                    } = kn
                    {
                        d.spec =
                            g.be.int8_mma_reg_spec()
                                .ok_or_else(|| internal("register MMA form without element maps"))?
                                .to_vec();
                    }
                    d
                }
                (_, p, _) if matches!(kn, Kernel::FwdMma { split: true, .. }) => {
                    let (rs, pairs, sp, c) = f16_inputs
                        .ok_or_else(|| internal("f16 MMA forward without its row scales"))?;
                    let (Some(p), Some(c)) = (p, c) else {
                        return Err(internal(
                            "split f16 MMA forward without its scratch and counters",
                        ));
                    };
                    Dispatch::new(
                        shader_of(kn, false),
                        [p, pairs, q.w, q.s, rs, sp, c, out, bias_t],
                    )
                }
                _ if matches!(kn, Kernel::FwdMma { .. }) => {
                    let (rs, pairs, sp, _) = f16_inputs
                        .ok_or_else(|| internal("f16 MMA forward without its row scales"))?;
                    Dispatch::new(shader_of(kn, false), [out, pairs, q.w, q.s, rs, sp, bias_t])
                }
                // The split variants leave the bias to the reduce (no bias binding).
                (true, Some(p), _) => Dispatch::new(shader_of(kn, false), [p, x, q.w, q.s]),
                (_, _, Some(l)) if is_dp4(kn) => Dispatch::new(
                    ShaderId::Q4LinearGemvWideM1Dp4Pre,
                    [out, l, q.w, q.s, bias_t],
                ),
                _ if matches!(kn, Kernel::GemvFma { .. }) => {
                    let (part, counters) =
                        fma_sums.ok_or_else(|| internal("FMA GEMV without its row sums"))?;
                    Dispatch::new(
                        shader_of(kn, false),
                        [out, x, q.w, q.s, bias_t, part, counters],
                    )
                }
                _ if matches!(kn, Kernel::GemvHalf { slices, .. } if slices > 1) => {
                    let (part, counters) =
                        half_sums.ok_or_else(|| internal("sliced GEMV without its row sums"))?;
                    match dq {
                        // The sliced DQ form reads the whole raw row for its min and max
                        // (or the row range the op before wrote).
                        Some(dq) => {
                            let mut d = Dispatch::new(
                                dq_shaders(&dq).sliced,
                                [dq_out, dq.gemv_x(), q.w, q.s, bias_t, part, counters]
                                    .into_iter()
                                    .chain(dq.extra_bindings()),
                            );
                            d.spec = dq.spec();
                            d
                        }
                        None => {
                            let (sh, o) = half_output(shader_of(kn, false), out, half_f16_out);
                            Dispatch::new(sh, [o, x, q.w, q.s, bias_t, part, counters])
                        }
                    }
                }
                _ => match (kn, dq) {
                    (
                        Kernel::GemvHalf {
                            slices: 1,
                            early,
                            tickets,
                            ..
                        },
                        Some(dq),
                    ) => {
                        let forms = dq_shaders(&dq);
                        // The ticketed form binds its counter after every other binding.
                        let (shader, counter) = match (early, tickets) {
                            (true, _) => (forms.early, None),
                            (false, true) => (
                                forms.tickets,
                                Some(half_tickets.ok_or_else(|| {
                                    internal("ticketed DQ GEMV without its counter")
                                })?),
                            ),
                            (false, false) => (forms.plain, None),
                        };
                        let mut d = Dispatch::new(
                            shader,
                            [dq_out, dq.gemv_x(), q.w, q.s, bias_t]
                                .into_iter()
                                .chain(dq.extra_bindings())
                                .chain(counter),
                        );
                        d.spec = dq.spec();
                        d
                    }
                    (Kernel::GemvHalf { tickets: true, .. }, None) => {
                        let c = half_tickets
                            .ok_or_else(|| internal("ticketed GEMV without its counter"))?;
                        let (sh, o) = half_output(shader_of(kn, false), out, half_f16_out);
                        Dispatch::new(sh, [o, x, q.w, q.s, bias_t, c])
                    }
                    (Kernel::GemvHalf { .. }, None) => {
                        let (sh, o) = half_output(shader_of(kn, false), out, half_f16_out);
                        Dispatch::new(sh, [o, x, q.w, q.s, bias_t])
                    }
                    (Kernel::GemvWide { persist, .. }, _) if persist > 0 => match &dq_persist {
                        Some((raw, spec)) => {
                            let mut d = Dispatch::new(
                                ShaderId::Q4LinearGemvWideDp4PersistDq,
                                [out, *raw, q.w, q.s, bias_t],
                            );
                            d.spec = spec.clone();
                            d
                        }
                        None => Dispatch::new(shader_of(kn, false), [out, x, q.w, q.s, bias_t]),
                    },
                    _ => Dispatch::new(shader_of(kn, false), [out, x, q.w, q.s, bias_t]),
                },
            };
            d.local = Some(match kn {
                Kernel::GemvWide { persist, .. } if persist > 0 => [persist, 1, 1],
                Kernel::GemvHalf { local, .. } | Kernel::GemvFma { local, .. } => [local, 1, 1],
                Kernel::FwdMma { .. } => shader_of(kn, false).info().local_size,
                _ => [LOCAL, 1, 1],
            });
            if let Kernel::Gemv(_) = kn {
                let (lanes, rows) = gemv_shape(kn, q.kpad);
                d.spec = vec![lanes, rows as u32];
            }
            Ok(d)
        })
        .collect::<Result<Vec<_>>>()?;
    // The M (1..=8) at which this linear quantizes the raw x itself: bit M.
    let dq_self = u32::from(dq.is_some() && matches!(choose(1), Kernel::GemvHalf { .. })) << 1
        | (2..=DQ_SELF_MAX_M)
            .filter(|&m| {
                dq_persist.is_some()
                    && matches!(choose(m), Kernel::GemvWide { persist, .. } if persist > 0)
            })
            .fold(0u32, |bits, m| bits | 1 << m);
    let kernels = plan.kernels;
    g.dispatch_select(call, variants, move |s| {
        let (mut od, m) = current_rows(s, x, k, "x")?;
        if let Some(b) = bias {
            if s.numel(b) < n {
                return Err(invalid_program(format!(
                    "bias sizes {:?} hold fewer than N = {n} values",
                    s.dims(b)
                )));
            }
        }
        od.push(n);
        s.set_dims(out, od)?;
        let kn = choose(m);
        let idx = variant_index(&kernels, kn, m)?;
        let launch = match kn {
            Kernel::Gemv(_)
            | Kernel::GemvWide { .. }
            | Kernel::GemvHalf { .. }
            | Kernel::GemvFma { .. } => Launch {
                push: push(m, &q, k, bias.is_some(), kn, 0)?,
                global: global(kn, m, n, gemv_rows_per_group(kn, q.kpad), 1)?,
            },
            Kernel::Mma { frags, .. } => {
                mma_launch(m, &q, frags, mma_rows_per_workgroup(kn), bias.is_some())?
            }
            Kernel::FwdMma { tile, .. } => fwd_f16_launch(
                kn,
                m,
                &q,
                k,
                (tile, shader_of(kn, false).info().local_size[0]),
                bias.is_some(),
            )?,
            _ => tiled_launch(kn, m, &q, k, bias.is_some(), n, k)?,
        };
        Ok((idx, launch))
    })?;
    // No reachable M splits: the first node writes `out` at every M.
    if let Some(partial) = partial {
        // A one-variant dispatch_select so that profiles name it `op/kernel` like the first
        // node; it launches no workgroups when the current M's kernel wrote `out` itself.
        let mut reduce = Dispatch::new(ShaderId::Q4LinearReduce, [out, partial, bias_t]);
        reduce.local = Some([REDUCE_LOCAL, 1, 1]);
        g.dispatch_select(call, vec![reduce], move |s| {
            let (_, m) = current_rows(s, x, k, "x")?;
            let kn = choose(m);
            let sk = fwd_split(kn, m);
            // The split f16 forward sums its slices itself.
            let own_sum = matches!(kn, Kernel::FwdMma { .. });
            let launch = if writes_partials(kn) && sk.slices > 1 && !own_sum {
                reduce_launch(m, n, n, sk.slices, bias.is_some())?
            } else {
                idle_reduce(n)?
            };
            Ok((0, launch))
        })?;
    }
    // The half GEMV writes the fp16 output itself at M = 1 (`_f16out`, `_dq_x16`).
    if half_f16_out.is_some() || dq_out != out {
        crate::ops::logic::convert_tensor_unless(g, call, (out, out_user, out_arg), move |s| {
            let (_, m) = current_rows(s, x, k, "x")?;
            Ok(matches!(choose(m), Kernel::GemvHalf { .. }))
        })?;
    } else {
        finish_output(g, call, out, out_user, out_arg)?;
    }
    Ok(dq_self)
}

/// The plain half GEMV's forms and their `_f16out` forms (fp16 output).
const HALF_F16_OUT: [(ShaderId, ShaderId); 4] = [
    (ShaderId::Q4LinearGemvHalf, ShaderId::Q4LinearGemvHalfF16out),
    (
        ShaderId::Q4LinearGemvHalfTickets,
        ShaderId::Q4LinearGemvHalfTicketsF16out,
    ),
    (
        ShaderId::Q4LinearGemvHalfEarly,
        ShaderId::Q4LinearGemvHalfEarlyF16out,
    ),
    (
        ShaderId::Q4LinearGemvHalfSliced,
        ShaderId::Q4LinearGemvHalfSlicedF16out,
    ),
];

/// The half GEMV form `sh` and the tensor it writes: its `_f16out` form and the fp16 output
/// where there is one, else `sh` and the fp32 `out`.
fn half_output(sh: ShaderId, out: TensorId, f16_out: Option<TensorId>) -> (ShaderId, TensorId) {
    match (f16_out, HALF_F16_OUT.iter().find(|(plain, _)| *plain == sh)) {
        (Some(o16), Some(&(_, f16))) => (f16, o16),
        _ => (sh, out),
    }
}

/// An 8da4w linear's raw x (fp32, or fp16 with `x16`) and its choose_qparams parameters as
/// the DQ half GEMV's specialization constants 3-7: mapping, quant_min, quant_max, eps (fp32
/// bits), the scale / zero point dtypes' kinds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DqGemv {
    pub(crate) x: TensorId,
    pub(crate) spec: [u32; 5],
    /// x's rows' (min(0, min), max(0, max)) as the RMSNorm or gated SiLU before wrote them
    /// (`GraphBuilder::row_minmax`), bound last: the `_dq_mm` forms.
    pub(crate) minmax: Option<TensorId>,
    /// x (and the op's output) fp16, a force_fp16 program's: the `_dq_x16` forms, which
    /// write the fp16 output themselves.
    pub(crate) x16: bool,
    /// Each row's (scale, zero point) as the choose_qparams node stored them (written where
    /// that node runs: M >= 9, and M = 2..8 where a reader needs it): the int8 tensor-core
    /// forward's DQ limbs read them.
    pub(crate) row_params: TensorId,
    /// x is an op's output (fp32) that the `_dq_silu` / `_dq_norm` / `_dq_addnorm` forms
    /// compute at M = 1 from that op's inputs (`ops::fusion::XSource`).
    pub(crate) computed: Option<GemvX>,
}

impl DqGemv {
    /// What the M = 1 DQ GEMV binds as x: the raw x, or the op's first input.
    fn gemv_x(&self) -> TensorId {
        self.computed.map_or(self.x, |c| c.x_binding())
    }

    /// The M = 1 DQ GEMV's bindings after bias (and the sliced form's row sums): the row
    /// range, or the computing op's other inputs.
    fn extra_bindings(&self) -> Vec<TensorId> {
        let computed = self
            .computed
            .map(|c| c.extra_bindings())
            .unwrap_or_default();
        self.minmax.into_iter().chain(computed).collect()
    }

    /// The M = 1 DQ GEMV's specialization constants (ids 3..).
    fn spec(&self) -> Vec<u32> {
        self.spec
            .iter()
            .copied()
            .chain(self.computed.and_then(|c| c.spec()))
            .collect()
    }
}

/// The int8 tensor-core forward's forms and their DQ forms (two limbs of an 8da4w linear's
/// integers q - zp).
pub(super) const DQ_MMA: [(ShaderId, ShaderId); 12] = [
    (ShaderId::Q4LinearMmaRegF1, ShaderId::Q4LinearMmaRegDqF1),
    (ShaderId::Q4LinearMmaRegF2, ShaderId::Q4LinearMmaRegDqF2),
    (ShaderId::Q4LinearMmaRegF4, ShaderId::Q4LinearMmaRegDqF4),
    (
        ShaderId::Q4LinearMmaRegEmuF1,
        ShaderId::Q4LinearMmaRegDqEmuF1,
    ),
    (
        ShaderId::Q4LinearMmaRegEmuF2,
        ShaderId::Q4LinearMmaRegDqEmuF2,
    ),
    (
        ShaderId::Q4LinearMmaRegEmuF4,
        ShaderId::Q4LinearMmaRegDqEmuF4,
    ),
    (ShaderId::Q4LinearMmaF1, ShaderId::Q4LinearMmaDqF1),
    (ShaderId::Q4LinearMmaF2, ShaderId::Q4LinearMmaDqF2),
    (ShaderId::Q4LinearMmaF4, ShaderId::Q4LinearMmaDqF4),
    (ShaderId::Q4LinearMmaEmuF1, ShaderId::Q4LinearMmaDqEmuF1),
    (ShaderId::Q4LinearMmaEmuF2, ShaderId::Q4LinearMmaDqEmuF2),
    (ShaderId::Q4LinearMmaEmuF4, ShaderId::Q4LinearMmaDqEmuF4),
];

/// The `q4_mma_limbs` DQ form for the raw x `x`'s dtype.
fn dq_mma_limbs_shader(g: &GraphBuilder<'_>, x: TensorId) -> ShaderId {
    match g.shapes().dtype(x) {
        DataType::Float16 => ShaderId::Q4MmaLimbsDqF16,
        _ => ShaderId::Q4MmaLimbsDqF32,
    }
}

/// The `q4_dq_rowscale` form for the raw x `x`'s dtype.
fn dq_rowscale_shader(g: &GraphBuilder<'_>, x: TensorId) -> ShaderId {
    match g.shapes().dtype(x) {
        DataType::Float16 => ShaderId::Q4DqRowscaleF16,
        _ => ShaderId::Q4DqRowscaleF32,
    }
}

/// The DQ half GEMV's forms for one kind of x (raw fp32 / fp16, with the row range the op
/// before wrote, or computed from a fused gated SiLU or RMSNorm).
#[derive(Debug, Clone, Copy)]
struct DqForms {
    plain: ShaderId,
    early: ShaderId,
    sliced: ShaderId,
    tickets: ShaderId,
}

impl DqForms {
    fn all(self) -> [ShaderId; 4] {
        [self.plain, self.early, self.sliced, self.tickets]
    }
}

/// The DQ half GEMV's forms for `dq`.
fn dq_shaders(dq: &DqGemv) -> DqForms {
    use ShaderId as S;
    let forms = |plain, early, sliced, tickets| DqForms {
        plain,
        early,
        sliced,
        tickets,
    };
    match (dq.computed, dq.x16, dq.minmax.is_some()) {
        (Some(GemvX::Silu { .. }), ..) => forms(
            S::Q4LinearGemvHalfDqSilu,
            S::Q4LinearGemvHalfEarlyDqSilu,
            S::Q4LinearGemvHalfSlicedDqSilu,
            S::Q4LinearGemvHalfTicketsDqSilu,
        ),
        (Some(GemvX::Norm { b: None, .. }), ..) => forms(
            S::Q4LinearGemvHalfDqNorm,
            S::Q4LinearGemvHalfEarlyDqNorm,
            S::Q4LinearGemvHalfSlicedDqNorm,
            S::Q4LinearGemvHalfTicketsDqNorm,
        ),
        (Some(GemvX::Norm { b: Some(_), .. }), ..) => forms(
            S::Q4LinearGemvHalfDqAddnorm,
            S::Q4LinearGemvHalfEarlyDqAddnorm,
            S::Q4LinearGemvHalfSlicedDqAddnorm,
            S::Q4LinearGemvHalfTicketsDqAddnorm,
        ),
        (None, true, true) => forms(
            S::Q4LinearGemvHalfDqMmX16,
            S::Q4LinearGemvHalfEarlyDqMmX16,
            S::Q4LinearGemvHalfSlicedDqMmX16,
            S::Q4LinearGemvHalfTicketsDqMmX16,
        ),
        (None, true, false) => forms(
            S::Q4LinearGemvHalfDqX16,
            S::Q4LinearGemvHalfEarlyDqX16,
            S::Q4LinearGemvHalfSlicedDqX16,
            S::Q4LinearGemvHalfTicketsDqX16,
        ),
        (None, false, true) => forms(
            S::Q4LinearGemvHalfDqMm,
            S::Q4LinearGemvHalfEarlyDqMm,
            S::Q4LinearGemvHalfSlicedDqMm,
            S::Q4LinearGemvHalfTicketsDqMm,
        ),
        (None, false, false) => forms(
            S::Q4LinearGemvHalfDq,
            S::Q4LinearGemvHalfEarlyDq,
            S::Q4LinearGemvHalfSlicedDq,
            S::Q4LinearGemvHalfTicketsDq,
        ),
    }
}

/// Rows of the limb arrays for M activation rows and `mf` fragments per workgroup: whole
/// workgroups' worth, so that the last workgroup's fragments read zero rows.
pub(super) fn mma_rows(m: usize, mf: u32) -> usize {
    m.next_multiple_of(8 * mf as usize)
}

/// The `q4_mma_limbs` node of a forward op and its two tensors (limbs, side): launched at
/// the M where `choose` picks the tensor-core kernel, idle otherwise.
#[allow(clippy::too_many_arguments)]
fn mma_limbs_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    x: TensorId,
    k: usize,
    q: &Q4,
    max_m: usize,
    choose: impl Fn(usize) -> Kernel + Send + Sync + 'static,
    source: Option<(ShaderId, TensorId, TensorId)>,
) -> Result<(TensorId, TensorId)> {
    let chunks = q.kpad / 32;
    // mma_rows never exceeds M rounded up to 32 (4 fragments).
    let rows = max_m.max(1).next_multiple_of(32);
    let too_big = || {
        unsupported(format!(
            "{}: M = {max_m} x {chunks} chunks of limbs",
            call.what()
        ))
    };
    // [3][chunks][rows] x 32 bytes, as int32 words.
    let limb_words = rows
        .checked_mul(chunks)
        .and_then(|v| v.checked_mul(3 * 8))
        .ok_or_else(too_big)?;
    let limbs = g.new_tensor(
        DataType::Int32,
        vec![limb_words.max(1)],
        None,
        format!("{}: int8 MMA activation limbs", call.what()),
    )?;
    let side = g.new_tensor(
        DataType::Int32,
        vec![(rows * chunks * 2).max(1)],
        None,
        format!("{}: MMA activation units", call.what()),
    )?;
    let mut d = match source {
        Some((shader, raw, row_params)) => Dispatch::new(shader, [limbs, side, raw, row_params]),
        None => Dispatch::new(ShaderId::Q4MmaLimbs, [limbs, side, x]),
    };
    d.local = Some([64, 1, 1]);
    g.dispatch_select(call, vec![d], move |s| {
        let (_, m) = current_rows(s, x, k, "x")?;
        let launch = match choose(m) {
            Kernel::Mma { frags, .. } => {
                limbs_launch(k, chunks, m, Some(mma_rows(m, frags)), true)?
            }
            _ => limbs_launch(k, chunks, m, Some(0), false)?,
        };
        Ok((0, launch))
    })?;
    Ok((limbs, side))
}

/// Invocations of a limb node's launch at most: 65535 workgroups of 64 (one row of the grid).
pub(super) const LIMBS_MAX_INVOCATIONS: usize = 65535 * 64;

/// Launch of an activation-limb node (`q4_act_limbs`, or `q4_mma_limbs` with its padded row
/// count `rows`): eight invocations per (row, chunk) up to [`LIMBS_MAX_INVOCATIONS`], none
/// when `on` is false.
pub(crate) fn limbs_launch(
    k: usize,
    chunks: usize,
    m: usize,
    rows: Option<usize>,
    on: bool,
) -> Result<Launch> {
    let mut push = Push::new()
        .u32(to_u32(k, "K")?)
        .u32(to_u32(chunks, "chunks")?)
        .u32(to_u32(m, "M")?);
    if let Some(r) = rows {
        push = push.u32(to_u32(r, "limb rows")?);
    }
    // Eight invocations per (row, chunk) (q4_limbs_lanes.glsl), at most one row of the grid
    // of workgroups (the kernels walk the rest).
    let count = chunks
        .saturating_mul(rows.unwrap_or(m))
        .saturating_mul(8)
        .min(LIMBS_MAX_INVOCATIONS);
    Ok(Launch {
        push: push.finish(),
        global: Global::Linear(if on { count as u64 } else { 0 }),
    })
}

/// `lo | hi << 16` for the tensor-core forward's packed push constants (both below 2^16:
/// [`mma_forward`] admits rows of fewer than 2^16 chunks, and every count packed is at
/// most the chunk count).
fn pack16(lo: usize, hi: usize, what: &str) -> Result<u32> {
    if lo >= 1 << 16 || hi >= 1 << 16 {
        return Err(internal(format!("{what}: {lo} / {hi} do not fit 16 bits")));
    }
    Ok((lo | hi << 16) as u32)
}

/// Launch of the tensor-core forward: a workgroup per (strip of `rows` rows of N, split-K
/// slice, 8 * `mf` rows of M), the row tiles fastest (they read the same weights).
fn mma_launch(m: usize, q: &Q4, mf: u32, rows: usize, has_bias: bool) -> Result<Launch> {
    let mtiles = m.div_ceil(8 * mf as usize);
    let sk = mma_split(m, q.n, q.kpad / 32, mf, rows);
    let groups =
        q.n.div_ceil(rows)
            .checked_mul(mtiles)
            .and_then(|v| v.checked_mul(sk.slices))
            .ok_or_else(|| unsupported(format!("M = {m} x N = {}: too many workgroups", q.n)))?;
    Ok(Launch {
        push: Push::new()
            .u32(to_u32(m, "M")?)
            .u32(to_u32(q.n, "N")?)
            .u32(to_u32(q.kpad / 32, "packed row length")?)
            .u32(to_u32(q.groups, "scale groups")?)
            .u32(pack16(
                mma_chunks_per_group(q),
                has_bias as usize,
                "chunks per group",
            )?)
            .u32(to_u32(mma_rows(m, mf), "limb rows")?)
            .u32(to_u32(mtiles, "row tiles")?)
            .u32(pack16(sk.slices, sk.len, "split-K slices")?)
            .finish(),
        global: Global::Linear(if m == 0 || q.n == 0 {
            0
        } else {
            groups as u64 * LOCAL as u64
        }),
    })
}

/// Launch of the f16 tensor-core forward: a workgroup per `tile` of out [M, N]; push
/// constants in the backward kernel's order with the reduction (x's K) as its N and the
/// output row (N) as its K, one slice of all of K.
fn fwd_f16_launch(
    kn: Kernel,
    m: usize,
    q: &Q4,
    k: usize,
    (tile, local): (Tile, u32),
    has_bias: bool,
) -> Result<Launch> {
    // The split forms' slices of x's row (a multiple of 32), else all of it.
    let sk = split_of(kn, m, q.n, k);
    let push = Push::new()
        .u32(to_u32(m, "M")?)
        .u32(to_u32(k, "K")?)
        .u32(to_u32(q.n, "N")?)
        .u32(to_u32(q.kpad / 8, "packed row length")?)
        .u32(to_u32(q.groups, "scale groups")?)
        .u32(to_u32(q.gs, "group_size")?)
        .u32(has_bias as u32)
        .u32(to_u32(sk.len, "k per slice")?)
        .finish();
    let groups = if m == 0 || q.n == 0 {
        0
    } else {
        tile.count(m, q.n) * sk.slices
    };
    Ok(Launch {
        push,
        global: Global::Linear(groups as u64 * u64::from(local)),
    })
}

/// x (arg 0) of the q4gsw-format forwards as fp32 (as given when `!convert`), its K (at most
/// the weights' Kp and G * group_size) and its leading dims.
fn q4gsw_activation(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    q: &Q4,
    convert: bool,
) -> Result<(TensorId, usize, Vec<usize>)> {
    let kmax = q.kp.min(q.groups * q.gs);
    let rule = format!(
        "K may not exceed the weights' Kp = {} nor G * group_size = {}",
        q.kp,
        q.groups * q.gs
    );
    let (x, k) = if convert {
        activation(g, call, 0, "x", kmax, &rule)?
    } else {
        checked_activation(g, call, 0, "x", kmax, &rule)?
    };
    let d = g.shapes().max_dims(x);
    let lead = d[..d.len() - 1].to_vec();
    Ok((x, k, lead))
}

pub(super) fn build_linear_q4gsw(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let q = prepack_q4gsw(g, call)?;
    let (x, k, lead) = q4gsw_activation(g, call, &q, true)?;
    let (out, _) = output(g, call, 5, &lead, Some(q.n))?;
    let bias = bias_arg(g, call, 4, q.n)?;
    let out32 = f32_output(g, call, out)?;
    let peaks = q4::group_scale_peaks_layout(q.n, q.groups);
    let x16 = x_is_f16(g, call)?;
    forward(
        g,
        call,
        x,
        k,
        (out32, out, 5),
        bias,
        q,
        (peaks, FWD_F16_MIN_M, x16),
        None,
    )?;
    Ok(())
}

/// `[x, input_scales, input_zp, weights, weight_sums, weight_scales, group_size, bias, out]`:
/// x quantized per row with (input_scales, input_zp) as torchao's quantize_affine does (int8
/// range), dequantized by a node of its own (`q4_act_fakequant`) or, where the rules of
/// ops/quantize.rs allow, by the choose_qparams node that made them, then the q4gsw forward on
/// that: the integer kernels' `sum_k (q - zp)(code - 8) * s_in * s_w` with each product
/// `(q - zp) * s_in` rounded once to fp32. weight_sums (the exporter's per-group code sums
/// for its int8 kernels) is checked for shape and not read.
pub(super) fn build_linear_dq8ca_q4gsw(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(9)?;
    let what = call.what();
    let q = prepack_q4gsw_at(g, call, [3, 5, 6])?;
    match g.value(call.arg(4)?)?.clone() {
        GValue::TensorRef(c)
            if c.dtype == DataType::Int32
                && c.dims.len() == 2
                && c.dims[0] == q.groups
                && c.dims[1] >= q.n => {}
        GValue::Tensor(t)
            if g.shapes().dtype(t) == DataType::Int32
                && g.shapes().max_dims(t).len() == 2
                && g.shapes().max_dims(t)[0] == q.groups
                && g.shapes().max_dims(t)[1] >= q.n => {}
        other => {
            return Err(invalid_program(format!(
                "{what}: weight_sums (arg 4) must be int32 [G = {}, >= N = {}], got {}",
                q.groups,
                q.n,
                match other {
                    GValue::TensorRef(c) => format!("{} {:?}", c.dtype.name(), c.dims),
                    GValue::Tensor(t) => format!(
                        "{} {:?}",
                        g.shapes().dtype(t).name(),
                        g.shapes().max_dims(t)
                    ),
                    o => crate::builder::gvalue_kind(&o).to_string(),
                }
            )))
        }
    }
    // x quantized and dequantized by its choose_qparams node (ops/quantize.rs), when that
    // node could take the fake-quant over; else a node of this op's own.
    let fused = g
        .act_quant
        .get(&(call.arg(0)?, call.arg(1)?, call.arg(2)?))
        .cloned();
    let (x, k, lead) = q4gsw_activation(g, call, &q, fused.is_none())?;
    let sc = g.tensor_or_prepack(call, 1)?;
    let zp = g.tensor_or_prepack(call, 2)?;
    let kinds = {
        let s = g.shapes();
        for (t, name) in [(sc, "input_scales"), (zp, "input_zp")] {
            if !crate::ops::quantize::per_row_dims(s.max_dims(t), &lead) {
                return Err(invalid_program(format!(
                    "{what}: {name} has sizes {:?}; one value per row of x (leading dims {lead:?}) is needed",
                    s.max_dims(t)
                )));
            }
        }
        crate::ops::quantize::qparam_kinds(call, s.dtype(sc), s.dtype(zp))?
    };
    let xq = match &fused {
        Some(f) => f.xq,
        None => act_fake_quant(g, call, (x, k), (sc, zp), kinds)?,
    };
    // With a fused node, the half GEMV can quantize fp32 x itself at M = 1 (and compute x
    // itself from the inputs of a fused gated SiLU or an RMSNorm, where no range is read).
    let x_source = g.x_sources.get(&call.arg(0)?).cloned();
    let minmax = g.row_minmax.get(&call.arg(0)?).copied();
    let dq = match (&fused, g.shapes().dtype(x)) {
        (Some(f), DataType::Float32) => Some(DqGemv {
            x,
            spec: f.spec,
            minmax,
            x16: false,
            row_params: f.row_params,
            computed: x_source.as_ref().filter(|_| minmax.is_none()).map(|s| s.x),
        }),
        (Some(f), DataType::Float16) => Some(DqGemv {
            x,
            spec: f.spec,
            minmax,
            x16: true,
            row_params: f.row_params,
            computed: None,
        }),
        _ => None,
    };
    let (out, _) = output(g, call, 8, &lead, Some(q.n))?;
    let bias = bias_arg(g, call, 7, q.n)?;
    let out32 = f32_output(g, call, out)?;
    let peaks = q4::group_scale_peaks_layout(q.n, q.groups);
    let dq_self = forward(
        g,
        call,
        xq,
        k,
        (out32, out, 8),
        bias,
        q,
        (peaks, FWD_F16_MIN_M, false),
        dq,
    )?;
    let dq_at_m1 = dq_self & 2 != 0;
    if let Some(f) = fused {
        if !dq_at_m1 {
            f.readers_at_m1
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // The M = 2..8 this linear needs the node's outputs at.
        f.needs_small_m.fetch_or(
            !dq_self & SMALL_M_BITS,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
    // The op that writes x must run at M = 1 unless this linear's M = 1 kernel computes x
    // itself.
    if let Some(src) = x_source {
        if !(dq_at_m1 && dq.is_some_and(|d| d.computed.is_some())) {
            src.block();
        }
    }
    Ok(())
}

/// The 8da4w linear's own fake-quant node: x [.., K] quantized per row with (sc, zp) and
/// dequantized into a new fp32 tensor (q4_act_fakequant.comp).
fn act_fake_quant(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (x, k): (TensorId, usize),
    (sc, zp): (TensorId, TensorId),
    kinds: u32,
) -> Result<TensorId> {
    let what = call.what();
    let xq = {
        let dims = g.shapes().max_dims(x).to_vec();
        g.new_tensor(
            DataType::Float32,
            dims,
            None,
            format!("{what}: x quantized and dequantized"),
        )?
    };
    let what2 = what.clone();
    g.dispatch(
        call,
        Dispatch::new(ShaderId::Q4ActFakequant, [xq, x, sc, zp]),
        move |s| {
            let (lead_now, rows) = current_rows(s, x, k, "x")?;
            for (t, name) in [(sc, "input_scales"), (zp, "input_zp")] {
                if s.numel(t) != rows {
                    return Err(crate::error::invalid_arg(format!(
                        "{what2}: {name} holds {} values for the {rows} rows of x {:?}",
                        s.numel(t),
                        s.dims(x)
                    )));
                }
            }
            let mut d = lead_now;
            d.push(k);
            s.set_dims(xq, d)?;
            let total = rows * k;
            Ok(Launch {
                push: Push::new()
                    .u32(to_u32(total, "x elements")?)
                    .u32(to_u32(k, "K")?)
                    .u32(kinds)
                    .u32(0)
                    .finish(),
                global: Global::Linear(total as u64),
            })
        },
    )?;
    Ok(xq)
}

pub(super) fn build_linear_qcs4w(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let sc = constant_arg(g, call, 2, "scales")?;
    float_scales_dtype(call, &sc)?;
    let (w, n, rb) = prepack_weight(g, call, 1, NibbleOrder::EvenHigh)?;
    if crate::graph::checked_numel(&sc.dims) != Some(n) || sc.dims.len() > 2 {
        return Err(invalid_program(format!(
            "{}: scales must be per-channel [N = {n}], got {:?}",
            call.what(),
            sc.dims
        )));
    }
    let s = g.prepack(sc.value, &q4::channel_scales_layout(n))?;
    let kpad = q4::padded_k(rb);
    // One group spanning the packed row: the kernels apply scales[n] to every k.
    let q = Q4 {
        w,
        s,
        n,
        kp: 2 * rb,
        kpad,
        groups: 1,
        gs: kpad,
        scales_arg: 2,
    };
    let (x, k) = activation(
        g,
        call,
        0,
        "x",
        q.kp,
        &format!("K may not exceed 2 * weight.shape[1] = {}", q.kp),
    )?;
    let lead = {
        let d = g.shapes().max_dims(x);
        d[..d.len() - 1].to_vec()
    };
    let (out, _) = output(g, call, 3, &lead, Some(n))?;
    let out32 = f32_output(g, call, out)?;
    let peaks = q4::channel_scale_peaks_layout(n);
    let x16 = x_is_f16(g, call)?;
    forward(
        g,
        call,
        x,
        k,
        (out32, out, 3),
        None,
        q,
        (peaks, QCS4W_F16_MIN_M, x16),
        None,
    )?;
    Ok(())
}

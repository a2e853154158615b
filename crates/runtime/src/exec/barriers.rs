//! Where the execute's dispatches need a barrier between them.
//!
//! A compute-to-compute barrier makes the GPU drain every dispatch before the next starts
//! (0.6-0.7 us each on an H200, more where a kernel's tail is long). Independent nodes, such
//! as the q / k / v projections of one activation, need none: a barrier goes only before a
//! dispatch that touches memory a dispatch since the last barrier wrote, or writes memory
//! one of them read. Accesses come from the bindings: a tensor's memory object (tensors
//! that share one are one region, whatever parts of it they use), and whether the shader
//! declares that binding `readonly` (`ShaderInfo::written_bindings`).

use std::collections::HashMap;

/// Memory a dispatch binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Region {
    /// A memory object (`MemId`): one allocation shared by one or more tensors.
    Mem(usize),
    /// The graph's scalar buffer.
    Scalars,
    /// The fault record (kernels write it with atomics; kept in node order like the rest,
    /// so that the first fault in program order is the one reported).
    Faults,
}

/// One binding of a dispatch: the region and whether the shader may write it.
pub(crate) type Access = (Region, bool);

/// Dispatches in record order, and per position whether a barrier comes right before.
pub(crate) type DispatchPlan = (Vec<usize>, Vec<bool>);

/// The order to record the dispatches in and, per position, whether a barrier comes
/// right before it. `accesses[i]` is node i's bindings, `None` for a node that records no
/// dispatch (idle at the current shapes), which is left out of the order.
///
/// Each dispatch gets a level: one past the highest level of any earlier dispatch it
/// conflicts with (it reads or writes memory that one wrote, or writes memory that one
/// read), 0 if none. Dispatches are recorded level by level, in node order within a level,
/// with one barrier between levels: every conflicting pair is then ordered as the program
/// has it with a barrier between, and the barriers are as few as the longest chain of
/// conflicts allows (the q / k / v projections of one activation share a level, and so do
/// independent branches further apart than adjacent nodes).
pub(crate) fn dispatch_order(accesses: &[Option<Vec<Access>>]) -> DispatchPlan {
    // Per region: one past the highest level that wrote it, and that read it (0: none yet).
    let mut after_write: HashMap<Region, usize> = HashMap::new();
    let mut after_read: HashMap<Region, usize> = HashMap::new();
    let mut levels: Vec<(usize, usize)> = Vec::new(); // (level, node)
    for (i, acc) in accesses.iter().enumerate() {
        let Some(acc) = acc else {
            continue;
        };
        let level = acc
            .iter()
            .map(|(r, w)| {
                let mut l = after_write.get(r).copied().unwrap_or(0);
                if *w {
                    l = l.max(after_read.get(r).copied().unwrap_or(0));
                }
                l
            })
            .max()
            .unwrap_or(0);
        for (r, w) in acc {
            let slot = if *w {
                after_write.entry(*r).or_default()
            } else {
                after_read.entry(*r).or_default()
            };
            *slot = (*slot).max(level + 1);
        }
        levels.push((level, i));
    }
    levels.sort_unstable();
    let barriers = levels
        .iter()
        .enumerate()
        .map(|(k, &(l, _))| k > 0 && levels[k - 1].0 != l)
        .collect();
    (levels.into_iter().map(|(_, i)| i).collect(), barriers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether two accesses conflict (at least one writes the same region).
    fn conflict(a: &[Access], b: &[Access]) -> bool {
        a.iter()
            .any(|(ra, wa)| b.iter().any(|(rb, wb)| ra == rb && (*wa || *wb)))
    }

    /// Every conflicting pair of dispatches (i < j) is recorded i first with a barrier
    /// between; idle nodes are left out; the barriers number the longest chain of
    /// conflicts less one (none fewer can order it).
    fn check(accesses: &[Option<Vec<Access>>]) -> usize {
        let (order, barrier) = dispatch_order(accesses);
        let launched: Vec<usize> = (0..accesses.len())
            .filter(|&i| accesses[i].is_some())
            .collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, launched, "{accesses:?}");
        assert_eq!(barrier.len(), order.len());
        let pos = |i: usize| order.iter().position(|&o| o == i).unwrap();
        let mut chain = vec![0usize; accesses.len()];
        for (x, &i) in launched.iter().enumerate() {
            for &j in &launched[x + 1..] {
                let (a, b) = (accesses[i].as_ref().unwrap(), accesses[j].as_ref().unwrap());
                if conflict(a, b) {
                    let (pi, pj) = (pos(i), pos(j));
                    assert!(pi < pj, "{i} after {j}: {accesses:?}");
                    assert!(
                        (pi + 1..=pj).any(|k| barrier[k]),
                        "{i} and {j} race: {accesses:?}"
                    );
                    chain[j] = chain[j].max(chain[i] + 1);
                }
            }
        }
        let barriers = barrier.iter().filter(|&&b| b).count();
        assert_eq!(
            barriers,
            chain.iter().copied().max().unwrap_or(0),
            "{accesses:?}"
        );
        barriers
    }

    #[test]
    fn chains_and_independent_readers() {
        let m = Region::Mem;
        // x -> q, k, v (three readers of x) -> attention reads all three -> out.
        let acc = vec![
            Some(vec![(m(1), true), (m(0), false)]),
            Some(vec![(m(2), true), (m(1), false), (m(9), false)]),
            Some(vec![(m(3), true), (m(1), false), (m(8), false)]),
            Some(vec![(m(4), true), (m(1), false), (m(7), false)]),
            Some(vec![
                (m(5), true),
                (m(2), false),
                (m(3), false),
                (m(4), false),
            ]),
        ];
        assert_eq!(
            dispatch_order(&acc),
            (vec![0, 1, 2, 3, 4], vec![false, true, false, false, true])
        );
        check(&acc);
        // A write after a read of the same memory (a reused buffer) is ordered too; an idle
        // node is left out; a node independent of the chain moves up to the first level.
        let acc = vec![
            Some(vec![(m(1), true), (m(0), false)]),
            None,
            Some(vec![(m(0), true), (m(2), false)]),
            Some(vec![(m(5), true), (m(0), false)]),
            Some(vec![(Region::Scalars, false), (m(3), true)]),
        ];
        assert_eq!(
            dispatch_order(&acc),
            (vec![0, 4, 2, 3], vec![false, false, true, true])
        );
        check(&acc);
    }

    #[test]
    fn random_graphs_have_every_race_separated_and_no_spare_barrier() {
        // A small xorshift: fixed seeds, no extra dependency.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..2000 {
            let nodes = 1 + next(12) as usize;
            let regions = 1 + next(6);
            let acc: Vec<Option<Vec<Access>>> = (0..nodes)
                .map(|_| {
                    (next(6) != 0).then(|| {
                        (0..1 + next(4))
                            .map(|_| {
                                let r = match next(8) {
                                    0 => Region::Scalars,
                                    1 => Region::Faults,
                                    _ => Region::Mem(next(regions) as usize),
                                };
                                (r, next(3) == 0)
                            })
                            .collect()
                    })
                })
                .collect();
            check(&acc);
        }
    }
}

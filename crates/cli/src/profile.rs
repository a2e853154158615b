//! `--profile` of `etvk run` / `etvk generate`: a per-op table from the GPU timestamps of
//! every delegate call, summed over all the calls of a run.

use std::collections::HashMap;

use etvk_host::InstructionTime;

/// One row: an op of one delegate, by VkGraph node id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct OpKey {
    /// `delegate N`.
    delegate: String,
    node_id: u32,
    op: String,
}

#[derive(Debug, Clone, Default)]
struct OpStats {
    calls: u64,
    total_us: f64,
}

/// GPU time per op (summed over calls) and host wall time per instruction kind.
#[derive(Debug, Default)]
pub struct ProfileTable {
    ops: HashMap<OpKey, OpStats>,
    /// Wall time of CPU kernels and delegate calls, by instruction description.
    host: HashMap<String, OpStats>,
    executes: u64,
}

impl ProfileTable {
    /// Add one execute's instruction times.
    pub fn add(&mut self, times: &[InstructionTime]) {
        self.executes += 1;
        for t in times {
            let h = self.host.entry(t.what.clone()).or_default();
            h.calls += 1;
            h.total_us += t.elapsed.as_secs_f64() * 1e6;
            for g in &t.gpu {
                let s = self.ops.entry(OpKey {
                    delegate: t.what.clone(),
                    node_id: g.node_id,
                    op: g.op.clone(),
                });
                let s = s.or_default();
                s.calls += 1;
                s.total_us += g.us;
            }
        }
    }

    /// Total GPU microseconds over every op.
    pub fn gpu_total_us(&self) -> f64 {
        self.ops.values().map(|s| s.total_us).sum()
    }

    /// The table, largest total first; at most `top` op rows (all when `None`).
    pub fn render(&self, top: Option<usize>) -> String {
        let mut rows: Vec<(&OpKey, &OpStats)> = self.ops.iter().collect();
        rows.sort_by(|a, b| {
            b.1.total_us
                .total_cmp(&a.1.total_us)
                .then_with(|| a.0.cmp(b.0))
        });
        let total = self.gpu_total_us();
        let mut out = String::new();
        out.push_str(&format!(
            "GPU profile: {} execute(s), {} op node(s), {:.3} ms of GPU time in dispatches\n",
            self.executes,
            rows.len(),
            total / 1e3
        ));
        if rows.is_empty() {
            out.push_str(
                "  (no GPU timestamps: the device has no timestamp queries, or nothing ran)\n",
            );
        } else {
            let width = rows
                .iter()
                .map(|(k, _)| k.op.len())
                .max()
                .unwrap_or(2)
                .clamp(2, 72);
            out.push_str(&format!(
                "  {:<width$}  {:>10}  {:>5}  {:>6}  {:>11}  {:>10}  {:>6}\n",
                "op", "delegate", "node", "calls", "total ms", "mean us", "share"
            ));
            let shown = top.unwrap_or(rows.len()).min(rows.len());
            for (k, s) in &rows[..shown] {
                let share = if total > 0.0 {
                    100.0 * s.total_us / total
                } else {
                    0.0
                };
                out.push_str(&format!(
                    "  {:<width$}  {:>10}  {:>5}  {:>6}  {:>11.3}  {:>10.2}  {:>5.1}%\n",
                    k.op,
                    k.delegate,
                    k.node_id,
                    s.calls,
                    s.total_us / 1e3,
                    s.total_us / s.calls.max(1) as f64,
                    share
                ));
            }
            if shown < rows.len() {
                let rest: f64 = rows[shown..].iter().map(|(_, s)| s.total_us).sum();
                out.push_str(&format!(
                    "  ... {} more op node(s): {:.3} ms ({:.1}%)\n",
                    rows.len() - shown,
                    rest / 1e3,
                    if total > 0.0 {
                        100.0 * rest / total
                    } else {
                        0.0
                    }
                ));
            }
        }
        let mut host: Vec<(&String, &OpStats)> = self.host.iter().collect();
        host.sort_by(|a, b| {
            b.1.total_us
                .total_cmp(&a.1.total_us)
                .then_with(|| a.0.cmp(b.0))
        });
        out.push_str("host wall time per instruction (delegate calls include submit and wait):\n");
        for (what, s) in host {
            out.push_str(&format!(
                "  {:<40}  calls {:>6}  total {:>10.3} ms  mean {:>9.2} us\n",
                what,
                s.calls,
                s.total_us / 1e3,
                s.total_us / s.calls.max(1) as f64
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use etvk_host::GpuOpTime;

    use super::*;

    fn t(what: &str, us: u64, gpu: &[(&str, u32, f64)]) -> InstructionTime {
        InstructionTime {
            index: 0,
            what: what.into(),
            elapsed: Duration::from_micros(us),
            gpu: gpu
                .iter()
                .map(|&(op, node_id, us)| GpuOpTime {
                    op: op.into(),
                    node_id,
                    us,
                })
                .collect(),
        }
    }

    #[test]
    fn sums_calls_per_node_and_sorts_by_total() {
        let mut p = ProfileTable::default();
        p.add(&[
            t(
                "delegate 0",
                100,
                &[("aten.mm.default", 3, 10.0), ("aten.relu.default", 4, 2.0)],
            ),
            t("kernel aten::add.out", 7, &[]),
        ]);
        p.add(&[t(
            "delegate 0",
            90,
            &[("aten.mm.default", 3, 30.0), ("aten.relu.default", 4, 6.0)],
        )]);
        assert_eq!(p.gpu_total_us(), 48.0);
        let s = p.render(None);
        let mm = s
            .lines()
            .position(|l| l.contains("aten.mm.default"))
            .unwrap();
        let relu = s
            .lines()
            .position(|l| l.contains("aten.relu.default"))
            .unwrap();
        assert!(mm < relu, "{s}");
        let mm_line = s.lines().nth(mm).unwrap();
        // 2 calls, 40 us total = 0.040 ms, mean 20 us, 83.3% of 48 us.
        assert!(
            mm_line.contains("  2  ") && mm_line.contains("0.040"),
            "{mm_line}"
        );
        assert!(
            mm_line.contains("20.00") && mm_line.contains("83.3%"),
            "{mm_line}"
        );
        assert!(s.contains("kernel aten::add.out"), "{s}");
        let top1 = p.render(Some(1));
        assert!(
            top1.contains("1 more op node(s): 0.008 ms (16.7%)"),
            "{top1}"
        );
    }
}

//! `docs/ops.md`: the operator table rendered from the registry.

use etvk_runtime::OpInfo;

/// Command that rewrites `docs/ops.md` from the registry.
pub const REGENERATE: &str = "ETVK_BLESS=1 cargo test -p etvk-tests --test docs";

/// Path of `docs/ops.md` in the workspace.
pub fn path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ops.md")
}

/// Markdown cell text: pipes escaped, newlines flattened.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The markdown document for `ops` (registry order: sorted by name).
pub fn render(ops: &[OpInfo]) -> String {
    let mut s = String::new();
    s.push_str("# Operators\n\n");
    s.push_str(
        "The ops the etvk Vulkan runtime implements, by exact VkGraph `OperatorCall.name`.\n",
    );
    s.push_str(&format!(
        "Generated from `etvk_runtime::registered_ops()`; do not edit by hand. Regenerate with\n`{REGENERATE}`.\n\n"
    ));
    s.push_str("| name | dtypes | dynamic shapes | note |\n");
    s.push_str("| --- | --- | --- | --- |\n");
    for o in ops {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            o.name,
            cell(&o.dtypes.join(", ")),
            if o.dynamic_shapes { "yes" } else { "no" },
            cell(&o.note)
        ));
    }
    s.push_str(&format!("\n{} ops.\n", ops.len()));
    s
}

//! `etvk ops`: the Vulkan runtime's operator registry.

use crate::error::CliError;

/// Print the registry as a table.
pub fn ops() -> Result<(), CliError> {
    let ops = etvk_runtime::registered_ops();
    let w = ops.iter().map(|o| o.name.len()).max().unwrap_or(0).max(4);
    let dt: Vec<String> = ops.iter().map(|o| o.dtypes.join(",")).collect();
    let wd = dt.iter().map(String::len).max().unwrap_or(0).max(6);
    outln!("{:<w$}  {:<wd$}  {:<7}  note", "name", "dtypes", "dynamic");
    for (o, d) in ops.iter().zip(&dt) {
        outln!(
            "{:<w$}  {:<wd$}  {:<7}  {}",
            o.name,
            d,
            if o.dynamic_shapes { "yes" } else { "no" },
            o.note
        );
    }
    outln!("{} ops", ops.len());
    Ok(())
}

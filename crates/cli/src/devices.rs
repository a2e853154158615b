//! `etvk devices`: the Vulkan devices the runtime sees.

use etvk_runtime::RuntimeOptions;

use crate::error::CliError;

/// Print each device, marking the one `ETVK_DEVICE` selects.
pub fn devices() -> Result<(), CliError> {
    let devices = etvk_runtime::list_devices(&RuntimeOptions::from_env())?;
    if devices.is_empty() {
        outln!("no Vulkan devices");
    }
    for d in &devices {
        outln!(
            "{} {}: {} ({})",
            if d.selected { "*" } else { " " },
            d.index,
            d.name,
            d.device_type
        );
        for (k, v) in &d.properties {
            outln!("      {k}: {v}");
        }
    }
    Ok(())
}

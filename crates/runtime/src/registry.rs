//! The op registry: exact `OperatorCall.name` -> builder + capability metadata.
//!
//! Registration is explicit: `ops::register_all` calls one `register_all` per op family.
//! A duplicate name is an error (surfaced by `Delegate::init` and the registry test).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use etvk_format::ir::DataType;

use crate::api::{Error, OpInfo, Result};
use crate::builder::{GraphBuilder, OpCall};
use crate::error::internal;

/// An op builder: reads its args from the builder, adds prepacks and dispatches.
pub type OpBuildFn = fn(&mut GraphBuilder<'_>, &OpCall<'_>) -> Result<()>;

/// One registry entry.
#[derive(Debug, Clone)]
pub struct OpEntry {
    /// Exact op name (`aten.add.Tensor`).
    pub name: &'static str,
    /// The builder.
    pub build: OpBuildFn,
    /// GPU dtypes it accepts.
    pub dtypes: &'static [DataType],
    /// Whether it has a resize function (dynamic shapes).
    pub dynamic_shapes: bool,
    /// One-line note (semantics, limits).
    pub note: &'static str,
}

/// Name -> entry.
#[derive(Debug, Default)]
pub struct Registry {
    map: BTreeMap<&'static str, OpEntry>,
}

impl Registry {
    /// Add an entry; a name registered twice is an error.
    pub fn register(&mut self, e: OpEntry) -> Result<()> {
        if self.map.contains_key(e.name) {
            return Err(internal(format!("op {} registered twice", e.name)));
        }
        self.map.insert(e.name, e);
        Ok(())
    }
    /// Register a family's dynamic-shape ops that share their dtypes:
    /// `(name, builder, note)` each.
    pub fn register_dynamic(
        &mut self,
        dtypes: &'static [DataType],
        entries: &[(&'static str, OpBuildFn, &'static str)],
    ) -> Result<()> {
        for &(name, build, note) in entries {
            self.register(OpEntry {
                name,
                build,
                dtypes,
                dynamic_shapes: true,
                note,
            })?;
        }
        Ok(())
    }
    /// Look an op up by exact name.
    pub fn get(&self, name: &str) -> Option<&OpEntry> {
        self.map.get(name)
    }
    /// All entries, sorted by name.
    pub fn entries(&self) -> impl Iterator<Item = &OpEntry> {
        self.map.values()
    }
}

static REGISTRY: OnceLock<std::result::Result<Registry, Error>> = OnceLock::new();

/// The process-wide registry (built on first use by `ops::register_all`).
pub fn registry() -> Result<&'static Registry> {
    REGISTRY
        .get_or_init(|| {
            let mut r = Registry::default();
            crate::ops::register_all(&mut r).map(|_| r)
        })
        .as_ref()
        .map_err(|e| e.clone())
}

/// Registry contents for `etvk ops` / docs.
pub fn op_infos() -> Vec<OpInfo> {
    match registry() {
        Ok(r) => r
            .entries()
            .map(|e| OpInfo {
                name: e.name.to_string(),
                dtypes: e.dtypes.iter().map(|d| d.name().to_string()).collect(),
                dynamic_shapes: e.dynamic_shapes,
                note: e.note.to_string(),
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nop(_: &mut GraphBuilder<'_>, _: &OpCall<'_>) -> Result<()> {
        Ok(())
    }

    #[test]
    fn duplicates_are_rejected_and_the_global_registry_builds() {
        let e = OpEntry {
            name: "x.y.z",
            build: nop,
            dtypes: &[],
            dynamic_shapes: false,
            note: "",
        };
        let mut r = Registry::default();
        r.register(e.clone()).unwrap();
        let err = r.register(e).unwrap_err();
        assert!(err.message.contains("x.y.z"));
        let global = registry().expect("registry builds without duplicates");
        assert!(global.get("aten.linear.default").is_some());
    }
}

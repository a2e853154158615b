//! etvk C ABI.

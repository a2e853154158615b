//! etvk host runtime.

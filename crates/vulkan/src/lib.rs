//! etvk device layer.

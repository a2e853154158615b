//! etvk shader library.

//! Shared helpers for etvk integration tests.
